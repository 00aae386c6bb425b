"""The Streamlit explorer under AppTest: every page renders, widgets change the numbers, the URL holds the view;
a bad URL value gets a notice (its field alone falls back), a page's error is one line, an impossible scenario
is a notice and not tiles, an upload is bounded and cleaned up."""

import json
import tempfile
from pathlib import Path

import pytest

from perfmodel import report
from perfmodel.catalog import whatif as wi
from perfmodel.report import url_state as us

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app.py")
MARKS = "*†§‡"


def app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k.replace("__", ".")] = v
    at.run()
    return checked(at)


def checked(at: AppTest) -> AppTest:
    """No exception escaped, no internal error was shown, every error is one line."""
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error if "internal error" in e.value or "\n" in e.value.strip()]
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
    return checked(at)


def warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


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
    at.sidebar.number_input(key="batch").set_value(64)  # 128 would not fit: Trainium2's 16 ranks hold 2 copies of the KV heads
    rerun(at)
    assert metric(at, "Tokens/s per chip") > 0 and at.query_params["batch"] == "64"
    assert [b.label for b in at.get("download_button")][:2] == ["PNG", "SVG"]


def test_url_restores_the_view():
    at = app(page="Memory", system="trn3-ultraserver", workload="llama-3-8b", phase="prefill", batch="2",
             seq="8192", context="0", tp="1", s__hbm_capacity="+50%", c__hbm_efficiency="0.7")
    assert not at.warning and not at.error  # every value used as given
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
    # every point with its 80% interval (serving/error_bars.py): "value (low-high)"
    assert df["Output tokens/s per MW"].str.fullmatch(r"[\d.,]+ \([\d.,]+-[\d.,]+\)\S*").all()
    assert df["TTFT (ms)"].str.contains(r" \([\d.,]+-[\d.,]+\)").all()
    spec = charts(at)[0]
    assert any(layer["mark"].get("type") == "text" for layer in spec["layer"])  # the claims' labelled points
    at.selectbox(key="srv_y").set_value("chip")
    rerun(at)
    assert "Output tokens/s per chip" in table(at, "system", "Concurrency").columns


def test_power_basis_switch_reprices_every_power_figure_and_lives_in_the_url():
    def best_per_mw(at):
        col = table(at, "system", "Concurrency")["Output tokens/s per MW"].str.split(" ").str[0]  # value, not interval
        return col.str.replace(",", "").astype(float).max()

    at = app(page="Serving", workload="llama-3-8b", system="trn2.48xlarge")
    modelled = best_per_mw(at)
    at.radio(key="wi_power_basis").set_value("all-in")
    rerun(at)
    assert best_per_mw(at) < modelled  # every chip provisioned at its TDP
    assert at.query_params["c.power_basis_all_in"] == ["1"] or at.query_params["c.power_basis_all_in"] == "1"
    state, notices = us.read_query({"c.power_basis_all_in": "1"}, pages=PAGE_NAMES)
    assert notices == [] and state["wi_power_basis"] == "all-in" and "power_basis" not in state["wi_text"]


def test_capacity_planner_page():
    """The answer first (chips, $ per month, $ per million tokens, facility power, TTFT, the note), the recommendation
    in words, a chart of cost and chips per system, every column in the detail table, the serving modes chosen."""
    at = app(page="Capacity planner", workload="llama-3-8b")
    df = table(at, "system", "Chips")
    assert {"system", "Chips", "$ per month", "$ per million output tokens", "Facility power at peak (kW)", "TTFT (ms)",
            "note", "engine", "envelope"} <= set(df.columns)
    assert set(df["engine"]) == {"nxd-inference"} and set(df["envelope"]) <= {"measured", "extrapolated"}
    assert df["TTFT (ms)"].str.contains(r" \([\d.,]+-[\d.,]+\)").all()  # the answer with its interval
    assert "Instances" in table(at, "system", "Chips", "Instances").columns  # the detail table
    assert len(df) == 2
    words = " ".join(m.value for m in at.markdown)
    cheapest = min(zip(df["$ per month"], df["system"]), key=lambda x: float(x[0].rstrip(MARKS).replace(",", "")))[1]
    assert f"**{cheapest}** is the cheapest way to serve 150 requests/s" in words
    assert {"hconcat"} <= set(charts(at)[0])  # $ per month beside chips
    at.multiselect(key="plan_modes").set_value(["aggregated", "disaggregated"])
    rerun(at)
    assert set(table(at, "system", "Chips")["mode"]) <= {"aggregated", "disaggregated"}
    chips = [float(x.rstrip(MARKS).replace(",", "")) for x in df["Chips"]]
    at.number_input(key="plan_rps").set_value(1000.0)
    rerun(at)
    more = [float(x.rstrip(MARKS).replace(",", "")) for x in table(at, "system", "Chips")["Chips"]]
    assert all(b > a for a, b in zip(chips, more))
    at.number_input(key="plan_rps").set_value(20.0)
    at.selectbox(key="plan_pct").set_value(99)  # each answer simulated at the peak rate
    rerun(at)
    df = table(at, "system", "Chips")
    assert "verified" in df.columns and "Sim TTFT p99 (ms)" in df.columns


def test_under_load_page():
    """One replica simulated request by request: the summary and the queue chart; more traffic, longer tails."""
    at = app(page="Under load", workload="llama-3.1-8b", system="p5.48xlarge")
    at.number_input(key="ul_n").set_value(800)
    rerun(at)

    def p99() -> float:
        s = table(at, "quantity", "value")
        return float(s.loc[s["quantity"] == "ttft p99 s", "value"].iloc[0])

    low = p99()
    assert len(charts(at)) == 1
    at.number_input(key="ul_rate").set_value(25.0)
    rerun(at)
    assert p99() > low


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


def test_stale_url_values_fall_back_with_a_notice():
    at = app(system="trn9", workload="nope", phase="fly", batch="many")
    assert at.sidebar.selectbox(key="system").value == "trn2-ultraserver"
    assert at.sidebar.radio(key="phase").value == "decode"
    assert at.sidebar.number_input(key="batch").value == 64
    assert metric(at, "TPOT (ms)") > 0
    notes = warnings(at)
    for text in ("system='trn9'", "workload='nope'", "phase='fly'", "batch='many'"):
        assert sum(text in n for n in notes) == 1, (text, notes)
    assert any("showing trn2-ultraserver" in n and "trn3-ultraserver" in n for n in notes)  # what is allowed
    assert at.query_params["system"] == "trn2-ultraserver"  # the URL now says what is shown


# (query, state key, value shown instead, words the notice holds); each URL also sets context=2048, which stays
BAD_URL = [
    ({"system": "trn9"}, "system", "trn2-ultraserver", ["system='trn9'", "not a known system", "trn1.32xlarge"]),
    ({"workload": "llama-3-7b"}, "workload", "llama-3-70b", ["workload='llama-3-7b'", "did you mean 'llama-3-70b'"]),
    ({"batch": "abc"}, "batch", 64, ["batch='abc'", "not a whole number", "1 to 65,536", "using 64"]),
    ({"batch": "-3"}, "batch", 64, ["batch='-3'", "out of range", "1 to 65,536"]),
    ({"tp": "0"}, "tp", 4, ["tp='0'", "out of range", "1 to 1,024", "using 4"]),
    ({"page": "Memry"}, "page", "Roofline", ["page='Memry'", "did you mean 'Memory'", "showing Roofline"]),
    ({"dtype": "fp99"}, "dtype", "bf16", ["dtype='fp99'", "data type of trn2-ultraserver", "fp8"]),
    ({"s.hbm_bandwidth": "xabc"}, "wi_hbm_bandwidth", 0.0, ["s.hbm_bandwidth='xabc'", "x1.5", "ignored"]),
    ({"s.hbm_bandwith": "x2"}, "wi_text", "", ["s.hbm_bandwith='x2'", "not a spec value",
                                               "did you mean 'hbm_bandwidth'"]),
    ({"s.hbm_bandwidth": "5 GHz"}, "wi_text", "", ["s.hbm_bandwidth='5 GHz'", "bandwidth such as"]),
    ({"c.hbm_efficency": "0.8"}, "wi_text", "", ["c.hbm_efficency='0.8'", "not a calibration parameter",
                                                 "did you mean 'hbm_efficiency'"]),
    ({"c.hbm_efficiency": "abc"}, "wi_text", "", ["c.hbm_efficiency='abc'", "hbm_efficiency"]),
    ({"w.num_hidden_layers": "abc"}, "wi_text", "", ["w.num_hidden_layers='abc'", "num_hidden_layers", "got 'abc'"]),
    ({"w.layers": "40"}, "wi_text", "", ["w.layers='40'", "not a numeric workload field"]),
    ({"bach": "8"}, "batch", 64, ["bach='8'", "not a parameter", "did you mean 'batch'"]),
]


@pytest.mark.parametrize("query,key,shown,words", BAD_URL, ids=[next(iter(q)) + "=" + next(iter(q.values()))
                                                                  for q, *_ in BAD_URL])
def test_bad_url_value_is_a_notice_and_only_its_field_falls_back(query, key, shown, words):
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {**query, "context": "2048"}.items():
        at.query_params[k] = v
    at.run()
    checked(at)
    notes = warnings(at)
    assert len(notes) == 1 and all(w in notes[0] for w in words), notes
    assert "Traceback" not in notes[0] and "\n" not in notes[0]
    assert at.session_state[key] == shown
    assert at.sidebar.number_input(key="context").value == 2048  # the other fields keep their URL values
    assert not at.error and metric(at, "TPOT (ms)") > 0  # the page computes with the fallback


def test_url_notice_stays_until_the_view_changes():
    at = app(batch="-3", cal__hbm_efficiency="0.7")
    assert len(warnings(at)) == 1
    assert at.sidebar.text_area(key="wi_text").value == "cal.hbm_efficiency=0.7"  # long prefix read too
    at.sidebar.radio(key="phase").set_value("decode")  # no change: the notice stays
    rerun(at)
    assert len(warnings(at)) == 1
    at.sidebar.number_input(key="batch").set_value(8)
    rerun(at)
    assert not warnings(at) and at.query_params["c.hbm_efficiency"] == "0.7"


def test_page_error_is_one_line():
    at = app()
    at.sidebar.text_area(key="wi_text").set_value("hbm_bandwidth=5 GHz")  # parses; fails when applied
    rerun(at)
    assert len(at.error) == 1 and at.error[0].value.startswith("Roofline: hbm_bandwidth: expected a bandwidth")
    assert not at.metric
    assert at.caption[-1].value.startswith("* rests on")  # the footer still renders


def test_not_fitting_scenario_is_a_notice_not_throughput_tiles():
    at = app(system="trn1.2xlarge", workload="llama-3-70b", tp="1")
    notes = warnings(at)
    assert len(notes) == 1 and notes[0].startswith("Does not fit: needs ")
    assert "GiB per chip" in notes[0] and "32.0 GiB available" in notes[0]
    labels = {m.label for m in at.metric}
    assert "Memory per chip (GiB)" in labels and "TPOT (ms)" in labels
    assert not labels & {"Tokens/s per chip", "Tokens/s per MW", "$ per million tokens"}
    at.sidebar.radio(key="page").set_value("Memory")
    rerun(at)
    assert any(n.startswith("Does not fit") for n in warnings(at))
    assert table(at, "System", "Total (GiB)") is not None and charts(at)  # the breakdown is the point of the page


def test_invalid_plan_is_an_error_with_reasons_and_no_tiles_or_charts():
    at = app(workload="llama-3-70b", tp="7")
    assert len(at.error) == 1
    text = at.error[0].value
    assert text.startswith("Not a valid plan") and "tp=7" in text and "64 attention heads" in text
    assert not at.metric and not charts(at)
    at.sidebar.radio(key="page").set_value("Memory")
    rerun(at)
    assert at.error[0].value.startswith("Not a valid plan") and not charts(at)


def test_missing_economics_are_explained():
    at = app(system="trn1.2xlarge", workload="llama-3-8b", tp="1", batch="1")
    assert not warnings(at) and "Tokens/s per MW" not in {m.label for m in at.metric}
    assert any(c.value.startswith("Tokens/s per MW not shown: power: ") and "TDP" in c.value for c in at.caption)


def _uploads() -> set:
    return set(Path(tempfile.gettempdir()).glob("perfmodel-upload-*"))


def test_upload_is_bounded_checked_and_cleaned_up():
    at = app(page="Validation")
    before = _uploads()

    def up():  # located afresh after each run
        return at.file_uploader(key="val_upload")

    up().set_value(("huge.csv", b"x" * (21 * 2**20), "text/csv"))
    rerun(at)
    too_big = "Measurements CSV 'huge.csv': 21.0 MB is over the 20 MB limit; upload a smaller file."
    assert [e.value for e in at.error] == [too_big]
    for name, data, words in (("cols.csv", b"a,b\n1,2\n", "missing column(s) case_id"),
                              ("empty.csv", b"", "No columns"), ("bin.csv", b"\xff\xfe\x00", "UTF-16")):
        up().set_value((name, data, "text/csv"))
        rerun(at)
        assert len(at.error) == 1 and at.error[0].value.startswith(f"Measurements CSV {name!r}: "), at.error
        assert words in at.error[0].value and "perfmodel-upload" not in at.error[0].value  # no temporary path
        assert not charts(at)
    rows = (Path(APP).parent / "reference" / "published_measurements.csv").read_text().splitlines()
    few = [rows[0]] + [r for r in rows[1:] if r.startswith("NRN-CC-00")][:3]
    up().set_value(("mine.csv", ("\n".join(few) + "\n").encode(), "text/csv"))
    rerun(at)
    assert not at.error
    assert set(table(at, "case id", "Error (%)")["case id"].str.split("@").str[0]) <= {r.split(",")[0] for r in few}
    assert _uploads() == before  # the temporary copy is gone


# ---------------------------------------------------------------- url_state: the URL read without Streamlit

PAGE_NAMES = ("Hardware", "Roofline", "Memory")


def read(**query) -> tuple[dict, list[str]]:
    return us.read_query({k.replace("__", "."): v for k, v in query.items()}, pages=PAGE_NAMES)


def one_notice(notices: list[str], *words: str) -> str:
    assert len(notices) == 1, notices
    assert all(w in notices[0] for w in words), (words, notices[0])
    assert "\n" not in notices[0] and "Traceback" not in notices[0]
    return notices[0]


def test_url_state_defaults_without_a_query():
    state, notices = read()
    assert notices == []
    assert {k: state[k] for k in us.SCENARIO_DEFAULTS} == us.SCENARIO_DEFAULTS
    assert state["page"] == "Roofline" and state["wi_text"] == "" and state["wi_hbm_bandwidth"] == 0.0
    opts = us.options_of(state)
    assert (opts.phase, opts.batch, opts.seq_len, opts.context, opts.tp, opts.zero) == ("decode", 64, 2048, 4096, 4, 0)


def test_url_state_unknown_system_suggests_and_falls_back_to_the_default():
    state, notices = read(system="trn9", batch="8")
    one_notice(notices, "URL parameter system='trn9'", "not a known system", "did you mean 'trn2-ultraserver'?",
               "allowed: ", "trn3-ultraserver", "showing trn2-ultraserver")
    assert state["system"] == "trn2-ultraserver" and state["batch"] == 8  # only that field falls back


def test_url_state_bad_what_if_names_the_field_and_the_allowed_form():
    state, notices = read(s__hbm_bandwidth="xabc")
    one_notice(notices, "s.hbm_bandwidth='xabc'", "hbm_bandwidth", "x1.5", "+50%", "ignored")
    assert state["wi_hbm_bandwidth"] == 0.0 and state["wi_text"] == ""


@pytest.mark.parametrize("text,words", [
    ("0", ["batch='0'", "out of range", "1 to 65,536", "using 64"]),
    ("1e9", ["batch='1e9'", "out of range", "1 to 65,536", "using 64"]),
    ("2.5", ["batch='2.5'", "not a whole number", "using 64"]),
    ("nan", ["batch='nan'", "not a whole number"]),
    ("9" * 5000, ["batch='999", "...'", "not a whole number"]),  # shown cut short
])
def test_url_state_bad_batch_is_a_notice_and_the_default(text, words):
    state, notices = read(batch=text)
    assert len(one_notice(notices, *words)) < 300
    assert state["batch"] == 64


def test_url_state_whole_numbers_written_as_decimals_are_read():
    state, notices = read(batch="128.0", context="4e3")
    assert notices == [] and (state["batch"], state["context"]) == (128, 4000)


def test_url_state_tp_that_does_not_divide_the_heads_still_parses():
    """tp=7 on llama-3-70b (64 heads) is a value the sidebar takes; feasibility says why the plan
    cannot run (the page shows that as its error), not the URL reader."""
    state, notices = read(workload="llama-3-70b", tp="7")
    assert notices == [] and state["tp"] == 7 and us.options_of(state).tp == 7


def test_url_state_unknown_phase_is_a_notice_and_decode():
    state, notices = read(phase="bogus")
    one_notice(notices, "phase='bogus'", "not a known phase", "prefill, decode, train", "showing decode")
    assert state["phase"] == "decode" and state["context"] == 4096


@pytest.mark.parametrize("phase", us.PHASES)
def test_url_state_phase_defaults_are_that_phases(phase):
    state, notices = read(phase=phase)
    assert notices == [] and {k: state[k] for k in us.INT_RANGES} == us.PHASE_DEFAULTS[phase]
    opts = us.options_of(state)
    assert (opts.zero, opts.microbatches) == ((1, opts.pp) if phase == "train" else (0, 1))


@pytest.mark.parametrize("phase", us.PHASES)
def test_default_scenario_of_each_phase_is_valid_and_fits(phase):
    """A new user never lands on an error or a misfit: each phase's defaults are a plan that runs."""
    d = us.defaults(phase)
    res = report.scenario_page(d["system"], d["workload"], us.options_of(d), wi.WhatIf())
    f = res["feasibility"]
    assert f["valid"] and f["fits"], f
    assert d["context"] + (d["seq"] if phase != "decode" else 1) <= 8192  # llama-3-70b's positions


def test_phase_switch_moves_only_the_fields_still_at_their_defaults():
    dec = us.defaults("decode")
    moved = us.phase_switch(dec, "decode", "train")
    assert {**dec, **moved} == us.defaults("train") | {"phase": "decode"}
    mine = {**dec, "batch": 128, "tp": 8}
    moved = us.phase_switch(mine, "decode", "prefill")
    assert moved.get("context") == 0 and "batch" not in moved and "tp" not in moved
    assert us.phase_switch(dec, "decode", "decode") == {} and us.phase_switch(dec, "decode", "fly") == {}


def test_query_of_round_trips_through_read_query():
    state, _ = read(page="Memory", system="trn3-ultraserver", workload="llama-3-8b", phase="prefill", batch="2",
                    seq="8192", context="0", tp="1", s__hbm_capacity="+50%", c__hbm_efficiency="0.7")
    whatif = wi.parse_assignments([*us.quick_assignments({"hbm_capacity": state["wi_hbm_capacity"]}),
                                   *state["wi_text"].splitlines()], us.calibration_of(state["system"]))
    query = us.query_of(state["page"], state["system"], state["workload"], us.options_of(state), whatif)
    assert query["s.hbm_capacity"] == "+50%" and query["c.hbm_efficiency"] == "0.7" and query["seq"] == "8192"
    again, notices = us.read_query(query, pages=PAGE_NAMES)
    assert notices == [] and again == state


@pytest.mark.parametrize("query", [
    {"s.hbm_bandwidth": "x1e400"}, {"s.hbm_bandwidth": "+nan%"}, {"s.hbm_bandwidth": "\x00"},
    {"s.hbm_bandwidth": ""}, {"s.tdp": "0 W"}, {"c.hbm_efficiency": "1e400"}, {"w.num_hidden_layers": "1e30"},
    {"w.tie_word_embeddings": "maybe"}, {"w.num_attention_heads": "7"}, {"dtype": "fp99"}, {"page": "x" * 10000},
    {"spec.": "1"}, {"": ""},
], ids=lambda q: next(iter(q))[:20] or "empty")
def test_url_state_never_raises_on_a_bad_value(query):
    state, notices = us.read_query(query, pages=PAGE_NAMES)
    key = next(iter(query))
    one_notice(notices, f"URL parameter {key}=")
    assert state["system"] == "trn2-ultraserver"


# ---------------------------------------------------------------- the default page of each phase


@pytest.mark.parametrize("phase", us.PHASES)
def test_default_page_of_each_phase_opens_without_an_error(phase):
    at = app(phase=phase)
    assert not at.error and not warnings(at), ([e.value for e in at.error], warnings(at))
    assert metric(at, "Tokens/s per chip") > 0 and charts(at)  # tiles and the roofline drawn


@pytest.mark.parametrize("phase", ["prefill", "train"])
def test_switching_phase_from_the_default_page_lands_on_a_valid_plan(phase):
    at = app()
    at.sidebar.radio(key="phase").set_value(phase)
    rerun(at)
    assert not at.error and not warnings(at), ([e.value for e in at.error], warnings(at))
    assert {k: at.sidebar.number_input(key=k).value for k in us.INT_RANGES} == us.PHASE_DEFAULTS[phase]
    assert metric(at, "Tokens/s per chip") > 0 and at.query_params["phase"] == phase
    at.sidebar.number_input(key="batch").set_value(8)  # a value the user set stays across a switch
    rerun(at)
    at.sidebar.radio(key="phase").set_value("decode")
    rerun(at)
    assert at.sidebar.number_input(key="batch").value == 8 and at.sidebar.number_input(key="context").value == 4096


def test_url_state_a_bug_behind_a_what_if_is_a_notice_too(monkeypatch, caplog):
    from perfmodel.report import frames

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(frames, "load", broken)
    state, notices = read(s__hbm_bandwidth="+50%", batch="8")
    one_notice(notices, "s.hbm_bandwidth='+50%'", "could not be checked (RuntimeError", "ignored")
    assert state["batch"] == 8 and state["wi_hbm_bandwidth"] == 0.0
    assert "boom" in caplog.text  # the traceback goes to the log, not the page


def test_serving_fidelity_of_an_uploaded_corpus_file():
    """A few rows of the InferenceX corpus: the fidelity tables (by metric and backend; by system x backend x
    model x mode, with the gap) and one predicted-vs-measured chart per metric, each in ms."""
    at = app(page="Validation")
    rows = (Path(APP).parent / "reference" / "inferencex_serving_dev.csv").read_text().splitlines()
    few = [rows[0]] + [r for r in rows[1:] if "llama_3_1_8b" in r and "_trtllm_agg_" in r][:4]
    at.file_uploader(key="val_upload").set_value(("ix.csv", ("\n".join(few) + "\n").encode(), "text/csv"))
    rerun(at)
    assert not at.error
    overall = table(at, "metric", "backend", "verdict")
    assert set(overall["metric"]) == {"TTFT mean", "TPOT mean"} and "all" in set(overall["backend"])
    cells = table(at, "system", "backend", "workload", "mode", "gap")
    assert set(cells["workload"]) == {"llama-3.1-8b"} and set(cells["mode"]) == {"agg"}
    titles = [c.get("title", {}) for c in charts(at)]
    titles = [t.get("text", t) if isinstance(t, dict) else t for t in titles]
    assert {"TTFT mean: predicted vs measured", "TPOT mean: predicted vs measured"} <= set(titles)
