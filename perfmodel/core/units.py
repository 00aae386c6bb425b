"""Units: the one place that knows prefixes. Parses human quantity strings at the edge.

Quantities in spec and workload files are strings as the source prints them ("2.9 TB/s",
"820 GiB/s", "96 GiB", "800 Gbps", "190 TFLOPS", "1.5 us", "21.50 USD/h"). `parse` checks
the dimension against the kind a field expects and returns an SI float; everything past
the loaders computes on those floats. Decimal (GB = 1e9 B) and binary (GiB = 2**30 B)
prefixes are different units here, as they are in pint.

Internal units, by kind (the suffix every stored name carries):
    capacity -> bytes, bandwidth -> bytes_per_s, flop_rate -> flop_per_s,
    time -> s, frequency -> hz, power -> w, price_rate -> usd_per_hour,
    elements_per_cycle -> elems, count / ratio -> plain float.

Does not: know anything about hardware or models.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata, resources
from typing import TYPE_CHECKING

from perfmodel.core import cache_root, limits

if TYPE_CHECKING:  # pint is imported when a unit is met for the first time (_factor)
    import pint

# Named constants for the few conversions code needs outside parsing. Nothing else in the
# package may write 1e9, 2**30 or 3600 (tests/test_architecture.py enforces it).
BITS_PER_BYTE = 8.0
GB = 1e9
GiB = float(2**30)
TB = 1e12
MB = 1e6
MiB = float(2**20)
KiB = float(2**10)
TFLOPS = 1e12
PFLOPS = 1e15
US = 1e-6
MS = 1e-3
KW = 1e3
MW = 1e6
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
HOURS_PER_DAY = 24.0
HOURS_PER_MONTH = 730.0  # 8,760 h per year / 12, the convention of cloud price sheets
MILLION = 1e6
BILLION = 1e9
PETA = 1e15
TERA = 1e12  # a plain 10^12, no unit (display thresholds)


class UnitError(ValueError):
    """A quantity string that is malformed or has the wrong dimension for its field."""


@dataclass(frozen=True)
class Kind:
    """What a field measures: the pint dimensionality it must have and its internal unit."""

    name: str
    dimensionality: str
    internal_unit: str
    description: str


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("capacity", "[information]", "B", "a memory capacity such as '96 GiB'"),
        Kind("bandwidth", "[information]/[time]", "B/s", "a bandwidth such as '2.9 TB/s' or '800 Gbps'"),
        Kind("flop_rate", "[work]/[time]", "FLOP/s", "a compute rate such as '190 TFLOPS'"),
        Kind("time", "[time]", "s", "a time such as '1.5 us'"),
        Kind("frequency", "1/[time]", "Hz", "a clock frequency such as '2.4 GHz'"),
        Kind("power", "[power]", "W", "a power such as '500 W'"),
        Kind("price_rate", "[currency]/[time]", "USD/h", "a price per hour such as '21.50 USD/h'"),
        Kind("elements_per_cycle", "[elements]", "elem", "a per-cycle element count such as '128 elem/cycle'"),
        Kind("count", "", "", "a plain number such as '16'"),
        Kind("ratio", "", "", "a plain ratio such as '0.85' or '85 %'"),
    )
}


@lru_cache(maxsize=1)
def registry() -> "pint.UnitRegistry":
    """The perfmodel unit registry (cached; read-only after creation)."""
    import pint

    path = resources.files("perfmodel.core").joinpath("units_registry.txt")
    with resources.as_file(path) as p:
        return pint.UnitRegistry(str(p), autoconvert_offset_to_baseunit=False)


# A unit's factor to its kind's internal unit, once known, is kept on disk (cache_root/units.json, keyed by
# the registry file and pint's version): a later process converts '2.9 TB/s' as 2.9 x 1e12 without importing
# pint (0.4-0.6 s of every command). A value is always number x factor, on the first reading as on later
# ones (every quantity of the catalogue gives pint's own conversion bit for bit: tests/test_units.py).
_FACTORS: dict[str, float] | None = None


def _factor_version() -> str:
    text = resources.files("perfmodel.core").joinpath("units_registry.txt").read_bytes()
    return f"{hashlib.sha256(text).hexdigest()[:16]} pint {metadata.version('pint')}"


def _factors_path():
    where = cache_root.root()
    return None if where is None else where / "units.json"


def _known_factors() -> dict[str, float]:
    global _FACTORS
    if _FACTORS is None:
        _FACTORS, path = {}, _factors_path()
        try:
            ok = path is not None and path.is_file() and cache_root.trusted(path)  # factors set every quantity
            doc = json.loads(path.read_text()) if ok else {}
            if doc.get("version") == _factor_version():
                _FACTORS = {str(k): float(v) for k, v in doc["factors"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            _FACTORS = {}
    return _FACTORS


def _factor(unit: str, kind: str, k: "Kind", s: str) -> float:
    """The factor from `unit` to the internal unit of `kind` (module doc), checked by pint the first time."""
    key = f"{kind}|{k.internal_unit}|{k.dimensionality}|{unit}"  # a kind redefined misses
    known = _known_factors()
    if key in known:
        return known[key]
    ureg = registry()
    try:
        u = ureg.parse_units(unit.replace("·", "*"))
    except Exception as exc:  # pint raises several error types for unknown or malformed units
        raise UnitError(f"cannot read {s!r} as a quantity ({type(exc).__name__}: {exc})") from None
    if u.dimensionality != _dimensionality(kind):
        found = str(u.dimensionality) if str(u.dimensionality) != "dimensionless" else "a plain number"
        raise UnitError(f"expected {k.description}, got {s!r} whose dimension is {found}")
    q = ureg.Quantity(1.0, u)
    factor = float(q.to(k.internal_unit).magnitude) if k.internal_unit else float(q.to("count").magnitude)
    known[key] = factor
    path = _factors_path()
    if path is not None:
        cache_root.write_json(path, {"version": _factor_version(), "factors": known})
    return factor


@lru_cache(maxsize=None)
def _dimensionality(kind: str):
    ureg = registry()
    spec = KINDS[kind].dimensionality
    return ureg.Quantity(1).dimensionality if not spec else ureg.get_dimensionality(spec)


# A quantity string is a number and a unit, nothing else: the number is read by float() and the
# unit by pint's unit parser, which never evaluates numbers. pint's Quantity(text) would evaluate
# arithmetic ('10**10**8 GB/s' never returns), so it is never given user text.
MAX_TEXT = 100  # characters: the longest real spelling ('21.50 USD/h', '128 elem/cycle') is ~15
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?"  # 1e999 reads as inf: refused as not finite
_NAME = r"(?:[A-Za-zµμ_][A-Za-z0-9µμ_]*|%)"  # a unit name, prefix included ('GiB', 'TFLOPS', 'µs')
_FACTOR = rf"{_NAME}(?:(?:\^|\*\*)[+-]?\d)?"  # with a one-digit power at most ('s^2', 's**-1')
_UNIT = re.compile(rf"{_FACTOR}(?:[/*· ]{_FACTOR})*")
_QUANTITY = re.compile(rf"({_NUMBER})\s*(.*)", re.S)
_NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)\b", re.I)


def parse(text: str | int | float, kind: str) -> float:
    """Parse a quantity into the internal unit of `kind` and return a finite float.

    Text is a number and a unit ('2.9 TB/s', '800 Gbps', '1.5 us', '85 %'), read without
    arithmetic; numbers (int/float) are accepted only for dimensionless kinds (count, ratio).
    The SI value must be finite and at most limits.MAX_QUANTITY_SI in magnitude.
    Raises UnitError naming what was expected and what was found.
    """
    if kind not in KINDS:
        raise KeyError(f"unknown quantity kind {kind!r}")
    k = KINDS[kind]
    if isinstance(text, bool):
        raise UnitError(f"expected {k.description}, got a boolean")
    if isinstance(text, (int, float)):
        if k.dimensionality:
            raise UnitError(f"expected {k.description} with its unit, got the bare number {text!r}")
        try:
            value = float(text)
        except OverflowError:  # an int beyond a float's range
            raise UnitError(f"expected {k.description}, got a number too large to hold ({len(str(text))} digits)") \
                from None
    else:
        value = _parse_text(str(text).strip(), kind, k)
    if not math.isfinite(value):
        raise UnitError(f"value {text!r} is not finite")
    if abs(value) > limits.MAX_QUANTITY_SI:
        raise UnitError(f"value {text!r} is beyond any real quantity (more than {limits.MAX_QUANTITY_SI:g} "
                        f"{k.internal_unit or 'as a plain number'})")
    return value


def _parse_text(s: str, kind: str, k: Kind) -> float:
    if not s:
        raise UnitError(f"expected {k.description}, got an empty string")
    shown = s if len(s) <= MAX_TEXT else f"{s[:40]}... ({len(s)} characters)"
    if _NON_FINITE.match(s):
        raise UnitError(f"value {shown!r} is not finite")
    m = _QUANTITY.fullmatch(s) if len(s) <= MAX_TEXT else None
    unit = m and re.sub(r"\s*([/*·^])\s*", r"\1", re.sub(r"\s+", " ", m.group(2).strip()))
    if m is None or (unit and not _UNIT.fullmatch(unit)):
        want = f"a number and a unit such as {_example(k)}" if k.dimensionality else k.description
        raise UnitError(f"expected {want}, got {shown!r}")
    number = float(m.group(1))
    if not unit:
        if k.dimensionality:
            raise UnitError(f"expected {k.description} with its unit, got the bare number {s!r}")
        return number
    return number * _factor(unit, kind, k, s)  # inf for a large number times a large prefix: parse refuses it


def _example(k: Kind) -> str:
    """The example quoted in a kind's description ('2.9 TB/s')."""
    m = re.search(r"'([^']+)'", k.description)
    return f"'{m.group(1)}'" if m else "'2.9 TB/s'"


_DISPLAY: dict[str, tuple[tuple[float, str], ...]] = {
    "capacity": ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B")),
    "bandwidth": ((1e15, "PB/s"), (1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1, "B/s")),
    "flop_rate": ((1e18, "EFLOP/s"), (1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1, "FLOP/s")),
    "time": ((86400, "d"), (3600, "h"), (1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")),
    "frequency": ((1e9, "GHz"), (1e6, "MHz"), (1, "Hz")),
    "power": ((1e6, "MW"), (1e3, "kW"), (1, "W")),
    "price_rate": ((1, "USD/h"),),
    "elements_per_cycle": ((1, "elem/cycle"),),
}


def format_value(value: float, unit: str, missing: str = "") -> str:
    """A table cell in people's units: a quantity kind (KINDS) scaled by format_quantity, any other unit written
    after the number ('0.8 ratio', '3 tokens/s'); `missing` for NaN (a value that does not apply)."""
    if unit in KINDS or value != value:
        return format_quantity(value, unit, missing=missing)
    return f"{float(value):.4g} {unit.replace('_per_', '/')}".rstrip()


def format_quantity(value: float, kind: str, digits: int = 4, missing: str | None = None) -> str:
    """Human-readable string for an internal-unit float, e.g. 2.9e12 bandwidth -> '2.9 TB/s'; `missing` (when
    given) for NaN, a value that does not apply."""
    value = float(value)
    if missing is not None and value != value:
        return missing
    if kind not in _DISPLAY:
        return f"{value:.{digits}g}"
    if not math.isfinite(value):
        return str(value)
    scales = _DISPLAY[kind]
    mag = abs(value)
    for factor, unit in scales:
        if mag >= factor:
            return f"{value / factor:.{digits}g} {unit}"
    factor, unit = scales[-1]
    return f"{value / factor:.{digits}g} {unit}"
