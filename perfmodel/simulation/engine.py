"""One serving replica's engine as a SimPy process: continuous batching, a token budget, paged KV, preemption.

Each engine step (a scheduler iteration) the engine (vLLM V1's scheduler, as its docs describe it):
    1. gives every running sequence that is decoding one token of the step's token budget B (all of them:
       decodes are never starved), then the prompts being prefilled their next chunk, in admission order;
    2. admits waiting requests first come first served while fewer than S_max run, budget is left and the
       KV pool has blocks for their first chunk (a request whose shared prefix is cached skips those
       tokens: prefix caching);
    3. takes KV blocks (16 tokens) for the tokens it schedules; when the pool cannot hold the step it
       evicts cached prefixes no running sequence uses (least recently used first), then preempts the
       most recently admitted sequence (its blocks freed; it re-prefills its prompt and the tokens it has
       generated when readmitted: vLLM's recompute preemption);
    4. prices the step with the step table (step_table.py: T = T_d(b, c) + T_f(n, s, c') + tau).
A prefill-first engine (SGLang; steady_state's "aggregated" mode) runs a step of prefill alone whenever a
prompt waits or is being prefilled, and decodes only when none does.

Between events nothing changes but the contexts: while every running sequence is decoding and no waiting
request could be admitted, the engine advances n steps in one SimPy timeout, n = the steps until the first
sequence finishes or the KV pool fills; each of the n steps is priced at the batch's mean context at the
middle of the run (T_d is affine in the context between grid points). An arrival the engine could admit
interrupts the run at the end of the step in progress. This keeps the events per request O(1) while every
step boundary stays exact.

Roles: "both" (aggregated), "prefill" (a disaggregated prefill worker: a request leaves when its prompt is
prefilled and its KV is handed to a decode worker) and "decode" (requests arrive prefilled).

Does not: route (deployment.py), draw traffic (traffic.py) or compute statistics (metrics.py).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np
import simpy

BLOCK_TOKENS = 16  # vLLM's default KV block size (tokens per page)


@dataclass(frozen=True)
class Scheduler:
    """The engine's scheduling limits: S_max sequences, B tokens per step, prefill-first or mixed steps,
    and kappa steps from a prompt's last prefill step to its first token at the client."""

    max_running: int
    token_budget: int
    prefill_first: bool
    first_token_steps: float = 0.0
    prefill_tokens: int = 1 << 40  # prompt tokens one step may prefill (a chunked-prefill cap below the budget)
    block_tokens: int = BLOCK_TOKENS


class Replica:
    """A replica's engine (module doc). Request state lives in the simulation's arrays (sim.*)."""

    def __init__(self, sim, index: int, table, sched: Scheduler, role: str = "both"):
        self.sim, self.env, self.index, self.t, self.s, self.role = sim, sim.env, index, table, sched, role
        self.blocks = max(1, table.kv_tokens // sched.block_tokens)
        self.waiting: deque[int] = deque()
        self.ids = np.empty(0, dtype=np.int64)
        self.ctx = np.empty(0)  # tokens in the KV cache (prompt computed + generated)
        self.pre = np.empty(0)  # prompt tokens still to prefill
        self.left = np.empty(0)  # output tokens still to generate
        self.shared = np.empty(0)  # tokens of a cached shared prefix (blocks held by the prefix cache)
        self.cache: OrderedDict[int, list] = OrderedDict()  # prefix id -> [blocks, users, ready]
        self.cache_blocks = 0
        self.used = 0  # blocks the running sequences hold privately (cached prefixes are in cache_blocks)
        self.wake: simpy.Event | None = None
        self.macro = False  # in a multi-step run that an admissible arrival may cut short
        self.proc = self.env.process(self.run())
        self.trace: list[tuple[float, int, int]] = []  # (time, waiting, running) after each step

    # ------------------------------------------------------------------ arrivals
    @property
    def outstanding(self) -> int:
        return len(self.waiting) + len(self.ids)

    def submit(self, rid: int, front: bool = False) -> None:
        (self.waiting.appendleft if front else self.waiting.append)(rid)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()
        elif self.macro and len(self.ids) < self.s.max_running:
            self.macro = False
            self.proc.interrupt()

    # ------------------------------------------------------------------ KV blocks
    def _used(self) -> int:
        """Blocks the running sequences hold privately (recomputed after a change of the batch)."""
        if self.used is None:
            self.used = self._blocks(self.ctx, self.shared)
        return self.used

    def _blocks(self, ctx: np.ndarray, shared: np.ndarray) -> int:
        b = self.s.block_tokens
        return int(np.ceil(np.maximum(ctx - shared, 0.0) / b).sum())

    def _room(self, need: int) -> bool:
        """Free `need` blocks, evicting unused cached prefixes (least recently used first) if that suffices."""
        free = self.blocks - self.cache_blocks - self._used()
        if free >= need:
            return True
        idle = [(k, e[0]) for k, e in self.cache.items() if e[1] == 0]
        if free + sum(b for _, b in idle) < need:
            return False
        for k, b in idle:
            if free >= need:
                break
            del self.cache[k]
            self.cache_blocks -= b
            free += b
        return True

    def _release(self, i: np.ndarray) -> None:
        """Drop running rows `i` (finished, handed off or preempted); their prefixes lose a user."""
        sim = self.sim
        for rid in self.ids[i]:
            pid = int(sim.prefix_id[rid])
            if pid >= 0 and sim.cached[rid] >= 0 and pid in self.cache:
                self.cache[pid][1] -= 1
        keep = np.ones(len(self.ids), dtype=bool)
        keep[i] = False
        self.ids, self.ctx, self.pre, self.left, self.shared = (
            a[keep] for a in (self.ids, self.ctx, self.pre, self.left, self.shared))
        self.used = None

    def _admit(self, rid: int, budget: int, grow: int) -> tuple[bool, int, int]:
        """Admit `rid` if its first chunk's blocks fit beside the `grow` blocks the step already takes;
        returns (admitted, prompt tokens scheduled, blocks taken)."""
        sim, b = self.sim, self.s.block_tokens
        prompt = int(sim.prompt[rid])  # tokens to (re)compute: input (+ generated when preempted)
        done = prompt if self.role == "decode" else 0  # a decode worker receives the prompt's KV
        shared, hit, new_entry = 0, -1, None
        pid, ptok = int(sim.prefix_id[rid]), int(sim.prefix_tokens[rid])
        if pid >= 0 and ptok > 0 and self.role != "decode":
            e = self.cache.get(pid)
            if e is not None and e[2]:
                shared = done = ptok
                hit = ptok
            elif e is None:
                shared, new_entry = ptok, [math.ceil(ptok / b), 0, False]
        chunk = 0 if self.role == "decode" else min(prompt - done, budget)
        need = math.ceil(max(done + chunk - shared, 0) / b) + (new_entry[0] if new_entry else 0)
        if not self._room(need + grow):
            return False, 0, 0
        if new_entry is not None:
            self.cache[pid] = new_entry
            self.cache_blocks += new_entry[0]
            hit = 0
        if hit >= 0:
            self.cache[pid][1] += 1
            self.cache.move_to_end(pid)
        sim.cached[rid] = hit
        if hit > 0:
            sim.hit_tokens[rid] += hit
        self.ids = np.append(self.ids, rid)
        self.ctx = np.append(self.ctx, float(done))
        self.pre = np.append(self.pre, float(prompt - done))
        self.left = np.append(self.left, float(sim.left[rid]))
        self.shared = np.append(self.shared, float(shared))
        self.used = self._used() + need - (new_entry[0] if new_entry else 0)
        if self.role == "decode":
            step = self.t.step(len(self.ids), float(done), 0, 0, 0.0)
            sim.first_token(rid, self.env.now, self.s.first_token_steps * step)
        return True, chunk, need

    # ------------------------------------------------------------------ one step
    def _grow(self, sched: np.ndarray) -> int:
        return self._blocks(self.ctx + sched, self.shared) - self._used()

    def _fill(self, sched: np.ndarray, budget: int) -> np.ndarray:
        """Prefill chunks of the running prompts, preemption while the pool cannot hold the step, then
        admissions (module doc, steps 1-3)."""
        budget = min(budget, self.s.prefill_tokens)
        for j in np.flatnonzero(self.pre > 0):
            take = min(self.pre[j], max(budget, 0))
            sched[j] = take
            budget -= int(take)
        grow = self._grow(sched)
        while len(self.ids) and not self._room(grow):
            self._preempt()
            sched = sched[:-1]
            grow = self._grow(sched)
        while self.waiting and len(self.ids) < self.s.max_running and (budget > 0 or self.role == "decode"):
            ok, took, need = self._admit(self.waiting[0], budget, grow)
            if not ok:
                break
            self.waiting.popleft()
            tok = 1.0 if self.role == "decode" else float(took)  # a handed-off request decodes at once
            sched = np.append(sched, tok)
            budget -= int(tok)
            grow += need
        return sched

    def _schedule(self) -> np.ndarray:
        """Tokens scheduled per running row this step."""
        if self.role == "prefill":
            return self._fill(np.zeros(len(self.ids)), self.s.token_budget)
        if self.s.prefill_first and self.role == "both":  # a prefill step whenever prompts wait; else decode
            sched = self._fill(np.zeros(len(self.ids)), self.s.token_budget)
            if (sched > 0).any():
                return sched
        sched = np.where(self.pre > 0, 0.0, 1.0)
        return self._fill(sched, self.s.token_budget - int(sched.sum()))

    def _preempt(self) -> None:
        sim = self.sim
        rid = int(self.ids[-1])
        pid = int(sim.prefix_id[rid])
        sim.left[rid] = self.left[-1]
        sim.prompt[rid] = int(sim.input_tokens[rid] + sim.output_tokens[rid] - math.ceil(self.left[-1]))
        e = self.cache.get(pid) if pid >= 0 else None
        self._release(np.array([len(self.ids) - 1]))
        if e is not None and not e[2] and e[1] == 0:  # the prefix it was filling is incomplete: drop it
            del self.cache[pid]
            self.cache_blocks -= e[0]
        sim.preemptions[rid] += 1
        self.waiting.appendleft(rid)

    def _price(self, sched: np.ndarray) -> float:
        if not (self.pre > 0).any():  # a decode-only step
            return self.t.step(len(self.ids), float(self.ctx.mean()), 0, 0, 0.0)
        dec = (self.pre == 0) & (sched > 0)
        pre = (self.pre > 0) & (sched > 0)
        b = int(dec.sum())
        c_d = float(self.ctx[dec].mean()) if b else 0.0
        n = float(sched[pre].sum())
        c_f = float((self.ctx[pre] * sched[pre]).sum() / n) if n else 0.0
        return self.t.step(b, c_d, n, int(pre.sum()), c_f)

    def _advance(self, sched: np.ndarray, end: float) -> None:
        """Apply one step of the schedule `sched` ending at `end` (decode rows advance E tokens)."""
        sim = self.sim
        was_pre = self.pre > 0
        e = self.t.tokens_per_step
        self.used = None
        self.ctx = self.ctx + np.where(was_pre, sched, sched * e)
        self.left = self.left - np.where(was_pre, 0.0, sched * e)
        self.pre = self.pre - np.where(was_pre, sched, 0.0)
        done_pre = was_pre & (self.pre <= 0)
        if done_pre.any() and self.role != "decode":  # the engine's steps to the client are decode steps
            after = self.t.step(int((self.pre <= 0).sum()), float(self.ctx[self.pre <= 0].mean()), 0, 0, 0.0)
        for j in np.flatnonzero(done_pre):
            rid = int(self.ids[j])
            pid = int(sim.prefix_id[rid])
            if pid >= 0 and pid in self.cache and self.shared[j] > 0:
                self.cache[pid][2] = True  # the prefix is computed: later requests hit it
            if self.role != "decode":
                sim.first_token(rid, end, self.s.first_token_steps * after)
            self.left[j] -= 1.0  # the prefill's last step emits the first token
        out = np.flatnonzero((self.left <= 1e-9) | (done_pre & (self.role == "prefill")))
        for j in out:
            rid = int(self.ids[j])
            if self.role == "prefill":
                sim.left[rid] = self.left[j]
                sim.handoff(rid, end)
            else:
                sim.finish(rid, end)
        if len(out):
            self._release(out)

    def _decode_only(self, steps: int, end: float) -> None:
        """`steps` decode steps of every running sequence (no prompt work), ending at `end`."""
        inc = steps * self.t.tokens_per_step
        self.ctx += inc
        self.left -= inc
        self.used = None
        out = np.flatnonzero(self.left <= 1e-9)
        for j in out:
            self.sim.finish(int(self.ids[j]), end)
        if len(out):
            self._release(out)

    def _decode_run(self) -> int:
        """Steps the engine may take without a scheduling decision (module doc): 0 when it must decide (prompt
        work, an admissible waiting request, or a KV pool too full to be sure of the next step)."""
        if self.role == "prefill" or not len(self.ids) or (self.waiting and len(self.ids) < self.s.max_running):
            return 0
        if (self.pre > 0).any():
            return 0
        e = self.t.tokens_per_step
        n = int(np.ceil(self.left / e).min())
        m, b = len(self.ids), self.s.block_tokens
        free = self.blocks - self.cache_blocks
        bound = int(((free - m) * b - float(np.maximum(self.ctx - self.shared, 0).sum())) // (m * e))
        return max(0, min(n, bound))

    def run(self):
        env = self.env
        while True:
            if not self.waiting and not len(self.ids):
                self.wake = env.event()
                yield self.wake
                self.wake = None
                continue
            n, sched = self._decode_run(), None
            if n:  # decode only: priced at the batch's mean context half-way through the n steps
                mid = float(self.ctx.mean()) + 0.5 * (n - 1) * self.t.tokens_per_step
                dt = self.t.step(len(self.ids), mid, 0, 0, 0.0)
            else:
                sched, n = self._schedule(), 1
                if not (sched > 0).any():  # nothing fits (a prompt larger than the pool): wait for a change
                    self.wake = env.event()
                    yield self.wake
                    self.wake = None
                    continue
                dt = self._price(sched)
            start = env.now
            done = n
            try:
                self.macro = n > 1
                yield env.timeout(n * dt)
            except simpy.Interrupt:  # an admissible arrival: stop at the end of the step in progress
                done = min(n, int((env.now - start) / dt) + 1)
                rest = start + done * dt - env.now
                if rest > 0:
                    yield env.timeout(rest)
            self.macro = False
            if sched is None:
                self._decode_only(done, env.now)
            else:
                self._advance(sched, env.now)
            self.trace.append((env.now, len(self.waiting), len(self.ids)))
