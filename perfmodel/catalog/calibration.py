"""Modelling assumptions (calibration), kept apart from datasheet facts.

hardware_specs/calibration/<family>.toml holds one table per parameter:

    [params.hbm_efficiency]
    value = 0.85
    kind = "ratio"                 # a units.KINDS kind; quantities are strings with units
    status = "assumed"             # assumed | measured
    reason = "why this value"      # required
    source = "where it comes from" # required for measured

and optional per-chip overrides under [chips.<chip>.params.<name>] (same fields). Every
parameter the model uses must exist in the family file (no hidden defaults in code), each
value lies in its parameter's allowed range (param_ranges.py: an efficiency in (0, 1], a tile
size a whole number >= 1, ...), and users override any of them at run time (`Calibration.with_overrides`).

Calibrated parameter sets (written by `perfmodel calibrate`, see calibrate.py) are separate
files, used only when asked for: `load_calibrated_set(path)` reads one (strict: errors name the
file and the field), `calibrated_sets(*files_or_sets)` checks a run's sets (one per family, a known
family), and the caller passes them explicitly: `calibration_for(system, calibrated=set_)`, or
`load_system(name, replaced=Replacements(calibrated=...))` at the edge (catalog/replacements.py;
CLI: `perfmodel --calibration FILE COMMAND`). There is no calibrated set "in force": what a result
depends on is in its arguments. A replaced parameter keeps its provenance: status "calibrated",
origin = the set's file, reason "fitted by perfmodel calibrate on <cases file> (<n> cases, <date>)".

Does not: hold datasheet facts (hardware_specs/*.toml), fit anything (calibrate.py) or compute anything.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Mapping

from pydantic import BaseModel

from perfmodel.catalog.calibrated_set_file import CalibratedSetFile
from perfmodel.catalog.root import catalog_root, read_toml
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core import units
from perfmodel.core.calibration import Calibration, Param, as_written, parameter_value
from perfmodel.core.errors import did_you_mean
from perfmodel.core.hardware import Family, System

FIT_FAMILIES = ("neuron", "nvidia")  # families a calibrated set may be fitted for


class _Param(BaseModel):
    model_config = STRICT
    value: str | int | float | bool
    kind: str
    status: Literal["assumed", "measured"]
    reason: str
    source: str = ""
    range: list[str | int | float] = []  # [low, high]: the values the evidence leaves open (assumed values)


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
                v = parameter_value(p.value, p.kind, f"{path}: field {scope}.{name}.value", name)
                _range(p, v, f"{path}: field {scope}.{name}")
    for chip, o in cal.chips.items():
        for name, p in o.params.items():
            if name not in cal.params:
                raise CatalogError(f"{path}: field chips.{chip}.params.{name}: overrides a parameter the family "
                                   f"file does not define{did_you_mean(name, cal.params)}")
            if p.kind != cal.params[name].kind:
                raise CatalogError(f"{path}: field chips.{chip}.params.{name}.kind: {p.kind!r}, but the family "
                                   f"value's kind is {cal.params[name].kind!r}")
    return cal


@lru_cache(maxsize=64)
def _family_file(family: str, root: Path) -> tuple[CalibrationFile, str]:
    path = root / "hardware_specs" / "calibration" / f"{family}.toml"
    if not path.exists():
        raise CatalogError(f"{path}: no calibration file for family {family!r}")
    return load_calibration_file(path), str(path)


def family_of(system: System) -> str:
    """The calibration family of a system's chip: "neuron" for Trainium and Inferentia, else the chip's family."""
    return "neuron" if system.chip.family.is_neuron else system.chip.family.value


def calibration_for(system: System, root: Path | None = None, calibrated: CalibratedSet | None = None) -> Calibration:
    """The resolved assumptions for a system's chip (family file + chip overrides), with the values of
    `calibrated` (a calibrated set of the system's family) replacing the file's where given."""
    root = root or catalog_root()
    fam = family_of(system)
    if calibrated is not None and calibrated.family != fam:
        raise CatalogError(f"{calibrated.origin}: a calibrated set for family {calibrated.family!r}, not for "
                           f"{system.name} (family {fam!r})")
    return _calibration(fam, root, system.chip.name, calibrated)


@lru_cache(maxsize=256)
def _calibration(fam: str, root: Path, chip: str, active: CalibratedSet | None) -> Calibration:
    """calibration_for's value, built once per (family, catalogue, chip, calibrated set): a Calibration is
    immutable, so every caller shares one (and caches keyed on it hit)."""
    params = dict(_resolved(fam, root, chip))
    if active is not None:
        for name, val in active.values.items():
            old = params[name]  # names were checked against the family file when the set was loaded
            params[name] = dataclasses.replace(old, value=val, raw=as_written(val, old.kind), status="calibrated",
                                               reason=f"{active.reason} (was {old.raw})", source=active.source,
                                               origin=active.origin)
    return Calibration(chip=chip, params=MappingProxyType(params))


@lru_cache(maxsize=256)
def _resolved(fam: str, root: Path, chip: str) -> Mapping[str, Param]:
    """Family-file values with the chip's overrides, parsed once per chip (the file is cached by _family_file)."""
    cal, path = _family_file(fam, root)
    params: dict[str, Param] = {}
    chip_name = chip.removesuffix("-projected")
    overrides = cal.chips.get(chip_name) or cal.chips.get(chip)
    for name, p in cal.params.items():
        src, origin = p, path
        if overrides and name in overrides.params:
            src, origin = overrides.params[name], f"{path} [chips.{chip_name}]"
        val = 1.0 if src.value is True else 0.0 if src.value is False else parameter_value(src.value, src.kind,
                                                                                  f"{path}: {name}", name)
        low, high = _range(src, val, f"{path}: field {'chips.' + chip_name + '.' if src is not p else ''}params.{name}")
        params[name] = Param(name=name, value=val, raw=str(src.value), kind=src.kind, status=src.status,
                             reason=src.reason, source=src.source, origin=origin, low=low, high=high)
    return MappingProxyType(params)


def _range(p: _Param, value: float, where: str) -> tuple[float | None, float | None]:
    """(low, high) SI of a parameter's stated range, checked: two values of its kind around its value."""
    if not p.range:
        return None, None
    if len(p.range) != 2:
        raise CatalogError(f"{where}.range: give [low, high], got {p.range!r}")
    low, high = (parameter_value(v, p.kind, f"{where}.range") for v in p.range)
    if not low <= value <= high:
        raise CatalogError(f"{where}.range: {p.range!r} does not hold its value {p.value!r} (low <= value <= high)")
    return low, high


def clear_cache() -> None:
    _family_file.cache_clear()
    _resolved.cache_clear()
    _calibration.cache_clear()


@dataclass(frozen=True, eq=False)
class CalibratedSet:
    """Values (SI) that replace family-file parameters where a caller passes the set, with their provenance."""

    family: str  # neuron | nvidia
    values: Mapping[str, float]
    origin: str  # the file it came from (or what made it)
    reason: str
    source: str = ""
    file: CalibratedSetFile | None = None

    def key(self) -> tuple:
        return (self.family, self.origin, tuple(sorted(self.values.items())))


def file_value(value: float, kind: str) -> str | float:
    """The TOML value for a fitted number: a string with units, or a plain float for ratios and counts."""
    text = as_written(value, kind)
    return float(text) if kind in ("ratio", "count") or not units.KINDS[kind].dimensionality else text


def load_calibrated_set(path: Path | str, root: Path | None = None) -> CalibratedSet:
    """Read and check a calibrated-set file: schema, ISO date, every parameter known to the family file
    with the same kind, values with units, lower <= value <= upper. Errors name the file and the field."""
    path = Path(path)
    if not path.exists():
        raise CatalogError(f"{path}: no such calibrated-set file")
    data = read_toml(path)
    f = validate_file(CalibratedSetFile, data, str(path), None)
    try:
        _dt.datetime.fromisoformat(f.created)
    except ValueError:
        raise CatalogError(f"{path}: field created: {f.created!r} is not an ISO date (YYYY-MM-DD[THH:MM:SS])") from None
    fam_file, fam_path = _family_file(f.family, root or catalog_root())
    values = {}
    for name, p in f.params.items():
        where = f"{path}: field params.{name}"
        if name not in fam_file.params:
            raise CatalogError(f"{where}: not a parameter of {fam_path}{did_you_mean(name, fam_file.params)} (a "
                               "calibrated set can only replace parameters the family file defines)")
        want = fam_file.params[name].kind
        if p.kind != want:
            raise CatalogError(f"{where}.kind: {p.kind!r}, but {fam_path} gives {name} the kind {want!r}")
        # the fitted value must lie in the parameter's range; the fit's start and bounds need only be sound
        num = {k: parameter_value(getattr(p, k), p.kind, f"{where}.{k}", name if k == "value" else None)
               for k in ("value", "initial", "lower")}
        upper = parameter_value(p.upper, p.kind, f"{where}.upper") if p.upper is not None else math.inf
        if p.std_error is not None:
            parameter_value(p.std_error, p.kind, f"{where}.std_error")
        if not num["lower"] <= num["value"] <= upper:
            raise CatalogError(f"{where}.value: {p.value!r} is outside its bounds [{p.lower!r}, "
                               f"{p.upper if p.upper is not None else 'unbounded'!r}]")
        values[name] = num["value"]
    for name in f.not_identified:
        if name not in fam_file.params:
            raise CatalogError(f"{path}: field not_identified.{name}: not a parameter of {fam_path}")
    on = f.fitted_on
    return CalibratedSet(
        family=f.family, values=MappingProxyType(values), origin=str(path), file=f,
        reason=f"fitted by perfmodel calibrate on {on.cases_file} ({on.cases} cases, {f.created[:10]})",
        source=f"{on.cases_file} (sha256 {on.sha256[:12]}); {f.method}")


def calibrated_sets(*sets: CalibratedSet | Path | str) -> tuple[CalibratedSet, ...]:
    """A run's calibrated sets (objects or file paths, loaded and checked): at most one per family, each for a
    family a set may be fitted for (FIT_FAMILIES)."""
    loaded = tuple(s if isinstance(s, CalibratedSet) else load_calibrated_set(s) for s in sets)
    fams = [s.family for s in loaded]
    dup = sorted({f for f in fams if fams.count(f) > 1})
    if dup:
        raise CatalogError(f"two calibrated sets for family {dup[0]!r}: "
                           + ", ".join(s.origin for s in loaded if s.family == dup[0]))
    for s in loaded:
        if s.family not in FIT_FAMILIES:
            raise CatalogError(f"{s.origin}: calibrated set for unknown family {s.family!r} "
                               f"(known: {', '.join(FIT_FAMILIES)})")
    return loaded
