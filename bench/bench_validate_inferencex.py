"""Benchmark: `perfmodel validate` on the InferenceX serving corpus (1,684 rows, 3,368 cases), wall time.

    python bench/bench_validate_inferencex.py [--runs 3]

Each figure is the median wall time of fresh processes (subprocess, output discarded) of
`perfmodel validate --cases reference/inferencex_serving_dev.csv --show summary` (target: under
60 s on a 2-core machine; issue 16), plus, in this process, run_cases cold (graph compiles
included) and warm (graphs cached: the serving evaluations alone); then the fitted serving-engine
parameters refit on the same file beside the shipped ones (hardware_specs/serving/engines.toml). A time
over the target, or a shipped parameter the refit does not reproduce, exits non-zero (bench/targets.py).
Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from targets import Targets  # bench/ is on the path of a bench script

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "reference" / "inferencex_serving_dev.csv"
TARGET_S = 60.0
TARGETS = Targets()


def cli_seconds(runs: int) -> list[float]:
    script = Path(sys.executable).with_name("perfmodel")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "perfmodel"]
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd + ["validate", "--cases", str(CASES), "--show", "summary"], check=True,
                       stdout=subprocess.DEVNULL, cwd=ROOT)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh CLI processes to time (median shown)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    from perfmodel import validation

    t0 = time.perf_counter()
    df = validation.run_cases(CASES)
    cold = time.perf_counter() - t0
    validation.harness._read_version.cache_clear()
    t0 = time.perf_counter()
    validation.run_cases(CASES)
    warm = time.perf_counter() - t0
    pred = int(df["predicted"].notna().sum())
    print(f"run_cases: {len(df):,} cases ({pred:,} predicted) cold {cold:.1f} s (graph compiles included), "
          f"warm {warm:.1f} s ({len(df) / warm:,.0f} cases/s)")
    times = cli_seconds(args.runs)
    med = statistics.median(times)
    print(f"perfmodel validate --cases {CASES.relative_to(ROOT)} --show summary: median {med:.1f} s over "
          f"{len(times)} runs ({', '.join(f'{t:.1f}' for t in times)}); target < {TARGET_S:.0f} s: "
          f"{TARGETS.at_most('perfmodel validate (InferenceX)', med, TARGET_S, ' s')}")
    refit()
    TARGETS.exit()


def refit() -> None:
    """The shipped fitted engine parameters against a fresh fit on the same file (provenance check)."""
    from perfmodel.catalog import serving_engines
    from perfmodel.validation import engine_fit

    t0 = time.perf_counter()
    fitted = engine_fit.fit(engine_fit.table(str(CASES)))
    print(f"engine fit: {time.perf_counter() - t0:.1f} s")
    for name, values in fitted.items():
        shipped = serving_engines.protocol("inferencex") if name == "prefill_utilization" else \
            serving_engines.engine(name)
        pairs = {name: values} if name == "prefill_utilization" else values
        for key, v in pairs.items():
            have = shipped[key]
            same = abs(have - v) <= max(0.01 * abs(v), 1e-6)  # the file keeps 3 significant digits
            print(f"  {name}.{key}: shipped {have:.6g}, refit {v:.6g}: {'reproduces' if same else 'DIFFERS'}")
            if not same:
                TARGETS.missed.append(f"{name}.{key} shipped {have:.6g}, refit {v:.6g}")


if __name__ == "__main__":
    main()
