"""Benchmark: request-level simulation speed, simulated requests per minute of wall time on one core.

    python bench/bench_simulation.py [--requests 20000]

Target (issue 19): at least 100,000 simulated requests per minute on one core, so a planner run verifies each
candidate in seconds. Cases: one H100 replica of Llama-3.1-8B (1024 / 256 tokens, lengths in [0.8 L, L]) under
Poisson traffic at 20% and 80% of its capacity, in aggregated (prefill-first) and chunked (vLLM) scheduling,
a closed loop of 64 clients, and 4 replicas behind the router; gpt-oss-120b on one Trn2 instance (TP4). Each
figure is the best of 2 runs of the event loop after a first run that also builds the step tables (reported
apart). Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import os
import time

TARGET_PER_MIN = 100_000


def machine_load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20_000)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import pandas as pd

    from perfmodel import catalog
    from perfmodel.catalog import serving_engines, workload_files
    from perfmodel.serving.steady_state import Mix, ServingOptions
    from perfmodel.simulation import compare, deployment, traffic

    h100 = catalog.load_system("p5.48xlarge")
    llama = workload_files.load_workload("llama-3.1-8b")
    plan = deployment.one_plan(tp=1)
    shapes = traffic.Shapes(input_tokens=((1024, 1.0),), output_tokens=((256, 1.0),), ratio=0.8)
    rows = []

    def case(name, system, arch, plan, traf, options=ServingOptions(), layout=deployment.Layout(), shp=shapes):
        reqs = traffic.draw(traf, shp, args.requests, seed=1)
        t0 = time.perf_counter()
        deployment.simulate(system, arch, plan, traf, shp, options=options, layout=layout, reqs=reqs)
        first = time.perf_counter() - t0
        walls = [deployment.simulate(system, arch, plan, traf, shp, options=options, layout=layout,
                                     reqs=reqs).wall_s for _ in range(2)]
        best = min(walls)
        rows.append({"case": name, "requests": args.requests, "event_loop_s": round(best, 2),
                     "first_run_s (with its step tables)": round(first, 2),
                     "requests_per_min": round(args.requests / best * 60),
                     "vs_target": round(args.requests / best * 60 / TARGET_PER_MIN, 2)})

    for mode in ("aggregated", "chunked"):
        cap = compare.analytic_curve(h100, llama, plan, Mix(922, 230), ServingOptions(mode=mode), 1024)
        top = float(cap["request_rate_per_s"].max())
        for load in (0.2, 0.8):
            case(f"H100 llama-3.1-8b {mode} poisson {load:.0%}", h100, llama, plan,
                 traffic.Traffic("poisson", rate=load * top), ServingOptions(mode=mode))
    case("H100 llama-3.1-8b vllm closed loop 64", h100, llama, plan, traffic.Traffic("closed", clients=64),
         ServingOptions(software=serving_engines.engine("vllm")))
    case("4 x H100 llama-3.1-8b poisson 40 req/s", h100, llama, plan, traffic.Traffic("poisson", rate=40.0),
         layout=deployment.Layout(replicas=4))
    trn2 = catalog.load_system("trn2.48xlarge")
    oss = workload_files.load_workload("gpt-oss-120b")
    case("Trn2 gpt-oss-120b tp4 poisson 4 req/s", trn2, oss, deployment.one_plan(tp=4, expert_weights="bf16"),
         traffic.Traffic("poisson", rate=4.0))
    df = pd.DataFrame(rows)
    print(f"simulation speed ({machine_load()}; one process, one core)")
    print(df.to_string(index=False))
    worst = df["requests_per_min"].min()
    print(f"slowest case: {worst:,} requests/min = {worst / TARGET_PER_MIN:.2f}x the target of {TARGET_PER_MIN:,}")
    return 0 if worst >= TARGET_PER_MIN else 1


if __name__ == "__main__":
    raise SystemExit(main())
