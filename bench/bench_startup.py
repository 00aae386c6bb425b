"""Benchmark: command-line start-up and what a user waits for, cold (empty caches) and warm, wall time.

    python bench/bench_startup.py [--runs 7] [--report-runs 3] [--no-report]

Each figure is the median wall time of several fresh processes (subprocess, output discarded),
measured in this run: `perfmodel --help` (target: under 0.5 s; the parser imports no model
module, see perfmodel/cli/parser.py), `perfmodel roofline ...` (one scenario), `perfmodel report`
(every case on every system) and `perfmodel claims` (the 73 seed claims). "Cold" runs with an empty
cache folder (PERFMODEL_CACHE_DIR: graphs compiled, claims computed), "warm" with the folder the
cold run filled (graphs read back, claims read back: model/graph/cache.py, claims/result_cache.py).
Targets (issue 21, the 2-core machine): report < 10 s cold and < 3 s warm, claims < 5 s warm,
roofline < 0.5 s warm; a miss exits non-zero naming it (bench/targets.py). Timing lives here, never in unit
tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from targets import Targets  # bench/ is on the path of a bench script

HELP_TARGET_S = 0.5


def machine_load() -> str:
    """Other work on the machine inflates wall times: say how busy it was."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def perfmodel_cmd() -> list[str]:
    """The installed console script next to this interpreter, else `python -m perfmodel`."""
    script = Path(sys.executable).with_name("perfmodel")
    if script.exists():
        return [str(script)]
    found = shutil.which("perfmodel")
    return [found] if found else [sys.executable, "-m", "perfmodel"]


CPU = {}  # argv tuple -> median CPU seconds (user + system) of the child processes


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wall(argv: list[str], runs: int, cache: str | None = None) -> tuple[float, list[float]]:
    """Median wall time (and, in CPU, the median CPU time) of `runs` fresh processes (cache: their
    PERFMODEL_CACHE_DIR)."""
    times, cpu = [], []
    env = {**os.environ, **({"PERFMODEL_CACHE_DIR": cache} if cache else {})}
    for _ in range(runs):
        c0, t0 = _child_cpu(), time.perf_counter()
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        times.append(time.perf_counter() - t0)
        cpu.append(_child_cpu() - c0)
        if r.returncode not in (0,):
            raise SystemExit(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    CPU[tuple(argv)] = statistics.median(cpu)
    return statistics.median(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of the quick commands (default 7)")
    ap.add_argument("--report-runs", type=int, default=3, help="runs of `perfmodel report` (default 3)")
    ap.add_argument("--no-report", action="store_true", help="skip `perfmodel report` (about a minute per run)")
    args = ap.parse_args()
    cmd = perfmodel_cmd()
    # a normal interpreter writes perfmodel's bytecode on its first import; where PYTHONDONTWRITEBYTECODE is set
    # (as on the development machine) every process would compile the changed modules again: compile them once
    import compileall

    import perfmodel
    compileall.compile_dir(str(Path(perfmodel.__file__).parent), quiet=1)
    print(f"command: {' '.join(cmd)}; median wall time of fresh processes; perfmodel's bytecode compiled; "
          f"{machine_load()}")

    base, _ = wall([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass (interpreter start-up):   {base:6.3f} s")
    help_s, runs = wall(cmd + ["--help"], args.runs)
    verdict = TARGETS.at_most("perfmodel --help", help_s, HELP_TARGET_S, " s")
    print(f"perfmodel --help:                         {help_s:6.3f} s  (runs {', '.join(f'{t:.3f}' for t in runs)}; "
          f"CPU {CPU[tuple(cmd + ['--help'])]:.3f} s; target {HELP_TARGET_S} s: {verdict})")
    sub_s, _ = wall(cmd + ["report", "--help"], args.runs)
    print(f"perfmodel report --help:                  {sub_s:6.3f} s  (loads the report package for the option defaults)")
    roof = ["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--phase", "decode",
            "--batch", "64", "--context", "4096", "--tp", "4"]
    with tempfile.TemporaryDirectory(prefix="perfmodel-cache-") as cache:
        cold, _ = wall(cmd + roof, 1, cache)
        warm, _ = wall(cmd + roof, max(1, min(args.runs, 3)), cache)
        print(f"perfmodel roofline (one scenario):        {warm:6.3f} s warm, {cold:.2f} s cold  "
              f"(target < {LIMITS['roofline']} s warm: {_verdict('roofline warm', warm, 'roofline')})")
        if args.no_report:
            TARGETS.exit()
            return
        cold, _ = wall(cmd + ["report"], 1, cache)
        warm, runs = wall(cmd + ["report"], args.report_runs, cache)
        times = ", ".join(f"{t:.2f}" for t in runs)
        print(f"perfmodel report (default):               {warm:6.2f} s warm (runs {times}; "
              f"CPU {CPU[tuple(cmd + ['report'])]:.2f} s), {cold:.1f} s cold  (targets < {LIMITS['report_warm']} s "
              f"warm: {_verdict('report warm', warm, 'report_warm')}; < {LIMITS['report_cold']} s cold: "
              f"{_verdict('report cold', cold, 'report_cold')})")
        cold, _ = wall(cmd + ["claims"], 1, cache)
        warm, runs = wall(cmd + ["claims"], args.report_runs, cache)
        times = ", ".join(f"{t:.2f}" for t in runs)
        print(f"perfmodel claims (73 claims):             {warm:6.2f} s warm (runs {times}), {cold:.1f} s cold  "
              f"(target < {LIMITS['claims_warm']} s warm: {_verdict('claims warm', warm, 'claims_warm')})")
    print(f"after the runs: {machine_load()}")
    TARGETS.exit()


LIMITS = {"roofline": 0.5, "report_warm": 3.0, "report_cold": 10.0, "claims_warm": 5.0}  # seconds (issue 21)
TARGETS = Targets()


def _verdict(what: str, t: float, limit: str) -> str:
    return TARGETS.at_most(what, t, LIMITS[limit], " s")


if __name__ == "__main__":
    main()
