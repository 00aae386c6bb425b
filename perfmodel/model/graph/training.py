"""The training step's operators, built from one stage's forward graph (graph.build_graph calls training_ops).

Per optimizer step of m micro-batches (counts x m):

    forward      the forward graph's operators; with a low-precision recipe (8-bit or narrower GEMMs) each
                 linear layer's input is quantized first (low_precision_casts)
    backward     per forward op (backward()): matmuls 2x (dgrad + wgrad), attention its own backward
                 (FA2-style), elementwise 2x; a linear layer's output gradient is quantized before its GEMMs
    recompute    flash attention's P = softmax(Q K^T) in the backward; then per policy (RECOMPUTED): full:
                 every layer op again, selective: the attention cores, alternate layers: half of every layer
                 op, selective op: half the matmuls and every element-wise op
    optimizer    one Adam step over the device's parameter shard; with a low-precision recipe, the weights
                 quantized once per step, not per micro-batch (low_precision_weight_casts)
    plan comm    ZeRO data-parallel collectives, pipeline send/recv, context-parallel K,V exchange
    precision    the attention core and the LM head run at BF16 whatever the GEMMs' recipe (attention_in_bf16,
                 head_in_bf16)
    fusion       a layer's element-wise and norm ops move e_x times the fused kernels' bytes (unfused)
    MoE          tokens permuted into expert order and back around the experts (token_permutation)
    LoRA         with r_lo > 0 the base weights are frozen (i_fr = 1): a linear layer's backward is its dgrad
                 alone, and rank-r adapters on the attention block's linear layers are the trained weights
                 (lora_adapters): the optimizer and the gradient collectives run over them only

Does not: bind numbers or price time; the forward operators (graph.py) or the pricing (training/step.py).
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from perfmodel.comm.algorithms import Collective
from perfmodel.core.scenario import Recompute
from perfmodel.core.symbols import B, D, T, ba, bw, dh, k, t
from perfmodel.model import formulas as fm
from perfmodel.model.formulas import Work
from perfmodel.model.ops import (Comm, GraphKey, KV_dev, Lfa, Lm, Lsw, N_dev, Op, OpKind, Pass, bg, bo_r, bo_w, bwt, da,
                                 f_rc, i_cp, i_fr, i_pp, i_sg, i_sp, i_z0, i_z1, i_z2, i_z3, nmb, r_lo, vpp, zs, zsd)


def low_precision_casts(op: Op) -> list[Op]:
    """The linear layer `op` and, before it, the quantization of its activations under a low-precision
    training recipe: its input (forward, and again in a recompute) and its output gradient (backward) are
    read in the activation type and written as c_8 quantized copies (fm.low_precision_cast). Transformer
    Engine's FP8 recipes quantize both tensors of every GEMM, keep a row-wise and a column-wise (transposed)
    copy: Hopper's FP8 tensor cores take K-major operands only and block scales run along K, so the wgrad
    GEMM needs its own. Runs only when the GEMMs are 8-bit or narrower (count x f_8; f_8 = 0 at BF16). With frozen
    weights (LoRA, i_fr = 1) there is no wgrad GEMM: one row-wise copy of each tensor (fprop, dgrad) is written."""
    if op.io is None:
        return [op]
    x_in, x_out = op.io
    copies = fm.c8 - i_fr * (fm.c8 - 1)  # the wgrad's transposed copies are not made for frozen weights
    cast = Op(name=f"{op.name}.cast", group=op.group, kind=OpKind.ELEMENTWISE, pass_=Pass.FORWARD,
              count=op.count * fm.f8, work=fm.low_precision_cast(x_in, copies=copies), formula="low_precision_cast",
              backward=fm.low_precision_cast(x_out, copies=copies))
    return [cast, op]


def low_precision_weight_casts(fwd: list[Op]) -> list[Op]:
    """The weights of each linear layer a low-precision recipe quantizes (those low_precision_casts quantizes the
    input of; the LM head stays BF16, head_in_bf16), read at their storage type: once per optimizer step, the
    recipe keeping the copies for every micro-batch (Transformer Engine's is_first_microbatch), so a run of one
    micro-batch pays it whole and one of many spreads it; under ZeRO-3 / FSDP the gathered weights are freed after
    each use, so they are gathered and cast again for every micro-batch's forward and backward (2 m times). The
    elements are the operator's parameters (a bias, 1/K of them, is counted with them). Priced with the optimizer
    step (Pass.OPTIMIZER): once per step on every stage, outside the pipeline's per-micro-batch work and bubble.
    Frozen weights (LoRA, i_fr = 1) never change: cast once for the run, none per step (under ZeRO-3 the gathered
    copies are still cast per use)."""
    per_step = (1 - i_fr) * (1 - i_z3) + 2 * nmb * i_z3
    return [Op(name=f"{o.name}.weight_cast", group=o.group, kind=OpKind.ELEMENTWISE, pass_=Pass.OPTIMIZER,
               count=o.count * fm.f8 * per_step, work=fm.low_precision_cast(o.work.params, o.weight_bytes or bw),
               formula="low_precision_cast")
            for o in fwd if quantized_linear(o)]


def quantized_linear(o: Op) -> bool:
    """A linear layer a low-precision training recipe runs in its GEMM type (quantizing input, output gradient and
    weights); the embedding and the LM head stay in the activation type."""
    return o.io is not None and o.group not in ("embedding", "head")


COUNTED_AS_RUN = ("low_precision_cast", "token_permutation")  # kernels priced as the stack runs them already


def unfused(op: Op) -> Op:
    """A layer's element-wise or norm operator with its HBM traffic x e_x: the graph prices each as one fused
    kernel (Megatron-Core / Transformer Engine, torch.compile, NKI); a framework that runs every primitive as
    its own kernel (eager PyTorch) reads and writes the tensor once per primitive (calibration
    elementwise_traffic_factor, 1 when fused)."""
    if op.kind not in (OpKind.ELEMENTWISE, OpKind.NORM) or op.group in ("embedding", "head") \
            or op.formula in COUNTED_AS_RUN:
        return op
    return dataclasses.replace(op, work=dataclasses.replace(op.work, read=op.work.read * fm.e_x,
                                                            write=op.work.write * fm.e_x))


def token_permutation(key: GraphKey) -> list[Op]:
    """Training's MoE token permutation (Megatron-Core's token dispatchers): before the experts, each token is
    copied once per chosen expert into expert order (read N D, write N k D); after them the k outputs are put
    back and summed with the router's weights (read N k D, write N D). Separate kernels (fused into one each by
    moe_permute_fusion), moving the tokens through HBM; their backward moves the same bytes in reverse. Serving
    engines gather tokens inside the grouped GEMM (vLLM's fused_moe): no pass there."""
    if not key.moe:
        return []
    move = fm.elementwise(N_dev * D, reads=1 + k, writes=1 + k)  # permute + unpermute: (1 + k) N D each way
    return [Op("moe.permute", "moe", OpKind.ELEMENTWISE, Pass.FORWARD, Lm, move, formula="token_permutation",
               backward=move)]


def head_in_bf16(op: Op) -> Op:
    """Low-precision training recipes leave the LM head in BF16: Megatron-Core's output layer is a plain
    ColumnParallelLinear, not a Transformer Engine module; torchao's float8 conversion skips the output
    projection (torchtitan's filter). Its tensor work is issued at the BF16 rate (unchanged at 16 bits). LoRA's
    adapters are plain BF16 linears too (PEFT modules beside the Transformer Engine layers)."""
    return attention_in_bf16(op) if op.name == "head.lm_head" or is_lora_adapter(op) else op


def backward(op: Op) -> Op:
    """Backward of one forward op: 2x the matmul work (dgrad + wgrad), attention as the op's own
    backward work (fm.attention_backward: FA2-style dQ, dK, dV at 2x forward FLOPs, plus the
    recomputed Q K^T counted as recompute; the unfused score traffic when materialised), 2x
    elementwise work, the same collectives on gradients."""
    w = op.work
    # a weight gradient (wgrad) only where the weights train: under LoRA (i_fr = 1) every base weight is frozen, the
    # LM head and the router included, and its backward is the dgrad alone; adapters and weightless matmuls train
    g = 2 - i_fr if op.work.params != 0 and not is_lora_adapter(op) else 2
    if op.backward is not None:
        bw_work = op.backward
    elif op.kind == OpKind.MATMUL:
        bw_work = Work(flop=g * w.flop, tensor_flop=g * w.tensor_flop, vector=g * w.vector,
                       read=g * w.read + w.write, write=w.read)
    elif op.kind == OpKind.ATTENTION:
        bw_work = Work(flop=2 * w.flop, tensor_flop=2 * w.tensor_flop, tensor_b16_flop=2 * w.tensor_b16_flop,
                       vector=3 * w.exp + w.vector, read=2 * w.read + w.write, write=w.read)
    else:
        bw_work = w.scaled(2).without_params()
    return Op(name=op.name, group=op.group, kind=op.kind, pass_=Pass.BACKWARD, count=op.count, work=bw_work,
              comm=op.comm, formula=op.formula)


def attention_in_bf16(op: Op) -> Op:
    """Training runs the attention core in BF16 whatever the GEMMs' recipe: Transformer Engine's FP8 recipes
    quantize the linear layers only (FP8 attention is a separate opt-in), torchao's float8 training converts
    nn.Linear modules only. Its tensor work (forward and backward) is issued at the BF16 rate; with a 16-bit
    compute type the two rates are the same and nothing changes."""
    def bf16(w: Work | None) -> Work | None:
        if w is None:
            return None
        return dataclasses.replace(w, tensor_flop=sp.Integer(0), tensor_b16_flop=w.tensor_b16_flop + w.tensor_flop)

    return dataclasses.replace(op, work=bf16(op.work), backward=bf16(op.backward))


def _recompute(op: Op) -> Op:
    return Op(name=op.name, group=op.group, kind=op.kind, pass_=Pass.RECOMPUTE, count=op.count,
              work=op.work.without_params(), comm=op.comm, formula=op.formula)


def _attention_score_recompute(op: Op) -> Op:
    """FA backward recomputes P = softmax(Q K^T): half the forward attention FLOPs, all the exp.
    Materialised attention (i_mat = 1) keeps P in HBM instead: nothing recomputed."""
    w = op.work
    flash = 1 - fm.i_mat
    return Op(name=op.name + "_scores", group=op.group, kind=op.kind, pass_=Pass.RECOMPUTE, count=op.count,
              work=Work(flop=w.flop / 2, tensor_flop=w.tensor_flop / 2, exp=w.exp, vector=w.vector,
                        read=w.read / 2).scaled(flash), formula=op.formula)


def _training_plan_comm(key: GraphKey, dense: tuple[sp.Expr, sp.Expr], expert: tuple[sp.Expr, sp.Expr]) -> list[Op]:
    """Collectives of the parallelism plan in a training step (counts per optimizer step).

    data parallel (G = P b_g gradient bytes of the trained parameters, W = P b_wt weight bytes per device: under
    ZeRO 1 / 2 the trained ones the optimizer updated, under ZeRO 3 all, gathered for every use), for each set of
    weights over the ranks that hold a copy of it: dense weights (P_dense) over dp d_a c ranks (group 'dp': attention-DP
    ranks replicate them, as Megatron-Core's expert parallelism carves EP out of DP, and context-parallel ranks
    compute the same weights' gradients on other tokens), routed experts (P_exp) over their dp c copies
    (group 'edp', 'dp.expert_*', MoE graphs):
        ZeRO 0: all-reduce(G) once;  ZeRO 1: reduce-scatter(G) + all-gather(W) once;
        ZeRO 2: reduce-scatter(G) per micro-batch + all-gather(W) once;
        ZeRO 3 / FSDP: reduce-scatter(G) + 2 all-gather(W) (forward, backward) per micro-batch
    pipeline: send/recv of one micro-batch's activations N D b_a, forward and backward, per micro-batch and
        virtual stage (2 m v); each of the stage's t TP ranks sends N D b_a / t with sequence parallelism (its
        shard) or with Megatron-LM's scatter/gather (1_sg: the receiving ranks all-gather the t pieces over the
        TP group, 'pp.gather'), else all of it
    context parallel: all-gather of the sequence's K,V per attention layer (forward and
        recompute in the backward) and reduce-scatter of dK,dV (backward)
    """
    def comm(name, coll, nbytes, group, count, pass_=Pass.OPTIMIZER):
        return Op(name, "plan", OpKind.COLLECTIVE, pass_, count, Work(), Comm(coll, nbytes, group),
                  formula="collective")

    attn_layers = (Lfa if key.full else 0) + (Lsw if key.sliding else 0)
    kv = 2 * (B / da) * T * KV_dev * dh * ba
    def data_parallel(prefix, n, group):  # n = (trained parameters: gradients, all parameters: weights)
        return [comm(f"{prefix}grad_all_reduce", Collective.ALL_REDUCE, n[0] * bg, group, i_z0),
                comm(f"{prefix}grad_reduce_scatter", Collective.REDUCE_SCATTER, n[0] * bg, group,
                     i_z1 + (i_z2 + i_z3) * nmb),
                comm(f"{prefix}weight_all_gather", Collective.ALL_GATHER, (i_z3 * n[1] + (1 - i_z3) * n[0]) * bwt,
                     group, i_z1 + i_z2 + 2 * nmb * i_z3)]

    return [
        *data_parallel("dp.", dense, "dp"),
        *(data_parallel("dp.expert_", expert, "edp") if key.moe else []),
        comm("pp.send_recv", Collective.SEND_RECV, N_dev * D * ba * ((1 - i_sp) * (1 - i_sg + i_sg / t) + i_sp / t),
             "pp", 2 * nmb * vpp * i_pp, Pass.FORWARD),
        comm("pp.gather", Collective.ALL_GATHER, N_dev * D * ba, "tp", 2 * nmb * vpp * i_pp * i_sg * (1 - i_sp),
             Pass.FORWARD),
        comm("cp.kv_all_gather", Collective.ALL_GATHER, kv, "cp", 2 * attn_layers * nmb * i_cp, Pass.FORWARD),
        comm("cp.kv_grad_reduce_scatter", Collective.REDUCE_SCATTER, kv, "cp", attn_layers * nmb * i_cp,
             Pass.BACKWARD),
    ]


# Share of each layer operator's forward run again in the backward, per recompute policy (Recompute.NONE: none)
RECOMPUTED = {
    # every layer op of the share f_rc of a stage's layers (Megatron's full recompute, all of them unless
    # recompute_num_layers says how many: Scenario.recompute_layers; torchtitan 'full')
    Recompute.FULL: lambda o: f_rc,
    Recompute.SELECTIVE: lambda o: 1 if o.kind == OpKind.ATTENTION else 0,  # the attention core (Korthikanti)
    Recompute.ALTERNATE_LAYERS: lambda o: sp.Rational(1, 2),  # every other layer whole (torchtitan 'layer', 2)
    # torchtitan 'op': every other matmul and the element-wise ops; attention and collectives' outputs are kept
    Recompute.SELECTIVE_OP: lambda o: {OpKind.MATMUL: sp.Rational(1, 2), OpKind.ELEMENTWISE: 1,
                                       OpKind.NORM: 1}.get(o.kind, 0),
}


def lora_adapters(fwd: list[Op]) -> list[Op]:
    """LoRA fine-tuning's trained weights: beside each linear layer of the attention block (C = A W, M x K x N;
    NeMo's and MLPerf's targets, the QKV and output projections), a rank-r adapter A W_a W_b in the activation
    type, 2 M r (K + N) FLOPs forward and r (K + N) parameters; backward by the generic rule (dgrad + wgrad).
    Count x i_fr: nothing without LoRA."""
    return [Op(name=f"{o.name}.lora", group=o.group, kind=OpKind.MATMUL, pass_=Pass.FORWARD, count=o.count * i_fr,
               work=fm.matmul(o.shape[0], o.shape[1], r_lo, b_w=fm.ba) + fm.matmul(o.shape[0], r_lo, o.shape[2],
                                                                                 b_w=fm.ba), formula="matmul")
            for o in fwd if o.shape is not None and o.group.startswith("attention")]


def is_lora_adapter(o: Op) -> bool:
    return o.name.endswith(".lora")


def training_ops(key: GraphKey, fwd: list[Op], recompute: Recompute) -> tuple[Op, ...]:
    """Every operator of one training step of a stage whose forward graph is `fwd` (module doc)."""
    step = [dataclasses.replace(unfused(x), count=x.count * nmb)
            for o in fwd + token_permutation(key) + lora_adapters(fwd) for x in low_precision_casts(o)]
    layer_ops = [o for o in step if o.group not in ("embedding", "head")]
    ops = list(step)
    ops += [backward(o) for o in reversed(step)]
    ops += [_attention_score_recompute(o) for o in step if o.kind == OpKind.ATTENTION]
    share = RECOMPUTED.get(Recompute(recompute), lambda o: 0)
    ops += [dataclasses.replace(_recompute(o), count=o.count * share(o)) for o in layer_ops if share(o) != 0]
    ops += low_precision_weight_casts(fwd)
    def params(keep):
        return sum(((o.count / nmb) * o.work.params for o in step if keep(o)), sp.Integer(0))

    # routed experts (stored at their own type: weight_bytes) are sharded over dp c, the dense rest over dp d_a c;
    # under LoRA (i_fr = 1) only the adapters train: they alone have gradients and optimizer state
    n_adapter = params(is_lora_adapter)
    n_expert = params(lambda o: o.weight_bytes is not None)
    n_dense = params(lambda o: not is_lora_adapter(o)) - n_expert
    train_dense, train_expert = (1 - i_fr) * n_dense + n_adapter, (1 - i_fr) * n_expert
    ops.append(Op("optimizer.step", "optimizer", OpKind.OPTIMIZER, Pass.OPTIMIZER, sp.Integer(1),
                  fm.adam_step(train_dense / zsd + train_expert / zs, bo_r, bo_w), formula="adam_step"))
    ops += _training_plan_comm(key, (train_dense, n_dense + n_adapter), (train_expert, n_expert))
    return tuple(attention_in_bf16(o) if o.kind == OpKind.ATTENTION else head_in_bf16(o) for o in ops)
