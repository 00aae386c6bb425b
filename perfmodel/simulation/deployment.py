"""A serving deployment under traffic: replicas (or xPyD prefill and decode workers) behind a router, on SimPy.

    aggregated      R replicas, each an engine (engine.py) doing prefill and decode; the router sends each
                    arrival to the replica with the fewest outstanding requests (running + waiting; ties to the
                    lowest index: the least-load policy of vLLM's production-stack and Dynamo's routers)
    disaggregated   x prefill workers and y decode workers (xPyD): a prompt goes to the least-loaded prefill
                    worker; when its prefill ends its KV (kv_bytes_per_sequence at its input length) moves to
                    the least-loaded decode worker at the tier steady_state's hand-off uses
                    (handoff_bytes_per_s_per_chip x the decode replica's chips); TTFT ends when the decode
                    worker admits it (plus the engine's first-token steps)
    traffic         open loop (poisson, gamma, trace: arrivals fixed in advance) or closed loop (C clients,
                    each sending its next request think_s after its previous one ends)

Every worker prices its steps with one step table of the replica plan (step_table.py), built from the
steady-state step model; the engine profile (serving_engines) or Neuron stack of the options supplies the
scheduler (token budget, running cap, prefill-first, first-token steps) and the host time per step.

Does not: compute statistics (metrics.py) or choose the deployment (the planner does).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import simpy

from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.serving.kv_capacity import kv_bytes_per_sequence
from perfmodel.serving.options import Mode, ServingOptions, setup
from perfmodel.serving.steady_state import Grid, Mix, handoff_bytes_per_s_per_chip, serve
from perfmodel.simulation import step_table
from perfmodel.simulation.engine import Replica, Scheduler
from perfmodel.simulation.traffic import Requests, Shapes, Traffic, draw

BARE_MAX_RUNNING = 1024  # no engine named: vLLM V1's max_num_seqs default on >= 70 GiB GPUs (assumed)
BARE_TOKEN_BUDGET = 8192  # no engine named: vLLM V1's max_num_batched_tokens default (assumed)


@dataclass(frozen=True)
class Layout:
    """How many workers: `replicas` aggregated replicas, or `prefill` x `decode` workers when disaggregated.
    max_running / token_budget override the engine's (0: the engine's, or the bare defaults above);
    kv_blocks overrides the KV pool per worker in 16-token blocks (vLLM's num_gpu_blocks_override; 0: what
    HBM leaves)."""

    replicas: int = 1
    prefill: int = 1
    decode: int = 1
    max_running: int = 0
    token_budget: int = 0
    kv_blocks: int = 0

    def validate(self) -> None:
        for f in ("replicas", "prefill", "decode"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or not 1 <= v <= 100_000:
                raise ValueError(f"deployment {f}: a whole number of workers in [1, 100000], got {v!r}")
        for f in ("max_running", "token_budget", "kv_blocks"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"deployment {f}: a whole number >= 0 (0 = the engine's), got {v!r}")


def scheduler(options: ServingOptions, layout: Layout, system: System, role: str, ranks: int = 1) -> Scheduler:
    """The engine's limits for a worker of `role` over `ranks` attention-DP ranks (an engine's running cap holds
    per rank: each rank schedules its own batch); steady_state's modes map to the engines':
    aggregated = prefill-first (a prompt is prefilled whole, alone), chunked = prefill chunks of
    options.chunk_tokens ride with decode steps."""
    su = setup(system, options)
    prof = su.profile
    mode = Mode(options.mode)
    running = layout.max_running or (int(prof["max_running"]) * int(ranks) if prof else BARE_MAX_RUNNING)
    budget = layout.token_budget or (int(prof["token_budget"]) if prof else BARE_TOKEN_BUDGET)
    if prof is not None:
        first = bool(prof["prefill_first"])
        steps = prof["first_token_steps_disagg" if mode == Mode.DISAGGREGATED else "first_token_steps"]
        prefill_cap = budget
    else:
        first, steps = mode == Mode.AGGREGATED, 0.0
        prefill_cap = options.chunk_tokens if mode == Mode.CHUNKED else budget
    return Scheduler(max_running=running, token_budget=budget, prefill_first=first and role == "both",
                     first_token_steps=float(steps), prefill_tokens=int(prefill_cap))


class Simulation:
    """Request state as arrays and the workers of one deployment in one SimPy environment."""

    def __init__(self, reqs: Requests, traffic: Traffic, kv_dtype: DType, arch: ModelArch):
        n = len(reqs)
        self.env = simpy.Environment()
        self.traffic = traffic
        self.arrival = reqs.arrival_s.astype(float).copy()
        self.input_tokens, self.output_tokens = reqs.input_tokens, reqs.output_tokens
        self.prefix_id, self.prefix_tokens = reqs.prefix_id, reqs.prefix_tokens
        self.prompt = reqs.input_tokens.astype(np.int64).copy()
        self.left = reqs.output_tokens.astype(float).copy()
        self.first = np.full(n, np.nan)  # end of the step that emitted the first token (GPU side)
        self.first_delay = np.zeros(n)  # the engine's steps from there to the client
        self.finished = np.full(n, np.nan)
        self.cached = np.full(n, -1, dtype=np.int64)
        self.hit_tokens = np.zeros(n, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.worker = np.full(n, -1, dtype=np.int64)
        self.kv_dtype, self.arch = kv_dtype, arch
        self.front: list[Replica] = []
        self.back: list[Replica] = []
        self.handoff_rate = 0.0
        self.sent = 0
        self.done = 0

    # ------------------------------------------------------------------ routing
    @staticmethod
    def _least(pool: list[Replica]) -> Replica:
        return min(pool, key=lambda r: r.outstanding)

    def arrive(self, rid: int) -> None:
        if np.isnan(self.arrival[rid]):
            self.arrival[rid] = self.env.now
        target = self._least(self.front)
        self.worker[rid] = target.index
        target.submit(rid)

    def first_token(self, rid: int, t: float, delay: float) -> None:
        if np.isnan(self.first[rid]):
            self.first[rid], self.first_delay[rid] = t, delay

    def handoff(self, rid: int, t: float) -> None:
        """A prefilled request's KV moves to a decode worker (disaggregated)."""
        nbytes = float(kv_bytes_per_sequence(self.arch, int(self.input_tokens[rid]), self.kv_dtype))
        ev = self.env.timeout(nbytes / self.handoff_rate)
        ev.callbacks.append(lambda _e, r=rid: self._least(self.back).submit(r))

    def finish(self, rid: int, t: float) -> None:
        self.finished[rid] = t
        self.done += 1
        if self.traffic.kind == "closed" and self.sent < len(self.prompt):
            nxt = self.sent
            self.sent += 1
            if self.traffic.think_s > 0:
                ev = self.env.timeout(self.traffic.think_s)
                ev.callbacks.append(lambda _e, r=nxt: self.arrive(r))
            else:
                self.arrive(nxt)

    def open_loop(self):
        for rid, t in enumerate(self.arrival):
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            self.arrive(rid)


@dataclass(frozen=True)
class Run:
    """What a simulation leaves: the request state (sim), the workers' step traces and the run's wall time."""

    sim: Simulation
    tables: tuple
    wall_s: float
    layout: Layout
    mode: str


def _check_plan(system: System, arch: ModelArch, plan: Grid, options: ServingOptions, i: int, o: int, cal) -> None:
    """A plan the steady state refuses (heads not divisible, data type unsupported, weights over HBM) is refused
    here too, with its reason: never simulated as if it ran."""
    row = serve(system, arch, plan.take([0]), Mix(max(1, i), max(1, o)), options, cal).iloc[0]
    if not row["valid"]:
        raise ValueError(f"{system.name} / {arch.name}: the plan cannot run: {row['invalid_reason']}")
    if not row["kv_fits"]:
        raise ValueError(f"{system.name} / {arch.name}: the plan does not fit HBM (weights and one micro-batch of KV "
                         f"cache: {row['hbm_used_bytes'] / row['hbm_capacity_bytes']:.0%} of HBM)")


def simulate(system: System, arch: ModelArch, plan: Grid, traffic: Traffic, shapes: Shapes = Shapes(),
             n_requests: int = 10_000, options: ServingOptions = ServingOptions(), layout: Layout = Layout(),
             seed: int = 0, cal=None, reqs: Requests | None = None) -> Run:
    """Run `n_requests` requests of `traffic` through the deployment (module doc); returns the raw run
    (metrics.summarize turns it into frames)."""
    options.validate()
    layout.validate()
    reqs = reqs if reqs is not None else draw(traffic, shapes, n_requests, seed)
    mode = Mode(options.mode)
    disagg = mode == Mode.DISAGGREGATED
    max_ctx = int(np.max(reqs.input_tokens + reqs.output_tokens))
    mean_ctx = float(np.mean(reqs.input_tokens + reqs.output_tokens / 2))
    roles = (("prefill", layout.prefill), ("decode", layout.decode)) if disagg else (("both", layout.replicas),)
    _check_plan(system, arch, plan, options, int(np.mean(reqs.input_tokens)), int(np.mean(reqs.output_tokens)), cal)
    kv_dtype = plan.kv_cache[0]
    sim = Simulation(reqs, traffic, kv_dtype, arch)
    tables = []
    for role, count in roles:
        sched = scheduler(options, layout, system, role, int(plan.da[0]))
        table = step_table.build(system, arch, plan, options, max_running=sched.max_running,
                                 token_budget=max(sched.token_budget, sched.prefill_tokens), max_context=max_ctx,
                                 mean_context=mean_ctx, spec=options.speculative, cal=cal)
        if layout.kv_blocks:
            table = dataclasses.replace(table, kv_tokens=layout.kv_blocks * sched.block_tokens)
        if table.kv_tokens < sched.block_tokens:
            raise ValueError(f"{system.name} / {arch.name} / {table.label}: the weights leave no HBM for the KV "
                             "cache (the plan does not fit)")
        if max_ctx > table.kv_tokens:
            raise ValueError(f"{system.name} / {arch.name} / {table.label}: a request of {max_ctx:,} tokens needs more "
                             f"KV cache than a worker's pool holds ({table.kv_tokens:,} tokens)")
        tables.append(table)
        pool = sim.back if role == "decode" else sim.front
        pool.extend(Replica(sim, i, table, sched, role) for i in range(count))
    sim.handoff_rate = handoff_bytes_per_s_per_chip(system) * tables[-1].chips
    t0 = time.perf_counter()
    if traffic.kind == "closed":
        first = min(traffic.clients, len(reqs))
        sim.sent = first
        for rid in range(first):
            sim.arrive(rid)
    else:
        sim.env.process(sim.open_loop())
    sim.env.run()
    return Run(sim, tuple(tables), time.perf_counter() - t0, layout, mode.value)


def one_plan(tp=1, da=1, ep=1, pp=1, compute=DType.BF16, **dtypes) -> Grid:
    """A Grid of one replica plan (its concurrency is not used by the simulation)."""
    return Grid.of(tp=tp, da=da, ep=ep, pp=pp, concurrency=da * pp, compute=compute, **dtypes)

