"""`perfmodel train` for people: the answer in a few lines (step time, throughput, MFU, whether it fits, the plan)
and where the step's time goes, each part with its share; every field of the step model stays in csv / json /
xlsx and under --wide.

    answer(row)      the lines above the table
    breakdown(row)   component, time_s, share_frac: the parts of one step in the order they happen (they add up
                     to the step time: training/step.py's timeline), then the communication hidden under compute

Does not: compute anything (the row is training.train's summary).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.core import units

# the step's parts as training/step.py's timeline orders them (they sum to step_time_s)
PARTS = (("forward + backward", ("forward_s", "backward_s")),
         ("tensor / expert / context-parallel and pipeline comm, exposed", ("blocking_comm_exposed_s",)),
         ("pipeline bubble", ("bubble_s",)),
         ("data-parallel comm, exposed", ("dp_comm_exposed_s",)),
         ("compute slowed by overlapped comm", ("contention_s",)),
         ("optimizer step", ("optimizer_s",)),
         ("waiting for the slowest rank", ("straggler_s",)))


def _seconds(v: float) -> str:
    return f"{v / units.MS:,.1f} ms" if v < 1 else f"{v:,.2f} s"


def answer(row: pd.Series) -> str:
    fits = "fits memory" if bool(row.get("fits", True)) else "does NOT fit memory"
    plan = (f"tp {int(row['tp'])} x pp {int(row['pp'])} x dp {int(row['dp'])}"
            + (f" x cp {int(row['cp'])}" if int(row.get("cp", 1)) > 1 else "")
            + (f" x ep {int(row['ep'])}" if int(row.get("ep", 1)) > 1 else "")
            + f", ZeRO-{int(row['zero'])}, {int(row['microbatches'])} micro-batches of {int(row['batch'])} x "
              f"{int(row['seq_len']):,} tokens, {row['compute_dtype']}, recompute {row['recompute']}")
    return (f"Step time {_seconds(row['step_time_s'])}: {row['tokens_per_s']:,.0f} tokens/s "
            f"({row['tokens_per_s_per_chip']:,.0f} per chip on {int(row['chips']):,} chips), "
            f"MFU {100 * row['mfu_frac']:.1f}%, {fits}.\nPlan: {plan}.")


def breakdown(row: pd.Series) -> pd.DataFrame:
    step = float(row["step_time_s"])
    rows = [{"component": name, "time_s": sum(float(row.get(c, 0.0)) for c in cols)} for name, cols in PARTS]
    rows = [r for r in rows if r["time_s"] > 0]
    rows.append({"component": "step", "time_s": step})
    hidden = float(row.get("comm_hidden_s", 0.0))
    if hidden > 0:
        rows.append({"component": "(communication hidden under compute, not in the step)", "time_s": hidden})
    df = pd.DataFrame(rows)
    return df.assign(share_frac=df["time_s"] / step if step > 0 else 0.0)
