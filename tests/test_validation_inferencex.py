"""The InferenceX serving corpus read as it is: recognised by its columns, two cases per row (<id>:ttft,
<id>:tpot), mapping rules written once (systems, model aliases, checkpoint data types, agg and disagg
plans), every reason listed for a row the model cannot express, and the predictions equal to the
steady state's (agg: one serve(); disagg: the prefill pool's TTFT, the decode pool's TPOT) at the client's
mean lengths, with the serving engine and the closed loop around them (serving/closed_loop.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, validation
from perfmodel.catalog import serving_engines, workload_files
from perfmodel.catalog.replacements import Replacements
from perfmodel.core.dtypes import DType
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, serve
from perfmodel.validation.sources import inferencex_map as mp
from perfmodel.validation.sources.inferencex import COLUMNS, predict

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "reference" / "inferencex_serving_dev.csv"
# coverage reached on the development file (1,603 of 1,684 rows predicted; issue 16 asks >= 95%): the rest
# are plans perfmodel refuses (DeepSeek's 128 heads over TP 12-52, plans that cannot hold the model), each
# listed with its reasons. TP beyond the 8-GPU NVLink domain runs, over the scale-out network.
COVERAGE = 0.95


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return pd.read_csv(CORPUS, dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def dev() -> pd.DataFrame:
    return validation.run_cases(CORPUS)


def _write(tmp_path: Path, rows: pd.DataFrame) -> Path:
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    return path


def _row(raw: pd.DataFrame, id_: str) -> pd.DataFrame:
    return raw[raw["id"].eq(id_)].copy()


# ---------------------------------------------------------------- the format


def test_the_corpus_is_recognised_by_its_columns(raw, tmp_path):
    assert set(COLUMNS) <= set(raw.columns) and not set(validation.CASE_COLUMNS) <= set(raw.columns)
    path = _write(tmp_path, raw.head(3))
    cases = validation.measurements(path=path)
    assert set(validation.CASE_COLUMNS) <= set(cases.columns)
    assert list(cases["case_id"]) == [f"{i}:{m}" for i in raw["id"].head(3) for m in ("ttft", "tpot")]
    assert set(validation.run_cases(path)["family"]) == {"inferencex"}
    # one identifying column missing: not recognised, and the error names the recognised formats
    _write(tmp_path, raw.head(3).drop(columns=["silicon_tpot_ms"]))
    with pytest.raises(validation.CasesError, match="recognised format: inferencex"):
        validation.measurements(path=path)


def test_a_row_without_a_measurement_is_one_line_naming_row_and_field(raw, tmp_path):
    rows = raw.head(4).copy()
    rows.iloc[2, rows.columns.get_loc("silicon_ttft_ms")] = ""
    with pytest.raises(validation.CasesError, match=r"row 4 \(id .*\) field 'silicon_ttft_ms'"):
        validation.measurements(path=_write(tmp_path, rows))


def test_every_row_gives_two_cases_and_each_is_predicted_or_has_a_reason(dev, raw):
    ids = {f"{i}:{m}" for i in raw["id"] for m in ("ttft", "tpot")}
    assert len(dev) == 2 * len(raw) == len(ids) and set(dev["case_id"]) == ids
    assert set(dev["family"]) == {"inferencex"}
    m = dev.set_index("case_id")
    assert set(m.loc[[f"{i}:ttft" for i in raw["id"]], "metric"]) == {"TTFT mean"}
    assert set(m.loc[[f"{i}:tpot" for i in raw["id"]], "phase"]) == {"decode"}
    pred = dev["predicted"].notna()
    assert (dev.loc[pred, "predicted"] > 0).all() and (dev.loc[pred, "reason"] == "").all()
    assert (dev.loc[~pred, "reason"].str.len() > 0).all()
    assert set(dev.loc[pred, "system"]) == {mp.system_name(s) for s in raw["system"]}
    # a row is expressed for both metrics or for neither
    both = dev.assign(id=dev["case_id"].str.rsplit(":", n=1).str[0]).groupby("id")["predicted"].count()
    assert set(both) <= {0, 2}


def test_coverage(dev):
    assert dev["predicted"].notna().mean() >= COVERAGE


# ---------------------------------------------------------------- mapping rules


CORPUS_SYSTEMS = {"h100_sxm": "p5.48xlarge", "h200_sxm": "p5e.48xlarge", "b200_sxm": "p6-b200.48xlarge",
                  "gb200": "gb200-nvl72", "b300_sxm": "p6-b300.48xlarge", "gb300": "gb300-nvl72"}


def test_systems_map_to_catalogue_systems():
    for corpus, name in CORPUS_SYSTEMS.items():  # through the system files' aliases, spelling aside
        assert mp.system_name(corpus) == name and name in catalog.list_systems()
        assert mp.system_name(corpus.upper().replace("_", " ")) == name
    assert mp.system_name("mi300x") == ""


@pytest.mark.parametrize("hf, workload", [
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3"), ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
    ("nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b"), ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-70B", "llama-3.1-70b"), ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
    ("Qwen/Qwen3-32B", "qwen3-32b"), ("openai/gpt-oss-120b", "gpt-oss-120b"), ("acme/Unknown-7B", ""),
])
def test_model_ids_and_aliases(hf, workload):
    assert mp.workload_name(hf) == workload


def test_llama_3_1_has_its_own_positions():
    assert workload_files.load_workload("llama-3.1-70b").max_position_embeddings == 131_072
    assert workload_files.load_workload("llama-3-70b").max_position_embeddings == 8192


def test_fp4_is_the_checkpoints_own_format():
    oss, ds = workload_files.load_workload("gpt-oss-120b"), workload_files.load_workload("deepseek-v3")
    # GPT-OSS ships MXFP4 experts and BF16 attention (modules_to_not_convert); NVIDIA's 4-bit checkpoints are NVFP4
    assert mp.storage_type("fp4", oss, experts=True) == DType.MXFP4
    assert mp.storage_type("nvfp4", oss, experts=False) == DType.BF16
    assert mp.storage_type("nvfp4", ds, experts=True) == mp.storage_type("nvfp4", ds, experts=False) == DType.FP4
    assert mp.storage_type("fp8_block", ds, experts=True) == DType.FP8
    assert mp.storage_type("", ds, experts=False) == DType.FP8  # blank: the checkpoint's own
    assert mp.storage_type("", workload_files.load_workload("qwen3-32b"), experts=False) == DType.BF16
    assert mp.storage_type("fp3", ds, experts=False) is None
    h100, b200 = catalog.load_system("p5.48xlarge"), catalog.load_system("p6-b200.48xlarge")
    assert mp.compute_type(DType.FP4, b200) == DType.FP4 and mp.compute_type(DType.FP4, h100) == DType.BF16
    assert mp.compute_type(DType.FP8, h100) == DType.FP8


def test_plans_pools_and_load(raw):
    agg = raw[raw["id"].eq("dsr1_b200_trtllm_fp4_agg_1024x8192_c128_cfg191")].iloc[0].to_dict()
    m = mp.map_row(agg)  # batch_size 2 per attention-DP rank x 64 ranks = silicon_concurrency 128
    assert m["pools"]["agg"] == mp.Pool(tp=1, pp=1, da=64, moe_tp=8, moe_ep=8) and m["concurrency"] == 128
    dis = raw[raw["id"].eq("dsr1_gb200_trtllm_fp4_disagg_1024x1024_c48_cfg388")].iloc[0].to_dict()
    m = mp.map_row(dis)  # 48 requests over 4 decode workers of TP8 EP8; prefill TP1 DA4 EP4
    assert m["pools"]["prefill"] == mp.Pool(tp=1, pp=1, da=4, moe_tp=1, moe_ep=4)
    assert m["pools"]["decode"] == mp.Pool(tp=8, pp=1, da=1, moe_tp=1, moe_ep=8)
    assert (m["total"], m["workers"], m["concurrency"]) == (48, 4, 12) and m["reasons"] == []
    assert mp.paced(10, mp.Pool(1, 1, 8, 1, 8)) == 16  # the busiest DP rank holds ceil(10/8) = 2


def test_an_unknown_system_and_model_lists_both_reasons(raw, tmp_path):
    rows = raw.head(2).copy()
    rows.iloc[0, rows.columns.get_loc("system")] = "tpu_v9"
    rows.iloc[0, rows.columns.get_loc("model_path")] = "acme/Nonesuch-1T"
    df = validation.run_cases(_write(tmp_path, rows))
    bad = df[df["case_id"].str.startswith(rows.iloc[0]["id"] + ":")]
    assert len(bad) == 2 and bad["predicted"].isna().all()
    for reason in bad["reason"]:
        assert "unknown system 'tpu_v9'" in reason and "'acme/Nonesuch-1T' has no workload file" in reason


def test_every_plan_rule_broken_is_listed(dev):
    m = dev.set_index("case_id")
    # DeepSeek-V3's 128 query and 128 KV heads over TP 12: both head rules
    r = m.loc["2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_1024x1024_c2252_tp12_ep1_27:ttft", "reason"]
    assert "tp_heads: tp=12" in r and "tp_kv_heads: tp=12" in r
    # TP 16 on 8-GPU H100 nodes runs (over the scale-out network): predicted, not listed
    r = m.loc["2026_04_06_deepseek_r1_h100_sxm_sglang_fp8_disagg_8192x1024_c128_tp16_ep1_1821:tpot"]
    assert "tp_scaleup" not in r["reason"]


# ---------------------------------------------------------------- the predictions: steady state + engine + client


def _tau(engine: str, running: float, da: float = 1.0) -> float:
    """The engine's host time per step, tau_0 + tau_1 S / d_a, from the letters."""
    p = serving_engines.engine(engine)
    return p["step_cost"] + p["step_cost_per_sequence"] * running / da


def test_agg_prices_the_gpu_at_the_protocols_mean_lengths_then_adds_the_engine(dev):
    """TPOT = the steady state's at the running batch (lengths uniform in [0.8 L, L]: mean 922 of 1024) plus the
    engine's host time per step; TTFT adds the closed loop's waits to the idle-queue TTFT, and the fitted steps
    to the first token to that."""
    case = "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x1024_c4_tp4_ep1_670"
    m = dev.set_index("case_id")
    r = serve(catalog.load_system("p5e.48xlarge"), workload_files.load_workload("llama-3.1-70b"),
              Grid.of(tp=4, concurrency=4, compute=DType.FP8, weights=DType.FP8), Mix(922, 922),
              ServingOptions(mode=Mode.AGGREGATED)).iloc[0]
    assert m.at[f"{case}:tpot", "predicted_unfitted"] == pytest.approx(r["time_per_output_token_s"] * 1e3)
    assert m.at[f"{case}:tpot", "predicted"] == pytest.approx((r["time_per_output_token_s"] + _tau("trtllm", 4)) * 1e3)
    assert m.at[f"{case}:ttft", "predicted_unfitted"] > r["ttft_s"] * 1e3  # a burst of 4, then waves
    assert m.at[f"{case}:ttft", "predicted"] > m.at[f"{case}:ttft", "predicted_unfitted"]


def test_disagg_ttft_from_the_prefill_pool_and_tpot_from_the_decode_pool(dev):
    case = "dsr1_gb200_trtllm_fp4_disagg_1024x1024_c48_cfg388"
    m = dev.set_index("case_id")
    system, arch = catalog.load_system("gb200-nvl72"), workload_files.load_workload("deepseek-v3")
    fp4 = dict(compute=DType.FP4, weights=DType.FP4, expert_weights=DType.FP4)
    opts = ServingOptions(mode=Mode.DISAGGREGATED)
    pre = serve(system, arch, Grid.of(tp=1, da=4, ep=4, concurrency=4, **fp4), Mix(922, 922), opts).iloc[0]
    dec = serve(system, arch, Grid.of(tp=8, ep=8, concurrency=12, **fp4), Mix(922, 922), opts).iloc[0]
    assert m.at[f"{case}:ttft", "predicted_unfitted"] >= pre["ttft_s"] * 1e3
    assert m.at[f"{case}:tpot", "predicted"] == pytest.approx((dec["time_per_output_token_s"]
                                                               + _tau("trtllm", 12)) * 1e3)
    assert "TP1 DA4 EP4" in m.at[f"{case}:ttft", "note"] and "TP8 DA1 EP8" in m.at[f"{case}:tpot", "note"]


def test_the_engine_cap_runs_fewer_than_the_benchmarks_concurrency(raw):
    """GPT-OSS on vLLM at C = 512 above a running cap of 128: TPOT priced at 128 sequences, TTFT with the
    queue of the other 384 (each waits for (C - S) / S of a running request's life)."""
    row = _row(raw, "2026_04_06_gpt_oss_120b_h100_sxm_vllm_fp4_agg_1024x1024_c512_tp4_ep1_1133")
    capped = serving_engines.engine("vllm").with_overrides({"max_running": 128})
    free = predict(row).iloc[0]
    p = predict(row, Replacements(engines={"vllm": capped})).iloc[0]
    assert free["running"] == 512 and p["running"] == 128
    assert p["tpot_ms"] < free["tpot_ms"] and p["ttft_ms"] > 3 * free["ttft_ms"]


def test_decode_replicas_when_the_worker_count_is_not_given(raw):
    """A disagg row without decode_num_workers: the fewest decode replicas whose KV cache holds C."""
    row = _row(raw, "2026_04_06_deepseek_r1_gb200_trtllm_fp4_disagg_1024x1024_c16130_tp4_ep4_1660")
    assert row["decode_num_workers"].iloc[0] == ""
    p = predict(row).iloc[0]
    assert p["workers"] > 1 and p["concurrency"] * p["workers"] >= 16130
    assert "decode_num_workers not given" in p["notes"] and np.isfinite(p["tpot_ms"])


def test_the_readme_fidelity_table_is_what_the_model_gives_today(dev):
    """README's fidelity block is `perfmodel validate --cases reference/inferencex_serving_dev.csv --show fidelity
    --format md`, re-run: a change that moves a figure must move the README with it."""
    from perfmodel.cli.validate import TITLES
    from perfmodel.report import export
    from perfmodel.validation import fidelity

    sheets = fidelity.sheets(dev)
    text = "\n\n".join(export.emit(sheets[k], "md", TITLES[k]) for k in ("fidelity_overall", "fidelity")).strip()
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- fidelity:begin -->")[1].split("<!-- fidelity:end -->")[0].strip()
    assert block == text
    overall = sheets["fidelity_overall"].set_index(["metric", "backend", "plan"])
    assert overall.loc[("TTFT mean", "all", "all"), "coverage_frac"] >= COVERAGE
    # the fitted engine parameters help on every backend (the unfitted prediction is beside)
    ttft = overall.xs(("TTFT mean", "all"), level=("metric", "plan"))
    assert (ttft["median_abs_error_frac"] < ttft["median_abs_error_unfitted_frac"]).all()
