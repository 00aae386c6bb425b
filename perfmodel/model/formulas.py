"""Operator formulas, written once in sympy: FLOPs, engine work and HBM bytes per operator.

Each function returns a `Work` record of sympy expressions over the symbols in
symbols.py. We count FLOPs, never MACs (a multiply-add is 2 FLOP). Bytes are HBM bytes.

    matmul      C[M,N] = A[M,K] W[K,N]     flop = 2 M K N
                tensor work (tile-padded) = 2 q(M,m_t) (q(K,k_t) + k_0) q(N,n_t),  q(x,a) = a ceil(x/a),
                k_0 = a tile's fixed prologue / epilogue in K-loop elements (GEMM efficiency K / (K + k_0))
                bytes = M K b_a + K N b_w + M N b_a
    attention   flash attention per layer: scores = B T h S_avg
                flop = 2 scores (d_qk + d_v);  exp = scores;  vector = p_v scores
                Trainium transposes P on the tensor engine unless it can do so in the
                background (Trn3): + 2 scores k_b16 at the BF16 rate, weighted by x_tr
                materialised (no flash attention, i_mat = 1): GEMMs over all T x T scores, and the
                score matrix written and read between the unfused kernels (see attention())
    elementwise n elements, p passes on an engine; bytes = n (reads + writes) b_a
    norm        RMSNorm 3 vector passes / LayerNorm 5 per element (+ 1 rsqrt per row)
    low-precision cast (training) n elements: bytes = n ((1 + r_8) b_a + c_8 b_c), 1 vector pass

Engine-work fields: `tensor_flop` (padded, at the compute-type rate), `tensor_b16_flop`
(work at the BF16 rate: transposes), `vector`, `scalar`, `exp`, `gpsimd` (element-ops).
Does not: bind numbers or price time (roofline.py does).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy as sp

from perfmodel.core.symbols import Ssram, ba, bc, bkv, bw, kb, kt, mt, nt

ZERO = sp.Integer(0)

# Calibration symbols used only inside formulas (values come from calibration files).
q_a = sp.Symbol("q_a", nonnegative=True)  # vector passes per activation element to quantize it for the tensor engine
q_w = sp.Symbol("q_w", nonnegative=True)  # vector passes per weight element to dequantize it (weight-only quantization)
q_we = sp.Symbol("q_we", nonnegative=True)  # the same for routed-expert weights
x_tr = sp.Symbol("x_tr", nonnegative=True)  # 1 if attention transposes occupy the tensor engine, 0 if hidden
p_av = sp.Symbol("p_av", nonnegative=True)  # vector passes per attention score (row max, rescale)
p_sm = sp.Symbol("p_sm", nonnegative=True)  # vector passes per score element of an unfused (materialised) softmax
qb = sp.Symbol("qb", positive=True)  # flash-attention query block (tokens per KV sweep)
i_mat = sp.Symbol("i_mat", nonnegative=True)  # 1 if attention scores are materialised in HBM (no flash attention)
r_att = sp.Symbol("r_att", positive=True)  # attention kernels' tensor efficiency relative to GEMMs' (eta_att / eta_t)
k0 = sp.Symbol("k0", nonnegative=True)  # a GEMM's fixed cost per output tile (prologue, epilogue) in K-loop elements
k_d = sp.Symbol("k_d", nonnegative=True)  # flash attention's fixed work per score row, in head-dim elements
k_s = sp.Symbol("k_s", nonnegative=True)  # flash attention's fixed work per query block's sweep, in keys
g_ref = sp.Symbol("g_ref", positive=True)  # d/(d + k_d) s/(s + k_s) at the shape attention's efficiency was measured
r_abw = sp.Symbol("r_abw", positive=True)  # flash-attention backward's tensor efficiency relative to its forward's
rho_mat = sp.Symbol("rho_mat", positive=True)  # materialised score kernels' achieved HBM bandwidth over eta_m's
e_x = sp.Symbol("e_x", positive=True)  # training element-wise ops' HBM traffic over fused kernels' (eager: > 1)
f8 = sp.Symbol("f8", nonnegative=True)  # 1 if training GEMMs run at 8 bits or fewer (a low-precision recipe), else 0
c8 = sp.Symbol("c8", nonnegative=True)  # quantized copies a low-precision training recipe writes per tensor
r8 = sp.Symbol("r8", nonnegative=True)  # extra reads per tensor to find its scale first (current / dynamic scaling)


def q(x: sp.Expr, tile: sp.Expr) -> sp.Expr:
    """x rounded up to a whole number of tiles: tile * ceil(x / tile)."""
    return tile * sp.ceiling(x / tile)


@dataclass(frozen=True)
class Work:
    """Symbolic work of one operator instance (per device, per repeat)."""

    flop: sp.Expr = ZERO  # useful FLOPs (model FLOPs)
    tensor_flop: sp.Expr = ZERO  # issued to the tensor engine at the compute-type rate (incl. tile padding)
    tensor_b16_flop: sp.Expr = ZERO  # issued to the tensor engine at the BF16 rate (transposes)
    vector: sp.Expr = ZERO  # vector-engine element-ops
    scalar: sp.Expr = ZERO  # scalar-engine element-ops (activation functions)
    exp: sp.Expr = ZERO  # exp evaluations (run on whichever engine has the faster exp)
    gpsimd: sp.Expr = ZERO  # GpSimd element-ops
    read: sp.Expr = ZERO  # HBM bytes read
    write: sp.Expr = ZERO  # HBM bytes written
    sram: sp.Expr = ZERO  # on-chip SRAM bytes re-read (reported; not a time term)
    score_io: sp.Expr = ZERO  # HBM bytes of a materialised attention score matrix (part of read + write; rho_mat)
    params: sp.Expr = ZERO  # parameters (elements) this operator owns on this device

    def __add__(self, other: "Work") -> "Work":
        return Work(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def scaled(self, factor: sp.Expr, keep_params: bool = False) -> "Work":
        vals = {f.name: getattr(self, f.name) * factor for f in fields(self)}
        if keep_params:
            vals["params"] = self.params
        return Work(**vals)

    def without_params(self) -> "Work":
        return Work(**{**{f.name: getattr(self, f.name) for f in fields(self)}, "params": ZERO})

    def items(self):
        return ((f.name, getattr(self, f.name)) for f in fields(self))


FIELDS = tuple(f.name for f in fields(Work))


def matmul(M: sp.Expr, K: sp.Expr, N: sp.Expr, *, weights: bool = True, bias: bool = False,
           b_in: sp.Expr = ba, b_out: sp.Expr = ba, b_w: sp.Expr = bw, weight_reads: sp.Expr = 1,
           dequant: sp.Expr = q_w) -> Work:
    """C[M,N] = A[M,K] @ W[K,N] (+ bias).

    flop = 2 M K N;  tensor = 2 q(M,m_t) (q(K,k_t) + k_0) q(N,n_t)   (k_0: each output tile's fixed
    prologue / epilogue as extra K-loop steps: efficiency K / (K + k_0) falls for short K, as TP-split layers have);
    bytes = M K b_a + weight_reads K N b_w + M N b_a;
    quantize/dequantize: q_a M K + q_w K N vector passes (zero where the hardware converts natively).
    With weights=False the second operand is an activation (no parameters, no dequantization).
    """
    flop = 2 * M * K * N
    tensor = 2 * q(M, mt) * (q(K, kt) + k0) * q(N, nt)
    read = M * K * b_in + (weight_reads * K * N * b_w if weights else K * N * b_in)
    vector = q_a * M * K + (dequant * weight_reads * K * N if weights else q_a * K * N)
    params = K * N + (N if bias else 0) if weights else ZERO
    if bias:
        vector += M * N
    return Work(flop=flop, tensor_flop=tensor, vector=vector, read=read, write=M * N * b_out, params=params)


def matmul_backward(M: sp.Expr, K: sp.Expr, N: sp.Expr, *, weights: bool = True) -> Work:
    """Gradients of C = A W: dA = dC W^T (2 M N K) and dW = A^T dC (2 K M N).

    bytes: read dC, W, A; write dA and (for weights) dW in the activation type.
    """
    fwd = matmul(M, N, K, weights=weights)  # dA = dC[M,N] @ W^T[N,K]
    dw = matmul(K, M, N, weights=False)  # dW[K,N] = A^T[K,M] @ dC[M,N]
    return (fwd + dw).without_params()


def elementwise(n: sp.Expr, *, vector: sp.Expr = 0, scalar: sp.Expr = 0, exp: sp.Expr = 0, gpsimd: sp.Expr = 0,
                reads: sp.Expr = 1, writes: sp.Expr = 1, b: sp.Expr = ba, params: sp.Expr = 0) -> Work:
    """n elements through `vector`/`scalar`/`exp`/`gpsimd` passes each; bytes = n (reads + writes) b."""
    return Work(vector=n * vector, scalar=n * scalar, exp=n * exp, gpsimd=n * gpsimd,
                read=n * reads * b, write=n * writes * b, params=params)


def low_precision_cast(n: sp.Expr, b: sp.Expr = ba, copies: sp.Expr = c8) -> Work:
    """Quantize n elements for low-precision GEMMs in training: read them in their own type b (activations and
    output gradients b_a; a layer's weights, once per step, b_w) 1 + r_8 times (current / dynamic scaling reads
    the tensor once for its amax before the cast), cast (one vector pass), write c_8 copies in the compute type
    (row-wise and, where the hardware cannot read it column-wise, a transposed one for the other GEMM; `copies`
    where fewer GEMMs read it): bytes = n ((1 + r_8) b + c_8 b_c)."""
    return Work(vector=n, read=n * (1 + r8) * b, write=n * copies * bc)


def norm(rows: sp.Expr, width: sp.Expr, kind: str, *, params: bool = True) -> Work:
    """RMSNorm: x / rms(x) * g (3 vector passes: square-sum, scale, gain; 1 rsqrt per row);
    LayerNorm: 5 passes (mean, variance, centre-scale, gain, bias); params width (+ width bias)."""
    passes = {"rmsnorm": 3, "layernorm": 5}[kind]
    p = (width if kind == "rmsnorm" else 2 * width) if params else 0
    w = elementwise(rows * width, vector=passes, params=p)
    return w + Work(scalar=rows)


def _attention_parts(tokens_q, heads, kv_heads, s_avg, kv_tokens, d_qk, d_v, b_q, b_kv_elem, kv_width, hbm_passes,
                     sram_passes, s_full, dropout) -> dict:
    """The pieces attention() and attention_backward() share (one place for the shapes)."""
    s_full = s_avg if s_full is None else s_full
    scores = tokens_q * heads * s_avg
    g_rows = tokens_q * heads / kv_heads
    kv_width = (d_qk + d_v) if kv_width is None else kv_width
    # the unfused (materialised) path multiplies every query with every key; flash kernels skip
    # the blocks the causal mask removes
    s_issued = s_avg + i_mat * (s_full - s_avg)
    n_full = tokens_q * heads * s_full  # score elements of the whole matrix
    # a flash kernel's efficiency by shape: the softmax work per score is fixed while the MMAs grow with the head
    # dim, and each query block's sweep has a fixed prologue / epilogue: d / (d + k_d) s / (s + k_s), relative to
    # the shape r_att was measured at (g_ref); unfused attention's GEMMs are not flash kernels (i_mat = 1)
    shape = (1 - i_mat) * d_qk / (d_qk + k_d) * s_avg / (s_avg + k_s) / g_ref + i_mat
    return {
        "scores": scores, "n_full": n_full, "flop": 2 * scores * (d_qk + d_v),
        "tensor": 2 * q(g_rows, mt) * kv_heads * s_issued * (q(d_qk, kt) + q(d_v, nt)) / (r_att * shape),
        "transpose": 2 * q(g_rows, mt) * kv_heads * s_issued * kb * x_tr / (r_att * shape),
        "q_bytes": tokens_q * heads * d_qk * b_q, "o_bytes": tokens_q * heads * d_v * b_q,
        "kv_bytes": kv_tokens * kv_heads * kv_width * b_kv_elem, "hbm_passes": hbm_passes,
        "sram_passes": sram_passes,
        # materialised score traffic (i_mat = 1), per element of the full matrix, d = dropout 0/1:
        #   forward : baddbmm writes S; scale-mask-softmax reads S, writes P; dropout reads P,
        #             writes P' and a 1-byte mask; P'V reads P'
        #   backward: dP' written; dropout backward reads dP' and the mask, writes dP; softmax
        #             backward reads dP and P, writes dS; dQ and dK read dS; dV reads P'
        "mat_fwd_read": i_mat * n_full * (2 + dropout) * b_q,
        "mat_fwd_write": i_mat * n_full * ((2 + dropout) * b_q + dropout),
        "mat_bwd_read": i_mat * n_full * ((5 + dropout) * b_q + dropout),
        "mat_bwd_write": i_mat * n_full * (2 + dropout) * b_q,
    }


def attention(tokens_q: sp.Expr, heads: sp.Expr, kv_heads: sp.Expr, s_avg: sp.Expr, kv_tokens: sp.Expr,
              d_qk: sp.Expr, d_v: sp.Expr, *, b_q: sp.Expr = ba, b_kv_elem: sp.Expr = bkv,
              kv_width: sp.Expr | None = None, hbm_passes: sp.Expr = 1, sram_passes: sp.Expr = 0,
              s_full: sp.Expr | None = None, dropout: int = 0) -> Work:
    """Flash attention for `tokens_q` query tokens (B T), `heads` query heads sharing `kv_heads`.

    scores = B T h S_avg (S_avg: mean keys per query; causal prefill ~ C_0 + (T+1)/2).
    flop  = 2 scores d_qk (Q K^T) + 2 scores d_v (P V)
    tensor: queries of a KV group are the M dimension: g = h / kv_heads rows per query token,
            Q K^T = 2 q(B T g, m_t) q(d_qk, k_t) S_avg h_kv,  P V = 2 q(B T g, m_t) S_avg q(d_v, n_t) h_kv,
            issued at r_att x [d_qk / (d_qk + k_d)] [S_avg / (S_avg + k_s)] / g_ref of the GEMM efficiency
            (flash kernels lose more to the softmax at small head dims and to each sweep's fixed cost at
            few keys per query; g_ref: the same factor at the shape r_att was measured at)
    exp = scores; vector = p_av scores; transposes of P at the BF16 rate x_tr (Trainium).
    bytes: Q and O once; K,V (kv_width elements per token per KV head, default d_qk + d_v) for
           `kv_tokens` tokens: `hbm_passes` sweeps from HBM, further `sram_passes` from on-chip SRAM.
    Materialised attention (i_mat = 1: the pre-FlashAttention path of Megatron-LM 2021 and eager
    PyTorch, one kernel per step) runs the two GEMMs over every key, S_full = C_0 + T per query
    (the causal mask is applied inside the softmax, after the GEMM), and passes the score matrix
    (n = B T h S_full elements) through HBM between kernels: baddbmm writes S; the fused
    scale-mask-softmax reads S and writes P; attention dropout (d = 1: training with attention
    dropout, Megatron-LM's default 0.1) reads P, writes P' and a 1-byte mask; P'V reads P':
        read += (2 + d) n b_a,   write += (2 + d) n b_a + d n
    These score bytes (score_io) move at rho_mat of the bandwidth streaming kernels reach (roofline.engine_times):
    the batched thin-K GEMMs, row softmax and dropout kernels between them are measured below it (FlashAttention's
    Appendix E tables, calibration materialised_attention_bandwidth_ratio).
    Its softmax is element-wise work over the whole matrix, masked entries included: exp = n and
    vector = p_sm n (p_sm: the unfused softmax's vector passes: mask, row max, subtract, row sum,
    normalise) in place of the flash kernel's p_av passes over the causal scores.
    """
    a = _attention_parts(tokens_q, heads, kv_heads, s_avg, kv_tokens, d_qk, d_v, b_q, b_kv_elem, kv_width,
                         hbm_passes, sram_passes, s_full, dropout)
    # the unfused softmax touches every element of the matrix (i_mat = 1)
    exp = a["scores"] + i_mat * (a["n_full"] - a["scores"])
    vector = p_av * a["scores"] + i_mat * (p_sm * a["n_full"] - p_av * a["scores"])
    return Work(flop=a["flop"], tensor_flop=a["tensor"], tensor_b16_flop=a["transpose"], exp=exp, vector=vector,
                read=a["q_bytes"] + hbm_passes * a["kv_bytes"] + a["mat_fwd_read"],
                write=a["o_bytes"] + a["mat_fwd_write"], sram=sram_passes * a["kv_bytes"],
                score_io=a["mat_fwd_read"] + a["mat_fwd_write"])


def attention_backward(tokens_q: sp.Expr, heads: sp.Expr, kv_heads: sp.Expr, s_avg: sp.Expr, kv_tokens: sp.Expr,
                       d_qk: sp.Expr, d_v: sp.Expr, *, b_q: sp.Expr = ba, b_kv_elem: sp.Expr = bkv,
                       kv_width: sp.Expr | None = None, hbm_passes: sp.Expr = 1, sram_passes: sp.Expr = 0,
                       s_full: sp.Expr | None = None, dropout: int = 0) -> Work:
    """Backward of attention() (same arguments): dQ, dK, dV are 2x the forward FLOPs and tensor
    work (FA2-style: P is recomputed by a separate recompute op in the graph); the backward reads
    Q, K, V, O, dO (2 x forward reads + forward writes) and writes dQ, dK, dV (= forward reads);
    exp 0, vector 3 scores (dP, dS = P (dP - D)) + the forward's vector passes. Materialised
    attention (i_mat = 1) runs those 3 passes over the whole matrix (vector = 3 n) and adds the
    unfused backward's score traffic (n = B T h S_full, d = dropout):
        read += ((5 + d) b_a + d) n,   write += (2 + d) n b_a
    (dP' written; dropout backward reads dP' and the mask, writes dP; softmax backward reads dP
    and P, writes dS; dQ and dK read dS; dV reads P'). Flash kernels issue the backward's tensor work at
    r_abw of the forward's efficiency (the dS = P (dP - D) step between its GEMMs and the dQ accumulation)."""
    a = _attention_parts(tokens_q, heads, kv_heads, s_avg, kv_tokens, d_qk, d_v, b_q, b_kv_elem, kv_width,
                         hbm_passes, sram_passes, s_full, dropout)
    read = a["q_bytes"] + hbm_passes * a["kv_bytes"]
    write = a["o_bytes"]
    flash_vector = 3 * a["scores"] + p_av * a["scores"]
    slow = (1 - i_mat) / r_abw + i_mat  # flash kernels' backward runs below their forward; unfused GEMMs do not
    return Work(flop=2 * a["flop"], tensor_flop=2 * a["tensor"] * slow, tensor_b16_flop=2 * a["transpose"] * slow,
                vector=flash_vector + i_mat * (3 * a["n_full"] - flash_vector),
                read=2 * read + write + a["mat_bwd_read"], write=read + a["mat_bwd_write"],
                score_io=a["mat_bwd_read"] + a["mat_bwd_write"])


def kv_passes(tokens_q_seq: sp.Expr, group: sp.Expr, d_qk: sp.Expr, d_v: sp.Expr, b: sp.Expr) -> tuple:
    """(HBM passes, SRAM passes) over one sequence's K/V for one KV head.

    Flash attention sweeps K/V once per query block of q_b tokens. Queries of one KV head
    (T g rows of d_qk + d_v accumulators) that fit in on-chip SRAM share a sweep from HBM;
    the other sweeps hit SRAM: HBM passes = ceil(T g (d_qk + d_v) b / M_sram).
    """
    total = sp.ceiling(tokens_q_seq / qb)
    hbm = sp.Min(total, sp.ceiling(tokens_q_seq * group * (d_qk + d_v) * b / Ssram))
    return hbm, total - hbm


def causal_mean_keys(T: sp.Expr, C0: sp.Expr, window: sp.Expr | None = None) -> sp.Expr:
    """Mean keys attended per query token: C_0 + (T + 1)/2, capped by a sliding window W."""
    s = C0 + (T + 1) / 2
    return sp.Min(window, s) if window is not None else s


def kv_length(T: sp.Expr, C0: sp.Expr, window: sp.Expr | None = None) -> sp.Expr:
    """Keys held (and read) per sequence at the end of the step: C_0 + T, capped by W."""
    s = C0 + T
    return sp.Min(window, s) if window is not None else s


def adam_step(n_params: sp.Expr, bytes_state_read: sp.Expr, bytes_state_write: sp.Expr) -> Work:
    """AdamW update of n parameters: ~12 vector element-ops each (moments, bias correction,
    sqrt, divide, weight decay, cast); bytes = the optimizer state read and written."""
    return Work(vector=12 * n_params, scalar=n_params, read=n_params * bytes_state_read,
                write=n_params * bytes_state_write)


def experts_touched(tokens: sp.Expr, E: sp.Expr, k: sp.Expr) -> sp.Expr:
    """Expected routed experts with at least one token: E (1 - (1 - k/E)^tokens)."""
    return E * (1 - (1 - k / E) ** tokens)
