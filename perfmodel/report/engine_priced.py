"""A report case priced as today's serving engine runs it, beside the accelerator alone.

The report's cases are single steps (a decode step of B sequences, a prefill of B prompts). On its own the step
is the hardware's figure; a serving engine adds to it (serving/options.setup, the profile resolved once at the
edge by serving_engines.resolve):

    GPU engine (vllm, trtllm, sglang)   host time per step  tau = tau_0 + tau_1 B / d_a   (closed_loop.HOST)
    Neuron stack (nxd-inference)        its rules in the calibration (per-op overhead, attention kernels),
                                        the step evaluated again under them, plus its host time per step

    engine step          t_e = t_step + tau                                          s
    tokens/s per chip    = tokens per step / t_e / replica chips
    tokens per MW        power at the engine step's activity (busy time / t_e: the chip idles while the host works)
    $ per million tokens the same chip-hours over fewer tokens

`engine` "none" (the roofline) or a training case gives no engine columns' values (NaN, engine "").

Does not: read files (the engine name and its profile come resolved from the caller).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.catalog import neuron_stacks, serving_engines
from perfmodel.core.intervals import DEFAULT_LEVEL
from perfmodel.model import evaluate
from perfmodel.serving import envelope, error_bars
from perfmodel.serving import options as serving_options

COLUMNS = ("engine", "engine_host_time_s", "engine_step_time_s", "engine_tokens_per_s_per_chip",
           "engine_tokens_per_mw", "engine_usd_per_million_tokens")
SERVING_PHASES = ("decode", "prefill")


def engine_columns(run, engine: str | None) -> dict:
    """The engine-priced figures of a report run (frames.Run) under `engine` (None: the system's default engine,
    serving_engines.default_for; "none": the accelerator alone)."""
    from perfmodel.report.frames import economics

    out = dict.fromkeys(COLUMNS, np.nan) | {"engine": ""}
    system, row = run.loaded.system, run.result.summary.iloc[0]
    if row["phase"] not in SERVING_PHASES:
        return out
    name, _ = serving_engines.resolve(engine, system)
    if not name:
        return out | {"engine": "none"}
    opts = serving_options.ServingOptions(software=neuron_stacks.software(name, system))
    su = serving_options.setup(system, opts, run.loaded.cal)
    if su.stack is not None:  # a Neuron stack's rules change the device step itself
        row = evaluate.evaluate(system, run.loaded.arch, run.result.scenario, su.cal).summary.iloc[0]
    host = float(su.host_time(float(row["batch"]), max(float(row["da"]), 1.0)))
    t_e = float(row["step_time_s"]) + host
    slow = float(row["step_time_s"]) / t_e
    priced = row.copy()
    priced["step_time_s"] = t_e
    for col in ("tokens_per_s_per_replica", "tokens_per_s_per_chip"):
        priced[col] = float(row[col]) * slow
    econ = economics(system, priced, su.cal)
    return {"engine": name, "engine_host_time_s": host, "engine_step_time_s": t_e,
            "engine_tokens_per_s_per_chip": priced["tokens_per_s_per_chip"],
            "engine_tokens_per_mw": econ["tokens_per_mw"], "engine_usd_per_million_tokens": econ["usd_per_million_tokens"]}


def with_engine(summary: pd.DataFrame, run, engine: str | None, table=None,
                level: float = DEFAULT_LEVEL) -> pd.DataFrame:
    """The summary row with the engine-priced columns appended; with an interval `table` (core/intervals, resolved
    at the edge) each engine figure with its interval: a decode step from TPOT's regime, a prefill from TTFT's
    (serving/error_bars.attach_columns), widened outside the engine's measured envelope."""
    out = summary.assign(**engine_columns(run, engine))
    row = out.iloc[0]
    if table is None or row["phase"] not in SERVING_PHASES or not row["engine"] or row["engine"] == "none":
        return out
    system = run.loaded.system
    env = serving_engines.resolve(row["engine"], system)[1]
    frame = out.assign(mode="aggregated", concurrency=float(row["batch"]), da=max(float(row.get("da", 1)), 1.0))
    frame = envelope.label(frame, env)
    quantity = "tpot" if row["phase"] == "decode" else "ttft"
    bars = error_bars.attach_columns(frame, system, run.loaded.arch, table, level, quantity,
                                     rates=("engine_tokens_per_s_per_chip", "engine_tokens_per_mw"),
                                     times=("engine_usd_per_million_tokens",))
    extra = [c for c in bars.columns if c.endswith(("_low", "_high")) or c.startswith("interval_")]
    return out.assign(**{c: bars[c].to_numpy() for c in extra})
