"""The planner's answer checked request by request: each system's chosen deployment simulated at the demand's
peak rate, replicas added until the demand's percentile targets hold.

    arrivals  Poisson at lambda = requests/s x peak-to-average (MLPerf Server's arrivals), lengths drawn from
              the demand's distributions (their values and weights)
    slice     R replicas behind the least-load router; at most SLICE of them are simulated, at lambda S / R
              (replicas are exchangeable; a smaller pool pools less, so the slice errs on the safe side);
              disaggregated (xPyD): the decode workers sliced so, the planner's prefill workers in proportion
    runner    each replica runs at most the planner's capacity concurrency (the engine's max_num_seqs)
    length    W = the steady state's end-to-end latency at the operating point; requests for WINDOWS x W of
              arrivals (at least MIN_REQUESTS, at most MAX_REQUESTS); those arriving in the first and the last
              W are left out (warm-up, drain)
    verdict   the percentile's TTFT <= ttft_s and TPOT <= tpot_s; else R grows by the larger of one replica
              and the worst excess ratio (capped at 1.5x), up to MAX_ROUNDS; chips, instances, power and cost
              re-sized to the verified R (planner.resize). An answer still missing its targets after the last
              round is marked infeasible with the figures: never shown as a valid answer.

Does not: choose plans (serving/planner.py chooses; this module only checks and adds replicas).
"""

from __future__ import annotations

import math

import pandas as pd

from perfmodel.core.inputs import SystemInputs
from perfmodel.core.workload import ModelArch
from perfmodel.serving import planner
from perfmodel.serving.options import Mode, ServingOptions
from perfmodel.simulation import deployment, metrics
from perfmodel.simulation.traffic import Shapes, Traffic

SLICE = 4  # replicas simulated: they are exchangeable, and a slice pools less than the fleet (errs safe)
WINDOWS = 4.0  # e2e windows of arrivals: one of warm-up, one of drain, two measured
MIN_REQUESTS = 3000  # a p99 from >= 2,000 measured requests rests on >= 20 of them
MAX_REQUESTS = 24_000  # bounds one round at ~10 s on one core (bench_simulation: >= 141k requests/min)
MAX_ROUNDS = 4  # replicas grow up to 1.5x a round: 4 rounds reach 5x the steady state's count
MAX_GROWTH = 1.5  # per round, so one noisy p99 cannot oversize the answer
DEFAULT_PERCENTILE = 99.0  # MLPerf Server's latency percentile


def _plan(row) -> deployment.Grid:
    return deployment.one_plan(tp=int(row["tp"]), da=int(row["da"]), ep=int(row["ep"]), pp=int(row["pp"]),
                               cp=int(row.get("cp", 1)),
                               compute=row["compute_dtype"], weights=row["weights_dtype"],
                               expert_weights=row["expert_weights_dtype"], kv_cache=row["kv_dtype"])


def _layout(row, replicas: int) -> tuple[deployment.Layout, float]:
    """The simulated slice of `replicas` and the share of the traffic it takes."""
    s = min(replicas, SLICE)
    cap = int(row["capacity_concurrency"])
    if row["mode"] == Mode.DISAGGREGATED.value:  # xPyD: the planner's prefill workers, in proportion
        per = float(row["prefill_workers"]) / float(row["replicas"])
        return deployment.Layout(prefill=max(1, math.ceil(s * per)), decode=s, max_running=cap), s / replicas
    return deployment.Layout(replicas=s, max_running=cap), s / replicas


def verify_row(row: dict, demand: planner.Demand, arch: ModelArch, inputs: SystemInputs,
               options: planner.PlanOptions = planner.PlanOptions(), seed: int = 0) -> dict:
    """One system's answer verified (module doc): the row re-sized to the verified replicas, with the simulated
    percentiles, the rounds and the analytic replica count beside it. `inputs`: the system's inputs the planner
    priced the row with (resolved at the edge)."""
    pct = demand.percentile or DEFAULT_PERCENTILE
    system, cal = inputs.system, inputs.cal
    shapes = Shapes(input_tokens=tuple(zip(demand.input_tokens.values, demand.input_tokens.weights)),
                    output_tokens=tuple(zip(demand.output_tokens.values, demand.output_tokens.weights)),
                    prefix_share=demand.prefix_share, prefix_tokens=demand.prefix_tokens, prefixes=demand.prefixes)
    rate = demand.requests_per_s * demand.peak_to_average
    window = float(row["ttft_s"]) + (demand.output_tokens.mean - 1) * float(row["time_per_output_token_s"])
    replicas, rounds = int(row["replicas"]), []
    for _ in range(MAX_ROUNDS):
        layout, share = _layout(row, replicas)
        lam = rate * share
        n = int(min(MAX_REQUESTS, max(MIN_REQUESTS, lam * WINDOWS * window)))
        run = deployment.simulate(system, arch, _plan(row), Traffic("poisson", rate=lam), shapes, n,
                                  ServingOptions(mode=Mode(row["mode"]), software=inputs.software), layout, seed=seed,
                                  cal=cal)
        sm = metrics.summarize(run, (demand.ttft_s, demand.tpot_s), warmup_s=window, percentiles=(pct,))
        t, p = sm[f"ttft_p{pct:g}_s"], sm[f"tpot_p{pct:g}_s"]
        rounds.append((replicas, t, p, n))
        excess = max(t / demand.ttft_s, p / demand.tpot_s)
        if excess <= 1.0:
            break
        replicas = max(replicas + 1, math.ceil(replicas * min(MAX_GROWTH, excess)))
    r, t, p, n = rounds[-1]
    met = t <= demand.ttft_s and p <= demand.tpot_s
    out = planner.resize(row, system, cal, r, demand, options) if r != int(row["replicas"]) else dict(row)
    trail = "; ".join(f"{a} replicas: p{pct:g} TTFT {b * 1e3:,.0f} ms, TPOT {c * 1e3:,.1f} ms" for a, b, c, _ in rounds)
    out.update({"verified": met, "analytic_replicas": int(row["replicas"]), f"sim_ttft_p{pct:g}_s": t,
                f"sim_tpot_p{pct:g}_s": p, "verify_rounds": len(rounds), "sim_requests": n,
                "verify_note": f"simulated at {rate:,.1f} requests/s (peak), Poisson: {trail}"})
    if not met:
        out.update({"feasible": False, "note": f"the simulation misses the p{pct:g} targets at {r} replicas after "
                                                f"{len(rounds)} rounds ({trail})"})
    return out


def verify_plan(df: pd.DataFrame, demand: planner.Demand, arch: ModelArch, systems: list[SystemInputs],
                options: planner.PlanOptions = planner.PlanOptions(), progress=None) -> pd.DataFrame:
    """Every feasible answer of planner.plan_serving verified (one simulation per system and round), each with
    the inputs it was planned with (`systems`, by system name)."""
    by_name = {s.name: s for s in systems}
    rows = []
    for i, (_, row) in enumerate(df.iterrows()):
        r = row.to_dict()
        rows.append(verify_row(r, demand, arch, by_name[r["system"]], options) if r.get("feasible") else r)
        if progress:
            progress(i + 1, len(df))
    out = pd.DataFrame(rows)
    if "verified" in out:
        out["verified"] = out["verified"].astype("boolean")
    return out
