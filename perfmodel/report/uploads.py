"""Models and machines brought into the explorer as files: kept where the catalogue's loaders read them, so an
uploaded config.json or workload / system TOML is a reference like `--workload ./model.toml` on the command line.

    store(filename, data, kind)   bytes -> the reference (a path) under <cache root>/uploads/<content hash>/, checked
                                  by the loader of its kind (workload, hardware, scenario); a file it refuses is
                                  one line naming the upload, not the kept path
    load_scenario(filename, data) a scenario file kept as store() keeps it, and loaded (scenario_files.Saved)
    is_upload(ref)                True for a kept file (a shared link may name one; the sidebar offers it)
    label(ref)                    what the sidebar shows for it: 'my-model (uploaded)'

The folder is content-addressed (the same bytes, the same path), so a link to a view of an upload works for as
long as the server keeps the file. A config.json is kept as <hash>/<model name>/config.json: the importer names
the workload after its folder (workload_refs.default_name), the model's own name where the file states one, else
its type, width and depth.

Does not: import Streamlit, or price anything.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path

from perfmodel import catalog
from perfmodel.catalog import scenario_files, workload_refs
from perfmodel.core import cache_root, safe_write

KINDS = {"workload": (".json", ".toml"), "hardware": (".toml",), "scenario": (".toml",)}
LIMIT_BYTES = 2 ** 20  # a config.json or a spec file is a few kB
LIMIT_MB = LIMIT_BYTES // 2 ** 20  # the same, as Streamlit's uploader takes it (max_upload_size, in MB)


def folder() -> Path:
    """Where uploads are kept: the cache root's uploads/ (the system's temporary folder when caching is off)."""
    base = cache_root.root()
    return (base if base is not None else Path(tempfile.gettempdir()) / "perfmodel") / "uploads"


def _model_name(data: bytes) -> str:
    """A config.json's model name as a catalogue key: the last part of its _name_or_path, else its model type with
    its width and depth ('llama-h4096-l32'; a config.json rarely states its own name)."""
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    doc = doc if isinstance(doc, dict) else {}
    text = doc.get("text_config") if isinstance(doc.get("text_config"), dict) else doc
    dims = "".join(f"-{k}{text[f]}" for k, f in (("h", "hidden_size"), ("l", "num_hidden_layers")) if f in text)
    raw = str(doc.get("_name_or_path") or f"{doc.get('model_type', 'uploaded-model')}{dims}")
    return re.sub(r"[^a-z0-9.-]+", "-", raw.rsplit("/", 1)[-1].lower()).strip("-.") or "uploaded-model"


def store(filename: str, data: bytes, kind: str) -> str:
    """Keep an upload and check it with its kind's loader (module doc); returns the reference the loaders take."""
    return _keep(filename, data, kind)[0]


def load_scenario(filename: str, data: bytes) -> scenario_files.Saved:
    """An uploaded scenario file, kept and loaded (its check is its load: done once)."""
    return _keep(filename, data, "scenario")[1]


def _keep(filename: str, data: bytes, kind: str) -> tuple[str, object]:
    """(the kept file's reference, what its kind's loader made of it): store() and load_scenario()."""
    name = Path(filename).name
    if not name.endswith(KINDS[kind]):
        raise ValueError(f"{name}: a {kind} file is {' or '.join(KINDS[kind])}")
    if len(data) > LIMIT_BYTES:
        raise ValueError(f"{name}: {len(data):,} bytes is over the {LIMIT_BYTES:,}-byte limit for a {kind} file")
    where = folder() / hashlib.sha256(name.encode() + b"\0" + data).hexdigest()[:16]
    path = where / _model_name(data) / "config.json" if name == "config.json" else where / name
    path.parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_bytes(path, data)  # whole or not at all: another session may be reading the same upload
    try:
        loaded = {"workload": workload_refs.load, "hardware": catalog.load_system,
                  "scenario": scenario_files.load}[kind](str(path))
    except (ValueError, KeyError) as exc:
        text = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).splitlines()[0]
        raise ValueError(f"{name}: " + text.replace(f"{path}: ", "").replace(str(path), name)) from None
    return str(path), loaded


def is_upload(ref: str) -> bool:
    """True when `ref` is a file kept by store()."""
    try:
        path = Path(ref).resolve()
        return path.is_file() and folder().resolve() in path.parents
    except (OSError, ValueError):
        return False


def label(ref: str) -> str:
    """A catalogue key as it is; a kept file as its model or system name, marked uploaded."""
    if not is_upload(ref):
        return ref
    return f"{workload_refs.default_name(ref)} (uploaded)"
