"""Writers: DataFrames to terminal tables, Markdown, CSV, JSON and XLSX; display names.

Internal columns are snake_case with SI unit suffixes (time_s, hbm_bytes, ...); the
display layer maps them to human names and scales (Time (ms), HBM (GiB)) here only.
JSON output is one envelope for every command (json_envelope.py): records with internal column names and SI
values, stable for tooling.
Files are written whole or not at all, and CSV / XLSX text cells that a spreadsheet would run as
formulas are escaped (core/safe_write.py).

Does not: compute model quantities.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from perfmodel.core import extras, safe_write, units
from perfmodel.report import json_envelope

FORMATS = ("table", "md", "csv", "json", "xlsx")

# suffix -> (display suffix, divisor)
_SCALES: list[tuple[str, str, float]] = [
    ("_flop_per_s", "TFLOP/s", units.TFLOPS),
    ("_bytes_per_s", "GB/s", units.GB),
    ("_bytes_per_chip", "GiB", units.GiB),
    ("_bytes", "GiB", units.GiB),
    ("_per_s", "/s", 1.0),  # a rate (tokens_per_s), not a time
    ("_s", "ms", units.MS),
    ("_w", "kW", units.KW),
    ("_usd_per_hour", "USD/h", 1.0),
    ("_frac", "%", 0.01),
    ("_flop", "TFLOP", units.TFLOPS),
]


# words a snake_case name lower-cases that people write otherwise ('per mw' reads as milliwatt)
_WORDS = {"mw": "MW", "kw": "kW", "usd": "USD", "hbm": "HBM", "mfu": "MFU", "ttft": "TTFT", "tpot": "TPOT",
          "e2e": "E2E", "kv": "KV", "sram": "SRAM", "gib": "GiB", "tp": "TP", "pp": "PP", "ep": "EP", "dp": "DP"}


def _words(text: str) -> str:
    return " ".join(_WORDS.get(w, w) for w in text.split(" "))


def display_name(col: str) -> tuple[str, float]:
    """('HBM bandwidth (GB/s)', 1e9) for 'hbm_bandwidth_bytes_per_s'; unknown columns unscaled."""
    for suffix, unit, div in _SCALES:
        if col.endswith(suffix):
            base = _words(col[: -len(suffix)].replace("_", " ").strip() or col)
            return f"{base[0].upper()}{base[1:]} ({unit})", div
    return _words(col.replace("_", " ")), 1.0


def humanize(df: pd.DataFrame, scale: bool = True) -> pd.DataFrame:
    """Copy with display column names and scaled numeric values (for table / md output); an answer with its
    interval columns shown as one cell (interval_cells.merge)."""
    from perfmodel.report import interval_cells

    df = interval_cells.merge(df, scale, _fmt_cell, display_name)
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
        if 1e5 <= a < units.PETA:
            return f"{v:,.0f}"
        if a >= units.PETA or a < 1e-3:
            return f"{v:.3g}"
        if a >= 100:
            return f"{v:,.0f}"
        return f"{v:.3g}" if a < 1 else f"{v:.3f}".rstrip("0").rstrip(".")
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return f"{v:,}"
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


def _draw(headers: list[str], cells: list[list[str]], numeric: list[bool], title: str, caption: str,
          width: int | None) -> str:
    """A rich table of text cells, drawn within `width` (None: every column at its natural width)."""
    from rich.console import Console
    from rich.table import Table

    from perfmodel.report import fit_columns

    same = fit_columns.constant(headers, cells) if width else []
    rest = [i for i in range(len(headers)) if i not in same]
    columns = {i: [r[i] for r in cells] for i in rest}
    words = {i: fit_columns.column_width(headers[i], columns[i]) for i in rest}  # headers wrapped at spaces
    whole = {i: fit_columns.column_width(headers[i], columns[i], False) for i in rest}  # headers on one line
    keep = [rest[j] for j in fit_columns.fit([words[i] for i in rest], [numeric[i] for i in rest], width)]
    note = fit_columns.dropped_note([headers[i] for i in rest if i not in keep], width)
    caption = "\n".join(x for x in (fit_columns.constant_line(headers, cells, same), caption, note) if x)
    table = Table(title=title or None, caption=caption or None, show_lines=False, header_style="bold")
    # each column exactly as wide as its longest cell and its header, the headers wrapped at spaces only when
    # whole ones do not fit: cells never wrap
    natural = fit_columns.BORDER + sum(whole[i] + fit_columns.PER_COLUMN for i in keep)
    chosen = words if width is not None and natural > width else whole
    for i in keep:
        table.add_column(headers[i], justify="right" if numeric[i] else "left", overflow="fold",
                         width=min(chosen[i], width - fit_columns.BORDER - fit_columns.PER_COLUMN) if width
                         else chosen[i])
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    natural = fit_columns.BORDER + sum(chosen[i] + fit_columns.PER_COLUMN for i in keep)
    buf = io.StringIO()
    Console(file=buf, width=width or max(natural, 80), force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


def render_table(df: pd.DataFrame, title: str = "", scale: bool = True, caption: str = "",
                 width: int | None | str = "terminal") -> str:
    """A rich terminal table, rendered to text: the columns that fit the terminal (core/terminal.py), the rest
    named under it; `width` None draws every column."""
    from perfmodel.core import terminal

    h = humanize(df, scale)
    numeric = [bool(pd.api.types.is_numeric_dtype(h[c])) for c in h.columns]
    cells = [[_fmt_cell(v) for v in row] for row in h.itertuples(index=False)]
    limit = terminal.table_width() if width == "terminal" else width
    return _draw([str(c) for c in h.columns], cells, numeric, title, caption, limit)


def for_people(name: str, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """A sheet's frame in display units: headers with their unit ('Step time (ms)'), numbers scaled to it and
    kept numbers; and its legend rows (sheet, column, field, si_factor: the SI value is the cell x si_factor)."""
    out, legend = {}, []
    for col in frame.columns:
        s = frame[col]
        if s.dtype == object:  # Excel has no tuples; show them as text
            s = s.map(lambda v: ", ".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
        header, div = display_name(str(col))
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        if not numeric or div == 1.0 or header in out:  # only a quantity with a unit is renamed and scaled
            header, div = str(col), 1.0
        out[header] = s / div if div != 1.0 else s
        legend.append({"sheet": name, "column": header, "field": str(col), "si_factor": div})
    return pd.DataFrame(out, index=frame.index), legend


def _number_format(v: float) -> str:
    """Excel number format for a number: whole with thousands separators, else 3 decimals, or scientific
    when tiny or huge."""
    if not math.isfinite(v):
        return "General"
    if v == round(v) and abs(v) < units.PETA:
        return "#,##0"
    return "0.000E+00" if abs(v) < 1e-3 or abs(v) >= units.TERA else "#,##0.000"


PER_CELL_FORMATS = 5000  # rows: a longer sheet (a sweep) takes one format per column, from its median


def _column_format(values: pd.Series) -> str:
    v = pd.to_numeric(values, errors="coerce").dropna()
    v = v[np.isfinite(v)]
    if v.empty or ((v == v.round()) & (v.abs() < units.PETA)).all():
        return "#,##0"
    return _number_format(float(v.abs().median()) + 0.5)  # +0.5: the median of fractions is not whole


def _lay_out(ws, frame: pd.DataFrame) -> None:
    """Header row bold and frozen, each column as wide as its header or longest cell (up to 60), number
    formats on numeric columns."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    ws.freeze_panes = "A2"
    for j, col in enumerate(frame.columns, start=1):
        letter = get_column_letter(j)
        ws.cell(1, j).font = Font(bold=True)
        cells = frame[col].map(lambda v: "" if v is None else str(v))
        longest = max([len(str(col))] + [len(c) for c in cells.head(500)])
        ws.column_dimensions[letter].width = min(60, longest + 2)
        s = frame[col]
        fixed = _column_format(s) if len(frame) > PER_CELL_FORMATS else None
        for row in ws.iter_rows(min_row=2, min_col=j, max_col=j):  # numbers, also those of a mixed column
            c = row[0]
            if isinstance(c.value, (int, float)) and not isinstance(c.value, bool):
                c.number_format = fixed or _number_format(float(c.value))


def write_xlsx(sheets: dict[str, pd.DataFrame], path: Path) -> Path:
    """One sheet per frame (sheet names cut to Excel's 31 characters) in display units (for_people), laid out
    to read (_lay_out), and a 'columns' sheet naming each header's field and SI factor; text that a spreadsheet
    would run as a formula is escaped; written to a temporary file renamed into place."""
    path = Path(path)
    legend = []
    extras.require("openpyxl")  # the 'xlsx' extra: said before any file is touched
    with safe_write.atomic_path(path) as tmp, pd.ExcelWriter(tmp, engine="openpyxl") as xw:
        for name, frame in sheets.items():
            people, rows = for_people(name[:31], frame)
            legend += rows
            people = safe_write.escape_frame(people)
            people.to_excel(xw, sheet_name=name[:31], index=False)
            _lay_out(xw.sheets[name[:31]], people)
        if legend and "columns" not in sheets:
            key = safe_write.escape_frame(pd.DataFrame(legend))  # it repeats the sheets' values (scenario names)
            key.to_excel(xw, sheet_name="columns", index=False)
            _lay_out(xw.sheets["columns"], key)
    return path


def to_csv(df: pd.DataFrame) -> str:
    """CSV text (no index) with formula-like text cells escaped: for every CSV a user may open in a spreadsheet."""
    return safe_write.escape_frame(df).to_csv(index=False)


HTML_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3}td{text-align:right}td:first-child{text-align:left}figure{margin:1em 0}
figcaption{font-size:13px;color:#555}.legend{font-size:13px;color:#555}"""


def html_page(df: pd.DataFrame | list[tuple[str, pd.DataFrame]], title: str = "", caption: str = "",
              svg: str = "") -> str:
    """A self-contained page: the table (or several, each under its own heading) in people's units, then the
    command's chart (svg: its SVG text) inline, then the caption; no scripts, so it opens offline."""
    import html

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title or 'perfmodel')}</title>"
             f"<style>{HTML_CSS}</style></head><body>" + (f"<h1>{html.escape(title)}</h1>" if title else "")]
    for heading, table in ([("", df)] if isinstance(df, pd.DataFrame) else df):
        if heading:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(humanize(table, True).map(_fmt_cell).to_html(index=False, escape=True, na_rep="", border=0))
    if svg:
        parts.append(f"<figure>{svg}</figure>")
    if caption:
        parts.append(f"<p class='legend'>{html.escape(caption)}</p>")
    return "\n".join(parts) + "</body></html>"


def emit(df: pd.DataFrame, fmt: str, title: str = "", out: str | Path | None = None, meta: dict | None = None,
         extra_sheets: dict[str, pd.DataFrame] | None = None, default_name: str = "perfmodel",
         caption: str = "", chart_svg=None) -> str:
    """Format `df` as `fmt`; write to `out` when given (xlsx always writes a file; a table to FILE.html is a page
    with the command's chart, chart_svg() drawing it as SVG). Returns the text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "xlsx":
        path = Path(out) if out else Path(f"{safe_filename(default_name)}.xlsx")
        sheets = {"results": df, **(extra_sheets or {})}
        if meta:
            sheets["meta"] = pd.DataFrame({"key": list(meta), "value": [str(v) for v in meta.values()]})
        write_xlsx(sheets, path)
        return f"wrote {path}"
    if fmt == "table" and out and Path(out).suffix.lower() in (".html", ".htm"):  # a page, not terminal text
        safe_write.write_text(out, html_page(df, title, caption, chart_svg() if chart_svg else ""))
        return f"wrote {out}"
    text = {
        "table": lambda: render_table(df, title, caption=caption, width=None if out else "terminal"),
        "md": lambda: (f"## {title}\n\n" if title else "") + to_markdown(df) + (f"\n\n{caption}" if caption else ""),
        "csv": lambda: to_csv(df),
        "json": lambda: json_envelope.envelope({"table": df}, meta),
    }[fmt]()
    if out:
        safe_write.write_text(out, text)
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


# ---------------------------------------------------------------- display names, sheets, reports (issue 6)

# Readable names for common result columns (unit added from the suffix by display_name's scales).
DISPLAY_NAMES = {
    "tokens_per_s_per_user": "Tokens/s per user", "tokens_per_s_per_chip": "Tokens/s per chip",
    "tokens_per_s_per_replica": "Tokens/s per replica", "tokens_per_mw": "Tokens/s per MW",
    "usd_per_million_tokens": "$ per million tokens", "mfu_frac": "Sustained / peak (%)",
    "engine_tokens_per_s_per_chip": "Engine: tokens/s per chip",
    "engine_tokens_per_mw": "Engine: tokens/s per MW", "engine_usd_per_million_tokens": "Engine: $ per million tokens",
    "engine_host_time_s": "Engine host time per step (ms)", "engine_step_time_s": "Engine step time (ms)",
    "tensor_util_frac": "Tensor-engine utilisation (%)", "achieved_flop_per_s": "Achieved (TFLOP/s)",
    "peak_flop_per_s": "Peak (TFLOP/s)", "time_per_output_token_s": "TPOT (ms)", "ttft_s": "TTFT (ms)",
    "step_time_s": "Step time (ms)", "memory_total_bytes": "Memory per chip (GiB)",
    "capacity_bytes": "HBM capacity (GiB)", "min_chips": "Min chips", "min_instances": "Min instances",
    "replica_chips": "Chips per replica", "compute_dtype": "Data type", "intensity_flop_per_byte": "FLOP/byte",
    "power_per_chip_w": "Chip power (kW)", "price_per_chip_usd_per_hour": "Price per chip (USD/h)",
    "tp": "TP", "pp": "PP", "dp": "DP", "ep": "EP", "da": "Attention DP", "bound": "Bound by", "plan": "Plan",
    "output_tokens_per_s_per_mw": "Output tokens/s per MW", "output_tokens_per_s_per_chip": "Output tokens/s per chip",
    "output_tokens_per_usd": "Output tokens per $", "concurrency_per_scaleup": "Users per UltraServer",
    "usd_per_month": "$ per month", "usd_per_million_output_tokens": "$ per million output tokens",
    "concurrency": "Concurrency", "expert_weights_dtype": "Expert weights", "facility_power_peak_w":
    "Facility power at peak (kW)", "chips": "Chips", "instances": "Instances", "scaleups": "UltraServers",
    "min_fit_plan": "Min-fit plan", "fits": "Fits", "label": "System", "footprint_bytes": "Memory (GiB)",
    "share_frac": "Share (%)", "component": "Component", "headroom_bytes": "Headroom (GiB)",
    "host_bytes": "Offloaded to host (GiB)", "host_capacity_bytes": "Host memory per chip (GiB)",
    "total_bytes": "Total (GiB)", "generation": "Generation", "chips_per_node": "Chips per node",
    "scaleup_chips": "Scale-up chips", "peak_bf16_per_chip_flop_per_s": "Peak BF16 per chip (TFLOP/s)",
    "hbm_per_chip_bytes": "HBM per chip (GiB)", "hbm_bw_per_chip_bytes_per_s": "HBM bandwidth per chip (GB/s)",
    "price_per_node_usd_per_hour": "Price per node (USD/h)", "uncertain_fields": "Estimated / projected fields",
    "valid": "Valid plan", "invalid_reason": "Why not valid", "finite": "Finite", "min_node_share": "Min node share",
    "memory_bytes_per_chip": "Memory per chip (GiB)", "memory_capacity_bytes": "HBM capacity (GiB)",
    "fixed_overhead_s": "Fixed overheads (ms)",
}


def pretty_name(col: str) -> tuple[str, float]:
    """display_name with the readable names of DISPLAY_NAMES where one is defined."""
    name, div = display_name(col)
    return DISPLAY_NAMES.get(col, name), div


def emit_sheets(sheets: dict[str, pd.DataFrame], fmt: str, main: str, out: str | Path | None = None,
                meta: dict | None = None, default_name: str = "perfmodel", title: str = "") -> str:
    """Multi-sheet output: xlsx writes every sheet (plus meta); json holds every sheet; csv, md and
    table give the `main` sheet (each of its rows carries its inputs)."""
    if fmt == "xlsx":
        path = Path(out) if out else Path(f"{safe_filename(default_name)}.xlsx")
        all_sheets = dict(sheets)
        if meta:
            all_sheets["meta"] = pd.DataFrame({"key": list(meta), "value": [str(v) for v in meta.values()]})
        write_xlsx(all_sheets, path)
        return f"wrote {path} (sheets: {', '.join(all_sheets)})"
    if fmt == "json":
        text = json_envelope.envelope(sheets, meta)
        if out:
            safe_write.write_text(out, text)
            return f"wrote {out}"
        return text
    return emit(sheets[main], fmt, title, out, meta, default_name=default_name)


def render_text_table(df: pd.DataFrame, title: str = "", width: int | None | str = "terminal") -> str:
    """A rich table of already-formatted text, fitted as render_table's."""
    from perfmodel.core import terminal

    cells = [["" if v is None else str(v) for v in row] for row in df.itertuples(index=False)]
    limit = terminal.table_width() if width == "terminal" else width
    numeric = [False] * len(df.columns)
    return _draw([str(c) for c in df.columns], cells, numeric, title, "", limit)


def xlsx_bytes(sheets: dict[str, pd.DataFrame]) -> bytes:
    """The workbook write_xlsx would write, as bytes (for download buttons)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = write_xlsx(sheets, Path(d) / "perfmodel.xlsx")
        return path.read_bytes()
