"""Benchmark: first evaluation (graph build + lambdify) vs cached evaluations, and sweep scaling.

    python bench/bench_evaluate.py

Prints seconds per call and the ratios; timing lives here, never in unit tests.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from perfmodel import catalog
from perfmodel.catalog import calibration, workload_files
from perfmodel.comm import collectives
from perfmodel.comm.algorithms import Collective
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate


def timed(fn, repeat: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def main() -> None:
    system = catalog.load_system("trn2-ultraserver")
    arch = workload_files.load_workload("deepseek-v3")
    sc = Scenario(Phase.DECODE, batch=64, context=4096, parallel=Parallelism(tp=8, ep=8))
    with tempfile.TemporaryDirectory() as tmp:  # an empty disk cache (model/graph/cache.py) for this run
        os.environ["PERFMODEL_CACHE_DIR"] = tmp
        evaluate.compile_graph.cache_clear()
        first = timed(lambda: evaluate.evaluate(system, arch, sc))
        evaluate.compile_graph.cache_clear()  # as a new process finds it: the graph's source on disk
        disk = timed(lambda: evaluate.evaluate(system, arch, sc))
    cached = timed(lambda: evaluate.evaluate(system, arch, sc), repeat=20)
    print(f"deepseek-v3 decode on {system.name}: first evaluation {first:.2f} s (build graph + lambdify), "
          f"{disk:.3f} s with the graph on disk ({first / disk:.0f}x), cached in the process "
          f"{cached * 1e3:.1f} ms per scenario ({first / cached:.0f}x)")
    for n in (1_000, 10_000, 100_000):
        kn = bd.Knobs(phase=Phase.DECODE, batch=np.linspace(1, 512, n).round(), context=4096, tp=8, ep=8)
        t = timed(lambda: evaluate.evaluate_sweep(system, arch, kn))
        print(f"  sweep of {n:>7,} configurations: {t:.2f} s = {n / t:,.0f} configs/s")
    cal = calibration.calibration_for(system)
    sizes = 2.0 ** np.arange(0, 33)
    t = timed(lambda: collectives.sweep(system, cal, Collective.ALL_REDUCE, sizes, [2, 4, 8, 16, 32, 64]), repeat=5)
    print(f"all-reduce sweep, 33 sizes x 6 group sizes, every algorithm: {t * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
