"""Optional dependencies by use: what each extra of `pip install perfmodel[...]` brings, and one clear line when a
missing one is needed.

    extra     modules                          needed by
    charts    altair, vl_convert, plotext      charts (--chart, report --out FILE.html / .md, --plot)
    app       streamlit (+ charts)             streamlit run app.py
    xlsx      openpyxl                         --format xlsx
    dask      dask, distributed                sweep --dask-local / --dask-scheduler
    all       every one of them                the README's first command installs it

    require(module)   the module, imported; MissingExtra (an ImportError, one line: which extra, how to install)

The core (numbers, data, the CLI's tables, CSV / JSON / Markdown output) needs none of them.

Must not import: any other perfmodel package (core).
"""

from __future__ import annotations

import importlib

EXTRA_OF = {"altair": "charts", "vl_convert": "charts", "plotext": "charts", "streamlit": "app",
            "openpyxl": "xlsx", "dask": "dask", "distributed": "dask"}


class MissingExtra(ImportError):
    """An optional dependency a command needs is not installed (one line naming the extra)."""


def message(module: str) -> str:
    top = module.split(".")[0]
    extra = EXTRA_OF.get(top, "all")
    return (f"this needs {top}, in perfmodel's '{extra}' extra: pip install -e '.[{extra}]' (or '.[all]' for every "
            "extra)")


def require(module: str):
    """`module` imported, or MissingExtra saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(message(module)) from None


class Lazy:
    """A module imported on first use through require (a module-level name that costs nothing until used)."""

    def __init__(self, module: str):
        self._module_name, self._module = module, None

    def __getattr__(self, name: str):
        if self._module is None:
            self._module = require(self._module_name)
        return getattr(self._module, name)
