"""Scenarios as files: saved from the CLI (--save-scenario) and the explorer, loaded by either (--scenario, the
sidebar), and compared side by side with each one's change against the first (perfmodel compare, the Compare page)."""

from __future__ import annotations

import dataclasses
import io
import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_app import APP, checked, rerun

from perfmodel import cli
from perfmodel.catalog import scenario_files as sf
from perfmodel.catalog import whatif as wi
from perfmodel.catalog.files import catalog_root
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.report import scenario_compare

BASE = sf.Saved("trn2 tp4", "trn2-ultraserver", "llama-3-8b", wi.ScenarioOptions(phase="decode", batch=64,
                                                                                   context=4096, tp=4))


def _write(tmp_path, saved: sf.Saved, name: str = "") -> str:
    path = tmp_path / f"{name or saved.name.replace(' ', '_')}.toml"
    path.write_text(sf.to_toml(saved))
    return str(path)


def test_a_scenario_round_trips_through_its_file(tmp_path):
    saved = sf.Saved("train, HBM +50%", "p5.48xlarge", "llama-3.1-8b",
                     wi.ScenarioOptions(phase="train", batch=2, seq_len=4096, tp=8, dp=2, zero=1, recompute="full",
                                        sequence_parallel=True),
                     wi.parse_assignments(["hbm_bandwidth=+50%", "cal.hbm_efficiency=0.8"]), "a what-if")
    assert sf.load(_write(tmp_path, saved, "a")) == saved


@pytest.mark.parametrize("edit, words", [
    (("batch = 64", "batch = 0"), "field options: scenario option batch: must be between 1"),
    (('dtype = "bf16"', 'dtype = "bf17"'), "field options: "),
    (("tp = 4", "tp = 100000000"), "field options: "),
    (("whatif = []", 'whatif = ["spec.hbm_bandwidth=abc"]'), "field whatif: "),
    (('system = "trn2-ultraserver"', 'system = "gone.toml"'),
     "field system: no file 'gone.toml' (a path is read from the scenario's folder)"),
    (("tp = 4", "tp = 4\nturbo = 2"), "field options.turbo"),
    (('system = "trn2-ultraserver"', 'system = "trn9"'), "field system: "),
    (('workload = "llama-3-8b"', 'workload = "llama-9"'), "field workload: "),
    (("whatif = []", 'whatif = ["hbm_bandwith=2 TB/s"]'), "field whatif: "),
])
def test_a_bad_scenario_file_is_one_line_naming_file_and_field(tmp_path, edit, words):
    path = tmp_path / "bad.toml"
    path.write_text(sf.to_toml(BASE).replace(*edit))
    with pytest.raises(CatalogError) as err:
        sf.load(path)
    assert str(err.value).startswith(str(path)) and words in str(err.value) and "\n" not in str(err.value)


def test_the_cli_saves_loads_and_overrides_a_scenario(tmp_path, capsys):
    a = tmp_path / "a.toml"
    assert cli.main(["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--batch", "64",
                     "--context", "4096", "--tp", "4", "--save-scenario", str(a), "--scenario-name", "trn2 tp4",
                     "--format", "csv"]) == 0
    first = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert sf.load(a) == BASE
    b = tmp_path / "b.toml"
    assert cli.main(["roofline", "--scenario", str(a), "--tp", "8", "--set", "hbm_bandwidth=+50%",
                     "--save-scenario", str(b), "--format", "csv"]) == 0
    second = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert sf.load(b) == sf.Saved("b", "trn2-ultraserver", "llama-3-8b", BASE.options.replace(tp=8),
                                  wi.parse_assignments(["hbm_bandwidth=+50%"]))
    assert first.shape == second.shape  # the same command, another plan
    assert cli.main(["compare", str(a), str(b), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    values = pd.DataFrame(doc["results"]["values"])
    tpot = values[values["figure"] == "time_per_output_token_s"].set_index("scenario")
    assert tpot.loc["b", "change_frac"] == pytest.approx(tpot.loc["b", "value"] / tpot.loc["trn2 tp4", "value"] - 1)
    assert tpot.loc["b", "value"] < tpot.loc["trn2 tp4", "value"]  # tp8 and 50% more bandwidth: faster tokens
    assert cli.main(["compare", str(a)]) == 1
    assert "compare needs two scenarios or more" in capsys.readouterr().err
    assert cli.main(["roofline", "--batch", "3"]) == 1
    assert "--hardware and --workload required (or --scenario FILE.toml naming them)" in capsys.readouterr().err


def test_the_comparison_states_each_change_against_the_first():
    trn3 = sf.Saved("trn3 tp4", "trn3-ultraserver", "llama-3-8b", BASE.options)
    shown, values = scenario_compare.compare([BASE, trn3])
    row = shown.set_index("figure")
    assert row.loc["system", "trn3 tp4 vs trn2 tp4"] == "trn3-ultraserver"
    assert row.loc["workload", "trn3 tp4 vs trn2 tp4"] == "same"
    v = values.set_index(["scenario", "figure"])["value"]
    change = v["trn3 tp4", "tokens_per_s_per_chip"] / v["trn2 tp4", "tokens_per_s_per_chip"] - 1
    assert row.loc["Tokens/s per chip", "trn3 tp4 vs trn2 tp4"] == f"{change:+.1%}"
    with pytest.raises(ValueError, match="names must differ"):
        scenario_compare.compare([BASE, BASE])


def test_the_explorer_pins_loads_and_compares_scenarios(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["page"], at.query_params["workload"] = "Compare", "llama-3-8b"
    checked(at.run())
    at.button(key="scenario_pin").click()
    rerun(at)
    at.number_input(key="tp").set_value(8)
    rerun(at)
    at.button(key="scenario_pin").click()
    rerun(at)
    table = at.dataframe[0].value.set_index("figure")
    delta = [c for c in table.columns if " vs " in c]
    assert len(delta) == 1 and table.loc["plan", delta[0]] == "tp8"
    assert table.loc["Tokens/s per chip", delta[0]].endswith("%")
    # a scenario file loaded into the sidebar sets it
    loaded = sf.Saved("x", "p5.48xlarge", "llama-3.1-8b", BASE.options.replace(tp=2, dp=2))
    next(u for u in at.get("file_uploader") if u.key == "byo_scenario").upload("x.toml", sf.to_toml(loaded).encode())
    rerun(at)
    assert at.selectbox(key="system").value == "p5.48xlarge" and at.number_input(key="tp").value == 2
    assert any("Scenario 'x' loaded; the sidebar does not hold dp=2" in i.value for i in at.info)


def test_a_scenario_naming_a_file_the_explorer_lacks_is_one_line(tmp_path, monkeypatch):
    """A scenario saved on another machine may name its own system file: the explorer says so and keeps the
    sidebar as it was (never a silent default)."""
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    elsewhere = sf.Saved("x", str(tmp_path / "box.toml"), "llama-3.1-8b", wi.ScenarioOptions())
    at = AppTest.from_file(APP, default_timeout=120)
    checked(at.run())
    before = at.selectbox(key="system").value
    specs = catalog_root() / "hardware_specs"
    (tmp_path / "box.toml").write_text((specs / "dgx-h100.toml").read_text().replace('name = "dgx-h100"',
                                                                                      'name = "box"', 1))
    next(u for u in at.get("file_uploader") if u.key == "byo_scenario").upload("x.toml",
                                                                               sf.to_toml(elsewhere).encode())
    rerun(at)
    assert at.selectbox(key="system").value == before
    assert any(e.value.startswith("x.toml: its system ") and "upload it above" in e.value for e in at.error)


def test_a_saved_scenario_names_its_files_from_its_own_folder(tmp_path, monkeypatch, capsys):
    """--hardware ./box.toml given from one folder, the scenario saved in another: the file is named relative to
    the scenario (what load reads), and an existing scenario file is replaced only with --force."""
    specs = catalog_root() / "hardware_specs"
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "box.toml").write_text((specs / "dgx-h100.toml").read_text().replace(
        'name = "dgx-h100"', 'name = "box"', 1))
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    argv = ["roofline", "--hardware", "hw/box.toml", "--workload", "llama-3.1-8b", "--batch", "8",
            "--save-scenario", "out/s.toml", "--format", "csv"]
    assert cli.main(argv) == 0
    assert 'system = "../hw/box.toml"' in (tmp_path / "out" / "s.toml").read_text()
    assert sf.load(tmp_path / "out" / "s.toml").system == str((tmp_path / "hw" / "box.toml").resolve())
    assert cli.main(argv) == 1 and "pass --force" in capsys.readouterr().err
    assert cli.main([*argv, "--force"]) == 0


def test_an_uploaded_scenario_naming_a_missing_file_names_it_as_written(tmp_path, monkeypatch):
    """The upload's kept copy lives under the server's cache: the refusal names the file as the scenario writes
    it, never that folder."""
    from perfmodel.report import uploads

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    text = sf.to_toml(dataclasses.replace(BASE, system="my-box.toml"))
    with pytest.raises(ValueError) as err:
        uploads.store("s.toml", text.encode(), "scenario")
    msg = str(err.value)
    assert msg.startswith("s.toml: field system: no file 'my-box.toml'") and str(tmp_path) not in msg
