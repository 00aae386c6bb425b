"""Systems in measured data resolve through the catalogue: each system file lists the names it goes by, one index
answers every reader, and a system added to the catalogue makes its measured rows readable with no code change."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perfmodel import validation
from perfmodel.catalog import system_names
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.validation.sources import inferencex_map as mp

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "reference" / "inferencex_serving_dev.csv"


def test_names_match_whatever_their_spelling():
    assert system_names.key("H100 SXM") == system_names.key("h100_sxm") == system_names.key("h100-sxm")
    for name, system in {"h100_sxm": "p5.48xlarge", "DGX B200": "p6-b200.48xlarge", "GB300 NVL72": "gb300-nvl72",
                         "p6-b300.48xlarge": "p6-b300.48xlarge", "Trn2 UltraServer": "trn2-ultraserver"}.items():
        assert system_names.resolve(name) == system
    with pytest.raises(ValueError, match=r"unknown system 'h200 sx' \(did you mean .*'p5e.48xlarge'"):
        system_names.resolve("h200 sx")
    assert system_names.lookup("mi300x") == ""


def test_b300_and_gb300_rows_resolve_and_predict(tmp_path):
    raw = pd.read_csv(CORPUS, dtype=str, keep_default_na=False)
    b200 = raw[raw["system"].eq("b200_sxm") & raw["mode"].eq("agg") & raw["model_path"].str.contains("Llama-3.1-70B")]
    gb200 = raw[raw["system"].eq("gb200") & raw["mode"].eq("agg") & raw["model_path"].str.contains("Qwen3")]
    rows = pd.concat([b200.head(2).assign(system="b300_sxm"), gb200.head(2).assign(system="gb300")])
    rows["id"] = [f"synthetic_{i}" for i in range(len(rows))]
    path = tmp_path / "next_gen.csv"
    rows.to_csv(path, index=False)
    out = validation.run_cases(str(path)).set_index("case_id")
    for i, system in zip(rows["id"], ["p6-b300.48xlarge"] * 2 + ["gb300-nvl72"] * 2):
        for metric in ("ttft", "tpot"):
            r = out.loc[f"{i}:{metric}"]
            assert r["system"] == system and r["reason"] == "" and r["predicted"] > 0


def _catalogue_copy(tmp_path: Path, aliases: list[str]) -> Path:
    root = tmp_path / "catalogue"
    for d in ("hardware_specs", "workloads"):
        shutil.copytree(ROOT / d, root / d)
    text = (ROOT / "hardware_specs" / "p5e.48xlarge.toml").read_text()
    text = re.sub(r'^name = .*$', 'name = "acme-h200"', text, count=1, flags=re.M)
    text = re.sub(r'^display_name = .*$', 'display_name = "Acme H200 box"', text, count=1, flags=re.M)
    text = re.sub(r'^aliases = .*$', "aliases = [" + ", ".join(f'"{a}"' for a in aliases) + "]", text, count=1,
                  flags=re.M)
    (root / "hardware_specs" / "acme-h200.toml").write_text(text)
    return root


def test_a_system_added_to_the_catalogue_is_read_with_no_code_change(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CATALOG", str(_catalogue_copy(tmp_path, ["acme_h200x8"])))
    assert mp.system_name("acme_h200x8") == "acme-h200" and mp.system_name("Acme H200 box") == "acme-h200"
    row = pd.read_csv(CORPUS, dtype=str, keep_default_na=False)
    row = row[row["system"].eq("h200_sxm") & row["mode"].eq("agg")].iloc[0].to_dict()
    mapped = mp.map_row({**row, "system": "acme_h200x8"})
    assert mapped["system"] == "acme-h200" and not any("unknown system" in r for r in mapped["reasons"])


def test_a_name_claimed_by_two_systems_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CATALOG", str(_catalogue_copy(tmp_path, ["H200 SXM"])))
    with pytest.raises(CatalogError, match=r"p5e.48xlarge.toml: alias 'h200_sxm' also names 'acme-h200' "
                                           r"\(as 'H200 SXM'\)"):
        system_names.lookup("h200_sxm")


def test_quantisation_modes_as_engines_run_them(tmp_path):
    """Weight-only INT4 (int4_wo, W4A16, AWQ) stores 4-bit weights and computes in BF16; W4A8 computes in FP8;
    an unknown word is one reason naming the column and the known modes."""
    raw = pd.read_csv(CORPUS, dtype=str, keep_default_na=False)
    one = raw[raw["system"].eq("h200_sxm") & raw["mode"].eq("agg") & raw["model_path"].str.contains("Llama-3.1-70B")]
    rows = pd.concat([one.head(1).assign(gemm_quant_mode=q, id=f"q_{q}") for q in ("fp8", "int4_wo", "W4A16", "AWQ",
                                                                                      "w4a8", "bogus")])
    path = tmp_path / "quant.csv"
    rows.to_csv(path, index=False)
    out = validation.run_cases(str(path)).set_index("case_id")
    for q in ("int4_wo", "W4A16", "AWQ", "w4a8"):
        assert out.at[f"q_{q}:tpot", "predicted"] > 0 and out.at[f"q_{q}:tpot", "reason"] == ""
    note = {q: out.at[f"q_{q}:tpot", "note"] for q in ("int4_wo", "w4a8", "fp8")}
    assert "weights int4" in note["int4_wo"] and "compute bf16" in note["int4_wo"]
    assert "weights int4" in note["w4a8"] and "compute fp8" in note["w4a8"]
    # 4-bit weights in FP8 math: fewer weight bytes than FP8's, the same math, so no slower
    assert out.at["q_w4a8:tpot", "predicted"] <= out.at["q_fp8:tpot", "predicted"]
    why = out.at["q_bogus:tpot", "reason"]
    assert "gemm_quant_mode 'bogus' is not a data type" in why and "int4_wo" in why and "moe_quant_mode" not in why


def test_every_quantisation_word_says_where_its_meaning_is_documented(tmp_path):
    """Each mode carries a source; aiconfigurator's own words (sq, fp8_ootb, float16) are in the table; a mode
    without a source is refused naming the file and the mode."""
    from perfmodel.catalog import quant_modes
    from perfmodel.catalog.spec_schema import CatalogError

    modes = quant_modes.modes()
    assert all(m.source.strip() for m in modes.values())
    assert modes["sq"].weights.value == "int8" and modes["float16"].weights.value == "fp16"
    assert "arXiv:2306.00978" in modes["awq"].source and "OCP Microscaling" in modes["mxfp4"].source
    src = Path(quant_modes.__file__).resolve().parents[2] / "hardware_specs" / "serving" / "quant_modes.toml"
    bad = tmp_path / "hardware_specs" / "serving" / "quant_modes.toml"
    bad.parent.mkdir(parents=True)
    text = src.read_text()
    cut = text.index('source = ', text.index("[modes.gptq]"))
    bad.write_text(text[:cut] + text[text.index("\n", cut) + 1:])
    with pytest.raises(CatalogError, match=r"quant_modes\.toml.*modes.*gptq.*source"):
        quant_modes.modes(tmp_path)


@pytest.mark.parametrize("name, workload, dropped", [
    ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", ["-instruct"]),
    ("nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", ["-fp8", "-instruct"]),
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3", []),  # the workload file's alias: the same config.json
    ("DeepSeek-V3-0324", "deepseek-v3", ["-0324"]),
    ("Llama 3 70B pre-training (Megatron)", "llama-3-70b", ["(Megatron)", "pre-training"]),
    ("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b", ["-hf", "-chat"]),
    ("CodeLlama-13b", "llama-2-13b", []),
    ("acme/Unknown-7B", "", []),
])
def test_model_names_resolve_and_say_what_they_dropped(name, workload, dropped):
    from perfmodel.catalog import model_names

    got, words = model_names.resolve(name)
    assert got == workload and [w for w in words if not w.endswith("/")] == dropped


def test_a_variant_checkpoint_is_noted_on_its_row():
    row = pd.read_csv(CORPUS, dtype=str, keep_default_na=False)
    row = row[row["model_path"].eq("nvidia/Llama-3.1-8B-Instruct-FP8")].iloc[0].to_dict()
    mapped = mp.map_row(row)
    assert mapped["workload"] == "llama-3.1-8b"
    assert "model 'nvidia/Llama-3.1-8B-Instruct-FP8' read as llama-3.1-8b (dropped: fp8, instruct)" in mapped["notes"]
