"""An answer and its interval in one cell for people: "17.6 (15.0-21.1)" under the answer's header.

A frame column X with X_low and X_high beside it (serving/error_bars.py) is shown, in tables, Markdown and HTML, as
one text column X: the value, then its interval in brackets, each scaled to X's display unit; X_low and X_high
are dropped from the view. CSV, JSON and XLSX keep the three numeric columns.

Does not: compute intervals or choose units (export.display_name does).
"""

from __future__ import annotations

import pandas as pd


def sig(v: float) -> str:
    """Three significant figures, thousands separated: an interval's ends are no more exact than that."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def cell(v: float, lo: float, hi: float) -> str:
    """ "17.6 (15-21.1)": a value and its interval in one cell's text."""
    return f"{sig(v)} ({sig(lo)}-{sig(hi)})"


def merge(df: pd.DataFrame, scale: bool, fmt, unit_of) -> pd.DataFrame:
    """`df` with each X / X_low / X_high trio as one text column X (three significant figures each; `fmt` for a
    value without its interval) and `unit_of(col)` giving (display name, divisor)."""
    trios = [c for c in df.columns if f"{c}_low" in df.columns and f"{c}_high" in df.columns]
    if not trios:
        return df
    out = df.drop(columns=[f"{c}_{e}" for c in trios for e in ("low", "high")])
    for c in trios:
        div = unit_of(str(c))[1] if scale else 1.0
        v, lo, hi = (pd.to_numeric(df[k], errors="coerce") / div for k in (c, f"{c}_low", f"{c}_high"))
        out[c] = [fmt(a) if pd.isna(b) or pd.isna(h) else cell(a, b, h)
                  for a, b, h in zip(v, lo, hi)]
    return out
