"""A serving engine under a closed-loop benchmark: who runs, who waits, and when the first token arrives.

serving/steady_state.py prices the GPU work of a replica at C sequences in flight and an idle queue.
A measured benchmark adds what the engine and the client do around that work (a serving-engine
profile, catalog/serving_engines.py, and a client protocol). Per replica (times in s):

    running      S = min(C, S_max, S_kv)      sequences decoding at once: the engine's cap (max_num_seqs,
                                              max_batch_size) and its KV allotment (kv_memory_fraction of
                                              HBM, pages at the mean length I + O/2); C - S wait in its queue
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
    queue        T_q = (C - S) / S x (T_0 + (O - 1) TPOT)    closed loop: a waiting request is admitted when
                                              one of the S running finishes (each holds its slot T_0 + (O-1) TPOT)
    TTFT         agg: T_0 + T_q;  disagg: T_0 with t_s of the decode pool and L_f of the prefill pool
                 (with the KV hand-off)

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

RUNNING = sp.Min(C, S_max, sp.floor(S_kv))
STEP = t_d + tau
TPOT = tpot_gpu + tau
FIRST_TOKEN = kappa * STEP + STEP / 2 + (L_f - t_f) + T_p
QUEUE = sp.Max(C - S, 0) / S * (FIRST_TOKEN + (O - 1) * TPOT)
TTFT_AGG = FIRST_TOKEN + QUEUE
TTFT_DISAGG = FIRST_TOKEN
SEED = 20260423  # the protocol's lengths are drawn with this fixed seed: results repeat exactly

MEANINGS = {
    C: ("requests in flight per replica (the benchmark's concurrency)", "1"),
    S_max: ("the engine's running-batch cap (max_num_seqs / max_batch_size)", "1"),
    S_kv: ("sequences the engine's KV allotment holds at the mean length I + O/2", "1"),
    S: ("sequences decoding at once", "1"), I: ("mean input tokens", "1"), O: ("mean output tokens", "1"),
    W: ("the protocol's waves (requests / concurrency)", "1"),
    t_d: ("GPU decode step", "s"), tau: ("the engine's host time per step", "s"),
    t_f: ("one prompt's prefill on one attention-DP rank (a pipeline stage)", "s"),
    L_f: ("prefill latency through all stages (+ KV hand-off when disaggregated)", "s"),
    kappa: ("engine steps from prefill to the first token at the client", "1"),
    tpot_gpu: ("steady-state time per output token at S", "s"),
    T_p: ("mean arrival-to-prefill-end time of a prompt under the protocol's load (prefill queue)", "s"),
}


@lru_cache(maxsize=None)
def _fn(name: str):
    expr = {"running": RUNNING, "tpot": TPOT, "first_token": FIRST_TOKEN, "ttft_agg": TTFT_AGG,
            "ttft_disagg": TTFT_DISAGG}[name]
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


def running(concurrency, max_running, kv_slots, multiple=1) -> np.ndarray:
    """S = min(C, S_max, S_kv), rounded down to a multiple of `multiple` (pp x d_a), at least `multiple`."""
    s = evaluate("running", C=concurrency, S_max=max_running, S_kv=np.maximum(kv_slots, 1))
    m = np.asarray(multiple, dtype=float)
    return np.maximum(np.floor(s / m) * m, m)


def _waves(c: int, p: np.ndarray, cycle_fixed: np.ndarray, tpot: np.ndarray, o_nominal: np.ndarray,
           waves: int, ratio: float) -> np.ndarray:
    """Mean arrival-to-prefill-end time of rows that share the client count c (arrays over rows). The
    lengths drawn depend on (SEED, c) only, so a row's result does not depend on the rows beside it."""
    n = len(p)
    draws = np.random.default_rng([SEED, c]).uniform(ratio, 1.0, (waves, 2, c))
    arrivals, free, total = np.zeros((n, c)), np.zeros(n), np.zeros(n)
    mean = (1.0 + ratio) / 2.0
    for w in range(waves):  # W steps of arrays (rows x clients): the protocol's waves, not configurations
        order = np.argsort(arrivals, axis=1, kind="stable")
        a = np.take_along_axis(arrivals, order, axis=1)
        cost = p[:, None] * draws[w, 0][order] / mean  # prompt lengths follow their clients
        ends = np.cumsum(cost, axis=1)
        ends = ends + np.maximum(free[:, None], np.maximum.accumulate(a - (ends - cost), axis=1))
        total += (ends - a).mean(axis=1)
        free = ends[:, -1]
        back = np.empty_like(ends)
        np.put_along_axis(back, order, ends, axis=1)  # prefill ends in client order
        arrivals = back + cycle_fixed[:, None] + (draws[w, 1] * o_nominal[:, None] - 1.0) * tpot[:, None]
    return total / waves


def prefill_wait(clients, t_f, after_prefill, tpot, o_mean, waves: int, ratio: float) -> np.ndarray:
    """T_p per row (module doc): `clients` per prefill server, `after_prefill` the time from a prompt's
    prefill end to its first decode step (pipeline stages, steps to the first token), o_mean the mean
    output tokens. Rows with the same client count are one set of array operations."""
    clients = np.asarray(clients, dtype=float)
    args = [np.broadcast_to(np.asarray(v, dtype=float), clients.shape) for v in (t_f, after_prefill, tpot, o_mean)]
    out = np.full(clients.shape, np.nan)
    o_nominal = args[3] / ((1.0 + ratio) / 2.0)
    for c in np.unique(clients):  # one vectorised block per distinct client count
        sel = clients == c
        out[sel] = _waves(int(c), args[0][sel], args[1][sel], args[2][sel], o_nominal[sel], int(waves), ratio)
    return out


def latex_table() -> pd.DataFrame:
    rows = [("running", RUNNING), ("engine step", STEP), ("TPOT", TPOT), ("first token", FIRST_TOKEN),
            ("queue", QUEUE), ("TTFT (agg)", TTFT_AGG), ("TTFT (disagg)", TTFT_DISAGG)]
    return pd.DataFrame({"quantity": [r[0] for r in rows], "latex": [sp.latex(r[1]) for r in rows]})


def symbol_table() -> pd.DataFrame:
    return pd.DataFrame([{"symbol": sp.latex(s), "meaning": m, "unit": u} for s, (m, u) in MEANINGS.items()])
