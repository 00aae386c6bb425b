"""Writers: DataFrames to terminal tables, Markdown, CSV, JSON and XLSX; display names.

Internal columns are snake_case with SI unit suffixes (time_s, hbm_bytes, ...); the
display layer maps them to human names and scales (Time (ms), HBM (GiB)) here only.
JSON output is records with internal column names and SI values, stable for tooling.

Does not: compute model quantities.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from perfmodel import units

FORMATS = ("table", "md", "csv", "json", "xlsx")

# suffix -> (display suffix, divisor)
_SCALES: list[tuple[str, str, float]] = [
    ("_flop_per_s", "TFLOP/s", units.TFLOPS),
    ("_bytes_per_s", "GB/s", units.GB),
    ("_bytes", "GiB", units.GiB),
    ("_s", "ms", units.MS),
    ("_w", "kW", units.KW),
    ("_usd_per_hour", "USD/h", 1.0),
    ("_frac", "%", 0.01),
    ("_flop", "TFLOP", units.TFLOPS),
]


def display_name(col: str) -> tuple[str, float]:
    """('Hbm bandwidth (GB/s)', 1e9) for 'hbm_bandwidth_bytes_per_s'; unknown columns unscaled."""
    for suffix, unit, div in _SCALES:
        if col.endswith(suffix):
            base = col[: -len(suffix)].replace("_", " ").strip() or col
            return f"{base[0].upper()}{base[1:]} ({unit})", div
    return col.replace("_", " "), 1.0


def humanize(df: pd.DataFrame, scale: bool = True) -> pd.DataFrame:
    """Copy with display column names and scaled numeric values (for table / md output)."""
    out = {}
    for col in df.columns:
        name, div = display_name(str(col)) if scale else (str(col), 1.0)
        s = df[col]
        if div != 1.0 and pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            s = s / div
        out[name] = s
    return pd.DataFrame(out, index=df.index)


def _fmt_cell(v) -> str:
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return ""
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e5 or a < 1e-3:
            return f"{v:.3g}"
        if a >= 100:
            return f"{v:,.0f}"
        return f"{v:.3g}" if a < 1 else f"{v:.3f}".rstrip("0").rstrip(".")
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    return "" if v is None else str(v)


def to_markdown(df: pd.DataFrame, scale: bool = True) -> str:
    h = humanize(df, scale)
    cols = [str(c) for c in h.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in h.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt_cell(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def to_json(df: pd.DataFrame, meta: dict | None = None) -> str:
    """Stable machine-readable JSON: {"meta": {...}, "rows": [records with SI values]}."""
    records = json.loads(df.to_json(orient="records", double_precision=15, default_handler=str))
    return json.dumps({"meta": meta or {}, "rows": records}, indent=2)


def render_table(df: pd.DataFrame, title: str = "", scale: bool = True, caption: str = "") -> str:
    """A rich terminal table, rendered to text."""
    from rich.console import Console
    from rich.table import Table

    h = humanize(df, scale)
    table = Table(title=title or None, caption=caption or None, show_lines=False, header_style="bold")
    for c in h.columns:
        numeric = pd.api.types.is_numeric_dtype(h[c])
        table.add_column(str(c), justify="right" if numeric else "left", overflow="fold")
    for row in h.itertuples(index=False):
        table.add_row(*(_fmt_cell(v) for v in row))
    buf = io.StringIO()
    Console(file=buf, width=200, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


def write_xlsx(sheets: dict[str, pd.DataFrame], path: Path) -> Path:
    """One sheet per frame (sheet names cut to Excel's 31 characters), header row frozen."""
    path = Path(path)
    with pd.ExcelWriter(path, engine="openpyxl") as xw:
        for name, frame in sheets.items():
            frame = frame.copy()
            for c in frame.columns:  # Excel has no tuples; show them as text
                if frame[c].dtype == object:
                    frame[c] = frame[c].map(lambda v: ", ".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
            frame.to_excel(xw, sheet_name=name[:31], index=False)
            xw.sheets[name[:31]].freeze_panes = "A2"
    return path


def emit(df: pd.DataFrame, fmt: str, title: str = "", out: str | Path | None = None, meta: dict | None = None,
         extra_sheets: dict[str, pd.DataFrame] | None = None, default_name: str = "perfmodel",
         caption: str = "") -> str:
    """Format `df` as `fmt`; write to `out` when given (xlsx always writes a file). Returns the text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "xlsx":
        path = Path(out) if out else Path(f"{safe_filename(default_name)}.xlsx")
        sheets = {"results": df, **(extra_sheets or {})}
        if meta:
            sheets["meta"] = pd.DataFrame({"key": list(meta), "value": [str(v) for v in meta.values()]})
        write_xlsx(sheets, path)
        return f"wrote {path}"
    text = {
        "table": lambda: render_table(df, title, caption=caption),
        "md": lambda: (f"## {title}\n\n" if title else "") + to_markdown(df) + (f"\n\n{caption}" if caption else ""),
        "csv": lambda: df.to_csv(index=False),
        "json": lambda: to_json(df, meta),
    }[fmt]()
    if out:
        Path(out).write_text(text)
        return f"wrote {out}"
    return text


def safe_filename(text: str) -> str:
    """Configuration-encoding file name: letters, digits, '.', '_', '-' only."""
    keep = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)
    return "_".join(p for p in keep.split("_") if p)[:180]


def config_name(parts: Iterable[tuple[str, object]]) -> str:
    """'trn2-ultraserver_llama-3-70b_decode_b64' style names from (key, value) pairs."""
    bits = []
    for k, v in parts:
        if v is None or v == "":
            continue
        bits.append(f"{k}{v}" if k else str(v))
    return safe_filename("_".join(bits))
