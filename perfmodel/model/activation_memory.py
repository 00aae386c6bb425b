"""Activations saved per token per layer for the backward pass (a_tok), by recompute policy and training recipe.

    a_tok = b_a [2D (norm inputs) + D (QKV input) + (H+2K)d_h/t (Q,K,V) + H d_h/t (attn out) + D (MLP input)
                 + 3F/t (gate, up, act)]  (+ MoE: k (D + 3 F_e) u / ep per token; Gated DeltaNet layers their own)
    an 8-bit training recipe keeps the linear layers' inputs at b_q; torchtitan's op-level checkpointing keeps the
    layer input, the attention output and every other matmul's output; full recompute (of a share of the layers)
    keeps only their input. memory.footprint multiplies by the tokens, layers and micro-batches in flight.

Does not: count weights, optimizer state or caches (memory.py), or evaluate time.
"""

from __future__ import annotations

import numpy as np

from perfmodel.core.calibration import Calibration
from perfmodel.core.dtypes import bytes_per_element
from perfmodel.core.scenario import Phase, Recompute
from perfmodel.core.workload import AttentionKind, ModelArch
from perfmodel.model import bindings as bd


def activation_bytes_per_token_layer(arch: ModelArch, tp, ep, ba: float, moe_imbalance: float,
                                     sequence_parallel: bool = False, bq: float | None = None,
                                     frozen_mlp=False) -> np.ndarray:
    """a_tok: bytes of activations saved per token per layer for the backward pass (see module doc).
    With Megatron sequence parallelism the norm / residual activations are split t ways too.
    bq: bytes per element of what the linear layers save of their inputs (None: b_a). A low-precision training
    recipe (Transformer Engine's FP8 / MX linears) saves only the quantized copy its wgrad GEMM reads: the QKV,
    fc1 and fc2 inputs (routed experts' too) at b_q, and the attention output twice, b_a for the flash backward
    and b_q for the output projection's wgrad.
    frozen_mlp (per configuration): LoRA fine-tuning with adapters on the attention block only; the MLP's and the
    experts' linear layers are frozen, and a frozen linear layer's backward is its dgrad alone (it needs its weight,
    not its input), so their inputs (fc1: D, fc2: F per token; the experts' per routed row) are not kept. The
    adapters' own rank-r intermediates (r per token per adapted projection) are not counted: under 1% of a layer's
    at r <= 64."""
    a = arch
    t = tp if isinstance(tp, float) else np.asarray(tp, dtype=float)  # a Python float: one plan's (footprint)
    sp_div = t if sequence_parallel else 1.0
    D = a.hidden_size
    if a.attention == AttentionKind.MLA:
        qkv = (a.num_attention_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.qk_nope_head_dim + a.v_head_dim))
        attn_out = a.num_attention_heads * a.v_head_dim
        # the sparse-attention indexer's queries and key are replicated, not split t ways
        latent = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim + (a.index_n_heads + 1) * a.index_head_dim
    else:
        gate = a.num_attention_heads if a.attn_output_gate else 0
        qkv = (a.num_attention_heads + gate + 2 * a.num_key_value_heads) * a.head_dim
        attn_out = a.num_attention_heads * a.head_dim
        latent = 0
    frac_linear = a.num_linear_layers / a.num_hidden_layers
    hk_dk, hv_dv, hv = (a.linear_num_key_heads * a.linear_key_head_dim, a.linear_num_value_heads * a.linear_value_head_dim,
                        a.linear_num_value_heads)
    linear = (2 * hk_dk + 2 * hv_dv + 2 * hv) + (2 * hk_dk + hv_dv) + 2 * hv_dv
    dense = (3 * D + (1 - frac_linear) * latent) / sp_div + ((1 - frac_linear) * (qkv + attn_out)
                                                             + frac_linear * linear) / t
    mlp_w = (3 if a.gated_mlp else 2)
    dense_mlp = D / sp_div + mlp_w * a.intermediate_size / t
    frac_moe = a.num_moe_layers / a.num_hidden_layers
    moe = 0.0
    if a.is_moe:
        e = bd.num(ep)
        shared = a.num_shared_experts * (a.shared_expert_intermediate_size or a.moe_intermediate_size)
        routed = a.num_experts_per_tok * moe_imbalance * e / (t * bd.maximum(e, 1.0))
        moe = D / sp_div + routed * (D + mlp_w * a.moe_intermediate_size) + mlp_w * shared / t
    saved = ba * (dense + (1 - frac_moe) * dense_mlp + frac_moe * moe)
    # the MLP's and experts' linear layers' inputs: fc1 D, fc2 F (per routed row for the experts, the shared
    # experts' fc2 per token)
    mlp_in = (1 - frac_moe) * (D / sp_div + a.intermediate_size / t)
    if a.is_moe:
        mlp_in = mlp_in + frac_moe * (routed * (D + a.moe_intermediate_size) + shared / t)
    dropped = bd.where(bd.flag(frozen_mlp), mlp_in, 0.0)  # frozen layers' inputs: not kept
    if bq is None or np.all(np.asarray(bq) >= ba):
        return saved - ba * dropped
    bq = np.minimum(np.asarray(bq, dtype=float), ba)  # per configuration (a sweep over the compute type)
    # the linear layers' inputs kept at b_q (module doc above): QKV and fc1 inputs D, fc2 inputs F (per expert row)
    lin_in = D / sp_div + mlp_in
    low = saved - (ba - bq) * lin_in + bq * (1 - frac_linear) * attn_out / t
    return np.where(bq < ba, low - bq * dropped, saved - ba * dropped)


def selective_op_bytes_per_token_layer(arch: ModelArch, tp, ep, ba: float, moe_imbalance: float,
                                       sequence_parallel: bool = False) -> np.ndarray:
    """a_tok under op-level selective checkpointing (torchtitan's 'op' policy: its save list keeps the outputs of
    every other matmul and of the attention kernel, and recomputes the rest from the layer's input):
    b_a [D (layer input) + H d_v / t (attention output) + 1/2 (matmul outputs)], the matmul outputs per token
    being Q, K, V and the output projection, the MLP's (gate, up, down) or, in MoE layers, the routed and shared
    experts'."""
    a = arch
    t = tp if isinstance(tp, float) else np.asarray(tp, dtype=float)  # a Python float: one plan's (footprint)
    sp_div = t if sequence_parallel else 1.0
    D, gated = a.hidden_size, 2 if a.gated_mlp else 1
    heads_v = a.num_attention_heads * (a.v_head_dim if a.attention == AttentionKind.MLA else a.head_dim)
    qkv = a.num_attention_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) + heads_v \
        if a.attention == AttentionKind.MLA else (a.num_attention_heads + 2 * a.num_key_value_heads) * a.head_dim
    mm = qkv / t + D / sp_div
    frac_moe = a.num_moe_layers / a.num_hidden_layers
    dense_mlp = gated * a.intermediate_size / t + D / sp_div
    moe = 0.0
    if a.is_moe:
        e = np.asarray(ep, dtype=float)
        routed = a.num_experts_per_tok * moe_imbalance * e / (t * np.maximum(e, 1))
        shared = a.num_shared_experts * (a.shared_expert_intermediate_size or a.moe_intermediate_size)
        moe = routed * (gated * a.moe_intermediate_size + D) + (gated * shared + (D if shared else 0)) / t
    mm = mm + (1 - frac_moe) * dense_mlp + frac_moe * moe
    return ba * (D / sp_div + heads_v / t + mm / 2)


def saved_bytes_per_layer(arch: ModelArch, kn: bd.Knobs, cal: Calibration, recompute: Recompute,
                          sequence_parallel: bool = False) -> tuple[np.ndarray, np.ndarray, str]:
    """(N, a_tok, note): what one layer saves for its backward per micro-batch on one device is N a_tok bytes, N =
    B T / (d_a c) tokens, a_tok under the recompute policy (full recompute keeps only the layer input)."""
    f = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    ba = float(np.max(bd._dtype_map(kn.activations, bytes_per_element)))
    tp = f(kn.tp)
    u = cal["moe_load_imbalance"] if kn.moe_imbalance is None else float(kn.moe_imbalance)
    tokens = f(kn.batch) * f(kn.seq_len) / (f(kn.da) * f(kn.cp))
    # a recipe with GEMMs at 8 bits or fewer saves the linear layers' inputs at the compute type (per configuration)
    bq = bd._dtype_map(kn.compute, bytes_per_element)
    train = Phase(kn.phase) == Phase.TRAIN
    a_tok = activation_bytes_per_token_layer(arch, tp, f(kn.ep), ba, u, sequence_parallel, bq if train else None,
                                             frozen_mlp=train & (f(kn.lora_rank) > 0))
    layer_input = arch.hidden_size * ba / (tp if sequence_parallel else 1.0) * np.ones_like(np.asarray(a_tok, float))
    rc, note = Recompute(recompute), ""
    if rc == Recompute.FULL:  # the share f of the stage's layers re-run keeps only its input (f = 1: every layer)
        f = kn.recompute_share(arch.num_hidden_layers)
        a_tok = f * layer_input + (1 - f) * a_tok
        note = "full recompute: only each layer's input is kept" if np.all(f == 1) else \
            "full recompute of some layers: they keep only their input, the others every activation"
    elif rc == Recompute.ALTERNATE_LAYERS:
        a_tok, note = (a_tok + layer_input) / 2, "every other layer recomputed: half the layers keep only their input"
    elif rc == Recompute.SELECTIVE_OP:
        a_tok = np.minimum(a_tok, selective_op_bytes_per_token_layer(arch, tp, f(kn.ep), ba, u, sequence_parallel))
        note = "op-level selective recompute: the layer input, attention output and every other matmul output kept"
    return tokens, a_tok, note
