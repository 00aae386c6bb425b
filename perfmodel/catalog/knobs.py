"""What-if values and spec knobs: reading an override's value (scale or set), and the chip,
node and link-tier values of a System a what-if can turn (SPEC_KNOBS).

    hbm_bandwidth=+50%        scale by 1.5          tensor_rate=x2     scale by 2
    hbm_bandwidth=6 TB/s      set (units as in spec files)

A changed spec value is recorded in the System copy's provenance with status "assumed" and
the value it replaced. whatif.py puts spec, calibration and workload overrides together.
Does not: evaluate anything, or read files.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

from perfmodel.catalog.files import did_you_mean
from perfmodel.core import limits, units
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import ElementEngine, Scope, System
from perfmodel.core.provenance import Status


class WhatIfError(ValueError):
    """An override that names nothing known or whose value cannot be read."""


# ---------------------------------------------------------------- values: scale or set


@dataclass(frozen=True)
class Change:
    """`op` is "scale" (value is the factor) or "set" (value is the text to parse)."""

    op: str
    factor: float = 1.0
    text: str = ""


# A scale is a plain decimal number (no arithmetic, no inf / nan), the same grammar as a quantity's number.
_SCALE = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?")
MAX_FACTOR = 1e6  # a what-if scales a value by at most a million either way; more is a typo, not a what-if


def parse_change(text: str, name: str = "") -> Change:
    """'x1.5' / '*1.5' / '+50%' / '-20%' scale; anything else sets (parsed later by kind). Errors start
    with `name` (the what-if's knob) when given."""
    s = str(text).strip()
    who = f"{name}: " if name else ""
    if not s:
        raise WhatIfError(f"{who}empty what-if value")
    if s[0] in "x*×":
        number, sign = s[1:].strip(), ""
    elif s.endswith("%") and s[0] in "+-":
        number, sign = s[1:-1].strip(), s[0]
    else:
        return Change("set", text=s)
    if not _SCALE.fullmatch(number):
        raise WhatIfError(f"{who}cannot read the scale {s!r}: write x1.5, *1.5, +50% or -20%")
    factor = float(number) if not sign else 1.0 + float(sign + number) / 100.0
    if not 1 / MAX_FACTOR <= factor <= MAX_FACTOR:
        raise WhatIfError(f"{who}scale {s!r} must leave a positive value within a factor of {MAX_FACTOR:g} of "
                          f"the current one (factor {factor:g})")
    return Change("scale", factor=factor)


def _set_value(change: Change, kind: str, name: str) -> float:
    try:
        value = units.parse(change.text if kind not in ("count", "ratio") else number_or_text(change.text), kind)
    except units.UnitError as exc:
        raise WhatIfError(f"{name}: {exc} (or scale it: x1.5, +50%)") from None
    if not value > 0:
        raise WhatIfError(f"{name}: must be positive, got {change.text!r}")
    return value


def _checked(new: float, kind: str, name: str, text: str) -> float:
    """A spec value after a what-if meets the spec files' rules: positive, finite, below MAX_QUANTITY_SI."""
    if not (math.isfinite(new) and 0 < new <= limits.MAX_QUANTITY_SI):
        raise WhatIfError(f"{name}: {text!r} gives {units.format_quantity(new, kind)}, outside the allowed range "
                          f"(0, {units.format_quantity(limits.MAX_QUANTITY_SI, kind)}]")
    return new


def number_or_text(s: str):
    """A plain decimal number as a float ('0.8'), anything else as the text (parsed by units later)."""
    return float(s) if _NUMBER.fullmatch(s.strip()) else s


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?")


def _apply(old: float, change: Change, kind: str, name: str) -> float:
    return old * change.factor if change.op == "scale" else _set_value(change, kind, name)


# ---------------------------------------------------------------- spec knobs


def _scale_map(m: Mapping, factor: float, keys=None) -> Mapping:
    return MappingProxyType({k: (v * factor if keys is None or k in keys else v) for k, v in m.items()})


def _engine(e: ElementEngine | None, factor: float, exp_only: bool = False) -> ElementEngine | None:
    if e is None:
        return None
    if exp_only:
        return dataclasses.replace(e, exp_elems_per_s=e.exp_elems_per_s * factor)
    rates = {f.name: getattr(e, f.name) * factor for f in dataclasses.fields(e)
             if f.name.endswith("_per_s") and getattr(e, f.name)}  # every rate of the engine
    return dataclasses.replace(e, **rates)


def _tensor(system: System, factor: float, dtypes=None) -> System:
    c = system.chip
    t = dataclasses.replace(c.tensor, flop_per_s=_scale_map(c.tensor.flop_per_s, factor, dtypes))
    return dataclasses.replace(system, chip=dataclasses.replace(
        c, tensor=t, peak_flop_per_s=_scale_map(c.peak_flop_per_s, factor, dtypes),
        peak_sparse_flop_per_s=_scale_map(c.peak_sparse_flop_per_s, factor, dtypes)))


def _tiers(system: System, factor: float, scopes: tuple[Scope, ...]) -> System:
    tiers = tuple(dataclasses.replace(t, bandwidth_bytes_per_s=t.bandwidth_bytes_per_s * factor)
                  if t.scope in scopes else t for t in system.tiers)
    chip = system.chip
    if Scope.NODE in scopes and chip.link_bandwidth_bytes_per_s:
        chip = dataclasses.replace(chip, link_bandwidth_bytes_per_s=chip.link_bandwidth_bytes_per_s * factor)
    node = system.node
    if Scope.SCALEOUT in scopes and node.efa_bandwidth_bytes_per_s:
        node = dataclasses.replace(node, efa_bandwidth_bytes_per_s=node.efa_bandwidth_bytes_per_s * factor)
    return dataclasses.replace(system, tiers=tiers, chip=chip, node=node)


def _tier_bw(system: System, scopes: tuple[Scope, ...]) -> float | None:
    bws = [t.bandwidth_bytes_per_s for t in system.tiers if t.scope in scopes]
    return max(bws) if bws else None


def _tier_paths(system: System, scopes: tuple[Scope, ...]) -> tuple[str, ...]:
    out = tuple(f"tiers.{t.name}.bandwidth" for t in system.tiers if t.scope in scopes)
    if Scope.NODE in scopes:
        out += ("chip.interconnect.bandwidth",)
    if Scope.SCALEOUT in scopes:
        out += ("node.efa_bandwidth",)
    return out


def _chip_field(attr: str) -> tuple[Callable, Callable]:
    def get(s: System):
        return getattr(s.chip, attr)

    def scale(s: System, f: float) -> System:
        return s.replace_chip(**{attr: getattr(s.chip, attr) * f})

    return get, scale


def _node_field(attr: str) -> tuple[Callable, Callable]:
    def get(s: System):
        return getattr(s.node, attr)

    def scale(s: System, f: float) -> System:
        return dataclasses.replace(s, node=dataclasses.replace(s.node, **{attr: getattr(s.node, attr) * f}))

    return get, scale


@dataclass(frozen=True)
class SpecKnob:
    """A spec value a what-if may scale or set. `get` returns the SI value (None: not
    published for this system); `scale` returns a System copy with the value times f;
    `paths` are the provenance prefixes the knob changes (a tuple, or a function of the
    System for link tiers), for the provenance sheet."""

    name: str
    description: str
    kind: str
    get: Callable[[System], float | None]
    scale: Callable[[System, float], System]
    paths: tuple[str, ...] | Callable[[System], tuple[str, ...]]

    def paths_for(self, system: System) -> tuple[str, ...]:
        return self.paths(system) if callable(self.paths) else self.paths


def _knobs() -> dict[str, SpecKnob]:
    k: list[SpecKnob] = []
    g, s = _chip_field("hbm_bandwidth_bytes_per_s")
    k.append(SpecKnob("hbm_bandwidth", "HBM bandwidth per chip", "bandwidth", g, s, ("chip.memory.hbm_bandwidth",)))
    g, s = _chip_field("hbm_capacity_bytes")
    k.append(SpecKnob("hbm_capacity", "HBM capacity per chip", "capacity", g, s, ("chip.memory.hbm_capacity",)))
    k.append(SpecKnob("tensor_rate", "tensor-engine rate and peak, every data type (get/set: BF16)", "flop_rate",
                      lambda s: s.chip.tensor.flop_per_s.get(DType.BF16), lambda s, f: _tensor(s, f),
                      ("chip.peak.", "chip.peak_sparse.", "chip.tensor_engine.rate.")))
    for d in DType:
        k.append(SpecKnob(f"tensor_rate.{d.value}", f"tensor-engine rate and peak for {d.value} only", "flop_rate",
                          (lambda dd: lambda s: s.chip.tensor.flop_per_s.get(dd))(d),
                          (lambda dd: lambda s, f: _tensor(s, f, {dd}))(d),
                          (f"chip.peak.{d.value}", f"chip.peak_sparse.{d.value}", f"chip.tensor_engine.rate.{d.value}")))
    for eng in ("vector", "scalar", "gpsimd"):
        k.append(SpecKnob(
            f"{eng}_rate", f"{eng} engine element rate (elements/s), exp included", "count",
            (lambda e: lambda s: getattr(s.chip, e).elems_per_s if getattr(s.chip, e) else None)(eng),
            (lambda e: lambda s, f: s.replace_chip(**{e: _engine(getattr(s.chip, e), f)}))(eng),
            (f"chip.{eng}_engine.",)))
    k.append(SpecKnob("exp_rate", "exponential (softmax) rate of the vector and scalar engines", "count",
                      lambda s: max(s.chip.vector.exp_elems_per_s, s.chip.scalar.exp_elems_per_s),
                      lambda s, f: s.replace_chip(vector=_engine(s.chip.vector, f, True),
                                                  scalar=_engine(s.chip.scalar, f, True)),
                      ("chip.vector_engine.exp_elements_per_cycle", "chip.scalar_engine.exp_elements_per_cycle")))
    g, s = _chip_field("sram_bytes")
    k.append(SpecKnob("sram", "on-chip SRAM per chip", "capacity", g, s, ("chip.memory.sram",)))
    for name, scopes, desc in (("link_bandwidth", (Scope.NODE, Scope.SCALEUP), "scale-up link bandwidth per chip "
                                "(every node and scale-up tier)"),
                               ("node_link_bandwidth", (Scope.NODE,), "link bandwidth per chip inside a node"),
                               ("scaleup_link_bandwidth", (Scope.SCALEUP,), "link bandwidth per chip between nodes "
                                "of the scale-up domain"),
                               ("scaleout_bandwidth", (Scope.SCALEOUT,), "scale-out (EFA) bandwidth")):
        k.append(SpecKnob(name, desc + "; set: the fastest such tier, the others keep their ratio", "bandwidth",
                          (lambda sc: lambda s: _tier_bw(s, sc))(scopes),
                          (lambda sc: lambda s, f: _tiers(s, f, sc))(scopes), (lambda sc: lambda s: _tier_paths(s, sc))(scopes)))
    g, s = _chip_field("tdp_w")
    k.append(SpecKnob("tdp", "chip power (TDP)", "power", g, s, ("chip.power.tdp",)))
    g, s = _node_field("power_w")
    k.append(SpecKnob("node_power", "node (instance) power", "power", g, s, ("node.power",)))
    g, s = _node_field("price_usd_per_hour")
    k.append(SpecKnob("price", "on-demand price per node (instance)", "price_rate", g, s, ("node.price",)))
    return {x.name: x for x in k}


SPEC_KNOBS: dict[str, SpecKnob] = _knobs()


def knobs_frame(system: System | None = None):
    """Table of spec knobs: name, description, kind, unit (and the system's current value)."""
    import pandas as pd

    rows = []
    for kb in SPEC_KNOBS.values():
        row = {"name": kb.name, "description": kb.description, "kind": kb.kind,
               "unit": units.KINDS[kb.kind].internal_unit}
        if system is not None:
            v = kb.get(system)
            row["value_si"] = float(v) if v else float("nan")
            row["description"] += _peak_note(system, kb.name)
        rows.append(row)
    return pd.DataFrame(rows)


def _peak_note(system: System, name: str) -> str:
    """Where the tensor engine's rate (what the model prices work at) differs from the chip's published peak
    (what MFU divides by, and what summaries quote), both: Trainium2's 8 cores x 79 = 632 TFLOP/s BF16 against
    the 667 AWS publishes."""
    if not name.startswith("tensor_rate"):
        return ""
    d = DType.parse(name.split(".", 1)[1]) if "." in name else DType.BF16
    rate, peak = system.chip.tensor.flop_per_s.get(d), system.chip.peak_flop_per_s.get(d)
    if not rate or not peak or abs(peak / rate - 1) < 1e-3:
        return ""
    return (f"; {d.value}: the engine rate the model prices at, {units.format_quantity(rate, 'flop_rate')}; the "
            f"published peak (MFU's denominator) is {units.format_quantity(peak, 'flop_rate')}")


def spec_value(system: System, name: str) -> float | None:
    return _knob(name).get(system)


def _knob(name: str) -> SpecKnob:
    try:
        return SPEC_KNOBS[name]
    except KeyError:
        raise WhatIfError(f"unknown spec value {name!r}{did_you_mean(name, SPEC_KNOBS)} (known: "
                          f"{', '.join(n for n in SPEC_KNOBS if '.' not in n)}, tensor_rate.<dtype>)") from None


def _mark(system: System, kb: SpecKnob, text: str, factor: float) -> System:
    prov = dict(system.provenance)
    prefixes = kb.paths_for(system)
    for path, v in system.provenance.items():
        if any(path.startswith(p) for p in prefixes):
            prov[path] = dataclasses.replace(
                v, raw=f"{v.raw} -> what-if {kb.name}={text}", si=v.si * factor, status=Status.ASSUMED,
                note=f"what-if override {kb.name}={text} (was {v.raw}, {v.status.value})")
    return dataclasses.replace(system, provenance=MappingProxyType(prov))


def apply_spec(system: System, overrides: Iterable[tuple[str, str]]) -> System:
    """System copy with each (knob, value text) applied in order."""
    for name, text in overrides:
        kb = _knob(name)
        old = kb.get(system)
        if not old:
            raise WhatIfError(f"{system.name} has no {kb.description} to change ({name})")
        new = _checked(_apply(old, parse_change(text, name), kb.kind, name), kb.kind, name, text)
        system = _mark(kb.scale(system, new / old), kb, text, new / old)
    return system
