"""What hf_import knows per model family: structural facts config.json does not state, the
family-specific keys it maps, the checkpoint's weight data types, and the features it refuses.

FAMILIES: per model_type, the [perfmodel] facts (from transformers' modelling code per family).
apply_family(state): the family's own keys, in place on an ImportState (the importer's working
record); every key read is marked used, and what cannot be mapped raises one CatalogError line
naming the file and the key (a layer kind perfmodel does not model is refused, never dropped).
weight_dtypes(state, base, why): weight_dtype / expert_weight_dtype from quantization_config.

Does not: read files or write TOML (hf_import.py does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from perfmodel.catalog.workload_files import HF_ALIASES, field_error

_ROPE = dict(norm="rmsnorm", gated_mlp=True, position_embedding="rope", attention_bias=False, mlp_bias=False,
             tie_word_embeddings=False, hidden_act="silu")
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": dict(label="LlamaForCausalLM", **_ROPE),
    "mistral": dict(label="MistralForCausalLM", **_ROPE),
    "mixtral": dict(label="MixtralForCausalLM", **_ROPE, expert_width_is_intermediate=True),
    "qwen3": dict(label="Qwen3ForCausalLM", **_ROPE, qk_norm=True),
    "qwen3_moe": dict(label="Qwen3MoeForCausalLM", **_ROPE, qk_norm=True),
    "deepseek_v3": dict(label="DeepseekV3ForCausalLM", **_ROPE),
    "kimi_k2": dict(label="DeepseekV3ForCausalLM (Kimi K2)", **_ROPE),
    "glm_moe_dsa": dict(label="GlmMoeDsaForCausalLM", **_ROPE),
    "deepseek_v32": dict(label="DeepseekV32ForCausalLM", **_ROPE),
    "minimax_m2": dict(label="MiniMaxM2ForCausalLM", **_ROPE, expert_width_is_intermediate=True),
    "qwen3_next": dict(label="Qwen3NextForCausalLM", **_ROPE, qk_norm=True, no_dense_mlp=True),
    "qwen3_5_moe_text": dict(label="Qwen3_5MoeTextModel", **_ROPE, qk_norm=True, no_dense_mlp=True),
    "gpt_oss": dict(label="GptOssForCausalLM", norm="rmsnorm", gated_mlp=True, position_embedding="rope",
                    attention_bias=True, mlp_bias=True, tie_word_embeddings=False, hidden_act="silu",
                    router_bias=True, attention_sinks=True, expert_width_is_intermediate=True),
    "gpt2": dict(label="GPT2LMHeadModel", norm="layernorm", gated_mlp=False, position_embedding="learned",
                 attention_bias=True, mlp_bias=True, tie_word_embeddings=True, hidden_act="gelu_new",
                 weight_dtype="fp32"),
    "bert": dict(label="BertModel", norm="layernorm", gated_mlp=False, position_embedding="learned",
                 attention_bias=True, mlp_bias=True, tie_word_embeddings=True, hidden_act="gelu",
                 encoder_only=True, pooler=True, weight_dtype="fp32"),
}
# multi-head latent attention families (DeepseekV3Config field names; the last two add sparse attention)
DEEPSEEK_LIKE = ("deepseek_v3", "kimi_k2", "glm_moe_dsa", "deepseek_v32")
QWEN_HYBRID = ("qwen3_next", "qwen3_5_moe_text")

# Why each inferred [perfmodel] value holds, per field (the family label is added).
WHY = {
    "norm": {"rmsnorm": "RMSNorm (scale only)", "layernorm": "LayerNorm (scale and bias)"},
    "gated_mlp": {True: "gated MLP (gate, up and down projections)", False: "plain MLP (up and down projections)"},
    "position_embedding": {"rope": "rotary position embedding (no position table)",
                           "learned": "learned absolute position table of max_position_embeddings rows"},
    "encoder_only": {True: "bidirectional encoder: no causal mask, no KV cache"},
    "attention_bias": {True: "q/k/v/o projections have biases", False: "attention projections have no biases"},
    "mlp_bias": {True: "MLP / expert projections have biases", False: "MLP projections have no biases"},
    "router_bias": {True: "the MoE router has a bias"},
    "qk_norm": {True: "RMSNorm over head_dim on queries and keys (q_norm, k_norm)"},
    "attention_sinks": {True: "learned per-head sink logits in the softmax"},
    "pooler": {True: "pooler: dense D x D + bias on the first token"},
}
TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
# keys that name a per-layer pattern of layer kinds; one perfmodel does not map is refused, never dropped
_PATTERN_KEYS = ("attn_type_list", "hybrid_override_pattern", "layers_block_type", "block_types",
                 "linear_attn_layers", "index_topk_pattern")
# keys that count multi-token-prediction modules (not part of the model counted)
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", "mtp_transformer_layers",
             "use_mtp")


@dataclass
class ImportState:
    """The importer's working record: the (flattened) config.json, the [config] and [perfmodel] values
    with their comments, the keys read, and notes for the header."""

    raw: dict
    path: str
    model_type: str
    cfg: dict = field(default_factory=dict)  # name -> (value, comment)
    perf: dict = field(default_factory=dict)
    used: set = field(default_factory=set)
    notes: list = field(default_factory=list)

    @property
    def fam(self) -> dict:
        return FAMILIES[self.model_type]

    def take(self, key: str) -> tuple[str | None, Any]:
        """(HF key found, value) for `key` or one of its aliases; None values count as absent."""
        for k in [key] + [a for a, c in HF_ALIASES.items() if c == key]:
            if k in self.raw:
                self.used.add(k)
                if self.raw[k] is not None:
                    return k, self.raw[k]
        return None, None

    def get(self, key: str, default: Any = None) -> Any:
        """A family key's value (default when absent), marked used."""
        if key in self.raw:
            self.used.add(key)
            return self.raw[key]
        return default

    def put(self, key: str, value: Any, hf_key: str | None, comment: str = "") -> None:
        if hf_key and hf_key != key:
            comment = f"{hf_key} in config.json" + (f"; {comment}" if comment else "")
        self.cfg[key] = (value, comment)

    def error(self, key: str, problem: str):
        return field_error(self.path, key, problem)

    def require(self, key: str, ok, problem: str) -> None:
        """Refuse `key` unless absent or ok(value)."""
        if key in self.raw and self.raw[key] is not None and not ok(self.raw[key]):
            raise self.error(key, f"{problem}, got {self.raw[key]!r}")
        self.used.add(key)


def apply_family(s: ImportState) -> None:
    """The family's own keys, and the refusals that hold for every family (see the module doc)."""
    for key in _PATTERN_KEYS:
        if key in s.raw:
            raise s.error(key, "a per-layer pattern of layer kinds perfmodel does not map (it models full, "
                               "sliding-window and Gated DeltaNet linear-attention layers via layer_types)")
    mtp = {k: s.get(k) for k in _MTP_KEYS if k in s.raw}
    if any(v for v in mtp.values()):
        s.notes.append(", ".join(f"{k} = {v}" for k, v in mtp.items()) + ": multi-token-prediction modules are "
                       "not part of the model counted here")
    if s.fam.get("expert_width_is_intermediate") and "num_experts" in s.cfg and "moe_intermediate_size" not in s.cfg:
        s.put("moe_intermediate_size", s.cfg["intermediate_size"][0], None,
              f"not in config.json: {s.fam['label']} experts are intermediate_size wide")
    if s.model_type in DEEPSEEK_LIKE:
        _deepseek_like(s)
    elif s.model_type in QWEN_HYBRID:
        _qwen_hybrid(s)
    elif s.model_type == "minimax_m2":
        _minimax(s)


def _deepseek_like(s: ImportState) -> None:
    s.require("moe_layer_freq", lambda v: v == 1, "only 1 is supported (every layer after the dense ones is MoE)")
    if "head_dim" in s.cfg:  # transformers' DeepseekV3Config writes head_dim = qk_rope_head_dim
        s.cfg.pop("head_dim")
        s.used.discard("head_dim")
    if "q_lora_rank" not in s.cfg:
        s.put("q_lora_rank", 0, "q_lora_rank" if "q_lora_rank" in s.raw else None,
              "null in config.json: queries use one q_proj, no low-rank pair")
    d_qk = s.cfg.get("qk_nope_head_dim", (0,))[0] + s.cfg.get("qk_rope_head_dim", (0,))[0]
    s.require("qk_head_dim", lambda v: v == d_qk, f"must equal qk_nope_head_dim + qk_rope_head_dim ({d_qk})")
    if "num_experts" in s.cfg and s.get("topk_method") == "noaux_tc":
        s.perf["router_bias"] = (True, "inferred from topk_method = 'noaux_tc': the gate stores "
                                       "e_score_correction_bias (E values per MoE layer)")
    # GLM-5: every layer runs its own indexer unless indexer_types / index_topk_freq share one's top-k
    s.require("indexer_types", lambda v: isinstance(v, list) and set(v) <= {"full"},
              "layers that reuse another layer's top-k ('shared') are not modelled; only 'full'")
    s.require("index_topk_freq", lambda v: v == 1, "only 1 is supported (every layer runs its indexer)")
    k_dense = s.cfg.get("first_k_dense_replace", (0,))[0]
    s.require("mlp_layer_types", lambda v: isinstance(v, list) and all(
        t == ("dense" if i < k_dense else "sparse") for i, t in enumerate(v)),
        f"only the first first_k_dense_replace ({k_dense}) layers 'dense' and the rest 'sparse' is modelled")


def _qwen_hybrid(s: ImportState) -> None:
    s.require("mlp_only_layers", lambda v: v == [], "only [] is supported (every layer MoE)")
    s.require("decoder_sparse_step", lambda v: v == 1, "only 1 is supported (every layer MoE)")
    label = s.fam["label"]
    F_s = s.cfg.get("shared_expert_intermediate_size", (0,))[0]
    if F_s and "num_shared_experts" not in s.cfg:
        s.put("num_shared_experts", 1, None, f"not in config.json: a {label} MoE block has one shared expert "
                                             "of shared_expert_intermediate_size")
        s.perf["shared_expert_gate"] = (True, f"inferred from model_type {s.model_type!r} ({label}): "
                                              "shared_expert_gate, a D -> 1 sigmoid gate on the shared expert")
    if "attn_output_gate" not in s.cfg:
        s.put("attn_output_gate", True, None, f"not in config.json: {label} attention always gates its output")
    dtype = s.get("mamba_ssm_dtype")
    if dtype is not None:
        if dtype not in TORCH_DTYPES:
            raise s.error("mamba_ssm_dtype", f"cannot map {dtype!r}; known: {', '.join(TORCH_DTYPES)}")
        s.perf["linear_state_dtype"] = (TORCH_DTYPES[dtype], f"mamba_ssm_dtype = {dtype!r} in config.json: the "
                                                             "Gated DeltaNet state is kept in this type")
    interval = s.get("full_attention_interval")
    L = s.cfg["num_hidden_layers"][0]
    if isinstance(interval, int) and not isinstance(interval, bool) and interval > 0:
        pattern = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(L)]
        if "layer_types" not in s.cfg:
            s.put("layer_types", pattern, None, f"from full_attention_interval = {interval}: every "
                                                f"{interval}th layer full attention, the others Gated DeltaNet")
        elif list(s.cfg["layer_types"][0]) != pattern:
            raise s.error("full_attention_interval", f"{interval} disagrees with layer_types")
    elif interval is not None:
        raise s.error("full_attention_interval", f"expected a whole number > 0, got {interval!r}")


def _minimax(s: ImportState) -> None:
    if s.get("use_qk_norm"):
        kind = s.get("qk_norm_type", "per_head")
        if kind not in ("per_layer", "per_head"):
            raise s.error("qk_norm_type", f"cannot map {kind!r} (known: per_layer, per_head)")
        s.perf["qk_norm"] = (True, "use_qk_norm = true in config.json: RMSNorm on queries and keys")
        if kind == "per_layer":
            s.perf["qk_norm_per_layer"] = (True, "qk_norm_type = 'per_layer': q_norm over H*head_dim and k_norm "
                                                 "over K*head_dim (one scale per channel of the layer)")
    if s.get("use_routing_bias"):
        s.perf["router_bias"] = (True, "use_routing_bias = true in config.json: the gate stores "
                                       "e_score_correction_bias (E values per MoE layer)")
    s.require("shared_intermediate_size", lambda v: v == 0, "shared experts of MiniMax models are not mapped")
    rot = s.get("rotary_dim")
    d_h = s.cfg.get("head_dim", (0,))[0]
    if rot is not None:
        if isinstance(rot, bool) or not isinstance(rot, int) or not 0 < rot <= d_h:
            raise s.error("rotary_dim", f"expected a whole number in 1..head_dim ({d_h}), got {rot!r}")
        s.put("partial_rotary_factor", rot / d_h, "rotary_dim", f"{rot} of head_dim {d_h} dimensions rotated")


def compressed_tensors_dtypes(s: ImportState, quant: dict, base: str, base_why: str) -> None:
    """compressed-tensors weight-only integer quantization of the routed experts (Kimi-K2 / K2.5: INT4,
    group 32); any other layout is refused. `ignore` must keep attention, shared experts, dense MLPs and
    lm_head in the base type."""
    groups = quant.get("config_groups")
    key = "quantization_config.config_groups"
    if not (isinstance(groups, dict) and len(groups) == 1):
        raise s.error(key, f"one group of weight-only quantization is mapped, got {groups!r}")
    group = next(iter(groups.values()))
    w = group.get("weights") if isinstance(group, dict) else None
    if not (isinstance(w, dict) and w.get("type") == "int" and w.get("num_bits") in (4, 8)
            and group.get("input_activations") is None):
        raise s.error(key, f"only weight-only int4 / int8 quantization is mapped, got {group!r}")
    dtype = f"int{w['num_bits']}"
    ignore = quant.get("ignore") or []

    def kept(name: str) -> bool:  # compressed-tensors matches "re:" entries as regexes, others by name
        return any(re.match(p[3:], name) if p.startswith("re:") else p == name for p in ignore)

    others = ("lm_head", "model.layers.0.self_attn.q_a_proj", "model.layers.0.self_attn.o_proj",
              "model.layers.0.mlp.gate_proj", "model.layers.1.mlp.shared_experts.down_proj")
    if kept("model.layers.1.mlp.experts.0.down_proj") or not all(kept(n) for n in others):
        raise s.error("quantization_config.ignore", "only quantization of the routed experts alone is mapped "
                                                    "(attention, shared experts, dense MLPs and lm_head kept), "
                                                    f"got {ignore!r}")
    s.perf["weight_dtype"] = (base, base_why + "; attention, shared experts, dense MLPs and lm_head are in ignore")
    scale = f" with a scale per {w.get('group_size')} elements" if w.get("strategy") == "group" else ""
    s.perf["expert_weight_dtype"] = (dtype, f"quantization_config (compressed-tensors): routed-expert weights in "
                                            f"{dtype}{scale} (the scales are not counted)")


def weight_dtypes(s: ImportState, base: str, base_why: str) -> None:
    """[perfmodel] weight_dtype (and expert_weight_dtype) from quantization_config, else the base type."""
    quant = s.get("quantization_config")
    if quant is None:
        s.perf["weight_dtype"] = (base, base_why)
        return
    if not isinstance(quant, dict):
        raise s.error("quantization_config", f"expected an object, got {quant!r}")
    method = quant.get("quant_method")
    if method == "fp8":
        s.perf["weight_dtype"] = ("fp8", f"quantization_config.quant_method = 'fp8' (fmt {quant.get('fmt', '?')}, "
                                         f"block {quant.get('weight_block_size', '?')}): linear weights ship in FP8")
    elif method == "mxfp4":
        if not s.cfg.get("num_experts"):
            raise s.error("quantization_config", "MXFP4 is mapped only for mixture-of-experts weights")
        if "torch_dtype" not in s.raw and "dtype" not in s.raw:
            base_why = "no torch_dtype in config.json; modules_to_not_convert (attention, router, embeddings, " \
                       "lm_head) ship in bf16"
            base = "bf16"
        s.perf["weight_dtype"] = (base, base_why)
        s.perf["expert_weight_dtype"] = ("mxfp4", "quantization_config.quant_method = 'mxfp4': expert weights ship "
                                                  "as MXFP4 blocks with E8M0 scales")
    elif method == "compressed-tensors":
        if not s.cfg.get("num_experts"):
            raise s.error("quantization_config", "compressed-tensors is mapped only for mixture-of-experts weights")
        compressed_tensors_dtypes(s, quant, base, base_why)
    else:
        raise s.error("quantization_config.quant_method", f"cannot map {method!r} (known: fp8, mxfp4, "
                                                          "compressed-tensors)")
