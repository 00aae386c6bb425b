"""The serving engine and the benchmark client around the InferenceX rows' GPU work.

inferencex.py prices each row's plan with serving/steady_state.py; this module adds, per row's
backend, the serving-engine profile (catalog/serving_engines.py: token budget, running cap, KV
allotment, host time per step, steps to the first token) and the InferenceX client protocol (a
burst of C requests, then W - 1 more waves; lengths drawn from [0.8 L, L]) through
serving/closed_loop.py's formulas:

    mean_mix(isl, osl)        the protocol's mean lengths (1 + ratio) / 2 x nominal
    slots(...)                S = min(C, S_max, S_kv) sequences decoding at once per replica
    closed_loop(...)          TTFT and TPOT of every row (agg and disagg), vectorised

`without_fits=True` zeroes the fitted parameters (step_cost, step_cost_per_sequence, first_token_steps): the prediction
from the engines' documented defaults alone, reported beside the fitted one.
Does not: price GPU work or read the corpus.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.catalog import serving_engines
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.serving import closed_loop as cl
from perfmodel.serving.steady_state import Mix

PROTOCOL = "inferencex"
FITTED = ("step_cost", "step_cost_per_sequence", "first_token_steps", "first_token_steps_disagg")
TERMS = ("backend", "agg", "total", "c_rep", "s_rep", "d_a_pre", "d_a_dec", "n_pre", "isl", "osl", "t_d", "tpot_gpu",
         "t_f", "l_f")


def protocol() -> serving_engines.Profile:
    return serving_engines.protocol(PROTOCOL)


def mean_mix(isl: int, osl: int) -> Mix:
    """Mean request lengths under the protocol: each length uniform in [ratio L, L]."""
    m = (1.0 + protocol()["length_range_ratio"]) / 2.0
    return Mix(max(1, int(round(isl * m))), max(1, int(round(osl * m))))


def known(backends: pd.Series, replaced: Replacements = NONE) -> pd.Series:
    return backends.isin(list(serving_engines.engines(replaced=replaced)))


def params(backends: pd.Series, without_fits: bool = False, overrides: dict | None = None,
           replaced: Replacements = NONE) -> pd.DataFrame:
    """One column per engine parameter, one row per backend entry (backends must be known); `overrides`
    maps a parameter to {engine: value} (the fit tries values without writing a file); `replaced` holds the
    run's engine profiles where they replace the file's."""
    table = pd.DataFrame({n: {k: prof[k] for k in serving_engines.ENGINE_PARAMS}
                          for n, prof in serving_engines.engines(replaced=replaced).items()}).T
    if without_fits:
        table[list(FITTED)] = 0.0
    for k, per_engine in (overrides or {}).items():
        if k not in table.columns:  # a protocol parameter (closed_loop reads it)
            continue
        for name, v in per_engine.items():
            table.loc[name, k] = v
    return table.loc[backends.to_numpy()].set_index(backends.index)


def slots(concurrency, max_running, kv_slots, multiple, da=1) -> np.ndarray:
    """Sequences decoding at once per replica (a multiple of pp x d_a; the running cap per attention-DP rank)."""
    return cl.running(concurrency, max_running, kv_slots, multiple, da)


def prefill_workers(rows: pd.DataFrame, tpot: np.ndarray, utilization: float) -> np.ndarray:
    """Prefill workers of each disaggregated row: as written, else the fewest that keep the prefill pool at
    `utilization` of its capacity at the deployment's request rate r = C / ((O - 1) TPOT + L_f):
    n_p = max(1, ceil(r t_f / (d_a utilization)))."""
    rate = rows["total"] / ((rows["osl"] - 1) * tpot + rows["l_f"])
    sized = np.maximum(1.0, np.ceil(rate * rows["t_f"] / (rows["d_a_pre"] * utilization)))
    return np.where(rows["n_pre"].notna(), rows["n_pre"], sized)


def replica_terms(engine: str, clients: float, running: float, da: float, isl: float, osl: float,
                  gpu: pd.Series) -> pd.DataFrame:
    """The TERMS row of one aggregated replica of `clients` closed-loop clients, `running` decoding at once, from
    serve()'s row of the GPU alone at that load (no engine: closed_loop adds it)."""
    return pd.DataFrame([{"backend": engine, "agg": True, "total": float(clients), "c_rep": float(clients),
                          "s_rep": float(running), "d_a_pre": float(da), "d_a_dec": float(da), "n_pre": np.nan,
                          "isl": float(isl), "osl": float(osl), "t_d": gpu["decode_step_s"],
                          "tpot_gpu": gpu["time_per_output_token_s"], "t_f": gpu["prefill_step_s"],
                          "l_f": gpu["ttft_s"] - 0.5 * gpu["decode_step_s"]}])


def closed_loop(rows: pd.DataFrame, without_fits: bool = False, overrides: dict | None = None,
                replaced: Replacements = NONE) -> pd.DataFrame:
    """ttft_s, tpot_s, n_pre (prefill workers used) per row from its GPU terms (TERMS): backend, agg (bool),
    total (C of the deployment), c_rep / s_rep (C and running S per decode replica), d_a_pre (prefill
    entry's attention-DP ranks), n_pre (prefill workers, NaN: not written), isl, osl (mean lengths), t_d
    (decode step), d_a_dec (decode entry's attention-DP ranks), tpot_gpu, t_f (prefill step), l_f (prefill
    latency, with the KV hand-off when disaggregated). `overrides` maps a parameter to {engine: value};
    "prefill_utilization", "waves" and "length_range_ratio" (another client's load) to a number."""
    p = params(rows["backend"], without_fits, overrides, replaced)
    proto = protocol()
    util = (overrides or {}).get("prefill_utilization", proto["prefill_utilization"])
    agg = rows["agg"].to_numpy(bool)
    tau = cl.evaluate("host", tau_0=p["step_cost"], tau_1=p["step_cost_per_sequence"], S=rows["s_rep"],
                      d_a=rows["d_a_dec"])
    tpot = cl.evaluate("tpot", TPOT_gpu=rows["tpot_gpu"], tau=tau)
    step = rows["t_d"].to_numpy(float) + tau
    kappa = np.where(agg, p["first_token_steps"], p["first_token_steps_disagg"])
    n_pre = np.where(agg, 1.0, prefill_workers(rows, tpot, util))
    clients = np.where(agg, np.ceil(rows["s_rep"] / rows["d_a_pre"]),
                       np.ceil(rows["total"] / (n_pre * rows["d_a_pre"])))
    after = rows["l_f"] - rows["t_f"] + kappa * step
    first = agg & (p["prefill_first"].to_numpy(float) > 0)  # aggregated: a disaggregated decode pool never prefills
    waves = (overrides or {}).get("waves", proto["waves"])  # another client's load: its requests / concurrency
    ratio = (overrides or {}).get("length_range_ratio", proto["length_range_ratio"])
    wait, queued = cl.prefill_queue(clients, rows["t_f"], after, tpot, rows["osl"], waves, ratio, step=step,
                                    prefill_first=first)
    tpot = np.where(first, queued, tpot)
    common = dict(t_d=rows["t_d"], tau=tau, t_f=rows["t_f"], L_f=rows["l_f"], kappa=kappa,
                  T_p=wait)
    ttft_agg = cl.evaluate("ttft_agg", C=rows["c_rep"], S=rows["s_rep"], O=rows["osl"],
                           TPOT_gpu=tpot - tau, **common)
    ttft_dis = cl.evaluate("ttft_disagg", **common)
    return pd.DataFrame({"ttft_s": np.where(agg, ttft_agg, ttft_dis), "tpot_s": tpot, "n_pre": n_pre},
                        index=rows.index)
