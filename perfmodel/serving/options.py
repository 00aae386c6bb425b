"""Serving options: the request shape, the structural serving choices, and what an engine or a Neuron software
stack brings to the step model (calibration, host time per step, attention kernels).

Does not: price anything (steady_state.py prices a replica; simulation/ runs requests through it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

import numpy as np

from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System
from perfmodel.core.profiles import Profile, Stack
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.serving import closed_loop


class Mode(str, Enum):
    AGGREGATED = "aggregated"  # prefill and decode on the same replica, prefill interleaved
    CHUNKED = "chunked"  # aggregated, prefill split into chunks riding with decode steps
    DISAGGREGATED = "disaggregated"  # separate prefill and decode pools


@dataclass(frozen=True)
class Mix:
    """Request shape: input (prompt) and output (generated) tokens per request."""

    input_tokens: int = 1024
    output_tokens: int = 1024

    def validate(self) -> None:
        for f in ("input_tokens", "output_tokens"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"mix field {f}: must be a whole number >= 1, got {v!r}")

    @property
    def label(self) -> str:
        return f"{self.input_tokens}/{self.output_tokens}"


@dataclass(frozen=True)
class ServingOptions:
    """Structural serving choices (one evaluate_sweep pair per choice).

    mode: aggregated | chunked | disaggregated; chunk_tokens: prefill chunk (chunked mode);
    kv_reserve: "peak" (KV for I + O tokens per sequence) or "mean" (I + O/2);
    engine (its name) and software (the record, resolved at the edge: catalog.neuron_stacks.software; given
    alone, it names the engine): a serving-engine profile (engines.toml: "vllm", "trtllm", "sglang") whose host
    time per step, steps to the first token, KV allotment and running cap apply; or, on Neuron hardware, a
    software stack (stacks/neuron.toml: "nxd-inference", "transformers-neuronx-2.18") whose rules
    apply: its graphs' fixed cost per operator and collective algorithms, flash attention or not, decode
    reading the whole compiled length (I + O), its host time per step (its prefill buckets are not applied:
    a scenario states no compiled lengths); "" = the accelerator alone (Neuron: the family file's values).
    """

    mode: Mode = Mode.AGGREGATED
    chunk_tokens: int = 512
    kv_reserve: str = "peak"
    engine: str = ""
    software: object = None  # core/profiles: the Profile or Neuron Stack `engine` names, resolved at the edge
    speculative: object = None  # serving/speculative.Speculation: a draft proposes k tokens per step
    prefix_tokens: int = 0  # mean prompt tokens served from the prefix cache (hit rate x shared prefix length)

    def __post_init__(self):
        if self.software is not None and not self.engine:
            object.__setattr__(self, "engine", self.software.name)

    def check_resolved(self) -> None:
        """ValueError (one line) where an engine is named but its record was not resolved at the edge."""
        if self.engine and getattr(self.software, "name", None) != self.engine:
            raise ValueError(f"serving option engine {self.engine!r}: not resolved; resolve the name at the edge "
                             "(catalog.neuron_stacks.software(name, system)) and pass it as software=")

    def validate(self) -> None:
        if self.speculative is not None:
            self.speculative.validate()
        if not isinstance(self.prefix_tokens, (int, np.integer)) or self.prefix_tokens < 0:
            raise ValueError(f"serving option prefix_tokens: a whole number of tokens >= 0, got {self.prefix_tokens!r}")
        Mode(self.mode)
        self.check_resolved()
        if self.kv_reserve not in ("peak", "mean"):
            raise ValueError(f"serving option kv_reserve: 'peak' or 'mean', got {self.kv_reserve!r}")
        if not isinstance(self.chunk_tokens, (int, np.integer)) or self.chunk_tokens < 1:
            raise ValueError(f"serving option chunk_tokens: a whole number >= 1, got {self.chunk_tokens!r}")


@dataclass(frozen=True)
class Setup:
    """What a serving option brings to the step model: the calibration (a Neuron stack's rules in place), the
    stack or the engine profile, the host time per step, and the attention kernels."""

    cal: Calibration
    stack: Stack | None
    profile: Profile | None
    host: float  # fixed host time per step (s)
    flash: bool
    host_per_sequence: float = 0.0  # host time per step per sequence of an attention-DP rank (s)

    def host_time(self, running, da) -> np.ndarray:
        """Host time per step at `running` sequences per replica over `da` attention-DP ranks (closed_loop's
        tau = tau_0 + tau_1 S / d_a; a Neuron stack's is fixed)."""
        return closed_loop.evaluate("host", tau_0=self.host, tau_1=self.host_per_sequence, S=running, d_a=da)

    def knobs(self, g, phase: Phase, batch, seq_len, context, cp=None) -> bd.Knobs:
        """The grid's (steady_state.Grid) knobs with the stack's attention and MoE kernels."""
        kn = g.knobs(phase, batch, seq_len, context, cp)
        kn = kn if self.flash else dataclasses.replace(kn, flash_attention=False)
        block = self.stack["moe_kernel_block"] if self.stack is not None else 0.0
        return dataclasses.replace(kn, moe_kernel_block=block) if block else kn


def setup(system: System, options: ServingOptions, cal: Calibration | None = None) -> Setup:
    """The option's engine (GPU serving engine) or software stack (Neuron) applied to the chip's calibration."""
    cal = cal or calibration_of(system)
    options.check_resolved()
    sw = options.software
    stack = sw if isinstance(sw, Stack) else None
    if stack is not None:
        cal = stack.calibration(cal)
    prof = sw if sw is not None and stack is None else None
    host = prof["step_cost"] if prof else stack["step_host_latency"] if stack is not None else 0.0
    flash = bool(stack["flash_attention"]) if stack is not None else True
    per_seq = prof["step_cost_per_sequence"] if prof else 0.0
    return Setup(cal, stack, prof, float(host), flash, float(per_seq))
