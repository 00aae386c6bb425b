"""The explorer's sidebar: the scenario and the what-if overrides, read from and written to the URL (a view can
be shared); the values are checked by perfmodel.report.url_state as the widgets would check them.

Does not: compute model quantities.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import streamlit as st

from perfmodel.catalog import scenario_files
from perfmodel.catalog import whatif as wi
from perfmodel.explorer import cached as cc
from perfmodel.explorer import hardware_form
from perfmodel.explorer.cached import supported_dtypes
from perfmodel.report import export, uploads
from perfmodel.report import url_state as us


def init_state(cat: dict, pages) -> None:
    """First run of a session: widget values from the URL query parameters, and their notices."""
    if st.session_state.get("_ready"):
        return
    state, notices = us.read_query(st.query_params.to_dict(), cat, pages, supported_dtypes)
    for key, value in state.items():
        st.session_state[key] = value
    st.session_state["_url_notices"] = notices
    st.session_state["_ready"] = True


def url_notices(view: dict) -> None:
    """The URL's notices, shown until the view changes (the URL then holds only values in use)."""
    if st.session_state.get("_url_view", view) != view:
        st.session_state["_url_notices"] = []
    st.session_state["_url_view"] = view
    for text in st.session_state.get("_url_notices", []):
        st.warning(text)


BYO = {"workload": ("byo_model", "Model: a config.json or a workload .toml"),
       "system": ("byo_system", "Machine: a system .toml (its chip a catalogue key, e.g. chip = \"h100-sxm\")")}


SIDEBAR_OPTIONS = {"phase": "phase", "batch": "batch", "seq_len": "seq", "context": "context", "tp": "tp", "pp": "pp",
                   "ep": "ep", "dtype": "dtype"}  # ScenarioOptions field -> the sidebar widget that holds it


def take_scenario_file() -> None:
    """A scenario file just uploaded sets the sidebar (system, workload, options, what-ifs); an option the sidebar
    does not hold (dp, zero, recompute, ...) is named in a notice; a file it cannot load is one line."""
    up = st.session_state.get("byo_scenario")
    if up is None or st.session_state.get("_byo_scenario_id") == up.file_id:
        return
    st.session_state["_byo_scenario_id"] = up.file_id
    try:
        saved = cc.saved_scenario(up.name, up.getvalue())
    except ValueError as exc:
        st.session_state["_byo_scenario_error"] = us.one_line(exc)
        return
    from perfmodel import catalog

    names = {"system": catalog.list_systems(), "workload": catalog.list_workloads()}
    elsewhere = [f"{k} {v!r}" for k, v in (("system", saved.system), ("workload", saved.workload))
                 if v not in names[k] and not uploads.is_upload(v)]
    if elsewhere:  # a file on the machine that saved it: the explorer has only its catalogue and uploads
        st.session_state["_byo_scenario_error"] = (f"{up.name}: its {' and '.join(elsewhere)} is a file this "
                                                   "explorer does not hold; upload it above, then the scenario")
        return
    st.session_state.pop("_byo_scenario_error", None)
    opts = saved.options.resolved()
    st.session_state.update(system=saved.system, workload=saved.workload,
                            **{key: getattr(opts, f) for f, key in SIDEBAR_OPTIONS.items()})
    st.session_state["_phase"] = opts.phase
    st.session_state.update({f"wi_{n}": 0.0 for n in us.QUICK_WHATIF}, wi_power_basis="modelled",
                            wi_text="\n".join(saved.whatif.assignments()))
    left = [f"{f}={v}" for f, v in vars(opts).items() if f not in SIDEBAR_OPTIONS and v != getattr(
        wi.ScenarioOptions(), f)]
    st.session_state["_byo_scenario_note"] = f"Scenario {saved.name!r} loaded" + (
        f"; the sidebar does not hold {', '.join(left)} (the CLI's --scenario does)." if left else ".")


def take_uploads() -> None:
    """A file just uploaded (its uploader's value from the last run) is kept (report.uploads), offered beside the
    catalogue and chosen; one it cannot load is one line in the sidebar. Runs before the selectboxes exist."""
    take_scenario_file()
    hardware_form.take_pending()
    for kind, (key, _) in BYO.items():
        up = st.session_state.get(key)
        if up is None or st.session_state.get(f"_{key}_id") == up.file_id:
            continue
        st.session_state[f"_{key}_id"] = up.file_id
        try:
            ref = uploads.store(up.name, up.getvalue(), "workload" if kind == "workload" else "hardware")
        except ValueError as exc:
            st.session_state[f"_{key}_error"] = us.one_line(exc)
            continue
        st.session_state.pop(f"_{key}_error", None)
        st.session_state[kind] = ref


def _options(cat: dict, kind: str) -> list[str]:
    """The catalogue's names, then the kept files this session chose (an upload, or a shared link naming one)."""
    have = list(cat[f"{kind}s"])
    current = st.session_state.get(kind)
    mine = st.session_state.setdefault(f"_byo_{kind}s", [])
    if current and current not in have and uploads.is_upload(current) and current not in mine:
        mine.append(current)
    return have + mine


def upload_controls(cat: dict) -> None:
    with st.sidebar.expander("Bring your own model or machine"):
        for kind, (key, label) in BYO.items():
            st.file_uploader(label, type=["json", "toml"] if kind == "workload" else ["toml"], key=key,
                             max_upload_size=uploads.LIMIT_MB)
            if st.session_state.get(f"_{key}_error"):
                st.error(st.session_state[f"_{key}_error"])
        hardware_form.form(cat["systems"])
        current = st.session_state.get("system", "")
        if uploads.is_upload(current):  # a machine of this session: its file for --hardware on the command line
            st.download_button("Download this machine's system file", Path(current).read_text(),
                               file_name=Path(current).name, key="hwf_download", on_click="ignore",
                               help=f"its chip file sits beside it: {Path(current).stem}-chip.toml")


def scenario_file_controls(current: scenario_files.Saved) -> None:
    """Save the sidebar's scenario as a file, load one into the sidebar, or pin it for the Compare page."""
    with st.sidebar.expander("Scenario files and comparison"):
        name = st.text_input("Scenario name", placeholder=current.name, key="scenario_name",
                             help="empty: system, workload, plan, data type and what-ifs")
        saved = dataclasses.replace(current, name=name.strip() or current.name)
        st.download_button("Save this scenario (.toml)", scenario_files.to_toml(saved),
                           file_name=f"{export.safe_filename(saved.name)}.toml", mime="application/toml",
                           key="scenario_save", on_click="ignore")
        st.file_uploader("Load a scenario (.toml)", type=["toml"], key="byo_scenario", max_upload_size=uploads.LIMIT_MB)
        if st.session_state.get("_byo_scenario_error"):
            st.error(st.session_state["_byo_scenario_error"])
        elif st.session_state.get("_byo_scenario_note"):
            st.info(st.session_state["_byo_scenario_note"])
        pinned = st.session_state.setdefault("_pinned", [])
        if st.button("Pin for the Compare page", key="scenario_pin"):
            taken = {p.name for p in pinned}
            pinned.append(saved if saved.name not in taken else dataclasses.replace(
                saved, name=f"{saved.name} ({len(pinned) + 1})"))
        if pinned:
            st.caption("Pinned: " + "; ".join(p.name for p in pinned))


def scenario_controls(cat: dict) -> tuple[str, str, wi.ScenarioOptions]:
    sb = st.sidebar
    sb.header("Scenario")
    take_uploads()
    systems, workloads = _options(cat, "system"), _options(cat, "workload")
    for key, options in (("system", systems), ("workload", workloads), ("phase", us.PHASES)):
        if st.session_state.get(key) not in options:  # cannot happen from the URL (read_query checks it)
            default = us.SCENARIO_DEFAULTS[key]
            st.session_state[key] = default if default in options else options[0]
    system = sb.selectbox("Hardware", systems, key="system", format_func=uploads.label)
    workload = sb.selectbox("Workload", workloads, key="workload", format_func=uploads.label)
    phase = sb.radio("Phase", us.PHASES, key="phase", horizontal=True)
    # another phase: the fields still at the old phase's defaults take the new one's (a valid plan that fits)
    st.session_state.update(us.phase_switch(st.session_state, st.session_state.get("_phase", phase), phase))
    st.session_state["_phase"] = phase
    c1, c2 = sb.columns(2)

    def whole(col, label: str, key: str, **kw):
        lo, hi = us.INT_RANGES[key]
        return int(col.number_input(label, min_value=lo, max_value=hi, key=key, **kw))

    values = {"phase": phase, "batch": whole(c1, "Batch", "batch", step=1),
              "seq": whole(c2, "Sequence (tokens)", "seq", step=256, disabled=phase == "decode"),
              "context": whole(c1, "Context (tokens)", "context", step=1024)}
    dtypes = supported_dtypes(system)
    if st.session_state.get("dtype") not in dtypes:  # another system was chosen
        new = "bf16" if "bf16" in dtypes else dtypes[0]
        sb.info(f"{st.session_state.get('dtype')} is not a data type of {system}; using {new}.")
        st.session_state["dtype"] = new
    values["dtype"] = c2.selectbox("Data type", dtypes, key="dtype")
    values.update(tp=whole(c1, "TP", "tp"), ep=whole(c2, "EP", "ep"), pp=whole(c1, "PP", "pp"))
    return system, workload, us.options_of(values)


def whatif_controls() -> wi.WhatIf:
    sb = st.sidebar
    sb.header("What-if")
    lo, hi = us.SLIDER_RANGE
    spec = us.quick_assignments({name: sb.number_input(label, min_value=lo, max_value=hi, step=10.0, key=f"wi_{name}")
                                 for name, label in us.QUICK_WHATIF.items()})
    basis = sb.radio("Power basis", ("modelled", "all-in"), key="wi_power_basis", horizontal=True,
                     help="modelled: chips draw by their engine activity; all-in: every chip provisioned at its TDP "
                          "with its node and switch shares and PUE (InferenceX's all-in MW)")
    if basis == "all-in":
        spec = spec + ["cal.power_basis_all_in=1"]
    text = sb.text_area("More overrides (NAME=VALUE per line)", key="wi_text", height=90,
                        help="Spec values (hbm_bandwidth=6 TB/s, tensor_rate.fp8=x2, tdp=800 W, price=x0.7), "
                             "calibration parameters (cal.hbm_efficiency=0.8) or workload fields "
                             "(workload.num_hidden_layers=40). Scale with x1.5, +50% or -20%.")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    try:
        return wi.parse_assignments(spec + lines, us.calibration_of(st.session_state["system"]) if lines else None)
    except wi.WhatIfError as exc:
        sb.error(str(exc))
        return wi.parse_assignments(spec)


def sync_url(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf, page: str) -> dict:
    """Write the scenario and the what-ifs to the URL (shareable view); returns the parameters."""
    params = us.query_of(page, system, workload, opts, whatif, st.session_state)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    return params
