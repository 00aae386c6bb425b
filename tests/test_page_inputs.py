"""The serving and planner pages' inputs live in the URL: read as the widgets would take them (a bad value is a notice
naming the parameter and keeps the default), written back for the shown page only, and restored by a shared link."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from test_app import APP, checked, rerun

from perfmodel import catalog
from perfmodel.report import page_inputs as pi
from perfmodel.report import url_state as us

SYSTEMS = catalog.list_systems()
PLANNER = {"plan_rps": "250", "plan_peak": "2", "plan_isl": "2048", "plan_osl": "512", "plan_tpot": "0.05",
           "plan_ttft": "3", "plan_systems": "p5.48xlarge,trn2-ultraserver", "plan_grid": "quick", "plan_pct": "0",
           "plan_modes": "aggregated,disaggregated"}
SERVING = {"srv_systems": "trn3-ultraserver", "srv_isl": "4096", "srv_osl": "256", "srv_y": "chip",
           "srv_grid": "quick", "srv_frontiers": "both"}


def test_every_input_round_trips_through_the_url():
    for page, qp in (("Capacity planner", PLANNER), ("Serving", SERVING)):
        values, notices = pi.read(qp, SYSTEMS)
        assert notices == []
        assert pi.query(page, values) == qp
    values, _ = pi.read(PLANNER, SYSTEMS)
    assert values["plan_rps"] == 250.0 and values["plan_isl"] == 2048 and values["plan_pct"] == 0
    assert values["plan_systems"] == ["p5.48xlarge", "trn2-ultraserver"]
    assert values["srv_isl"] == 1024  # another page's input keeps its default


@pytest.mark.parametrize("key, text, words", [
    ("plan_rps", "-5", "out of range; allowed: numbers 0.001 to 10,000,000"),
    ("plan_isl", "2.5", "not a whole number; allowed: whole numbers 1 to 1,048,576"),
    ("plan_tpot", "fast", "not a number; allowed: numbers 0.001 to 10"),
    ("plan_systems", "p5.48xlarge,h9000", "unknown system 'h9000'"),
    ("plan_modes", "turbo", "unknown option 'turbo'; allowed: comma-separated aggregated, chunked, disaggregated"),
    ("coll_algs", "ring,warp", "unknown option 'warp'"),
    ("ul_n", "10", "out of range; allowed: whole numbers 100 to 50,000"),
    ("srv_y", "per-banana", "not an option; allowed: mw, chip, usd, users"),
    ("plan_pct", "95", "not an option; allowed: 0, 50, 90, 99"),
])
def test_a_value_the_widget_would_not_take_is_a_notice(key, text, words):
    values, notices = pi.read({key: text}, SYSTEMS)
    assert values[key] == pi.defaults()[key]
    assert len(notices) == 1 and notices[0].startswith(f"URL parameter {key}={text!r}: ") and words in notices[0]
    state, app_notices = us.read_query({key: text}, pages=["Capacity planner", "Serving"])
    assert app_notices == notices and state[key] == pi.defaults()[key]


def test_the_app_restores_the_planner_from_a_shared_link_and_writes_it_back():
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"page": "Capacity planner", "workload": "llama-3-8b", **PLANNER}.items():
        at.query_params[k] = v
    checked(at.run())
    assert not at.warning, [w.value for w in at.warning]
    assert at.number_input(key="plan_rps").value == 250.0 and at.number_input(key="plan_isl").value == 2048
    assert at.number_input(key="plan_tpot").value == 0.05 and at.number_input(key="plan_peak").value == 2.0
    assert at.multiselect(key="plan_systems").value == ["p5.48xlarge", "trn2-ultraserver"]
    assert at.multiselect(key="plan_modes").value == ["aggregated", "disaggregated"]
    at.number_input(key="plan_rps").set_value(40.0)
    rerun(at)
    url = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert url["plan_rps"] == "40" and url["plan_systems"] == "p5.48xlarge,trn2-ultraserver"
    assert not any(k.startswith("srv_") for k in url)  # only the shown page's inputs


SLOW = {"plan_pct", "plan_grid", "srv_grid"}  # another value would simulate or sweep every plan: kept at default


def _other(i: pi.Input):
    """A value of input `i` other than its default, that its widget takes (the cheapest to compute)."""
    if i.kind in ("int", "float"):
        return i.low if i.low != i.default else i.low + 1
    if i.kind == "systems":
        return ["p5.48xlarge"]
    options = [o for o in i.options() if o not in (i.default if isinstance(i.default, list) else [i.default])]
    return [options[-1]] if i.kind == "multi" else options[-1]


@pytest.mark.parametrize("page", [p for p in pi.PAGE_INPUTS if p not in ("Serving", "Capacity planner")])
def test_every_page_restores_its_inputs_from_a_link(page):
    """Each page of the explorer keeps its inputs in the URL: a link with other values than the defaults opens
    the page with them and writes the same values back."""
    values = {i.key: _other(i) for i in pi.PAGE_INPUTS[page] if i.key not in SLOW}
    link = pi.query(page, values)
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"page": page, "workload": "llama-3-8b", "system": "p5.48xlarge", "tp": "1", **link}.items():
        at.query_params[k] = v
    checked(at.run())
    assert not at.warning or all("URL parameter" not in w.value for w in at.warning)
    for key, value in values.items():
        assert at.session_state[key] == value, key
    url = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert {k: url.get(k) for k in link} == link


def test_a_number_widget_takes_the_range_a_link_is_read_with():
    """bounds() is what the widgets are given: a value a widget accepts is one a shared link keeps."""
    from perfmodel.report import url_state

    assert pi.TOKENS == url_state.INT_RANGES["seq"][1]
    for inputs in pi.PAGE_INPUTS.values():
        for i in (i for i in inputs if i.kind in ("int", "float")):
            b = pi.bounds(i.key)
            assert (b["min_value"], b["max_value"]) == (i.low, i.high) and b["min_value"] <= i.default
            assert all(isinstance(v, int if i.kind == "int" else float) for v in b.values())
