"""Operator graph of one device after sharding, per phase, as symbolic `Op` records.

The graph depends only on a model's *structure* (GraphKey: attention kind, MoE or dense,
sliding layers, norm, ...) and the phase, never on sizes: every Llama-shaped model
shares one graph, and sizes, batch, parallel degrees and data types are bound later
(evaluate.py), as floats or whole numpy arrays for sweeps.

The records and structural symbols are in ops.py. Counts: layer ops repeat L_x / p times (p
pipeline stages; the graph is one stage, embedding and LM head included, i.e. the heaviest
stage), x the micro-batches. Gated DeltaNet layers and DeepSeek Sparse Attention's indexer and
top-k core are built in graph/attention_variants.py.

Does not: bind numbers, price time or communication.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import sympy as sp

from perfmodel.comm.algorithms import Collective
from perfmodel.core.scenario import Phase, Recompute
from perfmodel.core.symbols import (C0, KV, B, D, E, F, Fe, Fs, H, T, V, W, ba, bkv, bw, bwe, cp, dh, dn, dr, dv, ep,
                                    frot, k, rkv, rq, t, u)
from perfmodel.core.workload import AttentionKind, ModelArch
from perfmodel.model import formulas as fm
from perfmodel.model.formulas import Work
from perfmodel.model.graph.attention_variants import linear_attention_block, sparse_mla_core
from perfmodel.model.graph.training import is_lora_adapter, quantized_linear, training_ops
from perfmodel.model.ops import (TV, Comm, GraphKey, KV_dev, Ld, Lfa, Lm, Lsw, N_dev, N_rep, Op, OpKind, P, Pass, bdp,
                                 da, i_a2a, i_ag, i_cp, i_ep, n_rep, nmb)
from perfmodel.model.ops import forward_op as _op
from perfmodel.model.ops import n_b, rho_r, rho_w


def _linear(name, grp, count, M, K, N, **kw) -> Op:
    """A weighted linear layer C[M,N] = A[M,K] W[K,N] (fm.matmul), its activations in and out recorded (Op.io)."""
    return _op(name, grp, OpKind.MATMUL, count, fm.matmul(M, K, N, **kw), formula="matmul", io=(M * K, M * N),
               shape=(M, K, N))


def _attention_op(name, grp, count, *args, **kw) -> Op:
    """The attention core: forward fm.attention, backward fm.attention_backward (same shapes)."""
    return _op(name, grp, OpKind.ATTENTION, count, fm.attention(*args, **kw), formula="attention",
               backward=fm.attention_backward(*args, **kw))


def _attention_block(g: GraphKey, phase: Phase, count: sp.Expr, window: sp.Expr | None, tag: str) -> list[Op]:
    """One attention layer set (full or sliding): norm, projections, RoPE, cache, core, output, reduce."""
    ops: list[Op] = []
    grp = f"attention{tag}"
    ops.append(_op(f"attn{tag}.norm", grp, OpKind.NORM, count, fm.norm(N_dev, D, g.norm), formula="norm"))
    infer = phase != Phase.TRAIN and not g.encoder_only
    if g.encoder_only:
        s_avg, s_kv = T, T  # bidirectional: every token sees the whole sequence
    else:
        s_avg, s_kv = fm.causal_mean_keys(T, C0, window), fm.kv_length(T, C0, window)
    kv_tokens = (B / da) * s_kv / cp  # K/V tokens held for this device's sequences
    # materialised (non-flash) attention in training runs attention dropout on the probabilities
    mat = dict(s_full=s_kv, dropout=1 if phase == Phase.TRAIN else 0)
    if g.attention == AttentionKind.MLA:
        if g.mla_q_lora:
            ops.append(_linear(f"attn{tag}.q_a", grp, count, N_dev, D, rq))
            ops.append(_op(f"attn{tag}.q_a_norm", grp, OpKind.NORM, count, fm.norm(N_dev, rq, "rmsnorm")))
            ops.append(_linear(f"attn{tag}.q_b", grp, count, N_dev, rq, H * (dn + dr) / t))
        else:
            ops.append(_linear(f"attn{tag}.q", grp, count, N_dev, D, H * (dn + dr) / t))
        ops.append(_linear(f"attn{tag}.kv_a", grp, count, N_dev, D, rkv + dr))
        ops.append(_op(f"attn{tag}.kv_a_norm", grp, OpKind.NORM, count, fm.norm(N_dev, rkv, "rmsnorm")))
        ops.append(_op(f"attn{tag}.rope", grp, OpKind.ELEMENTWISE, count,
                       fm.elementwise(N_dev * dr * (H / t + 1), vector=3), formula="elementwise"))
        if g.sparse:  # DeepSeek Sparse Attention: indexer, then MLA over the top-k keys
            ops += sparse_mla_core(g, phase, count, tag)
        elif phase == Phase.DECODE:
            # absorbed form (DeepSeek-V2 sec. 2.1.2): W_UK folded into the query, W_UV into the output;
            # attention runs over the shared latent (r_kv + d_rope per token), one KV "head".
            ops.append(_op(f"attn{tag}.q_absorb", grp, OpKind.MATMUL, count,
                           fm.matmul(N_dev * H / t, dn, rkv), formula="matmul"))
            ops.append(_op(f"attn{tag}.kv_cache_write", grp, OpKind.MEMORY, count,
                           Work(write=N_dev * (rkv + dr) * bkv), formula="memory"))
            hp, sp_ = fm.kv_passes(T / cp, H / t, rkv + dr, rkv, ba)
            ops.append(_attention_op(f"attn{tag}.core", grp, count, N_dev, H / t, 1, s_avg, kv_tokens, rkv + dr, rkv,
                                     kv_width=rkv + dr, hbm_passes=hp, sram_passes=sp_, **mat))
            ops.append(_op(f"attn{tag}.v_absorb", grp, OpKind.MATMUL, count,
                           fm.matmul(N_dev * H / t, rkv, dv), formula="matmul"))
        else:
            ops.append(_linear(f"attn{tag}.kv_b", grp, count, N_dev, rkv, H * (dn + dv) / t))
            if infer:
                ops.append(_op(f"attn{tag}.kv_cache_write", grp, OpKind.MEMORY, count,
                               Work(write=N_dev * (rkv + dr) * bkv), formula="memory"))
            hp, sp_ = fm.kv_passes(T / cp, 1, dn + dr, dv, ba)
            ops.append(_attention_op(f"attn{tag}.core", grp, count, N_dev, H / t, H / t, s_avg, kv_tokens, dn + dr,
                                     dv, b_kv_elem=ba, hbm_passes=hp, sram_passes=sp_, **mat))
        o_in = H * dv / t
    else:
        q_out = 2 if g.attn_gate else 1  # the output gate comes out of q_proj beside the queries
        ops.append(_linear(f"attn{tag}.qkv", grp, count, N_dev, D, (q_out * H + 2 * KV) * dh / t,
                           bias=g.attention_bias))
        if g.qk_norm:  # Qwen3: RMSNorm over d_h on every query and key head (weights d_h each; MiniMax-M2's
            # span the layer's heads: (H + K) d_h, this device's share of them)
            qk_w = (H / t + KV_dev) * dh if g.qk_norm_per_layer else 2 * dh
            ops.append(_op(f"attn{tag}.qk_norm", grp, OpKind.NORM, count,
                           Work(**{**dict(fm.norm(N_dev * (H / t + KV_dev), dh, "rmsnorm", params=False).items()),
                                   "params": qk_w}), formula="norm"))
        if not g.learned_pos:  # f_rot: the rotated share of each head (partial rotary)
            ops.append(_op(f"attn{tag}.rope", grp, OpKind.ELEMENTWISE, count,
                           fm.elementwise(N_dev * (H / t + KV_dev) * dh * frot, vector=3), formula="elementwise"))
        if infer:
            ops.append(_op(f"attn{tag}.kv_cache_write", grp, OpKind.MEMORY, count,
                           Work(write=N_dev * KV_dev * 2 * dh * bkv), formula="memory"))
        kv_src = bkv if infer else ba
        hp, sp_ = fm.kv_passes(T / cp, H / t / KV_dev, dh, dh, ba)
        core = _attention_op(f"attn{tag}.core", grp, count, N_dev, H / t, KV_dev, s_avg, kv_tokens, dh, dh,
                             b_kv_elem=kv_src, hbm_passes=hp, sram_passes=sp_, **mat)
        if g.sinks:  # gpt-oss: one learned sink logit per head
            core = dataclasses.replace(core, work=core.work + Work(params=H / t))
        ops.append(core)
        if g.attn_gate:  # o x sigmoid(gate)
            ops.append(_op(f"attn{tag}.out_gate", grp, OpKind.ELEMENTWISE, count,
                           fm.elementwise(N_dev * H * dh / t, scalar=1, vector=1, reads=2), formula="elementwise"))
        o_in = H * dh / t
    ops.append(_linear(f"attn{tag}.o_proj", grp, count, N_dev, o_in, D, bias=g.attention_bias))
    ops.append(_op(f"attn{tag}.tp_all_reduce", grp, OpKind.COLLECTIVE, count, Work(),
                   Comm(Collective.ALL_REDUCE, N_dev * D * ba, "tp"), formula="collective"))
    ops.append(_op(f"attn{tag}.residual", grp, OpKind.ELEMENTWISE, count,
                   fm.elementwise(N_dev * D, vector=1, reads=2), formula="elementwise"))
    return ops


def _mlp(tokens: sp.Expr, width: sp.Expr, g: GraphKey, name: str, grp: str, count: sp.Expr) -> list[Op]:
    """Gated (SwiGLU: gate+up, act*mul, down) or plain (up, act, down) MLP of `width` per device."""
    c = count
    mm = dict(bias=g.mlp_bias)
    if g.gated_mlp:
        up = fm.matmul(tokens, D, 2 * width, **mm)
        act = fm.elementwise(tokens * width, scalar=1, vector=1, reads=2)
    else:
        up = fm.matmul(tokens, D, width, **mm)
        act = fm.elementwise(tokens * width, scalar=1)
    down = fm.matmul(tokens, width, D, **mm)
    up_width = (2 if g.gated_mlp else 1) * width
    return [_op(f"{name}.up", grp, OpKind.MATMUL, c, up, formula="matmul", io=(tokens * D, tokens * up_width)),
            _op(f"{name}.act", grp, OpKind.ELEMENTWISE, c, act, formula="elementwise"),
            _op(f"{name}.down", grp, OpKind.MATMUL, c, down, formula="matmul", io=(tokens * width, tokens * D))]


def _dense_block(g: GraphKey) -> list[Op]:
    ops = [_op("mlp.norm", "mlp", OpKind.NORM, Ld, fm.norm(N_dev, D, g.norm), formula="norm")]
    ops += _mlp(N_dev, F / t, g, "mlp", "mlp", Ld)
    ops.append(_op("mlp.tp_all_reduce", "mlp", OpKind.COLLECTIVE, Ld, Work(), Comm(Collective.ALL_REDUCE,
                                                                                     N_dev * D * ba, "tp")))
    ops.append(_op("mlp.residual", "mlp", OpKind.ELEMENTWISE, Ld, fm.elementwise(N_dev * D, vector=1, reads=2)))
    return ops


def _grouped_experts(g: GraphKey) -> list[Op]:
    """A device's routed experts as serving and training engines run them: one grouped matmul per
    projection over all its local experts (one launch, one fixed overhead: vLLM's fused_moe,
    TensorRT-LLM's and SGLang's grouped GEMMs, NKI's MoE kernels), the activation fused into the
    first one's epilogue (gate and up outputs stay on chip; act(gate) x up is written).

        u_r  = 1 + (u - 1) 1_ep                 busiest expert-parallel rank's tokens / the mean
                                                (one rank holds every expert: no imbalance)
        N_e  = u_r N_r k / e                    token-expert pairs on that rank
        f    = 1 - (1 - k/E)^(u_r N_r)          fraction of experts receiving a token (their weights are read)
        m    = N_e / (f E / e)                  tokens per touched expert (its tile padding)
        work = f E / e x matmul(m, ...)         bytes per touched expert, FLOPs per routed token
        flop = work.flop / u_r                  useful (model) FLOPs: the mean rank's
    A kernel that computes other rows than the routed ones (model/moe_kernels.py: NxD's all-experts and blockwise
    rules on Neuron) scales the rows by rho_r and the weight loads by rho_w, and issues each projection n_b times
    a layer (one instance per block, each with its fixed cost); all three are 1 for grouped GEMMs. The useful
    FLOPs stay the routed tokens'.
    """
    u_r = 1 + (u - 1) * i_ep
    n_touched = fm.experts_touched(u_r * N_rep, E, k) / ep * rho_w
    m = u_r * N_rep * k / ep / n_touched * rho_r
    width = Fe * ep / n_rep
    mm = dict(bias=g.mlp_bias, b_w=bwe, dequant=fm.q_we)
    up = fm.matmul(m, D, (2 if g.gated_mlp else 1) * width, **mm)
    act = fm.elementwise(m * width, scalar=1, vector=1 if g.gated_mlp else 0, reads=0, writes=0)
    up = dataclasses.replace(up + act, write=m * width * ba)  # the fused epilogue writes act(gate) x up only
    down = fm.matmul(m, width, D, **mm)

    def grouped(w: Work) -> Work:  # one of the n_b instances a layer
        return dataclasses.replace(w.scaled(n_touched / n_b), flop=w.flop * n_touched / u_r / rho_r / n_b,
                                   params=w.params * E / ep / n_b)

    rows = n_touched * m / n_b  # token-expert pairs of this rank's experts, per instance
    up_width = (2 if g.gated_mlp else 1) * width
    return [_op("moe.expert.up", "moe", OpKind.MATMUL, Lm * n_b, grouped(up), formula="matmul",
                io=(rows * D, rows * up_width), weight_bytes=bwe),
            _op("moe.expert.down", "moe", OpKind.MATMUL, Lm * n_b, grouped(down), formula="matmul",
                io=(rows * width, rows * D), weight_bytes=bwe)]


def _moe_block(g: GraphKey) -> list[Op]:
    """Router, top-k, dispatch, the local experts (_grouped_experts), shared experts, combine.

    How the tokens reach the experts depends on the plan (t tensor, d_a attention-DP, e expert ranks; the
    replica's n = t d_a ranks hold E / e experts each, split e-ways by expert and n / e ways in width):
        d_a = 1           every rank already has the replica's tokens (attention TP): no dispatch; the
                          partial outputs are all-reduced over t
        d_a > 1, e = n    all-to-all over e of each token's k copies (1_a2a), the combine mirrors it
        d_a > 1, e < n    expert-TP spans attention-DP ranks: all-gather of the replica's N_r hidden states
                          over the d_a group (1_ag), each rank runs its experts' width slice on all of them,
                          reduce-scatter of the partial outputs back over d_a, then the all-reduce over t
                          (TensorRT-LLM's attention-DP all-gather / reduce-scatter path)
    """
    ops = [_op("moe.norm", "moe", OpKind.NORM, Lm, fm.norm(N_dev, D, g.norm), formula="norm")]
    ops.append(_op("moe.router", "moe", OpKind.MATMUL, Lm, fm.matmul(N_dev, D, E, bias=g.router_bias), formula="matmul"))
    ops.append(_op("moe.topk", "moe", OpKind.ELEMENTWISE, Lm, fm.elementwise(N_dev * E, vector=4, exp=1, writes=0)))
    ops.append(_op("moe.dispatch", "moe", OpKind.COLLECTIVE, Lm, Work(),
                   Comm(Collective.ALL_TO_ALL, i_a2a * N_dev * k * D * bdp, "ep")))
    ops.append(_op("moe.gather", "moe", OpKind.COLLECTIVE, Lm, Work(),
                   Comm(Collective.ALL_GATHER, i_ag * N_rep * D * bdp, "da")))
    ops += _grouped_experts(g)
    if g.shared_experts:
        ops += _mlp(N_dev, Fs / t, g, "moe.shared", "moe", Lm)
    if g.shared_expert_gate:  # sigmoid(x w) x the shared expert's output (Qwen3-Next / Qwen3.5)
        ops.append(_op("moe.shared_gate", "moe", OpKind.MATMUL, Lm, fm.matmul(N_dev, D, 1)
                       + fm.elementwise(N_dev, scalar=1, reads=0, writes=0)
                       + fm.elementwise(N_dev * D, vector=1, reads=2), formula="matmul"))
    ops.append(_op("moe.combine", "moe", OpKind.COLLECTIVE, Lm, Work(),
                   Comm(Collective.ALL_TO_ALL, i_a2a * N_dev * k * D * ba, "ep")))
    ops.append(_op("moe.reduce_scatter", "moe", OpKind.COLLECTIVE, Lm, Work(),
                   Comm(Collective.REDUCE_SCATTER, i_ag * N_rep * D * ba, "da")))
    ops.append(_op("moe.tp_all_reduce", "moe", OpKind.COLLECTIVE, Lm, Work(),
                   Comm(Collective.ALL_REDUCE, (1 - i_a2a) * N_dev * D * ba, "tp")))
    ops.append(_op("moe.residual", "moe", OpKind.ELEMENTWISE, Lm, fm.elementwise(N_dev * D, vector=1, reads=2)))
    return ops


def _embedding(g: GraphKey) -> list[Op]:
    params = V * D / t + (P * D if g.learned_pos else 0) + (TV * D if g.type_vocab else 0)
    w = Work(read=N_dev * D * bw, write=N_dev * D * ba, params=params)
    if g.learned_pos or g.type_vocab:
        w = w + fm.elementwise(N_dev * D, vector=2 if g.type_vocab else 1, reads=0, writes=0)
    ops = [_op("embed.lookup", "embedding", OpKind.EMBEDDING, 1, w, formula="embedding")]
    if g.encoder_only:  # BERT normalises the summed embeddings
        ops.append(_op("embed.norm", "embedding", OpKind.NORM, 1, fm.norm(N_dev, D, g.norm), formula="norm"))
    return ops


def _head(g: GraphKey, phase: Phase) -> list[Op]:
    ops = []
    if not g.encoder_only:
        ops.append(_op("head.final_norm", "head", OpKind.NORM, 1, fm.norm(N_dev, D, g.norm), formula="norm"))
    if g.encoder_only:
        # BERT pooler (dense D x D + tanh on the [CLS] token) and, in training only, the MLM head:
        # transform (dense + GELU + LayerNorm) and the decoder tied to the embeddings (+ bias V).
        # The pre-training head's parameters (D^2 + 3D + V) are not part of the published count.
        ops.append(_op("head.pooler", "head", OpKind.MATMUL, 1, fm.matmul(B / da, D, D, bias=True), formula="matmul"))
        if phase != Phase.TRAIN:
            return ops
        mlm_tokens = N_dev
        ops.append(_op("head.mlm_transform", "head", OpKind.MATMUL, 1, fm.matmul(mlm_tokens, D, D, bias=True),
                       formula="matmul"))
        ops.append(_op("head.mlm_norm", "head", OpKind.NORM, 1, fm.norm(mlm_tokens, D, g.norm), formula="norm"))
        dec = fm.matmul(mlm_tokens, D, V / t)
        ops.append(_op("head.lm_head", "head", OpKind.MATMUL, 1,
                       Work(**{**dict(dec.items()), "params": V / t}), formula="matmul"))  # tied: bias only
        return ops
    logits_tokens = N_dev if phase == Phase.TRAIN else B / da
    lm = fm.matmul(logits_tokens, D, V / t)
    if g.tied:
        lm = Work(**{**dict(lm.items()), "params": sp.Integer(0)})
    ops.append(_op("head.lm_head", "head", OpKind.MATMUL, 1, lm, formula="matmul"))
    if phase == Phase.TRAIN:
        ops.append(_op("head.cross_entropy", "head", OpKind.ELEMENTWISE, 1,
                       fm.elementwise(N_dev * V / t, vector=3, exp=1, writes=0)))
    else:
        ops.append(_op("head.sample", "head", OpKind.ELEMENTWISE, 1,
                       fm.elementwise(B / da * V / t, vector=4, exp=1, writes=0), formula="elementwise"))
    return ops


def _forward(g: GraphKey, phase: Phase) -> list[Op]:
    ops = _embedding(g)
    if g.full:
        ops += _attention_block(g, phase, Lfa, None, "")
    if g.sliding:
        ops += _attention_block(g, phase, Lsw, W, "_sw")
    if g.linear:
        ops += linear_attention_block(g, phase)
    if g.dense_mlp:
        ops += _dense_block(g)
    if g.moe:
        ops += _moe_block(g)
    ops += _head(g, phase)
    return ops




@lru_cache(maxsize=256)
def build_graph(key: GraphKey, phase: Phase, recompute: Recompute = Recompute.NONE) -> tuple[Op, ...]:
    """Symbolic operator graph of one device for `phase`; cached per structure (training: graph/training.py)."""
    fwd = _forward(key, phase)
    if phase == Phase.PREFILL:
        return tuple(fwd + _prefill_cp_comm(key))
    if phase != Phase.TRAIN:
        return tuple(fwd)
    return training_ops(key, fwd, recompute)


def _prefill_cp_comm(key: GraphKey) -> list[Op]:
    """Context-parallel prefill (a long prompt split over cp ranks, each computing its T / cp queries, load
    balanced): every rank needs the keys and values of the whole prompt (and of the prior context C0), so each
    attention layer all-gathers them over the cp group (ring attention exchanges the same bytes in cp - 1
    steps). Bytes per rank: 2 (B / d_a) (C0 + T) KV_dev d_h b_kv. Priced as a collective after the layer's
    compute (not overlapped: conservative); MLA layers exchange their compressed cache, counted here as full
    heads (an overestimate). Zero without context parallelism (i_cp = 0)."""
    attn_layers = (Lfa if key.full else 0) + (Lsw if key.sliding else 0)
    kv = 2 * (B / da) * fm.kv_length(T, C0) * KV_dev * dh * bkv
    return [Op("cp.kv_all_gather", "plan", OpKind.COLLECTIVE, Pass.FORWARD, attn_layers * i_cp, Work(),
               Comm(Collective.ALL_GATHER, kv, "cp"), formula="collective")]




def graph_for(arch: ModelArch, phase: Phase, recompute: Recompute = Recompute.NONE) -> tuple[Op, ...]:
    return build_graph(GraphKey.of(arch), Phase(phase), Recompute(recompute))


def parameter_expression(ops: tuple[Op, ...], experts: bool | None = None, quantized: bool = False,
                         lora: bool = False) -> sp.Expr:
    """Parameters held on one device: sum over forward ops of count x params (per micro-batch).
    experts=True: routed experts only; False: everything else; None: all. quantized: only the linear layers a
    low-precision training recipe quantizes (quantized_linear). lora: the LoRA adapters alone (otherwise they are
    left out: the model's own weights)."""
    def keep(o: Op) -> bool:
        return (experts is None or (o.name.startswith("moe.expert")) == experts) \
            and (not quantized or quantized_linear(o)) and is_lora_adapter(o) == lora

    return sp.sympify(sum(o.count * o.work.params for o in ops if o.pass_ == Pass.FORWARD and keep(o))).subs(nmb, 1)
