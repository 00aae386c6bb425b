"""Power model: chip watts from engine activity, node and fabric overhead, PUE, tokens per MW.

    chip power     P_chip = P_idle + (P_tdp - P_idle) a,   P_idle = f_idle P_tdp            [W]
    activity       a = sum_e w_e a_e / sum_e w_e,  a_e = busy time of engine group e / wall
                   time in [0, 1]; groups: tensor, memory (HBM/DMA), vector (mean of vector,
                   scalar, GpSimd), comm (links, collective engines)
    IT power       P_IT = n_active P_chip + n_idle P_idle + nodes P_node + chips P_switch     [W]
    facility       P_fac = PUE x P_IT                                                        [W]
    tokens per MW  = output tokens/s / (P_fac / 1e6)                          [tokens/s per MW]

Two power bases, the same sum of the same components for every system (`components`), chosen by the
calibration switch `power_basis_all_in` (CLI --power-basis modelled|all-in; shown as `power_basis` in
every output that uses power):
    modelled   the chip draws P_chip above (engine activity of the configuration)
    all-in     provisioned: every chip at its TDP (a = 1), the InferenceX kind of figure (all-in kW per
               accelerator = (TDP + node share + switch share) x PUE, whatever the load)

P_tdp comes from the chip spec sheet (`power.tdp`); f_idle, w_e, P_switch and PUE are calibration
parameters (hardware_specs/calibration/<family>.toml; every one overridable); P_node is built up from the
node's host facts (vCPUs, host memory, scale-out Gbps) with the same constants for every vendor
(`_node_overhead`); a published system power is shown beside it as a check (`components`).

Trainium power is barely published (hardware_facts.md section 8): AWS gives no watt figure for
any Trainium chip. Every result here carries `caveat(system)`, and `tdp_cases` gives the range
the estimates allow: the lowest and highest of the recorded values and, for an estimate, of nominal x
(1 -/+ `tdp_estimate_band`) (Trainium3: 690 W derived from AWS's efficiency statement, itself +-20% with
the Trainium2 estimate it scales, up to the 1,000 W remark: 552-1000 W; Trainium2 ~500 W: 400-600 W).

Does not: compute performance (steady_state.py) or money (cost.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System

CASES = ("low", "nominal", "high")
BASES = ("modelled", "all-in")
WEIGHT_GROUPS = ("tensor", "memory", "vector", "comm")
W_PER_MW = units.MW


@dataclass(frozen=True)
class TdpCase:
    watts: float
    status: str  # published | derived | estimated | projected | assumed | override
    note: str


def tdp_cases(system: System, cal: Calibration | None = None) -> dict[str, TdpCase]:
    """Chip TDP at the low / nominal / high end of what the sources allow (W)."""
    cal = cal or calibration_of(system)
    chip = system.chip
    sv = system.provenance.get("chip.power.tdp")
    if chip.tdp_w is None or sv is None:
        assumed = cal.get("assumed_tdp", 0.0)
        if assumed <= 0:
            raise ValueError(f"{system.name}: no TDP for {chip.display_name} in its spec sheet and no assumed_tdp "
                             "calibration value; set one (Python: cal.with_overrides({'assumed_tdp': '450 W'}); "
                             "CLI: --set assumed_tdp='450 W' or --tdp 450)")
        band = cal["tdp_estimate_band"]
        note = f"assumed {assumed:.0f} W (calibration assumed_tdp; no published figure)"
        return {"low": TdpCase(assumed * (1 - band), "assumed", note), "nominal": TdpCase(assumed, "assumed", note),
                "high": TdpCase(assumed * (1 + band), "assumed", note)}
    status = sv.status.value
    nominal = TdpCase(chip.tdp_w, status, f"{sv.raw} ({status}, {sv.source})")
    if sv.alternatives:
        vals = [(chip.tdp_w, f"{sv.raw} ({status}, {sv.source})")] + [
            (a.si, f"{a.raw} (alternative '{a.label or a.source}', {a.source})") for a in sv.alternatives]
        if sv.status.is_uncertain:  # an estimate is itself uncertain by the band, beside the recorded alternatives
            band = cal["tdp_estimate_band"]
            vals += [(chip.tdp_w * (1 - band), f"{sv.raw} - {band:.0%} (estimate band)"),
                     (chip.tdp_w * (1 + band), f"{sv.raw} + {band:.0%} (estimate band)")]
        lo, hi = min(vals), max(vals)
        return {"low": TdpCase(lo[0], status, lo[1]), "nominal": nominal, "high": TdpCase(hi[0], status, hi[1])}
    if sv.status.is_uncertain:
        band = cal["tdp_estimate_band"]
        return {"low": TdpCase(chip.tdp_w * (1 - band), status, f"{sv.raw} - {band:.0%} (estimate band)"),
                "nominal": nominal,
                "high": TdpCase(chip.tdp_w * (1 + band), status, f"{sv.raw} + {band:.0%} (estimate band)")}
    return {c: nominal for c in CASES}


BUILD_UP = ("host_power_per_vcpu", "host_memory_power_per_gib", "network_power_per_gbps", "node_other_power",
            "cooling_conversion_frac")


def _node_overhead(system: System, cal: Calibration, tdp_w: float) -> tuple[float, str]:
    """Non-accelerator power per node (W), built up the same way for every vendor, and how:

        P_host = vCPUs x c_cpu + host GiB x c_mem + scale-out Gbps x c_net + P_other
        P_node = P_host (1 + f) + f x chips x (TDP + P_switch)        f = cooling_conversion_frac

    (fans and power conversion scale with the node's provisioned IT power). A published node or rack power is a
    check on the sum (components()), not its source: GPUs and Trainium get the same kind of number."""
    n = system.node
    missing = [f for f, v in (("node.vcpus", n.vcpus), ("node.host_memory", n.host_memory_bytes)) if v is None]
    if missing:
        raise ValueError(f"{system.name}: {', '.join(missing)} not in its spec sheet; the power build-up needs the "
                         "host's vCPUs and memory (state them, status estimated if they are)")
    gbps = (n.efa_bandwidth_bytes_per_s or 0.0) * 8 / units.GB  # bytes/s -> Gbit/s
    host = (n.vcpus * cal["host_power_per_vcpu"] + n.host_memory_bytes / units.GiB * cal["host_memory_power_per_gib"]
            + gbps * cal["network_power_per_gbps"] + cal["node_other_power"])
    f = cal["cooling_conversion_frac"]
    w = host * (1 + f) + f * n.chips * (tdp_w + cal["scaleup_switch_power_per_chip"])
    net = f"{gbps:g} Gbps scale-out" if gbps else "no scale-out network recorded (0 W)"
    basis = (f"build-up: {n.vcpus} vCPU, {n.host_memory_bytes / units.GiB:g} GiB host memory, {net}, other; "
             f"x (1 + {f:g}) and {f:g} x chips' TDP for fans and conversion")
    return w, basis


def published_node_power_w(system: System) -> float:
    """The node's share of a published (or estimated) maximum system power [W]; NaN when none is recorded."""
    if system.node.power_w:
        return float(system.node.power_w)
    if system.scaleup_power_w:
        return float(system.scaleup_power_w) / system.scaleup_nodes
    return float("nan")


@dataclass(frozen=True)
class PowerModel:
    """Resolved power parameters of one system for one case (all W unless named)."""

    system: str
    case: str
    tdp_w: float
    tdp_status: str
    tdp_note: str
    idle_frac: float
    weights: Mapping[str, float]
    node_overhead_w: float
    node_overhead_basis: str
    switch_w_per_chip: float
    pue: float
    notes: tuple[str, ...] = field(default_factory=tuple)
    basis: str = "modelled"  # BASES: the chip's draw from its activity, or provisioned at its TDP

    @property
    def idle_w(self) -> float:
        return self.idle_frac * self.tdp_w

    def activity(self, act: Mapping[str, np.ndarray]) -> np.ndarray:
        """Weighted activity a in [0, 1] from engine busy fractions (keys as serving.ACTIVITY_ENGINES)."""
        vec = np.mean([np.asarray(act.get(e, 0.0), dtype=float) for e in ("vector", "scalar", "gpsimd")], axis=0)
        groups = {"tensor": act["tensor"], "memory": act["memory"], "vector": vec, "comm": act.get("comm", 0.0)}
        total = sum(self.weights.values())
        a = sum(self.weights[g] * np.clip(np.asarray(groups[g], dtype=float), 0, 1) for g in WEIGHT_GROUPS) / total
        return np.asarray(a, dtype=float)

    def chip_w(self, act: Mapping[str, np.ndarray]) -> np.ndarray:
        """P_chip = P_idle + (P_tdp - P_idle) a   [W]; all-in basis: a = 1 (provisioned at TDP)."""
        a = self.activity(act)
        return self.idle_w + (self.tdp_w - self.idle_w) * (np.ones_like(a) if self.basis == "all-in" else a)

    def it_w(self, chip_w, active_chips, total_chips, nodes) -> np.ndarray:
        """P_IT of a deployment: active chips at chip_w, the rest idle (all-in basis: provisioned at TDP as
        well), node and fabric overhead [W]."""
        active = np.asarray(active_chips, dtype=float)
        total = np.asarray(total_chips, dtype=float)
        if np.any(active > total + 1e-9):
            raise ValueError("power: more active chips than chips in the deployment")
        spare_w = self.tdp_w if self.basis == "all-in" else self.idle_w
        return (active * chip_w + (total - active) * spare_w + np.asarray(nodes, dtype=float)
                * self.node_overhead_w + total * self.switch_w_per_chip)

    def facility_w(self, it_w) -> np.ndarray:
        return self.pue * np.asarray(it_w, dtype=float)


def power_model(system: System, cal: Calibration | None = None, case: str = "nominal",
                tdp_w: float | None = None) -> PowerModel:
    """Power parameters for `system` at the low / nominal / high TDP case (tdp_w overrides)."""
    if case not in CASES:
        raise ValueError(f"power case {case!r}: choose one of {', '.join(CASES)}")
    cal = cal or calibration_of(system)
    if tdp_w is not None:
        if not tdp_w > 0:
            raise ValueError(f"power: TDP override must be > 0 W, got {tdp_w!r}")
        tc = TdpCase(float(tdp_w), "override", f"{tdp_w:.0f} W (user override)")
    else:
        tc = tdp_cases(system, cal)[case]
    weights = {g: cal[f"power_weight_{g}"] for g in WEIGHT_GROUPS}
    if sum(weights.values()) <= 0:
        raise ValueError("power: the power_weight_* calibration values sum to zero")
    node_w, basis = _node_overhead(system, cal, tc.watts)
    return PowerModel(system=system.name, case=case, tdp_w=tc.watts, tdp_status=tc.status, tdp_note=tc.note,
                      idle_frac=cal["power_idle_frac"], weights=MappingProxyType(weights), node_overhead_w=node_w,
                      node_overhead_basis=basis, switch_w_per_chip=cal["scaleup_switch_power_per_chip"],
                      pue=cal["pue"], notes=(caveat(system, cal),), basis=basis_of(cal))


def basis_of(cal: Calibration) -> str:
    """The power basis the calibration selects (power_basis_all_in: 0 modelled, 1 all-in)."""
    return BASES[int(cal["power_basis_all_in"])]


def all_in_w_per_chip(system: System, cal: Calibration | None = None, case: str = "nominal") -> float:
    """Provisioned (all-in) power per accelerator at the facility meter [W]:
    PUE x (TDP + node share + scale-up switch share), the quantity InferenceX calls all-in kW per GPU."""
    pm = power_model(system, cal, case)
    return pm.pue * (pm.tdp_w + pm.node_overhead_w / system.node.chips + pm.switch_w_per_chip)


def components(system: System, cal: Calibration | None = None, case: str = "nominal") -> pd.DataFrame:
    """The power sum of one system, per chip, component by component, each with the status and source of its
    value (the same components for every vendor): chip, node share (host CPUs, memory, NICs, fans, conversion
    loss), scale-up switch share, and the facility factor PUE."""
    cal = cal or calibration_of(system)
    pm = power_model(system, cal, case)
    node_status = "assumed"  # the build-up's constants are assumptions (BUILD_UP), the node facts are the sheet's
    per_node = system.node.chips
    chip_note = "TDP (provisioned)" if pm.basis == "all-in" else "idle + (TDP - idle) x activity; at most TDP"
    rows = [("chip", pm.tdp_w, "W per chip", pm.tdp_status, f"{pm.tdp_note}; {chip_note}"),
            ("node share", pm.node_overhead_w / per_node, "W per chip", node_status,
             f"{pm.node_overhead_basis}, over {per_node} chips"),
            ("scale-up switch share", pm.switch_w_per_chip, "W per chip",
             cal.params["scaleup_switch_power_per_chip"].status, cal.params["scaleup_switch_power_per_chip"].reason),
            ("facility (PUE)", pm.pue, "x IT power", cal.params["pue"].status, cal.params["pue"].reason)]
    published = published_node_power_w(system)
    it_node = per_node * (pm.tdp_w + pm.switch_w_per_chip) + pm.node_overhead_w
    return pd.DataFrame(rows, columns=["component", "value", "unit", "status", "source"]).assign(
        system=system.name, power_basis=pm.basis, node_it_at_tdp_w=it_node, published_node_power_w=published)


def caveat(system: System, cal: Calibration | None = None) -> str:
    """One line for every output that depends on power: how firm the chip's watts are, and the range."""
    try:
        cases = tdp_cases(system, cal)
    except ValueError as exc:
        return str(exc)
    nom = cases["nominal"]
    rng = f"{cases['low'].watts:.0f}-{cases['high'].watts:.0f} W"
    if nom.status == "published":
        return f"{system.chip.display_name} TDP {nom.watts:.0f} W is published; node/fabric overhead and PUE are " \
               "assumptions (calibration)"
    vendor = "AWS publishes no watt figure for any Trainium chip" if system.chip.family.is_neuron else \
        "no published figure"
    return (f"{system.chip.display_name} power is NOT published ({vendor}): TDP {nom.watts:.0f} W is "
            f"{nom.status} [{nom.note}]; results shown over {rng} ({cases['low'].note} .. {cases['high'].note})")


def add_power_columns(df: pd.DataFrame, system: System, cal: Calibration | None = None,
                      tdp_w: float | None = None) -> pd.DataFrame:
    """Add chip / scale-up IT / facility watts and tokens per MW (nominal, and at the low / high
    power case) to a serving frame (serving.serve output, one scale-up domain per row). A chip
    with no TDP and no assumed one gets NaN power columns and a power_caveat saying why."""
    cal = cal or calibration_of(system)
    act = {e: df[f"activity_{e}_frac"].to_numpy() for e in ("tensor", "vector", "scalar", "gpsimd", "memory", "comm")}
    out = df.copy()
    if tdp_w is None:
        try:
            tdp_cases(system, cal)
        except ValueError as exc:  # no TDP and no assumption: say so in every row instead of a number
            for col in ("chip_power_w", "scaleup_it_power_w", "scaleup_facility_power_w", "output_tokens_per_s_per_mw",
                        "output_tokens_per_s_per_mw_at_low_power", "output_tokens_per_s_per_mw_at_high_power",
                        "tdp_w"):
                out[col] = np.nan
            out["tdp_status"] = "none"
            out["power_caveat"] = f"NO POWER FIGURE: {exc}"
            return out
    for case in CASES:
        pm = power_model(system, cal, case, tdp_w)
        chip_w = pm.chip_w(act)
        it = pm.it_w(chip_w, df["chips_used_per_scaleup"].to_numpy(), system.scaleup_chips, system.scaleup_nodes)
        fac = pm.facility_w(it)
        tpm = df["output_tokens_per_s_per_scaleup"].to_numpy() / (fac / W_PER_MW)
        if case == "nominal":
            out["chip_power_w"] = chip_w
            out["scaleup_it_power_w"] = it
            out["scaleup_facility_power_w"] = fac
            out["output_tokens_per_s_per_mw"] = tpm
            out["tdp_w"] = pm.tdp_w
            out["tdp_status"] = pm.tdp_status
        else:  # low power case -> more tokens per MW
            out[f"output_tokens_per_s_per_mw_at_{case}_power"] = tpm
    out["power_caveat"] = caveat(system, cal) if tdp_w is None else f"TDP set by the user to {tdp_w:.0f} W"
    out["power_basis"] = basis_of(cal)
    return out
