"""perfmodel: analytic performance and capacity model for AWS Trainium and its GPU peers.

The code is one package per layer (docs/ARCHITECTURE.md): core, catalog, comm, model, training,
serving, sweep, claims, validation, report, cli. `from perfmodel import whatif, calibration`
reaches the two catalogue modules the README's API uses, imported on first use.
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {"whatif": "perfmodel.catalog.whatif", "calibration": "perfmodel.catalog.calibration"}


def __getattr__(name: str):
    if name in _PUBLIC:
        return importlib.import_module(_PUBLIC[name])
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")
