"""Modelling assumptions (calibration), kept apart from datasheet facts.

hardware_specs/calibration/<family>.toml holds one table per parameter:

    [params.hbm_efficiency]
    value = 0.85
    kind = "ratio"                 # a units.KINDS kind; quantities are strings with units
    status = "assumed"             # assumed | measured
    reason = "why this value"      # required
    source = "where it comes from" # required for measured

and optional per-chip overrides under [chips.<chip>.params.<name>] (same fields). Every
parameter the model uses must exist in the family file (no hidden defaults in code), and
users override any of them at run time (`Calibration.with_overrides`).

Does not: hold datasheet facts (hardware_specs/*.toml) or compute anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict

from perfmodel import units
from perfmodel.catalog import catalog_root, read_toml
from perfmodel.hardware import Family, System
from perfmodel.specs import CatalogError, validate_file

STRICT = ConfigDict(extra="forbid", frozen=True)


class _Param(BaseModel):
    model_config = STRICT
    value: str | int | float | bool
    kind: str
    status: Literal["assumed", "measured"]
    reason: str
    source: str = ""


class _ChipOverrides(BaseModel):
    model_config = STRICT
    params: dict[str, _Param]


class CalibrationFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    family: Family
    description: str = ""
    params: dict[str, _Param]
    chips: dict[str, _ChipOverrides] = {}


@dataclass(frozen=True)
class Param:
    name: str
    value: float
    raw: str
    kind: str
    status: str
    reason: str
    source: str
    origin: str  # file (and chip override) it came from, or "user override"


@dataclass(frozen=True)
class Calibration:
    """Resolved assumptions for one chip: name -> Param (SI floats; booleans as 0/1)."""

    chip: str
    params: Mapping[str, Param] = field(default_factory=lambda: MappingProxyType({}))

    def __getitem__(self, name: str) -> float:
        try:
            return self.params[name].value
        except KeyError:
            raise KeyError(f"calibration parameter {name!r} is not defined for {self.chip} "
                           f"(known: {', '.join(sorted(self.params))})") from None

    def get(self, name: str, default: float) -> float:
        return self.params[name].value if name in self.params else default

    def with_overrides(self, overrides: Mapping[str, float | str]) -> "Calibration":
        """Copy with user-set values (floats in SI, or strings with units)."""
        new = dict(self.params)
        for name, v in overrides.items():
            if name not in new:
                raise KeyError(f"unknown calibration parameter {name!r} (known: {', '.join(sorted(new))})")
            old = new[name]
            val = _value(v, old.kind, f"override {name}")
            new[name] = dataclasses.replace(old, value=val, raw=str(v), status="assumed",
                                            reason=f"user override (was {old.raw})", origin="user override")
        return dataclasses.replace(self, params=MappingProxyType(new))

    def frame_rows(self) -> list[dict]:
        return [{"parameter": p.name, "value": p.value, "as_written": p.raw, "status": p.status, "reason": p.reason,
                 "source": p.source, "origin": p.origin} for p in self.params.values()]


def _value(v, kind: str, where: str) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    try:
        out = units.parse(v, kind)
    except (units.UnitError, KeyError) as exc:
        raise CatalogError(f"{where}: {exc}") from None
    if out < 0:
        raise CatalogError(f"{where}: must not be negative, got {v!r}")
    return out


def load_calibration_file(path: Path) -> CalibrationFile:
    data = read_toml(path)
    cal = validate_file(CalibrationFile, data, str(path), None)
    for scope, table in [("params", cal.params)] + [(f"chips.{c}.params", o.params) for c, o in cal.chips.items()]:
        for name, p in table.items():
            if p.kind not in units.KINDS and p.kind != "flag":
                raise CatalogError(f"{path}: field {scope}.{name}.kind: unknown kind {p.kind!r}")
            if p.status == "measured" and not p.source.strip():
                raise CatalogError(f"{path}: field {scope}.{name}.source: a measured value needs its source")
            if not p.reason.strip():
                raise CatalogError(f"{path}: field {scope}.{name}.reason: every assumption needs its reason")
            if p.kind != "flag":
                _value(p.value, p.kind, f"{path}: field {scope}.{name}.value")
    for chip, o in cal.chips.items():
        for name in o.params:
            if name not in cal.params:
                raise CatalogError(f"{path}: field chips.{chip}.params.{name}: overrides a parameter the family "
                                   "file does not define")
    return cal


@lru_cache(maxsize=64)
def _family_file(family: str, root: Path) -> tuple[CalibrationFile, str]:
    path = root / "hardware_specs" / "calibration" / f"{family}.toml"
    if not path.exists():
        raise CatalogError(f"{path}: no calibration file for family {family!r}")
    return load_calibration_file(path), str(path)


def calibration_for(system: System, root: Path | None = None) -> Calibration:
    """The resolved assumptions for a system's chip (family file + chip overrides)."""
    root = root or catalog_root()
    fam = "neuron" if system.chip.family.is_neuron else system.chip.family.value
    cal, path = _family_file(fam, root)
    params: dict[str, Param] = {}
    chip_name = system.chip.name.removesuffix("-projected")
    overrides = cal.chips.get(chip_name) or cal.chips.get(system.chip.name)
    for name, p in cal.params.items():
        src, origin = p, path
        if overrides and name in overrides.params:
            src, origin = overrides.params[name], f"{path} [chips.{chip_name}]"
        val = 1.0 if src.value is True else 0.0 if src.value is False else _value(src.value, src.kind, f"{path}: {name}")
        params[name] = Param(name=name, value=val, raw=str(src.value), kind=src.kind, status=src.status,
                             reason=src.reason, source=src.source, origin=origin)
    return Calibration(chip=system.chip.name, params=MappingProxyType(params))


def clear_cache() -> None:
    _family_file.cache_clear()
