"""Capacity planner for a training run: tokens to train on, to chips, days, MW and $.

`plan_training`: chips and days to train N tokens: for each chip count, every split
t (powers of two within a node) x p x d (ZeRO-1, one-sequence micro-batches, global batch fixed)
that fits in HBM, priced by training.step_arrays (pipeline bubble, exposed and hidden
communication); days = the run's wall time (training/time_to_train.py: N / (tokens/s) of compute, plus
evaluation, checkpoint pauses and the work and restarts lost to interrupts, which grow with the chips) / 86,400;
compute_days the compute alone, goodput_frac their ratio; power from the step's engine activity, drawn over the
wall clock (an upper bound on energy: chips idle while a run restarts; the chips are held, and billed, throughout).

Does not: format output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import training
from perfmodel.core import units
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Optimizer, Phase, Recompute
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import memory
from perfmodel.model.evaluate import evaluate_sweep
from perfmodel.serving import cost, power
from perfmodel.training import time_to_train

RUN_COLUMNS = ("compute_s", "wall_s", "goodput_frac", "checkpoint_interval_s", "interrupts")


def plan_training(system: System, arch: ModelArch, tokens: float, chips: int | None = None, days: float | None = None,
                  seq_len: int = 4096, global_batch_tokens: float = 4 * 2 ** 20, dtype: DType = DType.BF16,
                  optimizer: Optimizer = Optimizer.ADAM_MIXED, zero: int = 1, max_chips: int = 65536,
                  cal: Calibration | None = None, price: cost.Price | None = None) -> pd.DataFrame:
    """Chips and days to train `tokens` tokens: at `chips`, or the fewest chips (node multiples,
    powers of two) that finish within `days`. One row per chip count tried, best plan each."""
    if not tokens > 0:
        raise ValueError(f"tokens must be > 0, got {tokens!r}")
    if (chips is None) == (days is None):
        raise ValueError("give exactly one of chips or days")
    cal = cal or calibration_of(system)
    price = price or cost.price_for(system, cal)
    n = system.node.chips
    counts = [int(chips)] if chips else [n * 2 ** j for j in range(0, int(np.log2(max(max_chips // n, 1))) + 1)]
    seqs = max(1, int(round(global_batch_tokens / seq_len)))
    rows = []
    for c in counts:
        row = _best_training_plan(system, arch, c, seqs, seq_len, dtype, optimizer, zero, cal)
        if row is None:
            continue
        run = time_to_train.for_step(system, arch, optimizer, cal, tokens, row)
        row.update({k: float(np.ravel(run[k])[0]) for k in RUN_COLUMNS})
        row["days"] = row["wall_s"] / units.SECONDS_PER_DAY
        row["compute_days"] = row["compute_s"] / units.SECONDS_PER_DAY
        rows.append(row)
        if days is not None and row["days"] <= days:
            break
    if not rows:
        raise ValueError(f"{arch.name} training does not fit on {counts[-1]} {system.chip.display_name} chips")
    df = pd.DataFrame(rows)
    pm = power.power_model(system, cal)
    act = {e: df[f"activity_{e}_frac"].to_numpy() for e in ("tensor", "vector", "scalar", "gpsimd", "memory",
                                                               "comm")}
    nodes = np.ceil(df["chips"] / n)
    df["facility_power_w"] = pm.facility_w(pm.it_w(pm.chip_w(act), df["chips"], nodes * n, nodes))
    df["energy_mwh"] = df["facility_power_w"] * df["days"] * units.HOURS_PER_DAY / units.MW
    df["usd_per_run"] = cost.training_run_usd(nodes * n, df["days"], price) if price.available else np.nan
    df["price_note"] = price.label
    df["power_caveat"] = power.caveat(system, cal)
    if days is not None and df["days"].iloc[-1] > days:
        df["note"] = f"no chip count up to {counts[-1]} finishes within {days:g} days"
    return df


def _best_training_plan(system, arch, chips, seqs, seq_len, dtype, optimizer, zero, cal) -> dict | None:
    """Fastest fitting plan at `chips` chips: training.step_arrays over every (t, p) split (vectorised),
    recompute none and full; power activity from the same evaluation's engine busy times."""
    pows = [2 ** j for j in range(0, 12)]
    rows = [(t, p) for t in pows if t <= system.node.chips for p in pows
            if p <= arch.num_hidden_layers and chips % (t * p) == 0]
    if not rows:
        return None
    tp, pp = (np.asarray(x, float) for x in zip(*rows))
    dp = chips / (tp * pp)
    mb = np.maximum(np.ceil(seqs / dp), pp)
    ep = np.minimum(tp, arch.num_experts) if arch.is_moe else np.ones_like(tp)
    ep = np.where((tp % ep == 0) & ((arch.num_experts or 1) % ep == 0), ep, 1.0)
    best = None
    for rc in (Recompute.NONE, Recompute.FULL):
        one = np.ones_like(tp)  # every knob an array of one length (evaluate multiplies group strides)
        kn = bd.Knobs(phase=Phase.TRAIN, batch=one, seq_len=seq_len * one, tp=tp, pp=pp, dp=dp, ep=ep, da=one,
                      cp=one, microbatches=mb, zero=zero * one, weights=dtype, compute=dtype, optimizer=optimizer)
        fits = np.asarray(memory.footprint(system, arch, kn, cal, rc).fits)
        if not np.any(fits):
            continue
        st = training.step_arrays(system, arch, kn, cal, rc)
        tps = np.where(fits, st["tokens_per_s"], -np.inf)
        i = int(np.argmax(tps))
        if best is None or tps[i] > best["tokens_per_s"]:
            ev = evaluate_sweep(system, arch, kn, cal, rc)  # engine busy times (per device, whole step)
            step = float(st["step_time_s"][i])
            busy = {e: ev[f"{e}_busy_s"].to_numpy()[i] / step for e in ("tensor", "vector", "scalar", "gpsimd",
                                                                         "memory")}
            busy["comm"] = float(st["comm_total_s"][i]) / step
            best = {"system": system.name, "workload": arch.name, "chips": chips, "tp": tp[i], "pp": pp[i],
                    "dp": dp[i], "ep": ep[i], "microbatches": mb[i], "recompute": rc.value,
                    "global_batch_tokens": mb[i] * dp[i] * seq_len, "step_time_s": step,
                    "bubble_frac": float(st["bubble_frac"][i]), "forward_s": float(st["forward_s"][i]),
                    "tokens_per_s": float(tps[i]),
                    "mfu_frac": float(st["mfu_frac"][i]),
                    **{f"activity_{e}_frac": min(v, 1.0) for e, v in busy.items()}}
    return best
