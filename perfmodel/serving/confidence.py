"""A fleet sized so the SLA holds at the pessimistic end of the answer's interval (`plan --confidence LEVEL`).

The planner's answer for a system carries its intervals (serving/error_bars.py). At the interval's pessimistic
end the chosen plan is slower and serves less:

    k_ttft = TTFT_high / TTFT,   k_tpot = TPOT_high / TPOT,   k_y = y / y_low     (y: tokens/s per replica)

so the demand the planner must meet at the estimate, for the SLA to hold at that end, is

    TTFT target / k_ttft,   TPOT target / k_tpot,   requests/s x k_y

(each factor >= 1: an interval whose pessimistic end is on the estimate's better side tightens nothing). The
planner is run again on the tightened demand (the edge does: cli/plan.py); the factors come from the first
answer's regime, so a second answer in another regime is checked once more.

Does not: plan (planner.py) or compute intervals.
"""

from __future__ import annotations

import dataclasses
import math

from perfmodel.serving.demand import Demand


def factors(row) -> dict[str, float]:
    """(k_ttft, k_tpot, k_y) of one planner row carrying its interval columns; 1 where a column is absent."""
    def ratio(a, b) -> float:
        v = float(a) / float(b) if b and a == a and b == b else 1.0
        return max(1.0, v) if math.isfinite(v) else 1.0

    get = row.get if hasattr(row, "get") else (lambda k, d=None: row[k] if k in row else d)
    return {"ttft": ratio(get("ttft_s_high", math.nan), get("ttft_s", math.nan)),
            "tpot": ratio(get("time_per_output_token_s_high", math.nan), get("time_per_output_token_s", math.nan)),
            "throughput": ratio(get("output_tokens_per_s_per_chip", math.nan),
                                get("output_tokens_per_s_per_chip_low", math.nan))}


def tightened(demand: Demand, row) -> Demand:
    """The demand whose answer at the estimate meets `demand`'s SLA at the pessimistic end of `row`'s interval."""
    k = factors(row)
    return dataclasses.replace(demand, ttft_s=demand.ttft_s / k["ttft"], tpot_s=demand.tpot_s / k["tpot"],
                               requests_per_s=demand.requests_per_s * k["throughput"])
