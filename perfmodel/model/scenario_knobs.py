"""Knobs: a scenario's fields as scalars or numpy arrays (one entry per configuration of a sweep), the record
every binding and cost function reads; the groups of ranks that hold a copy of the weights derive from them.

Does not: bind symbols (bindings.py) or evaluate anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.core.dtypes import DType
from perfmodel.core.elementwise import ceil, maximum, minimum, where  # noqa: F401  (used below and re-exported)
from perfmodel.core.scenario import Optimizer, Phase, Scenario


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


# One configuration's knobs are Python numbers: the helpers below (num, flag, where, maximum, minimum, ceil) keep
# them Python floats and bools, whose arithmetic is ~20x cheaper than numpy's on 0-d arrays (the API called in a
# loop), and give a sweep's arrays numpy's. Both paths give the same IEEE values, so a point and its configuration
# in a sweep agree to the bit.
def num(x):
    """x as float: a Python float for one number, else a float array."""
    return float(x) if isinstance(x, (int, float)) else np.asarray(x, dtype=float)


def flag(x):
    """A switch knob: one Python bool, or a sweep's boolean array."""
    return x if isinstance(x, bool) else np.asarray(x, dtype=bool)


COUNTS = ("batch", "tp", "da", "ep", "cp", "pp", "dp", "microbatches")


def one_plan(kn) -> bool:
    """Every count knob one Python number >= 1 (a validated scenario's): the cost functions may then divide in
    Python floats (num), which raise on a zero where numpy's arrays carry inf to the feasibility rules."""
    for k in COUNTS:
        x = getattr(kn, k)
        if not (isinstance(x, (int, float)) and x >= 1):
            return False
    return True


@dataclass(frozen=True)
class Knobs:
    """Scenario fields as arrays (or scalars) for one evaluation; see scenario.Scenario."""

    phase: Phase
    batch: object = 1
    seq_len: object = 2048
    context: object = 0
    tp: object = 1
    da: object = 1
    ep: object = 1
    cp: object = 1
    pp: object = 1
    dp: object = 1
    microbatches: object = 1
    zero: object = 0
    weights: object = DType.BF16
    compute: object = DType.BF16
    activations: object = DType.BF16
    kv_cache: object = DType.BF16
    expert_weights: object = None  # None: same as weights
    pp_virtual: object = 1  # virtual pipeline stages per device (interleaved schedule)
    flash_attention: object = True  # False: attention scores materialised in HBM
    sequence_parallel: object = False  # Megatron sequence parallelism (pipeline activations split t ways)
    moe_imbalance: object = None
    optimizer: Optimizer = Optimizer.ADAM_MIXED
    # Software ranks: 0 = heads split over `tp` devices as the model defines them; n > 0 = the
    # attention heads are sharded whole over n ranks (sharded_heads: padded / replicated to n);
    # None = the system's (on_system: tp x ranks_per_chip on Neuron, 0 elsewhere)
    head_shards: object = None
    # ranks of a TP group on one chip; None = the system's (Neuron runtimes: one per logical NeuronCore)
    ranks_per_chip: object = None
    # True: the software pads query heads up to a multiple of the ranks (Transformers NeuronX), so the TP
    # degree need not divide the heads; False: it must (feasibility's tp_heads / tp_kv_heads rules)
    pad_heads: object = False
    offload_layers: object = 0  # training: layers per stage whose activations go to host memory (Scenario)
    lora_rank: object = 0  # training: LoRA adapters' rank, the base weights frozen (0: every weight trains)
    recompute_layers: object = 0  # full recompute: layers per stage it re-runs (0: all of them)
    # the MoE kernel's block of tokens: 0 = grouped GEMMs over the routed tokens; B > 0 = NxD's expert MLP rules
    # (all experts, selective loading or padded blocks of B: model/moe_kernels.py), a Neuron stack's
    moe_kernel_block: object = 0

    def __post_init__(self):
        # a count below 1 is no plan (the feasibility rules name it): kept as a numpy value, whose divisions carry
        # it to inf / NaN as a sweep's do, where a Python float (num, the one-configuration path) would raise
        for k in COUNTS:
            x = getattr(self, k)
            if isinstance(x, (int, float)) and not x >= 1:
                object.__setattr__(self, k, np.asarray(x, dtype=float))

    @property
    def dense_dp(self) -> np.ndarray:
        """Ranks that hold a copy of the dense (non-expert) weights: dp x da x cp (attention-DP and context-parallel
        ranks hold the same weights: the graph's 'dp' collectives, Megatron-Core's data-parallel group with CP)."""
        return num(self.dp) * num(self.da) * num(self.cp)

    @property
    def dense_dp_stride(self) -> np.ndarray:
        """Their spacing in chips as one evenly spaced group: the da and cp ranks sit next to each other (tp apart),
        the dp replicas tp da cp pp apart, so with dp > 1 the group spans tp pp x its size: placed tp pp apart (its
        true span; exact when pp = 1 or dp = 1, otherwise its inner ranks are counted less local than they are)."""
        return num(self.tp) * where(num(self.dp) > 1, num(self.pp), 1.0)

    def recompute_share(self, layers: int) -> np.ndarray:
        """The share of a stage's layers full recompute re-runs: recompute_layers in each of its v model chunks of
        its ceil(L / p) layers (Megatron-Core's block method counts per chunk; a model of `layers` layers), 1 when it
        re-runs every layer (recompute_layers 0)."""
        n = num(self.recompute_layers) * num(self.pp_virtual)
        return where(n > 0, minimum(n / ceil(layers / num(self.pp)), 1.0), 1.0)

    @property
    def expert_dp(self) -> np.ndarray:
        """Ranks that hold a copy of a routed expert: dp x cp (the graph's 'edp' collectives)."""
        return num(self.dp) * num(self.cp)

    @property
    def expert_dp_stride(self) -> np.ndarray:
        """Their spacing: cp ranks tp da apart, dp replicas tp da cp pp apart: tp da pp with dp > 1 (the true span,
        as dense_dp_stride), tp da otherwise."""
        return num(self.tp) * num(self.da) * where(num(self.dp) > 1, num(self.pp), 1.0)

    @classmethod
    def of(cls, s: Scenario, **runtime) -> "Knobs":
        """The knobs of one scenario (runtime: ranks_per_chip / head_shards, else left to bindings.on_system)."""
        p, q = s.parallel, s.precision
        return cls(**runtime, phase=s.phase, batch=s.batch, seq_len=s.seq_len, context=s.context, tp=p.tp, da=p.da,
                   ep=p.ep, cp=p.cp, pp=p.pp, dp=p.dp, microbatches=p.microbatches, zero=p.zero, weights=q.weights,
                   compute=q.compute, activations=q.activations, kv_cache=q.kv_cache,
                   expert_weights=q.experts, moe_imbalance=s.moe_imbalance, optimizer=s.optimizer,
                   pp_virtual=p.pp_virtual if p.pp_schedule == "interleaved" else 1,
                   flash_attention=s.flash_attention, sequence_parallel=p.sequence_parallel,
                   offload_layers=s.offload_layers, lora_rank=s.lora_rank, recompute_layers=s.recompute_layers)
