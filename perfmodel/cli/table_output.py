"""A command's several titled tables as one output: the terminal's text, Markdown, or a page for --out FILE.html.

    write_tables(tables, fmt, out, head, tail)   tables: (title, frame of display text) or (title, frame in SI, "si")
    write_or_print(text, out)                    text to --out (written whole) or to the terminal

Does not: build the tables (the commands do).
"""

from __future__ import annotations

from pathlib import Path

from perfmodel.cli.common import print_result, write_text


def _text(df, fmt: str, title: str) -> str:
    from perfmodel.report import export

    if fmt == "md":
        return f"## {title}\n\n" + export.to_markdown(df, scale=False)
    return export.render_text_table(df, title)


def write_tables(tables: list, fmt: str, out: str | None, head=(), tail=()) -> int:
    """The tables with the head and tail lines around them (Markdown: blocks a blank line apart), or a page when a
    table goes to --out FILE.html (export.html_page; a terminal plot is left out, the notes kept). An "si" table
    is scaled to people's units as export.emit does."""
    from perfmodel.report import export

    head, tail = [h for h in head if h], [t for t in tail if t]
    if fmt == "table" and out and Path(out).suffix.lower() in (".html", ".htm"):
        text = "\n".join(h for h in head if "\n" not in h)  # a banner line, not the plot's lines
        write_text(out, export.html_page([t[:2] for t in tables], caption=" ".join([text, *tail]).strip()))
        print_result(f"wrote {out}")
        return 0
    shown = [export.emit(t[1], fmt, t[0]) if t[2:] == ("si",) else _text(t[1], fmt, t[0]) for t in tables]
    return write_or_print(("\n\n" if fmt == "md" else "\n").join(head + shown + tail), out)


def write_or_print(text: str, out: str | None) -> int:
    if out:
        write_text(out, text)
        print_result(f"wrote {out}")
    else:
        print_result(text)
    return 0
