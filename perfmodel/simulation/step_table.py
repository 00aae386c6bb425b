"""Step times of one serving replica, tabulated once from the steady-state step model (no second cost model).

The simulation asks, thousands of times per simulated second, "how long does this engine step take?". The
answer comes from the same vectorised graph evaluation as serving/steady_state.py (`steps.sweep`, the
same calibration, engine profile or Neuron stack, pipeline send/recv), evaluated ONCE per replica plan over a
grid and interpolated (multilinear) in between:

    decode step    T_d(b, c)    = p (t_stage(b / p, c) + t_p2p)          b sequences decoding, mean context c
                                  + tau_1 b / d_a                        (p micro-batches in flight, as in
                                                                         steady_state's decode step; the
                                                                         engine's host time per running
                                                                         sequence, closed_loop.HOST)
    prefill work   T_f(n, s, c) = t_stage(s, n / s, c) + t_p2p           n prompt tokens from s sequences at mean
                                                                         prior context c (a prefill step's
                                                                         occupancy of the replica; its latency
                                                                         through the stages is p T_f)
    one step       T = T_d(b, c_d) + T_f(n, s, c_f) + tau_0               a step that decodes b sequences and
                                                                         prefills n tokens; tau_0 the engine's
                                                                         fixed host time per step

Axes: b on multiples of p d_a (geometric up to the scheduler's cap), c and n geometric, s up to n. Outside the
grid a value is clamped to its edge (the grid spans what the scheduler can schedule). With speculative
decoding (serving/speculative.py) the decode step is the target's verify step at k + 1 tokens plus k draft
steps, and each step emits `tokens_per_step` tokens per sequence on average.

Does not: schedule (engine.py) or decide the KV budget's policy (it reports the capacity in tokens).
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

import numpy as np

from perfmodel.core.hardware import System
from perfmodel.core.scenario import Phase
from perfmodel.core.workload import ModelArch
from perfmodel.serving import speculative
from perfmodel.serving.kv_capacity import kv_fit
from perfmodel.serving.options import ServingOptions, setup
from perfmodel.serving.steady_state import Grid, cp_combine_s
from perfmodel.serving.steps import p2p_s, sweep

NO_LIMIT = int(np.iinfo(np.int64).max // 4)  # a model without a KV cache: the pool never fills


def geometric(lo: float, hi: float, per_octave: int = 2) -> list[float]:
    """lo, lo 2^(1/k), ... up to hi (hi included), rounded to whole numbers, distinct."""
    if hi <= lo:
        return [float(lo)]
    n = int(math.ceil(math.log2(hi / lo) * per_octave))
    vals = sorted({float(round(lo * 2 ** (i / per_octave))) for i in range(n)} | {float(hi)})
    return [v for v in vals if lo <= v <= hi]


def _corners(axes: tuple[list[float], ...], point: tuple[float, ...]):
    """(index, weight) pairs of the multilinear interpolation at `point` (clamped to the grid)."""
    per_axis = []
    for ax, x in zip(axes, point):
        if len(ax) == 1 or x <= ax[0]:
            per_axis.append(((0, 1.0),))
        elif x >= ax[-1]:
            per_axis.append(((len(ax) - 1, 1.0),))
        else:
            j = bisect.bisect_right(ax, x) - 1
            w = (x - ax[j]) / (ax[j + 1] - ax[j])
            per_axis.append(((j, 1.0 - w), (j + 1, w)))
    return itertools.product(*per_axis)


def interpolate(axes: tuple[list[float], ...], table: np.ndarray, point: tuple[float, ...]) -> float:
    """Multilinear interpolation of `table` (shape = axis lengths) at `point`, in plain Python (a scalar
    look-up per engine step: no array overhead)."""
    total = 0.0
    for corner in _corners(axes, point):
        w = 1.0
        idx = []
        for j, wj in corner:
            idx.append(j)
            w *= wj
        if w:
            total += w * float(table[tuple(idx)])
    return total


@dataclass(frozen=True)
class StepTable:
    """One replica plan's step times (module doc); times in s, lengths in tokens."""

    batches: list[float]
    contexts: list[float]
    decode_s: np.ndarray  # [batches, contexts]
    tokens: list[float]
    seqs: list[float]
    priors: list[float]
    prefill_s: np.ndarray  # [tokens, seqs, priors]
    host_s: float
    pp: int
    tokens_per_step: float  # output tokens per sequence per decode step (1, or speculative decoding's mean)
    kv_tokens: int  # KV-cache capacity of the replica in tokens (the scheduler's block pool)
    kv_bytes_per_token: float  # per replica (what a disaggregated hand-off moves)
    chips: int
    label: str

    def decode(self, b: float, c: float) -> float:
        return interpolate((self.batches, self.contexts), self.decode_s, (b, c))

    def prefill(self, n: float, s: float, c: float) -> float:
        return interpolate((self.tokens, self.seqs, self.priors), self.prefill_s, (n, min(s, n), c))

    def step(self, b: float, c_dec: float, n: float, s: float, c_pre: float) -> float:
        """One engine step: decode b sequences at mean context c_dec and prefill n tokens of s sequences."""
        t = self.host_s
        if b > 0:
            t += self.decode(b, c_dec)
        if n > 0:
            t += self.prefill(n, s, c_pre)
        return t


def build(system: System, arch: ModelArch, plan: Grid, options: ServingOptions, *, max_running: int,
          token_budget: int, max_context: int, mean_context: float, spec: speculative.Speculation | None = None,
          cal=None) -> StepTable:
    """Tabulate the step times of `plan` (a Grid of one configuration; its concurrency is ignored) for a
    scheduler of `max_running` sequences and `token_budget` tokens per step, contexts up to `max_context`.
    Two vectorised evaluations (decode grid, prefill grid), or four with a speculative draft."""
    if len(plan) != 1:
        raise ValueError("step_table.build: one replica plan at a time")
    su = setup(system, options, cal)
    p, da = int(plan.pp[0]), int(plan.da[0])
    unit = p * da
    batches = [float(unit * m) for m in geometric(1, max(1, math.ceil(max_running / unit)), 4)]
    contexts = [0.0] + geometric(16, max(16, max_context), 2)
    tokens = geometric(1, max(1, token_budget), 2)
    seqs = geometric(1, max(1, min(max_running, token_budget)), 1)
    priors = [0.0] + geometric(64, max(64, max_context), 1)

    def rows(values: list[list[float]]) -> tuple[np.ndarray, ...]:
        mesh = np.meshgrid(*[np.asarray(v) for v in values], indexing="ij")
        return tuple(m.ravel() for m in mesh)

    b, c = rows([batches, contexts])
    g = plan.take(np.zeros(len(b), dtype=int))
    cp = float(plan.cp[0])  # context parallel: each rank attends over 1 / cp of the context (cp_combine_s)
    if spec is None:
        dec = sweep(system, arch, su.knobs(g, Phase.DECODE, b / p, 1, c / cp, cp=1), su.cal)["step_time_s"].to_numpy()
        per_step = 1.0
    else:
        dec, per_step = speculative.step_s(system, arch, g, su, b / p, c / cp, spec)
    dec = p * (dec + p2p_s(system, su.cal, g, b / p / da, arch.hidden_size)
               + cp_combine_s(system, su.cal, arch, g, b / p / da)) \
        + su.host_time(b, da) - su.host  # the engine's host time per running sequence (its fixed part: su.host)
    n, s, cf = rows([tokens, seqs, priors])
    s = np.minimum(s, n)
    g = plan.take(np.zeros(len(n), dtype=int))
    batch = np.maximum(s, da)
    pre = sweep(system, arch, su.knobs(g, Phase.PREFILL, batch, n / batch, cf), su.cal)["step_time_s"].to_numpy()
    pre = pre + p2p_s(system, su.cal, g, n / da, arch.hidden_size)
    fraction = su.profile["kv_memory_fraction"] if su.profile is not None else None
    ctx = max(1.0, float(mean_context))
    kv_plan = plan.take([0, 0])
    kv_plan = Grid.of(tp=kv_plan.tp, da=kv_plan.da, ep=kv_plan.ep, pp=kv_plan.pp, concurrency=[unit, 2 * unit],
                      compute=kv_plan.compute, weights=kv_plan.weights, expert_weights=kv_plan.expert_weights,
                      kv_cache=kv_plan.kv_cache, cp=kv_plan.cp)
    _, used, cmax = kv_fit(system, arch, kv_plan, ctx, su.cal, fraction)
    per_seq = float(used[1] - used[0]) / unit  # bytes per device per sequence at `ctx` tokens
    chips = int(plan.replica_chips[0])
    kv_tokens = int(max(0.0, float(cmax[0])) * ctx) if math.isfinite(float(cmax[0])) else NO_LIMIT
    label = (f"tp{int(plan.tp[0])} da{da} ep{int(plan.ep[0])} pp{p}" + (f" cp{int(cp)}" if cp > 1 else "")
             + f" {plan.compute[0].value}"
             + (f" + {spec.label}" if spec else ""))
    return StepTable(batches, contexts, dec.reshape(len(batches), len(contexts)), tokens, seqs, priors,
                     pre.reshape(len(tokens), len(seqs), len(priors)), su.host, p, per_step, kv_tokens,
                     per_seq * chips / ctx, chips, label)
