"""A serving engine under a closed-loop benchmark: who runs, who waits, and when the first token arrives.

serving/steady_state.py prices the GPU work of a replica at C sequences in flight and an idle queue.
A measured benchmark adds what the engine and the client do around that work (a serving-engine
profile, catalog/serving_engines.py, and a client protocol). Per replica (times in s):

    running      S = min(C, d_a S_max, S_kv)  sequences decoding at once: the engine's cap per attention-DP
                                              rank (max_num_seqs, max_batch_size: each rank schedules its own
                                              batch) and its KV allotment (kv_memory_fraction of
                                              HBM, pages at the mean length I + O/2); C - S wait in its queue
    host time    tau = tau_0 + tau_1 S / d_a  the engine's host time per step: a fixed part and a part per
                                              sequence each attention-DP rank's scheduler handles (scheduling,
                                              sampling, detokenising and streaming each sequence's token)
    engine step  t_s = t_d + tau              the GPU's decode step plus the engine's host time per step
    TPOT         TPOT = TPOT_gpu(S) + tau     (steady_state's TPOT at S, prefill interleaved)
    first token  T_0 = kappa t_s + t_s / 2 + (L_f - t_f) + T_p
                                              the running step ends (t_s / 2), the prompt's prefill waits and
                                              runs (T_p, below), passes the remaining pipeline stages
                                              (L_f - t_f) and kappa engine steps until the token reaches the
                                              client (scheduling at a step boundary, asynchronous output
                                              processing, detokenising, streaming)
    prefill      T_p = mean time from a prompt's arrival to the end of its prefill, each attention-DP
    queue        rank (and prefill worker) a FIFO server of c clients (c = ceil(S / d_a); disaggregated
                 ceil(C / (n_p d_a))), prompt j costs t_f I_j / I; the protocol's load: the first c prompts
                 arrive at once, each client sends its next prompt when its request ends (T_0 + (O_j - 1)
                 TPOT later), W waves in all, lengths I_j, O_j uniform in [ratio L, L] (fixed seed).
                 Each wave is one vectorised max-plus scan over its arrivals a_j sorted:
                     f_j = P_j + max(f_prev, max_{i <= j} (a_i - P_{i-1})),  P_j = sum_{i <= j} p_i
                 (f_j the end of prompt j's prefill, f_prev the server's last end): no loop per row
    prefill      how prefill and decode share the GPU (the profile's prefill_first):
    first        0 (vLLM, TRT-LLM): prefill chunks ride in decode steps; a request decodes from its own
                   prefill's end and TPOT is the steady state's (prefill interleaved)
                 1 (SGLang): a prefill batch runs alone and first; decoding resumes only when no prompt
                   waits, so request j decodes from the end B_j of its busy period and pauses for the
                   W_j prefill work of its cycle outside that period (the other clients' next prompts):
                     TPOT_j = t_s + (B_j - f_j + W_j) / (O_j - 1)
                   a burst of prompts is prefilled before anyone decodes, clients finish together and
                   the next wave is a burst again (longer TTFT, shorter TPOT, the same work)
    queue        T_q = (C - S) / S x (T_0 + (O - 1) TPOT)    closed loop: a waiting request is admitted when
                                              one of the S running finishes (each holds its slot T_0 + (O-1) TPOT)
    TTFT         agg: T_0 + T_q;  disagg: T_0 with t_s of the decode pool and L_f of the prefill pool
                 (with the KV hand-off)
    a request    e2e = T_1 + (O - 1) T_2     (T_1 its TTFT, T_2 its TPOT, however they were priced or measured)
    throughput   y = C O / e2e / G           output tokens/s per GPU of a closed loop of C clients on G GPUs:
                                              each client finishes O tokens every e2e (the frontier's y)
    saturated    a prefill-first server held at its running cap S by a client that always has more waiting
    server       (one compiled graph per step on Neuron: a context encoding or a decode, never both): over a
                 long run each request costs its own prefill t_f and O decode steps shared by S, so
                     X = S / (S t_f + O t_d)          requests/s per replica (whatever the client's queue)
                 and each request decodes while the others' prefills arrive at X, each pausing it t_f:
                     TPOT_sat = t_d + S t_f / O       (t_d / (1 - X t_f)); its TTFT is the client's queue
    open loop    the same server below saturation, requests arriving at R_a per replica (rho = R_a t_f < 1, the
    (prefill-    share of time prefilling): a request decodes while the others' prefills pause it, and its prompt
    first)       waits for the running decode step, then for the prompts ahead (Kingman's G/D/1 queue, arrivals
                 of squared coefficient of variation c_a: 1 Poisson, 0 evenly spaced), then its own prefill:
                     TPOT_open = t_d / (1 - rho)
                     TTFT_open = (1 - rho) t_d / 2 + c_a rho t_f / (2 (1 - rho)) + t_f

Formulas live here once (sympy), evaluated lambdified over arrays; `latex_table()` shows them.
Does not: price the GPU work (steady_state.py) or read files (catalog/serving_engines.py).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import sympy as sp

C, S_max, S_kv, S = sp.symbols("C S_max S_kv S", positive=True)
I, O, W = sp.symbols("I O W", positive=True)
t_d, tau, t_f, L_f, kappa, tpot_gpu, T_p = sp.symbols("t_d tau t_f L_f kappa TPOT_gpu T_p", nonnegative=True)
tau_0, tau_1 = sp.symbols("tau_0 tau_1", nonnegative=True)
d_a = sp.Symbol("d_a", positive=True)
T_1, T_2, G = sp.symbols("T_1 T_2 G", positive=True)  # a request's TTFT and TPOT as given; GPUs

RUNNING = sp.Min(C, d_a * S_max, sp.floor(S_kv))
HOST = tau_0 + tau_1 * S / d_a
STEP = t_d + tau
TPOT = tpot_gpu + tau
FIRST_TOKEN = kappa * STEP + STEP / 2 + (L_f - t_f) + T_p
QUEUE = sp.Max(C - S, 0) / S * (FIRST_TOKEN + (O - 1) * TPOT)
TTFT_AGG = FIRST_TOKEN + QUEUE
TTFT_DISAGG = FIRST_TOKEN
E2E = T_1 + (O - 1) * T_2
THROUGHPUT = C * O / E2E / G
SATURATED_RATE = S / (S * t_f + O * t_d)
SATURATED_TPOT = t_d + S * t_f / O
R_a = sp.Symbol("R_a", positive=True)
c_a = sp.Symbol("c_a", nonnegative=True)
RHO_OPEN = R_a * t_f
OPEN_TPOT = t_d / (1 - RHO_OPEN)
OPEN_TTFT = (1 - RHO_OPEN) * t_d / 2 + c_a * RHO_OPEN * t_f / (2 * (1 - RHO_OPEN)) + t_f
SEED = 20260423  # the protocol's lengths are drawn with this fixed seed: results repeat exactly

MEANINGS = {
    C: ("requests in flight per replica (the benchmark's concurrency)", "1"),
    S_max: ("the engine's running-batch cap per attention-DP rank (max_num_seqs / max_batch_size)", "1"),
    S_kv: ("sequences the engine's KV allotment holds at the mean length I + O/2", "1"),
    S: ("sequences decoding at once", "1"), I: ("mean input tokens", "1"), O: ("mean output tokens", "1"),
    W: ("the protocol's waves (requests / concurrency)", "1"),
    t_d: ("GPU decode step", "s"), tau: ("the engine's host time per step", "s"),
    tau_0: ("the engine's fixed host time per step (step_cost)", "s"),
    tau_1: ("the engine's host time per step per sequence of an attention-DP rank (step_cost_per_sequence)", "s"),
    d_a: ("attention data-parallel ranks of the replica (each schedules S / d_a sequences)", "1"),
    t_f: ("one prompt's prefill on one attention-DP rank (a pipeline stage)", "s"),
    L_f: ("prefill latency through all stages (+ KV hand-off when disaggregated)", "s"),
    kappa: ("engine steps from prefill to the first token at the client", "1"),
    tpot_gpu: ("steady-state time per output token at S", "s"),
    T_p: ("mean arrival-to-prefill-end time of a prompt under the protocol's load (prefill queue)", "s"),
    T_1: ("a request's time to first token, as priced or measured", "s"),
    T_2: ("a request's time per output token, as priced or measured", "s"),
    G: ("GPUs of the deployment (a replica's, or both pools' with their worker counts)", "1"),
    R_a: ("requests arriving per second per replica (an open loop's rate)", "1/s"),
    c_a: ("squared coefficient of variation of the arrivals' gaps (1 Poisson, 0 evenly spaced)", "1"),
}


@lru_cache(maxsize=None)
def _fn(name: str):
    expr = {"running": RUNNING, "host": HOST, "tpot": TPOT, "first_token": FIRST_TOKEN, "ttft_agg": TTFT_AGG,
            "ttft_disagg": TTFT_DISAGG, "e2e": E2E, "throughput": THROUGHPUT,
            "saturated_rate": SATURATED_RATE, "saturated_tpot": SATURATED_TPOT, "open_tpot": OPEN_TPOT,
            "open_ttft": OPEN_TTFT}[name]
    args = sorted(expr.free_symbols, key=lambda s: s.name)
    return args, sp.lambdify(args, expr, "numpy")


def evaluate(name: str, **values) -> np.ndarray:
    """One formula over arrays (keyword per symbol name, broadcast)."""
    args, fn = _fn(name)
    missing = [a.name for a in args if a.name not in values]
    if missing:
        raise TypeError(f"closed_loop.{name}: missing {', '.join(missing)}")
    arrs = [np.asarray(values[a.name], dtype=float) for a in args]
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    out = np.asarray(fn(*[np.broadcast_to(a, shape) for a in arrs]), dtype=float)
    return np.broadcast_to(out, shape).copy()


def running(concurrency, max_running, kv_slots, multiple=1, da=1) -> np.ndarray:
    """S = min(C, d_a S_max, S_kv), rounded down to a multiple of `multiple` (pp x d_a), at least `multiple`."""
    s = evaluate("running", C=concurrency, S_max=max_running, S_kv=np.maximum(kv_slots, 1), d_a=da)
    m = np.asarray(multiple, dtype=float)
    return np.maximum(np.floor(s / m) * m, m)


def _busy_periods(a: np.ndarray, ends: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For prompts in arrival order (rows x prompts): the end of the prefill server's busy period holding
    each prompt (the server idles after prompt k when the next arrives after k ends), and the prefill work
    of the wave outside that period (the other clients' prompts a prefill-first engine runs while this
    request decodes)."""
    n, c = ends.shape
    k = np.broadcast_to(np.arange(c), (n, c))
    idle = np.ones((n, c), dtype=bool)
    idle[:, :-1] = a[:, 1:] > ends[:, :-1]
    last = np.minimum.accumulate(np.where(idle, k, c - 1)[:, ::-1], axis=1)[:, ::-1]  # period's last prompt
    first = np.maximum.accumulate(np.where(np.roll(idle, 1, axis=1) | (k == 0), k, 0), axis=1)  # its first
    done = np.cumsum(cost, axis=1)
    own = np.take_along_axis(done, last, axis=1) - np.take_along_axis(done - cost, first, axis=1)
    return np.take_along_axis(ends, last, axis=1), done[:, -1:] - own


def _waves(c: int, p: np.ndarray, cycle_fixed: np.ndarray, tpot: np.ndarray, o_nominal: np.ndarray,
           waves: int, ratio: float, step: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean arrival-to-prefill-end time and mean TPOT of rows that share the client count c (arrays over
    rows). The lengths drawn depend on (SEED, c) only, so a row's result does not depend on the rows beside
    it. Rows with `first` (a prefill-first engine) decode only when no prompt waits: a request's decode
    starts when its busy period ends and pauses for the other clients' prompts of its cycle."""
    n = len(p)
    draws = np.random.default_rng([SEED, c]).uniform(ratio, 1.0, (waves, 2, c))
    arrivals, free, total, tpots = np.zeros((n, c)), np.zeros(n), np.zeros(n), np.zeros(n)
    mean = (1.0 + ratio) / 2.0
    for w in range(waves):  # W steps of arrays (rows x clients): the protocol's waves, not configurations
        order = np.argsort(arrivals, axis=1, kind="stable")
        a = np.take_along_axis(arrivals, order, axis=1)
        cost = p[:, None] * draws[w, 0][order] / mean  # prompt lengths follow their clients
        ends = np.cumsum(cost, axis=1)
        ends = ends + np.maximum(free[:, None], np.maximum.accumulate(a - (ends - cost), axis=1))
        total += (ends - a).mean(axis=1)
        free = ends[:, -1]
        outs = draws[w, 1][order] * o_nominal[:, None] - 1.0  # decode steps after the first token
        period_end, others = _busy_periods(a, ends, cost)
        # prefill-first: (busy period's rest + decode steps + the other prompts' prefills) / tokens
        tpot_j = np.where(first[:, None], (period_end - ends + others) / np.maximum(outs, 1.0) + step[:, None],
                          tpot[:, None])
        tpots += tpot_j.mean(axis=1)
        back = np.empty_like(ends)
        np.put_along_axis(back, order, ends + cycle_fixed[:, None] + outs * tpot_j, axis=1)  # next arrivals
        arrivals = back
    return total / waves, tpots / waves


def prefill_queue(clients, t_f, after_prefill, tpot, o_mean, waves: int, ratio: float, step=None,
                  prefill_first=None) -> tuple[np.ndarray, np.ndarray]:
    """(T_p, TPOT) per row (module doc): `clients` per prefill server, `after_prefill` the time from a
    prompt's prefill end to its first decode step (pipeline stages, steps to the first token), `tpot` the
    steady state's (prefill interleaved), o_mean the mean output tokens; rows with `prefill_first` (an
    engine that runs prefill batches alone and first) take TPOT from the queue instead, with `step` the
    pure decode step. Rows with the same client count are one set of array operations."""
    clients = np.asarray(clients, dtype=float)
    step = tpot if step is None else step
    flag = np.zeros(clients.shape) if prefill_first is None else prefill_first
    args = [np.broadcast_to(np.asarray(v, dtype=float), clients.shape)
            for v in (t_f, after_prefill, tpot, o_mean, step, flag)]
    wait, out = np.full(clients.shape, np.nan), np.full(clients.shape, np.nan)
    o_nominal = args[3] / ((1.0 + ratio) / 2.0)
    for c in np.unique(clients):  # one vectorised block per distinct client count
        sel = clients == c
        wait[sel], out[sel] = _waves(int(c), args[0][sel], args[1][sel], args[2][sel], o_nominal[sel], int(waves),
                                     ratio, args[4][sel], args[5][sel] > 0)
    return wait, out


def prefill_wait(clients, t_f, after_prefill, tpot, o_mean, waves: int, ratio: float) -> np.ndarray:
    """T_p per row of an engine that mixes prefill chunks into decode steps (prefill_queue)."""
    return prefill_queue(clients, t_f, after_prefill, tpot, o_mean, waves, ratio)[0]


def latex_table() -> pd.DataFrame:
    rows = [("running", RUNNING), ("host time per step", HOST), ("engine step", STEP), ("TPOT", TPOT),
            ("first token", FIRST_TOKEN), ("queue", QUEUE), ("TTFT (agg)", TTFT_AGG), ("TTFT (disagg)", TTFT_DISAGG),
            ("end to end", E2E), ("throughput per GPU", THROUGHPUT),
            ("saturated prefill-first server: requests/s", SATURATED_RATE), ("saturated server: TPOT", SATURATED_TPOT),
            ("open loop, prefill-first: TPOT", OPEN_TPOT), ("open loop, prefill-first: TTFT", OPEN_TTFT)]
    return pd.DataFrame({"quantity": [r[0] for r in rows], "latex": [sp.latex(r[1]) for r in rows]})


def symbol_table() -> pd.DataFrame:
    return pd.DataFrame([{"symbol": sp.latex(s), "meaning": m, "unit": u} for s, (m, u) in MEANINGS.items()])
