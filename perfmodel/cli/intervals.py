"""CLI: `--interval LEVEL` for the commands whose answers carry error bars (serve, pareto, plan, roofline), and the
step that attaches them at the edge (the intervals file read here, once: catalog/interval_files.py).

    --interval 0.8   default: each answer with its 80% interval (serving/error_bars.py; the method is in
                     core/intervals.py and the README); 0.9 for 90%; 0 for none
    attach(df, ...)        a serving frame's answers
    attach_step(df, ...)   one roofline step of a serving phase: a decode step from TPOT's regime, a prefill from
                           TTFT's, with no engine (the accelerator's bound: widened, and its basis says so)

Does not: compute intervals (serving/error_bars.py does).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

# core.intervals.DEFAULT_LEVEL, written here so the parser's start-up imports no numpy (tests/test_intervals.py
# checks the two agree)
DEFAULT = 0.8

if TYPE_CHECKING:  # pandas is imported by the commands that build frames (start-up time: cli/parser.py)
    import pandas as pd


def level(text: str) -> float:
    try:
        v = float(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 0.8 (or 0 for none), got {text!r}") from None
    # below 0.5 an interval is narrower than the regime's own interquartile spread; above 0.98 its ends rest on
    # the one or two most extreme models' scores (13-38 models a quantity)
    if not (v == 0 or 0.5 <= v <= 0.98):
        raise argparse.ArgumentTypeError(f"an interval level between 0.5 and 0.98 (or 0 for none), got {text!r}")
    return v


def add_interval_option(p) -> None:
    p.add_argument("--interval", type=level, default=DEFAULT, metavar="LEVEL",
                   help="each latency and throughput with its interval at this level (default 0.8; 0: none), from "
                        "the model's measured residuals in the answer's regime, calibrated model by model "
                        "(hardware_specs/calibration/intervals.json); widened where the answer leaves measured ground")


def attach(df: pd.DataFrame, system, arch, args) -> pd.DataFrame:
    """`df` with its answers' intervals (serving/error_bars.attach) unless --interval 0."""
    if not getattr(args, "interval", 0) or not len(df):
        return df
    from perfmodel.catalog import interval_files
    from perfmodel.serving import error_bars

    return error_bars.attach(df, system, arch, interval_files.load(), args.interval)


# a roofline step's figures by phase: (regime quantity, rates of it, times with it)
STEP = {"decode": ("tpot", ("tokens_per_s_per_user", "tokens_per_s_per_chip", "tokens_per_mw"),
                   ("time_per_output_token_s", "step_time_s", "usd_per_million_tokens")),
        "prefill": ("ttft", ("tokens_per_s_per_chip", "tokens_per_mw"), ("ttft_s", "step_time_s",
                                                                          "usd_per_million_tokens"))}


def attach_step(summary: pd.DataFrame, system, arch, args) -> pd.DataFrame:
    """A roofline summary of a serving phase with its figures' intervals (STEP) unless --interval 0; other phases
    as they are (a training step's regime is `train`'s)."""
    phase = str(summary["phase"].iloc[0]) if len(summary) and "phase" in summary else ""
    if not getattr(args, "interval", 0) or phase not in STEP:
        return summary
    from perfmodel.catalog import interval_files
    from perfmodel.serving import error_bars

    quantity, rates, times = STEP[phase]
    frame = summary.assign(engine="none", concurrency=summary["batch"].astype(float))
    return error_bars.attach_columns(frame, system, arch, interval_files.load(), args.interval, quantity,
                                     rates=rates, times=times).drop(columns=["engine", "concurrency"])


def caption(df: pd.DataFrame) -> str:
    """The intervals' basis for a table's caption: each distinct basis once (at most three, else how many)."""
    if "interval_basis" not in df:
        return ""
    b = list(dict.fromkeys(df["interval_basis"].dropna()))
    if len(b) > 3:
        return (f"INTERVALS: {df['interval_level'].iloc[0]:.0%} from measured residuals by regime, {len(b)} regimes "
                "(column interval_basis in csv / json / xlsx)")
    return "\n".join(f"INTERVALS: {x}" for x in b)
