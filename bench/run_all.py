"""Run every benchmark in bench/ (one command: python bench/run_all.py)."""

import runpy
import sys
from pathlib import Path

for path in sorted(Path(__file__).parent.glob("bench_*.py")):
    print(f"== {path.name}", flush=True)
    sys.argv = [str(path)]
    runpy.run_path(str(path), run_name="__main__")
