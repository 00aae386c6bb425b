"""perfmodel explorer (Streamlit; `streamlit run app.py`): widgets -> cached perfmodel calls -> perfmodel charts.

Pages: hardware, roofline, memory, collectives, serving, under load (the simulation), capacity planner, formulas,
validation. The sidebar holds the scenario and the what-if overrides; both live in the URL query parameters,
so a view can be shared. Every number shown is computed in perfmodel (the report package and the
model modules); this package only draws widgets, calls cached functions and lays out results:

    cached.py            the cached computations (one entry per input)
    pages_compare.py     scenarios side by side (pinned in the sidebar or uploaded as files)
    sidebar.py           scenario and what-if widgets, read from and written to the URL; uploads
    hardware_form.py     the custom-hardware form (rates, HBM, links, power, price)
    widgets.py           guarded pages, downloads, charts, tables, metrics, the feasibility notice
    pages_scenario.py    hardware, roofline, memory, collectives, formulas
    pages_fleet.py       serving frontier, capacity planner, under load
    pages_validation.py  predicted vs measured

URL values are read like the sidebar's (perfmodel.report.url_state, which holds the view's plain logic:
defaults per phase, parsing, notices): a value the sidebar would not take gets a notice naming the parameter,
the value and what is allowed, and that one field keeps its default. An error while a page computes is one line
(st.error); the traceback goes to the server log, never to the browser.

Change here when: a page, a widget or what the URL keeps changes.
Must not import: the cli package; and it computes no model quantity (report does, and is imported here).
"""

from __future__ import annotations

import streamlit as st

from perfmodel import report
from perfmodel.catalog import scenario_files
from perfmodel.core import units
from perfmodel.explorer import pages_compare, pages_fleet, pages_scenario, pages_validation
from perfmodel.explorer.cached import load_catalog, run
from perfmodel.explorer.sidebar import (
    init_state,
    scenario_controls,
    scenario_file_controls,
    sync_url,
    upload_controls,
    url_notices,
    whatif_controls,
)
from perfmodel.explorer.widgets import guarded
from perfmodel.report import export, uploads
from perfmodel.report import url_state as us
from perfmodel.report.provenance_frame import MARKER_LEGEND

PAGES = {"Hardware": pages_scenario.page_hardware, "Roofline": pages_scenario.page_roofline,
         "Memory": pages_scenario.page_memory, "Collectives": pages_scenario.page_collectives,
         "Serving": pages_fleet.page_serving, "Under load": pages_fleet.page_under_load,
         "Capacity planner": pages_fleet.page_planner, "Formulas": pages_scenario.page_formulas,
         "Compare": pages_compare.page_compare, "Validation": pages_validation.page_validation}


def _default_name(system: str, workload: str, opts, whatif) -> str:
    """A scenario's default name: system, workload, plan and data type, the what-ifs ('trn2-ultraserver llama-3-70b
    tp4 bf16 hbm_bandwidth+50%')."""
    parts = [uploads.label(system), uploads.label(workload), report.plan_text(opts), opts.dtype, whatif.label()]
    return " ".join(p.removesuffix(" (uploaded)") for p in parts if p)


def explorer(cat: dict) -> None:
    """The sidebar, the URL and the chosen page (guarded on its own: the sidebar stays usable)."""
    init_state(cat, PAGES)
    page = st.sidebar.radio("Page", list(PAGES), key=us.PAGE_KEY)
    system, workload, opts = scenario_controls(cat)
    upload_controls(cat)
    whatif = whatif_controls()
    scenario_file_controls(scenario_files.Saved(name=_default_name(system, workload, opts, whatif), system=system,
                                                workload=workload, options=opts, whatif=whatif))
    view = sync_url(system, workload, opts, whatif, page)
    st.title("perfmodel explorer")
    url_notices(view)
    if whatif:
        st.info("What-if: " + ", ".join(whatif.assignments()))
    system_name, workload_name = (uploads.label(r).removesuffix(" (uploaded)") for r in (system, workload))
    name = export.config_name([("", system_name), ("", workload_name), ("", opts.phase), ("b", opts.batch),
                               ("", report.plan_text(opts).replace(" ", "")), ("", opts.dtype),
                               ("", whatif.label() or None)])
    ctx = {"catalog": cat, "system": system, "workload": workload, "opts": opts, "whatif": whatif, "name": name,
           "system_name": system_name, "workload_name": workload_name,
           "result": lambda: run(system, workload, opts, whatif)}
    guarded(page, PAGES[page], ctx)


def main() -> None:
    guarded("perfmodel explorer", lambda: explorer(load_catalog()))
    with st.container(key="footer"):  # last on every run: the browser test waits for it
        st.caption(MARKER_LEGEND + ". " + f"Units: SI inside; rates decimal "
                   f"({units.KINDS['flop_rate'].internal_unit}), capacities binary (GiB).")
