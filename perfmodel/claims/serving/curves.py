"""The Trn3 vs Trn2 UltraServer serving curves behind claims S1-S4 (gpt-oss-120b): the frontier
sweeps of both systems, and the ratios read off them.

The chart (S4; seeds 002, 003): x = interactivity (output tokens/s per user), y = output tokens/s
per MW (002) or concurrent users per UltraServer (003), one curve per UltraServer. Each curve is
the Pareto frontier of `search.frontier_sweep` over every serving plan inside the scale-up
domain (t, d_a, e, p), data type and concurrency, aggregated serving, KV reserved for the full
request, priced as the hardware family's serving stack runs it (`engine`: nxd-inference on
Trainium, serving_engines.default_for; each row labelled inside or outside its measured envelope).
Nothing here is tuned to a claim.

Reading points (stated, not tuned; every note also gives the ratio over the whole shared range):
    mix     1k input / 1k output tokens (the seeds state no lengths; the brief suggests 1k/1k)
    x_ref   50 tokens/s per user (TPOT 20 ms): an interactive-chat operating point inside both
            curves' ranges. Seed 003 reads Trn2 as 'really responsive ... medium concurrency'
    curves  read as drawn: log-log interpolation between neighbouring frontier points (a
            continuous reading, so elasticities are not steps of the configuration grid)
    S1      Trn3 tokens/MW at x_ref  /  Trn2 tokens/MW at x_ref
    S2      Trn3 concurrent users per UltraServer at x_ref  /  Trn2's at x_ref
    S3      c_ref = Trn2's concurrency at x_ref (the same operating point); Trn3's interactivity
            at c_ref  /  Trn2's at c_ref ('slide the lever' horizontally)
Every note also gives the ratio's range over the interactivities both curves reach.

Does not: judge a claim (serving.py) or format output.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import neuron_stacks, serving_engines, workload_files
from perfmodel.serving import power, search
from perfmodel.serving.steady_state import Mix

NEW, OLD = "trn3-ultraserver", "trn2-ultraserver"
KEYS = {NEW: "trn3", OLD: "trn2"}
WORKLOAD = "gpt-oss-120b"
MIX = Mix(1024, 1024)
X_REF = 50.0  # tokens/s per user
PER_OCTAVE = 4  # concurrency grid: 4 steps per doubling (<= 19% apart), so ratios read off it are that fine
X = search.X
MW, CONC = "output_tokens_per_s_per_mw", "concurrency_per_scaleup"
# the quoted ratios (seed_claims.md): S1 tokens per MW, S3 interactivity at the same concurrency, and AWS's
# "3x throughput per chip" for GPT-OSS (S27, S45); S2's two quotes are per seed (serving.s2_concurrency)
S1_QUOTE, S3_QUOTE, PER_CHIP_QUOTE = 5.0, 6.0, 3.0


def crossings(x: np.ndarray, ratio: np.ndarray, quote: float) -> np.ndarray:
    """The x (sorted) at which a sampled ratio curve crosses `quote`: log-linear interpolation between the
    samples on either side of it (NaN samples dropped)."""
    x, ratio = np.asarray(x, dtype=float), np.asarray(ratio, dtype=float)
    ok = np.isfinite(ratio)
    lx, d = np.log(x[ok]), np.log(ratio[ok] / quote)
    k = np.flatnonzero(np.sign(d[:-1]) * np.sign(d[1:]) < 0)
    cross = np.exp(lx[k] - d[k] * (lx[k + 1] - lx[k]) / (d[k + 1] - d[k]))
    return np.sort(np.concatenate([cross, np.exp(lx[d == 0])]))


@functools.lru_cache(maxsize=4)
def sweeps(mix: Mix = MIX) -> dict[str, pd.DataFrame]:
    """Full frontier sweeps (all plans, data types, concurrencies) for both UltraServers (cached per mix)."""
    arch = workload_files.load_workload(WORKLOAD)
    conc = search.default_concurrency(per_octave=PER_OCTAVE)
    out = {}
    for name in (NEW, OLD):
        system = catalog.load_system(name)
        eng, env = serving_engines.resolve(None, system)
        out[name] = search.frontier_sweep(system, arch, mix, concurrency=conc, software=neuron_stacks.software(eng, system),
                                          envelope_profile=env)
    return out


def engine(name: str) -> str:
    """The serving stack the curves of system `name` are priced with (the family's default)."""
    return serving_engines.default_for(catalog.load_system(name))


_FRONTS: dict = {}  # (id(frame), y, x) -> (weak reference to the frame, its frontier): read many times per frame


def _front(df: pd.DataFrame, y: str, x: str = X) -> pd.DataFrame:
    key = (id(df), y, x)
    hit = _FRONTS.get(key)
    if hit is not None and hit[0]() is df:  # the same frame still alive (an id can be reused after it dies)
        return hit[1]
    f = df[df["eligible"]]
    front = f[search.pareto_mask(f[x], f[y])].sort_values(x)
    _FRONTS[key] = (weakref.ref(df), front)
    weakref.finalize(df, _FRONTS.pop, key, None)  # the frame gone, its frontier goes too
    return front


def _front_xy(df: pd.DataFrame, y: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    """log x, log y of the frontier, sorted by x (numpy only: read many times on small re-evaluated frames)."""
    key = (id(df), y, x, "xy")
    hit = _FRONTS.get(key)
    if hit is not None and hit[0]() is df:
        return hit[1]
    ok = df["eligible"].to_numpy(dtype=bool)
    xv, yv = df[x].to_numpy(dtype=float)[ok], df[y].to_numpy(dtype=float)[ok]
    m = search.pareto_mask(xv, yv)
    order = np.argsort(xv[m], kind="stable")
    out = (np.log(xv[m][order]), np.log(yv[m][order]))
    _FRONTS[key] = (weakref.ref(df), out)
    weakref.finalize(df, _FRONTS.pop, key, None)
    return out


def read_curve(df: pd.DataFrame, x: str, y: str, x0) -> np.ndarray:
    """The frontier of (x, y) read at x0 as the chart draws it: log-log interpolation between
    neighbouring frontier points; left of the curve the best y (all points qualify), right of it
    NaN (no configuration reaches x0)."""
    xs, ys = _front_xy(df, y, x)
    x0 = np.asarray(x0, dtype=float)
    return np.exp(np.interp(np.log(x0), xs, ys, left=ys[0], right=np.nan))


def readings(frames: dict[str, pd.DataFrame], x_ref: float = X_REF) -> dict[str, float]:
    """The S1-S3 ratios and their reading points from two sweep frames (keys NEW, OLD)."""
    new, old = frames[NEW], frames[OLD]
    r = {"x_ref": x_ref}
    for k, y in (("s1", MW), ("s2", CONC)):
        r[f"{k}_new"], r[f"{k}_old"] = float(read_curve(new, X, y, x_ref)), float(read_curve(old, X, y, x_ref))
        r[k] = r[f"{k}_new"] / r[f"{k}_old"]
    r["c_ref"] = r["s2_old"]
    r["s3_new"], r["s3_old"] = float(read_curve(new, CONC, X, r["c_ref"])), float(read_curve(old, CONC, X, r["c_ref"]))
    r["s3"] = r["s3_new"] / r["s3_old"]
    return r


def _span(frames, col) -> tuple[float, float]:
    lo = max(frames[n].loc[frames[n]["eligible"], col].min() for n in frames)
    hi = min(frames[n].loc[frames[n]["eligible"], col].max() for n in frames)
    return lo, hi


def ratio_curve(frames: dict[str, pd.DataFrame], y: str, n: int = 60) -> pd.DataFrame:
    """Trn3 / Trn2 ratio of y read off both curves at interactivities both reach (geometric grid)."""
    xs = np.geomspace(*_span(frames, X), n)
    a, b = read_curve(frames[NEW], X, y, xs), read_curve(frames[OLD], X, y, xs)
    return pd.DataFrame({X: xs, f"{y}_trn3": a, f"{y}_trn2": b, "ratio": a / b})


def conc_ratio_curve(frames: dict[str, pd.DataFrame], n: int = 60) -> pd.DataFrame:
    """Trn3 / Trn2 interactivity read off both curves at concurrencies (per UltraServer) both reach."""
    cs = np.geomspace(*_span(frames, CONC), n)
    a, b = read_curve(frames[NEW], CONC, X, cs), read_curve(frames[OLD], CONC, X, cs)
    return pd.DataFrame({CONC: cs, f"{X}_trn3": a, f"{X}_trn2": b, "ratio": a / b})


def chart_frame(mix: Mix = MIX) -> pd.DataFrame:
    """S4 chart data: both frontiers for y = tokens/MW and y = concurrency, with the reading points."""
    frames = sweeps(mix)
    r = readings(frames)
    cols = ["system", "tp", "da", "ep", "pp", "concurrency", "compute_dtype", "expert_weights_dtype", X,
            "time_per_output_token_s", "ttft_s", "output_tokens_per_s_per_chip", MW,
            "output_tokens_per_s_per_mw_at_low_power", "output_tokens_per_s_per_mw_at_high_power", CONC,
            "chip_power_w", "tdp_w"]
    parts = []
    for name, df in frames.items():
        for y, curve in ((MW, "tokens_per_mw"), (CONC, "concurrency")):
            f = _front(df, y)[cols].assign(curve=curve, reading="")
            parts.append(f)
    out = pd.concat(parts, ignore_index=True)

    def mark(system, curve, pick, label):
        sub = out[(out["system"] == system) & (out["curve"] == curve)]
        if len(sub):
            i = pick(sub)
            out.loc[i, "reading"] = (out.loc[i, "reading"] + "; " if out.loc[i, "reading"] else "") + label

    for name in (NEW, OLD):  # the frontier points the interpolated readings lie between
        k = KEYS[name]
        for curve, xc, x0, lab in (("tokens_per_mw", X, r["x_ref"], "S1"), ("concurrency", X, r["x_ref"], "S2"),
                                   ("concurrency", CONC, r["c_ref"], "S3")):
            sub = out[(out["system"] == name) & (out["curve"] == curve)].sort_values(xc)
            below, above = sub[sub[xc] <= x0], sub[sub[xc] >= x0]
            for part, pick in ((below, -1), (above, 0)):
                if len(part):
                    mark(name, curve, lambda s, i=part.index[pick]: i, f"{lab} neighbour ({k})")
    pts = []
    for name, key in KEYS.items():
        side = "new" if name == NEW else "old"
        pts += [{"system": name, "curve": "tokens_per_mw", X: r["x_ref"], MW: r[f"s1_{side}"],
                 "reading": f"S1 reading ({key}, interpolated)"},
                {"system": name, "curve": "concurrency", X: r["x_ref"], CONC: r[f"s2_{side}"],
                 "reading": f"S2 reading ({key}, interpolated)"},
                {"system": name, "curve": "concurrency", CONC: r["c_ref"], X: r[f"s3_{side}"],
                 "reading": f"S3 reading ({key}, interpolated)"}]
    out = pd.concat([out, pd.DataFrame(pts)], ignore_index=True)
    out.insert(0, "power_caveat", [power.caveat(catalog.load_system(s)) for s in out["system"]])
    return out
