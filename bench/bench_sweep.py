"""Benchmark: a 100,000-configuration serving frontier sweep, vectorised vs a per-configuration loop.

    python bench/bench_sweep.py [--system trn3-ultraserver] [--workload gpt-oss-120b] [--n 100000] [--loop 200]

Times search.frontier_sweep (serving.serve in chunks + power + cost + Pareto flags) on N
configurations of the plan grid (every t, d_a, e, p, data type and concurrency of the scale-up
domain), then the same work one configuration at a time on a random subset, and prints
configurations per second for both and their ratio. Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.serving import search
from perfmodel.serving.steady_state import Mix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default="trn3-ultraserver")
    ap.add_argument("--workload", default="gpt-oss-120b")
    ap.add_argument("--n", type=int, default=100_000, help="configurations in the vectorised sweep")
    ap.add_argument("--loop", type=int, default=200, help="configurations priced one at a time")
    args = ap.parse_args()
    system = catalog.load_system(args.system)
    arch = workload_files.load_workload(args.workload)
    per_octave = 2
    grid = search.plan_grid(system, arch, concurrency=search.default_concurrency(per_octave=per_octave))
    while len(grid) < args.n:  # finer concurrency steps until the grid holds N configurations
        per_octave += 1
        grid = search.plan_grid(system, arch, concurrency=search.default_concurrency(per_octave=per_octave))
    rng = np.random.default_rng(0)
    grid = grid.take(np.sort(rng.choice(len(grid), args.n, replace=False)))
    mix = Mix(1024, 1024)
    search.frontier_sweep(system, arch, mix, grid=grid.take(slice(0, 64)))  # compile the graphs once

    t0 = time.perf_counter()
    df = search.frontier_sweep(system, arch, mix, grid=grid)
    t_vec = time.perf_counter() - t0
    sub = grid.take(rng.choice(len(grid), args.loop, replace=False))
    t0 = time.perf_counter()
    for i in range(len(sub)):
        search.frontier_sweep(system, arch, mix, grid=sub.take(slice(i, i + 1)))
    t_loop = time.perf_counter() - t0

    vec_rate, loop_rate = len(grid) / t_vec, len(sub) / t_loop
    print(f"system {system.name}, workload {arch.name}, mix {mix.label}")
    print(f"vectorised frontier sweep: {len(grid):,} configurations in {t_vec:.2f} s = {vec_rate:,.0f} configs/s "
          f"({int(df['on_frontier_mw'].sum())} on the tokens/MW frontier)")
    print(f"per-configuration loop:    {len(sub):,} configurations in {t_loop:.2f} s = {loop_rate:,.1f} configs/s")
    print(f"speed-up: {vec_rate / loop_rate:,.0f}x")


if __name__ == "__main__":
    main()
