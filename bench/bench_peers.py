"""Benchmark: perfmodel vs the peer tools on PyPI (llm-analysis, genz-llm) on one shared sweep.

    python bench/bench_peers.py [--budget 25] [--tools llm-analysis genz-llm] [--reinstall]

The sweep, which all three tools can express: Llama-2-7B decode, time per output token (BF16
weights and KV cache), on an A100-SXM-80GB and an H100-SXM-80GB, over batch {1 .. 256} x
context {128 .. 4000 tokens in the KV cache} x tensor parallel {1, 2, 4, 8}, keeping the
configurations whose weights + KV cache fit in 90% of the 80 GB per GPU (so that no tool rejects
one). perfmodel evaluates the grid vectorised (evaluate.evaluate_sweep, one call per GPU) and one
configuration at a time: evaluate.evaluate for up to 3 s, and evaluate.point (the summary row) walked over
the grid as peer_worker walks it for a peer (passes until 3 s have passed), with its first pass (every
configuration new to the process) printed apart. Each peer is installed with pip into
its own throwaway virtual environment, bench/.peers/<tool>/ (git-ignored; never a perfmodel
dependency), and runs bench/peer_worker.py there, looping over the grid in Python for up to
--budget seconds; configs/s counts what ran. A tool that fails to install or run is reported
with the reason and the benchmark goes on.

Prints each tool's configs/s, perfmodel's configs/s on the same grid and the ratios (by wall time
and by CPU time: the CPU-time rates hold up when other work shares the machine), then the
agreement: the decode latency of each tool on a few shared points and the ratio perfmodel / peer
over every configuration a peer ran. Target (issue 21): point() one configuration at a time at least
llm-analysis's configs/s, walked as the peer is walked, as the median of --rounds alternated rounds (each tool
walks the grid for ROUND_S in turn, so that the machine's drift, +-25% here within minutes, weighs on both
alike); a miss exits non-zero (bench/targets.py). All figures
are measured in this run; timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from peer_venv import ensure_peer  # bench/ is on the path of a bench script
from targets import Targets

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate

HERE = Path(__file__).resolve().parent
WORKER = HERE / "peer_worker.py"
# PyPI name -> pinned version (the versions this benchmark was written against)
PEERS = {"llm-analysis": "llm-analysis==0.2.2", "genz-llm": "genz-llm==0.0.16"}

# the shared sweep
WORKLOAD = "llama-2-7b"
GPUS = {"a100": ("dgx-a100-80gb", "A100-SXM-80GB"), "h100": ("p5.48xlarge", "H100-SXM-80GB")}
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
CONTEXTS = (128, 256, 384, 512, 640, 768, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 3840, 4000)
TPS = (1, 2, 4, 8)
# fit filter shared by all tools: Llama-2-7B BF16 weights (6.74e9 parameters x 2 bytes) and KV cache
# (2 x 32 layers x 4096 x 2 bytes per token), split over tp, within 90% of 80 GB per GPU
WEIGHT_BYTES = 6.74e9 * 2
KV_BYTES_PER_TOKEN = 2 * 32 * 4096 * 2
USABLE_BYTES = 0.9 * 80e9
AGREEMENT = (("a100", 1, 1024, 1), ("a100", 16, 2048, 1), ("a100", 64, 2048, 4), ("h100", 1, 1024, 1),
             ("h100", 32, 4000, 2), ("h100", 128, 1024, 8))


def machine_load() -> str:
    """Other work on the machine inflates wall times (CPU-time rates are printed beside them)."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def shared_grid() -> list[tuple[str, int, int, int]]:
    """Every fitting configuration, in a fixed shuffled order (a peer stopped by its time budget has
    then run a sample spread over GPUs, batches, contexts and TP degrees)."""
    grid = []
    for gpu in GPUS:
        for tp in TPS:
            for b in BATCHES:
                for c in CONTEXTS:
                    if (WEIGHT_BYTES + b * (c + 1) * KV_BYTES_PER_TOKEN) / tp <= USABLE_BYTES:
                        grid.append((gpu, b, c, tp))
    return [grid[i] for i in np.random.default_rng(0).permutation(len(grid))]


# ---------------------------------------------------------------- perfmodel


def perfmodel_sweep(grid, repeat: int = 7, budget_s: float = 25.0) -> dict:
    arch = workload_files.load_workload(WORKLOAD)
    systems = {g: catalog.load_system(name) for g, (name, _) in GPUS.items()}
    parts = {}
    for g in GPUS:
        rows = np.array([c[1:] for c in grid if c[0] == g], dtype=float)
        parts[g] = bd.Knobs(phase=Phase.DECODE, batch=rows[:, 0], context=rows[:, 1], tp=rows[:, 2])

    def run_all():
        return {g: evaluate.evaluate_sweep(systems[g], arch, kn) for g, kn in parts.items()}

    t0 = time.perf_counter()
    frames = run_all()  # first call: graph build + lambdify
    cold = time.perf_counter() - t0
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        frames = run_all()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    warm = statistics.median(times)
    latency = {}
    for g, df in frames.items():
        for r in df[["batch", "context", "tp", "time_per_output_token_s"]].itertuples(index=False):
            latency[(g, int(r[0]), int(r[1]), int(r[2]))] = float(r[3])

    # the same model one configuration at a time (a Python loop, as the peers run): evaluate() (summary and
    # per-operator frame, for up to 3 s) and point() (the summary row only: the one-configuration path), walked as
    # peer_worker walks the grid for a peer (passes until MIN_LOOP_S have passed, so that a short burst of other
    # work on the machine weighs no more on perfmodel than on the peer), and its first pass on its own (every
    # configuration new to the process: no collective price or plan count kept from an earlier call)
    loops = {"loop": _walk(evaluate.evaluate, systems, arch, grid, min_s=0.0, budget_s=3.0),
             "point": _walk(evaluate.point, systems, arch, grid, min_s=MIN_LOOP_S, budget_s=budget_s)}
    hbm_eff = {g: calibration_for(s)["hbm_efficiency"] for g, s in systems.items()}
    return {"cold_s": cold, "warm_s": warm, "warm_cpu_s": statistics.median(cpu), "rate": len(grid) / warm,
            "latency": latency, "loops": loops, "hbm_efficiency": hbm_eff}


MIN_LOOP_S = 3.0  # peer_worker's min_s (run_peer): a fast tool walks the grid until this much time has passed


def _walk(fn, systems, arch, grid, min_s: float, budget_s: float) -> dict:
    """peer_worker's loop for a perfmodel function: passes over the grid until min_s have passed, stopping at
    budget_s. n / s / cpu_s: every configuration that ran; first_n / first_s / first_cpu_s: the first pass."""
    n, first, t0, c0 = 0, None, time.perf_counter(), time.process_time()
    while True:
        for g, b, c, tp in grid:
            fn(systems[g], arch, Scenario(Phase.DECODE, batch=b, context=c, parallel=Parallelism(tp=tp)))
            n += 1
            if time.perf_counter() - t0 >= budget_s:
                break
        else:
            first = first or (n, time.perf_counter() - t0, time.process_time() - c0)
            if time.perf_counter() - t0 < min_s:
                continue
        break
    s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    first = first or (n, s, cpu_s)
    return {"n": n, "s": s, "cpu_s": cpu_s, "first_n": first[0], "first_s": first[1], "first_cpu_s": first[2]}


# ---------------------------------------------------------------- peers (own venvs, subprocess)


ROUND_S = 1.0  # seconds each tool walks the grid in one alternated round (--rounds)


def alternated(py: Path, grid, rounds: int) -> list[tuple[float, float, float]]:
    """(point() configs/s, llm-analysis configs/s, ratio) in `rounds` rounds, the two walking the grid in turn."""
    arch = workload_files.load_workload(WORKLOAD)
    systems = {g: catalog.load_system(name) for g, (name, _) in GPUS.items()}
    out = []
    for _ in range(rounds):
        pt = _walk(evaluate.point, systems, arch, grid, min_s=ROUND_S, budget_s=ROUND_S)
        res, err = run_peer("llm-analysis", py, grid, ROUND_S)
        if res is None:
            print(f"llm-analysis round not run: {err}")
            continue
        a, b = pt["n"] / pt["s"], res["done"] / res["seconds"]
        out.append((a, b, a / b))
    return out


def run_peer(tool: str, py: Path, grid, budget_s: float) -> tuple[dict | None, str]:
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job.write_text(json.dumps({"tool": tool, "budget_s": budget_s, "min_s": min(3.0, budget_s),
                                   "agreement": [list(a) for a in AGREEMENT], "grid": [list(c) for c in grid]}))
        try:
            # the peers write scratch files into the working folder (GenZ saves its layer tables): run in tmp
            r = subprocess.run([str(py), str(WORKER), str(job), str(out)], capture_output=True, text=True,
                               timeout=budget_s + 300, cwd=tmp)
        except subprocess.TimeoutExpired:
            return None, "worker timed out"
        if r.returncode or not out.exists():
            tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()][-1:]
            return None, f"worker failed (exit {r.returncode}): {' '.join(tail)}"
        return json.loads(out.read_text()), ""


# ---------------------------------------------------------------- report


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1e3:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=25.0, help="seconds each peer may loop (default 25)")
    ap.add_argument("--tools", nargs="*", default=list(PEERS), choices=list(PEERS), help="peers to run")
    ap.add_argument("--reinstall", action="store_true", help="recreate the peers' virtual environments")
    ap.add_argument("--rounds", type=int, default=5, help="alternated rounds of point() and llm-analysis for the "
                    "target (default 5; each tool walks the grid for ROUND_S per round)")
    args = ap.parse_args()

    grid = shared_grid()
    n_all = len(GPUS) * len(BATCHES) * len(CONTEXTS) * len(TPS)
    print(f"shared sweep: Llama-2-7B decode (BF16), time per output token; {' and '.join(n for _, n in GPUS.values())}"
          f" x batch {BATCHES[0]}..{BATCHES[-1]} ({len(BATCHES)}) x context {CONTEXTS[0]}..{CONTEXTS[-1]} "
          f"({len(CONTEXTS)}) x TP {'/'.join(map(str, TPS))}: {len(grid):,} configurations "
          f"(of {n_all:,}; weights + KV cache within 90% of 80 GB per GPU)", flush=True)

    pm = perfmodel_sweep(grid, budget_s=args.budget)
    ev, pt = pm["loops"]["loop"], pm["loops"]["point"]
    rows = [("perfmodel (vectorised sweep)", "", len(grid), pm["warm_s"], pm["warm_cpu_s"]),
            ("perfmodel (one at a time, evaluate)", "", ev["n"], ev["s"], ev["cpu_s"]),
            ("perfmodel (one at a time, point)", "", pt["n"], pt["s"], pt["cpu_s"]),
            ("  point, first pass (all new)", "", pt["first_n"], pt["first_s"], pt["first_cpu_s"])]
    peers, pythons = {}, {}
    for tool in args.tools:
        py, note = ensure_peer(tool, PEERS[tool], args.reinstall)
        if py is None:
            print(f"{tool}: not run: {note}", flush=True)
            continue
        res, err = run_peer(tool, py, grid, args.budget)
        if res is None:
            print(f"{tool}: not run: {err}", flush=True)
            continue
        peers[tool], pythons[tool] = res, py
        rows.append((tool, res["version"], res["done"], res["seconds"], res["cpu_s"]))
        print(f"{tool} {res['version']} ({note}): {res['api']}", flush=True)
        for msg, n in res["errors"].items():
            print(f"  {tool} rejected {n} configuration(s): {msg}")

    print(f"\n{machine_load()}")
    print(f"perfmodel first sweep call (graph build + lambdify, both GPUs): {pm['cold_s']:.2f} s; "
          f"later calls: median of 7")
    print(f"{'tool':34} {'version':>8} {'configs':>8} {'seconds':>8} {'configs/s':>10} {'perfmodel sweep / tool':>23}"
          f" {'configs/CPU-s':>14} {'ratio (CPU)':>12}")
    pm_cpu_rate = len(grid) / pm["warm_cpu_s"]
    for name, ver, n, s, cpu_s in rows:
        rate, cpu_rate = n / s, n / max(cpu_s, 1e-9)
        print(f"{name:34} {ver:>8} {n:>8,} {s:>8.3f} {rate:>10,.0f} {pm['rate'] / rate:>22,.0f}x"
              f" {cpu_rate:>14,.0f} {pm_cpu_rate / cpu_rate:>11,.0f}x")

    print("\nagreement: decode latency per output token (ms) on shared points; ratio = perfmodel / peer")
    head = f"{'GPU':14} {'batch':>5} {'context':>7} {'TP':>3} {'perfmodel':>10}"
    for tool in peers:
        head += f" {tool:>13} {'ratio':>6}"
    print(head)
    for i, (g, b, c, tp) in enumerate(AGREEMENT):
        p = pm["latency"].get((g, b, c, tp))
        line = f"{GPUS[g][1]:14} {b:>5} {c:>7} {tp:>3} {_ms(p):>10}"
        for tool, res in peers.items():
            v = res["agreement"][i]
            line += f" {_ms(v):>13} {(p / v if v and p else float('nan')):>6.2f}"
        print(line)
    for tool, res in peers.items():
        ratios = [pm["latency"][tuple(grid[i])] / v for i, v in enumerate(res["latency_s"]) if v]
        if ratios:
            q = np.percentile(ratios, [0, 50, 100])
            print(f"perfmodel / {tool} over the {len(ratios):,} configurations it ran: median {q[1]:.2f}, "
                  f"range {q[0]:.2f}..{q[2]:.2f}")
    print("(perfmodel applies its calibrated HBM efficiency, "
          + ", ".join(f"{GPUS[g][1]} {e:.2f}" for g, e in pm["hbm_efficiency"].items())
          + ", and per-operator overheads; llm-analysis and GenZ run at their default efficiency 1.0)")
    if "llm-analysis" in peers:
        peer = peers["llm-analysis"]
        print(f"point() one at a time / llm-analysis, the runs above: "
              f"{pt['n'] / pt['s'] / (peer['done'] / peer['seconds']):.2f}x configs/s")
        rounds = alternated(pythons["llm-analysis"], grid, args.rounds) if args.rounds > 0 else []
        if rounds:
            targets, ratio = Targets(), statistics.median(r[2] for r in rounds)
            print(f"alternated rounds ({ROUND_S:g} s each; point() / llm-analysis configs/s): "
                  + ", ".join(f"{a:,.0f} / {b:,.0f} = {r:.2f}x" for a, b, r in rounds) + f"  ({machine_load()})")
            print(f"point() / llm-analysis, median of {len(rounds)} alternated rounds: {ratio:.2f}x (target >= 1x: "
                  f"{targets.at_least('point() / llm-analysis', ratio, 1.0, 'x')})")
            targets.exit()


if __name__ == "__main__":
    main()
