"""Workload catalogue: every file loads, parameter counts match published counts, the loader is strict,
and import_hf_config round-trips real-looking Hugging Face config.json files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfmodel.catalog.hf_import import import_hf_config
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.catalog.workload_files import list_workloads, load_workload, load_workload_file, write_workload
from perfmodel.core.dtypes import DType
from perfmodel.core.workload import AttentionKind, ModelArch, attention_params_per_layer, expert_params, parameter_count

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"

CATALOGUE = {
    "gpt3-175b", "gpt3-6.7b", "bert-large", "gpt2-xl", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
    "llama-3-70b", "llama-3.1-405b", "llama-3.3-70b", "mistral-7b", "mixtral-8x7b", "gpt-oss-20b", "gpt-oss-120b",
    "deepseek-v3", "qwen3-235b-a22b",
    # the InferenceX serving corpus's dense models (validation: inferencex family)
    "llama-3.1-8b", "llama-3.1-70b", "qwen3-32b",
    # llm-foundry's MPT pretraining configurations (validation: MOSAIC-* rows)
    "mpt-3b", "mpt-7b", "mpt-13b", "mpt-30b", "mpt-70b",
    # the 2026 open-weight models (reference/model_configs/): hybrid linear attention, sparse attention
    "minimax-m2.5", "kimi-k2.5", "qwen3.5-397b-a17b", "glm-5",
    # models of the public Neuron corpus (reference/neuron_public_dev.csv)
    "qwen3.5-2b", "qwen3.5-35b-a3b", "llama-4-scout-17b-16e", "llama-4-maverick-17b-128e", "trinity-nano-preview",
    "trinity-mini", "qwen3-30b-a3b",
}
# Published totals given to one significant figure only, with the tolerance that rounding allows: Qwen3.5-2B's
# card says "2B" for a 1.88B text decoder (the vision encoder and MTP layer are not counted here).
ROUNDED_PUBLISHED = {"qwen3.5-2b": 0.10}
# Published active parameters per token (model cards / papers), as the brief lists them.
PUBLISHED_ACTIVE = {"mixtral-8x7b": 12.9e9, "gpt-oss-120b": 5.1e9, "gpt-oss-20b": 3.6e9, "deepseek-v3": 37e9,
                    "qwen3-235b-a22b": 22e9, "minimax-m2.5": 10e9, "kimi-k2.5": 32.6e9, "qwen3.5-397b-a17b": 17e9,
                    "glm-5": 40e9, "qwen3-30b-a3b": 3.3e9}


def arch(name: str) -> ModelArch:
    return load_workload(name, root=ROOT)


def _table(rows: list[tuple[str, int, float]]) -> str:
    lines = [f"{'model':18} {'computed':>18} {'published':>18} {'error %':>8}"]
    for name, computed, published in rows:
        lines.append(f"{name:18} {computed:18,} {published:18,.0f} {100 * (computed / published - 1):8.2f}")
    return "\n".join(lines)


# ---------------------------------------------------------------- catalogue


def test_catalogue_is_exactly_the_listed_models():
    assert set(list_workloads(ROOT)) == CATALOGUE


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_every_workload_loads_with_provenance(name):
    a = arch(name)
    assert a.name == name
    assert a.display_name
    assert a.config_source.startswith("https://")
    assert a.published_parameters > 0 and a.parameters_source
    assert isinstance(a.weight_dtype, DType)
    if a.is_moe:
        assert a.published_active_parameters > 0


def test_total_parameters_within_2_percent_of_published():
    rows = []
    for name in sorted(CATALOGUE):
        a = arch(name)
        rows.append((name, parameter_count(a).total, a.published_parameters))
    bad = [r for r in rows if abs(r[1] / r[2] - 1) > ROUNDED_PUBLISHED.get(r[0], 0.02)]
    assert not bad, "computed total vs published (over 2% off: " + ", ".join(r[0] for r in bad) + ")\n" + _table(rows)


def test_moe_active_parameters_within_5_percent_of_published():
    rows = []
    for name, published in PUBLISHED_ACTIVE.items():
        a = arch(name)
        pc = parameter_count(a)
        # The file says which convention the publisher used (gpt-oss leaves the embedding table out).
        computed = pc.active_per_token_excluding_embeddings if a.published_active_excludes_embeddings \
            else pc.active_per_token
        assert a.published_active_parameters == pytest.approx(published, rel=0.02)
        rows.append((name, computed, published))
    bad = [r for r in rows if abs(r[1] / r[2] - 1) > 0.05]
    assert not bad, "computed active vs published (over 5% off)\n" + _table(rows)


def test_active_is_total_for_dense_models():
    for name in CATALOGUE:
        a = arch(name)
        if not a.is_moe:
            pc = parameter_count(a)
            assert pc.active_per_token == pc.total
            assert pc.moe_routed_experts == pc.moe_shared_experts == pc.router == 0


def test_components_sum_to_total():
    for name in CATALOGUE:
        pc = parameter_count(arch(name))
        parts = (pc.embedding + pc.position_embedding + pc.attention + pc.mlp_dense + pc.moe_routed_experts
                 + pc.moe_shared_experts + pc.router + pc.norms + pc.lm_head + pc.other)
        assert parts == pc.total, name


# ---------------------------------------------------------------- hand-computed components


def test_llama_2_7b_by_hand():
    a = arch("llama-2-7b")
    pc = parameter_count(a)
    D, L, F, V = 4096, 32, 11008, 32000
    assert attention_params_per_layer(a) == 4 * D**2          # q, k, v, o: MHA, no biases
    assert pc.attention == L * 4 * D**2
    assert pc.mlp_dense == L * 3 * D * F                       # SwiGLU gate/up/down
    assert pc.embedding == V * D and pc.lm_head == V * D      # untied
    assert pc.position_embedding == 0                         # RoPE
    assert pc.norms == (2 * L + 1) * D                        # RMSNorm scales only
    assert pc.total == 6_738_415_616


def test_deepseek_v3_by_hand():
    a = arch("deepseek-v3")
    pc = parameter_count(a)
    D, H, L, dense, moe = 7168, 128, 61, 3, 58
    mla = (D * 1536 + 1536 * H * (128 + 64)      # q_a_proj, q_b_proj
           + D * (512 + 64)                      # kv_a_proj_with_mqa (latent + shared rope key)
           + 512 * H * (128 + 128)               # kv_b_proj (k_nope and v per head)
           + H * 128 * D)                        # o_proj
    assert attention_params_per_layer(a) == mla == 187_105_280
    assert pc.attention == L * mla
    assert pc.mlp_dense == dense * 3 * D * 18432
    assert expert_params(a) == 3 * D * 2048
    assert pc.moe_routed_experts == moe * 256 * 3 * D * 2048
    assert pc.moe_shared_experts == moe * 1 * 3 * D * 2048
    assert pc.router == moe * (256 * D + 256)  # gate weight + e_score_correction_bias
    assert pc.norms == L * (2 * D + 1536 + 512) + D  # two layer norms + q_a/kv_a latent norms; final norm
    assert pc.active_per_token == pc.total - moe * (256 - 8) * 3 * D * 2048


def test_gpt_oss_120b_by_hand():
    a = arch("gpt-oss-120b")
    pc = parameter_count(a)
    D, H, K, d, E, L = 2880, 64, 8, 64, 128, 36
    attn = D * H * d + 2 * D * K * d + H * d * D + (H * d + 2 * K * d + D) + H  # weights, biases, sinks
    assert attention_params_per_layer(a) == attn
    expert = D * 2 * D + 2 * D + D * D + D  # gate_up_proj (+bias), down_proj (+bias); F_e = D = 2880
    assert expert_params(a) == expert
    assert pc.moe_routed_experts == L * E * expert
    assert pc.router == L * (E * D + E)
    assert pc.total == 116_829_156_672
    # Model card: attention 0.96B, MLP 114.71B, embed + unembed 1.16B
    assert pc.attention / 1e9 == pytest.approx(0.96, abs=0.005)
    assert (pc.moe_routed_experts + pc.router) / 1e9 == pytest.approx(114.71, abs=0.005)
    assert (pc.embedding + pc.lm_head) / 1e9 == pytest.approx(1.16, abs=0.005)


def test_bert_large_and_gpt2_xl_by_hand():
    b = parameter_count(arch("bert-large"))
    D, V = 1024, 30522
    assert b.embedding == V * D + 2 * D            # word + token-type embeddings
    assert b.position_embedding == 512 * D
    assert b.other == D * D + D                    # pooler
    assert b.lm_head == 0                          # encoder only
    assert b.attention == 24 * (4 * D * D + 4 * D)
    assert b.mlp_dense == 24 * (2 * D * 4 * D + 4 * D + D)
    assert b.norms == (2 * 24 + 1) * 2 * D         # LayerNorm scale + bias; embedding LayerNorm
    assert b.total == 335_141_888
    g = parameter_count(arch("gpt2-xl"))
    assert g.lm_head == 0 and g.position_embedding == 1024 * 1600  # tied head, learned positions
    assert g.total == 1_557_611_200


# ---------------------------------------------------------------- structure


def test_attention_kind_detection():
    assert arch("llama-2-7b").attention == AttentionKind.MHA
    assert arch("bert-large").attention == AttentionKind.MHA
    assert arch("gpt3-175b").attention == AttentionKind.MHA
    assert arch("llama-2-70b").attention == AttentionKind.GQA
    assert arch("llama-3-8b").attention == AttentionKind.GQA
    assert arch("gpt-oss-120b").attention == AttentionKind.GQA
    assert arch("qwen3-235b-a22b").attention == AttentionKind.GQA
    assert arch("deepseek-v3").attention == AttentionKind.MLA


def test_structural_facts():
    oss = arch("gpt-oss-120b")
    assert oss.sliding_window == 128 and oss.num_sliding_layers == 18 and oss.is_sliding_layer(0)
    assert not oss.is_sliding_layer(1)
    assert oss.attention_sinks and oss.expert_weight_dtype == DType.MXFP4 and oss.weight_dtype == DType.BF16
    assert arch("gpt-oss-20b").num_sliding_layers == 12
    assert arch("mistral-7b").num_sliding_layers == 32
    ds = arch("deepseek-v3")
    assert ds.num_dense_layers == 3 and ds.num_moe_layers == 58 and not ds.is_moe_layer(2) and ds.is_moe_layer(3)
    assert ds.head_dim == 192 and ds.weight_dtype == DType.FP8
    assert arch("bert-large").encoder_only and arch("qwen3-235b-a22b").qk_norm
    assert arch("llama-3-8b").head_dim == 128


# ---------------------------------------------------------------- strict loader

VALID = """\
schema_version = 1
name = "tiny"
display_name = "Tiny"

[source]
config_url = "https://example.invalid/config.json"
retrieved = "2026-01-01"
parameters = 1.0e6
parameters_source = "test"

[config]
model_type = "llama"
hidden_size = 64
num_hidden_layers = 2
num_attention_heads = 8
num_key_value_heads = 2
intermediate_size = 128
vocab_size = 100
max_position_embeddings = 256
tie_word_embeddings = false
hidden_act = "silu"

[perfmodel]
norm = "rmsnorm"
gated_mlp = true
position_embedding = "rope"
attention_bias = false
mlp_bias = false
weight_dtype = "bf16"
"""


def _write(tmp_path: Path, text: str, name: str = "tiny") -> Path:
    d = tmp_path / "workloads"
    d.mkdir(exist_ok=True)
    p = d / f"{name}.toml"
    p.write_text(text)
    return p


def test_valid_tiny_workload_loads(tmp_path):
    _write(tmp_path, VALID)
    a = load_workload("tiny", root=tmp_path)
    assert a.attention == AttentionKind.GQA and a.head_dim == 8
    assert parameter_count(a).total == 2 * (64 * 64 * 2 + 2 * 64 * 16 + 3 * 64 * 128 + 2 * 64) + 64 + 2 * 100 * 64


MALFORMED = [
    ("unknown key", VALID.replace("hidden_act = \"silu\"", "hidden_act = \"silu\"\nrope_thetta = 10000.0"),
     "config.rope_thetta", "unknown key"),
    ("HF alias", VALID.replace("hidden_size = 64", "n_embd = 64"), "config.n_embd", "'hidden_size'"),
    ("missing hidden_size", VALID.replace("hidden_size = 64\n", ""), "config.hidden_size", "required field is missing"),
    ("negative size", VALID.replace("intermediate_size = 128", "intermediate_size = -128"),
     "config.intermediate_size", "greater than 0"),
    ("zero layers", VALID.replace("num_hidden_layers = 2", "num_hidden_layers = 0"),
     "config.num_hidden_layers", "greater than 0"),
    ("heads not divisible", VALID.replace("num_key_value_heads = 2", "num_key_value_heads = 3"),
     "config.num_key_value_heads", "multiple"),
    ("name mismatch", VALID.replace('name = "tiny"', 'name = "small"'), "name", "must equal the file name"),
    ("malformed TOML", VALID.replace("hidden_size = 64", "hidden_size = = 64"), "malformed TOML", "line"),
    ("wrong type (string)", VALID.replace("hidden_size = 64", 'hidden_size = "64"'), "config.hidden_size",
     "valid integer, got '64' (str)"),
    ("wrong type (float)", VALID.replace("vocab_size = 100", "vocab_size = 100.0"), "config.vocab_size",
     "valid integer"),
    ("missing source", VALID.split("[source]")[0] + "[config]" + VALID.split("[config]")[1], "source",
     "required field is missing"),
    ("empty config_url", VALID.replace('config_url = "https://example.invalid/config.json"', 'config_url = ""'),
     "source.config_url", "must not be empty"),
    ("parameters without source", VALID.replace('parameters_source = "test"\n', ""), "source.parameters_source",
     "required"),
    ("no retrieval date or version", VALID.replace('retrieved = "2026-01-01"\n', ""), "source.retrieved",
     "'version'"),
    ("bias stated twice", VALID.replace('hidden_act = "silu"', 'hidden_act = "silu"\nattention_bias = false'),
     "perfmodel.attention_bias", "once"),
    ("unknown norm", VALID.replace('norm = "rmsnorm"', 'norm = "batchnorm"'), "perfmodel.norm", "rmsnorm"),
    ("unknown dtype", VALID.replace('weight_dtype = "bf16"', 'weight_dtype = "bf17"'), "perfmodel.weight_dtype",
     "bf16"),
    ("layer_types length",
     VALID.replace('hidden_act = "silu"', 'hidden_act = "silu"\nsliding_window = 4\n'
                   'layer_types = ["sliding_attention"]'),
     "config.layer_types", "num_hidden_layers is 2"),
    ("active on a dense model", VALID.replace('parameters_source = "test"',
                                              'parameters_source = "test"\nactive_parameters = 5e5'),
     "source.active_parameters", "mixture-of-experts"),
    ("MoE without top-k", VALID.replace('hidden_act = "silu"', 'hidden_act = "silu"\nnum_experts = 8\n'
                                        'moe_intermediate_size = 32'), "config.num_experts_per_tok", "between 1"),
    ("wrong schema version", VALID.replace("schema_version = 1", "schema_version = 2"), "schema_version", "1"),
]


@pytest.mark.parametrize("label,text,field,problem", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_workload_rejected(tmp_path, label, text, field, problem):
    path = _write(tmp_path, text)
    with pytest.raises(CatalogError) as info:
        load_workload("tiny", root=tmp_path)
    msg = str(info.value)
    assert str(path) in msg, msg
    assert field in msg, msg
    assert problem in msg, msg
    if field != "malformed TOML":
        assert f"field {field}" in msg, msg


def test_unknown_workload_names_known_ones(tmp_path):
    _write(tmp_path, VALID)
    with pytest.raises(CatalogError, match="no such workload 'nope'.*tiny"):
        load_workload("nope", root=tmp_path)


def test_write_workload_validates_and_refuses_overwrite(tmp_path):
    target = tmp_path / "workloads" / "tiny.toml"
    write_workload(VALID, target)
    assert load_workload_file(target).hidden_size == 64
    with pytest.raises(CatalogError, match="already exists"):
        write_workload(VALID, target)
    with pytest.raises(CatalogError, match="field name"):
        write_workload(VALID, tmp_path / "workloads" / "other.toml")
    with pytest.raises(CatalogError, match="malformed TOML"):
        write_workload("name = ", tmp_path / "workloads" / "bad.toml")
    assert not (tmp_path / "workloads" / "bad.toml").exists()


# ---------------------------------------------------------------- import from config.json

FIXTURE_NAMES = ["llama-3-8b", "gpt2-xl", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b", "qwen3-235b-a22b",
                 "bert-large"]
PROVENANCE = {"name", "display_name", "published_parameters", "published_active_parameters",
              "published_active_excludes_embeddings", "parameters_source", "config_source", "notes", "extra"}


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_import_hf_config_round_trips(tmp_path, name):
    text = import_hf_config(FIXTURES / f"{name}.json")
    assert "inferred from model_type" in text and "dropped" in text
    path = write_workload(text, tmp_path / "workloads" / f"{name}.toml")
    imported = load_workload(name, root=tmp_path)
    catalogued = arch(name)
    assert parameter_count(imported) == parameter_count(catalogued)
    diff = {f.name: (getattr(imported, f.name), getattr(catalogued, f.name))
            for f in dataclasses.fields(ModelArch)
            if f.name not in PROVENANCE and getattr(imported, f.name) != getattr(catalogued, f.name)}
    assert not diff, f"{path}: imported differs from workloads/{name}.toml: {diff}"


def test_import_maps_aliases_and_lists_dropped_keys():
    gpt2 = import_hf_config(FIXTURES / "gpt2-xl.json")
    assert "hidden_size = 1600  # n_embd in config.json" in gpt2
    assert "n_ctx" in gpt2.split("[config]")[0]  # dropped keys listed in the header comment
    ds = import_hf_config(FIXTURES / "deepseek-v3.json")
    assert "num_experts = 256  # n_routed_experts in config.json" in ds
    assert "num_shared_experts = 1  # n_shared_experts in config.json" in ds
    assert 'weight_dtype = "fp8"' in ds
    mx = import_hf_config(FIXTURES / "mixtral-8x7b.json")
    assert "num_experts = 8  # num_local_experts in config.json" in mx


def _config(tmp_path: Path, name: str, **changes) -> Path:
    import json
    data = json.loads((FIXTURES / "llama-3-8b.json").read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(data))
    return p


@pytest.mark.parametrize("changes,field,problem", [
    ({"hidden_size": None}, "hidden_size", "required field is missing"),
    ({"hidden_size": "4096"}, "hidden_size", "expected an integer"),
    ({"model_type": "mamba"}, "model_type", "cannot infer"),
    ({"model_type": None}, "model_type", "required field is missing"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "multiple"),
    ({"torch_dtype": "float8"}, "torch_dtype", "cannot map"),
    ({"quantization_config": {"quant_method": "awq"}}, "quantization_config.quant_method", "cannot map"),
])
def test_import_rejects_what_it_cannot_map(tmp_path, changes, field, problem):
    path = _config(tmp_path, "bad", **changes)
    with pytest.raises(CatalogError) as info:
        import_hf_config(path)
    msg = str(info.value)
    assert str(path) in msg and f"field {field}:" in msg and problem in msg, msg


def test_import_rejects_malformed_json(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text("{\"hidden_size\": 4096,")
    with pytest.raises(CatalogError, match="malformed JSON"):
        import_hf_config(p)


def test_import_names_from_folder_for_config_json(tmp_path):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text((FIXTURES / "llama-3-8b.json").read_text())
    assert 'name = "my-model"' in import_hf_config(d / "config.json")
