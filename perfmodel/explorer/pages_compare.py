"""The explorer's Compare page: two or more scenarios side by side (pinned from the sidebar or uploaded as scenario
files), each with its change against the first, as a table and a chart.

Does not: compute model quantities (cached.scenario_comparison calls perfmodel.report.scenario_compare).
"""

from __future__ import annotations

import streamlit as st

from perfmodel.catalog import scenario_files
from perfmodel.explorer import cached as cc
from perfmodel.explorer.widgets import chart, downloads
from perfmodel.report import charts, scenario_compare, uploads
from perfmodel.report import url_state as us


def _uploaded() -> list[scenario_files.Saved]:
    """The scenario files uploaded on this page, each kept and loaded (a bad one is one line, and left out)."""
    out = []
    for up in st.session_state.get("cmp_files") or []:
        try:
            out.append(cc.saved_scenario(up.name, up.getvalue()))
        except ValueError as exc:
            st.error(us.one_line(exc))
    return out


def page_compare(ctx: dict) -> None:
    st.subheader("Compare scenarios")
    st.caption("Scenarios pinned in the sidebar ('Scenario files and comparison') or uploaded here as scenario files "
               "(perfmodel roofline --save-scenario, the sidebar's 'Save this scenario'), side by side; each after "
               "the first with its change against it.")
    st.file_uploader("Scenario files (.toml)", type=["toml"], accept_multiple_files=True, key="cmp_files",
                     max_upload_size=uploads.LIMIT_MB)
    pinned = st.session_state.get("_pinned", [])
    chosen = [*pinned, *_uploaded()]
    names = [s.name for s in chosen]
    if len(chosen) < 2:
        st.info(f"{len(chosen)} scenario{'s' if len(chosen) != 1 else ''} so far: pin the sidebar's scenario, change "
                "it and pin again, or upload scenario files (two or more).")
        return
    if len(set(names)) != len(names):
        st.warning("Two scenarios share a name: " + ", ".join(n for n in dict.fromkeys(names) if names.count(n) > 1)
                   + ". Rename one (the sidebar's 'Scenario name') to compare them.")
        return
    shown, values = cc.scenario_comparison(tuple(chosen))
    bad = scenario_compare.impossible(values)
    for name, invalid, _ in bad:
        if invalid:
            st.error(f"Scenario {name!r} is not a valid plan: {invalid}. Fix or unpin it to compare.")
    if any(invalid for _, invalid, _ in bad):
        return  # an impossible plan is never shown as an answer
    for name, _, misfit in bad:
        st.warning(f"NOT A VALID ANSWER: scenario {name!r}: {misfit}. Its numbers are what it would take if it fitted.")
    st.dataframe(shown, hide_index=True, key="cmp_table")
    chart(charts.scenario_changes(values), "compare", "compare_" + "_vs_".join(names))
    if pinned and st.button("Clear the pinned scenarios", key="cmp_clear"):
        st.session_state["_pinned"] = []
        st.rerun()
    downloads({"comparison": shown, "values": values}, "compare_" + "_vs_".join(names), "cmp")
