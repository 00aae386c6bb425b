"""Provenance of results: which spec values a figure rests on, with status and source.

Spec values are grouped by what they feed (paths as in System.provenance):

    compute         chip.peak.<dtype>, chip.tensor_engine.*, chip.{vector,scalar,gpsimd}_engine.*, chip.cores
    hbm_bandwidth   chip.memory.hbm_bandwidth
    hbm_capacity    chip.memory.hbm_capacity
    network         tiers.*, chip.interconnect.*, node.efa_*, node.chips, scaleup.nodes  (only if the plan communicates)
    power           chip.power.*, node.power, scaleup.power
    price           node.price

A result column rests on the groups in FIGURE_GROUPS; its basis is the weakest status
among those inputs, in LEVELS order: published < derived < estimated < projected < assumed
(a calibration assumption standing in for a missing figure, e.g. an assumed price) < what-if
(a value the user overrode). Reports mark such figures with MARKERS.

Does not: evaluate the model, or format output.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from perfmodel.catalog.calibration import Calibration
from perfmodel.core import units
from perfmodel.core.hardware import System
from perfmodel.core.provenance import Status
from perfmodel.core.scenario import Scenario

GROUPS = ("compute", "hbm_bandwidth", "hbm_capacity", "network", "power", "price")

_TIME = ("compute", "hbm_bandwidth", "network")
# result column -> input groups it rests on (columns not listed rest on nothing from the spec sheet)
FIGURE_GROUPS: dict[str, tuple[str, ...]] = {
    **{c: _TIME for c in ("step_time_s", "compute_time_s", "comm_time_s", "time_per_output_token_s", "ttft_s",
                          "tokens_per_s_per_chip", "tokens_per_s_per_replica", "tokens_per_s_per_user", "mfu_frac",
                          "tensor_util_frac", "achieved_flop_per_s", "sustained_frac", "bound",
                          "fixed_overhead_s")},
    "peak_flop_per_s": ("compute",),
    **{c: ("hbm_capacity",) for c in ("memory_total_bytes", "capacity_bytes", "fits", "min_chips", "min_instances",
                                      "min_node_share", "memory_frac", "memory_bytes_per_chip")},
    "tokens_per_mw": _TIME + ("power",), "power_per_chip_w": ("power",),
    "usd_per_million_tokens": _TIME + ("price",), "price_per_chip_usd_per_hour": ("price",),
}

LEVELS = ("published", "derived", "estimated", "projected", "assumed", "what-if")
# basis -> marker appended to a displayed figure
MARKERS = {"estimated": "*", "projected": "†", "assumed": "§", "what-if": "‡"}
MARKER_LEGEND = ("* rests on an estimated input; † on a projected input; § on an assumed value standing in for an "
                 "unpublished one (e.g. a price); ‡ on a what-if override (the provenance sheet lists each input "
                 "value, its status and source)")


def _communicates(scenario: Scenario | None) -> bool:
    if scenario is None:
        return True
    p = scenario.parallel
    return p.tp * p.pp * p.dp * p.ep * p.cp * p.da > 1


def group_prefixes(system: System, scenario: Scenario | None, group: str) -> tuple[str, ...]:
    """Provenance path prefixes of one group for this scenario (compute: its data types only)."""
    if group == "compute":
        if scenario is None:
            return ("chip.peak.", "chip.tensor_engine.", "chip.vector_engine.", "chip.scalar_engine.",
                    "chip.gpsimd_engine.", "chip.cores")
        q = scenario.precision
        dts = sorted({q.compute.value, "bf16"})
        return (*(f"chip.peak.{d}" for d in dts), *(f"chip.tensor_engine.rate.{d}" for d in dts),
                "chip.tensor_engine.rows", "chip.tensor_engine.cols", "chip.tensor_engine.clock",
                "chip.vector_engine.", "chip.scalar_engine.", "chip.gpsimd_engine.", "chip.cores")
    if group == "hbm_bandwidth":
        return ("chip.memory.hbm_bandwidth",)
    if group == "hbm_capacity":
        return ("chip.memory.hbm_capacity",)
    if group == "network":
        if not _communicates(scenario):
            return ()
        return ("tiers.", "chip.interconnect.", "node.efa_", "node.chips", "scaleup.nodes")
    if group == "power":
        return ("chip.power.", "node.power", "scaleup.power")
    if group == "price":
        return ("node.price",)
    raise ValueError(f"unknown provenance group {group!r} (known: {', '.join(GROUPS)})")


def used_paths(system: System, scenario: Scenario | None = None,
               groups: Iterable[str] = GROUPS) -> dict[str, list[str]]:
    """group -> provenance paths of `system` that the scenario's results use."""
    out: dict[str, list[str]] = {}
    for g in groups:
        pre = group_prefixes(system, scenario, g)
        out[g] = [p for p in sorted(system.provenance) if pre and any(p.startswith(x) for x in pre)]
    return out


def level(value) -> str:
    """A basis level for a spec status, a what-if-marked value, or a power / cost status string
    ('override' counts as what-if; 'none' and unknown strings as published: nothing to mark)."""
    if isinstance(value, Status):
        return value.value
    v = str(value)
    if v == "override":
        return "what-if"
    return v if v in LEVELS else "published"


def _spec_level(system: System, path: str) -> str:
    v = system.provenance[path]
    return "what-if" if v.note.startswith("what-if override") else v.status.value


def weakest(levels: Iterable) -> str:
    ls = [level(x) for x in levels]
    return max(ls, key=LEVELS.index) if ls else "published"


def figure_status(system: System, scenario: Scenario | None, column: str) -> str:
    """Weakest basis among the spec values `column` rests on ('published' if none)."""
    groups = FIGURE_GROUPS.get(column, ())
    paths = [p for ps in used_paths(system, scenario, groups).values() for p in ps]
    return weakest(_spec_level(system, p) for p in paths)


def figure_statuses(system: System, scenario: Scenario | None, columns: Iterable[str]) -> dict[str, str]:
    return {c: figure_status(system, scenario, c) for c in columns}


def uncertain_inputs(system: System, scenario: Scenario | None = None,
                     groups: Iterable[str] = GROUPS) -> list[str]:
    """'path (status)' for every estimated / projected / what-if input the results use."""
    seen: list[str] = []
    for paths in used_paths(system, scenario, groups).values():
        for p in paths:
            v = system.provenance[p]
            if v.status.is_uncertain and p not in seen:
                seen.append(p)
    return [f"{p} ({_spec_level(system, p)})" for p in seen]


def marker(basis) -> str:
    return MARKERS.get(level(basis), "")


def si_unit(kind: str) -> str:
    """The unit si_value is in: the kind's SI unit, or the kind's name for a plain number ('count', 'ratio',
    'flag'), never blank."""
    k = units.KINDS.get(kind)
    return (k.internal_unit if k is not None else "") or kind or "number"


def provenance_frame(system: System, scenario: Scenario | None = None, cal: Calibration | None = None,
                     groups: Iterable[str] = GROUPS) -> pd.DataFrame:
    """The provenance sheet: one row per spec value (and calibration assumption) a result used.

    Columns: system, group, field, value_as_written, si_value, si_unit, status, uncertain,
    source, note. Calibration rows have group 'calibration' and the parameter's reason as note.
    """
    rows = []
    for g, paths in used_paths(system, scenario, groups).items():
        for p in paths:
            v = system.provenance[p]
            rows.append({"system": system.name, "group": g, "field": p, "value_as_written": v.raw, "si_value": v.si,
                         "si_unit": si_unit(v.kind),
                         "status": v.status.value, "uncertain": v.status.is_uncertain, "source": v.source,
                         "note": v.note or v.derivation})
    if cal is not None:
        for r in cal.frame_rows():
            rows.append({"system": system.name, "group": "calibration", "field": r["parameter"],
                         "value_as_written": r["as_written"], "si_value": r["value"], "si_unit": si_unit(r["kind"]),
                         "status": r["status"], "uncertain": r["status"] != "measured",
                         "source": r["source"] or r["origin"],
                         "note": r["reason"] + (f" Range the evidence leaves: {r['range']}." if r["range"] else "")})
    cols = ["system", "group", "field", "value_as_written", "si_value", "si_unit", "status", "uncertain", "source",
            "note"]
    return pd.DataFrame(rows, columns=cols)
