"""Parameters of the attention variants beside softmax attention: Gated DeltaNet linear attention
and DeepSeek Sparse Attention's lightning indexer (element counts, one layer; no units).

Letters (Hugging Face config.json fields): D = hidden_size, H_k = linear_num_key_heads,
H_v = linear_num_value_heads, d_k = linear_key_head_dim, d_v = linear_value_head_dim,
K_c = linear_conv_kernel_dim, r_q = q_lora_rank, H_ix = index_n_heads, d_ix = index_head_dim.

Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, arXiv:2412.06464), as transformers'
Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet hold it:
    in_proj (q, k, v, z and the b, a gate inputs): D (2 H_k d_k + 2 H_v d_v + 2 H_v)
    conv1d (depthwise over the q, k, v channels, no bias): (2 H_k d_k + H_v d_v) K_c
    A_log and dt_bias: 2 H_v        out_proj: H_v d_v D
    gated RMSNorm over d_v (one scale shared by the heads): d_v  -> counted with the norms
Lightning indexer (DeepSeek-V3.2-Exp's inference/model.py class Indexer; transformers'
DeepseekV32Indexer, which GLM-5's glm_moe_dsa reuses):
    wq_b: r_q H_ix d_ix     wk: D d_ix     weights_proj: D H_ix
    k_norm: LayerNorm over d_ix (scale and bias): 2 d_ix  -> counted with the norms

Does not: know which layers a model has (workload.py counts them) or price anything.
"""

from __future__ import annotations


def linear_qkv_channels(a) -> int:
    """Channels of the q, k, v stream that the causal conv filters: 2 H_k d_k + H_v d_v."""
    return 2 * a.linear_num_key_heads * a.linear_key_head_dim + a.linear_num_value_heads * a.linear_value_head_dim


def linear_attention_params_per_layer(a) -> int:
    """One Gated DeltaNet layer's projections, conv and gate parameters (its norm excluded)."""
    D, Hv, dv = a.hidden_size, a.linear_num_value_heads, a.linear_value_head_dim
    in_proj = D * (linear_qkv_channels(a) + Hv * dv + 2 * Hv)
    conv = linear_qkv_channels(a) * a.linear_conv_kernel_dim
    return in_proj + conv + 2 * Hv + Hv * dv * D


def linear_attention_norm_params_per_layer(a) -> int:
    """The gated RMSNorm over each value head's output: d_v scales shared by the heads."""
    return a.linear_value_head_dim


def indexer_params_per_layer(a) -> int:
    """One lightning indexer's projections (its key LayerNorm excluded); 0 without sparse attention."""
    if not a.index_topk:
        return 0
    return a.index_head_dim * (a.q_lora_rank * a.index_n_heads + a.hidden_size) + a.hidden_size * a.index_n_heads


def indexer_norm_params_per_layer(a) -> int:
    """The indexer key's LayerNorm (scale and bias over d_ix); 0 without sparse attention."""
    return 2 * a.index_head_dim if a.index_topk else 0
