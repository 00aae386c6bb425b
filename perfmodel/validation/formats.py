"""Recognised measurement formats: files read by their columns and adapted to the harness's cases.

The harness reads a measurements file with the columns of reference/published_measurements.csv
(harness.CASE_COLUMNS). A source that publishes its own table (one row per deployment and load
level, several metrics per row) is read *as it is*: a format registered here names the columns
that identify it and an adapter that turns its rows into cases (CASE_COLUMNS, one case per
measured metric, plus the source's own columns for its family, plus `format`, the format's name,
which the family selects on). A file is adapted by the first format whose columns it holds, and
only when it lacks CASE_COLUMNS (a file of cases is always read as cases).

    @register_format("inferencex", columns=("id", "model_path", ..., "silicon_tpot_ms"))
    def adapt(raw: DataFrame) -> DataFrame      # all columns as text; raises FormatError with
                                                # the source row (2 = the first data line)

Formats register from the family modules (harness.FAMILY_MODULES) that predict their cases.
Does not: read files (harness.py does), or predict anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd


class FormatError(ValueError):
    """A row of a recognised format that cannot be a case (the harness adds the file's name)."""


@dataclass(frozen=True)
class Format:
    name: str
    columns: tuple[str, ...]  # all present: the file is this format
    adapt: Callable[[pd.DataFrame], pd.DataFrame]
    doc: str


FORMATS: dict[str, Format] = {}


def register_format(name: str, columns: Iterable[str]):
    """Decorator: add format `name`, recognised by `columns`; the function adapts its rows to cases."""
    def deco(fn: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[pd.DataFrame], pd.DataFrame]:
        doc = (fn.__doc__ or "").strip().splitlines()
        FORMATS[name] = Format(name, tuple(columns), fn, doc[0] if doc else "")
        return fn
    return deco


def recognise(columns: Iterable[str]) -> Format | None:
    """The first registered format whose identifying columns are all in `columns` (None if none is)."""
    have = set(columns)
    return next((f for f in FORMATS.values() if set(f.columns) <= have), None)


def described() -> str:
    """'name (N columns: a, b, ...)' for every registered format, for error messages."""
    return "; ".join(f"{f.name} ({', '.join(f.columns[:4])}, ... {len(f.columns)} columns)" for f in FORMATS.values())
