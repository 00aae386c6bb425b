"""Traffic for the request-level simulation: who arrives when, with how many input and output tokens.

    poisson     inter-arrival gaps exponential with mean 1 / rate (MLPerf Server's load)
    gamma       gaps Gamma(shape 1/cv^2, scale cv^2 / rate): the same mean rate, burstier for cv > 1
                (cv = coefficient of variation of the gaps; cv = 1 is Poisson)
    closed      C clients, each sending its next request `think_s` after its previous one ends
                (a benchmark's max-concurrency; MLPerf Offline is closed with C = all the queries)
    trace       a trace's requests (its CSV read at the edge: catalog/trace_files.py; requests_of)

Lengths: a fixed value, or drawn uniformly in [ratio L, L] around the demand's (planner.Lengths) weighted
values; prefix: a share of requests that open with a shared prefix of P tokens, from G distinct prefixes
(system prompts, agent scaffolds, chat history), or the trace's columns.
Every draw comes from numpy's generator seeded by `seed`: a run repeats exactly.

Does not: schedule or price (engine.py, step_table.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfmodel.core import limits

KINDS = ("poisson", "gamma", "closed", "trace")


@dataclass(frozen=True)
class Requests:
    """Open-loop requests as arrays (arrival times in s; for a closed loop the arrivals are decided while it
    runs and `arrival_s` is NaN)."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_id: np.ndarray  # -1: no shared prefix
    prefix_tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.input_tokens)


@dataclass(frozen=True)
class Traffic:
    """How requests arrive (module doc). rate: requests/s (poisson, gamma); cv: the gaps' coefficient of
    variation (gamma); clients and think_s (closed); path (trace)."""

    kind: str = "poisson"
    rate: float = 1.0
    cv: float = 1.0
    clients: int = 1
    think_s: float = 0.0
    path: str = ""

    def validate(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"traffic kind: one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind in ("poisson", "gamma") and not (math.isfinite(self.rate) and 0 < self.rate <= 1e7):
            raise ValueError(f"traffic rate: requests/s in (0, 1e7], got {self.rate!r}")
        if self.kind == "gamma" and not (math.isfinite(self.cv) and 0.05 <= self.cv <= 20):
            raise ValueError(f"traffic cv: the gaps' coefficient of variation in [0.05, 20], got {self.cv!r}")
        if self.kind == "closed":
            limits.check_count(self.clients, "traffic clients", 1, 10 ** 6)
            if not (math.isfinite(self.think_s) and 0 <= self.think_s <= 1e6):
                raise ValueError(f"traffic think_s: seconds in [0, 1e6], got {self.think_s!r}")
        if self.kind == "trace" and not self.path:
            raise ValueError("traffic trace: a CSV path is required (columns arrival_s, input_tokens, output_tokens)")


@dataclass(frozen=True)
class Shapes:
    """Request lengths and shared prefixes: lengths (value, weight) pairs, drawn uniformly in [ratio L, L]
    around the drawn value L (ratio 1: exactly L); `prefix_share` of requests start with one of `prefixes`
    shared prefixes of `prefix_tokens` tokens (capped below the request's input)."""

    input_tokens: tuple = ((1024, 1.0),)
    output_tokens: tuple = ((1024, 1.0),)
    ratio: float = 1.0
    prefix_share: float = 0.0
    prefix_tokens: int = 0
    prefixes: int = 1

    def validate(self) -> None:
        if not 0 < self.ratio <= 1:
            raise ValueError(f"length ratio: in (0, 1] (lengths drawn in [ratio L, L]), got {self.ratio!r}")
        if not 0 <= self.prefix_share <= 1:
            raise ValueError(f"prefix share: a fraction of requests in [0, 1], got {self.prefix_share!r}")
        if self.prefix_share and (self.prefix_tokens < 1 or self.prefixes < 1):
            raise ValueError("prefix: prefix_tokens and prefixes must be >= 1 when prefix_share > 0")


def _lengths(rng: np.random.Generator, pairs, n: int, ratio: float) -> np.ndarray:
    vals = np.asarray([float(v) for v, _ in pairs])
    w = np.asarray([float(x) for _, x in pairs])
    base = vals[rng.choice(len(vals), size=n, p=w / w.sum())]
    return np.maximum(1, np.round(base * rng.uniform(ratio, 1.0, n))).astype(np.int64)


def draw(traffic: Traffic, shapes: Shapes, n: int, seed: int = 0, trace: Requests | None = None) -> Requests:
    """n requests; a trace's own (`trace`: requests_of its file's columns, read at the edge), n ignored."""
    traffic.validate()
    if traffic.kind == "trace":
        if trace is None:
            raise ValueError(f"traffic trace {traffic.path}: its requests are read where inputs are read "
                             "(catalog/trace_files.read, then requests_of) and passed in")
        return trace
    shapes.validate()
    limits.check_count(n, "requests", 1, 10 ** 8)
    rng = np.random.default_rng(seed)
    if traffic.kind == "poisson":
        arrival = np.cumsum(rng.exponential(1.0 / traffic.rate, n))
    elif traffic.kind == "gamma":
        k = 1.0 / traffic.cv ** 2
        arrival = np.cumsum(rng.gamma(k, 1.0 / (k * traffic.rate), n))
    else:
        arrival = np.full(n, np.nan)
    inp = _lengths(rng, shapes.input_tokens, n, shapes.ratio)
    out = _lengths(rng, shapes.output_tokens, n, shapes.ratio)
    shared = rng.uniform(size=n) < shapes.prefix_share
    pid = np.where(shared, rng.integers(0, max(1, shapes.prefixes), n), -1)
    ptok = np.where(shared, np.minimum(shapes.prefix_tokens, inp - 1), 0)
    return Requests(arrival, inp, out, pid.astype(np.int64), ptok.astype(np.int64))


def requests_of(columns: dict[str, np.ndarray]) -> Requests:
    """A trace's requests from its checked columns (catalog/trace_files.read, at the edge): a shared prefix is
    cut below the request's own input."""
    inp = np.asarray(columns["input_tokens"], dtype=np.int64)
    pid = np.asarray(columns["prefix_id"], dtype=np.int64)
    ptok = np.minimum(np.asarray(columns["prefix_tokens"], dtype=np.int64), inp - 1)
    out = np.asarray(columns["output_tokens"], dtype=np.int64)
    return Requests(np.asarray(columns["arrival_s"], dtype=float), inp, out, pid,
                    np.where(pid >= 0, np.maximum(ptok, 0), 0))


def demand_from_trace(reqs: Requests, name: str, workload: str, ttft_s: float, tpot_s: float,
                      percentile: float = 99.0, peak_to_average: float = 1.0, bins: int = 8, where: str = ""):
    """A planner demand (serving/demand.Demand) summarising a trace's requests (requests_of; `name` the trace's,
    its file's stem; `where` how errors start, its file's path): its mean request rate (requests over the span of
    arrivals) and its input / output length distributions (up to `bins` quantile groups, each its mean length
    weighted by its share of requests), with the given targets at `percentile`."""
    from perfmodel.serving.demand import Demand

    if len(reqs) < 2 or reqs.arrival_s[-1] <= reqs.arrival_s[0]:
        raise ValueError(f"{where or name + ': '}a trace needs at least two requests at different times to give a "
                         "rate")

    def groups(x: np.ndarray) -> dict[str, float]:
        order = np.sort(x)
        parts = [p for p in np.array_split(order, min(bins, len(order))) if len(p)]
        out: dict[str, float] = {}
        for p in parts:
            key = str(int(round(p.mean())))
            out[key] = out.get(key, 0.0) + len(p) / len(x)
        return out

    rate = (len(reqs) - 1) / float(reqs.arrival_s[-1] - reqs.arrival_s[0])
    return Demand.from_dict({"workload": workload, "requests_per_s": rate, "input_tokens": groups(reqs.input_tokens),
                             "output_tokens": groups(reqs.output_tokens), "ttft_s": ttft_s, "tpot_s": tpot_s,
                             "peak_to_average": peak_to_average, "percentile": percentile},
                            name=name, where=where or f"{name}: ")
