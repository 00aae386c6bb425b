"""The explorer's shared pieces: a guarded page, downloads, charts with PNG / SVG, human-scaled tables, the
headline metrics and the scenario's feasibility notice.

Does not: compute model quantities (perfmodel.report does), or read the URL (sidebar.py).
"""

from __future__ import annotations

import logging
import math

import streamlit as st

from perfmodel import report
from perfmodel.core import units
from perfmodel.report import charts, export
from perfmodel.report import url_state as us

LOG = logging.getLogger("perfmodel.app")


def guarded(where: str, body, *args) -> None:
    """Run `body(*args)`; an exception becomes one st.error line naming `where`, and its traceback
    goes to the server log only. Wraps each page, and the sidebar around them."""
    try:
        body(*args)
    except Exception as exc:  # the one place an error becomes a line on the page
        expected = isinstance(exc, (ValueError, KeyError))
        LOG.log(logging.INFO if expected else logging.ERROR, "%s failed", where, exc_info=True)
        st.error(f"{where}: {us.one_line(exc)}" + ("" if expected else " (an internal error; the server log has it)"))


def downloads(sheets: dict, name: str, key: str, main: str | None = None) -> None:
    """CSV of the main table and an XLSX workbook of every sheet (built when clicked)."""
    main = main or next(iter(sheets))
    c1, c2, _ = st.columns([1, 1, 4])
    c1.download_button("Download CSV", lambda: export.to_csv(sheets[main]), file_name=f"{name}.csv",
                       mime="text/csv", key=f"csv_{key}", on_click="ignore")
    c2.download_button("Download XLSX", lambda: export.xlsx_bytes(sheets), file_name=f"{name}.xlsx",
                       mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", key=f"xlsx_{key}",
                       on_click="ignore")


def chart(ch, key: str, name: str) -> None:
    """An Altair chart (its menu saves PNG/SVG in the browser) plus server-side PNG/SVG downloads."""
    st.altair_chart(ch, key=f"chart_{key}")
    c1, c2, _ = st.columns([1, 1, 4])
    c1.download_button("PNG", lambda: charts.to_png(ch), file_name=f"{name}.png", mime="image/png",
                       key=f"png_{key}", on_click="ignore")
    c2.download_button("SVG", lambda: charts.to_svg(ch), file_name=f"{name}.svg", mime="image/svg+xml",
                       key=f"svg_{key}", on_click="ignore")


def shown(df, columns=None):
    """Human-scaled copy for st.dataframe (values formatted by perfmodel.report)."""
    return report.display_table(df, columns if columns is not None else list(df.columns))


# shown only for a scenario that runs: throughput and what it costs
RUNNING_ONLY = ("tokens_per_s_per_chip", "tokens_per_mw", "usd_per_million_tokens")


def metrics(summary, phase: str, hide: tuple[str, ...] = ()) -> None:
    hidden = {export.pretty_name(c)[0] for c in hide}
    items = [(label, text) for label, text in report.headline(summary, phase) if label not in hidden]
    per_row = 4
    for start in range(0, len(items), per_row):
        cols = st.columns(per_row)
        for c, (label, text) in zip(cols, items[start:start + per_row]):
            c.metric(label, text)


def _gib(nbytes) -> str:
    return f"{float(nbytes) / units.GiB:,.1f} GiB"


def feasibility_notice(ctx: dict, res: dict, then: str) -> dict:
    """The scenario's verdict (scenario_page's 'feasibility', else the summary's fit) as a notice:
    st.error with the reasons when the plan cannot run, st.warning when it does not fit memory."""
    row = res["summary"].iloc[0]
    f = {"valid": True, "fits": bool(row.get("fits", True)), "reasons": [],
         "memory_bytes": row.get("memory_total_bytes", math.nan), "capacity_bytes": row.get("capacity_bytes", math.nan),
         **(res.get("feasibility") or {})}
    setup = f"{ctx['system']}, {ctx['workload']}, {report.plan_text(ctx['opts'])}"
    if not f["valid"]:
        st.error(f"Not a valid plan ({setup}): " + "; ".join(f["reasons"] or ["no reason given"]))
    elif not f["fits"]:
        st.warning(f"Does not fit: needs {_gib(f['memory_bytes'])} per chip, {_gib(f['capacity_bytes'])} available "
                   f"({setup}). {then}")
    return f
