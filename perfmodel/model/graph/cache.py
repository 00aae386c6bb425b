"""Compiled operator graphs kept on disk, so a new process (a CLI call, a test worker, the app) does not
rebuild a graph's sympy expressions again (seconds per graph; the in-process lru_cache of
evaluate.compile_graph covers one process only).

What is stored: the source lambdify generated for one graph (GraphKey, phase, recompute, overlap), its
symbols (name and the assumptions they were made with, so sympy's symbol cache returns the very objects
bindings.bind binds: a look-up by an equal but distinct symbol compares contents, ~10 us each) and what the
caller needs besides (meta: the operators' names, passes and collectives), so a hit builds no sympy graph.
The key also holds a fingerprint of the code that defines the expressions (every .py file of perfmodel/model
and perfmodel/core, and the sympy version): a change to any formula misses every entry.

Where: graphs/ under the cache root (core/cache_root.py: $PERFMODEL_CACHE_DIR, else
$XDG_CACHE_HOME/perfmodel, else ~/.cache/perfmodel; PERFMODEL_CACHE_DIR=off turns every cache off). An
entry that cannot be read or written is ignored (the graph is compiled as without the cache); writes are
atomic (a temporary file, then os.replace), so concurrent processes never see half an entry.

BUILD is the lock under which evaluate.compile_graph and memory's parameter counts build or read back a graph: a
sweep's threads (sweep/run.py) would otherwise run sympy, which is not made for threads, side by side.

Does not: build or evaluate a graph (evaluate.compile_graph does).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from perfmodel.core.cache_root import root, trusted, used, write_json  # noqa: F401 (root re-exported)

if TYPE_CHECKING:  # sympy is imported where a graph is read or fingerprinted: the root and writer stay light
    import sympy as sp

FORMAT = 2  # 2: entries carry the graph's operator records (meta)
# sympy's caches are not made for threads: a sweep's threads build (or read back) graphs one at a time
BUILD = threading.RLock()


def directory() -> Path | None:
    """The graphs' directory, or None when the cache is off."""
    where = root()
    return None if where is None else where / "graphs"


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """sha256 of the code that defines the graph expressions, and of the sympy version."""
    import sympy as sp

    h = hashlib.sha256(f"{FORMAT} sympy {sp.__version__}".encode())
    for name, path in sources():
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def sources() -> list[tuple[str, Path]]:
    """(name, path) of every file the fingerprint hashes: perfmodel/model and perfmodel/core, sub-packages too
    (the graph builders live in model/graph/)."""
    root = Path(__file__).resolve().parents[2]  # perfmodel/ (this file is perfmodel/model/graph/cache.py)
    return [(p.relative_to(root).as_posix(), p) for sub in ("model", "core") for p in sorted((root / sub).rglob("*.py"))]


def _path(parts: tuple) -> Path | None:
    where = directory()
    if where is None:
        return None
    key = hashlib.sha256((fingerprint() + repr(parts)).encode()).hexdigest()
    return where / f"{key}.json"


def load(parts: tuple) -> tuple[str, tuple[sp.Symbol, ...], object] | None:
    """(source, symbols, meta) of a stored entry, or None (no entry, cache off, or an entry that cannot be read)."""
    path = _path(parts)
    if path is None or not path.is_file() or not trusted(path):  # its source is run: only this user's entries
        return None
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT or doc.get("parts") != repr(parts):
            return None
        import sympy as sp

        syms = tuple(sp.Symbol(name, **assumptions) for name, assumptions in doc["symbols"])
        used(path)
        return str(doc["source"]), syms, doc.get("meta")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(parts: tuple, source: str, symbols: tuple[sp.Symbol, ...], meta=None) -> None:
    """Write one graph's entry (silently nothing when the cache is off or the directory is not writable)."""
    path = _path(parts)
    if path is None:
        return
    write_json(path, {"format": FORMAT, "parts": repr(parts), "source": source, "meta": meta,
                      "symbols": [[s.name, dict(getattr(s, "_assumptions_orig", s.assumptions0))] for s in symbols]})


def function(source: str, namespace: dict):
    """The numpy function a stored source defines, in lambdify's namespace."""
    scope = dict(namespace)
    exec(compile(source, "<perfmodel graph cache>", "exec"), scope)  # noqa: S102 - our own generated code
    name = source.split("def ", 1)[1].split("(", 1)[0]
    return scope[name]
