"""Error bars from measured residuals: intervals by regime, calibrated model by model (group conformal).

A residual is r = ln(predicted / measured) of one measured point the model was not fitted to. Points are grouped
into regimes by a hierarchy of keys, general first:

    quantity         ttft | tpot | throughput (serving, output tokens/s) | training (tokens/s, TFLOP/s, MFU)
    hardware_family  nvidia | trainium | inferentia
    engine           vllm | trtllm | sglang | neuron (any Neuron stack) | training | none (no engine: never
                     measured, so always pooled)
    mode             agg | disagg
    model_family     dense | moe | mla | hybrid
    load             c1-8 | c9-64 | c65-512 | c513+ (concurrent requests of the deployment)

A regime is summarised by its centre and scale, over the deepest level of an answer's key holding at least
MIN_ROWS residuals (pooling upward, never from fewer):

    c = median(r),   h = (q75(r) - q25(r)) / 2                     (robust: one outlier moves neither)

Errors are alike within a model and differ between models, so the unit of exchange is the model, not the row.
Each measured point is scored against its regime built WITHOUT its own model (leave one model out):

    s = |r - c_(-model)| / h_(-model)

and the interval at level a scales every regime by one factor per quantity, the weighted a quantile of those
scores (each model's points weigh 1 / its count: every model counts once, the model being the exchangeable unit):

    lambda_a = Q_w(s, a)
    measured in [ p exp(-(c + lambda_a h)),  p exp(-(c - lambda_a h)) ]       p the prediction

It covers a new model's point with probability about a if that model is exchangeable with the measured ones
(the assumption stated: a new model and configuration err as the measured models did in its regime). Split
conformal's finite-sample factor (1 + 1/K) over K models would guarantee at least a; on the development files
(K = 13-38 models a quantity) it over-covers by 5-7 points, so the plain quantile is used and its coverage,
leave one model out, is measured and shown instead (README; validate --show intervals).

Outside measured ground (no residual shares the answer's hardware family and quantity, an engine never
measured, a projected system, or a plan outside its engine's measured envelope) lambda is multiplied by WIDEN
(an assumption: twice the measured spread, since nothing measured bounds the error there) and the basis says so.

Does not: read files (catalog/interval_files.py) or compute residuals (validation/intervals.py builds them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

KEYS = ("quantity", "hardware_family", "engine", "mode", "model_family", "load")
QUANTITIES = ("ttft", "tpot", "throughput", "training")
MIN_ROWS = 20  # never a regime from fewer measured points (assumption: below ~20 a quartile is a few points)
MIN_HALF = 0.01  # a regime's scale floor (ln units: 1%): identical residuals do not make an interval of width 0
WIDEN = 2.0  # outside measured ground: lambda times this (assumption, module doc)
# concurrent requests: c1-8 | c9-64 | c65-512 | c513+; factors of 8 split the corpus's 1-8,192 concurrency grid into
# four bands of about equal width in log C, where the errors differ (single stream; batched decode; the running
# cap and queueing; attention-DP at scale)
LOAD_EDGES = (8, 64, 512)
DEFAULT_LEVEL = 0.8


def load_bucket(concurrency) -> np.ndarray:
    """The load key of each concurrency (requests in flight in the deployment)."""
    c = np.asarray(concurrency, dtype=float)
    names = np.array(["c1-8", "c9-64", "c65-512", "c513+"])
    return names[np.searchsorted(np.asarray(LOAD_EDGES, dtype=float), c, side="left")]


def model_family(arch) -> str:
    """dense | moe | mla | hybrid of a ModelArch (MLA before MoE: DeepSeek's latent cache sets its decode)."""
    if "linear_attention" in getattr(arch, "layer_types", ()):
        return "hybrid"
    if arch.kv_lora_rank > 0:
        return "mla"
    return "moe" if arch.is_moe else "dense"


def engine_class(engine: str, is_neuron: bool) -> str:
    """The engine key of a serving answer: the GPU engine's name, "neuron" for any Neuron stack, "none"."""
    if not engine or engine == "none":
        return "none"
    return "neuron" if is_neuron else engine


def centre_scale(residuals: np.ndarray) -> tuple[float, float]:
    """(c, h) of a regime's residuals (module doc)."""
    q25, q50, q75 = np.quantile(np.asarray(residuals, dtype=float), [0.25, 0.5, 0.75])
    return float(q50), max(float(q75 - q25) / 2.0, MIN_HALF)


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose weighted cumulative share reaches q (q >= 1: the largest value)."""
    o = np.argsort(values, kind="stable")
    v, w = np.asarray(values, dtype=float)[o], np.asarray(weights, dtype=float)[o]
    c = np.cumsum(w) / w.sum()
    return float(v[min(int(np.searchsorted(c, min(q, 1.0) - 1e-12)), len(v) - 1)])


@dataclass(frozen=True)
class Scores:
    """One quantity's leave-one-model-out scores, each with its model."""

    score: np.ndarray
    model: np.ndarray

    def factor(self, level: float) -> float:
        """lambda at `level` (module doc)."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"interval level {level!r}: give a share in (0, 1), e.g. 0.8 or 0.9")
        _, counts = np.unique(self.model, return_inverse=True)
        return weighted_quantile(self.score, 1.0 / np.bincount(counts)[counts], level)


@dataclass(frozen=True)
class IntervalTable:
    """Regimes (key prefix -> (c, h, rows, models)) at every level holding MIN_ROWS residuals or more, and each
    quantity's scores; with the file they came from."""

    regimes: Mapping[tuple, tuple[float, float, int, int]] = field(default_factory=lambda: MappingProxyType({}))
    scores: Mapping[str, Scores] = field(default_factory=lambda: MappingProxyType({}))
    origin: str = ""

    def regime(self, key: tuple) -> tuple[tuple, tuple[float, float, int, int] | None]:
        """(the regime used, its (c, h, rows, models)): the deepest prefix of `key` the table holds; ((), None)
        where not even the quantity has MIN_ROWS residuals."""
        for depth in range(len(key), 0, -1):
            hit = self.regimes.get(tuple(key[:depth]))
            if hit is not None:
                return tuple(key[:depth]), hit
        return (), None


def bounds(predicted, c: float, h: float, factor: float, widen=1.0) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the measured value around `predicted`: p exp(-(c +- lambda h)), lambda x widen."""
    p = np.asarray(predicted, dtype=float)
    half = factor * h * np.asarray(widen, dtype=float)
    return p * np.exp(-(c + half)), p * np.exp(-(c - half))
