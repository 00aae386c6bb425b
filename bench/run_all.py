"""Run every benchmark in bench/ (one command: python bench/run_all.py).

Every bench/bench_*.py runs, in name order; among them bench_app.py (the app's what-if recompute
time), bench_peers.py (perfmodel vs llm-analysis and genz-llm on one sweep; its first run installs
the peers into bench/.peers/, a few minutes), bench_aiconfigurator.py (perfmodel vs NVIDIA's
aiconfigurator on the InferenceX rows both express; its first run installs it, ~2 minutes) and
bench_startup.py (`perfmodel --help` and `perfmodel report` wall time). bench/peer_worker.py and
bench/aiconfigurator_worker.py are not benchmarks: the peer benchmarks run them inside each peer's
virtual environment.
"""

import runpy
import sys
from pathlib import Path


def main() -> int:
    """Every benchmark in turn; one that exits non-zero (a missed target: bench/targets.py) is reported with what
    it missed, and the rest still run."""
    misses = []
    for path in sorted(Path(__file__).parent.glob("bench_*.py")):
        print(f"== {path.name}", flush=True)
        sys.argv = [str(path)]
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):  # a message (bench/targets.py: the figures missed) or a status
                misses.append(f"{path.name} ({exc.code if isinstance(exc.code, str) else f'exit {exc.code}'})")
    print(f"== {len(misses)} benchmark(s) exited non-zero: {', '.join(misses)}" if misses
          else "== every benchmark exited 0", flush=True)
    return 1 if misses else 0


if __name__ == "__main__":  # Dask's worker processes import this module again: they must not run the benchmarks
    raise SystemExit(main())
