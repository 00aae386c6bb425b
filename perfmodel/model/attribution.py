"""Where an operator's time goes: the engine that bounds it, its fixed overhead, its collectives.

An operator instance's time splits into parts that add up to it exactly (seconds):

    time_s = core + overhead + comm + comm_latency
    overhead     = min(t_ovh, t)              fixed cost per operator instance (`op_overhead`):
                                              semaphores, descriptor issue, launch; 0 for an op with no work
    core         = t - overhead               the roofline max over engines: charged to the busiest
                                              engine (tensor, vector, scalar, gpsimd, memory)
    comm_latency = alpha terms + fixed        the collective's hop latencies and its launch cost
    comm         = c - comm_latency           the collective's bandwidth term

`bound` of an operator is its largest part; `bound_shares` sums count x part over the
operators, so a step's breakdown is its step time, fixed costs named as their own bound
("overhead", "comm latency") instead of folded into the busiest engine.

Does not: price anything (evaluate.py, roofline.py, comm/collectives.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.model.formulas import FIELDS
from perfmodel.model.roofline import ENGINES

BOUNDS = ENGINES + ("comm", "comm latency", "overhead")


def op_frame(ops, q: dict, comm: np.ndarray, col: int = 0, overhead_s: float = 0.0,
             comm_latency: np.ndarray | None = None) -> pd.DataFrame:
    """Tidy per-operator frame for configuration `col` of a sweep (col 0 for a single scenario).
    overhead_s: the fixed per-operator overhead bound for this evaluation; comm_latency: per
    operator, the latency part of its collective's time [op, configuration...] (None: 0). An operator that does
    not run in this configuration (count 0: a plan collective without that parallelism) is not listed."""
    def pick(a):
        return a if a.ndim == 1 else a[:, col]

    lat = pick(comm_latency) if comm_latency is not None else np.zeros(len(ops))
    rows = []
    for i, op in enumerate(ops):
        r = {"op": op.name, "block": op.group, "kind": op.kind.value, "pass": op.pass_.value,
             "count": float(pick(q["count"])[i])}
        if r["count"] == 0:
            continue
        for f in FIELDS:
            r[f] = float(pick(q[f])[i])
        times = {e: float(pick(q[f"t_{e}"])[i]) for e in ENGINES}
        t = float(pick(q["time"])[i])
        c = float(pick(comm)[i])
        r.update({f"{e}_s": v for e, v in times.items()})
        r["comm_s"] = c
        r["time_s"] = t + c
        r["total_time_s"] = r["count"] * r["time_s"]
        ovh = min(float(overhead_s), t)
        cl = min(float(lat[i]), c)
        engine = max(times, key=times.get)
        parts = {engine: t - ovh, "overhead": ovh, "comm": c - cl, "comm latency": cl}
        r["overhead_s"], r["comm_latency_s"] = ovh, cl
        r["bound"] = max(parts, key=parts.get) if max(parts.values()) > 0 else "overhead"
        r["bound_part_s"] = parts[engine]
        r["bound_engine"] = engine if t > ovh else ""
        r["intensity_flop_per_byte"] = r["flop"] / (r["read"] + r["write"]) if (r["read"] + r["write"]) else np.nan
        r["achieved_flop_per_s"] = r["flop"] / r["time_s"] if r["time_s"] else 0.0
        for e, v in times.items():
            r[f"util_{e}_frac"] = v / t if t else 0.0
        r["comm_bytes"] = float(pick(q["comm_bytes"])[i])
        r["collective"] = op.comm.collective.value if op.comm else ""
        r["comm_group"] = op.comm.group if op.comm else ""
        rows.append(r)
    # built by column (pandas converts a list of row dicts cell by cell: ~3x slower for one scenario's frame)
    names = list(rows[0]) if rows else []
    return pd.DataFrame({_RENAMED.get(k, k): [r[k] for r in rows] for k in names})


_RENAMED = {"read": "hbm_read_bytes", "write": "hbm_write_bytes", "sram": "sram_bytes", "params": "params_elems",
            "score_io": "score_hbm_bytes", "vector": "vector_elems", "scalar": "scalar_elems", "exp": "exp_elems",
            "gpsimd": "gpsimd_elems"}


def bound_shares(ops: pd.DataFrame) -> pd.DataFrame:
    """Step time by what bounds it: bound, time_s, share_frac. Each operator's time is split into
    its parts (module doc), so the rows sum to the step time (sum of count x time_s)."""
    n = ops["count"].to_numpy(dtype=float)
    engine_part = ops["bound_part_s"].to_numpy(dtype=float)
    by: dict[str, float] = {}
    for label, part in ((ops["bound_engine"], engine_part), ("overhead", ops["overhead_s"]),
                        ("comm latency", ops["comm_latency_s"]),
                        ("comm", ops["comm_s"] - ops["comm_latency_s"])):
        part = np.asarray(part, dtype=float) * n
        if isinstance(label, str):
            by[label] = by.get(label, 0.0) + float(part.sum())
            continue
        for name, v in pd.Series(part).groupby(np.asarray(label, dtype=object), sort=False).sum().items():
            if name:
                by[name] = by.get(name, 0.0) + float(v)
    total = float((n * ops["time_s"].to_numpy(dtype=float)).sum())
    out = pd.DataFrame({"bound": list(by), "time_s": list(by.values())})
    out = out[out["time_s"] > 0] if total > 0 else out.iloc[:0]
    out["share_frac"] = out["time_s"] / total if total else np.nan
    return out.sort_values("time_s", ascending=False, ignore_index=True)
