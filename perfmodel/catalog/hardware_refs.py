"""A system brought in as a file anywhere, not only a catalogue key (`--hardware ./my-system.toml`).

The file is a system file of the catalogue's schema (hardware_specs/<system>.toml: node, scale-up domain, link
tiers, `name` equal to its stem). Its `chip` is a catalogue chip key ('h100-sxm') or a chip file's path relative
to the system file ('my-gpu.toml', the chip schema of hardware_specs/chips/, its `base` a catalogue chip when
given). A file outside the catalogue cites its sources in words: its `source` fields need no key in
hardware_specs/sources.toml. The chip's family (nvidia, neuron) picks the calibration file; a chip the family
file does not name takes the family's values.

Does not: cache (a file is read each time it is named), or read chips by path from catalogue systems.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from perfmodel.catalog.spec_schema import CatalogError, ChipFile, SystemFile, check_name, validate_file
from perfmodel.catalog.specs import build_chip, build_system, chip_values
from perfmodel.core.hardware import System

ALLOWED = "a catalogue key (perfmodel hardware list) or a path to a system .toml"


def is_reference(name: str) -> bool:
    """True when `name` names a system file rather than a catalogue key."""
    return name.endswith(".toml") or "/" in name or "\\" in name


def _read(path: Path, what: str, read_toml: Callable[[Path], dict]) -> dict:
    if not path.is_file():
        raise CatalogError(f"{path}: no such {what} file; hardware is {ALLOWED}")
    return read_toml(path)


def load_system_file(ref: str, variant: str, read_toml: Callable[[Path], dict], chip_of: Callable[[str], tuple],
                     chip_path_of: Callable[[str], Path]) -> System:
    """The typed System of system file `ref` (module doc); variant low/high: ends of projected ranges. The
    catalogue's readers are passed in by files.load_system: read_toml, chip_of(key) -> (ChipFile, values, base
    ChipFile), chip_path_of(key) -> the catalogue chip's file."""
    path = Path(ref)
    data = _read(path, "system", read_toml)
    sysfile = validate_file(SystemFile, data, str(path), None)
    check_name(path, data)
    if sysfile.chip.endswith(".toml"):
        chip_path = path.parent / sysfile.chip
        cdata = _read(chip_path, "chip", read_toml)
        chip_file = validate_file(ChipFile, cdata, str(chip_path), None)
        check_name(chip_path, cdata)
        base_file, base_vals = None, None
        if chip_file.base:
            base_file, base_vals, _ = chip_of(chip_file.base)
        vals = chip_values(chip_file, base_vals, str(chip_path))
    else:
        chip_path = chip_path_of(sysfile.chip)
        chip_file, vals, base_file = chip_of(sysfile.chip)
    chip = build_chip(chip_file, vals, str(chip_path), variant=variant, base_file=base_file)
    return build_system(sysfile, chip, vals, str(path))
