"""perfmodel explorer (Streamlit): widgets -> cached perfmodel calls -> perfmodel.charts.

Run:  streamlit run app.py
Pages: hardware, roofline, memory, collectives, serving, under load (the simulation), capacity planner, formulas,
validation. The sidebar holds the scenario and the what-if overrides; both live in the URL query parameters,
so a view can be shared. Every number shown is computed in perfmodel (the report package and the
model modules); this file only draws widgets, calls cached functions and lays out results.

URL values are read like the sidebar's (perfmodel.report.url_state, which holds the view's
plain logic: defaults per phase, parsing, notices): a value the sidebar would not take gets a
notice naming the parameter, the value and what is allowed, and that one field keeps its default.
An error while a page computes is one line (st.error); the traceback goes to the server log,
never to the browser.

Does not: compute model quantities.
"""

from __future__ import annotations

import logging
import math
import tempfile
from pathlib import Path

import streamlit as st

from perfmodel import catalog, report
from perfmodel.catalog import spec_tables
from perfmodel.catalog.files import catalog_root
from perfmodel.catalog import whatif as wi
from perfmodel.core import units
from perfmodel.report import charts, export
from perfmodel.report import url_state as us
from perfmodel.report.provenance_frame import MARKER_LEGEND

st.set_page_config(page_title="perfmodel explorer", page_icon=":bar_chart:", layout="wide")
LOG = logging.getLogger("perfmodel.app")
CACHE_ENTRIES = 32  # results kept per cached function (each URL variant is an entry: keep memory bounded)
UPLOAD_LIMIT_MB = 20  # largest measurements CSV the validation page reads (the vendored one is ~0.1 MB)
# built-in cases files (label -> file under reference/; "" = the default published measurements)
BUILTIN_CASES = {"published measurements": "", "InferenceX serving corpus (1,684 rows, ~30 s)": "inferencex_serving_dev.csv"}


# ---------------------------------------------------------------- catalogue and cached computations


@st.cache_resource
def load_catalog() -> dict:
    """Names in the catalogue (read-only, shared by every session)."""
    return {"systems": catalog.list_systems(), "workloads": catalog.list_workloads()}


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def supported_dtypes(system: str) -> list[str]:
    return us.supported_dtypes(system)


@st.cache_data(show_spinner="Evaluating...", max_entries=CACHE_ENTRIES)
def run(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf) -> dict:
    """One scenario: summary, per-operator, engine, bound, memory, roofline and workbook frames."""
    return report.scenario_page(system, workload, opts, whatif)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def spec_sheet(system: str, whatif: wi.WhatIf):
    s = wi.apply_spec(catalog.load_system(system), whatif.spec)
    return spec_tables.show_frame(s)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def compare(systems: tuple[str, ...], level: str):
    loaded = [catalog.load_system(s) for s in systems]
    return (spec_tables.compare_display(spec_tables.compare_frame(loaded, level), loaded),
            report.ratios_frame(loaded, level))


@st.cache_data(show_spinner="Memory on each system...", max_entries=CACHE_ENTRIES)
def memory_compare(systems: tuple[str, ...], workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf):
    return report.memory_comparison(systems, workload, opts, whatif)


@st.cache_data(show_spinner="Collectives...", max_entries=CACHE_ENTRIES)
def collectives(systems: tuple[str, ...], names: tuple[str, ...], group: int, lo: float, hi: float,
                algorithms: tuple[str, ...], whatif: wi.WhatIf, launch: str = "in-graph"):
    from perfmodel.comm import collectives as co

    return report.collective_frame(systems, names, group, co.size_range(lo, hi), algorithms, whatif, launch)


@st.cache_data(show_spinner="Serving frontier (every plan, vectorised)...", max_entries=CACHE_ENTRIES)
def frontier(systems: tuple[str, ...], workload: str, whatif: wi.WhatIf, isl: int, osl: int, y: str, grid: str):
    return report.serving_frontier(systems, workload, whatif, isl, osl, y, grid=grid)


@st.cache_data(show_spinner="The seed claims' sweeps (Trn2 and Trn3 UltraServers, every plan)...",
               max_entries=CACHE_ENTRIES)
def claim_points(y_col: str):
    return report.claim_points(y_col)


@st.cache_data(show_spinner="Capacity plan (every plan of each system, then the SLA)...",
               max_entries=CACHE_ENTRIES)
def plan(systems: tuple[str, ...], workload: str, whatif: wi.WhatIf, isl: int, osl: int, rps: float, tpot_s: float,
         ttft_s: float, peak: float, grid: str, percentile: float = 0.0):
    return report.capacity_plan(systems, workload, whatif, isl, osl, rps, tpot_s, ttft_s, peak, grid, percentile)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def formulas(workload: str, phase: str):
    from perfmodel.catalog import workload_refs
    from perfmodel.model import formula_catalog

    arch = workload_refs.load(workload)
    return formula_catalog.op_formula_table(arch, phase), formula_catalog.symbol_table()


@st.cache_data(show_spinner="Sensitivity (two evaluations per input)...", max_entries=CACHE_ENTRIES)
def sensitivity(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf, column: str):
    return report.sensitivity_frame(report.load(system, workload, whatif), opts, column)


@st.cache_data(show_spinner="S1-S3 for every reading (Trn2 recipe, power basis)...", max_entries=2)
def readings():
    from perfmodel.claims import serving_readings

    return serving_readings.table(), serving_readings.curves()


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def claims():
    return report.claims_frame()


@st.cache_data(show_spinner="Running every case through the model...", max_entries=4)
def validation_sheets(csv_bytes: bytes | None, name: str = "", builtin: str = "") -> dict:
    """Validation sheets for a built-in cases file (None: the published measurements; `builtin`: a file under
    reference/) or an uploaded file's bytes, read from a temporary directory that is gone when this returns.
    A file the harness refuses raises ValueError naming the upload (not the temporary path)."""
    from perfmodel import validation

    if csv_bytes is None:
        return validation.sheets(catalog_root() / "reference" / builtin if builtin else None)
    with tempfile.TemporaryDirectory(prefix="perfmodel-upload-") as tmp:
        path = Path(tmp) / "measurements.csv"
        path.write_bytes(csv_bytes)
        try:
            return validation.sheets(path)
        except (ValueError, KeyError) as exc:
            raise ValueError(us.one_line(exc).replace(f"{path}: ", "").replace(str(path), name)) from None


# ---------------------------------------------------------------- sidebar: scenario and what-if (URL state)


def _init_state(cat: dict) -> None:
    """First run of a session: widget values from the URL query parameters, and their notices."""
    if st.session_state.get("_ready"):
        return
    state, notices = us.read_query(st.query_params.to_dict(), cat, PAGES, supported_dtypes)
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


def scenario_controls(cat: dict) -> tuple[str, str, wi.ScenarioOptions]:
    sb = st.sidebar
    sb.header("Scenario")
    for key, options in (("system", cat["systems"]), ("workload", cat["workloads"]), ("phase", us.PHASES)):
        if st.session_state.get(key) not in options:  # cannot happen from the URL (read_query checks it)
            default = us.SCENARIO_DEFAULTS[key]
            st.session_state[key] = default if default in options else options[0]
    system = sb.selectbox("Hardware", cat["systems"], key="system")
    workload = sb.selectbox("Workload", cat["workloads"], key="workload")
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
    params = us.query_of(page, system, workload, opts, whatif)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    return params


# ---------------------------------------------------------------- shared bits


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


# ---------------------------------------------------------------- pages


def page_hardware(ctx: dict) -> None:
    st.subheader(f"Spec sheet: {ctx['system']}")
    st.caption("Every value as the source writes it, the SI value, its status (published, derived, estimated, "
               "projected; 'assumed' marks a what-if override) and its source.")
    sheet = spec_sheet(ctx["system"], ctx["whatif"])
    st.dataframe(sheet, hide_index=True, key="spec_table")
    st.subheader("Generation ratios")
    default = [s for s in ("trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver", "trn4-projected")
               if s in ctx["catalog"]["systems"]]
    chosen = st.multiselect("Systems (ratios to the first)", ctx["catalog"]["systems"], default=default,
                            key="hw_systems")
    level = st.radio("Level", ["chip", "node", "scaleup"], horizontal=True, key="hw_level")
    if len(chosen) < 2:
        st.info("Choose two or more systems.")
        return
    table, ratios = compare(tuple(chosen), level)
    st.dataframe(table, hide_index=True, key="ratio_table")
    chart(charts.spec_ratios(ratios, title=f"Ratio to {chosen[0]} per {level}"), "ratios", f"ratios_{level}")
    downloads({"spec_sheet": sheet, "ratios": ratios}, f"specs_{ctx['system']}", "hw")


# shown only for a scenario that runs: throughput and what it costs
RUNNING_ONLY = ("tokens_per_s_per_chip", "tokens_per_mw", "usd_per_million_tokens")


def _metrics(summary, phase: str, hide: tuple[str, ...] = ()) -> None:
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


def page_roofline(ctx: dict) -> None:
    res = ctx["result"]()
    st.subheader(f"Roofline: {res['display_name']}, {ctx['workload']} {ctx['opts'].phase}")
    f = feasibility_notice(ctx, res, "Times are as if it fit; throughput, tokens per MW and cost are not shown. "
                                     "The Memory page gives the fewest chips that hold it.")
    if not f["valid"]:
        return
    summary = res["summary"]
    _metrics(summary, ctx["opts"].phase, hide=() if f["fits"] else RUNNING_ONLY)
    row = summary.iloc[0]
    missing = [export.pretty_name(c)[0] for c in ("tokens_per_mw", "usd_per_million_tokens")
               if not math.isfinite(float(row.get(c, math.nan)))]
    if f["fits"] and missing:
        st.caption(f"{' and '.join(missing)} not shown: {row.get('economics_note') or 'no power or price input'}")
    ridge = shown(res["ridges"], ["dtype", "peak_flop_per_s", "hbm_bandwidth_bytes_per_s",
                                  "ridge_intensity_flop_per_byte"])
    st.caption("Ridge points (FLOP/byte where the data type's peak meets the HBM roof): " + "; ".join(
        f"{r[0]} {r[3]}" for r in ridge.itertuples(index=False)))
    chart(charts.roofline(res["ops"], res["roofs"], res["ridges"]), "roofline", ctx["name"] + "_roofline")
    chart(charts.engine_breakdown(res["engines"]), "engines", ctx["name"] + "_engines")
    st.dataframe(shown(res["bounds"]), hide_index=True, key="bounds_table")
    st.dataframe(shown(res["ops"], ["op", "block", "pass", "count", "flop", "intensity_flop_per_byte",
                                    "tensor_s", "vector_s", "scalar_s", "memory_s", "comm_s", "time_s",
                                    "total_time_s", "bound", "achieved_flop_per_s"]), hide_index=True,
                 key="ops_table")
    downloads(res["sheets"], ctx["name"], "roofline", main="per_operator")


def page_memory(ctx: dict) -> None:
    res = ctx["result"]()
    st.subheader(f"Memory per device: {ctx['workload']} {ctx['opts'].phase}")
    if not feasibility_notice(ctx, res, "Min chips below: the fewest chips that hold it.")["valid"]:
        return
    others = st.multiselect("Compare on", ctx["catalog"]["systems"],
                            default=[ctx["system"]] + [s for s in ("trn3-ultraserver", "p5.48xlarge")
                                                       if s != ctx["system"]], key="mem_systems")
    systems = tuple(dict.fromkeys([ctx["system"], *others]))
    comps, totals = memory_compare(systems, ctx["workload"], ctx["opts"], ctx["whatif"])
    chart(charts.memory_stack(comps, totals), "memory", ctx["name"] + "_memory")
    st.dataframe(shown(totals, ["label", "total_bytes", "capacity_bytes", "headroom_bytes", "fits", "min_chips",
                                "min_instances", "min_fit_plan"]), hide_index=True, key="mem_table")
    if res["fit_error"]:
        st.warning(res["fit_error"])
    downloads({"totals": totals, "components": comps, **res["sheets"]}, ctx["name"] + "_memory", "memory")


def page_collectives(ctx: dict) -> None:
    from perfmodel.comm import collectives as co
    from perfmodel.comm.algorithms import Collective

    st.subheader("Collective time vs message size")
    c1, c2, c3 = st.columns(3)
    systems = c1.multiselect("Systems (topologies)", ctx["catalog"]["systems"],
                             default=["trn2-ultraserver", "trn3-ultraserver"], key="coll_systems")
    names = c2.multiselect("Collectives", [c.value for c in Collective],
                           default=[Collective.ALL_REDUCE.value], key="coll_names")
    group = c3.number_input("Group (chips)", min_value=2, max_value=65536, value=64, key="coll_group")
    c4, c5 = st.columns([2, 1])
    algs = c4.multiselect("Algorithms", ["auto", *co.ALGORITHMS], default=["auto", "ring", "2d-ring", "direct"],
                          key="coll_algs", help="auto: the fastest algorithm at each size")
    launch = c5.selectbox("Call", co.LAUNCH, key="coll_launch",
                          help="in-graph: inside a compiled graph (collective_fixed_latency per call); host: "
                               "launched one call at a time like nccl-tests / nccom-test; eager: through "
                               "torch.distributed with the device waiting on each call (+ framework_call_overhead)")
    if not systems or not names or not algs:
        st.info("Choose at least one system, collective and algorithm.")
        return
    df = collectives(tuple(systems), tuple(names), int(group), units.KiB, units.GiB, tuple(algs), ctx["whatif"],
                     launch)
    chart(charts.collective_times(df), "collectives", f"collectives_g{group}")
    st.dataframe(shown(df, ["series", "collective", "size_bytes", "time_s", "chosen_algorithm", "crosses"]),
                 hide_index=True, key="coll_table")
    downloads({"collectives": df}, f"collectives_g{group}", "coll")


def page_serving(ctx: dict) -> None:
    st.subheader(f"Serving frontier: {ctx['workload']}")
    st.caption("Each line is a system's Pareto frontier over serving plans (tensor x attention-data parallel, "
               "expert parallel, data types) and concurrency: interactivity (tokens/s per user) against "
               "throughput. Black crosses: the seed claims' reading points (S1-S3; gpt-oss-120b, 1k/1k).")
    c1, c2, c3, c4, c5 = st.columns(5)
    systems = c1.multiselect("Systems", ctx["catalog"]["systems"],
                             default=["trn2-ultraserver", "trn3-ultraserver"], key="srv_systems")
    isl = c2.number_input("Input tokens", min_value=1, value=1024, step=256, key="srv_isl")
    osl = c3.number_input("Output tokens", min_value=1, value=1024, step=256, key="srv_osl")
    y = c4.selectbox("Throughput", list(report.FRONTIER_Y), key="srv_y", format_func={
        "mw": "per MW (facility)", "chip": "per chip", "usd": "per dollar", "users": "users per UltraServer"}.get)
    grid = c5.selectbox("Plan grid", list(report.GRIDS), key="srv_grid",
                        help="quick: tp <= 16, attention-DP <= 32, one stage, concurrency to 1024; "
                             "full: every plan of the scale-up domain (as the claims use; a few seconds per system)")
    if not systems:
        st.info("Choose at least one system.")
        return
    df = frontier(tuple(systems), ctx["workload"], ctx["whatif"], int(isl), int(osl), y, grid)
    ycol = report.FRONTIER_Y[y]
    same = (ctx["workload"], int(isl), int(osl)) == tuple(report.CLAIM_SCENARIO.values())
    points = claim_points(ycol) if same and not ctx["whatif"] else None
    chart(charts.frontier(df, points, y=ycol, color="system"), "frontier", f"frontier_{ctx['workload']}_{y}")
    if not same:
        st.caption("The seed claims' points are drawn for gpt-oss-120b at 1024 input / 1024 output tokens.")
    elif not ctx["whatif"] and st.checkbox("S1-S3 by reading: the Trn3 / Trn2 ratios over the whole range "
                                           "(about 20 s the first time)", key="srv_readings"):
        claim_readings()
    st.dataframe(shown(df, ["system", "tp", "da", "ep", "pp", "concurrency", "compute_dtype",
                            "expert_weights_dtype", "tokens_per_s_per_user", ycol, "ttft_s"]),
                 hide_index=True, key="srv_table")
    for cav in sorted(set(df.get("power_caveat", []))):
        st.caption(cav)
    downloads({"frontier": df}, f"frontier_{ctx['workload']}_{y}", "srv")


def claim_readings() -> None:
    """S1-S3 for every reading (Trn2 recipe, power basis): the table at the claims' point, the ratio curves."""
    from perfmodel.claims import serving_readings

    table, curves = readings()
    st.dataframe(shown(table.drop(columns="reading")), hide_index=True, key="srv_readings_table")
    for metric, quote in serving_readings.CHARTED:
        chart(charts.claims_ratios(curves, metric, quote), f"readings_{metric}", f"claims_{metric.split()[0]}")
    st.caption("Readings: Trn2 at its best recipe, with the shipped MXFP4 experts upcast to BF16 (Trainium2 has "
               "no MX types; what the vLLM Neuron tutorial runs), or converted to FP8; power modelled from "
               "activity or all-in (provisioned at TDP). Dashed: the quoted ratio (S1 5x, AWS's 3x per chip, S3 6x).")
    downloads({"readings": table, "curves": curves}, "claims_readings", "readings")


def page_planner(ctx: dict) -> None:
    st.subheader(f"Capacity planner: {ctx['workload']}")
    st.caption("Demand and SLA in; per system the cheapest plan that meets the SLA (or the lowest power where "
               "no price exists), sized for the peak: fleet, facility power and $ per month (planner.py).")
    c1, c2, c3, c4 = st.columns(4)
    rps = c1.number_input("Requests per second", min_value=0.001, value=100.0, step=10.0, key="plan_rps")
    peak = c1.number_input("Peak / average", min_value=1.0, value=1.5, step=0.1, key="plan_peak")
    isl = c2.number_input("Input tokens", min_value=1, value=1024, step=256, key="plan_isl")
    osl = c2.number_input("Output tokens", min_value=1, value=1024, step=256, key="plan_osl")
    tpot = c3.number_input("SLA: TPOT at most (s)", min_value=0.001, value=0.02, step=0.005, format="%.3f",
                           key="plan_tpot")
    ttft = c3.number_input("SLA: TTFT at most (s)", min_value=0.01, value=2.0, step=0.5, key="plan_ttft")
    systems = c4.multiselect("Systems", ctx["catalog"]["systems"],
                             default=["trn2-ultraserver", "trn3-ultraserver"], key="plan_systems")
    grid = c4.selectbox("Plan grid", list(report.GRIDS), key="plan_grid")
    pct = c1.selectbox("Targets at", [0, 50, 90, 99], index=0, key="plan_pct",
                       format_func=lambda p: "the steady state" if p == 0 else f"p{p}, verified by simulation")
    if not systems:
        st.info("Choose at least one system.")
        return
    with st.spinner("Planning" + (" and simulating each answer at the peak rate" if pct else "")):
        df = plan(tuple(systems), ctx["workload"], ctx["whatif"], int(isl), int(osl), float(rps), float(tpot),
                  float(ttft), float(peak), grid, float(pct))
    cols = ["system", "feasible", "mode", "tp", "da", "ep", "pp", "concurrency", "compute_dtype", "chips",
            "instances", "scaleups", "facility_power_peak_w", "usd_per_month", "usd_per_million_output_tokens",
            "tokens_per_s_per_user", "ttft_s", "verified", "analytic_replicas", f"sim_ttft_p{pct}_s",
            f"sim_tpot_p{pct}_s", "note"]
    st.dataframe(shown(df, [c for c in cols if c in df]), hide_index=True, key="plan_table")
    for cav in sorted(set(df.get("power_caveat", []))):
        st.caption(cav)
    downloads({"plan": df}, f"plan_{ctx['workload']}", "plan")


def page_under_load(ctx: dict) -> None:
    o = ctx["opts"]
    st.subheader(f"Under load: {ctx['workload']} on {ctx['system']}")
    st.caption(f"One replica of the scenario's plan (tp {o.tp}, attention-DP {o.da}, ep {o.ep}, pp {o.pp}, {o.dtype}) "
               "simulated request by request (simulation/, SimPy): continuous batching, paged KV, preemption; every "
               "step priced by the steady state's step model. Tail latency and the queue the steady state omits.")
    c1, c2, c3, c4 = st.columns(4)
    kind = c1.selectbox("Arrivals", ["poisson", "gamma", "closed"], key="ul_kind",
                        format_func={"poisson": "Poisson", "gamma": "bursty (gamma, cv 2)",
                                     "closed": "closed loop of clients"}.get)
    rate = c1.number_input("Requests per second", min_value=0.01, value=5.0, step=1.0, key="ul_rate")
    clients = c1.number_input("Clients (closed loop)", min_value=1, value=16, step=8, key="ul_clients")
    isl = c2.number_input("Input tokens", min_value=1, value=1024, step=256, key="ul_isl")
    osl = c2.number_input("Output tokens", min_value=1, value=256, step=64, key="ul_osl")
    mode = c3.selectbox("Scheduling", ["aggregated", "chunked"], key="ul_mode",
                        format_func={"aggregated": "prefill first", "chunked": "chunked prefill"}.get)
    n = c3.number_input("Requests", min_value=100, max_value=50_000, value=3000, step=1000, key="ul_n")
    ttft = c4.number_input("SLA: TTFT (s)", min_value=0.001, value=2.0, step=0.5, key="ul_ttft")
    tpot = c4.number_input("SLA: TPOT (s)", min_value=0.001, value=0.05, step=0.01, format="%.3f", key="ul_tpot")
    with st.spinner(f"Simulating {int(n):,} requests"):
        out = report.under_load(ctx["system"], ctx["workload"], o, ctx["whatif"], kind, float(rate), int(clients),
                                int(isl), int(osl), int(n), mode, float(ttft), float(tpot))
    c1, c2 = st.columns([1, 2])
    c1.dataframe(shown(out["summary"]), hide_index=True, key="ul_summary")
    with c2:
        chart(charts.queue_over_time(out["queue"], "Requests waiting and running"), "ul_queue", "under_load_queue")
    downloads({"summary": out["summary"], "queue": out["queue"], "requests": out["requests"]},
              f"under_load_{ctx['workload']}", "ul")


def page_formulas(ctx: dict) -> None:
    st.subheader(f"Formulas: {ctx['workload']} {ctx['opts'].phase}")
    ops, symbols = formulas(ctx["workload"], ctx["opts"].phase)
    op = st.selectbox("Operator", list(ops["op"]), key="formula_op")
    row = ops[ops["op"] == op].iloc[0]
    for label, col in (("count", "count_latex"), ("FLOPs", "flop_latex"), ("HBM bytes", "hbm_bytes_latex"),
                       ("time", "time_latex")):
        st.markdown(f"**{label}**")
        st.latex(row[col])
    with st.expander("Symbols"):
        st.dataframe(symbols, hide_index=True)
    st.subheader("Sensitivity of the result")
    column = st.selectbox("Result", ["step_time_s", "tokens_per_s_per_chip"], key="sens_col")
    sens = sensitivity(ctx["system"], ctx["workload"], ctx["opts"], ctx["whatif"], column)
    chart(charts.sensitivity(sens.head(15)[["parameter", "elasticity", "status"]]), "sensitivity",
          ctx["name"] + "_sensitivity")
    st.dataframe(sens, hide_index=True, key="sens_table")
    downloads({"sensitivity": sens, "formulas": ops}, ctx["name"] + "_formulas", "formulas")


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
        sheets = validation_sheets(up.getvalue() if up else None, up.name if up else "", BUILTIN_CASES[builtin])
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


PAGES = {"Hardware": page_hardware, "Roofline": page_roofline, "Memory": page_memory,
         "Collectives": page_collectives, "Serving": page_serving, "Under load": page_under_load,
         "Capacity planner": page_planner,
         "Formulas": page_formulas, "Validation": page_validation}


def explorer(cat: dict) -> None:
    """The sidebar, the URL and the chosen page (guarded on its own: the sidebar stays usable)."""
    _init_state(cat)
    page = st.sidebar.radio("Page", list(PAGES), key=us.PAGE_KEY)
    system, workload, opts = scenario_controls(cat)
    whatif = whatif_controls()
    view = sync_url(system, workload, opts, whatif, page)
    st.title("perfmodel explorer")
    url_notices(view)
    if whatif:
        st.info("What-if: " + ", ".join(whatif.assignments()))
    name = export.config_name([("", system), ("", workload), ("", opts.phase), ("b", opts.batch),
                               ("", report.plan_text(opts).replace(" ", "")), ("", opts.dtype),
                               ("", whatif.label() or None)])
    ctx = {"catalog": cat, "system": system, "workload": workload, "opts": opts, "whatif": whatif, "name": name,
           "result": lambda: run(system, workload, opts, whatif)}
    guarded(page, PAGES[page], ctx)


def main() -> None:
    guarded("perfmodel explorer", lambda: explorer(load_catalog()))
    with st.container(key="footer"):  # last on every run: the browser test waits for it
        st.caption(MARKER_LEGEND + ". " + f"Units: SI inside; rates decimal "
                   f"({units.KINDS['flop_rate'].internal_unit}), capacities binary (GiB).")


main()
