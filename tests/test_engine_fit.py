"""The engine fit (validation/engine_fit.py) recovers parameters it is given: rows whose 'measured' TTFT and
TPOT come from the closed loop with known values are fitted back to those values, and the held-out errors
of such rows are zero. (The shipped values come from `python -m perfmodel.validation.engine_fit`; its
output is in the profile file's `fit` fields.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.validation import engine_fit
from perfmodel.validation.sources import inferencex_engine


def _rows(n: int = 24) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    c = rng.choice([4, 16, 64], n).astype(float)
    agg = np.arange(n) % 3 != 0
    t = pd.DataFrame({
        "backend": np.where(np.arange(n) % 2 == 0, "vllm", "trtllm"), "agg": agg, "total": c, "c_rep": c,
        "s_rep": c, "d_a_pre": 1.0, "d_a_dec": np.where(np.arange(n) % 5 == 0, 2.0, 1.0), "n_pre": np.where(agg, 1.0, 2.0), "isl": 922.0, "osl": 922.0,
        "t_d": rng.uniform(0.005, 0.02, n), "t_f": rng.uniform(0.02, 0.2, n),
        "model": np.where(np.arange(n) % 4 < 2, "model-a", "model-b"),
    })
    t["tpot_gpu"], t["l_f"] = t["t_d"] * 1.1, t["t_f"]
    return t


TRUTH = {"vllm": {"step_cost": 0.0008, "step_cost_per_sequence": 10e-6, "first_token_steps": 6.0,
                  "first_token_steps_disagg": 6.0},
         "trtllm": {"step_cost": 0.0002, "step_cost_per_sequence": 25e-6, "first_token_steps": 20.0,
                    "first_token_steps_disagg": 40.0},
         "prefill_utilization": 0.37}


def _measured(t: pd.DataFrame) -> pd.DataFrame:
    p = inferencex_engine.closed_loop(t, overrides=engine_fit._as_overrides(TRUTH))
    return t.assign(ttft_meas=p["ttft_s"], tpot_meas=p["tpot_s"])


def test_the_fit_recovers_the_values_that_made_the_rows():
    t = _measured(_rows())
    got = engine_fit.fit(t)
    for eng in ("vllm", "trtllm"):
        assert got[eng]["step_cost"] == pytest.approx(TRUTH[eng]["step_cost"], abs=1e-9)
        assert got[eng]["step_cost_per_sequence"] == pytest.approx(TRUTH[eng]["step_cost_per_sequence"], abs=1e-11)
        assert got[eng]["first_token_steps"] == pytest.approx(TRUTH[eng]["first_token_steps"], abs=0.5)
    assert got["trtllm"]["first_token_steps_disagg"] == pytest.approx(40.0, abs=0.5)


def test_the_median_line_is_the_least_absolute_deviation_line():
    # y = 1 + 2x on four points and one far outlier: the median line ignores the outlier, least squares would not
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = 1.0 + 2.0 * x
    y[2] += 100.0
    a, b = engine_fit.median_line(x, y)
    assert (a, b) == (pytest.approx(1.0, abs=1e-9), pytest.approx(2.0, abs=1e-9))
    # both bounded below by zero: a falling residual gives slope 0, not a negative host time
    a, b = engine_fit.median_line(x, 10.0 - x)
    assert b == 0.0 and a == pytest.approx(7.0, abs=1e-9)


def test_held_out_errors_are_those_of_a_fit_without_the_held_out_model():
    t = _measured(_rows())
    cv = engine_fit.cross_validate(t)
    assert len(cv) == len(t) and cv["tpot"].abs().max() < 1e-6 and cv["ttft"].abs().median() < 0.02
    s = engine_fit.summary(cv)
    assert {"vllm", "trtllm", "all"} <= set(s.index) and s.loc["all", "rows"] == len(t)
