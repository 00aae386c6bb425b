"""Spec tables: systems as tidy DataFrames (list, show with provenance, compare with ratios).

Does not: read files (takes loaded System objects) or format output.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.core import aggregate, units
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System

# metric key in aggregate.totals -> (label, quantity kind)
COMPARE_METRICS: list[tuple[str, str, str]] = [
    ("chips", "chips", "count"),
    *[(f"peak_{d.value}_flop_per_s", f"peak {d.value} (dense)", "flop_rate") for d in DType],
    ("peak_8bit_best_flop_per_s", "peak 8-bit float, best of FP8/MXFP8 (dense)", "flop_rate"),
    ("hbm_capacity_bytes", "HBM capacity", "capacity"),
    ("hbm_bandwidth_bytes_per_s", "HBM bandwidth", "bandwidth"),
    ("sram_bytes", "on-chip SRAM", "capacity"),
    ("link_bandwidth_per_chip_bytes_per_s", "scale-up link bandwidth per chip", "bandwidth"),
    ("efa_bandwidth_bytes_per_s", "EFA / scale-out bandwidth", "bandwidth"),
    ("price_usd_per_hour", "on-demand price", "price_rate"),
]


def _totals(system: System, level: str) -> dict[str, float]:
    t = aggregate.totals(system, level)
    eight = [t.get(f"peak_{d}_flop_per_s") for d in ("fp8", "mxfp8")]
    eight = [v for v in eight if v]
    if eight:
        t["peak_8bit_best_flop_per_s"] = max(eight)
    return t


def systems_frame(systems: list[System]) -> pd.DataFrame:
    """One row per system: what it is and its headline numbers per chip."""
    rows = []
    for s in systems:
        c = s.chip
        rows.append({
            "system": s.name, "display_name": s.display_name, "generation": s.generation, "chip": c.name,
            "chips_per_node": s.node.chips, "scaleup_chips": s.scaleup_chips,
            "peak_bf16_per_chip_flop_per_s": c.peak_flop_per_s.get(DType.BF16, float("nan")),
            "hbm_per_chip_bytes": c.hbm_capacity_bytes, "hbm_bw_per_chip_bytes_per_s": c.hbm_bandwidth_bytes_per_s,
            "price_per_node_usd_per_hour": s.node.price_usd_per_hour if s.node.price_usd_per_hour else float("nan"),
            "projected": s.projected,
            "uncertain_fields": len(s.uncertain_fields()),
        })
    return pd.DataFrame(rows)


def show_frame(system: System) -> pd.DataFrame:
    """Every field: the file's string, the parsed SI value and unit, status, source, note, alternatives."""
    rows = []
    for path, v in sorted(system.provenance.items()):
        rows.append({
            "field": path, "value_as_written": v.raw, "si_value": v.si, "si_unit": units.KINDS[v.kind].internal_unit,
            "status": v.status.value, "source": v.source,
            "alternatives": "; ".join(f"{a.raw} ({a.source}{', ' + a.label if a.label else ''})"
                                      for a in v.alternatives),
            "derivation": v.derivation, "note": v.note,
        })
    return pd.DataFrame(rows)


def compare_frame(systems: list[System], level: str = "scaleup") -> pd.DataFrame:
    """Side by side at `level` (chip / node / scaleup), with ratios of each system to the first.

    Columns: metric, label, unit, one value column per system (SI), then ratio_<sys>_vs_<first>.
    """
    if level not in aggregate.LEVELS:
        raise ValueError(f"level must be one of {', '.join(aggregate.LEVELS)}")
    tots = {s.name: _totals(s, level) for s in systems}
    first = systems[0].name
    rows = []
    for key, label, kind in COMPARE_METRICS:
        if not any(key in t for t in tots.values()):
            continue
        row = {"metric": key, "label": label, "unit": units.KINDS[kind].internal_unit, "level": level}
        for s in systems:
            row[s.name] = tots[s.name].get(key, float("nan"))
        base = tots[first].get(key)
        for s in systems[1:]:
            v = tots[s.name].get(key)
            row[f"ratio_{s.name}_vs_{first}"] = v / base if (v and base) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def compare_display(df: pd.DataFrame, systems: list[System]) -> pd.DataFrame:
    """Human-scaled copy of compare_frame for terminal and Markdown output."""
    out = df.copy().astype({s.name: object for s in systems})
    for i, r in out.iterrows():
        kind = next(k for key, _, k in COMPARE_METRICS if key == r["metric"])
        for s in systems:
            v = r[s.name]
            out.at[i, s.name] = units.format_quantity(v, kind, missing="-")
    out = out.drop(columns=["metric", "unit", "level"])
    for c in out.columns:
        if c.startswith("ratio_"):
            out[c] = out[c].map(lambda x: f"{x:.2f}x" if x == x else "-").astype(object)
    return out.rename(columns={c: c.replace("ratio_", "").replace("_vs_", " / ") for c in out.columns})
