"""The catalogue: the only module that reads spec, workload and calibration files.

Layout (file name = catalogue key):
    hardware_specs/<system>.toml          systems (node, scale-up domain, link tiers)
    hardware_specs/chips/<chip>.toml      chips, referenced by systems
    hardware_specs/sources.toml           source registry (S1, S2, ... seed-000 ...)
    hardware_specs/calibration/*.toml     modelling assumptions (never datasheet facts)
    workloads/<model>.toml                model architectures (Hugging Face field names)

The root is the directory holding hardware_specs/ and workloads/: $PERFMODEL_CATALOG if
set, else the checkout this package lives in.

Does not: compute anything beyond building typed objects.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from perfmodel.catalog.calibration import calibration_for, family_of
from perfmodel.catalog.replacements import Replacements
from perfmodel.catalog.root import catalog_root, read_toml  # noqa: F401  (importers name them from here too)
from perfmodel.catalog.spec_schema import CatalogError, ChipFile, SystemFile, check_name, validate_file
from perfmodel.catalog.specs import build_chip, build_system, chip_values
from perfmodel.core.errors import did_you_mean  # noqa: F401  (catalog's readers name it from here)
from perfmodel.core.hardware import System
from perfmodel.core.provenance import SpecValue


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str = ""
    document: str = ""
    date: str = ""


@lru_cache(maxsize=8)
def load_sources(root: Path | None = None) -> dict[str, Source]:
    root = root or catalog_root()
    path = root / "hardware_specs" / "sources.toml"
    data = read_toml(path)
    if data.pop("schema_version", None) != 1:
        raise CatalogError(f"{path}: field schema_version: must be 1")
    out = {}
    for key, entry in data.items():
        if not isinstance(entry, dict) or "title" not in entry:
            raise CatalogError(f"{path}: field {key}: a source needs at least a title")
        unknown = set(entry) - {"title", "url", "document", "date"}
        if unknown:
            raise CatalogError(f"{path}: field {key}.{sorted(unknown)[0]}: unknown key (not in the schema)")
        out[key] = Source(key=key, **entry)
    return out


@lru_cache(maxsize=64)
def _chip(name: str, root: Path) -> tuple[ChipFile, dict[str, SpecValue], ChipFile | None]:
    path = root / "hardware_specs" / "chips" / f"{name}.toml"
    if name not in list_chips(root):  # a key, never a path ('../x' names no file outside the catalogue)
        known = list_chips(root)
        raise CatalogError(f"{path}: no such chip {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")
    data = read_toml(path)
    chip = validate_file(ChipFile, data, str(path), set(load_sources(root)))
    check_name(path, data)
    base_vals, base_file = None, None
    if chip.base:
        base_file, base_vals, _ = _chip(chip.base, root)
    return chip, chip_values(chip, base_vals, str(path)), base_file


def load_system(name: str, variant: str = "nominal", root: Path | None = None,
                replaced: Replacements | None = None) -> System:
    """The typed System for catalogue key `name` (cached), or for a system file's path (hardware_refs: read each
    time); variant low/high: ends of projected ranges; carrying its chip's Calibration (family file, chip overrides
    and the calibrated set of its family that `replaced` holds, if any)."""
    system = system_spec(name, variant, root)
    # the chip's assumptions travel with the system: resolved here, where files are read, with the calibrated set
    # the caller passed (catalog/replacements.py), never looked up inside a computation
    calibrated = replaced.calibrated_for(family_of(system)) if replaced else None
    return dataclasses.replace(system, calibration=calibration_for(system, root, calibrated))


def system_spec(name: str, variant: str = "nominal", root: Path | None = None) -> System:
    """The system as its spec files say, without its calibration (what `perfmodel check` checks of a system
    file; the calibration files are checked on their own)."""
    from perfmodel.catalog import hardware_refs

    if hardware_refs.is_reference(name):
        r = root or catalog_root()
        return hardware_refs.load_system_file(name, variant, read_toml, lambda key: _chip(key, r),
                                              lambda key: r / "hardware_specs" / "chips" / f"{key}.toml")
    return _load_system(name, variant, root)


@lru_cache(maxsize=128)
def _load_system(name: str, variant: str, root: Path | None) -> System:
    root = root or catalog_root()
    path = root / "hardware_specs" / f"{name}.toml"
    known = list_systems(root)
    if name not in known:  # a key, never a path ('../x' names no file outside the catalogue)
        raise CatalogError(f"no system {name!r} in {root / 'hardware_specs'}{did_you_mean(name, known)} "
                           f"(known: {', '.join(known)})")
    data = read_toml(path)
    sysfile = validate_file(SystemFile, data, str(path), set(load_sources(root)))
    check_name(path, data)
    chip_file, vals, base_file = _chip(sysfile.chip, root)
    chip_path = str(root / "hardware_specs" / "chips" / f"{sysfile.chip}.toml")
    chip = build_chip(chip_file, vals, chip_path, variant=variant, base_file=base_file)
    return build_system(sysfile, chip, vals, str(path))


def list_systems(root: Path | None = None) -> list[str]:
    root = root or catalog_root()
    return sorted(p.stem for p in (root / "hardware_specs").glob("*.toml") if p.stem != "sources")


def list_chips(root: Path | None = None) -> list[str]:
    root = root or catalog_root()
    return sorted(p.stem for p in (root / "hardware_specs" / "chips").glob("*.toml"))


def list_workloads(root: Path | None = None) -> list[str]:
    root = root or catalog_root()
    return sorted(p.stem for p in (root / "workloads").glob("*.toml"))


def clear_caches() -> None:
    load_sources.cache_clear()
    _chip.cache_clear()
    _load_system.cache_clear()
