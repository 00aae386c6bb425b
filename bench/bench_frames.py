"""Benchmark: sweeps that return frames or write files, against the engine that computes them.

    python bench/bench_frames.py [--n 10000000] [--parquet 2000000] [--chunk 65536]

Runs a Llama-3-8B decode sweep (batch x context on trn2-ultraserver) three ways, in this process, after one
small sweep has compiled the graph:
  engine    rows computed and dropped (run_sweep to a callback that keeps nothing): the engine's rate;
  frame     run_sweep(spec) returning the DataFrame (the README's Python API): its rate, and the growth of
            peak resident memory over the frame's own bytes (sweep/assemble.py fills preallocated columns;
            target: at most 1.2x the frame, at least 1.5M configs/s at 10M rows);
  parquet   run_sweep(spec, out="....parquet"): its rate (floats written without dictionary pages).
Prints the machine load beside every figure; ratios to the engine beside absolutes. Timing lives here, never
in unit tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from perfmodel.sweep.engine import SweepSpec
from perfmodel.sweep.run import run_sweep

SYSTEM, WORKLOAD = "trn2-ultraserver", "llama-3-8b"


def machine_load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def spec(n: int) -> SweepSpec:
    side = 1024
    return SweepSpec(SYSTEM, WORKLOAD, "decode", grid={"batch": f"1:{side}", "context": f"1:{max(n // side, 1)}"})


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="configurations of the frame sweep (default 10M)")
    ap.add_argument("--parquet", type=int, default=2_000_000, help="configurations written to Parquet (default 2M)")
    ap.add_argument("--chunk", type=int, default=65536)
    args = ap.parse_args()
    run_sweep(spec(4096), progress=False)  # compile the graph, allocate the first chunks
    print(f"{WORKLOAD} decode on {SYSTEM}; chunk {args.chunk:,} rows; {machine_load()}")

    s = spec(args.n)
    t0 = time.perf_counter()
    run_sweep(s, lambda df: None, chunk_size=args.chunk, progress=False)
    engine = s.size / (time.perf_counter() - t0)
    print(f"engine (rows dropped):  {s.size:,} configs at {engine / 1e6:.2f}M/s  ({machine_load()})")

    before = peak_rss_bytes()
    t0 = time.perf_counter()
    df = run_sweep(s, chunk_size=args.chunk, progress=False)
    rate = s.size / (time.perf_counter() - t0)
    size = int(df.memory_usage(deep=True, index=False).sum())
    grew = max(peak_rss_bytes() - before, 0)
    print(f"frame (returned):       {len(df):,} rows x {df.shape[1]} columns at {rate / 1e6:.2f}M/s = "
          f"{rate / engine:.2f}x the engine (target >= 1.5M/s); frame {size / 2**30:.2f} GiB, peak RSS grew "
          f"{grew / 2**30:.2f} GiB = {grew / size:.2f}x the frame (target <= 1.2x)  ({machine_load()})")
    del df

    p = spec(args.parquet)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = run_sweep(p, Path(tmp) / "sweep.parquet", chunk_size=args.chunk, progress=False)
        prate = p.size / (time.perf_counter() - t0)
        mb = (Path(tmp) / "sweep.parquet").stat().st_size / 2**20
    print(f"parquet (written):      {run.rows:,} rows at {prate / 1e3:.0f}k/s = {prate / engine:.2f}x the engine; "
          f"{mb:.0f} MiB  ({machine_load()})")


if __name__ == "__main__":
    main()
