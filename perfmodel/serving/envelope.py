"""Whether a serving answer lies inside what measured engines cover, or is extrapolated.

An engine's envelope (catalog/serving_engines.py, [envelopes.<engine>] of hardware_specs/serving/engines.toml)
states what measured deployments of that engine ran:

    max_running        the most sequences per replica (C) of a measured aggregated deployment
    max_attention_dp   the largest attention-DP degree d_a measured (1: attention tensor-parallel only)

    inside  =  C <= max_running  and  d_a <= max_attention_dp

A plan outside is not refused (the hardware may run it), it is labelled `extrapolated`: no engine was measured
there, so its error bar is the model's alone. Search results carry `envelope` = measured | extrapolated; the
planner prefers measured points and says when it cannot.

Does not: read files (the envelope Profile is resolved at the edge and passed in).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MEASURED, EXTRAPOLATED = "measured", "extrapolated"


def inside(df: pd.DataFrame, env) -> np.ndarray:
    """True where a serving frame's row (columns concurrency, da) lies inside envelope `env` (a Profile)."""
    c = df["concurrency"].to_numpy(dtype=float)
    da = df["da"].to_numpy(dtype=float)
    return (c <= env["max_running"]) & (da <= env["max_attention_dp"])


def label(df: pd.DataFrame, env) -> pd.DataFrame:
    """The frame with `envelope` (measured | extrapolated); every row extrapolated without an envelope
    (the roofline: no engine)."""
    ok = inside(df, env) if env is not None else np.zeros(len(df), dtype=bool)
    return df.assign(envelope=np.where(ok, MEASURED, EXTRAPOLATED))
