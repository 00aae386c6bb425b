"""What is wrong with one row of a measurements file, row by row: a bad row is listed, the others are predicted.

    row_problems(df)   per row: '' or why it cannot be a case (its value is not a positive number; a count column
                       holds a number that is not a whole count in range; a parallel degree that is not one),
                       naming the field and the value
    first(df, ...)     the first problem as the one line `--strict` stops with (file, row, case, field, value)

Counts in COUNT_COLUMNS: every number written there (a token such as '16', '1e3', '-4', 'nan'; not the 16 of
'16K') must be a whole number in [1, ceiling]; text without a number is left to the families (which give a
reason when they cannot read it), and so is a request rate a load cell states ('asynchronous@0.40 req/sec',
'constant 0.85 req/s': a rate, not a count). Parallel degrees in the parallelism column: TP8, PP 4, DP32 ('FSDP' is a
word, not a degree).

Does not: read files (harness.py) or predict.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfmodel.core import limits

COUNT_COLUMNS = {"num_chips": limits.MAX_CHIPS, "batch": limits.MAX_BATCH, "input_len": limits.MAX_SEQ_TOKENS,
                 "output_len": limits.MAX_SEQ_TOKENS}
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)(?![\w.])", re.IGNORECASE)
# a length cell as benchmark clients write a spread of lengths: 'L (random range ratio r)' (uniform in [r L, L]) or
# 'L (+/-p%)' (uniform about L); the one grammar the row check and the serving reader share
RANGE_RATIO = re.compile(r"(\d+)\s*\((?:random,?\s*)?range ratio\s*(0?\.\d+|[01](?:\.0*)?)\)", re.IGNORECASE)
PLUS_MINUS = re.compile(r"~?(\d+)\s*\((?:\+/-|±)\s*(\d+(?:\.\d+)?)\s*%\)")


def length_spread(text) -> tuple[int, float] | None:
    """(longest length L, range ratio r: lengths uniform in [r L, L]) of a spread length cell, else None."""
    s = str(text).strip()
    if (m := RANGE_RATIO.fullmatch(s)) is not None:
        return int(m.group(1)), float(m.group(2))
    if (m := PLUS_MINUS.fullmatch(s)) is not None:
        p = float(m.group(2)) / 100.0
        return round(int(m.group(1)) * (1 + p)), (1 - p) / (1 + p)
    return None
RATE = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*req(?:uests)?\s*/\s*s(?:ec)?\b", re.IGNORECASE)  # a load's request rate
_DEGREE = re.compile(r"\b(TP|PP|DP|EP|CP)\s*([-+]?(?:\d[\w.+-]*|nan|inf\w*))", re.IGNORECASE)


def _count_problem(text: str, hi: int) -> str | None:
    """Why a number written in `text` is not a count in [1, hi] (None when every number is one)."""
    for tok in _NUMBER.findall(text):
        v = float(tok)
        if not (np.isfinite(v) and v.is_integer() and 1 <= v <= hi):
            return f"{tok!r} is not a whole number between 1 and {hi:,}"
    return None


def _degree_problem(text: str) -> str | None:
    """Why a parallel degree written in `text` (TP8, PP 4) is not a count in [1, MAX_CHIPS] (None when none)."""
    for m in _DEGREE.finditer(text):
        if not _NUMBER.fullmatch(m.group(2)) or _count_problem(m.group(2), limits.MAX_CHIPS):
            return f"{m.group(1)} degree {m.group(2)!r} is not a whole number between 1 and {limits.MAX_CHIPS:,}"
    return None


def _one(row: pd.Series) -> tuple[str, str]:
    """(field, why) of a row's first problem, or ('', '')."""
    v = pd.to_numeric(row["value"], errors="coerce")
    if not (np.isfinite(v) and v > 0):
        return "value", f"{row['value']!r} is not a positive number"
    for col, hi in COUNT_COLUMNS.items():
        spread = length_spread(row[col]) if col.endswith("_len") else None
        text = RATE.sub("", row[col]) if col == "batch" else row[col]
        why = _count_problem(str(spread[0]) if spread else text, hi)
        if why:
            return col, f"{why} (got {row[col][:80]!r})"
    why = _degree_problem(row["parallelism"])
    return ("parallelism", f"{why} (got {row['parallelism'][:80]!r})") if why else ("", "")


def row_problems(df: pd.DataFrame) -> pd.Series:
    """Per row, '' or 'field F: why' (module doc)."""
    return pd.Series([f"field {f!r}: {w}" if f else "" for f, w in (_one(r) for _, r in df.iterrows())],
                     index=df.index, dtype=object)


def first(df: pd.DataFrame, problems: pd.Series, path: str) -> str:
    """The first row with a problem as one line: file, row (the file's line), case, field and value."""
    i = problems.index[problems.ne("")][0]
    return f"{path}: row {i + 2} (case {df.at[i, 'case_id']!r}) {problems[i]}"
