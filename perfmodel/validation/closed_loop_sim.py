"""The steady state's closed-loop formulas against the request-level simulation of the same benchmark.

validation/sources/inferencex_engine.py predicts a closed-loop benchmark (C clients, W waves, lengths uniform in
[0.8 L, L], a serving engine's profile) with serving/closed_loop.py's formulas; simulation/ runs the same
protocol request by request on the same step model. `closed_loop_check` puts the two side by side (a test
holds them within 15% on TTFT and 5% on TPOT).

Does not: read measurements.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.catalog import serving_engines
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.serving.kv_capacity import kv_fit
from perfmodel.serving.options import ServingOptions
from perfmodel.serving.steady_state import Grid, serve
from perfmodel.simulation import deployment, metrics
from perfmodel.simulation.traffic import Shapes, Traffic
from perfmodel.validation.sources import inferencex_engine as ie


def closed_loop_check(system: System, arch: ModelArch, plan: Grid, clients: int, isl: int, osl: int,
                      engine: str = "vllm", seed: int = 0, cal=None) -> pd.Series:
    """A benchmark's closed loop (the InferenceX protocol: C clients, W waves, lengths uniform in [0.8 L, L]) on
    one aggregated replica with `engine`: TTFT and TPOT from the steady state's closed-loop formulas
    (serving/closed_loop.py, as the InferenceX validation applies them) beside the simulation's means."""
    proto, prof = ie.protocol(), serving_engines.engine(engine)
    mix = ie.mean_mix(isl, osl)
    unit = int(plan.da[0] * plan.pp[0])
    g1 = plan.take([0])
    cmax = kv_fit(system, arch, g1, mix.input_tokens + mix.output_tokens / 2, cal, prof["kv_memory_fraction"])[2]
    s = float(ie.slots(float(clients), prof["max_running"], cmax, unit, float(plan.da[0]))[0])
    g = Grid.of(tp=plan.tp[0], da=plan.da[0], ep=plan.ep[0], pp=plan.pp[0], cp=plan.cp[0], concurrency=s,
                compute=plan.compute[0],
                weights=plan.weights[0], expert_weights=plan.expert_weights[0], kv_cache=plan.kv_cache[0])
    r = serve(system, arch, g, mix, ServingOptions(), cal).iloc[0]
    rows = ie.replica_terms(engine, clients, s, float(plan.da[0]), mix.input_tokens, mix.output_tokens, r)
    an = ie.closed_loop(rows).iloc[0]
    shapes = Shapes(input_tokens=((isl, 1.0),), output_tokens=((osl, 1.0),), ratio=proto["length_range_ratio"])
    run = deployment.simulate(system, arch, plan, Traffic("closed", clients=clients), shapes,
                              int(proto["waves"]) * clients, ServingOptions(software=prof), seed=seed, cal=cal)
    sm = metrics.summarize(run, trim=0.0)
    return pd.Series({"clients": clients, "running": s, "analytic_ttft_s": an["ttft_s"],
                      "sim_ttft_mean_s": sm["ttft_mean_s"], "analytic_tpot_s": an["tpot_s"],
                      "sim_tpot_mean_s": sm["tpot_mean_s"], "sim_ttft_p50_s": sm["ttft_p50_s"]})
