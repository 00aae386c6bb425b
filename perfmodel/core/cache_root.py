"""Where perfmodel keeps what it computed once and reads back in the next process: compiled graphs
(model/graph/cache.py), computed claims and report comparisons (claims/result_cache.py), unit conversion
factors (core/units.py). Every entry is keyed by what it was computed from; any entry may be deleted.

    root()              $PERFMODEL_CACHE_DIR, else $XDG_CACHE_HOME/perfmodel, else ~/.cache/perfmodel;
                        None when PERFMODEL_CACHE_DIR=off
    write(path, fill)   fill(temporary path), then renamed onto path (safe_write.atomic_path): a reader never
                        sees half an entry; nothing when the folder cannot be written; then prune
    write_json(path, doc)   the same for a JSON document
    trusted(path)       whether an entry may be read back: owned by this user, writable by no one else, down the
                        folders from the root (entries hold code: a graph's source, a pickle)
    prune(folder)       keeps a folder under MAX_FOLDER_BYTES, the entries used longest ago removed first
                        (every code version adds entries; a read entry is touched: used())

Does not: decide what is kept or how it is keyed (the modules above do).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from perfmodel.core import safe_write


def root() -> Path | None:
    """The cache root (module doc), or None when caching is off."""
    env = os.environ.get("PERFMODEL_CACHE_DIR", "")
    if env.lower() == "off":
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfmodel"


_WARNED: set[str] = set()  # folders already reported as untrusted (one line each per process)


def trusted(path: Path) -> bool:
    """Whether an entry may be read back: the entry and every folder from the cache root down to it are owned by
    this user and writable by no one else. An entry loads code (a compiled graph's source, a pickle), so an entry
    someone else could have written is never read; the first refusal per folder says so in one line on stderr and
    the value is computed afresh."""
    top = root()
    getuid = getattr(os, "getuid", None)
    if top is None or getuid is None:  # caching off; no POSIX owners to check
        return top is not None
    top = Path(os.path.realpath(top))
    path = Path(os.path.realpath(path))
    chain = [path] + [p for p in path.parents if p == top or top in p.parents]
    for p in chain:
        try:
            st = os.stat(p)
        except OSError:
            return False
        if st.st_uid != getuid() or st.st_mode & 0o022:
            if str(p) not in _WARNED:
                _WARNED.add(str(p))
                import sys

                who = "is not yours" if st.st_uid != getuid() else "is writable by others"
                print(f"perfmodel: cache {p} {who}: its entries are not read (chmod go-w, or set "
                      "PERFMODEL_CACHE_DIR to a folder of your own)", file=sys.stderr)
            return False
    return True


MAX_FOLDER_BYTES = 256 * 2 ** 20  # per folder (graphs/, claims/): a few hundred code versions' entries


def write(path: Path, fill: Callable[[Path], object]) -> None:
    """fill(a temporary path beside `path`), renamed onto it when complete, then prune its folder; nothing when
    the folder cannot be written (a cache entry is optional)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # this user's alone (trusted)
        with safe_write.atomic_path(path, user_output=False) as tmp:
            fill(tmp)
    except (OSError, safe_write.OutputError):
        return
    prune(path.parent)


def write_json(path: Path, doc) -> None:
    """write() of `doc` as JSON."""
    write(path, lambda tmp: tmp.write_text(json.dumps(doc)))


def used(path: Path) -> None:
    """Mark an entry as just used (its modification time), so prune keeps it over older ones."""
    try:
        os.utime(path)
    except OSError:
        return


def prune(folder: Path, max_bytes: int = MAX_FOLDER_BYTES) -> None:
    """Remove the entries used longest ago until the folder holds at most max_bytes (errors ignored: another
    process may be pruning the same folder)."""
    try:
        entries = [(e.stat().st_mtime, e.stat().st_size, e) for e in folder.iterdir() if e.is_file()]
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda x: x[0]):
        if total <= max_bytes:
            return
        try:
            entry.unlink()
        except OSError:
            pass
        total -= size
