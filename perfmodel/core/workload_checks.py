"""Model architecture rules: every count in range and no two fields that contradict each other.

One set of rules for a ModelArch however it was made: the workload-file loader
(catalog/workload_files.py) and workload what-ifs (catalog/whatif.py) both call
`ModelArch.validate()`, which runs `check_arch`. A broken rule raises ArchError carrying the
ModelArch field name and the problem, which each caller words for its edge (a file path and
its [config] / [perfmodel] / [source] field, or the what-if knob).

Does not: read files, or know the Hugging Face aliases (workload_files.py does).
"""

from __future__ import annotations

import math

from perfmodel.core import limits


class ArchError(ValueError):
    """A ModelArch field out of range or contradicting another field."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"workload field {field}: {problem}")
        self.field = field
        self.problem = problem


# field -> (smallest, largest) whole number; a structure count of 0 means "none" where 0 is allowed
COUNTS: dict[str, tuple[int, int]] = {
    "hidden_size": (1, limits.MAX_WIDTH), "num_hidden_layers": (1, limits.MAX_LAYERS),
    "num_attention_heads": (1, limits.MAX_HEADS), "num_key_value_heads": (1, limits.MAX_HEADS),
    "head_dim": (1, limits.MAX_WIDTH), "intermediate_size": (1, limits.MAX_WIDTH),
    "vocab_size": (1, limits.MAX_VOCAB), "max_position_embeddings": (1, limits.MAX_SEQ_TOKENS),
    "type_vocab_size": (0, limits.MAX_VOCAB), "num_experts": (0, limits.MAX_EXPERTS),
    "num_experts_per_tok": (0, limits.MAX_EXPERTS), "moe_intermediate_size": (0, limits.MAX_WIDTH),
    "num_shared_experts": (0, limits.MAX_EXPERTS), "shared_expert_intermediate_size": (0, limits.MAX_WIDTH),
    "first_k_dense_replace": (0, limits.MAX_LAYERS), "q_lora_rank": (0, limits.MAX_WIDTH),
    "kv_lora_rank": (0, limits.MAX_WIDTH), "qk_nope_head_dim": (0, limits.MAX_WIDTH),
    "qk_rope_head_dim": (0, limits.MAX_WIDTH), "v_head_dim": (0, limits.MAX_WIDTH),
    "sliding_window": (0, limits.MAX_SEQ_TOKENS),
    "linear_num_key_heads": (0, limits.MAX_HEADS), "linear_num_value_heads": (0, limits.MAX_HEADS),
    "linear_key_head_dim": (0, limits.MAX_WIDTH), "linear_value_head_dim": (0, limits.MAX_WIDTH),
    "linear_conv_kernel_dim": (0, limits.MAX_CONV_KERNEL), "index_n_heads": (0, limits.MAX_HEADS),
    "index_head_dim": (0, limits.MAX_WIDTH), "index_topk": (0, limits.MAX_SEQ_TOKENS),
}
LAYER_TYPES = ("full_attention", "sliding_attention", "linear_attention")
MLA_FIELDS = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
LINEAR_FIELDS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                 "linear_conv_kernel_dim")
INDEX_FIELDS = ("index_n_heads", "index_head_dim", "index_topk")
MOE_ONLY = ("num_experts_per_tok", "moe_intermediate_size", "num_shared_experts", "shared_expert_intermediate_size",
            "first_k_dense_replace")


def check_arch(a) -> None:
    """Raise ArchError for the first broken rule of ModelArch `a` (see the module docstring)."""
    for name, (lo, hi) in COUNTS.items():
        v = getattr(a, name)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ArchError(name, f"must be a whole number between {lo} and {hi:,}, got {v!r}")
        if not lo <= v <= hi:
            raise ArchError(name, f"must be between {lo} and {hi:,}, got {v:,}")
    for name in ("published_parameters", "published_active_parameters"):
        v = getattr(a, name)
        if not (math.isfinite(v) and v >= 0):  # 0: not published
            raise ArchError(name, f"must be a finite number >= 0 (0: not published), got {v!r}")
    H, K, L = a.num_attention_heads, a.num_key_value_heads, a.num_hidden_layers
    if K > H or H % K:
        raise ArchError("num_key_value_heads", f"num_attention_heads ({H}) must be a multiple of num_key_value_heads "
                                               f"({K})")
    if a.kv_lora_rank > 0:
        for name in MLA_FIELDS:
            if getattr(a, name) <= 0:
                raise ArchError(name, "multi-head latent attention (kv_lora_rank > 0) needs it > 0")
    else:
        for name in ("q_lora_rank",) + MLA_FIELDS:
            if getattr(a, name):
                raise ArchError(name, "only meaningful with multi-head latent attention (kv_lora_rank > 0)")
    _check_moe(a, L)
    if a.layer_types:
        if len(a.layer_types) != L:
            raise ArchError("layer_types", f"has {len(a.layer_types)} entries, num_hidden_layers is {L}")
        unknown = sorted(set(a.layer_types) - set(LAYER_TYPES))
        if unknown:
            raise ArchError("layer_types", f"unknown layer type {unknown[0]!r} (allowed: {', '.join(LAYER_TYPES)})")
        if "sliding_attention" in a.layer_types and not a.sliding_window:
            raise ArchError("sliding_window", "layer_types has sliding_attention layers but no window")
    _check_linear_attention(a)
    _check_sparse_attention(a)
    _check_attention_details(a)
    if a.pooler and not a.encoder_only:
        raise ArchError("pooler", "a pooler belongs to an encoder-only model (encoder_only = true)")
    if a.published_parameters and a.published_active_parameters > a.published_parameters:
        raise ArchError("published_active_parameters", f"({a.published_active_parameters:g}) exceeds the total "
                                                       f"parameters ({a.published_parameters:g})")


def _check_linear_attention(a) -> None:
    """Gated DeltaNet fields: all set exactly when layer_types has linear_attention layers."""
    if "linear_attention" not in a.layer_types:
        for name in LINEAR_FIELDS:
            if getattr(a, name):
                raise ArchError(name, f"only meaningful with linear_attention entries in layer_types, "
                                      f"got {getattr(a, name)}")
        return
    for name in LINEAR_FIELDS:
        if getattr(a, name) <= 0:
            raise ArchError(name, f"layer_types has linear_attention (Gated DeltaNet) layers: it must be > 0, "
                                  f"got {getattr(a, name)}")
    hk, hv = a.linear_num_key_heads, a.linear_num_value_heads
    if hv % hk:
        raise ArchError("linear_num_value_heads", f"must be a multiple of linear_num_key_heads ({hk}), got {hv} "
                                                  "(each key head serves a whole group of value heads)")
    if a.kv_lora_rank > 0:
        raise ArchError("layer_types", "linear_attention layers beside multi-head latent attention (kv_lora_rank "
                                       f"{a.kv_lora_rank}) are not modelled")


def _check_sparse_attention(a) -> None:
    """DeepSeek Sparse Attention: index_n_heads, index_head_dim and index_topk set together, on MLA with a
    query latent (the indexer's queries come from it)."""
    given = [n for n in INDEX_FIELDS if getattr(a, n)]
    if not given:
        return
    for name in INDEX_FIELDS:
        if getattr(a, name) <= 0:
            got = ", ".join(f"{n}={getattr(a, n)}" for n in INDEX_FIELDS)
            raise ArchError(name, f"DeepSeek Sparse Attention needs index_n_heads, index_head_dim and index_topk "
                                  f"all > 0, got {got}")
    if a.kv_lora_rank <= 0 or a.q_lora_rank <= 0:
        raise ArchError("index_topk", f"DeepSeek Sparse Attention (index_topk {a.index_topk}) is modelled on "
                                      f"multi-head latent attention with a query latent (kv_lora_rank > 0 and "
                                      f"q_lora_rank > 0), got kv_lora_rank={a.kv_lora_rank}, "
                                      f"q_lora_rank={a.q_lora_rank}")
    if a.index_head_dim < a.qk_rope_head_dim:
        raise ArchError("index_head_dim", f"must be at least qk_rope_head_dim ({a.qk_rope_head_dim}): the indexer "
                                          f"rotates that many of its dimensions, got {a.index_head_dim}")


def _check_attention_details(a) -> None:
    f = a.partial_rotary_factor
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not (math.isfinite(f) and 0 < f <= 1):
        raise ArchError("partial_rotary_factor", f"must be a number in (0, 1], got {f!r} (the share of head_dim "
                                                 f"RoPE rotates)")
    if f != 1 and (a.kv_lora_rank > 0 or a.position_embedding != "rope"):
        raise ArchError("partial_rotary_factor", f"only meaningful for rotary MHA/GQA attention (MLA rotates "
                                                 f"qk_rope_head_dim; learned positions rotate nothing), got {f!r}")
    if a.attn_output_gate and a.kv_lora_rank > 0:
        raise ArchError("attn_output_gate", "true is only modelled for MHA/GQA attention, not multi-head latent "
                                            "attention (kv_lora_rank > 0)")
    if a.qk_norm_per_layer and not a.qk_norm:
        raise ArchError("qk_norm_per_layer", "true says how the q/k norms span the heads: it needs qk_norm = true")
    if a.shared_expert_gate and not (a.num_experts > 0 and a.num_shared_experts > 0):
        raise ArchError("shared_expert_gate", f"true gates a shared expert: it needs num_shared_experts > 0, got "
                                              f"{a.num_shared_experts}")


def _check_moe(a, L: int) -> None:
    if a.num_experts > 0:
        if not 1 <= a.num_experts_per_tok <= a.num_experts:
            raise ArchError("num_experts_per_tok", f"must be between 1 and num_experts ({a.num_experts}), "
                                                   f"got {a.num_experts_per_tok}")
        if a.moe_intermediate_size <= 0:
            raise ArchError("moe_intermediate_size", "a mixture-of-experts model needs the expert width > 0")
        if a.first_k_dense_replace >= L:
            raise ArchError("first_k_dense_replace", f"must be less than num_hidden_layers ({L}), "
                                                     f"got {a.first_k_dense_replace}")
        return
    for name in MOE_ONLY:
        if getattr(a, name):
            raise ArchError(name, "only meaningful for a mixture-of-experts model (num_experts > 0)")
    if a.expert_weight_dtype is not None:
        raise ArchError("expert_weight_dtype", "only meaningful for a mixture-of-experts model")
    if a.router_bias:
        raise ArchError("router_bias", "only meaningful for a mixture-of-experts model")
    if a.published_active_parameters:
        raise ArchError("published_active_parameters", "only meaningful for a mixture-of-experts model")
