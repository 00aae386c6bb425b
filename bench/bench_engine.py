"""Benchmark: the sweep engine's configurations per second, chunked 100M sweep, Dask vs in-process.

    python bench/bench_engine.py [--big 100000000] [--dask 4000000] [--quick]

(a) single-device decode and (b) single-device prefill metrics (step time, tokens/s, MFU, engine
busy times: evaluate_sweep's columns), (c) multi-device training with communication
(training.step_arrays: collectives priced per configuration, bubble, exposed / hidden comm), each
through sweep.iter_chunks (index arrays -> value arrays -> one vectorised evaluation -> one
DataFrame per chunk), on 1 thread and on 2 threads of this process; then a chunked sweep of
--big configurations (default 100M; peak resident memory sampled every 20 ms) and a Dask
LocalCluster (2 worker processes, 1 thread each) against the in-process engine on the same sweeps,
once with every row sent back to this process (--dask / 4 configurations) and once with each chunk
reduced to its best row on the worker (--dask configurations); the cluster's start and the
workers' first compile are timed apart. The sink keeps nothing (rows counted), so the figures are
the engine's, not a file system's. Every figure is measured in this run; the machine's load
average is printed (other processes share the cores). A one-thread rate below its target (RATE_TARGETS) exits
non-zero naming it (bench/targets.py). Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

from targets import Targets  # bench/ is on the path of a bench script

from perfmodel import catalog
from perfmodel.sweep.engine import SweepSpec
from perfmodel.sweep.run import run_sweep

SYSTEM = "trn2-ultraserver"
# configs/s on one thread (the README's Performance table): decode and prefill metrics >= 1M/s, training with
# communication >= 100k/s, for the dense model of each case
RATE_TARGETS = {("(a)", "llama-3-8b"): 1e6, ("(b)", "llama-3-8b"): 1e6, ("(c)", "llama-3-70b"): 1e5}
TARGETS = Targets()
CASES = [  # (label, workload, phase, grid, fixed)
    ("(a) decode, 1 device", "llama-3-8b", "decode",
     {"batch": "1:1024", "context": "256:131072:256", "kv_cache": "bf16,fp8"}, {}),
    ("(a) decode, 1 device", "deepseek-v3", "decode",
     {"batch": "1:1024", "context": "256:131072:256", "kv_cache": "bf16,fp8"}, {}),
    ("(b) prefill, 1 device", "llama-3-8b", "prefill",
     {"batch": "1:512", "seq_len": "128:131072:128", "compute": "bf16,fp8"}, {}),
    ("(b) prefill, 1 device", "deepseek-v3", "prefill",
     {"batch": "1:512", "seq_len": "128:131072:128", "compute": "bf16,fp8"}, {}),
    ("(c) train, with comm", "llama-3-70b", "train",
     {"seq_len": "2048,4096,8192", "tp": "1,2,4,8,16,32,64", "pp": "1,2,4,8", "dp": "1:64", "microbatches": "4,8,16,32",
      "zero": "0:3"}, {}),
    ("(c) train, with comm", "deepseek-v3", "train",
     {"seq_len": "2048,4096,8192", "tp": "1,2,4,8,16,32,64", "pp": "1,2,4,8", "dp": "1:64", "microbatches": "4,8,16,32",
      "zero": "0:3"}, {"ep": 1}),
]


class Rows:
    """A sink that keeps nothing: counts rows."""

    def __init__(self):
        self.n = 0

    def __call__(self, df):
        self.n += len(df)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed_sweep(spec: SweepSpec, **kw) -> tuple[float, int, float]:
    """(seconds, rows, peak RSS in MB sampled while it runs)."""
    peak, stop = [rss_mb()], threading.Event()

    def sample():
        while not stop.wait(0.02):
            peak.append(rss_mb())

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    sink = Rows()
    t0 = time.perf_counter()
    run_sweep(spec, sink, progress=False, **kw)
    t = time.perf_counter() - t0
    stop.set()
    th.join()
    return t, sink.n, max(peak)


def _spec(workload: str, phase: str, **kw) -> SweepSpec:
    """A sweep of SYSTEM and a catalogue workload (records resolved here, at the edge)."""
    return SweepSpec(catalog.load_system(SYSTEM), catalog.load_workload(workload), phase, **kw)


def warm(workload: str, phase: str) -> None:
    fixed = {"context": 8} if phase == "decode" else {}
    run_sweep(_spec(workload, phase, grid={"batch": [1, 2]}, fixed=fixed), progress=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", type=int, default=100_000_000, help="configurations in the chunked sweep (default 100M)")
    ap.add_argument("--dask", type=int, default=4_000_000, help="configurations in the Dask comparison")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--quick", action="store_true", help="(a)-(c) only")
    ap.add_argument("--skip-cases", action="store_true", help="no (a)-(c)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"{SYSTEM}, {os.cpu_count()} CPUs (load average {load:.1f} at the start), chunk {args.chunk:,}; "
          f"configurations per second (rows counted, nothing kept)")
    for label, wl, phase, grid, fixed in ([] if args.skip_cases else CASES):
        spec = _spec(wl, phase, grid=grid, fixed=fixed)
        warm(wl, phase)
        t1, n, _ = timed_sweep(spec, chunk_size=args.chunk, workers=1)
        t2, _, _ = timed_sweep(spec, chunk_size=args.chunk, workers=2)
        aim = RATE_TARGETS.get((label[:3], wl))
        verdict = f"; target {aim:,.0f}/s on 1 thread: {TARGETS.at_least(f'{label} {wl}', n / t1, aim, '/s')}" \
            if aim else ""
        print(f"  {label:22s} {wl:12s} {n:>10,} configs: 1 thread {n / t1:>11,.0f}/s   "
              f"2 threads {n / t2:>11,.0f}/s ({t1 / t2:.2f}x){verdict}")
    if args.quick:
        TARGETS.exit()
        return

    # chunked sweep of --big configurations: decode, llama-3-8b, batch x context
    side = int(round(args.big ** 0.5))
    spec = _spec("llama-3-8b", "decode", grid={"batch": f"1:{side}", "context": f"1:{args.big // side}"})
    size = spec.size
    warm("llama-3-8b", "decode")
    before = rss_mb()
    t, n, peak = timed_sweep(spec, chunk_size=args.chunk, workers=2)
    print(f"chunked sweep: {n:,} decode configurations (llama-3-8b, batch x context) in {t:.1f} s = {n / t:,.0f}/s "
          f"on 2 threads; resident memory {before:,.0f} MB before, peak {peak:,.0f} MB during "
          f"(+{peak - before:,.0f} MB; the rows would be {size * 40 * 8 / 2 ** 30:,.0f} GiB at 40 columns)")

    # Dask LocalCluster (2 processes x 1 thread) vs in-process, the same sweeps and sinks: (1) every row travels
    # back to this process; (2) each chunk is reduced where it is evaluated to its best row (a typical huge sweep)
    from dask.distributed import Client

    from perfmodel.sweep.run import local_cluster

    def best(df):
        return df.nlargest(1, "tokens_per_s_per_chip")

    def square(n):
        side = int(round(n ** 0.5))
        return _spec("llama-3-8b", "decode", grid={"batch": f"1:{side}", "context": f"1:{n // side}"})

    rows_spec, reduce_spec = square(args.dask // 4), square(args.dask)
    local = {(k, w): timed_sweep(sp, chunk_size=args.chunk, workers=w, reduce=red)[0]
             for k, sp, red in (("rows", rows_spec, None), ("reduce", reduce_spec, best)) for w in (1, 2)}
    t0 = time.perf_counter()
    with local_cluster(2) as cluster, Client(cluster) as client:
        t_start = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_sweep(_spec("llama-3-8b", "decode", grid={"batch": "1:4"}, fixed={"context": 8}),
                  progress=False, client=client, chunk_size=1)  # each worker imports and compiles once
        t_warm = time.perf_counter() - t0
        dask = {"rows": timed_sweep(rows_spec, chunk_size=args.chunk, client=client)[0],
                "reduce": timed_sweep(reduce_spec, chunk_size=args.chunk, client=client, reduce=best)[0]}
    print(f"Dask LocalCluster, 2 worker processes x 1 thread (sweep_run.local_cluster) [cluster start {t_start:.1f} s "
          f"and the workers' first compile {t_warm:.1f} s not counted]:")
    for k, sp, what in (("rows", rows_spec, "every row back to this process"),
                        ("reduce", reduce_spec, "each chunk reduced to its best row on the worker")):
        n = sp.size
        print(f"  {what:50s} {n:>10,} configs: Dask {n / dask[k]:>11,.0f}/s; in-process 1 thread "
              f"{n / local[(k, 1)]:>11,.0f}/s, 2 threads {n / local[(k, 2)]:>11,.0f}/s; Dask / in-process "
              f"{local[(k, 1)] / dask[k]:.2f}x (1 thread), {local[(k, 2)] / dask[k]:.2f}x (2 threads)")
    TARGETS.exit()


if __name__ == "__main__":
    main()
