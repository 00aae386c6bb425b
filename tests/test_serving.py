"""Serving model: steady-state identities, KV capacity, modes, touched-expert correction, errors, vectorisation."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import catalog, serving
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate
from perfmodel.serving import steps
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, serve

MIX = Mix(1024, 512)


@pytest.fixture(scope="module")
def trn2():
    return catalog.load_system("trn2.48xlarge")


@pytest.fixture(scope="module")
def llama():
    return workload_files.load_workload("llama-3-8b")


@pytest.fixture(scope="module")
def oss():
    return workload_files.load_workload("gpt-oss-120b")


@pytest.fixture(scope="module")
def dense(trn2, llama):
    g = Grid.of(tp=[[1], [2], [4]], pp=[[1], [1], [2]], concurrency=[[2, 8, 32, 128]], compute=DType.BF16)
    return g, {m: serve(trn2, llama, g, MIX, ServingOptions(mode=m)) for m in Mode}


def test_grid_broadcasts_and_validates():
    g = Grid.of(tp=[1, 2, 4], concurrency=8, compute="fp8")
    assert len(g) == 3 and all(d == DType.FP8 for d in g.compute) and all(d == DType.FP8 for d in g.kv_cache)
    assert list(g.replica_chips) == [1, 2, 4]
    with pytest.raises(ValueError, match="ep"):
        Grid.of(tp=2, ep=4)
    with pytest.raises(ValueError, match="whole number"):
        Grid.of(tp=1.5)
    with pytest.raises(ValueError, match="whole number"):
        Grid.of(concurrency=0)


def test_aggregated_identities(dense):
    g, res = dense
    df = res[Mode.AGGREGATED]
    C, p, da = g.concurrency, g.pp, g.da
    occ = df["prefill_step_s"] / da
    tpot = p * df["decode_step_s"] + (C - 1) / MIX.output_tokens * occ  # the others' prefills (own one: TTFT)
    cycle = p * df["decode_step_s"] + C / MIX.output_tokens * occ  # every prefill the replica runs
    assert np.allclose(df["time_per_output_token_s"], tpot)
    assert np.allclose(df["tokens_per_s_per_user"], 1 / df["time_per_output_token_s"])
    assert np.allclose(df["output_tokens_per_s_per_chip"], C / cycle / g.replica_chips)
    assert np.allclose(df["e2e_latency_s"], df["ttft_s"] + (MIX.output_tokens - 1) * df["time_per_output_token_s"])
    assert np.allclose(df["ttft_s"], 0.5 * df["decode_step_s"] + p * df["prefill_step_s"])
    assert np.allclose(df["output_tokens_per_s_per_scaleup"],
                       df["output_tokens_per_s_per_replica"] * np.floor(16 / g.replica_chips))
    assert np.isfinite(df.select_dtypes("number").to_numpy(dtype=float)).all()


def test_more_concurrency_more_throughput_less_interactivity(dense):
    _, res = dense
    df = res[Mode.AGGREGATED]
    for _, grp in df.groupby(["tp", "pp"]):
        grp = grp.sort_values("concurrency")
        assert np.all(np.diff(grp["output_tokens_per_s_per_replica"]) > 0)
        assert np.all(np.diff(grp["tokens_per_s_per_user"]) < 0)


def test_disaggregated_and_chunked(dense):
    g, res = dense
    agg, dis, chk = res[Mode.AGGREGATED], res[Mode.DISAGGREGATED], res[Mode.CHUNKED]
    assert np.allclose(dis["time_per_output_token_s"], g.pp * dis["decode_step_s"])
    rate = g.concurrency / (MIX.output_tokens * dis["time_per_output_token_s"])
    assert np.allclose(dis["prefill_chips_per_replica"], g.replica_chips * rate * dis["prefill_step_s"] / g.da)
    assert np.all(dis["ttft_s"] >= g.pp * dis["prefill_step_s"])
    assert np.all(dis["time_per_output_token_s"] < agg["time_per_output_token_s"])
    n_chunks = np.ceil(MIX.input_tokens / 512)  # wait for the running step, then n steps that each carry a chunk
    step = g.pp * chk["decode_step_s"]
    assert np.allclose(chk["ttft_s"], 0.5 * chk["time_per_output_token_s"] + n_chunks * (step + chk["prefill_step_s"])
                       + (g.pp - 1) * chk["prefill_step_s"])
    over = g.concurrency / MIX.output_tokens * n_chunks > g.da  # more chunks per step than the ranks run
    assert not chk["valid"][over].any() and chk["invalid_reason"][over].str.contains("chunked prefill").all()
    assert np.all(chk["stall_s"] < agg["stall_s"])  # a chunk blocks the batch for less than a whole prefill


def test_kv_capacity_caps_concurrency(trn2, llama):
    g = Grid.of(tp=1, concurrency=[64, 512, 4096, 32768])
    df = serve(trn2, llama, g, Mix(4096, 4096))
    cmax = df["max_concurrency_kv"].iloc[0]
    assert 64 < cmax < 32768
    assert list(df["kv_fits"]) == list(df["concurrency"] <= cmax)
    edge = serve(trn2, llama, Grid.of(tp=1, concurrency=[int(cmax), int(cmax) + 1]), Mix(4096, 4096))
    assert list(edge["kv_fits"]) == [True, False]


def test_only_touched_experts_run(oss):
    """Decode at batch 1 runs k of E experts per layer; a large batch runs all of them; FLOPs per
    token do not depend on how many experts are touched."""
    s = catalog.load_system("trn3-ultraserver")
    cal = calibration_for(s)
    kn = bd.Knobs(phase=Phase.DECODE, batch=np.array([1.0, 4096.0]), context=1024, tp=4, ep=4,
                  weights=DType.MXFP8, compute=DType.MXFP8, kv_cache=DType.FP8, expert_weights=DType.MXFP4)
    ops, q, _, _ = evaluate.run(s, oss, kn, cal)
    up = [i for i, o in enumerate(ops) if o.name == "moe.expert.up"][0]
    layers, E, k, D, Fe = (oss.num_moe_layers, oss.num_experts, oss.num_experts_per_tok, oss.hidden_size,
                           oss.moe_intermediate_size)
    assert list(q["count"][up]) == [layers, layers]  # one grouped launch per layer
    u = cal["moe_load_imbalance"]  # the busiest of the 4 expert-parallel ranks
    per_expert = D * 2 * Fe * bytes_per_element(DType.MXFP4)
    activations = u * np.array([1.0, 4096.0]) * k / 4 * D * bytes_per_element(DType.BF16)
    experts_read = (q["read"][up] - activations) / per_expert
    assert experts_read[0] == pytest.approx(E / 4 * (1 - (1 - k / E) ** u), rel=1e-6)  # ~ u k / ep at batch 1
    assert experts_read[1] == pytest.approx(E / 4, rel=1e-3)  # all E / ep
    df = serving.sweep(s, oss, kn, cal)
    per_token = df["model_flop"] / df["tokens_per_step"]
    assert per_token[0] == pytest.approx(per_token[1], rel=1e-9)


def test_errors_are_clear(trn2, llama):
    with pytest.raises(ValueError, match="mxfp8"):
        serve(trn2, llama, Grid.of(compute="mxfp8"), MIX)
    with pytest.raises(ValueError, match="encoder-only"):
        serve(trn2, workload_files.load_workload("bert-large"), Grid.of(), MIX)
    with pytest.raises(ValueError, match="multiple of pp"):
        serve(trn2, llama, Grid.of(pp=2, concurrency=3), MIX)
    with pytest.raises(ValueError, match="input_tokens"):
        serve(trn2, llama, Grid.of(), Mix(0, 5))
    with pytest.raises(ValueError, match="kv_reserve"):
        serve(trn2, llama, Grid.of(), MIX, ServingOptions(kv_reserve="most"))


def test_sweep_is_vectorised(monkeypatch, trn2, llama):
    calls = []
    real = steps.run_rows

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(steps, "run_rows", counting)
    g = Grid.of(tp=[[1], [2], [4], [8], [16]], concurrency=np.arange(1, 401)[None, :], compute="fp8")
    df = serve(trn2, llama, g, MIX)
    assert len(df) == 2000 and len(calls) == 2  # one decode and one prefill evaluation for 2,000 configurations


def test_serve_one_matches_serve(trn2, llama):
    row = serving.serve_one(trn2, llama, tp=2, concurrency=16, mix=MIX)
    df = serve(trn2, llama, Grid.of(tp=2, concurrency=16), MIX)
    assert row["time_per_output_token_s"] == pytest.approx(df["time_per_output_token_s"].iloc[0])


def test_throughput_dev_check_is_registered_and_complete():
    from perfmodel import validation

    df = validation.run_validation("serving-throughput")
    assert len(df) >= 50 and set(df["system"]) == {"trn1.32xlarge", "inf2.48xlarge"}
    assert (df["predicted"] > 0).all() and df["error_frac"].notna().all()
    assert (df["metric"] == "output token throughput (whole instance)").all()


def test_a_million_token_request_has_a_context_parallel_plan():
    """1M prompt tokens on Llama-3.1-70B (positions extended by a what-if, as YaRN does): context parallelism
    splits the prefill (time ~1/cp plus the KV all-gather) and every rank's KV shard (memory 1/cp); decode
    attends over a shard and merges the partial outputs (a collective per layer)."""
    import dataclasses

    trn3 = catalog.load_system("trn3-ultraserver")
    a = dataclasses.replace(workload_files.load_workload("llama-3.1-70b"), max_position_embeddings=1_048_576)
    df = serve(trn3, a, Grid.of(tp=8, cp=[1, 4, 16], concurrency=1, compute="fp8"), Mix(1_000_000, 1024))
    assert df["valid"].all() and df["kv_fits"].all()
    assert list(df["replica_chips"]) == [8, 32, 128]
    ttft, used = df["ttft_s"].to_numpy(), df["hbm_used_bytes"].to_numpy()
    assert ttft[0] > 60 and ttft[2] < ttft[0] / 12 and ttft[1] < ttft[0] / 3.5  # comm keeps it above 1/cp
    assert used[2] < used[1] < used[0]
    assert df["decode_step_s"].iloc[2] < df["decode_step_s"].iloc[0]  # 1/16 of the KV read per rank
    odd = serve(trn3, a, Grid.of(tp=8, cp=16, concurrency=1, compute="fp8"), Mix(1_000_001, 1024))
    assert odd["valid"].all() and odd["ttft_s"].iloc[0] > ttft[2]  # padded to whole shards (1,000,016 tokens)


def test_speculative_decoding_divides_the_step_by_the_accepted_tokens():
    """TPOT = (verify k + 1 tokens + k draft steps) / E, E = 1 + sum of per-position acceptance; the verify step
    costs at least the plain decode step (same weights read, more tokens); bad inputs are one line."""
    from perfmodel.serving.speculative import Speculation

    h100 = catalog.load_system("p5.48xlarge")
    a = workload_files.load_workload("llama-3.1-8b")
    draft = workload_files.load_draft("eagle3-llama-3.1-8b")  # resolved where inputs are read, as the CLI does
    spec = Speculation("eagle3-llama-3.1-8b", 3, acceptance=(0.865, 0.725, 0.635), model=draft)
    assert spec.tokens_per_step == pytest.approx(3.225)
    plain = serving.serve_one(h100, a, concurrency=2, mix=MIX)
    fast = serving.serve_one(h100, a, concurrency=2, mix=MIX, options=ServingOptions(speculative=spec))
    assert fast["decode_step_s"] > plain["decode_step_s"]  # verify + 3 drafts
    assert fast["time_per_output_token_s"] == pytest.approx(
        fast["decode_step_s"] / 3.225 + (plain["time_per_output_token_s"] - plain["decode_step_s"]), rel=1e-6)
    assert fast["time_per_output_token_s"] < 0.5 * plain["time_per_output_token_s"]
    with pytest.raises(ValueError, match="non-increasing"):
        Speculation("eagle3-llama-3.1-8b", 2, acceptance=(0.5, 0.8), model=draft).validate()
    with pytest.raises(ValueError, match="'nope': its architecture is not given"):  # serving reads no draft file
        Speculation("nope", 1, mean_accepted=1.5).validate()
    with pytest.raises(ValueError, match="either"):
        Speculation("mtp", 1).validate()
