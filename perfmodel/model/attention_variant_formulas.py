"""Formulas of the attention variants beside softmax attention, written once in sympy (as formulas.py):
Gated DeltaNet linear attention and DeepSeek Sparse Attention. FLOPs (never MACs), engine work and
HBM bytes per operator instance on one device; graph/attention_variants.py places them in a graph.

Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, arXiv:2412.06464): per value head a state S of
d_k x d_v, per token S <- a S (I - b k k^T) + b v k^T, o = S^T q (a: decay gate, b: write strength).
h_k, h_v key / value heads, n tokens, m sequences, c the chunk, b_s state bytes, b_a activation bytes.

    gated_delta_rule_decode   recurrent form, one token per sequence (vLLM's and SGLang's
                              fused_recurrent_gated_delta_rule): per token and head the decay,
                              S^T k, the rank-1 update and S^T q pass over the state once each:
                              flop = 7 n h_v d_k d_v,  vector = 4 n h_v d_k d_v,  exp = 2 n h_v
                              bytes: q, k, v, gates in, o out; the state read and written once per
                              sequence: 2 m h_v d_k d_v b_s (no cache that grows with the context)
    gated_delta_rule_chunked  chunked form for prefill and training (flash-linear-attention's
                              chunk_gated_delta_rule, chunk c = 64): per chunk and head
                              b K K^T, Q K^T (2 c^2 d_k each), its triangular inverse (2 c^3 / 3),
                              W = T b K and U = T b V (2 c^2 d_k, 2 c^2 d_v), the state pass
                              V' = U - W S, S += K^T V', O = Q S (2 c d_k d_v each) and the
                              intra-chunk (Q K^T o M) V' (2 c^2 d_v):
                              flop = n h_v [6 d_k d_v + c (6 d_k + 4 d_v) + 2 c^2 / 3]
                              bytes: inputs and output, the kernels' hand-offs through HBM (A
                              written, inverted, read: 4 c; W, U: 2 (d_k + d_v); V': 2 d_v per token
                              and head; chunk states 2 d_k d_v / c), the final state written and
                              the initial one read when the sequence has a context (C_0 > 0)
    causal_conv               depthwise causal conv of kernel K_c over C channels, then SiLU:
                              flop = 2 n C K_c; conv state m C (K_c - 1) b_a read and written

DeepSeek Sparse Attention (DeepSeek-V3.2-Exp; GLM-5): a lightning indexer scores every previous
key with H_ix heads of d_ix, I(t, s) = sum_j w_tj ReLU(q_tj . k_s), and the attention then runs over
the k_top best keys only.

    lightning_indexer         scores = n H_ix S_avg (S_avg: mean keys scored per query):
                              flop = 2 scores (d_ix + 1) (q . k, then the head-weighted sum);
                              vector = 2 scores (ReLU, weighted sum) + 2 n S_avg (a top-k select
                              reads each candidate score twice: threshold, then gather)
                              bytes: the index keys, d_ix b_ix per key held, per sweep; queries and
                              head weights in; the selected indices out (4-byte int32 each); the
                              scores stay on chip (a top-k fused with the scoring kernel).
                              The tensor work is priced at the compute type's rate, though the
                              reference kernels run it in FP8: with BF16 compute the indexer is
                              priced at the BF16 rate.
    sparse_mean_keys          mean keys attended per new token: (1/T) sum_{i=1..T} min(C_0 + i, k_top)

Does not: place operators in a graph (graph/attention_variants.py) or bind numbers.
"""

from __future__ import annotations

import sympy as sp

from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.symbols import ba, bix, bs, kt, mt
from perfmodel.model.formulas import Work, q, r_att

# flash-linear-attention's chunk_gated_delta_rule works in chunks of BT = 64 tokens (fla/ops/
# gated_delta_rule/chunk.py), the kernels vLLM, SGLang and transformers run for Qwen3-Next / Qwen3.5
GDN_CHUNK_TOKENS = 64
cg = sp.Symbol("cg", positive=True)  # Gated DeltaNet chunk (tokens), bound to GDN_CHUNK_TOKENS
# The DeepSeek-V3.2-Exp reference Indexer keeps its key cache in FP8 with one FP32 scale per
# 128-element block (k_cache, k_scale_cache): bytes per key element
INDEX_KEY_SCALE_BLOCK = 128
INDEX_KEY_BYTES = bytes_per_element(DType.FP8) + bytes_per_element(DType.FP32) / INDEX_KEY_SCALE_BLOCK
INDEX_BYTES = 4  # one selected key's position (int32)


def _gdn_io(tokens, heads_k, heads_v, d_k, d_v, b) -> tuple[sp.Expr, sp.Expr]:
    """(bytes in, bytes out) of the delta-rule kernel: q, k (h_k d_k each), v (h_v d_v) and the two gates
    per value head in; o (h_v d_v) out."""
    return tokens * (2 * heads_k * d_k + heads_v * (d_v + 2)) * b, tokens * heads_v * d_v * b


def gated_delta_rule_decode(tokens: sp.Expr, seqs: sp.Expr, heads_k: sp.Expr, heads_v: sp.Expr, d_k: sp.Expr,
                            d_v: sp.Expr, *, b_state: sp.Expr = bs, b: sp.Expr = ba) -> Work:
    """Recurrent gated delta rule for `tokens` new tokens of `seqs` sequences (see the module doc)."""
    state = seqs * heads_v * d_k * d_v * b_state
    io_in, io_out = _gdn_io(tokens, heads_k, heads_v, d_k, d_v, b)
    per_state = tokens * heads_v * d_k * d_v
    return Work(flop=7 * per_state, vector=4 * per_state, exp=2 * tokens * heads_v, read=io_in + state,
                write=io_out + state)


def gated_delta_rule_chunked(tokens: sp.Expr, seqs: sp.Expr, heads_k: sp.Expr, heads_v: sp.Expr, d_k: sp.Expr,
                             d_v: sp.Expr, context: sp.Expr, *, chunk: sp.Expr = cg, b_state: sp.Expr = bs,
                             b: sp.Expr = ba) -> Work:
    """Chunked gated delta rule (prefill, training) for `tokens` tokens of `seqs` sequences that already
    hold `context` tokens (see the module doc)."""
    c = chunk
    th = tokens * heads_v
    flop = th * (6 * d_k * d_v + c * (6 * d_k + 4 * d_v) + 2 * c ** 2 / 3)
    handoff = th * (4 * c + 2 * (d_k + d_v) + 2 * d_v) * b + 2 * th / c * d_k * d_v * b
    state = seqs * heads_v * d_k * d_v * b_state
    io_in, io_out = _gdn_io(tokens, heads_k, heads_v, d_k, d_v, b)
    has_context = sp.Min(context, 1)  # 1 when the sequences carry a state in, else 0 (C_0 is whole)
    return Work(flop=flop, tensor_flop=flop, vector=th * (2 * c + d_k * d_v / c), exp=2 * th * c,
                read=io_in + handoff / 2 + has_context * state, write=io_out + handoff / 2 + state)


def causal_conv(tokens: sp.Expr, seqs: sp.Expr, channels: sp.Expr, kernel: sp.Expr, *, b: sp.Expr = ba) -> Work:
    """Depthwise causal conv (kernel K_c) and SiLU over `channels`; its rolling state of K_c - 1 tokens per
    sequence is read and written once per step. Parameters: channels x K_c (no bias)."""
    conv_state = seqs * channels * (kernel - 1) * b
    return Work(flop=2 * tokens * channels * kernel, vector=tokens * channels * kernel, scalar=tokens * channels,
                read=tokens * channels * b + conv_state, write=tokens * channels * b + conv_state,
                params=channels * kernel)


def lightning_indexer(tokens_q: sp.Expr, heads: sp.Expr, d_idx: sp.Expr, s_avg: sp.Expr, key_tokens: sp.Expr,
                      selected: sp.Expr, *, hbm_passes: sp.Expr = 1, b_key: sp.Expr = bix, b: sp.Expr = ba) -> Work:
    """DeepSeek Sparse Attention's indexer for `tokens_q` queries (see the module doc). The H_ix query heads
    share one key per token, so they form the M dimension of one GEMM against the keys (a multi-query
    kernel, DeepGEMM's fp8_mqa_logits); `selected` keys per query are written out as int32 positions."""
    scores = tokens_q * heads * s_avg
    tensor = 2 * q(tokens_q * heads, mt) * s_avg * q(d_idx, kt) / r_att
    return Work(flop=2 * scores * (d_idx + 1), tensor_flop=tensor, vector=2 * scores + 2 * tokens_q * s_avg,
                read=tokens_q * heads * (d_idx + 1) * b + hbm_passes * key_tokens * d_idx * b_key,
                write=tokens_q * selected * INDEX_BYTES)


def sparse_mean_keys(T: sp.Expr, C0: sp.Expr, topk: sp.Expr) -> sp.Expr:
    """Mean keys attended per new token when each attends to at most `topk`: new token i (1..T) sees
    C_0 + i keys, so (1/T) sum_i min(C_0 + i, k_top). With m = min(max(k_top, C_0), C_0 + T) the keys
    below the cap sum to (m (m + 1) - C_0 (C_0 + 1)) / 2 and the other C_0 + T - m tokens see k_top each."""
    m = sp.Min(sp.Max(topk, C0), C0 + T)
    return ((m * (m + 1) - C0 * (C0 + 1)) / 2 + (C0 + T - m) * topk) / T
