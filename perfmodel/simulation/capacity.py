"""What a deployment can serve: its service capacity in requests/s from the steady state, the load offered to
it, and the fewest workers that hold that load.

Per worker, the work each request costs it (a saturated worker is never idle, so it serves 1 / that work):

    aggregated / chunked replica     r(C) = C / (O cycle(C)),  cycle = p t_d + tau + (C / O) o_f
    disaggregated decode worker      r(C) = C / (O TPOT(C)),   TPOT  = p t_d + tau
    disaggregated prefill worker     r    = 1 / o_f = d_a / t_f   (one prefill step of d_a prompts occupies it t_f)

that is the steady state's output tokens/s per (decode) replica / O (serving/steady_state.serve: t_d its decode
stage step at C sequences, t_f its prefill stage step, o_f = n t_f / d_a the prefill time per request, tau the
engine's host time per step, speculative decoding's E tokens per step included). Why this form: the step
tables (step_table.py) tabulate this same step model, and the simulated engine prices each step additively,
T = T_d(b, c) + T_f(n, s, c') + tau; over a saturated run a request costs its replica O / C of C-sequence
decode steps plus its own prefill work, whatever the order. C / e2e(C) (Little's law on the running set)
depends on how the steady state splits that work between TTFT and TPOT (a request's own prefill in one or the
other); the two agree within about 1% and the work does not move.

C runs over the multiples of p d_a up to the running cap C_max = min(S_max, C_kv): S_max the scheduler's
running cap (deployment.scheduler: the engine's, --max-running, or vLLM's default), C_kv the sequences the KV
pool holds at the steady state's reserve context (I + O, or I + O / 2 with kv_reserve "mean"; a --kv-blocks
pool: blocks / ceil(context / 16)). A worker's capacity is r_max = max over those C of r(C) (chunked
concurrencies the steady state refuses, prompts arriving faster than a chunk per step, are left out; compare.py's
load sweep takes the maximum of C / e2e(C) as its 100% load, within about 1% of this); the deployment's is
R r_max (R replicas) or min(x r_prefill, y r_decode) (x prefill, y decode workers).

    utilisation      = offered / capacity; above 1 the queue grows without bound
    offered          a Poisson or gamma rate; a trace's mean rate (n - 1) / (last - first arrival); a closed loop
                     offers none (a client waits for its answer: its rate follows from the service)
    workers to hold  ceil(offered / (MAX_UTILISATION r_max)) per pool

The lengths are the drawn requests' means. Not counted: prefix-cache hits (the capacity is then a lower
bound), preemption (a saturated run whose KV pool fills recomputes preempted sequences and serves somewhat
less than r_max), a --max-running above an engine profile's own cap (priced at the profile's cap, where the
steady state stops).

Does not: simulate (deployment.py) or plan a fleet (serving/planner.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.serving.options import Mix, Mode, ServingOptions
from perfmodel.serving.steady_state import Grid, serve
from perfmodel.simulation import deployment
from perfmodel.simulation.engine import BLOCK_TOKENS
from perfmodel.simulation.traffic import Requests, Traffic

# The busiest a suggested deployment runs: at 100% a queue fed by random arrivals still grows without bound
# (an M/G/k queue's wait grows as 1 / (1 - utilisation)); 90% leaves a tenth of the capacity for bursts.
MAX_UTILISATION = 0.9
CURVE_POINTS = 48  # concurrencies evaluated below the running cap (one vectorised steady-state call)


def worker_rate(output_tokens_per_s, output_tokens):
    """Requests/s of a (decode) worker: its steady-state output tokens/s / O (module doc)."""
    return np.asarray(output_tokens_per_s, dtype=float) / float(output_tokens)


def prefill_rate(da: int, prefill_step_s: float) -> float:
    """Requests/s of a disaggregated prefill worker: 1 / o_f, d_a prompts per prefill step of t_f."""
    return float(da) / float(prefill_step_s)


def running_cap(max_running: int, kv_concurrency: float, unit: int, kv_blocks: int = 0, context: float = 0.0) -> int:
    """C_max: the scheduler's cap and the KV pool's (module doc), rounded down to a multiple of p d_a (`unit`);
    0 when the pool holds fewer than `unit` sequences."""
    kv = float(kv_concurrency)
    if kv_blocks:
        kv = kv_blocks // math.ceil(max(context, 1.0) / BLOCK_TOKENS)
    cap = min(float(max_running), kv)
    return int(cap // unit) * unit if math.isfinite(cap) else int(max_running // unit) * unit


def workers_to_hold(offered_per_s: float, per_worker_per_s: float, max_utilisation: float = MAX_UTILISATION) -> int:
    """The fewest workers of `per_worker_per_s` requests/s each that serve `offered_per_s` at most
    `max_utilisation` busy (at least 1)."""
    if not 0 < max_utilisation <= 1:
        raise ValueError(f"max utilisation: a share in (0, 1], got {max_utilisation!r}")
    if not per_worker_per_s > 0:
        raise ValueError(f"workers to hold: a worker's capacity must be > 0 requests/s, got {per_worker_per_s!r}")
    return max(1, math.ceil(offered_per_s / (max_utilisation * per_worker_per_s) - 1e-9))


def offered_rate(traffic: Traffic, reqs: Requests) -> float | None:
    """Requests/s offered (module doc), or None where the traffic defines none (a closed loop, a trace of fewer
    than two arrivals or of one instant)."""
    if traffic.kind in ("poisson", "gamma"):
        return float(traffic.rate)
    if traffic.kind == "trace" and len(reqs) >= 2:
        span = float(reqs.arrival_s[-1] - reqs.arrival_s[0])
        return (len(reqs) - 1) / span if span > 0 else None
    return None


def _number(v: float) -> str:
    """Three significant figures without trailing zeros: 10, 8.03, 0.0123, 1,234."""
    digits = max(0, 2 - math.floor(math.log10(abs(v)))) if v else 0
    text = f"{v:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class Capacity:
    """A deployment's service capacity (module doc): one entry per pool in `roles` ("replica", or "prefill" and
    "decode"), the requests/s one worker serves, the workers deployed, and the load offered (None: none defined);
    running_cap is C_max, concurrency the C <= C_max at which a (decode) worker's r(C) peaks (0: unknown)."""

    roles: tuple[str, ...]
    per_worker_per_s: tuple[float, ...]
    workers: tuple[int, ...]
    running_cap: int
    offered_per_s: float | None
    max_utilisation: float = MAX_UTILISATION
    concurrency: int = 0

    @property
    def requests_per_s(self) -> float:
        """The deployment's capacity: its slowest pool."""
        return min(w * r for w, r in zip(self.workers, self.per_worker_per_s))

    @property
    def known(self) -> bool:
        return all(math.isfinite(r) and r > 0 for r in self.per_worker_per_s)

    @property
    def utilisation(self) -> float | None:
        if self.offered_per_s is None or not self.known:
            return None
        return self.offered_per_s / self.requests_per_s

    @property
    def overloaded(self) -> bool:
        u = self.utilisation
        return u is not None and u > 1.0

    def to_hold(self) -> tuple[int, ...] | None:
        """Workers per pool that serve the offered load at most max_utilisation busy."""
        if self.utilisation is None:
            return None
        return tuple(workers_to_hold(self.offered_per_s, r, self.max_utilisation) for r in self.per_worker_per_s)

    def _deployment(self, counts) -> str:
        if self.roles == ("replica",):
            return _count(counts[0], "replica")
        return " + ".join(f"{n} {role}" for n, role in zip(counts, self.roles)) + (
            " worker" if sum(counts) == 1 else " workers")

    def warning(self) -> str | None:
        """One line when the offered load exceeds the capacity, else None."""
        if not self.overloaded:
            return None
        each = "" if self.roles == ("replica",) else " (" + ", ".join(
            f"{role} {_number(r)}/s each" for role, r in zip(self.roles, self.per_worker_per_s)) + ")"
        return (f"{_number(self.offered_per_s)} requests/s offered, {_number(self.requests_per_s)} requests/s served "
                f"by {self._deployment(self.workers)}{each}: utilisation {self.utilisation:.0%}, the queue grows "
                f"without bound; {self._deployment(self.to_hold())} would hold it (at most "
                f"{self.max_utilisation:.0%} busy)")

    def columns(self) -> dict[str, float]:
        """The capacity as result columns (requests/s, utilisation as offered / capacity; NaN where undefined)."""
        nan = float("nan")
        out = {"capacity_requests_per_s": self.requests_per_s if self.known else nan}
        for role, r in zip(self.roles, self.per_worker_per_s):
            out[f"capacity_per_{role}_requests_per_s"] = r
        out["offered_requests_per_s"] = nan if self.offered_per_s is None else self.offered_per_s
        u = self.utilisation
        out["utilisation"] = nan if u is None else u
        hold = self.to_hold()
        for i, role in enumerate(self.roles):
            out[f"{role}s_to_hold" if role == "replica" else f"{role}_workers_to_hold"] = (
                nan if hold is None else hold[i])
        return out

    def meta(self) -> dict:
        """The same for a JSON envelope's meta (None where undefined), with the warning and the headroom."""
        cols = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.columns().items()}
        return {**cols, "running_cap_per_worker": self.running_cap, "concurrency_at_capacity": self.concurrency,
                "max_utilisation": self.max_utilisation,
                "overloaded": self.overloaded, "warning": self.warning()}


def _curve(system: System, arch: ModelArch, plan: Grid, mix: Mix, options: ServingOptions, layout: deployment.Layout,
           cal):
    """The steady state at the concurrencies a worker can run (module doc), and C_max."""
    unit = int(plan.pp[0] * plan.da[0])
    one = serve(system, arch, _at(plan, [unit]), mix, options, cal).iloc[0]
    sched = deployment.scheduler(options, layout, system, "decode" if options.mode == Mode.DISAGGREGATED else "both",
                                 int(plan.da[0]))
    I, O = mix.input_tokens, mix.output_tokens
    ctx = (I + O if options.kv_reserve == "peak" else I + O / 2) - options.prefix_tokens
    cap = running_cap(sched.max_running, float(one["max_concurrency_kv"]), unit, layout.kv_blocks, ctx)
    if cap < unit:
        return None, cap
    ms = np.unique(np.round(np.geomspace(1, cap // unit, CURVE_POINTS))).astype(int)
    df = serve(system, arch, _at(plan, np.unique(np.append(ms * unit, cap))), mix, options, cal)
    return df[df["valid"]], cap


def _at(plan: Grid, concurrency) -> Grid:
    return Grid.of(tp=plan.tp[0], da=plan.da[0], ep=plan.ep[0], pp=plan.pp[0], cp=plan.cp[0],
                   concurrency=np.asarray(concurrency, dtype=int), compute=plan.compute[0], weights=plan.weights[0],
                   expert_weights=plan.expert_weights[0], kv_cache=plan.kv_cache[0])


def assess(system: System, arch: ModelArch, plan: Grid, traffic: Traffic, reqs: Requests,
           options: ServingOptions = ServingOptions(), layout: deployment.Layout = deployment.Layout(),
           cal=None, max_utilisation: float = MAX_UTILISATION) -> Capacity:
    """The capacity of `layout` serving `plan` for the requests `reqs` (their mean lengths) and the load `traffic`
    offers (module doc). A plan the steady state refuses at every concurrency gets capacity NaN (the simulation
    states why it cannot run)."""
    options.validate()
    layout.validate()
    mix = Mix(max(1, int(round(float(np.mean(reqs.input_tokens))))),
              max(1, int(round(float(np.mean(reqs.output_tokens))))))
    offered = offered_rate(traffic, reqs)
    df, cap = _curve(system, arch, plan, mix, options, layout, cal)
    nan = float("nan")
    r, at = nan, 0
    if df is not None and len(df):
        rates = worker_rate(df["output_tokens_per_s_per_replica"], mix.output_tokens)
        best = int(np.argmax(rates))
        r, at = float(rates[best]), int(df["concurrency"].iloc[best])
    if Mode(options.mode) == Mode.DISAGGREGATED:
        r_p = prefill_rate(int(plan.da[0]), float(df["prefill_step_s"].iloc[0])) if at else nan
        return Capacity(("prefill", "decode"), (r_p, r), (layout.prefill, layout.decode), cap, offered,
                        max_utilisation, at)
    return Capacity(("replica",), (r,), (layout.replicas,), cap, offered, max_utilisation, at)
