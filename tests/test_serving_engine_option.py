"""A serving engine around the GPU in the steady state (ServingOptions.software): its host time per step joins
TPOT, its steps to the first token join TTFT (closed_loop's formulas at an idle queue), its KV allotment
decides the fit, and a concurrency above its running cap is refused; the CLI takes --engine."""

from __future__ import annotations

import pytest

from perfmodel import catalog, cli
from perfmodel.catalog import serving_engines, workload_files
from perfmodel.serving.steady_state import Mode, ServingOptions, serve_one

SYSTEM, WORKLOAD = "p5e.48xlarge", "llama-3.1-70b"


def _pair(mode: Mode, engine: str, concurrency: int = 64, replaced=None):
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(WORKLOAD)
    kw = dict(tp=8, concurrency=concurrency, compute="fp8")
    prof = serving_engines.engine(engine, replaced=replaced)
    return (serve_one(s, a, **kw, options=ServingOptions(mode=mode)),
            serve_one(s, a, **kw, options=ServingOptions(mode=mode, software=prof)))


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_aggregated_adds_the_engines_step_and_first_token_by_hand(engine):
    gpu, eng = _pair(Mode.AGGREGATED, engine)
    p = serving_engines.engine(engine)
    # host time per step: tau_0 + tau_1 S / d_a, here S = 64 sequences on one attention-DP rank
    tau, kappa, t_d = p["step_cost"] + p["step_cost_per_sequence"] * 64, p["first_token_steps"], gpu["decode_step_s"]
    assert eng["time_per_output_token_s"] == pytest.approx(gpu["time_per_output_token_s"] + tau)
    # GPU alone: t_d / 2 + L_f; with the engine: kappa t_s + t_s / 2 + L_f, t_s = t_d + tau
    assert eng["ttft_s"] == pytest.approx(gpu["ttft_s"] + kappa * (t_d + tau) + tau / 2)
    assert eng["engine"] == engine and gpu["engine"] == "none"
    # host time per step costs throughput
    assert tau > 0 and eng["output_tokens_per_s_per_chip"] < gpu["output_tokens_per_s_per_chip"]


def test_host_time_grows_with_the_sequences_each_attention_dp_rank_schedules():
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(WORKLOAD)
    prof = serving_engines.engine("trtllm").with_overrides({"step_cost": "1 ms", "step_cost_per_sequence": "20 us"})
    rows = {c: (serve_one(s, a, tp=8, concurrency=c, compute="fp8", options=ServingOptions()),
                serve_one(s, a, tp=8, concurrency=c, compute="fp8", options=ServingOptions(software=prof)))
            for c in (16, 128)}
    for c, (gpu, eng) in rows.items():  # 1 ms + 20 us x C on one rank, in every step and so in TPOT
        host = 1e-3 + 20e-6 * c
        assert eng["time_per_output_token_s"] - gpu["time_per_output_token_s"] == pytest.approx(host, rel=1e-9)


def test_disaggregated_uses_its_own_steps_to_the_first_token():
    gpu, eng = _pair(Mode.DISAGGREGATED, "trtllm")
    p = serving_engines.engine("trtllm")
    t_s = gpu["decode_step_s"] + p["step_cost"] + p["step_cost_per_sequence"] * 64
    assert eng["ttft_s"] == pytest.approx(gpu["ttft_s"] + p["first_token_steps_disagg"] * t_s + t_s / 2)


def test_the_engines_kv_allotment_decides_how_many_sequences_fit():
    gpu, eng = _pair(Mode.AGGREGATED, "sglang")
    h200 = catalog.load_system(SYSTEM).chip.hbm_capacity_bytes
    # SGLang takes 85% of HBM for weights and KV; the GPU alone keeps only the runtime's reserve back
    assert eng["max_concurrency_kv"] < gpu["max_concurrency_kv"]
    assert eng["hbm_capacity_bytes"] == h200


def test_a_concurrency_above_the_engines_cap_is_not_a_valid_answer():
    capped = serving_engines.engine("vllm").with_overrides({"max_running": 32})
    _, eng = _pair(Mode.AGGREGATED, "vllm", concurrency=64, replaced=catalog.Replacements(engines={"vllm": capped}))
    assert not eng["valid"] and "runs at most 32 sequences" in eng["invalid_reason"]


def test_cli_engine_option_and_an_unknown_engine_in_one_line(capsys):
    base = ["serve", "--hardware", SYSTEM, "--workload", WORKLOAD, "--tp", "8", "--dtype", "fp8", "--concurrency", "16",
            "--format", "csv", "--no-progress"]
    assert cli.main(base + ["--engine", "trtllm"]) == 0
    assert "trtllm" in capsys.readouterr().out.splitlines()[1]
    assert cli.main(base + ["--engine", "vlm"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown serving engine 'vlm'" in err and "did you mean 'vllm'" in err


def test_the_running_cap_holds_per_attention_dp_rank():
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(WORKLOAD)
    capped = serving_engines.engine("vllm").with_overrides({"max_running": 32})
    rows = {c: serve_one(s, a, tp=4, da=2, concurrency=c, compute="fp8", options=ServingOptions(software=capped))
            for c in (64, 66)}
    assert rows[64]["valid"]  # two ranks of 32 each
    assert not rows[66]["valid"] and "32 sequences per attention-DP rank" in rows[66]["invalid_reason"]
