"""The explorer's validation page: predicted against measured for the built-in cases or an uploaded CSV, and the
serving fidelity by backend.

Does not: compute model quantities (cached.py calls perfmodel.validation).
"""

from __future__ import annotations

import streamlit as st

from perfmodel.explorer import cached as cc
from perfmodel.explorer.widgets import chart, downloads, shown
from perfmodel.report import charts
from perfmodel.report import url_state as us

UPLOAD_LIMIT_MB = 20  # largest measurements CSV the validation page reads (the vendored one is ~0.1 MB)
# built-in cases files (label -> file under reference/; "" = the default published measurements)
BUILTIN_CASES = {"published measurements": "",
                 "InferenceX serving corpus (1,684 rows, ~30 s)": "inferencex_serving_dev.csv"}


def page_validation(ctx: dict) -> None:
    st.subheader("Predicted vs measured")
    up = st.file_uploader("Measurements CSV (columns of reference/published_measurements.csv, or a recognised format "
                          "such as the InferenceX serving corpus)", type="csv",
                          key="val_upload", help=f"leave empty for the development cases; at most {UPLOAD_LIMIT_MB} MB",
                          max_upload_size=UPLOAD_LIMIT_MB)
    if up is not None and up.size > UPLOAD_LIMIT_MB * 2**20:
        st.error(f"Measurements CSV {up.name!r}: {up.size / 2**20:,.1f} MB is over the {UPLOAD_LIMIT_MB} MB limit; "
                 "upload a smaller file.")
        return
    builtin = st.radio("Built-in cases (when no file is uploaded)", list(BUILTIN_CASES), key="val_builtin",
                       horizontal=True)
    try:
        sheets = cc.validation_sheets(up.getvalue() if up else None, up.name if up else "", BUILTIN_CASES[builtin])
    except ValueError as exc:
        if up is None:
            raise
        st.error(f"Measurements CSV {up.name!r}: {us.one_line(exc)}")
        return
    cases = sheets["cases"]
    phases = sorted(cases["phase"].dropna().unique())
    pick = st.multiselect("Phases", phases, default=phases, key="val_phases")
    shown_cases = cases[cases["phase"].isin(pick)]
    chart(charts.validation_scatter(shown_cases), "validation", "validation_scatter")
    st.markdown("**By phase** (target: median |error| <= 15%, p90 <= 40%)")
    st.dataframe(shown(sheets["by_phase"]), hide_index=True, key="val_phase")
    c1, c2 = st.columns(2)
    c1.markdown("**By hardware family**")
    c1.dataframe(shown(sheets["by_hardware_family"]), hide_index=True, key="val_hw")
    c2.markdown("**By metric**")
    c2.dataframe(shown(sheets["by_metric"]), hide_index=True, key="val_metric")
    st.markdown("**Cases**")
    st.dataframe(shown(shown_cases), hide_index=True, key="val_cases")
    if len(sheets["not_expressed"]):
        st.markdown("**Cases the model cannot express yet**")
        st.dataframe(sheets["not_expressed"], hide_index=True, key="val_missing")
    if "fidelity" in sheets:
        fidelity_section(sheets)
    downloads(sheets, "validation", "val", main="cases")


def fidelity_section(sheets: dict) -> None:
    """Serving cases (backend and mode known): fidelity by metric and backend, by system x backend x model x
    mode with the gap each weak cell names, and predicted vs measured per metric."""
    st.markdown("**Serving fidelity** (target: TPOT median |error| <= 15%, p90 <= 40%; TTFT 25%, 60%; "
                "'unfitted': without the fitted engine parameters)")
    st.dataframe(shown(sheets["fidelity_overall"]), hide_index=True, key="fid_overall")
    st.dataframe(shown(sheets["fidelity"]), hide_index=True, key="fid_table")
    c1, c2 = st.columns(2)
    for col, metric in ((c1, "TTFT mean"), (c2, "TPOT mean")):
        with col:
            chart(charts.fidelity_scatter(sheets["fidelity_cases"], metric), f"fidelity_{metric.split()[0].lower()}",
                  f"fidelity_{metric.split()[0].lower()}")
