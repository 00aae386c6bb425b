"""A peer tool in its own throwaway virtual environment, bench/.peers/<tool>/ (git-ignored; never a
perfmodel dependency): created and pip-installed on first use, reused while its pinned spec holds.
Used by bench_peers.py and bench_aiconfigurator.py; not a benchmark itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PEERS_DIR = Path(__file__).resolve().parent / ".peers"


def venv_python(tool: str) -> Path:
    return PEERS_DIR / tool / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_peer(tool: str, spec: str, reinstall: bool = False) -> tuple[Path | None, str]:
    """The peer's venv python (created and `pip install spec` if missing or pinned differently), or None
    and the reason (a failed install is reported, never raised: the benchmark goes on)."""
    venv, py, stamp = PEERS_DIR / tool, venv_python(tool), PEERS_DIR / tool / ".installed"
    if not reinstall and py.exists() and stamp.exists() and stamp.read_text().strip() == spec:
        return py, "already installed"
    t0 = time.perf_counter()
    try:
        PEERS_DIR.mkdir(exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True,
                           check=False, timeout=300)
        if r.returncode:
            return None, f"venv creation failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", spec], capture_output=True, text=True,
                           check=False, timeout=1800)
        if r.returncode:
            lines = [ln for ln in (r.stderr + r.stdout).strip().splitlines() if "WARNING" not in ln]
            return None, f"pip install {spec} failed: {' | '.join(lines[-3:])}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"install failed: {type(exc).__name__}: {exc}"
    stamp.write_text(spec + "\n")
    return py, f"installed {spec} in {time.perf_counter() - t0:.0f} s"
