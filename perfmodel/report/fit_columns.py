"""Which columns of a table fit a terminal: every row on one line, numbers never split, the columns a command puts
first kept first; the rest named under the table with how to see them (`--wide`, `--format csv|xlsx|json`).

A rich table with a box takes 1 + sum(w_i + 3) characters for columns of widths w_i (a border, then each
column's two spaces of padding and its right border). A column's width is its longest cell, or its header's
longest word (headers wrap at spaces). Text longer than LONG_TEXT characters (notes, sources) would wrap every
row into many lines: such a column is kept only when the table is drawn without a limit.

Within a limit, a column with the same value in every row of a table of several rows (the system, the mode,
a data type) is said once in a line above the table instead of repeated in a column (`constant`).

Does not: format cells (export.py) or know what a command's answer is (each command orders its columns).
"""

from __future__ import annotations

LONG_TEXT = 48  # characters: a text column wider than this is a note, shown in full under --wide
BORDER, PER_COLUMN = 1, 3


def column_width(header: str, cells: list[str], wrap_header: bool = True) -> int:
    """A column's width: its longest cell, and its header's longest word (wrapped) or the whole header."""
    words = (header.split() or [""]) if wrap_header else [header]
    return max([len(w) for w in words] + [len(c) for c in cells])


def fit(widths: list[int], numeric: list[bool], width: int | None) -> list[int]:
    """Indices of the columns (of these `widths`) to draw within `width` (None: all), in their order; the first
    always."""
    if width is None:
        return list(range(len(widths)))
    keep, used = [], BORDER
    for i, w in enumerate(widths):
        long_text = not numeric[i] and w > LONG_TEXT
        if i == 0 or (not long_text and used + w + PER_COLUMN <= width):
            keep.append(i)
            used += min(w, width - BORDER - PER_COLUMN) + PER_COLUMN
    return keep


def dropped_note(gone: list[str], width: int | None) -> str:
    """One caption naming the columns left out (`gone`) and how to see them, cut to `width`, or ''."""
    if not gone:
        return ""
    text = f"{len(gone)} more column{'s' if len(gone) > 1 else ''} with --wide or --format csv/xlsx/json: " + \
        ", ".join(gone)
    return text if width is None or len(text) <= width else text[: max(0, width - 3)] + "..."


def constant(headers: list[str], cells: list[list[str]]) -> list[int]:
    """Indices of the columns (not the first) whose cell is the same in each of two or more rows."""
    if len(cells) < 2:
        return []
    return [i for i in range(1, len(headers)) if len({row[i] for row in cells}) == 1]


def constant_line(headers: list[str], cells: list[list[str]], idx: list[int]) -> str:
    """'every row: system dgx-h100; mode aggregated; ...' for the constant columns `idx` (blank ones left out)."""
    parts = [f"{headers[i]} {cells[0][i]}" for i in idx if cells[0][i].strip()]
    return ("every row: " + "; ".join(parts)) if parts else ""
