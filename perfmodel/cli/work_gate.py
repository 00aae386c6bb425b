"""Long work said before it starts: a command whose estimate is above about a minute or a gigabyte written says so,
and off a terminal (a script, a CI job, a pipe) runs only with --yes.

    gate(command, what, seconds, written_bytes, yes)
        below both limits, or --yes: nothing (the progress bar reports as the work runs)
        on a terminal: one line on stderr with the estimate, then the work (its progress bar shows)
        off a terminal without --yes: ValueError, one line with the estimate and how to run it anyway

The estimates come from rates measured on the development machine (2 cores, 2026-11-28), stated beside each; a
faster machine finishes sooner, so they err long. They decide whether to ask, nothing else.

Does not: run or time the work.
"""

from __future__ import annotations

import sys

LIMIT_S = 60.0  # about a minute
LIMIT_GB = 1.0  # about a gigabyte written

# simulate: 20,000 requests on one replica took 5.1 s (about 170 us each); 2,000 requests over 10,000 prefill and
# 10,000 decode workers 9.2 s: each request also costs about 0.35 us per worker (every worker's queue is visited)
SIM_S_PER_REQUEST = 170e-6
SIM_S_PER_REQUEST_WORKER = 0.35e-6
# sweep: 30,720 configurations of Llama-3-70B decode: CSV 1.3 s and 17.9 MB, Parquet 0.14 s and 4.2 MB; in memory
# (a table shown or an XLSX) as the CSV
SWEEP_ROWS_PER_S = {"csv": 24_000.0, "parquet": 220_000.0}
SWEEP_BYTES_PER_ROW = {"csv": 600.0, "parquet": 140.0}
# calibrate: the neuron family's default fit (190 cases, 8 parameters): 40 s for the final fit, about 13 s a fold;
# a fit's model evaluations grow with cases x parameters
CALIBRATE_FINAL_S, CALIBRATE_FOLD_S, CALIBRATE_SIZE = 40.0, 13.0, 190 * 8


def simulate_seconds(requests: int, workers: int) -> float:
    return requests * (SIM_S_PER_REQUEST + SIM_S_PER_REQUEST_WORKER * workers)


def sweep_estimate(rows: int, kind: str) -> tuple[float, float]:
    """(seconds, bytes written) of a sweep of `rows` configurations to a csv or parquet file (kind)."""
    k = kind if kind in SWEEP_ROWS_PER_S else "csv"
    return rows / SWEEP_ROWS_PER_S[k], rows * SWEEP_BYTES_PER_ROW[k]


def calibrate_seconds(folds: int, cases: int, parameters: int) -> float:
    return (CALIBRATE_FINAL_S + CALIBRATE_FOLD_S * folds) * cases * parameters / CALIBRATE_SIZE


def _time(seconds: float) -> str:
    return f"{seconds / 60:,.0f} min" if seconds >= 120 else f"{seconds:,.0f} s"


def gate(command: str, what: str, seconds: float, written_bytes: float = 0.0, yes: bool = False) -> None:
    """Module doc: nothing, a note on stderr, or a ValueError asking for --yes."""
    from perfmodel.core import units  # here: building the parser imports no model module

    gb = written_bytes / units.GB
    if yes or (seconds <= LIMIT_S and gb <= LIMIT_GB):
        return
    words = f"{what}: about {_time(seconds)}" + (f" and {gb:,.1f} GB written" if gb > LIMIT_GB else "")
    if sys.stderr.isatty():
        print(f"perfmodel {command}: {words} (estimate); running", file=sys.stderr)
        return
    raise ValueError(f"{words} (estimate, on a 2-core machine); pass --yes to run it off a terminal, or make it "
                     "smaller")


def add_yes_option(p) -> None:
    p.add_argument("--yes", "-y", action="store_true",
                   help="run work estimated above a minute or a gigabyte without asking (off a terminal it is "
                        "refused without --yes; on one it is said, then run)")
