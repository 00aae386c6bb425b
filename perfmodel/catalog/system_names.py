"""Which catalogue system a name in measured data means: one index built from the system files' `aliases`.

Each system file may list the names it goes by where people write measurements (aiconfigurator / InferenceX
system keys such as "h100_sxm", benchmark submitters' system names, marketing names such as "DGX B200",
cloud instance names). Every reader of measured files resolves a system through `resolve` / `lookup`, so a
system added to the catalogue with its aliases makes its measured rows readable with no code change.

    key(name)        the spelling-free form names are compared in: lower case, letters and digits only
                     ("H100 SXM", "h100_sxm" and "h100-sxm" are one name)
    index(root)      {key: system} over every system file's name, display name and aliases; a key claimed by
                     two systems is a CatalogError naming both files
    lookup(name)     the system a name means, or "" when none
    resolve(name)    the same, or a ValueError naming the value with did-you-mean

Does not: load systems (files.load_system) or guess a system from its chip.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from pathlib import Path

from perfmodel.catalog.files import catalog_root, list_systems, read_toml
from perfmodel.catalog.spec_schema import CatalogError


def key(name) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).strip().lower())


def index(root: Path | None = None) -> dict[str, str]:
    return dict(_index(str(root or catalog_root())))


@lru_cache(maxsize=8)
def _index(root: str) -> tuple[tuple[str, str], ...]:
    out: dict[str, tuple[str, str]] = {}  # key -> (system, the name it was written as)
    for system in list_systems(Path(root)):
        path = Path(root) / "hardware_specs" / f"{system}.toml"
        data = read_toml(path)
        aliases = data.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) and key(a) for a in aliases):
            raise CatalogError(f"{path}: field aliases: must be a list of names with letters or digits, "
                               f"got {aliases!r}")
        for name in [system, data.get("display_name", ""), *aliases]:
            k = key(name)
            if not k:
                continue
            if k in out and out[k][0] != system:
                raise CatalogError(f"{path}: alias {name!r} also names {out[k][0]!r} (as {out[k][1]!r}): a name in "
                                   "measured data must mean one system")
            out.setdefault(k, (system, name))
    return tuple((k, v[0]) for k, v in out.items())


def clear_cache() -> None:
    _index.cache_clear()


def lookup(name, root: Path | None = None) -> str:
    """The catalogue system `name` means ('' when no system file lists it)."""
    return index(root).get(key(name), "")


def resolve(name, root: Path | None = None) -> str:
    """The catalogue system `name` means; ValueError (one line, with did-you-mean) when none."""
    found = lookup(name, root)
    if not found:
        names = index(root)
        close = difflib.get_close_matches(key(name), list(names), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(sorted({repr(names[k]) for k in close}))}?)" if close else ""
        raise ValueError(f"unknown system {str(name)!r}{hint}: no system file lists it (hardware_specs/*.toml "
                         f"aliases)")
    return found
