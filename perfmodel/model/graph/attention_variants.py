"""Operator graphs of the attention variants beside softmax attention; graph.py places them.

    linear_attention_block(g, phase)          the Gated DeltaNet layers (count L_lin per stage)
    sparse_mla_core(g, phase, count, tag)     DeepSeek Sparse Attention inside an MLA layer: the
                                              lightning indexer and the attention over its top-k keys

Gated DeltaNet layer (transformers' Qwen3_5GatedDeltaNet; vLLM and SGLang shard its heads over
tensor parallelism like attention heads): norm; one in_proj GEMM for q, k, v, the output gate z
and the gate inputs b, a; the depthwise causal conv + SiLU over q, k, v; L2 norms of q and k; the
gates (decay a = exp(-exp(A_log) softplus(a + dt_bias)), write strength b = sigmoid(b)); the delta
rule (recurrent at decode, chunked otherwise: attention_variant_formulas); the gated RMSNorm
(RMSNorm(o) x SiLU(z)); out_proj; the TP all-reduce and the residual. No KV cache: a sequence
keeps its fixed state (memory.recurrent_state_bytes_per_sequence) however long its context.
Context parallelism is priced as if each rank's share of a sequence ran independently: the state
hand-off between ranks is not modelled (serving engines run these layers without it).

DeepSeek Sparse Attention (DeepSeek-V3.2-Exp; GLM-5's glm_moe_dsa) runs MLA in its multi-query
(absorbed) form in every phase, as its kernels do (FlashMLA sparse prefill and decode): W_UK is
folded into the queries and W_UV into the output, one latent "KV head" of r_kv + d_rope per token.
The indexer (replicated on every tensor-parallel rank, as vLLM's ReplicatedLinear holds it):
wq_b from the query latent, wk and weights_proj as one GEMM from the hidden state, LayerNorm and
RoPE on the key, the key written to its cache (d_ix b_ix per token), then the scores over every held
key. The attention then reads at most k_top latent entries per query token (gathered), and never
more than a dense sweep of the held keys would.

Does not: bind numbers, price time, or know which models have these layers (GraphKey says).
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from perfmodel.comm.algorithms import Collective
from perfmodel.core.scenario import Phase
from perfmodel.core.symbols import C0, B, D, H, Hix, Hlk, Hlv, Kc, T, ba, bix, bkv, cp, dix, dlk, dlv, dn, dr, dv, ktop, rkv, rq, t
from perfmodel.model import attention_variant_formulas as av
from perfmodel.model import formulas as fm
from perfmodel.model.formulas import Work
from perfmodel.model.ops import Comm, GraphKey, Lla, N_dev, Op, OpKind, da, forward_op


def linear_attention_block(g: GraphKey, phase: Phase) -> list[Op]:
    """The Gated DeltaNet layers of one stage, per device (heads split t ways; see the module doc)."""
    c, grp = Lla, "linear_attention"
    seqs = B / da  # sequences on this device: each carries one state per layer
    h_k, h_v = Hlk / t, Hlv / t
    channels = (2 * Hlk * dlk + Hlv * dlv) / t  # q, k, v through the conv
    in_width = channels + (Hlv * dlv + 2 * Hlv) / t  # q, k, v, z, b, a out of the input projection
    ops = [forward_op("lin.norm", grp, OpKind.NORM, c, fm.norm(N_dev, D, g.norm), formula="norm"),
           forward_op("lin.in_proj", grp, OpKind.MATMUL, c, fm.matmul(N_dev, D, in_width), formula="matmul",
                      io=(N_dev * D, N_dev * in_width)),
           forward_op("lin.conv", grp, OpKind.ELEMENTWISE, c, av.causal_conv(N_dev, seqs, channels, Kc),
                      formula="causal_conv"),
           # fused into the delta-rule kernel (vLLM and SGLang pass use_qk_l2norm_in_kernel): no HBM traffic
           forward_op("lin.qk_l2norm", grp, OpKind.NORM, c,
                      dataclasses.replace(fm.norm(N_dev * 2 * h_k, dlk, "rmsnorm", params=False), read=0, write=0),
                      formula="norm"),
           # decay exp(-exp(A_log) softplus(a + dt_bias)) and sigmoid(b): A_log and dt_bias are h_v each
           forward_op("lin.gates", grp, OpKind.ELEMENTWISE, c,
                      fm.elementwise(N_dev * h_v, vector=4, scalar=1, exp=3, reads=2, writes=2, params=2 * h_v),
                      formula="elementwise")]
    if phase == Phase.DECODE:
        core = av.gated_delta_rule_decode(N_dev, seqs, h_k, h_v, dlk, dlv)
    else:
        core = av.gated_delta_rule_chunked(N_dev, seqs, h_k, h_v, dlk, dlv, C0)
    # backward (training): flash-linear-attention recomputes the chunk states (the graph's score-recompute
    # op adds half the forward) and runs the dq, dk, dv, db, dg kernels: twice the forward's work
    ops.append(forward_op("lin.core", grp, OpKind.ATTENTION, c, core, formula="gated_delta_rule",
                          backward=core.scaled(2).without_params()))
    gated_norm = fm.norm(N_dev * h_v, dlv, "rmsnorm", params=False) \
        + fm.elementwise(N_dev * h_v * dlv, scalar=1, vector=1, reads=1, writes=0, params=dlv)  # x SiLU(z)
    ops += [forward_op("lin.out_norm", grp, OpKind.NORM, c, gated_norm, formula="norm"),
            forward_op("lin.out_proj", grp, OpKind.MATMUL, c, fm.matmul(N_dev, Hlv * dlv / t, D), formula="matmul",
                       io=(N_dev * Hlv * dlv / t, N_dev * D)),
            forward_op("lin.tp_all_reduce", grp, OpKind.COLLECTIVE, c, Work(),
                       Comm(Collective.ALL_REDUCE, N_dev * D * ba, "tp"), formula="collective"),
            forward_op("lin.residual", grp, OpKind.ELEMENTWISE, c, fm.elementwise(N_dev * D, vector=1, reads=2),
                       formula="elementwise")]
    return ops


def _per_head(w: Work, heads: sp.Expr) -> Work:
    """A batched matmul with one weight matrix per head: `heads` times one head's work, weights included."""
    return w.scaled(heads)


def sparse_mla_core(g: GraphKey, phase: Phase, count: sp.Expr, tag: str) -> list[Op]:
    """The indexer and the top-k MLA core of a DeepSeek Sparse Attention layer (after MLA's q / kv_a
    projections, norms and RoPE, before o_proj; see the module doc)."""
    grp = f"attention{tag}"
    infer = phase != Phase.TRAIN
    s_scored = fm.causal_mean_keys(T, C0)  # the indexer scores every previous key
    s_sel = av.sparse_mean_keys(T, C0, ktop)
    held = (B / da) * fm.kv_length(T, C0) / cp  # keys held for this device's sequences
    ix_passes, _ = fm.kv_passes(T / cp, Hix, dix, 0, ba)
    ops = [forward_op(f"attn{tag}.ix_q", grp, OpKind.MATMUL, count, fm.matmul(N_dev, rq, Hix * dix), formula="matmul"),
           forward_op(f"attn{tag}.ix_k", grp, OpKind.MATMUL, count, fm.matmul(N_dev, D, dix + Hix),
                      formula="matmul"),  # wk and weights_proj as one GEMM
           forward_op(f"attn{tag}.ix_k_norm", grp, OpKind.NORM, count, fm.norm(N_dev, dix, "layernorm"),
                      formula="norm"),
           forward_op(f"attn{tag}.ix_rope", grp, OpKind.ELEMENTWISE, count,
                      fm.elementwise(N_dev * (Hix + 1) * dr, vector=3), formula="elementwise")]
    if infer:
        ops.append(forward_op(f"attn{tag}.ix_key_cache_write", grp, OpKind.MEMORY, count,
                              Work(write=N_dev * dix * bix), formula="memory"))
    score = av.lightning_indexer(N_dev, Hix, dix, s_scored, held, s_sel, hbm_passes=ix_passes)
    ops.append(forward_op(f"attn{tag}.ix_score", grp, OpKind.ATTENTION, count, score, formula="lightning_indexer",
                          backward=score.scaled(2).without_params()))
    ops.append(forward_op(f"attn{tag}.q_absorb", grp, OpKind.MATMUL, count,
                          _per_head(fm.matmul(N_dev, dn, rkv), H / t), formula="matmul"))
    if infer:
        ops.append(forward_op(f"attn{tag}.kv_cache_write", grp, OpKind.MEMORY, count,
                              Work(write=N_dev * (rkv + dr) * bkv), formula="memory"))
    dense_passes, _ = fm.kv_passes(T / cp, H / t, rkv + dr, rkv, ba)
    read_tokens = sp.Min(N_dev * s_sel, held * dense_passes)  # gathered per query, capped by a dense sweep
    args = (N_dev, H / t, 1, s_sel, read_tokens, rkv + dr, rkv)
    kw = dict(kv_width=rkv + dr, b_kv_elem=bkv if infer else ba, hbm_passes=1, sram_passes=0, s_full=s_sel,
              dropout=1 if phase == Phase.TRAIN else 0)
    ops.append(forward_op(f"attn{tag}.core", grp, OpKind.ATTENTION, count, fm.attention(*args, **kw),
                          formula="attention", backward=fm.attention_backward(*args, **kw)))
    ops.append(forward_op(f"attn{tag}.v_absorb", grp, OpKind.MATMUL, count,
                          _per_head(fm.matmul(N_dev, rkv, dv), H / t), formula="matmul"))
    return ops
