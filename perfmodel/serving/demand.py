"""A serving demand: the workload, the request rate, the length distributions and the SLA targets.

    Lengths   a token-length distribution (values with weights; one value is a point mass)
    Demand    workload, average requests/s, input and output Lengths, TTFT and TPOT targets, the
              peak-to-average factor, and the percentile the targets hold at (0: the steady state's
              per-request values; 50-99.9: that percentile of requests in the simulation that verifies the
              plan, simulation/verify.py), and shared prefixes (prefix_share of requests open with one of
              `prefixes` prefixes of prefix_tokens: the steady state prices share x tokens as cache hits, the
              simulation draws them). MLPerf's scenarios as demands: Server = Poisson requests at a
              rate under p99 targets (percentile 99); Offline = a batch with no latency bound (targets set
              to the run's length).
Built from plain values (a demand file's [demand] table is read by catalog/demand_files.py at the edge); every
error names the file, the field and the value.
Does not: plan (planner.py).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from perfmodel.core import limits

NUMBER_FIELDS = ("requests_per_s", "ttft_s", "tpot_s", "peak_to_average", "percentile", "prefix_share")
MAX_PEAK_TO_AVERAGE = 1000.0  # provisioning for a peak 1000x the average is a typo (the CLI's --peak-factor ceiling)


def _number(v, what: str) -> float:
    """`v` as a float when it is a real number (not a bool, not text), else ValueError naming `what`."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"{what}: expected a number, got {v!r}")
    try:
        return float(v)
    except OverflowError:  # an int beyond any float
        raise ValueError(f"{what}: must be finite, got {v!r}") from None


def _length(v, what: str) -> int:
    """A token length: a whole number in [1, MAX_SEQ_TOKENS] (a table key may be its text, '512')."""
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= 20:
        v = int(v.strip())
    return limits.check_count(v, f"{what}: token lengths", 1, limits.MAX_SEQ_TOKENS)


WEIGHT_SUM_TOLERANCE = 1e-3  # shares written by hand (0.333 x 3) pass; 0.5 + 0.6 does not


@dataclass(frozen=True)
class Lengths:
    """A token-length distribution: values with weights (a single value is a point mass)."""

    values: tuple[float, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, x, what: str = "token lengths") -> "Lengths":
        """A length (512), a table {"512": 0.5, "4096": 0.5} or pairs [(512, 0.5), ...] of length and
        weight; lengths whole numbers in [1, MAX_SEQ_TOKENS], weights finite, >= 0, summing > 0.
        Errors name `what` (the field) and the value."""
        if isinstance(x, Lengths):
            return x
        if isinstance(x, dict):
            pairs = list(x.items())
        elif isinstance(x, (list, tuple)):
            pairs = [tuple(p) if isinstance(p, (list, tuple)) else (p,) for p in x]
        else:
            pairs = [(x, 1.0)]
        if not pairs or any(len(p) != 2 for p in pairs):
            raise ValueError(f"{what}: expected a length or LENGTH = WEIGHT pairs, got {x!r}")
        vals = tuple(float(_length(a, what)) for a, _ in pairs)
        wts = tuple(_number(b, f"{what}: weight of {a}") for a, b in pairs)
        if not all(math.isfinite(w) and w >= 0 for w in wts) or sum(wts) <= 0:
            raise ValueError(f"{what}: token lengths need finite weights >= 0 summing > 0, got {x!r}")
        if abs(sum(wts) - 1.0) > WEIGHT_SUM_TOLERANCE:  # shares of requests: a typo is not renormalised silently
            raise ValueError(f"{what}: the weights are shares of requests and must sum to 1, got {sum(wts):g} "
                             f"({x!r})")
        return cls(vals, wts)

    @property
    def mean(self) -> float:
        return float(np.average(self.values, weights=self.weights))

    @property
    def max(self) -> float:
        return float(max(v for v, w in zip(self.values, self.weights) if w > 0))


@dataclass(frozen=True)
class Demand:
    """What to serve: workload, average request rate, length distributions and the SLA.

    ttft_s applies to the longest listed input; tpot_s to every output token (the steady state's plan); with a
    percentile, both also to that percentile of all requests in the simulation that verifies the plan.
    """

    workload: str
    requests_per_s: float
    input_tokens: Lengths
    output_tokens: Lengths
    ttft_s: float
    tpot_s: float
    peak_to_average: float = 1.0
    name: str = "demand"
    percentile: float = 0.0
    prefix_share: float = 0.0  # share of requests opening with a shared, cached prefix (prefix caching)
    prefix_tokens: int = 0  # its length
    prefixes: int = 1  # distinct shared prefixes (the simulation's cache holds them; the steady state assumes hits)

    @property
    def cached_tokens(self) -> int:
        """Mean prompt tokens served from the prefix cache (the steady state's ServingOptions.prefix_tokens)."""
        return int(round(self.prefix_share * self.prefix_tokens))

    def validate(self, where: str = "demand field ") -> None:
        """Rates and targets finite and > 0 (at most limits.MAX_QUANTITY_SI), peak-to-average in
        [1, MAX_PEAK_TO_AVERAGE]; errors start with `where` and the field's name."""
        for f in ("requests_per_s", "ttft_s", "tpot_s"):
            v = _number(getattr(self, f), f"{where}{f}")
            if not (math.isfinite(v) and 0 < v <= limits.MAX_QUANTITY_SI):
                raise ValueError(f"{where}{f}: must be a number > 0 and <= {limits.MAX_QUANTITY_SI:g}, got {v!r}")
        p = _number(self.percentile, f"{where}percentile")
        if not (p == 0 or 50 <= p <= 99.9):
            raise ValueError(f"{where}percentile: 0 (the steady state's values) or a percentile in [50, 99.9] of "
                             f"simulated requests, got {p!r}")
        s = _number(self.prefix_share, f"{where}prefix_share")
        if not 0 <= s <= 1:
            raise ValueError(f"{where}prefix_share: a share of requests in [0, 1], got {s!r}")
        for f, lo in (("prefix_tokens", 0), ("prefixes", 1)):
            t = getattr(self, f)
            if isinstance(t, bool) or not isinstance(t, (int, float)) or t != int(t) or t < lo:
                raise ValueError(f"{where}{f}: a whole number >= {lo}, got {t!r}")
        shortest = min(v for v, w in zip(self.input_tokens.values, self.input_tokens.weights) if w > 0)
        if self.prefix_tokens >= shortest:
            raise ValueError(f"{where}prefix_tokens: {self.prefix_tokens} must be below the shortest input "
                             f"({shortest:g} tokens): each request prefills its own tokens")
        v = _number(self.peak_to_average, f"{where}peak_to_average")
        if not 1 <= v <= MAX_PEAK_TO_AVERAGE:
            raise ValueError(f"{where}peak_to_average: must be >= 1 and <= {MAX_PEAK_TO_AVERAGE:g}, got {v!r}")

    def as_dict(self) -> dict:
        """Plain values (JSON-ready); lengths as {length: weight}."""
        out = dict(self.__dict__)
        for f in ("input_tokens", "output_tokens"):
            out[f] = {str(v): w for v, w in zip(getattr(self, f).values, getattr(self, f).weights)}
        return out

    @classmethod
    def from_dict(cls, d: dict, name: str = "demand", where: str = "demand field ") -> "Demand":
        """A demand from plain values; every error starts with `where` (a file's name: catalog/demand_files.read)
        and names the field and the value."""
        known = {"workload", "requests_per_s", "input_tokens", "output_tokens", "ttft_s", "tpot_s",
                 "peak_to_average", "name", "percentile", "prefix_share", "prefix_tokens", "prefixes"}
        unknown = sorted(str(k) for k in set(d) - known)
        if unknown:
            raise ValueError(f"{where}{unknown[0]}: unknown field (known: {', '.join(sorted(known))})")
        missing = sorted({"workload", "requests_per_s", "input_tokens", "output_tokens", "ttft_s", "tpot_s"} - set(d))
        if missing:
            raise ValueError(f"{where}{missing[0]}: missing field (required: workload, requests_per_s, "
                             "input_tokens, output_tokens, ttft_s, tpot_s)")
        for f in ("workload", "name"):
            if f in d and not (isinstance(d[f], str) and d[f].strip()):
                raise ValueError(f"{where}{f}: expected a name, got {d[f]!r}")
        num = {f: _number(d[f], f"{where}{f}") for f in NUMBER_FIELDS if f in d}
        dem = cls(workload=d["workload"], requests_per_s=num["requests_per_s"],
                  input_tokens=Lengths.of(d["input_tokens"], f"{where}input_tokens"),
                  output_tokens=Lengths.of(d["output_tokens"], f"{where}output_tokens"),
                  ttft_s=num["ttft_s"], tpot_s=num["tpot_s"], peak_to_average=num.get("peak_to_average", 1.0),
                  name=d.get("name", name), percentile=num.get("percentile", 0.0),
                  prefix_share=num.get("prefix_share", 0.0), prefix_tokens=d.get("prefix_tokens", 0),
                  prefixes=d.get("prefixes", 1))
        dem.validate(where)
        return dem
