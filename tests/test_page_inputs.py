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
           "srv_grid": "quick"}


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
    ("plan_modes", "turbo", "unknown mode 'turbo'; allowed: comma-separated aggregated, chunked, disaggregated"),
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
