"""Computed claims (and the report's comparison) kept on disk, so `perfmodel claims` and `perfmodel report`
pay their sweeps once per version of the code and the catalogue (a claim function takes no arguments: its
rows are a function of the code and the catalogue files alone: the claims are computed on the catalogue as
shipped, never with a calibrated set).

    rows(fn, make)     a claim function's rows (JSON)
    frame(name, fn)    a claims frame that takes no arguments either (the S1-S3 readings)
    pickled(name, fn)  any result fully named by `name` given the code and catalogue (the report's comparison
                       of its cases, systems, what-ifs and calibrated sets); pickled, the pandas version in its key

    key = sha256(FORMAT, every .py file of the perfmodel package, every file under the catalogue's
                 hardware_specs/, workloads/ and reference/, the claim function or the result's name)

A change to any formula, spec, assumption or measurement file misses every entry, so a cached row is the
row the code would compute now. Entries live in claims/ under the cache root (core/cache_root.py;
PERFMODEL_CACHE_DIR=off turns them off); one that cannot be read is computed again.

Does not: compute a claim (the family modules do) or judge it (registry.ClaimResult).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from perfmodel.catalog.files import catalog_root
from perfmodel.core.cache_root import root, trusted, used, write, write_json

if TYPE_CHECKING:
    import pandas as pd

FORMAT = 1
CATALOGUE_DIRS = ("hardware_specs", "workloads", "reference")


def _files(catalogue: Path) -> tuple[tuple[Path, Path], ...]:
    package = Path(__file__).resolve().parents[1]
    files = [(package, p) for p in sorted(package.rglob("*.py"))]
    files += [(catalogue, p) for d in CATALOGUE_DIRS for p in sorted((catalogue / d).rglob("*")) if p.is_file()]
    return tuple(files)


@functools.lru_cache(maxsize=8)
def _fingerprint(files: tuple[tuple[Path, Path], ...], stats: tuple) -> str:
    h = hashlib.sha256(f"claims {FORMAT}".encode())
    for base, path in files:
        h.update(str(path.relative_to(base)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def fingerprint() -> str:
    """sha256 of the code and the catalogue a claim is computed from (module doc); hashed again only when a
    file's size or modification time changes (a long-lived process, such as the app, sees edits)."""
    files = _files(catalog_root())
    stats = tuple((p.stat().st_size, p.stat().st_mtime_ns) for _, p in files)
    return _fingerprint(files, stats)


def _path(fn: Callable) -> Path | None:
    where = root()
    if where is None:
        return None
    key = hashlib.sha256(f"{fingerprint()} {fn.__module__}.{fn.__qualname__}".encode()).hexdigest()
    return where / "claims" / f"{key}.json"


def rows(fn: Callable[[], list], make: Callable[[dict], object]) -> list:
    """fn()'s rows, read back (make(dict) per row) when this version computed them before, else computed
    now and stored as their fields (dataclasses.asdict)."""
    from dataclasses import asdict

    path = _path(fn)
    if path is not None and path.is_file() and trusted(path):
        try:
            doc = json.loads(path.read_text())
            if doc.get("format") == FORMAT and doc.get("claim") == f"{fn.__module__}.{fn.__qualname__}":
                used(path)
                return [make(r) for r in doc["rows"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    out = fn()
    if path is not None:
        write_json(path, {"format": FORMAT, "claim": f"{fn.__module__}.{fn.__qualname__}",
                          "rows": [asdict(r) for r in out]})
    return out


def frame(name: str, fn: Callable[[], "pd.DataFrame"]) -> "pd.DataFrame":
    """fn()'s DataFrame, read back when this version computed it before (module doc), else computed and stored."""
    import pandas as pd

    return pickled(name, fn, pd.DataFrame)


def pickled(name: str, fn: Callable[[], object], kind: type = object):
    """fn()'s result, read back when this version computed it for `name` before (an entry not of `kind`, or
    unreadable, is computed again), else computed and stored."""
    import pandas as pd

    where = root()
    if where is None:
        return fn()
    key = hashlib.sha256(f"{fingerprint()} pickled {name} pandas {pd.__version__}".encode())
    path = where / "claims" / f"{key.hexdigest()}.pkl"
    if path.is_file() and trusted(path):
        try:
            got = pd.read_pickle(path)  # our own entry, written below
            if isinstance(got, kind):
                used(path)
                return got
        except Exception:  # noqa: BLE001 - an unreadable entry is computed again, whatever its fault
            pass
    out = fn()
    write(path, lambda tmp: pd.to_pickle(out, tmp))
    return out
