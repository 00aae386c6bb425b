"""A model or a machine brought into the explorer as a file: an uploaded config.json or workload / system TOML is
kept where the catalogue's loaders read it, chosen in the sidebar, priced on every page, and named in the URL so a
shared link restores it; a file the loaders refuse is one line naming the upload."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from test_app import APP, checked, metric, rerun

from perfmodel import catalog
from perfmodel.report import uploads

REF = catalog.catalog_root() / "reference" / "model_configs"
LLAMA_8B = (REF / "meta-llama--Meta-Llama-3.1-8B.json").read_bytes()
SPECS = catalog.catalog_root() / "hardware_specs"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))


def _uploader(at: AppTest, key: str):
    return next(u for u in at.get("file_uploader") if u.key == key)


def _app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    return checked(at.run())


def test_a_config_json_is_kept_as_a_workload_named_after_its_model():
    ref = uploads.store("config.json", LLAMA_8B, "workload")
    assert uploads.is_upload(ref) and Path(ref).name == "config.json"
    assert uploads.label(ref) == "llama-h4096-l32 (uploaded)"
    assert uploads.store("config.json", LLAMA_8B, "workload") == ref  # the same bytes, the same reference
    assert not uploads.is_upload(str(REF / "meta-llama--Meta-Llama-3.1-8B.json"))


@pytest.mark.parametrize("name, data, kind, words", [
    ("model.txt", b"{}", "workload", "model.txt: a workload file is .json or .toml"),
    ("config.json", b'{"model_type": "llama"}', "workload", "config.json: "),
    ("box.toml", b'schema_version = 1\nkind = "system"\n', "hardware", "box.toml: "),
])
def test_a_file_the_loaders_refuse_is_one_line_naming_the_upload(name, data, kind, words):
    with pytest.raises(ValueError) as err:
        uploads.store(name, data, kind)
    text = str(err.value)
    assert text.startswith(words) and "\n" not in text and str(uploads.folder()) not in text


def test_an_uploaded_config_json_runs_on_the_roofline_page_and_a_link_restores_it():
    at = _app(page="Roofline", system="p5.48xlarge", workload="llama-3.1-8b", batch="8", tp="1")
    catalogue = metric(at, "TPOT (ms)")
    _uploader(at, "byo_model").upload("config.json", LLAMA_8B, "application/json")
    rerun(at)
    assert uploads.is_upload(at.selectbox(key="workload").value)
    assert "llama-h4096-l32" in at.subheader[0].value
    assert metric(at, "TPOT (ms)") == pytest.approx(catalogue, rel=0.02)  # the same model as the catalogue's
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    again = _app(**link)
    assert again.selectbox(key="workload").value == link["workload"] and not again.warning
    assert metric(again, "TPOT (ms)") == pytest.approx(metric(at, "TPOT (ms)"))


def test_an_uploaded_system_file_is_the_chosen_hardware():
    text = (SPECS / "dgx-h100.toml").read_text().replace('name = "dgx-h100"', 'name = "my-box"', 1)
    at = _app(page="Roofline", system="dgx-h100", workload="llama-3.1-8b", batch="8", tp="1")
    _uploader(at, "byo_system").upload("my-box.toml", text.encode(), "application/toml")
    rerun(at)
    assert at.selectbox(key="system").value.endswith("my-box.toml")
    assert metric(at, "TPOT (ms)") > 0
    bad = _app(page="Roofline")
    _uploader(bad, "byo_system").upload("other.toml", text.encode(), "application/toml")
    rerun(bad)
    assert any("other.toml: " in e.value and "my-box" in e.value for e in bad.error)  # name must match the stem


def test_the_custom_hardware_form_writes_files_the_catalogue_loads(tmp_path):
    import dataclasses

    from perfmodel.core.dtypes import DType
    from perfmodel.report import custom_hardware as ch

    start = ch.Form.of("trn2-ultraserver")
    mine = dataclasses.replace(start, name="my-trn", bf16_tflops=2 * start.bf16_tflops, hbm_tb_per_s=5.8,
                               link_factor=2.0, price_usd_per_node_hour=40.0)
    ref = ch.write(mine, tmp_path)
    s, base = catalog.load_system(ref), catalog.load_system("trn2-ultraserver")
    rate, was = s.chip.tensor.flop_per_s, base.chip.tensor.flop_per_s
    assert rate[DType.BF16] == pytest.approx(2 * was[DType.BF16])
    assert rate[DType.FP32] == pytest.approx(2 * was[DType.FP32])  # 16/32-bit types follow the BF16 entry
    assert rate[DType.FP8] == pytest.approx(was[DType.FP8])  # 8-bit types follow the FP8 entry, unchanged
    assert s.chip.hbm_bandwidth_bytes_per_s == pytest.approx(5.8e12) and s.node.price_usd_per_hour == 40.0
    scaleup = [(t.bandwidth_bytes_per_s, b.bandwidth_bytes_per_s) for t, b in zip(s.tiers, base.tiers)
               if t.scope.value != "scaleout"]
    assert scaleup and all(a == pytest.approx(2 * b) for a, b in scaleup)
    with pytest.raises(ValueError, match="give a plain name"):
        ch.write(dataclasses.replace(mine, name="../x"), tmp_path)


def test_the_form_scales_the_rates_a_derived_chip_inherits(tmp_path):
    """trainium4's file lists only its MX rates and inherits BF16 / FP8 from trainium3: the entered rates reach
    every type all the same (they were dropped when only the base file's own types were written)."""
    import dataclasses

    from perfmodel.core.dtypes import DType
    from perfmodel.report import custom_hardware as ch

    start = ch.Form.of("trn4-projected")
    mine = dataclasses.replace(start, name="my-trn4", bf16_tflops=2 * start.bf16_tflops,
                               fp8_tflops=2 * start.fp8_tflops)
    s, base = catalog.load_system(ch.write(mine, tmp_path)), catalog.load_system("trn4-projected")
    rate, was = s.chip.tensor.flop_per_s, base.chip.tensor.flop_per_s
    assert set(rate) == set(was)
    for d in (DType.BF16, DType.FP8, DType.FP32):
        assert rate[d] == pytest.approx(2 * was[d])


def test_the_form_in_the_explorer_makes_the_chosen_machine():
    at = _app(page="Roofline", system="p5.48xlarge", workload="llama-3.1-8b", batch="8", tp="1")
    before = metric(at, "TPOT (ms)")
    at.selectbox(key="hwf_base").set_value("p5.48xlarge")
    rerun(at)
    at.number_input(key="hwf_p5.48xlarge_bw").set_value(6.7)  # twice the H100's 3.35 TB/s
    at.text_input(key="hwf_p5.48xlarge_name").set_value("my-p5")
    at.get("form_submit_button")[0].click()
    rerun(at)
    assert at.selectbox(key="system").value.endswith("my-p5.toml")
    assert 0.5 < metric(at, "TPOT (ms)") / before < 0.65  # batch-8 decode reads its weights: about half the time
    assert any(b.key == "hwf_download" for b in at.get("download_button"))
