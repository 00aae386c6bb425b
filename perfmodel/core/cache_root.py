"""Where perfmodel keeps what it computed once and reads back in the next process: compiled graphs
(model/graph_cache.py), computed claims and report comparisons (claims/result_cache.py), unit conversion
factors (core/units.py). Every entry is keyed by what it was computed from; any entry may be deleted.

    root()              $PERFMODEL_CACHE_DIR, else $XDG_CACHE_HOME/perfmodel, else ~/.cache/perfmodel;
                        None when PERFMODEL_CACHE_DIR=off
    write_json(path, doc)   atomic (a temporary file, then os.replace): a reader never sees half an entry;
                        nothing when the folder cannot be written

Does not: decide what is kept or how it is keyed (the modules above do).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def root() -> Path | None:
    """The cache root (module doc), or None when caching is off."""
    env = os.environ.get("PERFMODEL_CACHE_DIR", "")
    if env.lower() == "off":
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfmodel"


def write_json(path: Path, doc) -> None:
    """Write `doc` as JSON atomically; nothing when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    except OSError:
        return
