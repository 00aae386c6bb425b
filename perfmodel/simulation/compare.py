"""The simulation checks the analytic model: both at the same offered load, from idle to saturation.

Analytic at a request rate (one replica):
    the steady state (serving/steady_state.py) over every concurrency C the scheduler can run (KV fits,
    C <= S_max); its request rate r(C) = C / e2e(C) rises with C to the replica's capacity r_max;
    at an offered rate lambda <= r_max the replica holds C* with r(C*) = lambda (Little's law) and the
    analytic TTFT, TPOT are the steady state's at C* (interpolated); above r_max it has no answer.
Simulated: Poisson arrivals at lambda = load x r_max x replicas, the same lengths, the same step model.

The gap between the two as the load grows is queueing, which the steady state does not model (its TTFT is
that of an idle queue): small at low load, unbounded near saturation.

Does not: run a planner (serving/planner.py) or draw (report/charts.py's ttft_vs_load draws the frame).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.serving.options import Mix, ServingOptions
from perfmodel.serving.steady_state import Grid, serve
from perfmodel.simulation import deployment, metrics
from perfmodel.simulation.traffic import Shapes, Traffic

LOADS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9)


def analytic_curve(system: System, arch: ModelArch, plan: Grid, mix: Mix, options: ServingOptions,
                   max_running: int, cal=None) -> pd.DataFrame:
    """The steady state at every concurrency up to `max_running` (multiples of p x d_a) that fits, with its
    request rate per replica C / e2e(C)."""
    unit = int(plan.pp[0] * plan.da[0])
    cs = np.unique(np.round(np.geomspace(1, max(1, max_running // unit), 96))).astype(int) * unit
    g = Grid.of(tp=plan.tp[0], da=plan.da[0], ep=plan.ep[0], pp=plan.pp[0], cp=plan.cp[0], concurrency=cs,
                compute=plan.compute[0],
                weights=plan.weights[0], expert_weights=plan.expert_weights[0], kv_cache=plan.kv_cache[0])
    df = serve(system, arch, g, mix, options, cal)
    df = df[df["kv_fits"] & df["valid"]].copy()
    if not len(df):
        raise ValueError(f"{system.name} / {arch.name}: the plan fits no concurrency (KV cache)")
    df["request_rate_per_s"] = df["concurrency"] / df["e2e_latency_s"]
    return df.reset_index(drop=True)


def analytic_at(curve: pd.DataFrame, rate) -> pd.DataFrame:
    """The steady state at offered rates (per replica): concurrency, TTFT, TPOT by Little's law on the rising
    part of r(C); NaN above the capacity."""
    r = curve["request_rate_per_s"].to_numpy()
    top = int(np.argmax(r))
    rr, sub = r[: top + 1], curve.iloc[: top + 1]
    rate = np.atleast_1d(np.asarray(rate, dtype=float))
    over = rate > rr[-1]
    out = {"offered_rate_per_s": rate}
    for col in ("concurrency", "ttft_s", "time_per_output_token_s", "e2e_latency_s"):
        v = np.interp(rate, rr, sub[col].to_numpy())
        out[col] = np.where(over, np.nan, v)
    return pd.DataFrame(out)


def load_sweep(system: System, arch: ModelArch, plan: Grid, mix: Mix, options: ServingOptions = ServingOptions(),
               loads=LOADS, n_requests: int = 4000, replicas: int = 1, seed: int = 0, cal=None,
               progress=None) -> pd.DataFrame:
    """Analytic and simulated TTFT / TPOT at each load (module doc), one row per load."""
    layout = deployment.Layout(replicas=replicas)
    sched = deployment.scheduler(options, layout, system, "both", int(plan.da[0]))
    curve = analytic_curve(system, arch, plan, mix, options, sched.max_running, cal)
    cap = float(curve["request_rate_per_s"].max())
    shapes = Shapes(input_tokens=((mix.input_tokens, 1.0),), output_tokens=((mix.output_tokens, 1.0),))
    rows = []
    for i, load in enumerate(loads):
        rate = load * cap
        an = analytic_at(curve, rate).iloc[0]
        run = deployment.simulate(system, arch, plan, Traffic("poisson", rate=rate * replicas), shapes, n_requests,
                                  options, layout, seed=seed, cal=cal)
        sm = metrics.summarize(run)
        rows.append({"load": load, "offered_rate_per_s": rate * replicas, "capacity_per_s": cap * replicas,
                     "analytic_concurrency": an["concurrency"], "sim_mean_running": sm["mean_running_per_worker"],
                     "analytic_ttft_s": an["ttft_s"], "sim_ttft_p50_s": sm["ttft_p50_s"],
                     "sim_ttft_p90_s": sm["ttft_p90_s"], "sim_ttft_p99_s": sm["ttft_p99_s"],
                     "analytic_tpot_s": an["time_per_output_token_s"], "sim_tpot_p50_s": sm["tpot_p50_s"],
                     "sim_tpot_p99_s": sm["tpot_p99_s"], "sim_requests_per_min": sm["sim_requests_per_min"]})
        if progress:
            progress(i + 1, len(loads))
    df = pd.DataFrame(rows)
    df["ttft_p50_gap"] = df["sim_ttft_p50_s"] / df["analytic_ttft_s"] - 1
    df["tpot_p50_gap"] = df["sim_tpot_p50_s"] / df["analytic_tpot_s"] - 1
    return df
