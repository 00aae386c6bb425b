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
file and the field), and

    with applied(load_calibrated_set("hardware_specs/calibration/fitted/neuron-2025-01-01.toml")):
        ...   # every calibration_for() of that family sees the fitted values

activates it for everything inside the block (CLI: `perfmodel --calibration FILE COMMAND`).
An applied parameter keeps its provenance: status "calibrated", origin = the set's file, reason
"fitted by perfmodel calibrate on <cases file> (<n> cases, <date>)". Outside the block nothing
changes. Results cached elsewhere (lru_cache on computed results) do not see a change of the
active set; `active_key()` is a hashable token of the active sets for such cache keys.

Does not: hold datasheet facts (hardware_specs/*.toml), fit anything (calibrate.py) or compute anything.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import functools
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Iterator, Literal, Mapping

from pydantic import BaseModel

from perfmodel.catalog import param_ranges
from perfmodel.catalog.calibrated_set_file import CalibratedSetFile
from perfmodel.catalog.files import catalog_root, did_you_mean, read_toml
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core import units
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


# 'calibrated': fitted to measurements by `perfmodel calibrate` (only from a calibrated-set file, never
# written in a family file; see applied()).
ParamStatus = Literal["assumed", "measured", "calibrated"]


@dataclass(frozen=True)
class Param:
    name: str
    value: float
    raw: str
    kind: str
    status: str  # a ParamStatus
    reason: str
    source: str
    origin: str  # file (and chip override) it came from, or "user override"
    low: float | None = None  # the range the evidence leaves open (SI), where the file states one
    high: float | None = None

    @property
    def range_text(self) -> str:
        return "" if self.low is None else f"{_as_written(self.low, self.kind)} - {_as_written(self.high, self.kind)}"


class ValuesKey:
    """A tuple of (name, value) pairs that hashes once: equal tuples are equal keys."""

    __slots__ = ("values", "_hash")

    def __init__(self, values: tuple):
        self.values, self._hash = values, hash(values)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, ValuesKey) and self._hash == other._hash and self.values == other.values


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

    @functools.cached_property
    def values_key(self) -> "ValuesKey":
        """Every parameter's value, as a key that compares by value and hashes once (a memo's key: an equal
        Calibration built again hits; the params mapping is read-only, so the key never goes stale)."""
        return ValuesKey(tuple((k, p.value) for k, p in self.params.items()))

    def with_overrides(self, overrides: Mapping[str, float | str], check_range: bool = False) -> "Calibration":
        """Copy with user-set values (strings with units, or plain floats for dimensionless kinds).

        Values are always finite and >= 0. check_range=True also holds each to its parameter's
        allowed range (param_ranges.py), as family files and what-ifs are; it is off for callers that
        step past a bound on purpose (sensitivity's finite differences around a fraction of 1)."""
        new = dict(self.params)
        for name, v in overrides.items():
            if name not in new:
                raise KeyError(f"unknown calibration parameter {name!r}{did_you_mean(name, new)} "
                               f"(known: {', '.join(sorted(new))})")
            old = new[name]
            val = parameter_value(v, old.kind, f"calibration parameter {name}", name if check_range else None)
            new[name] = dataclasses.replace(old, value=val, raw=str(v), status="assumed",
                                            reason=f"user override (was {old.raw})", origin="user override")
        return dataclasses.replace(self, params=MappingProxyType(new))

    def frame_rows(self) -> list[dict]:
        return [{"parameter": p.name, "value": p.value, "as_written": p.raw, "status": p.status, "reason": p.reason,
                 "source": p.source, "origin": p.origin, "range": p.range_text, "kind": p.kind}
                for p in self.params.values()]


def parameter_value(v, kind: str, where: str, name: str | None = None) -> float:
    """SI value of a parameter as written (finite, >= 0); with `name`, also within its allowed range."""
    if isinstance(v, bool):  # only a switch is written true / false
        if kind != "flag":
            unit = "" if kind in ("ratio", "count") else " with its unit"
            raise CatalogError(f"{where}: expected a {kind} value (a number{unit}), got {v!r}")
        return 1.0 if v else 0.0
    try:
        out = units.parse(v, kind)
    except (units.UnitError, KeyError) as exc:
        raise CatalogError(f"{where}: {exc}") from None
    if out < 0:
        raise CatalogError(f"{where}: must not be negative, got {v!r}")
    if name is not None:
        try:
            param_ranges.check(name, kind, out, v)
        except ValueError as exc:
            raise CatalogError(f"{where}: {exc}") from None
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


def calibration_for(system: System, root: Path | None = None) -> Calibration:
    """The resolved assumptions for a system's chip (family file + chip overrides), with the values of an
    applied calibrated set of its family (see applied())."""
    root = root or catalog_root()
    fam = "neuron" if system.chip.family.is_neuron else system.chip.family.value
    return _calibration(fam, root, system.chip.name, _ACTIVE.get(fam))


@lru_cache(maxsize=256)
def _calibration(fam: str, root: Path, chip: str, active: CalibratedSet | None) -> Calibration:
    """calibration_for's value, built once per (family, catalogue, chip, applied set): a Calibration is
    immutable, so every caller shares one (and caches keyed on it hit)."""
    params = dict(_resolved(fam, root, chip))
    if active is not None:
        for name, val in active.values.items():
            old = params[name]  # names were checked against the family file when the set was loaded
            params[name] = dataclasses.replace(old, value=val, raw=_as_written(val, old.kind), status="calibrated",
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
    """Values (SI) that replace family-file parameters while applied(), with their provenance."""

    family: str  # neuron | nvidia
    values: Mapping[str, float]
    origin: str  # the file it came from (or what made it)
    reason: str
    source: str = ""
    file: CalibratedSetFile | None = None

    def key(self) -> tuple:
        return (self.family, self.origin, tuple(sorted(self.values.items())))


_ACTIVE: dict[str, CalibratedSet] = {}


def _as_written(value: float, kind: str) -> str:
    """A value as a calibration file writes it: '2.4 us' for dimensional kinds, '0.82' for ratios and counts."""
    if kind in ("ratio", "count", "flag") or not units.KINDS.get(kind) or not units.KINDS[kind].dimensionality:
        return f"{value:.6g}"
    return units.format_quantity(value, kind, 6)


def file_value(value: float, kind: str) -> str | float:
    """The TOML value for a fitted number: a string with units, or a plain float for ratios and counts."""
    text = _as_written(value, kind)
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


@contextlib.contextmanager
def applied(*sets: CalibratedSet | Path | str) -> Iterator[list[CalibratedSet]]:
    """Activate calibrated sets (objects or file paths) for every calibration_for() inside the block.

    At most one set per family; an inner block replaces an outer block's set of the same family."""
    global _ACTIVE
    loaded = [s if isinstance(s, CalibratedSet) else load_calibrated_set(s) for s in sets]
    fams = [s.family for s in loaded]
    dup = sorted({f for f in fams if fams.count(f) > 1})
    if dup:
        raise CatalogError(f"two calibrated sets for family {dup[0]!r}: "
                           + ", ".join(s.origin for s in loaded if s.family == dup[0]))
    for s in loaded:
        if s.family not in FIT_FAMILIES:
            raise CatalogError(f"{s.origin}: calibrated set for unknown family {s.family!r} "
                               f"(known: {', '.join(FIT_FAMILIES)})")
    saved = _ACTIVE
    _ACTIVE = {**saved, **{s.family: s for s in loaded}}
    try:
        yield loaded
    finally:
        _ACTIVE = saved


def active() -> Mapping[str, CalibratedSet]:
    """The calibrated sets in force now, by family (empty unless inside applied())."""
    return MappingProxyType(dict(_ACTIVE))


def active_key() -> tuple:
    """Hashable token of the active calibrated sets (for cache keys of results that depend on them)."""
    return tuple(_ACTIVE[f].key() for f in sorted(_ACTIVE))
