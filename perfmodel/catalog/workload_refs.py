"""A workload named any way a user has one: a catalogue key, a workload file anywhere, a Hugging Face config.json,
or a Hugging Face model id already in the local Hugging Face cache (offline; nothing is downloaded).

    'llama-3.1-8b'                 workloads/llama-3.1-8b.toml of the catalogue
    './my-model.toml'              a workload file (its `name` must equal its stem), validated as the catalogue's
    './config.json'                a Hugging Face config.json, imported as `workloads import` would (not written)
    'Qwen/Qwen3-32B'               that repository's config.json in the local Hugging Face cache (HF_HUB_CACHE,
                                   HF_HOME or ~/.cache/huggingface), imported the same way; named 'qwen3-32b'

Every failure is one CatalogError line naming what was asked for and what is allowed. Keys and workload files are
workload_files.load_workload's (below this module: hf_import needs it); the commands that take a user's workload
call load() here.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from perfmodel.catalog import hf_import, workload_files
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core.workload import ModelArch

HF_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # org/name, the form of a Hugging Face repository id
ALLOWED = workload_files.WORKLOAD_REFS


def is_hf(name: str) -> bool:
    """True when `name` is a config.json's path or a Hugging Face id (org/name) that names no file here."""
    if name.endswith(".toml"):
        return False
    return name.endswith(".json") or (bool(HF_ID.fullmatch(name)) and not Path(name).exists())


def hf_cached_config(repo_id: str) -> Path:
    """The cached config.json of Hugging Face repository `repo_id` (its 'main' revision), offline."""
    if not HF_ID.fullmatch(repo_id):
        raise CatalogError(f"workload {repo_id!r}: no such file, and not a Hugging Face model id (org/name); "
                           f"a workload is {ALLOWED}")
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:  # an optional reader: the catalogue works without it
        raise CatalogError(f"workload {repo_id!r}: reading the Hugging Face cache needs the huggingface_hub package "
                           "(pip install huggingface_hub), or pass a path to the model's config.json") from None
    cache = os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE  # read now: set after import counts too
    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache)
    if not isinstance(found, str):
        raise CatalogError(f"workload {repo_id!r}: its config.json is not in the local Hugging Face cache "
                           f"({cache}); fetch it once with 'hf download {repo_id} config.json' "
                           "or pass a path to the file")
    return Path(found)


def default_name(source: str) -> str:
    """The key an imported workload gets: a Hugging Face id's model name lower-cased ('Qwen/Qwen3-32B' ->
    'qwen3-32b'); a config.json's folder name; a workload file's stem."""
    p = Path(source)
    if p.name == "config.json":
        return p.resolve().parent.name
    if p.suffix in (".toml", ".json"):
        return p.stem
    return source.rsplit("/", 1)[-1].lower()


def config_text(source: str, name: str | None = None) -> str:
    """Workload TOML text from a config.json path or a cached Hugging Face id (hf_import.import_hf_config)."""
    path = Path(source)
    if not path.exists():  # a path that exists but is no regular file is refused by the reader, naming what it is
        path = hf_cached_config(source)
    return hf_import.import_hf_config(path, name=name or default_name(source))


def load(ref: str) -> ModelArch:
    """The ModelArch of any workload reference (module doc): a config.json or a cached Hugging Face id imported
    here, a catalogue key or a workload file by workload_files.load_workload."""
    if not is_hf(ref):
        return workload_files.load_workload(ref)
    if ref.endswith(".json") and not Path(ref).is_file():
        raise CatalogError(f"{ref}: no such config.json; a workload is {ALLOWED}")
    name = default_name(ref)
    return workload_files.build_arch(tomllib.loads(config_text(ref, name)), ref, expect_name=name)
