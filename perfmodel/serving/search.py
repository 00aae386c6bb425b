"""Frontier search: every serving plan inside the scale-up domain, and its Pareto frontiers.

    plan_grid      all (t, d_a, e, p) replica plans with t x d_a x p <= scale-up chips, x data-type
                   recipes the chip supports, x concurrencies, built with array operations
                   (np.meshgrid + masks), never a Python loop per configuration
    frontier_sweep serving.serve (two vectorised evaluations per chunk of configurations and per
                   serving mode) + power and cost columns + frontier flags
    pareto_mask    points not dominated in (x, y), both maximised: sort by x descending, keep a
                   point if its y beats the running maximum of every point with larger x (O(N log N))

Plans: t in powers of two up to the attention heads and the domain (or `max_chips`: a replica spanning
whole scale-up domains, its collectives placed over the scale-out tier by comm/topology); context parallel
c (`cp`, default 1: long contexts) multiplies the replica's chips; d_a (attention data parallel)
in powers of two and divisors of the domain; p in {1, 2, 4}; e (expert parallel, MoE only) in
powers of two dividing t x d_a and E. Concurrency C per replica on a geometric grid, rounded up
to a multiple of d_a x p. Data-type recipes: for each compute type d in {bf16, fp8, mxfp8, mxfp4}
the chip's tensor engine supports, Precision.uniform(d) (weights d, KV cache FP8 for 8-bit and
narrower), with routed experts stored either as d or as shipped (gpt-oss: MXFP4; dequantized on
the vector engine where the chip has no MX support).

Frontiers (all configurations that fit in HBM, optionally under a TTFT bound): interactivity
(tokens/s per user) against output tokens/s per chip, per MW (facility) and per $ (where a price
exists or is assumed).

Does not: format output.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import pandas as pd

from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Precision
from perfmodel.core.workload import ModelArch
from perfmodel.serving import cost, envelope, power
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, serve

SWEEP_DTYPES = (DType.BF16, DType.FP8, DType.MXFP8, DType.MXFP4)
DEFAULT_PP = (1, 2, 4)
CHUNK = 16384  # configurations per vectorised evaluation (bounds memory: ops x quantities x chunk floats)
X = "tokens_per_s_per_user"
Y_COLS = {"chip": "output_tokens_per_s_per_chip", "mw": "output_tokens_per_s_per_mw", "usd": "output_tokens_per_usd"}


def default_concurrency(max_c: int = 8192, per_octave: int = 2) -> np.ndarray:
    """Geometric concurrency grid: round(2^(k / per_octave)) for k = 0.. up to max_c (1, 2, 3, 4, 6,
    8, 11, 16, ... for per_octave = 2: steps of at most 1.5x)."""
    k = np.arange(0, int(np.log2(max_c) * per_octave) + 1)
    return np.unique(np.round(2.0 ** (k / per_octave))).astype(int)


NATIVE_ORDER = (DType.MXFP8, DType.FP8, DType.BF16)


def native_dtype(system: System) -> DType:
    """The compute / weight type a system serves a checkpoint in when none is named: the first of NATIVE_ORDER its
    tensor engine runs (MXFP8 on Trainium3 and Blackwell, FP8 on Trainium1-2 and Hopper, BF16 on A100).
    8-bit is what serving engines deploy by default on hardware with 8-bit tensor rates (FP8 checkpoints, vLLM's
    and NxD Inference's FP8 / MX quantisation); 4-bit dense weights change the model's accuracy and are only
    swept (`pareto`) or asked for (--dtype). Routed experts keep their shipped type (gpt-oss: MXFP4)."""
    return next(d for d in NATIVE_ORDER if system.chip.supports(d) or d == DType.BF16)


def recipes(system: System, arch: ModelArch, dtypes: Iterable | None = None) -> list[tuple[DType, DType, DType, DType]]:
    """(compute, weights, expert weights, KV cache) combinations the chip can run."""
    chip = system.chip
    want = [DType.parse(d) if isinstance(d, str) else DType(d) for d in (dtypes or SWEEP_DTYPES)]
    out = []
    for d in want:
        if not chip.supports(d):
            continue
        p = Precision.uniform(d)
        experts = {d}
        if arch.is_moe and arch.expert_weight_dtype is not None:
            experts.add(DType(arch.expert_weight_dtype))
        for e in sorted(experts, key=lambda x: x.value):
            out.append((p.compute, p.weights, e, p.kv_cache))
    if not out:
        have = ", ".join(x.value for x in chip.tensor.flop_per_s)
        raise ValueError(f"{system.name}: none of {', '.join(d.value for d in want)} is supported (has {have})")
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plan_grid(system: System, arch: ModelArch, dtypes: Iterable | None = None, concurrency: Iterable | None = None,
              tp: Iterable | None = None, da: Iterable | None = None, pp: Iterable | None = None,
              max_chips: int | None = None, cp: Iterable | None = None) -> Grid:
    """Every valid serving configuration in the scale-up domain (module doc), as one Grid; with `max_chips`
    above the domain, replicas that span whole scale-up domains over the scale-out network too (expert
    parallelism and attention-DP over EFA / InfiniBand, pipeline stages across nodes)."""
    dom = int(max_chips or system.scaleup_chips)
    domain = int(system.scaleup_chips)
    pow2 = [2 ** j for j in range(0, int(np.log2(dom)) + 1)]
    tp_v = np.asarray(list(tp) if tp is not None else [t for t in pow2 if t <= arch.num_attention_heads], float)
    da_v = np.asarray(list(da) if da is not None else sorted(set(pow2) | set(_divisors(dom))), float)
    pp_v = np.asarray(list(pp) if pp is not None else [p for p in DEFAULT_PP if p <= arch.num_hidden_layers], float)
    ep_v = np.asarray([e for e in pow2 if e <= max(arch.num_experts, 1)] if arch.is_moe else [1], float)
    c_v = np.asarray(list(concurrency) if concurrency is not None else default_concurrency(), float)
    cp_v = np.asarray(list(cp) if cp is not None else [1], float)
    rec = recipes(system, arch, dtypes)
    T, A, P, Ep, Cc, R, Cp = np.meshgrid(tp_v, da_v, pp_v, ep_v, c_v, np.arange(len(rec)), cp_v, indexing="ij")
    T, A, P, Ep, Cc, R, Cp = (x.ravel() for x in (T, A, P, Ep, Cc, R, Cp))
    n = T * A
    chips = n * P * Cp
    ok = (chips <= dom) & (n % Ep == 0) & ((chips <= domain) | (np.mod(chips, domain) == 0))  # whole domains
    if arch.is_moe:
        ok &= (arch.num_experts % Ep == 0)
    T, A, P, Ep, Cc, R, Cp = (x[ok] for x in (T, A, P, Ep, Cc, R, Cp))
    step = A * P
    Cc = np.ceil(Cc / step) * step  # whole micro-batches, >= 1 sequence per attention-DP rank
    key = np.unique(np.stack([T, A, P, Ep, Cc, R, Cp], axis=1), axis=0)
    T, A, P, Ep, Cc, R, Cp = key.T
    if len(T) == 0:
        raise ValueError(f"{system.name}: no serving plan fits the given ranges")
    ridx = R.astype(int)
    cols = [np.asarray([r[i] for r in rec], dtype=object)[ridx] for i in range(4)]
    return Grid(tp=T, da=A, ep=Ep, pp=P, concurrency=Cc, compute=cols[0], weights=cols[1], expert_weights=cols[2],
                kv_cache=cols[3], cp=Cp)


def pareto_mask(x, y) -> np.ndarray:
    """True where (x, y) is not dominated (both maximised; ties keep the first of equal points)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError("pareto_mask: x and y must have the same shape")
    valid = np.isfinite(x) & np.isfinite(y)
    idx = np.flatnonzero(valid)
    if len(idx) == 0:
        return np.zeros(x.shape, dtype=bool)
    order = idx[np.lexsort((-y[idx], -x[idx]))]  # x descending, then y descending
    ys = y[order]
    prev_best = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    keep = ys > prev_best
    mask = np.zeros(x.shape, dtype=bool)
    mask[order[keep]] = True
    return mask


def serve_sweep(system: System, arch: ModelArch, mix: Mix, modes: Iterable, grid: Grid, cal: Calibration,
                chunk_tokens: int = 512, kv_reserve: str = "peak",
                progress: Callable[[int, int], None] | None = None, software=None,
                prefix_tokens: int = 0, speculative=None) -> pd.DataFrame:
    """serving.serve over `grid` in every mode, in chunks of CHUNK configurations (`software`: the serving-engine
    profile or Neuron stack around the chip, resolved at the edge, ServingOptions.software; `prefix_tokens`: prompt
    tokens served from the prefix cache)."""
    modes = [Mode(m) for m in modes]
    starts = list(range(0, len(grid), CHUNK))
    total, done, parts = len(starts) * len(modes), 0, []
    for m in modes:
        opts = ServingOptions(mode=m, chunk_tokens=chunk_tokens, kv_reserve=kv_reserve, software=software,
                              prefix_tokens=prefix_tokens, speculative=speculative)
        for s in starts:
            parts.append(serve(system, arch, grid.take(slice(s, s + CHUNK)), mix, opts, cal))
            done += 1
            if progress:
                progress(done, total)
    return pd.concat(parts, ignore_index=True)


def frontier_sweep(system: System, arch: ModelArch, mix: Mix = Mix(), modes: Iterable = (Mode.AGGREGATED,),
                   grid: Grid | None = None, cal: Calibration | None = None, price: cost.Price | None = None,
                   tdp_w: float | None = None, max_ttft_s: float | None = None, chunk_tokens: int = 512,
                   kv_reserve: str = "peak", progress: Callable[[int, int], None] | None = None,
                   software=None, prefix_tokens: int = 0, speculative=None, envelope_profile=None,
                   **grid_kw) -> pd.DataFrame:
    """All configurations of `grid` (default plan_grid(**grid_kw)) in every serving mode, with
    power, cost and frontier columns: on_frontier_{chip,mw,usd} (among rows that fit in HBM and
    meet max_ttft_s), and `envelope` (measured | extrapolated: inside the engine's measured envelope
    `envelope_profile`, serving/envelope.py; extrapolated everywhere without one). progress(done, total) is
    called after each chunk."""
    cal = cal or calibration_of(system)
    grid = grid if grid is not None else plan_grid(system, arch, **grid_kw)
    df = serve_sweep(system, arch, mix, modes, grid, cal, chunk_tokens, kv_reserve, progress, software, prefix_tokens,
                     speculative)
    return envelope.label(finish_sweep(df, system, cal, price, tdp_w, max_ttft_s), envelope_profile)


def finish_sweep(df: pd.DataFrame, system: System, cal: Calibration, price: cost.Price | None = None,
                 tdp_w: float | None = None, max_ttft_s: float | None = None) -> pd.DataFrame:
    """Power, cost and frontier columns on a serving.serve frame (re-run alone when only power or
    price assumptions change: the serving metrics do not depend on them)."""
    price = price or cost.price_for(system, cal)
    df = power.add_power_columns(df, system, cal, tdp_w)
    df = cost.add_cost_columns(df, price)
    return mark_frontiers(df, max_ttft_s)


def mark_frontiers(df: pd.DataFrame, max_ttft_s: float | None = None, by: str = "system") -> pd.DataFrame:
    """Add eligible (valid plan, fits, TTFT bound) and on_frontier_{chip,mw,usd} flags, per `by` group:
    a configuration that breaks a plan rule or does not fit is never on a frontier."""
    out = df.copy()
    ok = out["kv_fits"].to_numpy(dtype=bool) & out["valid"].to_numpy(dtype=bool)
    if max_ttft_s is not None:
        ok &= out["ttft_s"].to_numpy() <= max_ttft_s
    out["eligible"] = ok
    for name, col in Y_COLS.items():
        flag = np.zeros(len(out), dtype=bool)
        for _, idx in out.groupby(by, sort=False).indices.items():
            idx = np.asarray(idx)
            sub = idx[ok[idx]]
            if len(sub):
                flag[sub] = pareto_mask(out[X].to_numpy()[sub], out[col].to_numpy(dtype=float)[sub])
        out[f"on_frontier_{name}"] = flag
    return out


def frontier(df: pd.DataFrame, y: str = "mw") -> pd.DataFrame:
    """The frontier rows for y in {'chip', 'mw', 'usd'} (or a column name), sorted by interactivity."""
    flag = f"on_frontier_{y}" if y in Y_COLS else None
    if flag is None:
        col = y
        by = ["system", "frontier"] if "frontier" in df else "system"  # an engine and a roofline frontier apart
        f = pd.concat([g[pareto_mask(g[X], g[col])] for _, g in df[df["eligible"]].groupby(by, sort=False)])
    else:
        f = df[df[flag]]
    return f.sort_values(["system", "frontier", X] if "frontier" in f else ["system", X]).reset_index(drop=True)


def best_at(frontier_df: pd.DataFrame, y: str, x_min) -> np.ndarray:
    """Best y among frontier points with interactivity >= x_min (array of x_min); NaN where none."""
    xs = frontier_df[X].to_numpy(dtype=float)
    ys = frontier_df[y].to_numpy(dtype=float)
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    suffix_best = np.maximum.accumulate(ys[::-1])[::-1]  # best y at x >= xs[i]
    x_min = np.atleast_1d(np.asarray(x_min, dtype=float))
    i = np.searchsorted(xs, x_min, side="left")
    out = np.full(x_min.shape, np.nan)
    have = i < len(xs)
    out[have] = suffix_best[i[have]]
    return out
