"""The report's tables as people read them: which columns a phase shows, figures with the marker of the input
they rest on, plan labels, the workbook's sheets. Light (pandas and the catalogue only): a report read back
from disk renders without importing the model.

Does not: evaluate anything (frames.py) or write files (export.py).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from perfmodel.catalog import whatif as wi
from perfmodel.report import provenance_frame

# displayed column -> basis column that marks it
FIGURE_BASIS = {"peak_flop_per_s": "basis_peak", **{c: "basis_performance" for c in (
    "step_time_s", "ttft_s", "time_per_output_token_s", "tokens_per_s_per_user", "tokens_per_s_per_chip",
    "achieved_flop_per_s", "mfu_frac", "bound")}, "memory_total_bytes": "basis_memory", "min_chips": "basis_memory",
    "capacity_bytes": "basis_memory",
    "tokens_per_mw": "basis_tokens_per_mw", "usd_per_million_tokens": "basis_usd_per_mtok",
    "engine_tokens_per_s_per_chip": "basis_performance", "engine_tokens_per_mw": "basis_tokens_per_mw",
    "engine_usd_per_million_tokens": "basis_usd_per_mtok"}


_LATENCY = {"decode": ("time_per_output_token_s", "tokens_per_s_per_user"), "prefill": ("ttft_s",),
            "train": ("step_time_s",)}
# the serving cases priced as their engine runs them (report/engine_priced.py), after the accelerator's figures
_ENGINE = ("engine", "engine_tokens_per_s_per_chip", "engine_tokens_per_mw", "engine_usd_per_million_tokens")


def summary_columns(phase: str) -> tuple[str, ...]:
    """The columns the report shows for a phase (the frames keep every column)."""
    return ("system", "compute_dtype", "plan", "replica_chips", *_LATENCY.get(phase, ("step_time_s",)),
            "tokens_per_s_per_chip", "peak_flop_per_s", "achieved_flop_per_s", "mfu_frac", "bound",
            "memory_total_bytes", "capacity_bytes", "min_chips", "tokens_per_mw", "usd_per_million_tokens",
            *(_ENGINE if phase in ("decode", "prefill") else ()))


SUMMARY_COLUMNS = summary_columns("decode")


def workbook(inputs: pd.DataFrame, results: pd.DataFrame, per_operator: pd.DataFrame,
             provenance: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"inputs": inputs, "results": results, "per_operator": per_operator, "provenance": provenance}


def plan_text(opts: wi.ScenarioOptions) -> str:
    """'tp4 ep4' style: the parallel degrees above 1 (or 'single chip'), then the training memory options set
    ('offload 8 layers', 'LoRA r16', 'recompute 4 layers')."""
    parts = [f"{k}{getattr(opts, k)}" for k in ("tp", "pp", "ep", "dp", "da") if getattr(opts, k) > 1]
    extra = [text.format(n) for field, text in (("offload_layers", "offload {} layers"), ("lora_rank", "LoRA r{}"),
                                                 ("recompute_layers", "recompute {} layers"))
             if (n := getattr(opts, field, 0))]
    return " ".join(parts or ["1 chip"]) + "".join(f", {e}" for e in extra)


def display_table(df: pd.DataFrame, columns: Iterable[str] = SUMMARY_COLUMNS) -> pd.DataFrame:
    """Human-scaled text table; each figure carries the marker of the weakest input it rests on, and its interval
    where the frame has one ("17.6 (15-21.1)")."""
    from perfmodel.report import export, interval_cells

    cols = [c for c in columns if c in df and not df[c].isna().all()]
    # the row values as DataFrame.iterrows gives them (one common-dtype array: ints read as floats in an
    # all-numeric frame), read by position instead of building a Series per row (the app's hot path)
    values = df.values
    pos = {c: i for i, c in enumerate(df.columns)}
    trios = {c for c in cols if f"{c}_low" in pos and f"{c}_high" in pos}
    out = {}
    for c in cols:
        name, div = export.pretty_name(c)
        basis = pos.get(FIGURE_BASIS.get(c)) if c in FIGURE_BASIS else None
        vals = []
        for row in values:
            v = row[pos[c]]
            num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
            text = export._fmt_cell(float(v) / div if num and div != 1.0 else v)
            if num and c in trios:  # the answer with its interval (serving/error_bars.py), in one cell
                lo, hi = row[pos[f"{c}_low"]], row[pos[f"{c}_high"]]
                if lo == lo and hi == hi:
                    text = interval_cells.cell(v / div, lo / div, hi / div)
            if text and basis is not None:
                text += provenance_frame.marker(row[basis])
            vals.append(text)
        out[name] = vals
    return pd.DataFrame(out)
