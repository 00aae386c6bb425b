"""Execution scenarios: phase, batch, lengths, parallelism plan and data types.

A scenario is the third input beside hardware and workload (Calculon's split). One
Scenario is one configuration; sweeps pass several values per field (see evaluate.py).

Parallelism inside one model replica (n = t x da devices):
    t   tensor parallel (attention heads, dense MLP and expert width split t ways)
    da  attention data parallel inside the replica (DeepSeek-style; tokens split da ways)
    ep  expert parallel (experts split ep ways, ep divides n)
    cp  context / sequence parallel (sequence split cp ways; ring attention)
    pp  pipeline stages (layers split pp ways)
Across replicas: dp data parallel (training gradients; serving replicas).

Does not: validate against hardware (evaluate.py checks fit and support).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

from perfmodel.core import limits
from perfmodel.core.dtypes import DType


class Phase(str, Enum):
    TRAIN = "train"
    PREFILL = "prefill"
    DECODE = "decode"


class Recompute(str, Enum):
    NONE = "none"
    SELECTIVE = "selective"  # recompute attention scores/softmax only (Korthikanti et al. 2022)
    FULL = "full"  # recompute the whole layer forward in the backward pass
    # torchtitan's selective activation checkpointing: 'layer' checkpoints every k-th block whole (its default
    # selective_ac_option = 2: every other layer); 'op' saves attention and every other matmul's output and
    # recomputes the other matmuls and the element-wise ops (graph.training.RECOMPUTED)
    ALTERNATE_LAYERS = "alternate-layers"
    SELECTIVE_OP = "selective-op"


class Optimizer(str, Enum):
    """Training state per parameter (bytes): weights + gradients + optimizer state."""

    ADAM_MIXED = "adam-mixed"  # bf16 weights 2 + bf16 grads 2 + fp32 master 4 + fp32 m 4 + fp32 v 4 = 16
    ADAM_BF16_SR = "adam-bf16-sr"  # bf16 weights 2 + bf16 grads 2 + bf16 m 2 + bf16 v 2 = 8 (stochastic rounding)
    ADAM_FP32 = "adam-fp32"  # fp32 weights 4 + grads 4 + m 4 + v 4 = 16
    SGD_MIXED = "sgd-mixed"  # bf16 weights 2 + grads 2 + fp32 master 4 = 8

    @property
    def bytes_per_param(self) -> dict[str, float]:
        """Breakdown {weights, gradients, master, optimizer} in bytes per parameter (a copy: callers may change it)."""
        return dict(_OPTIMIZER_BYTES[self])


_OPTIMIZER_BYTES = {
    Optimizer.ADAM_MIXED: {"weights": 2, "gradients": 2, "master": 4, "optimizer": 8},
    Optimizer.ADAM_BF16_SR: {"weights": 2, "gradients": 2, "master": 0, "optimizer": 4},
    Optimizer.ADAM_FP32: {"weights": 4, "gradients": 4, "master": 0, "optimizer": 8},
    Optimizer.SGD_MIXED: {"weights": 2, "gradients": 2, "master": 4, "optimizer": 0},
}


@dataclass(frozen=True)
class Parallelism:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1
    da: int = 1
    zero: int = 0  # 0 none, 1 optimizer state, 2 + gradients, 3 + weights (FSDP)
    sequence_parallel: bool = False  # Megatron SP: norms/dropout sharded, AR -> RS + AG
    microbatches: int = 1  # micro-batches per optimizer step (gradient accumulation / pipeline)
    pp_schedule: str = "1f1b"  # "1f1b" | "gpipe" | "interleaved"
    pp_virtual: int = 1  # virtual stages per device for the interleaved schedule

    @property
    def replica_chips(self) -> int:
        """Chips in one model replica: t x da x cp x pp."""
        return self.tp * self.da * self.cp * self.pp

    @property
    def chips(self) -> int:
        return self.replica_chips * self.dp

    def validate(self) -> None:
        for f in ("tp", "pp", "dp", "ep", "cp", "da"):
            _whole(getattr(self, f), f"parallelism field {f}", 1, limits.MAX_CHIPS)
        _whole(self.microbatches, "parallelism field microbatches", 1, limits.MAX_BATCH)
        _whole(self.pp_virtual, "parallelism field pp_virtual", 1, limits.MAX_LAYERS)  # stages hold >= 1 layer
        if self.chips > limits.MAX_CHIPS:
            raise ValueError(f"parallelism: tp x da x cp x pp x dp = {self.chips:,} chips, more than the "
                             f"{limits.MAX_CHIPS:,} of any cluster (limits.MAX_CHIPS)")
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"parallelism field zero: must be 0, 1, 2 or 3, got {self.zero!r}")
        n = self.tp * self.da
        if n % self.ep:
            raise ValueError(f"parallelism field ep: expert parallel {self.ep} must divide tp x da = {n}")
        if self.pp_schedule not in ("1f1b", "gpipe", "interleaved"):
            raise ValueError(f"parallelism field pp_schedule: unknown schedule {self.pp_schedule!r}")


@dataclass(frozen=True)
class Precision:
    """Data types: weights as stored, matmul inputs, activations, KV cache."""

    weights: DType = DType.BF16
    compute: DType = DType.BF16
    activations: DType = DType.BF16
    kv_cache: DType = DType.BF16
    expert_weights: DType | None = None  # routed-expert weights when stored differently (gpt-oss: MXFP4)

    @property
    def experts(self) -> DType:
        return self.expert_weights or self.weights

    @classmethod
    def uniform(cls, dtype: DType | str) -> "Precision":
        """The common serving choice for `dtype`: weights and matmuls in dtype, activations in
        BF16, KV cache in dtype for 8-bit formats, BF16 otherwise."""
        d = DType.parse(dtype) if isinstance(dtype, str) else DType(dtype)
        kv = d if d in (DType.FP8, DType.MXFP8) else (DType.FP8 if d in (DType.MXFP4, DType.FP4) else DType.BF16)
        if d in (DType.FP32, DType.TF32):
            kv = d if d == DType.FP32 else DType.FP32
        return cls(weights=d, compute=d, activations=DType.BF16 if d not in (DType.FP32, DType.TF32) else DType.FP32,
                   kv_cache=kv)


@dataclass(frozen=True)
class Scenario:
    """One configuration of work on one model replica.

    batch: sequences per step on the replica (training: per micro-batch).
    seq_len: tokens per sequence processed this step (prefill/train); decode processes 1.
    context: tokens already in the KV cache before the step (decode; chunked prefill).
    """

    phase: Phase
    batch: int = 1
    seq_len: int = 2048
    context: int = 0
    parallel: Parallelism = Parallelism()
    precision: Precision = Precision()
    recompute: Recompute = Recompute.NONE
    optimizer: Optimizer = Optimizer.ADAM_MIXED
    moe_imbalance: float | None = None  # None: the calibration default
    flash_attention: bool = True  # False: scores and probabilities materialised in HBM (pre-2022 kernels)
    # training: layers per pipeline stage whose saved activations go to host memory after their forward and come
    # back before their backward (Megatron-Core / Transformer Engine CPU offloading, cpu_offloading_num_layers)
    offload_layers: int = 0
    # training: LoRA fine-tuning, rank-r adapters on the attention block's linear layers and the base weights frozen
    # (no weight gradients, optimizer state or gradient collectives for them); 0: every weight trains
    lora_rank: int = 0
    # full recompute of this many layers per pipeline stage (Megatron-Core recompute_method 'block',
    # recompute_num_layers); 0: every layer (the policy as stated)
    recompute_layers: int = 0

    @property
    def new_tokens(self) -> int:
        return 1 if self.phase == Phase.DECODE else self.seq_len

    def replace(self, **changes) -> "Scenario":
        return dataclasses.replace(self, **changes)

    def validate(self) -> None:
        self.parallel.validate()
        _whole(self.batch, "scenario field batch", 1, limits.MAX_BATCH)
        _whole(self.seq_len, "scenario field seq_len", 1, limits.MAX_SEQ_TOKENS)
        _whole(self.context, "scenario field context", 0, limits.MAX_SEQ_TOKENS)
        if self.phase == Phase.DECODE and self.context < 1:
            raise ValueError("scenario field context: decode needs a KV cache (context >= 1)")
        _whole(self.offload_layers, "scenario field offload_layers", 0, limits.MAX_LAYERS)
        if self.offload_layers and self.phase != Phase.TRAIN:
            raise ValueError(f"scenario field offload_layers: activations are offloaded in training only, got "
                             f"{self.offload_layers} for phase {self.phase.value}")
        _whole(self.lora_rank, "scenario field lora_rank", 0, limits.MAX_WIDTH)
        _whole(self.recompute_layers, "scenario field recompute_layers", 0, limits.MAX_LAYERS)
        if self.recompute_layers and self.recompute != Recompute.FULL:
            raise ValueError(f"scenario field recompute_layers: counts the layers full recompute re-runs, got "
                             f"{self.recompute_layers} with recompute {self.recompute.value}")
        if self.lora_rank and self.phase != Phase.TRAIN:
            raise ValueError(f"scenario field lora_rank: adapters are trained in training only (merged for serving), "
                             f"got {self.lora_rank} for phase {self.phase.value}")
        if self.moe_imbalance is not None and not 1 <= self.moe_imbalance <= limits.MAX_EXPERTS:
            raise ValueError(f"scenario field moe_imbalance: must be between 1 and {limits.MAX_EXPERTS:,} (the "
                             f"busiest expert over the mean), got {self.moe_imbalance!r}")


def _whole(v, what: str, lo: int, hi: int) -> None:
    """A count field holds an int (not a float, not a bool: a scenario is built, not read) in [lo, hi]."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{what}: must be a whole number between {lo} and {hi:,}, got {v!r}")
    limits.check_count(v, what, lo, hi)
