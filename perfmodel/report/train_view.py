"""`perfmodel train` for people: the answer in a few lines (step time, throughput, MFU, whether it fits, the plan)
and where the step's time goes, each part with its share; every field of the step model stays in csv / json /
xlsx and under --wide.

    answer(row)      the lines above the table
    breakdown(timeline, step)   component, time_s, share_frac: the step model's timeline, its parts in the order
                                they happen (they add up to the step), then the communication hidden under compute
    run_answer(row), run_breakdown(row)
                                a --tokens run (the row's run_* columns, training/time_to_train.py): days, goodput,
                                and where the wall clock goes (compute, evaluation, checkpoint pauses, interrupts)

Does not: compute anything (training.train's summary row and timeline).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.core import units


def answer(row: pd.Series) -> str:
    fits = "fits memory" if bool(row.get("fits", True)) else "does NOT fit memory"
    plan = (f"tp {int(row['tp'])} x pp {int(row['pp'])} x dp {int(row['dp'])}"
            + (f" x cp {int(row['cp'])}" if int(row.get("cp", 1)) > 1 else "")
            + (f" x ep {int(row['ep'])}" if int(row.get("ep", 1)) > 1 else "")
            + f", ZeRO-{int(row['zero'])}, {int(row['microbatches'])} micro-batches of {int(row['batch'])} x "
              f"{int(row['seq_len']):,} tokens, {row['compute_dtype']}, recompute {row['recompute']}"
            + (f" ({int(row['recompute_layers'])} layers per stage)" if int(row.get("recompute_layers", 0)) else "")
            + (f", {int(row['offload_layers'])} layers' activations offloaded to host memory"
               if int(row.get("offload_layers", 0)) else "")
            + (f", LoRA rank {int(row['lora_rank'])} (base weights frozen)" if int(row.get("lora_rank", 0)) else ""))
    bar = (f" ({units.format_value(row['step_time_s_low'], 'time')} - "
           f"{units.format_value(row['step_time_s_high'], 'time')} at {row['interval_level']:.0%}: "
           f"{str(row.get('interval_basis', '')).split(': ', 1)[-1]})") if "step_time_s_low" in row else ""
    return (f"Step time {units.format_value(row['step_time_s'], 'time')}{bar}: {row['tokens_per_s']:,.0f} tokens/s "
            f"({row['tokens_per_s_per_chip']:,.0f} per chip on {int(row['chips']):,} chips), "
            f"MFU {100 * row['mfu_frac']:.1f}%, {fits}.\nPlan: {plan}.")


def breakdown(timeline: pd.DataFrame, step_s: float) -> pd.DataFrame:
    """component, time_s, share_frac: the step model's timeline (training/step.py timeline_frame) in its order, the
    parts that add up to the step, the step, then the communication hidden under compute."""
    on = timeline[timeline["in_step"] & (timeline["duration_s"] > 0)]
    off = timeline[~timeline["in_step"] & (timeline["duration_s"] > 0)]
    hidden = off[["component", "duration_s"]].assign(component=lambda d: "(" + d["component"] + ", not in the step)")
    df = pd.concat([on[["component", "duration_s"]], pd.DataFrame([{"component": "step", "duration_s": step_s}]),
                    hidden], ignore_index=True).rename(columns={"duration_s": "time_s"})
    return df.assign(share_frac=df["time_s"] / step_s if step_s > 0 else 0.0)


RUN_PARTS = (("compute (the steps)", "run_compute_s"), ("evaluation", "run_eval_s"),
             ("checkpoint pauses", "run_checkpoint_pause_s"),
             ("work lost to interrupts and restarts", "run_lost_and_restart_s"))


def run_answer(row: pd.Series) -> str:
    """The run in words: tokens, wall-clock days (estimate), compute days, goodput, interrupts, checkpoints."""
    day = units.SECONDS_PER_DAY
    return (f"Run of {row['tokens']:.3g} tokens: {row['run_wall_s'] / day:,.1f} days on the wall clock "
            f"(estimate: one published run's interrupt rate, an assumed restart time and storage rate), "
            f"{row['run_compute_s'] / day:,.1f} days of compute, goodput {100 * row['run_goodput_frac']:.1f}%; "
            f"{row['run_interrupts']:,.1f} expected interrupts (one every "
            f"{units.format_value(row['run_job_mtti_s'], 'time')}), a checkpoint every "
            f"{units.format_value(row['run_checkpoint_interval_s'], 'time')} of compute, each pausing "
            f"{units.format_value(row['run_checkpoint_pause_each_s'], 'time')}.")


def run_breakdown(row: pd.Series) -> pd.DataFrame:
    """component, days, share_frac: the run's wall clock in its parts (they add up to it), then the total."""
    parts = [(name, float(row[col])) for name, col in RUN_PARTS] + [("wall clock", float(row["run_wall_s"]))]
    df = pd.DataFrame(parts, columns=["component", "seconds"])
    return pd.DataFrame({"component": df["component"], "days": df["seconds"] / units.SECONDS_PER_DAY,
                         "share_frac": df["seconds"] / float(row["run_wall_s"])})
