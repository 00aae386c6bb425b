"""Report documents: a comparison report (report.build_report) as terminal text, Markdown with
PNG charts, or self-contained HTML with inline SVG charts.

Tables go through export.py (display names and scales), charts through charts.py; this module
puts them together, so neither of those imports the other.
Does not: compute model quantities or build the report's content.
"""

from __future__ import annotations

from pathlib import Path

from perfmodel.core import safe_write
from perfmodel.report.export import HTML_CSS, emit, render_text_table, to_markdown


def _slug(text: str) -> str:
    kept = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(p for p in kept.split("-") if p)[:60]


def report_text(report) -> str:
    """Terminal rendering of a report.Report: rich tables of each section's display frames."""
    parts = [report.title, "=" * min(len(report.title), 120), ""]
    for sec in report.sections:
        parts.append(f"## {sec.title}")
        if sec.text:
            parts.append(sec.text)
        for name, frame in sec.display:
            parts.append(render_text_table(frame))
        if sec.charts:
            parts.append(f"({len(sec.charts)} chart(s): write --out report.html or report.md to see them)")
        parts.append("")
    parts.append(report.legend)
    return "\n".join(parts)


def report_markdown(report, chart_dir: Path | None = None, link_base: str = "") -> str:
    """Markdown; with chart_dir, each chart is written there as PNG and linked (link_base/NN-name.png)."""
    from perfmodel.report import charts

    parts = [f"# {report.title}", ""]
    n = 0
    for sec in report.sections:
        parts += [f"## {sec.title}", ""]
        if sec.text:
            parts += [sec.text, ""]
        for name, frame in sec.display:
            parts += [to_markdown(frame, scale=False), ""]
        for ctitle, chart in sec.charts if chart_dir is not None else ():
            n += 1
            fname = f"{n:02d}-{_slug(ctitle)}.png"
            Path(chart_dir).mkdir(parents=True, exist_ok=True)
            safe_write.write_bytes(Path(chart_dir) / fname, charts.to_png(chart()))
            parts += [f"![{ctitle}]({link_base + '/' if link_base else ''}{fname})", ""]
    parts += ["---", "", report.legend, ""]
    return "\n".join(parts)


def report_html(report) -> str:
    """Self-contained HTML: tables, and every chart inlined as SVG (no scripts, works offline)."""
    import html

    from perfmodel.report import charts

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(report.title)}</title>"
             f"<style>{HTML_CSS}</style></head><body><h1>{html.escape(report.title)}</h1>"]
    for sec in report.sections:
        parts.append(f"<h2>{html.escape(sec.title)}</h2>")
        if sec.text:
            parts.append(f"<p>{html.escape(sec.text)}</p>")
        for name, frame in sec.display:
            parts.append(frame.to_html(index=False, escape=True, na_rep="", border=0))
        for ctitle, chart in sec.charts:
            parts.append(f"<figure>{charts.to_svg(chart())}<figcaption>{html.escape(ctitle)}</figcaption></figure>")
    parts.append(f"<p class='legend'>{html.escape(report.legend)}</p></body></html>")
    return "\n".join(parts)


def write_report(report, path: str | Path) -> Path:
    """Write a report as .md (charts as PNG files in <stem>_charts/) or .html (charts inline); each file
    is written to a temporary file renamed into place when complete."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        safe_write.write_text(path, report_html(report))
    elif suffix in (".md", ".markdown"):
        chart_dir = path.parent / f"{path.stem}_charts"
        safe_write.write_text(path, report_markdown(report, chart_dir, chart_dir.name))
    else:
        raise ValueError(f"report output {path.name!r}: use a .md or .html file name (or --format csv|json|xlsx)")
    return path


def notation_markdown() -> str:
    """Every formula letter as Markdown tables from the code's own tables (core/symbols.py via
    formula_catalog.symbol_table; serving/closed_loop.symbol_table): docs/ARCHITECTURE.md's notation block."""
    from perfmodel.model import formula_catalog
    from perfmodel.serving import closed_loop

    model = formula_catalog.symbol_table()[["latex", "meaning", "unit"]].rename(columns={"latex": "letter"})
    serving = closed_loop.symbol_table().rename(columns={"symbol": "letter"})
    parts = [emit(model, "md", "roofline and model letters (core/symbols.py; model/formulas.py, graph/build.py, "
                               "roofline.py)"),
             emit(serving, "md", "serving letters (serving/closed_loop.py: the engine's closed loop)")]
    return "\n\n".join(t.replace("## ", "#### ", 1) for t in parts).strip()

