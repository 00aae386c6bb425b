"""Speculative decoding: a draft proposes k tokens, the target verifies them in one step.

Per decode step of a batch of b sequences at context c (times in s):

    verify        t_v = target step over k + 1 tokens per sequence at prior context c (the graph's
                  prefill of a (k + 1)-token chunk: the target's weights read once for k + 1 tokens)
    draft         t_q = draft step of one token (EAGLE: a one-layer draft on the target's hidden states;
                  MTP: the target's own multi-token-prediction layer), run k times
    step          t_s = t_v + k t_q
    accepted      E = 1 + sum_i a_i     tokens emitted per sequence per step: the bonus token plus the
                                        accepted drafts; a_i the share of steps whose i-th draft is
                                        accepted (vLLM's per-position acceptance rates, which are
                                        unconditional); or the stated mean acceptance length
    TPOT          = t_s / E

Inputs: the draft (its name and its architecture, resolved at the edge from workloads/drafts/ by the CLI or a
reader; or "mtp" for the target's own prediction layer, derived here), k, and either the per-position acceptance
rates or the mean acceptance length (what vLLM's and the Neuron tutorials' benchmarks print). Nothing here reads
a file.

Not modelled (second order at the batch sizes speculation is used at): the verify step's logits for all k + 1
positions (the prefill graph computes the last position's), the draft's own KV cache in the memory fit, and
the draft's prefill of the prompt (one layer).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from perfmodel.core.scenario import Phase
from perfmodel.core.workload import ModelArch
from perfmodel.serving.steps import sweep

MTP = "mtp"  # the draft is the target's own multi-token-prediction layer


@dataclass(frozen=True)
class Speculation:
    """A speculative-decoding setup: the draft's name (or "mtp") and its architecture (`model`, resolved at the
    edge: workload_files.load_draft; None for MTP), k draft tokens per step, and the acceptance (per-position
    rates, or the mean acceptance length E including the bonus token)."""

    draft: str
    k: int
    acceptance: tuple[float, ...] = ()
    mean_accepted: float = 0.0
    model: ModelArch | None = None

    def validate(self) -> None:
        if not isinstance(self.k, (int, np.integer)) or not 1 <= self.k <= 16:
            raise ValueError(f"speculative k: a whole number of draft tokens in [1, 16], got {self.k!r}")
        if bool(self.acceptance) == bool(self.mean_accepted):
            raise ValueError("speculative acceptance: give either per-position acceptance rates or the mean "
                             "acceptance length, not both or neither")
        if self.acceptance:
            a = list(self.acceptance)
            if len(a) != self.k or not all(0 <= x <= 1 for x in a) or any(y > x for x, y in zip(a, a[1:])):
                raise ValueError(f"speculative acceptance: {self.k} rates in [0, 1], non-increasing by position "
                                 f"(a later draft is accepted only after the earlier ones), got {a}")
        elif not 1 <= self.mean_accepted <= self.k + 1:
            raise ValueError(f"speculative mean acceptance length: in [1, k + 1 = {self.k + 1}], got "
                             f"{self.mean_accepted!r}")
        if self.draft != MTP and self.model is None:
            raise ValueError(f"speculative draft {self.draft!r}: its architecture is not given (resolve it where the "
                             "inputs are read: workload_files.load_draft)")

    @property
    def tokens_per_step(self) -> float:
        """E = 1 + sum of per-position acceptance rates (or the stated mean acceptance length)."""
        return float(self.mean_accepted) if self.mean_accepted else 1.0 + float(sum(self.acceptance))

    @property
    def label(self) -> str:
        return f"{self.draft} k={self.k} E={self.tokens_per_step:.2f}"


def draft_arch(spec: Speculation, target: ModelArch) -> ModelArch:
    """The draft's architecture: the one resolved at the edge, or for MTP the target's last layer type alone."""
    return _mtp_layer(target) if spec.draft == MTP else spec.model


@lru_cache(maxsize=None)
def _mtp_layer(target: ModelArch) -> ModelArch:
    """MTP's draft: the target's own prediction layer (one layer, the target's head)."""
    return dataclasses.replace(target, name=f"{target.name}-mtp", num_hidden_layers=1,
                               first_k_dense_replace=0, layer_types=())


def step_frame(system, arch: ModelArch, grid, su, batch, context, spec: Speculation):
    """(verify + k draft steps per pipeline stage as steps.sweep's frame: every time and busy column
    summed, tokens emitted per sequence per step) over arrays of batch and context; `su` the serving setup
    (steady_state.setup), `grid` the plans (one per row)."""
    spec.validate()
    verify = sweep(system, arch, su.knobs(grid, Phase.PREFILL, batch, spec.k + 1, context, cp=1), su.cal)
    draft = sweep(system, draft_arch(spec, arch), su.knobs(grid, Phase.DECODE, batch, 1, context, cp=1),
                  su.cal)
    cols = [c for c in verify.columns if c.endswith("_s") and c in draft.columns]
    out = verify.copy()
    out[cols] = verify[cols].to_numpy() + spec.k * draft[cols].to_numpy()
    return out, spec.tokens_per_step


def step_s(system, arch: ModelArch, grid, su, batch, context, spec: Speculation) -> tuple[np.ndarray, float]:
    """step_frame's step time alone."""
    frame, e = step_frame(system, arch, grid, su, batch, context, spec)
    return frame["step_time_s"].to_numpy(), e
