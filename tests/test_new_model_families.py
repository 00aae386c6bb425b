"""The 2026 open-weight models and their two new operator families.

Catalogue and importer: every config.json in reference/model_configs/ imports (text_config of a
multimodal config included), the four new workloads are exactly what the importer makes of their
config.json, their parameter counts are the published ones, and what perfmodel does not model is
refused in one line naming the file and the field.

Physics: Gated DeltaNet layers (Qwen3.5) keep a fixed state per sequence, so their decode work does
not grow with the context while the full-attention layers' does, and a 128k-token sequence needs a
fraction of the cache of the same model with full attention everywhere; DeepSeek Sparse Attention
(GLM-5) attends to index_topk keys, so past index_topk only its indexer grows with the context.
One operator of each family is re-derived by hand.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.catalog.hf_import import import_hf_config
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.catalog.workload_files import build_arch, load_workload
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Parallelism, Phase, Precision, Scenario
from perfmodel.core.workload import ModelArch, parameter_count
from perfmodel.model import attention_variant_formulas as av
from perfmodel.model import bindings as bd
from perfmodel.model import formula_catalog, memory
from perfmodel.model.evaluate import evaluate, evaluate_sweep
from perfmodel.model.graph.build import graph_for

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "reference" / "model_configs"
NEW = {"minimax-m2.5": "MiniMaxAI--MiniMax-M2.5", "kimi-k2.5": "moonshotai--Kimi-K2.5",
       "qwen3.5-397b-a17b": "Qwen--Qwen3.5-397B-A17B", "glm-5": "zai-org--GLM-5"}
# Published totals and active counts (the workload files cite them):
#   MiniMax-M2 model card: 230B total, 10B active (M2.5 keeps the architecture)
#   Kimi K2 technical report (arXiv:2507.20534): 1.04T total, 32.6B activated (K2.5's text decoder)
#   Qwen3.5-397B-A17B model card: 397B total, 17B activated
#   GLM-5 technical report (arXiv:2602.15763): 744B total, 40B activated
PUBLISHED = {"minimax-m2.5": (230e9, 10e9), "kimi-k2.5": (1.04e12, 32.6e9), "qwen3.5-397b-a17b": (397e9, 17e9),
             "glm-5": (744e9, 40e9)}
PROVENANCE = {"name", "display_name", "published_parameters", "published_active_parameters",
              "published_active_excludes_embeddings", "parameters_source", "config_source", "notes", "extra"}
H200 = "p5e.48xlarge"


def arch(name: str) -> ModelArch:
    return load_workload(name, root=ROOT)


def decode(system_name: str, a: ModelArch, context: int, batch: int = 16, tp: int = 8, ep: int = 8):
    return evaluate(catalog.load_system(system_name), a,
                    Scenario(Phase.DECODE, batch=batch, context=context, parallel=Parallelism(tp=tp, ep=ep)))


def row(result, op: str) -> dict:
    ops = result.ops
    return ops[(ops["op"] == op) & (ops["pass"] == "forward")].iloc[0].to_dict()


# ---------------------------------------------------------------- importer and catalogue


def test_the_importer_reads_every_reference_config():
    files = sorted(CONFIGS.glob("*.json"))
    assert len(files) >= 12
    for f in files:
        text = import_hf_config(f, name="imported")
        a = build_arch(tomllib.loads(text), f, expect_name="imported")
        assert parameter_count(a).total > 0, f.name


@pytest.mark.parametrize("name", sorted(NEW))
def test_each_new_workload_is_what_the_importer_makes_of_its_config(tmp_path, name):
    text = import_hf_config(CONFIGS / f"{NEW[name]}.json", name=name)
    workload_files.write_workload(text, tmp_path / "workloads" / f"{name}.toml")
    imported, catalogued = load_workload(name, root=tmp_path), arch(name)
    assert parameter_count(imported) == parameter_count(catalogued)
    diff = {f.name: (getattr(imported, f.name), getattr(catalogued, f.name)) for f in dataclasses.fields(ModelArch)
            if f.name not in PROVENANCE and getattr(imported, f.name) != getattr(catalogued, f.name)}
    assert not diff, diff


def test_a_multimodal_config_is_read_as_its_text_decoder():
    for name in ("kimi-k2.5", "qwen3.5-397b-a17b"):
        raw = json.loads((CONFIGS / f"{NEW[name]}.json").read_text())
        text = import_hf_config(CONFIGS / f"{NEW[name]}.json", name=name)
        a = arch(name)
        assert a.hidden_size == raw["text_config"]["hidden_size"] == raw["vision_config"].get(
            "text_hidden_size", raw["vision_config"].get("out_hidden_size"))
        assert "the text decoder is modelled" in text and "vision_config" in text
    assert arch("kimi-k2.5").model_type == "kimi_k2" and arch("qwen3.5-397b-a17b").model_type == "qwen3_5_moe_text"


def test_the_new_models_have_the_structures_their_configs_state():
    q = arch("qwen3.5-397b-a17b")
    assert (q.num_linear_layers, q.num_softmax_attention_layers, q.num_sliding_layers) == (45, 15, 0)
    assert q.attn_output_gate and q.shared_expert_gate and q.linear_state_dtype == DType.FP32
    assert q.partial_rotary_factor == 0.25
    g = arch("glm-5")
    assert g.sparse_attention and (g.index_n_heads, g.index_head_dim, g.index_topk) == (32, 128, 2048)
    k = arch("kimi-k2.5")
    assert k.expert_weight_dtype == DType.INT4 and k.weight_dtype == DType.BF16 and not k.sparse_attention
    m = arch("minimax-m2.5")
    assert m.qk_norm_per_layer and m.partial_rotary_factor == 0.5 and m.weight_dtype == DType.FP8
    assert m.router_bias and m.num_shared_experts == 0


@pytest.mark.parametrize("name", sorted(NEW))
def test_parameter_counts_are_the_published_ones(name):
    """Computed totals within 2% and active counts within 5% of the published figures."""
    a, (total, active) = arch(name), PUBLISHED[name]
    pc = parameter_count(a)
    computed_active = pc.active_per_token_excluding_embeddings if a.published_active_excludes_embeddings \
        else pc.active_per_token
    assert a.published_parameters == total and a.published_active_parameters == active
    assert pc.total == pytest.approx(total, rel=0.02)
    assert computed_active == pytest.approx(active, rel=0.05)


def test_gated_deltanet_and_indexer_parameters_by_hand():
    q = arch("qwen3.5-397b-a17b")
    D, hk, hv, dk, dv, kc = 4096, 16, 64, 128, 128, 4
    channels = 2 * hk * dk + hv * dv  # q, k, v through the conv
    per_linear = D * (channels + hv * dv + 2 * hv) + channels * kc + 2 * hv + hv * dv * D
    per_full = 2 * D * 32 * 256 + 2 * D * 2 * 256 + 32 * 256 * D  # gated q_proj, k, v, o
    pc = parameter_count(q)
    assert pc.attention == 45 * per_linear + 15 * per_full
    g = arch("glm-5")
    indexer = 2048 * 32 * 128 + 6144 * 128 + 6144 * 32  # wq_b, wk, weights_proj
    mla = 6144 * 2048 + 2048 * 64 * 256 + 6144 * 576 + 512 * 64 * (192 + 256) + 64 * 256 * 6144
    assert parameter_count(g).attention == 78 * (mla + indexer)


# ---------------------------------------------------------------- refusals: one line, file, field, value


def _edited(tmp_path: Path, source: str, edit) -> Path:
    raw = json.loads((CONFIGS / f"{source}.json").read_text())
    edit(raw.get("text_config", raw))
    p = tmp_path / "config.json"
    p.write_text(json.dumps(raw))
    return p


@pytest.mark.parametrize("source,edit,field,words", [
    ("Qwen--Qwen3.5-397B-A17B", lambda c: c["layer_types"].__setitem__(0, "mamba"), "layer_types", "'mamba'"),
    ("MiniMaxAI--MiniMax-M2.5", lambda c: c.__setitem__("attn_type_list", [0, 1] * 31), "attn_type_list",
     "per-layer pattern"),
    ("zai-org--GLM-5", lambda c: c.__setitem__("indexer_types", ["full", "shared"] * 39), "indexer_types", "shared"),
    ("zai-org--GLM-5", lambda c: c.__setitem__("index_topk_freq", 4), "index_topk_freq", "got 4"),
    ("MiniMaxAI--MiniMax-M2.5", lambda c: c.__setitem__("qk_norm_type", "per_group"), "qk_norm_type", "per_group"),
    ("moonshotai--Kimi-K2.5", lambda c: c["quantization_config"].__setitem__("ignore", ["lm_head"]),
     "quantization_config.ignore", "routed experts alone"),
    ("Qwen--Qwen3.5-397B-A17B", lambda c: c.__setitem__("full_attention_interval", 3), "full_attention_interval",
     "disagrees"),
    ("Qwen--Qwen3.5-397B-A17B", lambda c: c.__setitem__("linear_num_value_heads", 24), "linear_num_value_heads",
     "multiple of linear_num_key_heads (16), got 24"),
    ("Qwen--Qwen3.5-397B-A17B", lambda c: c.__setitem__("mamba_ssm_dtype", "float8"), "mamba_ssm_dtype", "float8"),
])
def test_what_perfmodel_does_not_model_is_refused_in_one_line(tmp_path, source, edit, field, words):
    path = _edited(tmp_path, source, edit)
    with pytest.raises(CatalogError) as info:
        import_hf_config(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and f"field {field}:" in msg and words in msg, msg


def _file(name: str, **changes) -> dict:
    data = tomllib.loads((ROOT / "workloads" / f"{name}.toml").read_text())
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        if value is None:
            data[section].pop(key, None)
        else:
            data[section][key] = value
    return data


@pytest.mark.parametrize("name,changes,field,words", [
    ("qwen3.5-397b-a17b", {"config__linear_key_head_dim": None}, "config.linear_key_head_dim", "must be > 0, got 0"),
    ("qwen3.5-397b-a17b", {"config__linear_conv_kernel_dim": 10**6}, "config.linear_conv_kernel_dim",
     "between 0 and 8,192, got 1,000,000"),
    ("qwen3.5-397b-a17b", {"config__partial_rotary_factor": 1.5}, "config.partial_rotary_factor",
     "in (0, 1], got 1.5"),
    ("qwen3.5-397b-a17b", {"perfmodel__linear_state_dtype": "fp12"}, "perfmodel.linear_state_dtype", "'fp12'"),
    ("minimax-m2.5", {"config__linear_num_key_heads": 4}, "config.linear_num_key_heads",
     "only meaningful with linear_attention entries in layer_types, got 4"),
    ("minimax-m2.5", {"config__index_topk": 2048, "config__index_n_heads": 32, "config__index_head_dim": 128},
     "config.index_topk", "multi-head latent attention"),
    ("glm-5", {"config__index_head_dim": None}, "config.index_head_dim", "index_head_dim=0"),
    ("minimax-m2.5", {"perfmodel__qk_norm": False}, "perfmodel.qk_norm_per_layer", "needs qk_norm = true"),
    ("glm-5", {"config__attn_output_gate": True}, "config.attn_output_gate", "not multi-head latent attention"),
])
def test_new_workload_fields_are_validated_with_a_clear_error(name, changes, field, words):
    with pytest.raises(CatalogError) as info:
        build_arch(_file(name, **changes), f"workloads/{name}.toml", expect_name=name)
    msg = str(info.value)
    assert msg.startswith(f"workloads/{name}.toml: field {field}:") and words in msg, msg


# ---------------------------------------------------------------- Gated DeltaNet (Qwen3.5)


def test_gated_deltanet_decode_work_does_not_grow_with_context_while_full_attention_does():
    a = arch("qwen3.5-397b-a17b")
    short, long = decode(H200, a, 1024), decode(H200, a, 131072)
    for op in ("lin.core", "lin.conv", "lin.in_proj"):
        s, l_ = row(short, op), row(long, op)
        assert (s["flop"], s["hbm_read_bytes"], s["hbm_write_bytes"]) == (l_["flop"], l_["hbm_read_bytes"],
                                                                          l_["hbm_write_bytes"]), op
    s, l_ = row(short, "attn.core"), row(long, "attn.core")
    assert l_["flop"] / s["flop"] == pytest.approx(131073 / 1025, rel=1e-9)
    assert l_["hbm_read_bytes"] / s["hbm_read_bytes"] > 100  # the K/V read grows with the context


def test_gated_deltanet_decode_operator_by_hand():
    """One decode step, batch 16, tp 8: per device h_v = 64/8 value heads and h_k = 16/8 key heads of 128;
    the FP32 state (128 x 128 per value head) is read and written once per sequence."""
    r = decode(H200, arch("qwen3.5-397b-a17b"), 4096)
    n, hk, hv, d = 16, 2, 8, 128
    state = n * hv * d * d * 4  # bytes, FP32
    core = row(r, "lin.core")
    assert core["count"] == 45
    assert core["flop"] == 7 * n * hv * d * d  # decay, S^T k, rank-1 update, S^T q
    assert core["hbm_read_bytes"] == n * (2 * hk * d + hv * (d + 2)) * 2 + state  # q, k, v, gates (BF16), state
    assert core["hbm_write_bytes"] == n * hv * d * 2 + state  # o (BF16), state
    conv = row(r, "lin.conv")
    channels = (2 * 16 * 128 + 64 * 128) // 8
    assert conv["flop"] == 2 * n * channels * 4
    assert conv["hbm_read_bytes"] == n * channels * 2 + n * channels * 3 * 2  # input, last K_c - 1 inputs


def test_gated_deltanet_chunked_prefill_by_hand():
    """Prefill of 8192 tokens (tp 8): per token and value head 6 d_k d_v + c (6 d_k + 4 d_v) + 2 c^2 / 3
    FLOPs with chunk c = 64, linear in the sequence length (no T^2 term), unlike attention."""
    s = catalog.load_system(H200)
    a = arch("qwen3.5-397b-a17b")

    def prefill(T):
        return evaluate(s, a, Scenario(Phase.PREFILL, batch=1, seq_len=T, parallel=Parallelism(tp=8, ep=8)))

    r8, r16 = prefill(8192), prefill(16384)
    c, d, hv = 64, 128, 8
    per_token = hv * (6 * d * d + c * (6 * d + 4 * d) + 2 * c ** 2 / 3)
    assert row(r8, "lin.core")["flop"] == pytest.approx(8192 * per_token, rel=1e-12)
    assert row(r16, "lin.core")["flop"] / row(r8, "lin.core")["flop"] == pytest.approx(2.0, rel=1e-12)
    assert row(r16, "attn.core")["flop"] / row(r8, "attn.core")["flop"] == pytest.approx(
        16384 * 16385 / (8192 * 8193), rel=1e-9)


def test_a_long_sequence_needs_a_fraction_of_the_cache_of_full_attention():
    """128k tokens: 15 full-attention layers' KV plus 45 fixed states, against the same model with full
    attention in all 60 layers."""
    hybrid = arch("qwen3.5-397b-a17b")
    full = dataclasses.replace(hybrid, layer_types=(), linear_num_key_heads=0, linear_num_value_heads=0,
                               linear_key_head_dim=0, linear_value_head_dim=0, linear_conv_kernel_dim=0)
    full.validate()
    L = 131072
    kv_token_layer = 2 * 2 * 256 * 2  # K and V, 2 KV heads of 256, BF16
    state = 45 * (64 * 128 * 128 * 4 + (2 * 16 * 128 + 64 * 128) * 3 * 2)  # FP32 state + conv window
    got = float(memory.cache_bytes_per_sequence(hybrid, L, 1.0, 2.0, 2.0))
    assert got == 15 * L * kv_token_layer + state
    assert float(memory.cache_bytes_per_sequence(full, L, 1.0, 2.0, 2.0)) == 60 * L * kv_token_layer
    assert got < 0.3 * 60 * L * kv_token_layer
    # the footprint counts the state as part of each sequence's cache: it does not grow with the context
    s = catalog.load_system(H200)
    kv = [memory.footprint(s, hybrid, bd.Knobs(phase=Phase.DECODE, batch=1, context=c, tp=8, ep=8))
          .components["kv_cache"].item() for c in (0, 131071)]
    assert kv[0] == pytest.approx(state / 8 + 15 * kv_token_layer / 2, rel=1e-12)  # K = 2 heads over 8: 1 per rank
    assert kv[1] - kv[0] == pytest.approx(15 * 131071 * kv_token_layer / 2, rel=1e-12)


def test_tensor_parallelism_must_split_the_gated_deltanet_key_heads():
    s = catalog.load_system("trn2-ultraserver")
    r = evaluate(s, arch("qwen3.5-397b-a17b"), Scenario(Phase.DECODE, batch=32, context=1024,
                                                         parallel=Parallelism(tp=32, ep=32)))
    assert not r.feasibility["valid"]
    assert any("16 Gated DeltaNet key heads" in reason for reason in r.feasibility["reasons"])


# ---------------------------------------------------------------- DeepSeek Sparse Attention (GLM-5)


def test_sparse_mean_keys_is_the_mean_of_the_capped_key_counts():
    import sympy as sp
    for T, C0, k in [(1, 0, 4), (1, 10, 4), (7, 0, 4), (7, 2, 4), (3, 100, 2048), (5000, 300, 2048), (10, 5, 100)]:
        brute = sum(min(C0 + i, k) for i in range(1, T + 1)) / T
        assert float(av.sparse_mean_keys(sp.Integer(T), sp.Integer(C0), sp.Integer(k))) == pytest.approx(brute)


def test_sparse_attention_decode_operators_by_hand():
    """GLM-5 decode, batch 16, tp 8, context C_0 = 65536: the indexer scores all S = C_0 + 1 keys with
    32 heads of 128 (replicated on every rank) and reads their FP8 keys with one FP32 scale per 128
    elements; the attention runs in MLA's multi-query form over min(S, 2048) gathered latents."""
    r = decode(H200, arch("glm-5"), 65536)
    n, S, hix, dix, k = 16, 65537, 32, 128, 2048
    ix = row(r, "attn.ix_score")
    assert ix["flop"] == 2 * n * hix * S * (dix + 1)
    assert ix["hbm_read_bytes"] == pytest.approx(n * hix * (dix + 1) * 2 + n * S * dix * (1 + 4 / 128), rel=1e-12)
    assert ix["hbm_write_bytes"] == n * k * 4  # int32 positions of the selected keys
    core = row(r, "attn.core")
    h, width, rkv = 64 // 8, 512 + 64, 512
    assert core["flop"] == 2 * n * h * k * (width + rkv)
    assert core["hbm_read_bytes"] == n * h * width * 2 + n * k * width * 2  # queries, gathered latents (BF16)


def test_sparse_attention_decode_grows_only_by_the_indexer_past_index_topk():
    """Past index_topk keys the attention reads the same 2048 latents per query, so the step time grows
    only by the indexer's: a memory-bound sweep of d_ix (1 + 4/128) bytes per key per layer, re-derived
    here as bytes / (HBM bandwidth x efficiency)."""
    s = catalog.load_system(H200)
    cal = calibration_for(s)
    a = arch("glm-5")
    r1, r2 = decode(H200, a, 32768), decode(H200, a, 131072)
    o1, o2 = r1.ops.set_index(["op", "pass"]), r2.ops.set_index(["op", "pass"])
    grew = (o2["total_time_s"] - o1["total_time_s"]).abs() > 0
    assert set(grew[grew].index.get_level_values(0)) == {"attn.ix_score"}
    assert row(r1, "attn.ix_score")["bound"] == row(r2, "attn.ix_score")["bound"] == "memory"
    extra_bytes = 16 * (131072 - 32768) * 128 * (1 + 4 / 128)  # per layer per device
    by_hand = 78 * extra_bytes / (s.chip.hbm_bandwidth_bytes_per_s * cal["hbm_efficiency"])
    assert r2["step_time_s"] - r1["step_time_s"] == pytest.approx(by_hand, rel=1e-6)
    # below index_topk the attention itself still grows with the context
    r0 = decode(H200, a, 1023)
    assert row(r0, "attn.core")["flop"] < row(r1, "attn.core")["flop"]


def test_the_index_keys_add_to_the_cache_per_token():
    g = arch("glm-5")
    per_token_layer = float(memory.kv_bytes_per_token_layer(g, 8, 2.0))
    assert per_token_layer == (512 + 64) * 2 + 128 * (1 + 4 / 128)
    without = dataclasses.replace(g, index_n_heads=0, index_head_dim=0, index_topk=0)
    assert float(memory.kv_bytes_per_token_layer(without, 8, 2.0)) == (512 + 64) * 2


# ---------------------------------------------------------------- every phase, formulas shown


# training is run for the two new operator families (Gated DeltaNet, sparse attention); Kimi-K2.5 and
# MiniMax-M2.5 train through the MLA and GQA MoE graphs the older workloads' tests already train
PHASES = [(ph, n) for n in sorted(NEW) for ph in (Phase.PREFILL, Phase.DECODE, Phase.TRAIN)
          if ph != Phase.TRAIN or n in ("qwen3.5-397b-a17b", "glm-5")]


@pytest.mark.parametrize("phase, name", PHASES)
def test_every_phase_evaluates_to_finite_numbers(name, phase):
    s = catalog.load_system(H200)
    sc = Scenario(phase, batch=2 if phase == Phase.TRAIN else 4, seq_len=1 if phase == Phase.DECODE else 2048,
                  context=4096 if phase == Phase.DECODE else 0, parallel=Parallelism(tp=8, ep=8),
                  precision=Precision.uniform("bf16"))
    r = evaluate(s, arch(name), sc)
    values = r.summary.select_dtypes("number").to_numpy(dtype=float)
    assert np.isfinite(values).all() and r["step_time_s"] > 0


def test_the_formula_catalogue_shows_both_families():
    fam = formula_catalog.family_table().set_index("formula")
    assert "d_k" in fam.loc["gated_delta_rule (decode)", "flop_latex"]
    assert "c_{gdn}" in fam.loc["gated_delta_rule (chunked)", "flop_latex"]
    assert r"b_{ix}" in fam.loc["lightning_indexer", "hbm_bytes_latex"]
    assert "k_{top}" in fam.loc["sparse attention", "flop_latex"]
    ops = formula_catalog.op_formula_table(arch("qwen3.5-397b-a17b"), Phase.DECODE).set_index("op")
    assert "H_{lv}" in ops.loc["lin.core", "flop_latex"] and "L_{lin}" in ops.loc["lin.core", "count_latex"]
    names = {o.name for o in graph_for(arch("glm-5"), Phase.PREFILL)}
    assert {"attn.ix_q", "attn.ix_k", "attn.ix_score", "attn.q_absorb", "attn.v_absorb"} <= names


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "glm-5"])
def test_a_context_sweep_is_one_vectorised_evaluation_equal_to_single_ones(name):
    s, a = catalog.load_system(H200), arch(name)
    contexts = np.array([100, 2047, 2048, 5000, 65536, 200000])
    df = evaluate_sweep(s, a, bd.Knobs(phase=Phase.DECODE, batch=8, context=contexts, tp=8, ep=8))
    single = [decode(H200, a, int(c), batch=8)["step_time_s"] for c in contexts]
    assert df["step_time_s"].to_numpy() == pytest.approx(single, rel=1e-12)
    assert np.all(np.diff(df["step_time_s"].to_numpy()) > 0)  # full attention / the indexer still grow


def test_a_disaggregated_hand_off_carries_the_recurrent_state():
    """What a prefill pool sends the decode pool: the softmax layers' KV grows with the prompt, the Gated
    DeltaNet layers' state does not (and is there even for a one-token prompt)."""
    from perfmodel.core import units
    from perfmodel.serving.steady_state import kv_bytes_per_sequence

    qwen35, llama = workload_files.load_workload("qwen3.5-397b-a17b"), workload_files.load_workload("llama-3.1-70b")
    state = float(kv_bytes_per_sequence(qwen35, 1, DType.BF16))
    assert state > 100 * units.MB and float(kv_bytes_per_sequence(llama, 1, DType.BF16)) < 1 * units.MB
    grow = float(kv_bytes_per_sequence(qwen35, 1025, DType.BF16)) - state
    assert grow == pytest.approx(1024 * float(kv_bytes_per_sequence(qwen35, 2, DType.BF16) - state), rel=1e-9)
