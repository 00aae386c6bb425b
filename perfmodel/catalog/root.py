"""Where the catalogue is and how its TOML files are read: the two things every reader of the catalogue needs.

    catalog_root()   the folder holding hardware_specs/ and workloads/ ($PERFMODEL_CATALOG, else the repository)
    read_toml(path)  a bounded, safely decoded TOML file (core/input_files), errors naming the file

Does not: validate a file's fields (spec_schema.py and each reader do).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core import input_files


def catalog_root() -> Path:
    return _catalog_root(os.environ.get("PERFMODEL_CATALOG"))


@lru_cache(maxsize=8)
def _catalog_root(env: str | None) -> Path:
    """The catalogue folder for a PERFMODEL_CATALOG value, resolved and checked once (every evaluation asks)."""
    root = Path(env) if env else Path(__file__).resolve().parents[2]
    if not (root / "hardware_specs").is_dir():
        raise CatalogError(f"{root}: no hardware_specs/ directory here; set PERFMODEL_CATALOG to the folder that "
                           "holds hardware_specs/ and workloads/")
    return root


def read_toml(path: Path) -> dict:
    """Parse a TOML file (safe: data only; core/input_files: a bounded regular file, UTF-8 with or without a
    byte-order mark), naming the file on any error."""
    try:
        return input_files.read_toml(path, "file")
    except input_files.InputError as exc:
        raise CatalogError(str(exc)) from None
