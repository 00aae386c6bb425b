"""What a simulated run measured, as pandas frames: per request, a summary of percentiles, and a timeline.

    TTFT      = first token at the client - arrival     (the engine's first-token steps included)
    TPOT      = (last token - first token) / (O - 1)     per request with O > 1 (vLLM bench's definition)
    e2e       = last token at the client - arrival
    goodput   = requests/s that met both SLA targets (TTFT <= ttft_s and TPOT <= tpot_s), and their share
    measured  requests in the middle of the run: the first and last `trim` share (by arrival order) are the
              warm-up and the drain, where the queue is not yet (or no longer) at the offered load

Does not: simulate (deployment.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PERCENTILES = (50, 90, 99)
TRIM = 0.1  # share of requests at each end of an open-loop run left out of the statistics


def requests_frame(run) -> pd.DataFrame:
    """One row per request (s, tokens)."""
    s = run.sim
    first_client = s.first + s.first_delay
    out = s.output_tokens.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (s.finished - s.first) / (out - 1), np.nan)
    return pd.DataFrame({
        "arrival_s": s.arrival, "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
        "ttft_s": first_client - s.arrival, "tpot_s": tpot, "e2e_s": s.finished + s.first_delay - s.arrival,
        "cached_tokens": s.hit_tokens, "preemptions": s.preemptions, "worker": s.worker,
    })


def measured(frame: pd.DataFrame, closed: bool, trim: float = TRIM, warmup_s: float | None = None) -> pd.DataFrame:
    """The requests the statistics use (module doc); a closed loop keeps all but the first wave's warm-up. With
    `warmup_s`, the requests arriving in the first and the last `warmup_s` seconds are left out instead."""
    if warmup_s is not None:
        t = frame["arrival_s"]
        keep = (t >= t.min() + warmup_s) & (t <= t.max() - warmup_s)
        return frame[keep] if keep.sum() >= 100 else frame
    order = frame["arrival_s"].rank(method="first").to_numpy() - 1
    n = len(frame)
    lo, hi = int(trim * n), n - (0 if closed else int(trim * n))
    keep = (order >= lo) & (order < hi)
    return frame[keep] if keep.sum() >= 10 else frame


def summarize(run, sla: tuple[float, float] | None = None, trim: float = TRIM, warmup_s: float | None = None,
              percentiles=PERCENTILES) -> pd.Series:
    """Percentiles of TTFT, TPOT and e2e, throughput, goodput under `sla` (ttft_s, tpot_s), queue and cache
    figures, and the simulation's own speed (`measured` decides which requests count)."""
    frame = requests_frame(run)
    if frame["e2e_s"].isna().any():
        n = int(frame["e2e_s"].isna().sum())
        raise ValueError(f"simulation ended with {n} requests unfinished: a request needs more KV blocks than the "
                         "pool holds (raise --kv-blocks or choose a plan with more HBM per sequence)")
    m = measured(frame, run.sim.traffic.kind == "closed", trim, warmup_s)
    span = float(m["arrival_s"].max() - m["arrival_s"].min()) or float(frame["e2e_s"].max())
    out: dict[str, float] = {"requests": len(frame), "measured_requests": len(m)}
    for col in ("ttft_s", "tpot_s", "e2e_s"):
        v = m[col].dropna().to_numpy()
        out[f"{col[:-2]}_mean_s"] = float(v.mean()) if len(v) else np.nan
        for p in percentiles:
            out[f"{col[:-2]}_p{p:g}_s"] = float(np.percentile(v, p)) if len(v) else np.nan
    end = float((frame["arrival_s"] + frame["e2e_s"]).max())
    out["request_rate_per_s"] = len(m) / span if span > 0 else np.nan
    out["output_tokens_per_s"] = float(frame["output_tokens"].sum()) / end
    out["mean_input_tokens"] = float(frame["input_tokens"].mean())
    out["mean_output_tokens"] = float(frame["output_tokens"].mean())
    out["mean_running_per_worker"], out["mean_waiting_per_worker"] = _time_means(run)
    tl = timeline(run)
    out["max_waiting_per_worker"] = float(tl["waiting"].max()) if len(tl) else 0.0
    out["preempted_share"] = float((frame["preemptions"] > 0).mean())
    out["prefix_hit_tokens_share"] = float(frame["cached_tokens"].sum() / frame["input_tokens"].sum())
    if sla is not None:
        ok = (m["ttft_s"] <= sla[0]) & (m["tpot_s"].fillna(0.0) <= sla[1])
        out["sla_met_share"] = float(ok.mean())
        out["goodput_requests_per_s"] = float(ok.sum()) / span if span > 0 else np.nan
    out["sim_wall_s"] = run.wall_s
    out["sim_requests_per_min"] = len(frame) / run.wall_s * 60.0 if run.wall_s > 0 else np.inf
    return pd.Series(out)


def _time_means(run) -> tuple[float, float]:
    """Time-weighted mean running and waiting requests per worker (the state after a step holds until the
    next step ends), over the workers that decode (the replicas, or the decode workers)."""
    pool = run.sim.back or run.sim.front
    tot_r = tot_w = span = 0.0
    for r in pool:
        if len(r.trace) < 2:
            continue
        t = np.asarray(r.trace, dtype=float)
        dt = np.diff(t[:, 0])
        tot_w += float((t[:-1, 1] * dt).sum())
        tot_r += float((t[:-1, 2] * dt).sum())
        span += float(t[-1, 0] - t[0, 0])
    return (tot_r / span, tot_w / span) if span > 0 else (0.0, 0.0)


def timeline(run) -> pd.DataFrame:
    """Waiting and running requests per worker after each engine step (time-ordered)."""
    rows = []
    for pool, role in ((run.sim.front, "prefill" if run.sim.back else "replica"), (run.sim.back, "decode")):
        for r in pool:
            if r.trace:
                t = np.asarray(r.trace, dtype=float)
                rows.append(pd.DataFrame({"time_s": t[:, 0], "waiting": t[:, 1], "running": t[:, 2],
                                          "worker": r.index, "role": role}))
    if not rows:
        return pd.DataFrame(columns=["time_s", "waiting", "running", "worker", "role"])
    return pd.concat(rows, ignore_index=True).sort_values("time_s", kind="stable").reset_index(drop=True)


def queue_over_time(run, bins: int = 200) -> pd.DataFrame:
    """Mean waiting and running requests across the deployment in `bins` equal time bins (for a chart)."""
    tl = timeline(run)
    if not len(tl):
        return pd.DataFrame(columns=["time_s", "waiting", "running"])
    edges = np.linspace(0.0, float(tl["time_s"].max()), bins + 1)
    b = np.clip(np.searchsorted(edges, tl["time_s"].to_numpy(), side="right") - 1, 0, bins - 1)
    per = tl.assign(bin=b).groupby(["bin", "worker", "role"])[["waiting", "running"]].mean()
    tot = per.groupby("bin").sum()
    return pd.DataFrame({"time_s": edges[tot.index.to_numpy()], "waiting": tot["waiting"].to_numpy(),
                         "running": tot["running"].to_numpy()})
