"""Serving measurements in people's words (validation/sources/serving_words.py): every word of the vocabulary names its
quantity, scope and statistic; a row is priced by the steady state with its engine, and what cannot be priced is
listed with why."""

from __future__ import annotations

import pandas as pd
import pytest

from perfmodel.catalog import serving_engines, workload_files
from perfmodel.serving.options import Mode, ServingOptions
from perfmodel.serving.steady_state import Mix, serve_one
from perfmodel import catalog
from perfmodel.validation import harness
from perfmodel.validation.sources import serving_words as sw

V = sw.vocabulary()


@pytest.mark.parametrize("quantity, word", [(q, w) for q, e in V["quantities"].items() for w in e["words"]])
def test_every_word_names_its_quantity(quantity, word):
    assert sw.quantity_of(word.upper())[0] == quantity


@pytest.mark.parametrize("table, key, word", [(t, k, w) for t in ("scopes", "stats") for k, ws in V[t].items()
                                              for w in ws])
def test_every_scope_and_statistic_word_is_read(table, key, word):
    q, scope, stat = sw.quantity_of(f"output token throughput {word}" if table == "scopes" else f"TTFT {word}")
    assert (scope if table == "scopes" else stat) == key


def _row(**kw) -> dict:
    base = dict(case_id="W-1", hardware="8x H100 SXM", num_chips="8", model="meta-llama/Llama-3.1-70B-Instruct",
                phase="serving", parallelism="TP4", batch="64", input_len="1024", output_len="512", dtype="fp8",
                metric="Output token throughput", value="1000", unit="tokens/s", source="test", notes="vLLM")
    return {**base, **kw}


def _run(tmp_path, rows) -> pd.DataFrame:
    path = tmp_path / "words.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return harness.run_cases(path).set_index("case_id")


def test_a_row_is_a_closed_loop_of_its_clients_on_its_plan_and_engine(tmp_path):
    """Two TP4 replicas on 8 GPUs at 64 clients: C = 32 per replica with vLLM, priced as a closed loop (the
    engine's host time and first-token steps, the prefill queue of its waves). Its throughput is the loop's own:
    C O / (TTFT + (O - 1) TPOT) per replica, per GPU and per deployment; requests/s = tokens/s / O; TPOT above the
    GPU's steady state (the engine's host time)."""
    rows = [_row(case_id="T", metric="Output token throughput"), _row(case_id="G", metric="output tokens/s per GPU"),
            _row(case_id="R", metric="request throughput", unit="req/s"),
            _row(case_id="L", metric="ITL mean", unit="ms", value="20"),
            _row(case_id="F", metric="TTFT mean", unit="ms", value="200")]
    out = _run(tmp_path, rows)
    ttft, tpot = out.at["F", "predicted"] / 1e3, out.at["L", "predicted"] / 1e3
    per_replica = 32 * 512 / (ttft + 511 * tpot)
    assert out.at["T", "predicted"] == pytest.approx(2 * per_replica, rel=1e-9)
    assert out.at["G", "predicted"] == pytest.approx(per_replica / 4, rel=1e-9)
    assert out.at["R", "predicted"] == pytest.approx(2 * per_replica / 512, rel=1e-9)
    s, a = catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3.1-70b")
    gpu = serve_one(s, a, tp=4, concurrency=32, compute="fp8", weights="fp8", mix=Mix(1024, 512),
                    options=ServingOptions(mode=Mode.AGGREGATED))
    assert tpot > gpu["time_per_output_token_s"]
    assert "x 2 replicas, 64 clients, C=32 per replica in a closed loop" in out.at["T", "note"]
    assert out.at["T", "system"] == "p5.48xlarge"


def test_what_cannot_be_priced_is_listed_with_why(tmp_path):
    rows = [_row(case_id="P99", metric="TTFT p99", unit="ms"), _row(case_id="AMD", hardware="MI300X"),
            _row(case_id="LEN", output_len=""), _row(case_id="UNIT", unit="furlongs"),
            _row(case_id="ODD", parallelism="TP3")]
    out = _run(tmp_path, rows)
    assert out["predicted"].isna().all()
    assert "tail needs the simulation" in out.at["P99", "reason"]
    assert "no system file lists it" in out.at["AMD", "reason"]
    assert "input and output lengths" in out.at["LEN", "reason"]
    assert "not a rate unit" in out.at["UNIT", "reason"]
    assert "does not divide 8 GPUs" in out.at["ODD", "reason"]


def test_the_engine_named_in_the_notes_is_the_one_priced(tmp_path):
    out = _run(tmp_path, [_row(case_id="S", notes="SGLang 0.4.1"), _row(case_id="D", notes="")])
    assert out.at["S", "note"].startswith("sglang") and out.at["D", "note"].startswith(
        serving_engines.default_for(catalog.load_system("p5.48xlarge")))


def test_the_public_serving_file_is_predicted_or_listed_row_by_row(capsys):
    """reference/public_serving_dev.csv: 20+ rows from five publishers' dialects, each predicted or listed with
    its reason; the command exits 0."""
    from perfmodel import cli

    df = harness.run_cases(harness.CSV.parent / "public_serving_dev.csv")
    ok = df["predicted"].notna() | df["reason"].str.len().gt(0)
    assert len(df) >= 20 and ok.all() and df["predicted"].notna().sum() >= 4
    raw = pd.read_csv(harness.CSV.parent / "public_serving_dev.csv", dtype=str)
    sources = raw["case_id"].str.replace(r"-\d+$", "", regex=True)  # one id prefix per publisher's table
    assert sources.nunique() >= 5 and raw["source"].str.startswith("http").all()
    assert cli.main(["validate", "--cases", str(harness.CSV.parent / "public_serving_dev.csv"), "--show",
                     "not-expressed", "--format", "csv"]) == 0


def test_a_throughput_at_an_interactivity_is_read_on_the_engine_frontier(tmp_path):
    """'output tokens/s per GPU at 90 tok/s/user': the engine frontier (every plan inside vLLM's measured envelope,
    the row's data types) read at that interactivity; per MW likewise; per MW without one is listed."""
    from perfmodel.serving import search
    from perfmodel.validation import frontier

    row = dict(hardware="8x H100 SXM", model="openai/gpt-oss-120b", parallelism="", batch="", input_len="1024",
               output_len="8192", dtype="", notes="vLLM")
    out = _run(tmp_path, [_row(case_id="G", metric="output tokens/s per GPU at 90 tok/s/user", **row),
                          _row(case_id="M", metric="output tokens/s per MW at 90 tokens/s per user", **row),
                          _row(case_id="X", metric="tokens per MW", **row)])
    s, a = catalog.load_system("p5.48xlarge"), workload_files.load_workload("gpt-oss-120b")
    fr = frontier.model_frontier(s, a, Mix(1024, 8192), "vllm", serving_engines.envelope("vllm"), {"bf16/mxfp4"})
    assert out.at["G", "predicted"] == pytest.approx(search.best_at(fr, "output_tokens_per_s_per_chip", [90.0])[0])
    assert out.at["M", "predicted"] == pytest.approx(search.best_at(fr, "output_tokens_per_s_per_mw", [90.0])[0])
    assert "engine frontier at >= 90 tokens/s/user" in out.at["G", "note"]
    assert pd.isna(out.at["X", "predicted"]) and "read at an interactivity" in out.at["X", "reason"]


def test_a_request_rate_is_an_open_loop_and_an_unbounded_one_a_burst(tmp_path):
    """Without a batch: 'request rate 2 RPS' holds the fewest sequences per replica whose steady-state request
    rate reaches 2/s (so the output throughput is at least 2 x O); 'request rate inf, 500 prompts' runs as many as
    the engine's cap and the KV cache hold (its TTFT is its queue's: listed); a rate beyond the capacity is
    listed. (A rate with a number of prompts is a finite run: the next test.)"""
    rows = [_row(case_id="OPEN", batch="", notes="vLLM; request rate 2 RPS", metric="Median TPOT",
                 unit="ms", value="20"),
            _row(case_id="OPENT", batch="", notes="vLLM; request rate 2 RPS", metric="Output token throughput"),
            _row(case_id="BURST", batch="", notes="vLLM; request rate inf, 500 prompts"),
            _row(case_id="BURSTL", batch="", notes="vLLM; request rate inf, 500 prompts", metric="Mean TTFT",
                 unit="ms", value="900"),
            _row(case_id="OVER", batch="", notes="vLLM; request rate 5000 RPS")]
    out = _run(tmp_path, rows)
    assert "2 requests/s held at C=" in out.at["OPEN", "note"] and out.at["OPEN", "predicted"] > 0
    assert out.at["OPENT", "predicted"] >= 2 * 512 * 0.999
    assert "a burst of 500 prompts" in out.at["BURST", "note"] and out.at["BURST", "predicted"] > 0
    assert pd.isna(out.at["BURSTL", "predicted"]) and "its latencies are its queue's" in out.at["BURSTL", "reason"]
    assert "beyond what the deployment serves" in out.at["OVER", "reason"]


def test_lengths_a_client_draws_are_priced_at_their_mean(tmp_path):
    """'1024 (random range ratio 0)': lengths uniform in [0, 1024], mean 512 (sglang.bench_serving's default);
    '1024 (random range ratio 0.5)': mean 768; '1024 (+/-15%)': mean 1024; all the same prices as plain means."""
    rows = [_row(case_id="R0", input_len="1024 (random range ratio 0)", output_len="1024 (random range ratio 0)"),
            _row(case_id="P0", input_len="512", output_len="512"),
            _row(case_id="R5", input_len="1024 (random, range ratio 0.5)", output_len="512"),
            _row(case_id="P5", input_len="768", output_len="512"),
            _row(case_id="PM", input_len="1024 (+/-15%)", output_len="512"), _row(case_id="P1", input_len="1024")]
    out = _run(tmp_path, rows)
    for spread, plain in (("R0", "P0"), ("R5", "P5"), ("PM", "P1")):
        assert out.at[spread, "reason"] == "" and out.at[spread, "predicted"] == out.at[plain, "predicted"]
    assert "512/512 tokens" in out.at["R0", "note"]


def test_a_kv_cache_type_in_the_dtype_is_priced_and_a_mixed_one_listed(tmp_path):
    """'bf16; KV cache FP8' stores the KV cache in FP8 (half the bytes a decode step reads at a long context);
    'KV cache FP8 except sliding-window layers' is no one type: listed, not guessed."""
    long = dict(input_len="16384", output_len="1024", metric="ITL mean", unit="ms", value="20", batch="32")
    out = _run(tmp_path, [_row(case_id="B", dtype="bf16; KV cache BF16", **long),
                          _row(case_id="F", dtype="bf16 weights (default); KV cache FP8", **long),
                          _row(case_id="M", dtype="bf16; KV cache FP8 except sliding-window layers kept BF16", **long)])
    assert "fp8 KV cache" in out.at["F", "note"] and out.at["F", "predicted"] < out.at["B", "predicted"]
    assert "mixed types" in out.at["M", "reason"]


def test_n_prompts_at_a_rate_are_run_request_by_request(tmp_path):
    """'--request-rate R --num-prompts N' is a finite run: the simulation (the same step model, the engine's
    scheduler) gives the client's figures. Well inside capacity every prompt's tokens come out over the
    arrivals' span, (N - 1) / R, plus the last one's drain; far beyond it the deployment's own rate sets the
    throughput and the queue grows until the prompts run out (the steady state has no answer there)."""
    common = dict(batch="", parallelism="TP8", num_chips="8", input_len="1024", output_len="256",
                  metric="Output token throughput")
    low = _row(case_id="LOW", notes="SGLang; --request-rate 1 --num-prompts 60", **common)
    high = _row(case_id="HIGH", notes="SGLang; --request-rate 10000 --num-prompts 2000", **common)
    out = _run(tmp_path, [low, high])
    assert "60 prompts at 1 requests/s (Poisson) simulated" in out.at["LOW", "note"]
    e2e_bound = 59 / 1.0 + 30.0  # the span of arrivals plus a generous drain of the last request
    assert 60 * 256 / e2e_bound < out.at["LOW", "predicted"] <= 60 * 256 / 59
    assert out.at["HIGH", "reason"] == "" and out.at["HIGH", "predicted"] < 10000 * 256 / 10
