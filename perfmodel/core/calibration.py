"""The calibration record: the resolved modelling assumptions for one chip, each with its provenance.

A Calibration maps a parameter's name to a Param (SI float value, the value as written, kind, status, reason,
source, origin and the range the evidence leaves open). It is built at the edge (catalog/calibration.py reads the
family file, the chip's overrides and any calibrated set the user named) and travels with the System it belongs to
(System.calibration), so a computation reads its assumptions from its arguments:

    cal = cal or of(system)

Users override values with `Calibration.with_overrides` (strings with units; each held to its parameter's allowed
range, param_ranges.py).

Does not: read files (catalog/calibration.py) or fit anything (validation/calibrate.py).
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Mapping

from perfmodel.core import param_ranges, units
from perfmodel.core.errors import CatalogError, did_you_mean


def read_only(mapping: Mapping) -> MappingProxyType:
    """A read-only view of a copy of `mapping` (what records hold their tables in)."""
    return MappingProxyType(dict(mapping))


# A record's read-only tables pickle as a copy wrapped again on load: a sweep ships the resolved Systems (their
# calibration, provenance) to Dask worker processes instead of each worker resolving names again.
copyreg.pickle(MappingProxyType, lambda m: (read_only, (dict(m),)))


# 'calibrated': fitted to measurements by `perfmodel calibrate` (only from a calibrated-set file, never
# written in a family file; see catalog/replacements.py).
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
        return "" if self.low is None else f"{as_written(self.low, self.kind)} - {as_written(self.high, self.kind)}"


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


def as_written(value: float, kind: str) -> str:
    """A value as a calibration file writes it: '2.4 us' for dimensional kinds, '0.82' for ratios and counts."""
    if kind in ("ratio", "count", "flag") or not units.KINDS.get(kind) or not units.KINDS[kind].dimensionality:
        return f"{value:.6g}"
    return units.format_quantity(value, kind, 6)



def of(system) -> Calibration:
    """The calibration a System carries (resolved when it was loaded at the edge); ValueError (one line) for a
    system built without one."""
    if system.calibration is None:
        raise ValueError(f"system {system.name!r} carries no calibration: load it with catalog.load_system (which "
                         "resolves its family file and any calibrated set) or pass cal=")
    return system.calibration
