"""Request traces (`simulate --trace`, `plan --trace`): a CSV read and checked here, where files are read, as plain
columns the simulation builds its requests from (simulation/traffic.requests_of).

    columns   arrival_s (s, in time order), input_tokens, output_tokens (whole numbers >= 1); optional prefix_id
              (-1: none) and prefix_tokens (a shared prefix's length)
    read(path, max_tokens)   the columns as numpy arrays; one line naming file, row, column and value on bad input,
                             and a request past `max_tokens` (the model's positions) refused naming its row

Does not: build requests or simulate (simulation/traffic.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.core import input_files

TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")
TRACE_OPTIONAL = ("prefix_id", "prefix_tokens")


def read(path: str | Path, max_tokens: int | None = None) -> dict[str, np.ndarray]:
    """The trace's columns (module doc), checked; one clear line naming the file, the row, the column and the value
    on bad input, and on a request longer (input + output tokens) than `max_tokens`, the model's positions."""
    path = Path(path)
    try:
        df = input_files.read_csv(path, "trace CSV")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"{path}: cannot read trace CSV: {str(exc).strip().splitlines()[0][:200]}") from None
    missing = [c for c in TRACE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: trace column {missing[0]!r} missing (needs {', '.join(TRACE_COLUMNS)}; optional "
                         f"{', '.join(TRACE_OPTIONAL)})")
    if not len(df):
        raise ValueError(f"{path}: trace has no rows")
    cols = {}
    for c in TRACE_COLUMNS + tuple(c for c in TRACE_OPTIONAL if c in df.columns):
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(v) | (v < (0 if c in ("arrival_s", "prefix_tokens") else -1 if c == "prefix_id" else 1))
        if c != "arrival_s":
            bad |= v != np.round(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            allowed = {"arrival_s": "seconds >= 0", "prefix_id": "a whole number (-1: none)",
                       "prefix_tokens": "a whole number >= 0"}.get(c, "a whole number >= 1")
            raise ValueError(f"{path}: row {i + 2}, column {c}: {df[c].iloc[i]} is not {allowed}")
        cols[c] = v
    if np.any(np.diff(cols["arrival_s"]) < 0):
        i = int(np.flatnonzero(np.diff(cols["arrival_s"]) < 0)[0]) + 1
        raise ValueError(f"{path}: row {i + 2}, column arrival_s: arrivals must be in time order")
    inp = cols["input_tokens"].astype(np.int64)
    total = inp + cols["output_tokens"].astype(np.int64)
    if max_tokens is not None and (total > max_tokens).any():  # no engine serves past the model's positions
        i = int(np.flatnonzero(total > max_tokens)[0])
        raise ValueError(f"{path}: row {i + 2}: input_tokens {inp[i]} + output_tokens "
                         f"{int(cols['output_tokens'][i])} = {total[i]} tokens is past the model's {max_tokens} "
                         "positions (max_position_embeddings)")
    return {"arrival_s": cols["arrival_s"], "input_tokens": inp,
            "output_tokens": cols["output_tokens"].astype(np.int64),
            "prefix_id": cols.get("prefix_id", np.full(len(df), -1.0)).astype(np.int64),
            "prefix_tokens": cols.get("prefix_tokens", np.zeros(len(df))).astype(np.int64)}
