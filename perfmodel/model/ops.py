"""The operator graph's vocabulary: structural symbols (layer counts, plan indicators), the
per-device token counts, and the records a graph is made of (Op, Comm, Pass, OpKind, GraphKey).

Per-device token counts (symbols in core/symbols.py, plus the layer counts below):
    N   = B T / (d_a c)       tokens this device runs through attention and dense layers
    N_r = B T / c             tokens of the replica routed through the MoE layers

Does not: build a graph (graph.py), bind numbers or price anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

import sympy as sp

from perfmodel.comm.algorithms import Collective
from perfmodel.core.object_cache import ObjectCache
from perfmodel.core.symbols import KV, B, T, cp, t
from perfmodel.core.workload import AttentionKind, ModelArch
from perfmodel.model.formulas import Work

# layer-count and other structural symbols bound per model / scenario
Lfa = sp.Symbol("Lfa", nonnegative=True)  # full-attention layers on this stage
Lsw = sp.Symbol("Lsw", nonnegative=True)  # sliding-window layers on this stage
Lla = sp.Symbol("Lla", nonnegative=True)  # Gated DeltaNet (linear-attention) layers on this stage
Ld = sp.Symbol("Ld", nonnegative=True)  # dense-MLP layers on this stage
Lm = sp.Symbol("Lm", nonnegative=True)  # MoE layers on this stage
da = sp.Symbol("da", positive=True)  # attention data parallel inside the replica
nmb = sp.Symbol("nmb", positive=True)  # micro-batches per step
P = sp.Symbol("P", nonnegative=True)  # learned position embeddings (max_position_embeddings)
TV = sp.Symbol("TV", nonnegative=True)  # token-type vocabulary (BERT)
i_a2a = sp.Symbol("i_a2a", nonnegative=True)  # 1 when MoE tokens move by all-to-all (d_a > 1, e = t d_a), else 0
# 1 when attention-DP ranks share experts split over expert-TP (d_a > 1, e < t d_a): every rank gathers the replica's
# tokens over the d_a group and reduce-scatters its partial outputs back, else 0
i_ag = sp.Symbol("i_ag", nonnegative=True)
bdp = sp.Symbol("bdp", positive=True)  # bytes per element of a dispatched MoE activation (the engine's dispatch type)
i_ep = sp.Symbol("i_ep", nonnegative=True)  # 1 when experts are split over expert-parallel ranks (e > 1)
# how the device's MoE kernel runs its experts (model/moe_kernels.py; all 1 for grouped GEMMs over the routed tokens):
# rows computed / routed token-expert pairs, expert weight loads / experts touched, launches per projection
rho_r = sp.Symbol("rho_r", positive=True)
rho_w = sp.Symbol("rho_w", positive=True)
n_b = sp.Symbol("n_b", positive=True)
dp_ = sp.Symbol("dp", positive=True)  # data-parallel replicas (gradient traffic)
# ZeRO shard counts of the optimizer state over the ranks holding a copy (1 without ZeRO): routed experts' over
# dp x cp (zs), the dense weights' over dp x d_a x cp (zsd: attention-DP and context-parallel ranks hold them too)
zs = sp.Symbol("zs", positive=True)
zsd = sp.Symbol("zsd", positive=True)
r_lo = sp.Symbol("r_lo", nonnegative=True)  # LoRA adapters' rank (0: no adapters)
i_fr = sp.Symbol("i_fr", nonnegative=True)  # 1 when the base weights are frozen (LoRA fine-tuning), else 0
# share of a stage's layers that full recompute re-runs (Megatron-Core's recompute_num_layers over the stage's; 1: all)
f_rc = sp.Symbol("f_rc", nonnegative=True)
bo_r = sp.Symbol("bo_r", nonnegative=True)  # optimizer-state bytes read per parameter
bo_w = sp.Symbol("bo_w", nonnegative=True)  # optimizer-state bytes written per parameter
bg = sp.Symbol("bg", positive=True)  # bytes per gradient element
bwt = sp.Symbol("bwt", positive=True)  # bytes per weight element in training (the optimizer's weight copy)
# 0/1 indicators of the plan (bound from the scenario), so one graph serves every ZeRO stage and degree
i_z0, i_z1, i_z2, i_z3 = (sp.Symbol(f"i_z{z}", nonnegative=True) for z in range(4))  # ZeRO stage == z
i_pp = sp.Symbol("i_pp", nonnegative=True)  # 1 when pipeline stages > 1
i_cp = sp.Symbol("i_cp", nonnegative=True)  # 1 when context parallel > 1
vpp = sp.Symbol("vpp", positive=True)  # virtual pipeline stages per device (interleaved schedule)
i_sp = sp.Symbol("i_sp", nonnegative=True)  # 1 with Megatron sequence parallelism (activations split t ways)
# 1 when a pipeline send is split over the stage's t TP ranks and all-gathered over NVLink at the receiver
# (Megatron-LM's scatter/gather, Narayanan et al. 2021 sec. 4.1; calibration pp_scatter_gather)
i_sg = sp.Symbol("i_sg", nonnegative=True)

N_dev = B * T / (da * cp)  # tokens per device in attention / dense layers
N_rep = B * T / cp  # tokens of the replica seen by the MoE layers
n_rep = t * da  # devices per replica stage (TP x attention-DP)
KV_dev = sp.Max(KV / t, 1)  # KV heads held per device (replicated when t > KV)


class Pass(str, Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"
    OPTIMIZER = "optimizer"


class OpKind(str, Enum):
    MATMUL = "matmul"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"
    NORM = "norm"
    EMBEDDING = "embedding"
    MEMORY = "memory"  # pure data movement (KV-cache write)
    OPTIMIZER = "optimizer"
    COLLECTIVE = "collective"


@dataclass(frozen=True)
class Comm:
    """A collective placed in the graph: per-device buffer bytes and the parallel group it spans."""

    collective: Collective
    nbytes: sp.Expr
    group: str  # "tp" | "ep" | "dp" | "cp" | "pp" | "replica"


@dataclass(frozen=True)
class Op:
    name: str
    group: str  # block: embedding | attention | mlp | moe | head | optimizer
    kind: OpKind
    pass_: Pass
    count: sp.Expr
    work: Work
    comm: Comm | None = None
    formula: str = ""  # formula family (formulas.py function) for display
    backward: Work | None = None  # the backward's work when the generic rule (_backward) does not apply
    # a linear layer's activation elements in (its input, M K) and out (M N) per instance: what a low-precision
    # training recipe quantizes (graph.training.low_precision_casts); None for every other operator
    io: tuple[sp.Expr, sp.Expr] | None = None
    # bytes per weight element of a linear layer whose weights are not stored at b_w (routed experts: b_we); what
    # graph.training.low_precision_weight_casts reads them at
    weight_bytes: sp.Expr | None = None
    # a linear layer's (M, K, N) per instance: where LoRA fine-tuning attaches its adapters (graph/training.py)
    shape: tuple[sp.Expr, sp.Expr, sp.Expr] | None = None


@dataclass(frozen=True)
class CommInfo:
    """Where a collective runs (Comm without its byte formula)."""

    collective: Collective
    group: str


@dataclass(frozen=True)
class OpInfo:
    """What an evaluation needs of an operator besides its compiled numbers: names, pass and where its
    collective runs (a compiled graph read from disk carries these, not the sympy Op)."""

    name: str
    group: str
    kind: OpKind
    pass_: Pass
    comm: CommInfo | None = None
    formula: str = ""

    @classmethod
    def of(cls, op: Op) -> "OpInfo":
        comm = CommInfo(op.comm.collective, op.comm.group) if op.comm else None
        return cls(op.name, op.group, op.kind, op.pass_, comm, op.formula)

    def to_list(self) -> list:
        comm = [self.comm.collective.value, self.comm.group] if self.comm else None
        return [self.name, self.group, self.kind.value, self.pass_.value, comm, self.formula]

    @classmethod
    def from_list(cls, x: list) -> "OpInfo":
        name, group, kind, pass_, comm, formula = x
        return cls(name, group, OpKind(kind), Pass(pass_), CommInfo(Collective(comm[0]), comm[1]) if comm else None,
                   formula)


@dataclass(frozen=True)
class GraphKey:
    """Structure of a model; models with equal keys share one symbolic graph."""

    attention: AttentionKind
    sliding: bool
    full: bool
    moe: bool
    dense_mlp: bool
    shared_experts: bool
    gated_mlp: bool
    norm: str
    learned_pos: bool
    encoder_only: bool
    attention_bias: bool
    mlp_bias: bool
    tied: bool
    router_bias: bool
    mla_q_lora: bool
    type_vocab: bool
    sinks: bool
    qk_norm: bool
    linear: bool = False  # Gated DeltaNet layers (graph.attention_variants.linear_attention_block)
    sparse: bool = False  # DeepSeek Sparse Attention on MLA (graph.attention_variants.sparse_mla_core)
    attn_gate: bool = False  # sigmoid output gate from q_proj (Qwen3-Next / Qwen3.5)
    qk_norm_per_layer: bool = False  # q/k norm weights span the layer's heads (MiniMax-M2)
    shared_expert_gate: bool = False  # sigmoid gate on the shared expert (Qwen3-Next / Qwen3.5)

    def __hash__(self) -> int:  # every compiled-graph look-up hashes the key: its fields' hash, computed once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(dataclasses.astuple(self))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:  # a string's hash differs between processes: a pickled key recomputes its own
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @classmethod
    def of(cls, a: ModelArch) -> "GraphKey":
        """The key of a model (kept per model object: a point's look-up of its compiled graph reads it)."""
        return _KEYS.get((a,), (), lambda: cls._of(a))

    @classmethod
    def _of(cls, a: ModelArch) -> "GraphKey":
        n_sw, n_la = a.num_sliding_layers, a.num_linear_layers
        return cls(
            attention=a.attention, sliding=n_sw > 0, full=n_sw + n_la < a.num_hidden_layers, moe=a.is_moe,
            dense_mlp=a.num_dense_layers > 0, shared_experts=a.num_shared_experts > 0, gated_mlp=a.gated_mlp,
            norm=a.norm, learned_pos=a.position_embedding == "learned", encoder_only=a.encoder_only,
            attention_bias=a.attention_bias, mlp_bias=a.mlp_bias, tied=a.tie_word_embeddings,
            router_bias=a.router_bias, mla_q_lora=a.q_lora_rank > 0, type_vocab=a.type_vocab_size > 0,
            sinks=a.attention_sinks, qk_norm=a.qk_norm, linear=n_la > 0, sparse=a.sparse_attention,
            attn_gate=a.attn_output_gate, qk_norm_per_layer=a.qk_norm_per_layer,
            shared_expert_gate=a.shared_expert_gate)


_KEYS = ObjectCache(256)  # GraphKey per model object (a frozen record: its key cannot change)


def forward_op(name, group, kind, count, work, comm=None, formula="", backward=None, io=None,
               weight_bytes=None, shape=None) -> Op:
    """An operator of the forward pass (graph.py and graph/attention_variants.py build with it)."""
    return Op(name=name, group=group, kind=kind, pass_=Pass.FORWARD, count=count, work=work, comm=comm,
              formula=formula or kind.value, backward=backward, io=io, weight_bytes=weight_bytes, shape=shape)
