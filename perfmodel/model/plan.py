"""Parallelism plan: divisibility and fit checks, and where each parallel group sits on the topology.

A plan is a `scenario.Parallelism` (tp, da, ep, cp, pp, dp, ZeRO stage, micro-batches,
pipeline schedule) on `nodes` instances. Groups are placed innermost first, as evaluate.py
prices them: a group of size g whose members are `stride` chips apart spans g x stride
consecutive chips:

    group  size  stride             collectives it carries
    tp     t     1                  all-reduce after attention and MLP (fwd + bwd); RS + AG with SP
    ep     e     1 (inside t x da)  all-to-all dispatch and combine (MoE)
    cp     c     t da               all-gather K,V (fwd, recompute) + reduce-scatter dK,dV (bwd)
    pp     2     t da c             send/recv of activations (fwd) and their gradients (bwd)
    dp     d     t da c p           gradient all-reduce (ZeRO 0), reduce-scatter + all-gather
                                    (ZeRO 1/2), + weight all-gathers per micro-batch (ZeRO 3)

`placement()` maps each group onto the tiers (members inside a node, across the scale-up
domain, across EFA) and says which collectives cross EFA; `check()` applies feasibility.py's
rules (heads, layers, experts, sequence, batch), the chip count and memory fit (memory.footprint).

Does not: price time (training/step.py, comm/collectives.py) or search for plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfmodel.comm import collectives as co
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import Scope, System
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import feasibility, memory

GROUP_ORDER = ("tp", "ep", "cp", "pp", "dp")
_COLLECTIVES = {
    "tp": "all-reduce (attention, MLP; fwd + bwd)",
    "ep": "all-to-all (MoE dispatch, combine)",
    "cp": "all-gather K,V + reduce-scatter dK,dV",
    "pp": "send/recv (activations, gradients)",
    "dp": {0: "all-reduce (gradients)", 1: "reduce-scatter (gradients) + all-gather (weights)",
           2: "reduce-scatter per micro-batch + all-gather (weights)",
           3: "all-gather (weights, fwd + bwd) + reduce-scatter (gradients) per micro-batch"},
}


def group_extents(p: Parallelism) -> dict[str, tuple[int, int]]:
    """(size, stride) of each group; pp is the pair of neighbouring stages (size 2)."""
    inner = p.tp * p.da
    return {"tp": (p.tp, 1), "ep": (p.ep, 1), "cp": (p.cp, inner),
            "pp": (2 if p.pp > 1 else 1, inner * p.cp), "dp": (p.dp, inner * p.cp * p.pp)}


def placement(system: System, p: Parallelism, cal: Calibration | None = None) -> pd.DataFrame:
    """One row per group: size, stride, members per tier, outermost tier, whether it crosses EFA."""
    cal = cal or calibration_of(system)
    dims = co.topology_dims(system, cal)
    rows = []
    for name in GROUP_ORDER:
        size, stride = group_extents(p)[name]
        gds = co.place_group(dims, size, stride)
        per = {s.value: 1.0 for s in Scope}
        for gd in gds:
            per[gd.dim.scope.value] *= float(np.ravel(gd.m)[0])
        span = "none"
        for s in (Scope.NODE, Scope.SCALEUP, Scope.SCALEOUT):
            if per[s.value] > 1:
                span = s.value
        colls = _COLLECTIVES[name]
        rows.append({"group": name, "size": size, "stride_chips": stride,
                     "members_in_node": per["node"], "members_across_scaleup": per["scaleup"],
                     "members_across_efa": per["scaleout"], "outermost_tier": span,
                     "crosses_efa": per["scaleout"] > 1,
                     "collectives": colls[p.zero] if isinstance(colls, dict) else colls})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class PlanCheck:
    """Result of `check`: errors make the plan unusable; warnings flag costly choices."""

    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    placement: pd.DataFrame
    footprint: memory.Footprint | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    fit_error: str = ""  # the error (also in `errors`) saying the plan does not fit memory

    @property
    def rule_errors(self) -> tuple[str, ...]:
        """The errors that make the plan impossible whatever the memory (divisibility, chip count)."""
        return tuple(e for e in self.errors if e != self.fit_error)

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_if_bad(self) -> None:
        if self.errors:
            raise ValueError("parallelism plan: " + "; ".join(self.errors))


def check(system: System, arch: ModelArch, scenario: Scenario, nodes: int | None = None,
          global_batch: int | None = None, cal: Calibration | None = None) -> PlanCheck:
    """Divisibility, chip count and memory fit of the scenario's plan on `nodes` instances."""
    cal = cal or calibration_of(system)
    p = scenario.parallel
    errors: list[str] = []
    warns: list[str] = []
    try:
        p.validate()
    except ValueError as exc:
        errors.append(str(exc))
    if not errors:  # the rules every evaluation carries (feasibility.py): heads, KV heads, layers, experts ...
        kn = bd.Knobs.of(scenario)
        valid, reasons = feasibility.check_rules(system, arch, kn, scenario.recompute)
        if not bool(np.ravel(valid)[0]):
            errors.extend(str(np.ravel(reasons)[0]).split("; "))
    kv = arch.num_key_value_heads
    if p.tp > kv and not p.tp % kv:
        warns.append(f"tp={p.tp} > {kv} KV heads: KV heads are replicated {p.tp // kv}x")
    if global_batch is not None and global_batch != scenario.batch * p.microbatches * p.dp:
        errors.append(f"global batch {global_batch} != micro-batch {scenario.batch} x {p.microbatches} "
                      f"micro-batches x dp {p.dp}")
    if p.pp > 1 and p.microbatches < p.pp:
        warns.append(f"{p.microbatches} micro-batches for {p.pp} stages: the pipeline bubble "
                     f"({p.pp - 1}/{p.microbatches}) exceeds one step of work")
    if p.zero and p.dp == 1:
        warns.append("ZeRO with dp=1 shards nothing")
    chips = p.chips
    if nodes is not None:
        have = nodes * system.node.chips
        if chips > have:
            errors.append(f"plan needs {chips} chips (tp {p.tp} x da {p.da} x cp {p.cp} x pp {p.pp} x dp {p.dp}) "
                          f"but {nodes} x {system.node.name} have {have}")
        elif chips < have:
            warns.append(f"plan uses {chips} of {have} chips")
    place = placement(system, p, cal)
    tp_row = place[place.group == "tp"].iloc[0]
    if tp_row.outermost_tier == "scaleout":
        warns.append(f"tp={p.tp} spans EFA: its all-reduces after every block cross the network")
    elif tp_row.outermost_tier == "scaleup" and system.scaleup_nodes > 1:
        warns.append(f"tp={p.tp} spans instances of the scale-up domain")
    if place[place.group == "ep"].iloc[0].crosses_efa:
        warns.append(f"ep={p.ep} spans EFA: MoE all-to-alls cross the network")
    fp, fit_error = None, ""
    if not errors:
        fp = memory.footprint_for(system, arch, scenario, cal)
        total = float(np.ravel(fp.total_bytes)[0])
        if not bool(np.ravel(fp.fits)[0]):
            fit_error = (f"does not fit: {total / system.chip.hbm_capacity_bytes:.2f}x the "
                         f"{system.chip.display_name} memory per chip")
            errors.append(fit_error)
    return PlanCheck(errors=tuple(errors), warnings=tuple(warns), placement=place, footprint=fp, fit_error=fit_error)


def knobs_for(scenario: Scenario) -> bd.Knobs:
    """Knobs of a training scenario (the plan's degrees as scalars)."""
    if scenario.phase != Phase.TRAIN:
        raise ValueError("a training plan needs phase=train")
    return bd.Knobs.of(scenario)
