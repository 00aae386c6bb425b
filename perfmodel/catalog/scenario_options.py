"""Scenario options: the flat, hashable form of a scenario that the CLI flags, the app's widgets and
its URL hold, and the Scenario it stands for (scenario_of).

Does not: evaluate anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from perfmodel.core import limits
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.core.workload import ModelArch


@dataclass(frozen=True)
class ScenarioOptions:
    """The plain options the CLI and the app expose, hashable. `dtype` picks
    Precision.uniform(dtype); a model that ships smaller routed-expert weights (gpt-oss:
    MXFP4) keeps them when they are smaller than `dtype`. Training uses BF16 activations
    and the optimizer's own state sizes."""

    phase: str = "decode"
    batch: int = 1
    seq_len: int = 2048
    context: int | None = None  # None: the phase's DEFAULT_CONTEXT (an explicit 0 in decode is refused)
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    da: int = 1
    dtype: str = "bf16"
    microbatches: int = 1
    zero: int = 0
    recompute: str = "none"
    optimizer: str = "adam-mixed"
    sequence_parallel: bool = False
    offload_layers: int = 0  # training: layers per stage whose activations go to host memory
    lora_rank: int = 0  # training: LoRA adapters' rank, the base weights frozen (0: every weight trains)
    recompute_layers: int = 0  # full recompute: layers per stage re-run (0: every layer)

    def replace(self, **changes) -> "ScenarioOptions":
        return dataclasses.replace(self, **changes)

    def resolved(self) -> "ScenarioOptions":
        """Copy with defaults filled in: a context not given is the phase's DEFAULT_CONTEXT."""
        if self.context is None:
            return self.replace(context=DEFAULT_CONTEXT.get(self.phase, 0))
        return self


DEFAULT_CONTEXT = {"decode": 4096, "prefill": 0, "train": 0}  # tokens already cached before a decode step


def scenario_of(opts: ScenarioOptions, arch: ModelArch, system: System | None = None) -> Scenario:
    """The Scenario for plain options; decode without a context gets DEFAULT_CONTEXT.

    Routed experts keep the shipped data type (gpt-oss: MXFP4) when it is smaller than the
    compute type and, given a `system`, its tensor engine consumes that type natively;
    otherwise they are stored in the compute type (converted offline, as a deployment on
    hardware without MX support does)."""
    from perfmodel.core.dtypes import bytes_per_element

    phase = Phase(opts.phase)
    d = DType.parse(opts.dtype)
    prec = Precision.uniform(d)
    ew = arch.expert_weight_dtype
    native = system is None or system.chip.supports(ew) if ew else False
    if ew and arch.is_moe and bytes_per_element(ew) < bytes_per_element(d) and native:
        prec = dataclasses.replace(prec, expert_weights=ew)
    n = _counts(opts)
    sc = Scenario(phase=phase, batch=n["batch"], seq_len=n["seq_len"], context=n["context"],
                  parallel=Parallelism(tp=n["tp"], pp=n["pp"], dp=n["dp"], ep=n["ep"], da=n["da"], zero=n["zero"],
                                       microbatches=n["microbatches"], sequence_parallel=bool(opts.sequence_parallel)),
                  precision=prec, recompute=Recompute(opts.recompute), optimizer=Optimizer(opts.optimizer),
                  offload_layers=n["offload_layers"], lora_rank=n["lora_rank"],
                  recompute_layers=n["recompute_layers"])
    sc.validate()
    return sc


# option -> (smallest, largest): whole numbers only (40.0 is 40; 40.5, inf, nan and text are refused)
COUNT_RANGES = {"batch": (1, limits.MAX_BATCH), "seq_len": (1, limits.MAX_SEQ_TOKENS),
                "context": (0, limits.MAX_SEQ_TOKENS), "tp": (1, limits.MAX_CHIPS), "pp": (1, limits.MAX_CHIPS),
                "dp": (1, limits.MAX_CHIPS), "ep": (1, limits.MAX_CHIPS), "da": (1, limits.MAX_CHIPS),
                "zero": (0, 3), "microbatches": (1, limits.MAX_BATCH), "offload_layers": (0, limits.MAX_LAYERS),
                "lora_rank": (0, limits.MAX_WIDTH), "recompute_layers": (0, limits.MAX_LAYERS)}


def _counts(opts: ScenarioOptions) -> dict[str, int]:
    """The options' counts as ints, each checked (ValueError naming the option, value and range)."""
    r = opts.resolved()
    return {k: limits.check_count(getattr(r, k), f"scenario option {k}", lo, hi)
            for k, (lo, hi) in COUNT_RANGES.items()}


def plan_label(opts: ScenarioOptions) -> str:
    return f"tp{opts.tp} pp{opts.pp} ep{opts.ep} dp{opts.dp}"
