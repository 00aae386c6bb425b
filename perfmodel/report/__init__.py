"""What people read: tidy frames behind the CLI, the app and notebooks, the comparison report,
Altair charts, writers (terminal tables, Markdown, CSV, JSON, XLSX, HTML) and the provenance
of results.

Front door (load, run_scenario, comparison, build_report, claims_frame, the page frames, and
write_report) is looked up on first use, so `from perfmodel.report import export` stays light.
Change here when a page, a table, a chart or an output format changes.
Must not import: cli.
"""

import importlib
from pathlib import Path

# the modules whose public names are this package's front door, looked up in this order
_FRONT = ("perfmodel.report.compare", "perfmodel.report.frames", "perfmodel.report.pages",
          "perfmodel.report.documents")


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(name)
    if (Path(__file__).parent / f"{name}.py").is_file():  # `from perfmodel.report import export`: the module
        return importlib.import_module(f"{__name__}.{name}")
    for mod in _FRONT:
        module = importlib.import_module(mod)
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module 'perfmodel.report' has no attribute {name!r}")
