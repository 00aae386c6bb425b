"""Sensitivity: elasticity of any result to each spec field and assumption, ranked.

    elasticity  e_p = d ln R / d ln p  ~  ln(R(p (1 + h)) / R(p (1 - h))) / ln((1 + h) / (1 - h))

(central finite difference in log space; exact for power laws, e.g. a purely HBM-bound step
time has e = -1 to HBM bandwidth). A result R is any function of the perturbed inputs,
`fn(inputs) -> float`, where `inputs` maps a key (e.g. "trn3") to a (System, Calibration) pair,
so one result may depend on several systems (a Trn3 / Trn2 ratio) and every parameter names
the system it belongs to.

Parameters (`parameters(key, system, cal)`):
    spec        hbm_bandwidth, hbm_capacity, tensor_rate (every data type's tensor and peak rate
                scaled together), element_rate (vector, scalar, GpSimd), link_bandwidth (every
                link tier), tdp (chip power)
    calibration every calibration parameter of kind ratio / time / power / price_rate with a
                value > 0 (tile sizes and pass counts are integers and are left out)

Evaluations are independent (2 per parameter); each may itself be a vectorised sweep.
Does not: pick what result to study (cli_serve and claims_serving do).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.core.calibration import Calibration
from perfmodel.core.hardware import ElementEngine, System

SPEC_PARAMS = ("hbm_bandwidth", "hbm_capacity", "tensor_rate", "element_rate", "link_bandwidth", "tdp")
# each spec parameter's quantity (core/units.KINDS; element_rate: elements per second, a kind of its own)
SPEC_UNITS = {"hbm_bandwidth": "bandwidth", "hbm_capacity": "capacity", "tensor_rate": "flop_rate",
              "element_rate": "elements_per_s", "link_bandwidth": "bandwidth", "tdp": "power"}
CAL_KINDS = ("ratio", "time", "power", "price_rate")
Inputs = Mapping[str, tuple[System, Calibration]]


@dataclass(frozen=True)
class Param:
    key: str  # which input (system) it belongs to; 'a+b' for an assumption shared by inputs a and b
    name: str  # spec name (SPEC_PARAMS) or calibration parameter name
    kind: str  # "spec" | "calibration"
    value: float  # current value (SI)
    status: str  # spec status or calibration status
    unit: str = ""  # the value's quantity (core/units.KINDS, or SPEC_UNITS')

    @property
    def label(self) -> str:
        return f"{self.key}: {self.name}"


def _spec_value(system: System, name: str) -> tuple[float, str]:
    c = system.chip
    prov = system.provenance

    def st(path: str) -> str:
        return prov[path].status.value if path in prov else "published"

    if name == "hbm_bandwidth":
        return c.hbm_bandwidth_bytes_per_s, st("chip.memory.hbm_bandwidth")
    if name == "hbm_capacity":
        return c.hbm_capacity_bytes, st("chip.memory.hbm_capacity")
    if name == "tensor_rate":
        return max(c.tensor.flop_per_s.values()), "published"
    if name == "element_rate":
        return c.vector.elems_per_s, "published"
    if name == "link_bandwidth":
        return (system.tiers[0].bandwidth_bytes_per_s if system.tiers else 0.0), "published"
    if name == "tdp":
        return (c.tdp_w or 0.0), st("chip.power.tdp")
    raise KeyError(f"unknown spec parameter {name!r} (known: {', '.join(SPEC_PARAMS)})")


def parameters(key: str, system: System, cal: Calibration, spec: bool = True, calibration: bool = True) -> list[Param]:
    """Every perturbable parameter of one input (module doc)."""
    out = []
    if spec:
        for n in SPEC_PARAMS:
            v, st = _spec_value(system, n)
            if v > 0:
                out.append(Param(key, n, "spec", v, st, SPEC_UNITS[n]))
    if calibration:
        for p in cal.params.values():
            if p.kind in CAL_KINDS and p.value > 0:
                out.append(Param(key, p.name, "calibration", p.value, p.status, p.kind))
    return out


def shared_parameters(inputs: Inputs) -> list[Param]:
    """Parameters of several inputs, with each calibration assumption that all inputs take from the
    same place (same value, same file, no chip override) merged into one parameter with key
    'a+b' (perturbed together: an assumption that is wrong is wrong for every chip that shares it).
    Spec fields stay per input."""
    per = {k: parameters(k, s, c) for k, (s, c) in inputs.items()}
    keys = list(inputs)
    out = [p for k in keys for p in per[k] if p.kind == "spec"]
    cal = {k: {p.name: p for p in per[k] if p.kind == "calibration"} for k in keys}
    origin = {k: inputs[k][1].params for k in keys}
    names = list(dict.fromkeys(n for k in keys for n in cal[k]))
    for n in names:
        have = [k for k in keys if n in cal[k]]
        same = len(have) == len(keys) and len({(origin[k][n].value, origin[k][n].origin) for k in keys}) == 1
        if same:
            p0 = cal[keys[0]][n]
            out.append(Param("+".join(keys), n, "calibration", p0.value, p0.status, p0.unit))
        else:
            out += [cal[k][n] for k in have]
    return out


def _scale_engine(e: ElementEngine | None, f: float) -> ElementEngine | None:
    if e is None:
        return None
    return dataclasses.replace(e, elems_per_s=e.elems_per_s * f, exp_elems_per_s=e.exp_elems_per_s * f)


def perturb_system(system: System, name: str, factor: float) -> System:
    """A copy of `system` with spec parameter `name` multiplied by `factor`."""
    c = system.chip
    if name == "hbm_bandwidth":
        return system.replace_chip(hbm_bandwidth_bytes_per_s=c.hbm_bandwidth_bytes_per_s * factor)
    if name == "hbm_capacity":
        return system.replace_chip(hbm_capacity_bytes=c.hbm_capacity_bytes * factor)
    if name == "tensor_rate":
        tensor = dataclasses.replace(c.tensor, flop_per_s=MappingProxyType(
            {d: v * factor for d, v in c.tensor.flop_per_s.items()}))
        return system.replace_chip(tensor=tensor, peak_flop_per_s=MappingProxyType(
            {d: v * factor for d, v in c.peak_flop_per_s.items()}))
    if name == "element_rate":
        return system.replace_chip(vector=_scale_engine(c.vector, factor), scalar=_scale_engine(c.scalar, factor),
                                   gpsimd=_scale_engine(c.gpsimd, factor))
    if name == "link_bandwidth":
        tiers = tuple(dataclasses.replace(t, bandwidth_bytes_per_s=t.bandwidth_bytes_per_s * factor)
                      for t in system.tiers)
        return dataclasses.replace(system, tiers=tiers)
    if name == "tdp":
        if not c.tdp_w:
            raise ValueError(f"{system.name}: no TDP to perturb")
        return system.replace_chip(tdp_w=c.tdp_w * factor)
    raise KeyError(f"unknown spec parameter {name!r} (known: {', '.join(SPEC_PARAMS)})")


def perturb(inputs: Inputs, p: Param, factor: float) -> dict[str, tuple[System, Calibration]]:
    """Inputs with parameter p scaled by `factor` (others unchanged); a key 'a+b' perturbs both."""
    out = dict(inputs)
    for key in p.key.split("+"):
        system, cal = inputs[key]
        if p.kind == "spec":
            out[key] = (perturb_system(system, p.name, factor), cal)
        else:
            out[key] = (system, cal.with_overrides({p.name: si_string(cal[p.name] * factor,
                                                                       cal.params[p.name].kind)}))
    return out


def si_string(value: float, kind: str) -> float | str:
    """A calibration override value: a bare float for dimensionless kinds, else '<value> <SI unit>'."""
    unit = units.KINDS[kind].internal_unit if kind in units.KINDS else ""
    return float(value) if not unit else f"{float(value)!r} {unit}"


def _stated_range(inputs: Inputs, p: Param) -> tuple[float, float] | None:
    """(low, high) SI the calibration file states for an assumption (the range the evidence leaves), or None."""
    if p.kind != "calibration":
        return None
    c = inputs[p.key.split("+")[0]][1].params[p.name]
    return None if c.low is None or not p.value else (c.low, c.high)


def elasticities(fn: Callable[[Inputs], float | Mapping[str, float]], inputs: Inputs,
                 params: list[Param] | None = None, rel_step: float = 0.05,
                 progress: Callable[[int, int], None] | None = None, ranges: bool = False) -> pd.DataFrame:
    """Elasticity of fn(inputs) to each parameter (module doc), ranked by |elasticity| (rank 1 first).

    ranges=True also evaluates each assumption at both ends of the range its calibration file states
    (result_at_range_low / _high: what the result spans over what the evidence leaves open; NaN where no
    range is stated), two more evaluations per such parameter.

    fn may return one float or a mapping of named results (one evaluation serves them all; the
    frame then has a `result_name` column and ranks within each result). Raises ValueError if a
    base result is not finite and > 0 (a log elasticity needs R > 0). A parameter whose perturbed
    result is not finite gets NaN and a note, never a silent 0.
    """
    if not 0 < rel_step < 0.5:
        raise ValueError(f"rel_step must be in (0, 0.5), got {rel_step}")
    if params is None:
        params = shared_parameters(inputs)

    def call(inp) -> dict[str, float]:
        r = fn(inp)
        return {k: float(v) for k, v in r.items()} if isinstance(r, Mapping) else {"result": float(r)}

    base = call(inputs)
    for k, v in base.items():
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"sensitivity: the base result {k!r} must be finite and > 0, got {v!r}")
    rows = []
    denom = np.log((1 + rel_step) / (1 - rel_step))
    for i, p in enumerate(params):
        lo, hi = call(perturb(inputs, p, 1 - rel_step)), call(perturb(inputs, p, 1 + rel_step))
        span = _stated_range(inputs, p) if ranges else None
        at = [call(perturb(inputs, p, end / p.value)) for end in span] if span else None
        for k in base:
            ok = all(np.isfinite(x) and x > 0 for x in (lo[k], hi[k]))
            row = {"result_name": k, "input": p.key, "parameter": p.name, "kind": p.kind, "status": p.status,
                   "value": p.value, "unit": p.unit, "result": base[k], "result_minus": lo[k],
                   "result_plus": hi[k],
                   "elasticity": np.log(hi[k] / lo[k]) / denom if ok else np.nan,
                   "note": "" if ok else "result not finite / positive under perturbation"}
            if ranges:
                row.update(range_low=span[0] if span else np.nan, range_high=span[1] if span else np.nan,
                           result_at_range_low=at[0][k] if at else np.nan,
                           result_at_range_high=at[1][k] if at else np.nan)
            rows.append(row)
        if progress:
            progress(i + 1, len(params))
    df = pd.DataFrame(rows)
    df["abs_elasticity"] = df["elasticity"].abs()
    df = df.sort_values(["result_name", "abs_elasticity"], ascending=[True, False], na_position="last",
                        kind="stable").reset_index(drop=True)
    df.insert(0, "rank", df.groupby("result_name").cumcount() + 1)
    df = df.drop(columns=["abs_elasticity"])
    return df.drop(columns=["result_name"]) if list(base) == ["result"] else df
