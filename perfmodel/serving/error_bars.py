"""Error bars on serving answers: each latency and throughput column with its interval (core/intervals.py).

    attach(df, system, arch, table, level)   adds <column>_low and <column>_high to every answer column
                                              present, interval_level and interval_basis (the regime used, its
                                              points and models, and whether it was widened and why)

Each row's regime key: its quantity, the chip's hardware family, its engine (engine_class: "none" for the
roofline), aggregated or disaggregated, the model's family, and its concurrency's load bucket. The columns:

    ttft_s                                         ttft
    time_per_output_token_s                        tpot
    e2e_latency_s                                  TTFT + (O - 1) TPOT: each part at its own bound
    tokens_per_s_per_user                          1 / TPOT: tpot's interval turned over
    output_tokens_per_s_per_{replica,chip,node,    throughput (per MW and per USD share the throughput's error:
      scaleup,mw,usd}                              the power and the price model add their own, not in here)
    usd_per_million_output_tokens                  1 / throughput, turned over

attach_training does the same for a training step (tokens/s, MFU, achieved FLOP/s; the step time turned over)
from the training regime.

Widened by core/intervals.WIDEN where the answer leaves measured ground: the row is outside its engine's
measured envelope (`envelope` extrapolated), no engine (the roofline), a projected system, or no measured
residual of that quantity on the chip's hardware family.

Does not: read the intervals file (catalog/interval_files.py, at the edge) or price anything.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.core import intervals as iv

TTFT = ("ttft_s",)
TPOT = ("time_per_output_token_s",)
PER_USER = ("tokens_per_s_per_user",)
THROUGHPUT = ("output_tokens_per_s_per_replica", "output_tokens_per_s_per_chip", "output_tokens_per_s_per_node",
              "output_tokens_per_s_per_scaleup", "output_tokens_per_s_per_mw", "output_tokens_per_usd")
PER_THROUGHPUT = ("usd_per_million_output_tokens",)


def _keys(df: pd.DataFrame, system, arch, quantity: str) -> pd.DataFrame:
    """Each row's regime key (core/intervals.KEYS) and whether it lies outside its engine's measured envelope,
    column by column (no loop over a sweep's rows)."""
    n = len(df)
    engine = df["engine"].astype(str) if "engine" in df else pd.Series("", index=df.index)
    none = engine.isin(["", "none"]).to_numpy()
    mode = df["mode"].astype(str).eq("disaggregated").to_numpy() if "mode" in df else np.zeros(n, dtype=bool)
    outside = df["envelope"].eq("extrapolated").to_numpy() if "envelope" in df else np.zeros(n, dtype=bool)
    return pd.DataFrame({"quantity": quantity, "hardware_family": system.chip.family.value,
                         "engine": np.where(none, "none", "neuron" if system.chip.family.is_neuron else
                                            engine.to_numpy(dtype=object)),
                         "mode": np.where(mode, "disagg", "agg"), "model_family": iv.model_family(arch),
                         "load": iv.load_bucket(df["concurrency"].to_numpy(dtype=float)) if "concurrency" in df
                         else "-", "outside": outside})


def _factors(keys: pd.DataFrame, system, table: iv.IntervalTable, level: float):
    """Per row: (c, h, lambda x widen, basis), looked up once per distinct regime key and envelope."""
    n = len(keys)
    if not n:
        return np.empty(0), np.empty(0), np.empty(0), []
    quantity = str(keys["quantity"].iloc[0])
    scores = table.scores.get(quantity)
    lam = scores.factor(level) if scores is not None else np.nan
    c, h, f = (np.full(n, np.nan) for _ in range(3))
    basis = np.full(n, f"no measured {quantity} residuals: no interval", dtype=object)
    for (*key, out), idx in keys.groupby(list(iv.KEYS) + ["outside"], sort=False).indices.items():
        used, hit = table.regime(tuple(key))
        if hit is None or not np.isfinite(lam):
            continue
        why = [w for w, on in (("no engine: the roofline", key[2] == "none"),
                               ("outside the engine's measured envelope", out and key[2] != "none"),
                               ("a projected system", system.projected),
                               (f"no {key[1]} measurements", len(used) < 2)) if on]
        c[idx], h[idx], f[idx] = hit[0], hit[1], lam * (iv.WIDEN if why else 1.0)
        where = " ".join(k for k in used[1:] if k not in ("-", quantity, "agg" if quantity == "training" else "")) \
            or "all hardware"
        basis[idx] = f"{where} ({hit[2]:,} points, {hit[3]} model{'s' if hit[3] != 1 else ''})" + (
            f", widened x{iv.WIDEN:g}: {'; '.join(why)}" if why else "")
    return c, h, f, list(basis)


def _bounds_into(out: pd.DataFrame, cols, c, h, f, turned: bool) -> None:
    """<col>_low / <col>_high of each present column; `turned`: the column is the inverse of the quantity the
    residuals are of (a rate of a time, a price of a rate), so it takes that quantity's interval turned over."""
    for col in cols:
        if col in out:
            p = out[col].to_numpy(dtype=float)
            if turned:
                lo, hi = iv.bounds(1.0 / p, c, h, f)
                out[f"{col}_low"], out[f"{col}_high"] = 1.0 / hi, 1.0 / lo
            else:
                out[f"{col}_low"], out[f"{col}_high"] = iv.bounds(p, c, h, f)


def attach(df: pd.DataFrame, system, arch, table: iv.IntervalTable, level: float = iv.DEFAULT_LEVEL) -> pd.DataFrame:
    """`df` with <column>_low / <column>_high for every answer column present (module doc), interval_level and
    interval_basis (TPOT's regime, the one a serving answer's throughput and TPOT rest on)."""
    out = df.copy()
    groups = (("ttft", TTFT, False), ("tpot", TPOT, False), ("tpot", PER_USER, True),
              ("throughput", THROUGHPUT, False), ("throughput", PER_THROUGHPUT, True))
    bases = {}
    for quantity, cols, turned in groups:
        if not len(out) or not any(col in out for col in cols):
            continue
        c, h, f, bases[quantity] = _factors(_keys(out, system, arch, quantity), system, table, level)
        _bounds_into(out, cols, c, h, f, turned)
    if {"e2e_latency_s", "ttft_s_low", "time_per_output_token_s_low"} <= set(out.columns):
        steps = (out["e2e_latency_s"] - out["ttft_s"]) / out["time_per_output_token_s"]  # O - 1
        for e in ("low", "high"):
            out[f"e2e_latency_s_{e}"] = out[f"ttft_s_{e}"] + steps * out[f"time_per_output_token_s_{e}"]
    out["interval_level"] = level
    out["interval_basis"] = [f"{level:.0%} from measured residuals: TPOT {t}; TTFT {f}" for t, f in
                             zip(bases.get("tpot", [""] * len(out)), bases.get("ttft", [""] * len(out)))]
    return out


TRAINING_RATES = ("tokens_per_s", "tokens_per_s_per_chip", "mfu_frac", "achieved_flop_per_s")
TRAINING_TIMES = ("step_time_s",)


def attach_training(df: pd.DataFrame, system, arch, table: iv.IntervalTable,
                    level: float = iv.DEFAULT_LEVEL) -> pd.DataFrame:
    """A training summary with its rates' and step time's intervals from the training regime (the residuals of
    published training throughput: tokens/s, TFLOP/s, MFU); the step time is the rate's interval turned over."""
    out = df.copy()
    keys = _keys(out.drop(columns=["engine", "mode", "concurrency", "envelope"], errors="ignore"), system, arch,
                 "training").assign(engine="training")
    c, h, f, basis = _factors(keys, system, table, level)
    _bounds_into(out, TRAINING_RATES, c, h, f, False)
    _bounds_into(out, TRAINING_TIMES, c, h, f, True)
    return out.assign(interval_level=level, interval_basis=[f"{level:.0%} from measured residuals: training {b}"
                                                            for b in basis])


def attach_columns(df: pd.DataFrame, system, arch, table: iv.IntervalTable, level: float, quantity: str,
                   rates=(), times=()) -> pd.DataFrame:
    """Intervals on named columns from one quantity's regime (each row's engine, mode, concurrency and envelope as
    attach reads them): `rates` are rates of that quantity (a step's tokens/s: its time's interval turned over
    when the quantity is a time), `times` go with it (a price per token). For a report's single step."""
    out = df.copy()
    c, h, f, basis = _factors(_keys(out, system, arch, quantity), system, table, level)
    timed = quantity in ("ttft", "tpot")  # the residuals are of a time: its rates take the interval turned over
    _bounds_into(out, rates, c, h, f, timed)
    _bounds_into(out, times, c, h, f, not timed)
    return out.assign(interval_level=level, interval_basis=[f"{level:.0%} from measured residuals: "
                                                            f"{quantity.upper()} {b}" for b in basis])


SIM_TTFT = ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s")
SIM_TPOT = ("tpot_p50_s", "tpot_p90_s", "tpot_p99_s")


def attach_simulated(df: pd.DataFrame, system, arch, table: iv.IntervalTable, level: float,
                     engine: str) -> pd.DataFrame:
    """A simulation's summary with intervals: its TTFT and TPOT percentiles from TTFT's and TPOT's regimes (the
    step model's error carries to every percentile alike: an approximation, the residuals being of means), its
    output tokens/s from the throughput regime; the load is the mean running sequences per worker."""
    frame = df.assign(engine=engine or "none", envelope="measured",
                      concurrency=df["mean_running_per_worker"].clip(lower=1.0).fillna(1.0))
    bases = []
    for quantity, times, rates in (("ttft", SIM_TTFT, ()), ("tpot", SIM_TPOT, ()),
                                   ("throughput", (), ("output_tokens_per_s",))):
        frame = attach_columns(frame, system, arch, table, level, quantity, rates=rates, times=times)
        bases.append(frame["interval_basis"].str.replace(f"{level:.0%} from measured residuals: ", "", regex=False))
    extra = [c for c in frame.columns if c.endswith(("_low", "_high"))]
    return df.assign(**{c: frame[c].to_numpy() for c in extra}, interval_level=level,
                     interval_basis=f"{level:.0%} from measured residuals: " + bases[0] + "; " + bases[1])
