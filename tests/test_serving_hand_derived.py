"""Serving quantities derived by hand: each expected value is built in the test from the formula's letters
(spec-sheet numbers read from the System record, model sizes from the ModelArch's config fields, step times
from an independent one-configuration evaluation, `evaluate.point`), never from the serving module's own
intermediate columns; each test is the one a deliberate bug in that formula would fail.

    speculative step   t_s = t_v(k + 1 tokens) + k t_q;  E = 1 + sum_i a_i;  TPOT = t_s / E
    KV hand-off        TTFT(disagg) - p t_f = KV(I) / (replica chips x per-chip bandwidth of the scale-up tier,
                       else the node tier, else scale-out (per node / chips per node))
    attention DP       t_f prices d_a requests; prefill pool = chips x (C / (O TPOT)) x t_f / d_a
    decode context     t_d evaluated at I + O/2 (the mean position in steady state), not I, not I + O
    KV per token       GQA: 2 (K and V) x L x KV heads x d_h x bytes;  MLA: L x (kv_lora_rank + d_rope) x bytes

Disaggregated mode throughout (TPOT = p t_d / E, no prefill interleave term), pipeline p = 1, no engine
(no host time per step), so each identity is exact algebra: rel 1e-9.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Scope
from perfmodel.core.scenario import Parallelism, Phase, Precision, Scenario
from perfmodel.model import evaluate
from perfmodel.serving.kv_capacity import kv_bytes_per_sequence
from perfmodel.serving.speculative import Speculation
from perfmodel.serving.steady_state import Mix, Mode, ServingOptions, serve_one

EXACT = 1e-9  # the identities below are algebra on the same floats: only rounding separates the two sides
BF16_BYTES = 16 / 8  # bits per element / bits per byte
FP8_BYTES = 8 / 8
DISAGG = ServingOptions(mode=Mode.DISAGGREGATED)


@pytest.fixture(scope="module")
def h200():
    return catalog.load_system("p5e.48xlarge")


@pytest.fixture(scope="module")
def llama8():
    return workload_files.load_workload("llama-3.1-8b")


def step_s(system, arch, phase: Phase, batch: int, seq_len: int, context: int, tp=1, da=1) -> float:
    """One step of one configuration, evaluated on its own (model.evaluate.point: the Scenario path, not the
    serving module's vectorised sweep)."""
    s = Scenario(phase=phase, batch=batch, seq_len=seq_len, context=context,
                 parallel=Parallelism(tp=tp, da=da), precision=Precision())  # BF16 weights, compute and KV
    return float(evaluate.point(system, arch, s)["step_time_s"])


def gqa_kv_bytes_per_token(arch, bytes_per_element: float) -> float:
    """2 (K and V) x layers x KV heads x head_dim x bytes, from the config fields (head_dim = hidden / heads
    where config.json gives none)."""
    assert arch.num_sliding_layers == 0 and arch.num_linear_layers == 0, "a plain GQA model: every layer full"
    head_dim = arch.hidden_size // arch.num_attention_heads
    assert arch.head_dim == head_dim
    return 2 * arch.num_hidden_layers * arch.num_key_value_heads * head_dim * bytes_per_element


# ---- 1. speculative decoding: step = verify(k + 1) + k drafts, TPOT = step / E

@pytest.mark.parametrize("acceptance, mean, e_hand", [
    # E = 1 (the bonus token) + 0.8 + 0.6 + 0.4: vLLM's per-position rates are unconditional, so they add;
    # reading them as conditional (1 + .8 + .8*.6 + .8*.6*.4 = 2.472) or dropping the bonus (1.8) is a bug
    ((0.8, 0.6, 0.4), 0.0, 2.8),
    ((), 2.5, 2.5),  # the stated mean acceptance length, bonus token included
])
def test_speculative_step_is_verify_of_k_plus_1_tokens_plus_k_drafts(h200, llama8, acceptance, mean, e_hand):
    k, C, mix = 3, 16, Mix(4096, 2048)
    draft_model = workload_files.load_draft("eagle3-llama-3.1-8b")  # resolved at the edge, as the CLI does
    spec = Speculation("eagle3-llama-3.1-8b", k, acceptance, mean, model=draft_model)
    assert e_hand == pytest.approx(1.0 + sum(acceptance) if acceptance else mean, rel=EXACT)
    r = serve_one(h200, llama8, tp=1, concurrency=C, mix=mix,
                  options=ServingOptions(mode=Mode.DISAGGREGATED, speculative=spec))
    ctx = mix.input_tokens + mix.output_tokens // 2
    draft = workload_files.load_draft("eagle3-llama-3.1-8b")
    # the target verifies k + 1 tokens per sequence in one pass (a (k + 1)-token prefill chunk after ctx tokens)
    t_v = step_s(h200, llama8, Phase.PREFILL, C, k + 1, ctx)
    t_q = step_s(h200, draft, Phase.DECODE, C, 1, ctx)  # one draft token, run k times
    t_s = t_v + k * t_q
    assert r["decode_step_s"] == pytest.approx(t_s, rel=EXACT)
    assert r["time_per_output_token_s"] == pytest.approx(t_s / e_hand, rel=EXACT)
    # physics: verifying k + 1 tokens costs more than one plain decode token, and a step emitting E > 1 tokens
    # beats the plain per-token time only because E outweighs the extra work here
    plain = step_s(h200, llama8, Phase.DECODE, C, 1, ctx)
    assert t_v > plain and t_s > plain
    assert r["time_per_output_token_s"] < plain


# ---- 2. disaggregated KV hand-off: TTFT - prefill latency = KV(I) / (chips x per-chip tier bandwidth)

def _scaleout_only(system):
    """The same 8-GPU instance with only its scale-out tier (per node): the hand-off falls back to it, divided
    over the node's chips."""
    return dataclasses.replace(system, tiers=tuple(t for t in system.tiers if t.scope == Scope.SCALEOUT))


@pytest.mark.parametrize("system_name, tp, tier, strip", [
    # Trn2 UltraServer: the scale-up tier (256 GB/s per chip) is taken although the in-node torus is wider
    # (1024 GB/s): two pools need not share a node, the scale-up domain joins them
    ("trn2-ultraserver", 4, Scope.SCALEUP, False),
    ("p5e.48xlarge", 2, Scope.NODE, False),  # no scale-up tier: NVLink inside the node
    ("trn1.2xlarge", 1, Scope.SCALEOUT, False),  # one chip per instance: only the network joins two pools
    ("p5e.48xlarge", 1, Scope.SCALEOUT, True),  # scale-out given per node: 400 GB/s / 8 GPUs per chip
])
def test_disaggregated_ttft_adds_the_kv_handoff_of_the_prompt(llama8, system_name, tp, tier, strip):
    system = catalog.load_system(system_name)
    if strip:
        system = _scaleout_only(system)
    mix = Mix(4096, 512)
    I = mix.input_tokens
    r = serve_one(system, llama8, tp=tp, concurrency=8, mix=mix, options=DISAGG)
    link = system.tier(tier)
    per_chip = link.bandwidth_bytes_per_s / (system.node.chips if link.per_node else 1)
    if strip:
        assert link.per_node and system.node.chips == 8
    kv = gqa_kv_bytes_per_token(llama8, BF16_BYTES) * I  # BF16 compute: BF16 KV cache
    chips = tp  # t x d_a x p x cp = tp x 1 x 1 x 1
    handoff = kv / (chips * per_chip)
    t_f = step_s(system, llama8, Phase.PREFILL, 1, I, 0, tp=tp)  # one request of I tokens (d_a = 1), p = 1
    assert r["prefill_step_s"] == pytest.approx(t_f, rel=EXACT)
    assert r["ttft_s"] - t_f == pytest.approx(handoff, rel=EXACT)  # the difference is far above rounding
    assert handoff > 1e-6 * r["ttft_s"]  # a visible term, so the identity tests it


# ---- 3. attention DP: the prefill step prices d_a requests; the pool share uses t_f / d_a per request

def test_attention_dp_prefill_pool_share_uses_per_request_occupancy(h200, llama8):
    tp, da, C, mix = 1, 2, 32, Mix(2048, 1024)
    I, O = mix.input_tokens, mix.output_tokens
    r = serve_one(h200, llama8, tp=tp, da=da, concurrency=C, mix=mix, options=DISAGG)
    chips = tp * da  # p = cp = 1
    assert r["replica_chips"] == chips
    # one request per attention-DP rank: batch d_a
    t_f = step_s(h200, llama8, Phase.PREFILL, da, I, 0, tp=tp, da=da)
    assert r["prefill_step_s"] == pytest.approx(t_f, rel=EXACT)
    assert step_s(h200, llama8, Phase.PREFILL, 1, I, 0, tp=tp, da=da) != pytest.approx(t_f, rel=1e-3)
    t_d = step_s(h200, llama8, Phase.DECODE, C, 1, I + O // 2, tp=tp, da=da)
    assert r["time_per_output_token_s"] == pytest.approx(t_d, rel=EXACT)  # disaggregated, E = 1, p = 1
    rate = C / (O * t_d)  # requests/s a decode replica finishes (and so must be prefilled)
    share = rate * t_f / da  # prefill replicas per decode replica: each request occupies t_f / d_a
    assert r["prefill_chips_per_replica"] == pytest.approx(chips * share, rel=EXACT)
    # the same, from the output's own step columns (the brief's statement of the identity)
    from_cols = chips * C / (O * r["time_per_output_token_s"]) * r["prefill_step_s"] / da
    assert r["prefill_chips_per_replica"] == pytest.approx(from_cols, rel=EXACT)
    # per chip: C tokens per decode step over the decode replica and its prefill pool
    assert r["output_tokens_per_s_per_chip"] == pytest.approx(C / t_d / (chips * (1 + share)), rel=EXACT)


# ---- 4. decode context: the step is priced at I + O/2 (mean position), not I and not I + O

def test_decode_step_is_priced_at_the_mean_context(h200, llama8):
    C, mix = 64, Mix(4096, 2048)
    I, O = mix.input_tokens, mix.output_tokens
    r = serve_one(h200, llama8, tp=1, concurrency=C, mix=mix, options=DISAGG)
    mid = step_s(h200, llama8, Phase.DECODE, C, 1, I + O // 2)
    first = step_s(h200, llama8, Phase.DECODE, C, 1, I)
    last = step_s(h200, llama8, Phase.DECODE, C, 1, I + O)
    assert r["decode_step_s"] == pytest.approx(mid, rel=EXACT)
    assert r["time_per_output_token_s"] == pytest.approx(mid, rel=EXACT)  # disaggregated, E = 1, p = 1
    # physics: the KV read grows with the context, so the three differ by far more than the tolerance
    assert first < mid < last
    assert abs(mid - first) > 1e-3 * mid and abs(last - mid) > 1e-3 * mid
    assert r["decode_step_s"] != pytest.approx(first, rel=1e-4)
    assert r["decode_step_s"] != pytest.approx(last, rel=1e-4)


# ---- 5. KV-cache bytes per sequence

@pytest.mark.parametrize("name, dtype, nbytes, published_per_token", [
    # Llama 3.1 8B: 32 layers, 8 KV heads of 128: 128 KiB per token in BF16
    ("llama-3.1-8b", DType.BF16, BF16_BYTES, 131_072),
    # Llama 3.1 70B: 80 layers, 8 KV heads of 128: 320 KiB per token in BF16, half in FP8
    ("llama-3.1-70b", DType.BF16, BF16_BYTES, 327_680),
    ("llama-3.1-70b", DType.FP8, FP8_BYTES, 163_840),
])
def test_gqa_kv_bytes_per_sequence_has_k_and_v(name, dtype, nbytes, published_per_token):
    arch = workload_files.load_workload(name)
    n = np.array([1.0, 1000.0, 4096.0, 131_072.0])
    per_token = gqa_kv_bytes_per_token(arch, nbytes)
    assert per_token == published_per_token
    assert np.allclose(kv_bytes_per_sequence(arch, n, dtype), per_token * n, rtol=EXACT, atol=0)
    # K and V: twice the bytes of the keys alone, and KV heads (not query heads) are cached
    keys_only = arch.num_hidden_layers * arch.num_key_value_heads * arch.head_dim * nbytes
    assert float(kv_bytes_per_sequence(arch, 1.0, dtype)) == pytest.approx(2 * keys_only, rel=EXACT)
    assert arch.num_attention_heads > arch.num_key_value_heads


@pytest.mark.parametrize("dtype, nbytes", [(DType.BF16, BF16_BYTES), (DType.FP8, FP8_BYTES)])
def test_mla_kv_bytes_per_sequence_is_the_compressed_latent(dtype, nbytes):
    """DeepSeek-V3 caches, per layer and token, one latent of kv_lora_rank plus the decoupled RoPE key of
    qk_rope_head_dim, shared by K and V (no factor 2, no heads): 61 x (512 + 64) = 35,136 elements."""
    arch = workload_files.load_workload("deepseek-v3")
    assert not arch.sparse_attention and arch.num_sliding_layers == 0 and arch.num_linear_layers == 0
    per_token = arch.num_hidden_layers * (arch.kv_lora_rank + arch.qk_rope_head_dim) * nbytes
    assert per_token == 61 * 576 * nbytes
    n = np.array([1.0, 4096.0, 163_840.0])
    assert np.allclose(kv_bytes_per_sequence(arch, n, dtype), per_token * n, rtol=EXACT, atol=0)
    # far below what full K and V of its 128 heads would hold (2 x 61 x 128 x (128 + 64) elements per token)
    mha = 2 * arch.num_hidden_layers * arch.num_key_value_heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim)
    assert per_token < mha * nbytes / 50
