"""The Streamlit explorer under AppTest: every page renders, widgets change the numbers, the URL holds the view."""

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app.py")
MARKS = "*†§‡"


def app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k.replace("__", ".")] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> float:
    m = next(m for m in at.metric if m.label == label)
    return float(m.value.rstrip(MARKS).replace(",", ""))


def charts(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]


def chart_data_names(at: AppTest) -> list[str]:
    return [e.proto.spec for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]


def table(at: AppTest, *columns: str):
    """The first table on the page that has all `columns`."""
    for d in at.dataframe:
        if set(columns) <= set(d.value.columns):
            return d.value
    raise AssertionError(f"no table with columns {columns}; tables: {[list(d.value.columns) for d in at.dataframe]}")


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_roofline_page_and_what_if_knob():
    at = app()
    assert at.sidebar.radio(key="page").value == "Roofline"
    labels = [m.label for m in at.metric]
    assert {"TPOT (ms)", "Tokens/s per user", "Tokens/s per chip", "Sustained / peak (%)", "Bound by"} <= set(labels)
    tpot = metric(at, "TPOT (ms)")
    specs = chart_data_names(at)
    assert len(specs) == 2  # roofline and engine breakdown
    roof = charts(at)[0]
    assert [layer["mark"]["type"] for layer in roof["layer"]] == ["line", "point", "circle"]  # roofs, ridges, ops
    ops = table(at, "op", "Bound by", "Time (ms)")
    assert {"op", "Bound by", "Time (ms)"} <= set(ops.columns) and len(ops) > 10
    # what-if: HBM bandwidth +50% -> decode (memory-bound) is faster; the chart data changes; the URL holds it
    at.sidebar.number_input(key="wi_hbm_bandwidth").set_value(50.0)
    rerun(at)
    faster = metric(at, "TPOT (ms)")
    assert faster < 0.9 * tpot
    assert next(m for m in at.metric if m.label == "TPOT (ms)").value.endswith("‡")  # marked as a what-if figure
    assert chart_data_names(at) != specs
    assert at.query_params["s.hbm_bandwidth"] == "+50%"
    assert any("What-if: spec.hbm_bandwidth=+50%" in i.value for i in at.info)
    # the scenario knobs move it too
    at.sidebar.number_input(key="batch").set_value(128)
    rerun(at)
    assert metric(at, "Tokens/s per chip") > 0 and at.query_params["batch"] == "128"
    assert [b.label for b in at.get("download_button")][:2] == ["PNG", "SVG"]


def test_url_restores_the_view():
    at = app(page="Memory", system="trn3-ultraserver", workload="llama-3-8b", phase="prefill", batch="2",
             seq="8192", tp="1", s__hbm_capacity="+50%", c__hbm_efficiency="0.7")
    assert at.sidebar.selectbox(key="system").value == "trn3-ultraserver"
    assert at.sidebar.radio(key="phase").value == "prefill"
    assert at.sidebar.number_input(key="seq").value == 8192
    assert at.sidebar.number_input(key="wi_hbm_capacity").value == 50.0
    assert at.sidebar.text_area(key="wi_text").value == "cal.hbm_efficiency=0.7"
    totals = table(at, "System", "Total (GiB)")
    row = totals[totals["System"] == "trn3-ultraserver"].iloc[0]
    assert row["HBM capacity (GiB)"].rstrip(MARKS) == "216"  # 144 GiB x 1.5


def test_hardware_page():
    at = app(page="Hardware", s__hbm_bandwidth="+50%")
    spec = table(at, "field", "status", "source")
    assert {"field", "value_as_written", "si_value", "status", "source"} <= set(spec.columns)
    hbm = spec[spec["field"] == "chip.memory.hbm_bandwidth"].iloc[0]
    assert hbm["status"] == "assumed" and "what-if" in hbm["value_as_written"]
    assert spec.loc[spec["field"] == "chip.memory.hbm_capacity", "status"].iloc[0] == "published"
    ratios = table(at, "label", "trn4-projected / trn1.32xlarge")
    assert "trn4-projected / trn1.32xlarge" in ratios.columns
    at.radio(key="hw_level").set_value("node")
    rerun(at)
    assert not table(at, "label", "trn4-projected / trn1.32xlarge").equals(ratios)
    assert charts(at)  # the ratio chart


def test_memory_page_batch_moves_the_kv_cache():
    at = app(page="Memory", workload="llama-3-70b", batch="8")
    before = table(at, "System", "Total (GiB)")
    assert {"System", "Total (GiB)", "HBM capacity (GiB)", "Fits", "Min chips", "Min-fit plan"} <= set(before.columns)
    at.sidebar.number_input(key="batch").set_value(256)
    rerun(at)
    after = table(at, "System", "Total (GiB)")
    tot = lambda df: float(df["Total (GiB)"].iloc[0].rstrip(MARKS).replace(",", ""))  # noqa: E731
    assert tot(after) > tot(before)
    assert charts(at)[0]["layer"][1]["mark"]["type"] == "tick"  # the fit line


def test_collectives_page():
    at = app(page="Collectives")
    df = table(at, "series", "collective")
    assert len(df) and {"series", "collective", "Time (ms)"} <= set(df.columns)
    assert any("fastest" in s for s in df["series"])
    at.number_input(key="coll_group").set_value(8)
    rerun(at)
    in_graph = table(at, "series", "collective")
    assert not in_graph.equals(df)
    # an eager call pays the host launch and the framework's overhead on top: every time grows
    at.selectbox(key="coll_launch").set_value("eager")
    rerun(at)
    eager = table(at, "series", "collective")
    ms = lambda d: d["Time (ms)"].astype(str).str.rstrip(MARKS).str.replace(",", "").astype(float)  # noqa: E731
    assert len(eager) == len(in_graph) and (ms(eager).to_numpy() > ms(in_graph).to_numpy()).all()


def test_serving_page_marks_the_claims():
    at = app(page="Serving", workload="gpt-oss-120b")
    df = table(at, "system", "Concurrency")
    assert set(df["system"]) == {"trn2-ultraserver", "trn3-ultraserver"}
    assert "Output tokens/s per MW" in df.columns
    spec = charts(at)[0]
    assert any(layer["mark"].get("type") == "text" for layer in spec["layer"])  # the claims' labelled points
    at.selectbox(key="srv_y").set_value("chip")
    rerun(at)
    assert "Output tokens/s per chip" in table(at, "system", "Concurrency").columns


def test_capacity_planner_page():
    at = app(page="Capacity planner", workload="llama-3-8b")
    df = table(at, "system", "Chips")
    assert {"system", "Chips", "Instances", "$ per month", "Facility power at peak (kW)"} <= set(df.columns)
    assert len(df) == 2
    chips = [float(x.rstrip(MARKS).replace(",", "")) for x in df["Chips"]]
    at.number_input(key="plan_rps").set_value(1000.0)
    rerun(at)
    more = [float(x.rstrip(MARKS).replace(",", "")) for x in table(at, "system", "Chips")["Chips"]]
    assert all(b > a for a, b in zip(chips, more))


def test_formulas_page():
    at = app(page="Formulas", workload="llama-3-70b")
    assert len(at.latex) == 4
    first = [x.value for x in at.latex]
    at.selectbox(key="formula_op").set_value("mlp.up")
    rerun(at)
    assert [x.value for x in at.latex] != first and "F" in at.latex[1].value
    sens = table(at, "parameter", "elasticity")
    assert sens["parameter"].iloc[0] in ("hbm_bandwidth", "hbm_efficiency")  # decode is HBM-bound
    assert sens["elasticity"].iloc[0] < 0


def test_validation_page_scatter_and_phase_filter():
    at = app(page="Validation")
    by_phase = table(at, "phase", "verdict")
    assert {"prefill", "decode", "train", "collective"} <= set(by_phase["phase"])
    scatter = charts(at)[0]
    assert [layer["mark"]["type"] for layer in scatter["layer"]] == ["line", "point"]
    cases = table(at, "case id", "Error (%)")
    at.multiselect(key="val_phases").set_value(["decode"])
    rerun(at)
    only = table(at, "case id", "Error (%)")
    assert set(only["phase"]) == {"decode"} and len(only) < len(cases)
    assert len(table(at, "case_id", "reason"))  # cases not expressed are listed, not dropped


def test_bad_override_is_one_clear_line():
    at = app()
    at.sidebar.text_area(key="wi_text").set_value("hbm_bandwith=x2")
    rerun(at)
    assert any("unknown what-if name 'hbm_bandwith'" in e.value for e in at.sidebar.error)
    assert metric(at, "TPOT (ms)") > 0  # the rest of the page still works


def test_model_error_is_shown_not_raised():
    at = app(tp="2", ep="4")
    assert any("ep" in e.value for e in at.error)


def test_stale_url_values_fall_back():
    at = app(system="trn9", workload="nope", phase="fly", batch="many")
    assert at.sidebar.selectbox(key="system").value == "trn2-ultraserver"
    assert at.sidebar.radio(key="phase").value == "decode"
    assert at.sidebar.number_input(key="batch").value == 64
    assert metric(at, "TPOT (ms)") > 0
