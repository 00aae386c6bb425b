"""The catalogue: the only code that reads files (spec sheets, workloads, calibration, calibrated
sets, Hugging Face config.json) and the what-if layer that overrides what they say.

Front door: load_system, list_systems, list_chips, list_workloads (from files.py); load_workload (a workload
named any way a user has one: workload_refs.load); Replacements (what one run replaces in the files' values:
calibrated sets, engine profiles, stacks; passed as `replaced=`).
Change here when a spec-file field, a workload field, an assumption or a what-if name is added.
Must not import: comm, model, training, serving, sweep, claims, validation, report, cli.
"""

from perfmodel.catalog.files import (Source, catalog_root, clear_caches, list_chips, list_systems, list_workloads,
                                     load_sources, load_system, read_toml)
from perfmodel.catalog.replacements import Replacements
from perfmodel.catalog.workload_refs import load as load_workload

__all__ = ["Source", "catalog_root", "clear_caches", "list_chips", "list_systems", "list_workloads", "load_sources",
           "load_system", "load_workload", "read_toml", "Replacements"]
