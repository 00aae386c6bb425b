"""Benchmark: sweeps that return frames or write files, against the engine that computes them.

    python bench/bench_frames.py [--n 10000000] [--parquet 2000000] [--chunk 65536]

Runs a Llama-3-8B decode sweep (batch x context on trn2-ultraserver) three ways, in this process, on the threads
run_sweep takes unasked (--workers to choose; the frame is also returned once on one thread, for the ratio),
after one small sweep has compiled the graph:
  engine    rows computed and dropped (run_sweep to a callback that keeps nothing): the engine's rate;
  frame     run_sweep(spec) returning the DataFrame (the README's Python API): its rate, and the growth of
            peak resident memory over the frame's own bytes (sweep/assemble.py fills preallocated columns;
            target: at most 1.2x the frame, at least 1.5M configs/s at 10M rows);
  parquet   run_sweep(spec, out="....parquet"): its rate (floats written without dictionary pages).
The frame is returned twice: the first time into memory the process has never touched (what a fresh process
sees), then again after the first is let go. Either pays the first touch of 3 GiB of pages, which the bench
measures on its own (1 GiB written fresh, then again, in the base pages the frame's columns take and in the huge
pages np.empty asks for): on a virtual machine whose host backs guest memory lazily (the 2-core development
machine: Firecracker) it costs up to 2 ms per MiB, as long as the sweep's compute; assemble.py faults the columns
in on a second thread, in base pages (assemble.fresh_column: huge-page faults compacted memory in the kernel).
Prints the machine load beside every figure; ratios to the engine beside absolutes; a missed target exits
non-zero naming it (bench/targets.py). Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from targets import Targets  # bench/ is on the path of a bench script

from perfmodel.sweep.assemble import fresh_column
from perfmodel import catalog
from perfmodel.sweep.engine import SweepSpec
from perfmodel.sweep.run import default_workers, run_sweep

SYSTEM, WORKLOAD = "trn2-ultraserver", "llama-3-8b"
TARGETS = Targets()  # issue 21: the first frame >= 1.5M configs/s, its peak RSS growth <= 1.2x the frame


def machine_load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def spec(n: int) -> SweepSpec:
    side = 1024
    return SweepSpec(catalog.load_system(SYSTEM), catalog.load_workload(WORKLOAD), "decode", grid={"batch": f"1:{side}", "context": f"1:{max(n // side, 1)}"})


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB


def first_touch_gib_per_s(allocate, gib: int = 1) -> tuple[float, float]:
    """(fresh, reused) write rates in GiB/s: `gib` GiB of never-touched pages written, then the same pages again."""
    a = allocate(gib << 27)  # float64: 2^27 per GiB
    t0 = time.perf_counter()
    a[:] = 1.0
    fresh = time.perf_counter() - t0
    t0 = time.perf_counter()
    a[:] = 2.0
    again = time.perf_counter() - t0
    return gib / fresh, gib / again


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="configurations of the frame sweep (default 10M)")
    ap.add_argument("--parquet", type=int, default=2_000_000, help="configurations written to Parquet (default 2M)")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--workers", type=int, default=None,
                    help="threads (default: run_sweep's, the CPUs this process may use up to 4)")
    args = ap.parse_args()
    workers = args.workers or default_workers()
    run_sweep(spec(4096), progress=False)  # compile the graph, allocate the first chunks
    print(f"{WORKLOAD} decode on {SYSTEM}; chunk {args.chunk:,} rows; {workers} thread(s) as run_sweep takes "
          f"unasked; {machine_load()}")

    s = spec(args.n)
    t0 = time.perf_counter()
    run_sweep(s, lambda df: None, chunk_size=args.chunk, progress=False, workers=workers)
    engine = s.size / (time.perf_counter() - t0)
    print(f"engine (rows dropped):  {s.size:,} configs at {engine / 1e6:.2f}M/s  ({machine_load()})")

    before = peak_rss_bytes()
    t0 = time.perf_counter()
    df = run_sweep(s, chunk_size=args.chunk, progress=False, workers=workers)
    rate = s.size / (time.perf_counter() - t0)
    size = int(df.memory_usage(deep=True, index=False).sum())
    grew = max(peak_rss_bytes() - before, 0)
    print(f"frame (returned):       {len(df):,} rows x {df.shape[1]} columns at {rate / 1e6:.2f}M/s = "
          f"{rate / engine:.2f}x the engine (target >= 1.5M/s: {TARGETS.at_least('frame rate', rate, 1.5e6, '/s')}), "
          f"into fresh memory; frame {size / 2**30:.2f} GiB, peak RSS grew {grew / 2**30:.2f} GiB = "
          f"{grew / size:.2f}x the frame (target <= 1.2x: {TARGETS.at_most('frame peak RSS', grew / size, 1.2, 'x')})"
          f"  ({machine_load()})")
    del df
    t0 = time.perf_counter()
    df = run_sweep(s, chunk_size=args.chunk, progress=False, workers=workers)
    again = s.size / (time.perf_counter() - t0)
    print(f"frame again:            {len(df):,} rows at {again / 1e6:.2f}M/s = {again / engine:.2f}x the engine, into "
          f"memory the process used before (target >= 1.5M/s)  ({machine_load()})")
    del df
    if workers > 1:
        t0 = time.perf_counter()
        df = run_sweep(s, chunk_size=args.chunk, progress=False, workers=1)
        one = s.size / (time.perf_counter() - t0)
        print(f"frame on one thread:    {len(df):,} rows at {one / 1e6:.2f}M/s ({workers} threads' first frame: "
              f"{rate / one:.2f}x this)  ({machine_load()})")
        del df
    fresh, reused = first_touch_gib_per_s(lambda n: fresh_column(n, np.float64))
    huge, _ = first_touch_gib_per_s(np.empty)
    gib = size / 2**30
    print(f"this machine's memory:  first touch {fresh:.2f} GiB/s in base pages (the frame's columns: "
          f"assemble.fresh_column), {huge:.2f} GiB/s in the huge pages np.empty asks for; rewrite {reused:.1f} GiB/s: "
          f"a {gib:.2f} GiB frame's first touch alone costs {gib / fresh:.1f} s ({machine_load()})")

    p = spec(args.parquet)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = run_sweep(p, Path(tmp) / "sweep.parquet", chunk_size=args.chunk, progress=False, workers=workers)
        prate = p.size / (time.perf_counter() - t0)
        mb = (Path(tmp) / "sweep.parquet").stat().st_size / 2**20
    print(f"parquet (written):      {run.rows:,} rows at {prate / 1e3:.0f}k/s = {prate / engine:.2f}x the engine; "
          f"{mb:.0f} MiB  ({machine_load()})")
    TARGETS.exit()


if __name__ == "__main__":
    main()
