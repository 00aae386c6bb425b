"""Fidelity as a test gate: each development corpus's error statistics per family and metric may not get worse.

For every corpus in reference/fidelity_limits.toml, `measure` runs the corpus through the model (harness.run_cases)
and groups the predicted cases by (family, metric); a group with fewer than MIN_CASES predicted cases joins its
family's ("all" metrics) group. The limits file holds, per group, what the model gave when it was written plus a
stated margin:

    median |error|  <= today x (1 + MARGIN_REL) + MARGIN_ABS
    p90 |error|     <= today x (1 + MARGIN_REL) + MARGIN_ABS
    predicted       >= today (coverage may not shrink)

so a change that makes any group worse than that fails the suite (tests/test_fidelity_gate.py); a change that
makes fidelity better passes, and rewriting the file (`python -m perfmodel.validation.fidelity_gate --write`,
recorded in the file with its date) tightens the gate. Nothing here is fitted: the limits are measurements of the
model, not parameters of it.

Does not: change a prediction, or read the held-out measurements (only the development files named in the limits).
"""

from __future__ import annotations

import datetime
import math
import sys
from pathlib import Path

import pandas as pd
import tomli_w

from perfmodel.catalog.files import read_toml
from perfmodel.validation import harness

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "reference" / "fidelity_limits.toml"
CORPORA = ("reference/published_measurements.csv", "reference/inferencex_serving_dev.csv",
           "reference/training_public_dev.csv", "reference/neuron_trn2_vllm.csv", "reference/public_serving_dev.csv")
MIN_CASES = 5  # a smaller (family, metric) group's median is one or two rows: it joins its family's group
MARGIN_REL, MARGIN_ABS = 0.10, 0.01  # room for numerical noise and small legitimate trades, stated once


def measure(corpus: str) -> pd.DataFrame:
    """(family, metric) groups of a corpus: cases, predicted, median and p90 |error| (fractions)."""
    df = harness.run_cases(ROOT / corpus)
    df = df[df["family"].ne("")]
    counts = df[pd.to_numeric(df["error_frac"], errors="coerce").notna()].groupby(["family", "metric"]).size()
    small = {k for k, n in counts.items() if n < MIN_CASES}
    df = df.assign(metric=[("all" if (f, m) in small else m) for f, m in zip(df["family"], df["metric"])])
    s = harness.summary(df, ["family", "metric"])
    return s[["family", "metric", "cases", "predicted", "median_abs_error_frac", "p90_abs_error_frac"]]


def _up(x: float) -> float:
    """A limit rounded up to 0.1 percentage point (a file people read)."""
    return math.ceil(x * 1000.0) / 1000.0


def limits_of(measured: pd.DataFrame) -> list[dict]:
    out = []
    for _, r in measured[measured["predicted"].gt(0)].iterrows():
        out.append({"family": r["family"], "metric": r["metric"], "min_predicted": int(r["predicted"]),
                    "max_median_abs_error": _up(r["median_abs_error_frac"] * (1 + MARGIN_REL) + MARGIN_ABS),
                    "max_p90_abs_error": _up(r["p90_abs_error_frac"] * (1 + MARGIN_REL) + MARGIN_ABS),
                    "today_median_abs_error": round(float(r["median_abs_error_frac"]), 4),
                    "today_p90_abs_error": round(float(r["p90_abs_error_frac"]), 4)})
    return out


def failures(measured: pd.DataFrame, limits: list[dict]) -> list[str]:
    """One line per group that is worse than its limit (or gone)."""
    have = measured.set_index(["family", "metric"])
    out = []
    for lim in limits:
        k = (lim["family"], lim["metric"])
        if k not in have.index:
            out.append(f"{k[0]} / {k[1]}: no predicted cases any more (had {lim['min_predicted']})")
            continue
        r = have.loc[k]
        if r["predicted"] < lim["min_predicted"]:
            out.append(f"{k[0]} / {k[1]}: {r['predicted']} predicted cases, fewer than {lim['min_predicted']}")
        for stat, col in (("median", "median_abs_error_frac"), ("p90", "p90_abs_error_frac")):
            if r[col] > lim[f"max_{stat}_abs_error"]:
                out.append(f"{k[0]} / {k[1]}: {stat} |error| {r[col]:.1%} above its limit "
                           f"{lim[f'max_{stat}_abs_error']:.1%} (was {lim[f'today_{stat}_abs_error']:.1%})")
    return out


def load(path: Path = LIMITS) -> dict[str, list[dict]]:
    return {c["corpus"]: c["groups"] for c in read_toml(path)["corpora"]}


def write(path: Path = LIMITS) -> None:
    doc = {"written": datetime.date.today().isoformat(),
           "command": "python -m perfmodel.validation.fidelity_gate --write",
           "rule": (f"per (family, metric) group of at least {MIN_CASES} predicted cases (smaller ones: the family's "
                    f"'all'): median and p90 |error| at most today's x {1 + MARGIN_REL:g} + {MARGIN_ABS:g}, "
                    "predicted cases at least today's"),
           "corpora": [{"corpus": c, "groups": limits_of(measure(c))} for c in CORPORA]}
    path.write_text("# Fidelity limits: a change that makes a group worse fails tests/test_fidelity_gate.py.\n"
                    "# Written by the command below (perfmodel/validation/fidelity_gate.py); not fitted.\n"
                    + tomli_w.dumps(doc))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"]:
        write()
        print(f"wrote {LIMITS}")
        return 0
    bad = [f"{c}: {line}" for c, lim in load().items() for line in failures(measure(c), lim)]
    print("\n".join(bad) or "every group within its limit")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
