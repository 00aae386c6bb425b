"""S1-S3 as curves, for every defensible reading (issue 18): the Trn3 / Trn2 ratios over the whole
interactivity range, per Trainium2 data-type recipe, per power basis, per UltraServer and per chip.

A *reading* fixes what the seeds leave open:
    trn2 recipe   "best"  every recipe the model lets Trainium2 run (its frontier picks the fastest);
                  "bf16"  the shipped checkpoint with its MXFP4 experts upcast to BF16 at load, as the vLLM
                          Neuron GPT-OSS tutorial runs it (Trainium2 has no MX data types);
                  "fp8"   the checkpoint converted to FP8 (weights and experts)
    power basis   modelled (activity) | all-in (provisioned at TDP): power.BASES
Trainium3 always runs its best recipe (native MXFP4). The curves are read off the same sweeps as
curves.py (no new sweep per reading: a recipe is a filter, a power basis a re-priced column).

    ratio_y(x)        = y_trn3(x) / y_trn2(x)   at interactivity x (S1: tokens/MW, S2: users, per chip:
                                                output tokens/s per chip)
    ratio_x(c)        = x_trn3(c) / x_trn2(c)   at concurrency c per UltraServer (S3)
    x at which the per-chip ratio equals AWS's "3x throughput per chip" (S27, S45) and S1 equals 5x: where
    the quotes sit on the modelled curves.

Does not: judge a claim (verdicts.py) or run a sweep (curves.sweeps).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.core.calibration import of as calibration_of
from perfmodel.claims import result_cache
from perfmodel.claims.serving import curves as sc
from perfmodel.serving import power, search

RECIPES = {"best": None, "bf16": ("bf16", "bf16"), "fp8": ("fp8", "fp8")}  # (compute, expert weights) of Trn2
RECIPE_TEXT = {"best": "Trn2 at its best recipe (the frontier's pick)",
               "bf16": "Trn2 serving the shipped checkpoint, MXFP4 experts upcast to BF16 (no MX on Trn2)",
               "fp8": "Trn2 serving the checkpoint converted to FP8"}
PER_CHIP = "output_tokens_per_s_per_chip"
# the ratios drawn against their quotes (report, app): metric of curves(), quoted ratio
CHARTED = (("S1 tokens/MW", sc.S1_QUOTE), ("per-chip throughput", sc.PER_CHIP_QUOTE),
           ("S3 interactivity", sc.S3_QUOTE))
TITLE = ("S1-S3 by reading (gpt-oss-120b 1k/1k, Trn3 / Trn2 UltraServer; x_ref = the claims' 50 tokens/s/user; "
         "x_where_*: tokens/s/user where the quote sits on the curve)")


@functools.lru_cache(maxsize=12)
def _frames(recipe: str, basis: str) -> dict[str, pd.DataFrame]:
    """Both sweeps under one reading: Trn2's rows of the recipe, power columns on the basis (cached, as the
    sweeps are)."""
    out = {}
    for name, df in sc.sweeps().items():
        if name == sc.OLD and RECIPES[recipe] is not None:
            c, e = RECIPES[recipe]
            df = df[(df["compute_dtype"] == c) & (df["expert_weights_dtype"] == e)]
        if basis != "modelled":
            system = catalog.load_system(name)
            cal = calibration_of(system).with_overrides({"power_basis_all_in": power.BASES.index(basis)})
            df = search.mark_frontiers(power.add_power_columns(df, system, cal))
        out[name] = df
    return out


def _first_crossing(xs: np.ndarray, ratio: np.ndarray, quote: float) -> float:
    """The lowest x at which the ratio crosses `quote`; NaN when it never does (above or below everywhere)."""
    cross = sc.crossings(xs, ratio, quote)
    return float(cross[0]) if len(cross) else float("nan")


def curves(n: int = 60) -> pd.DataFrame:
    """Long frame: reading (trn2 recipe, power basis), metric, x (interactivity or concurrency), both
    systems' values and the Trn3 / Trn2 ratio (kept on disk per version: result_cache.frame)."""
    return result_cache.frame(f"serving.readings.curves {n}", lambda: _curves(n))


def _curves(n: int) -> pd.DataFrame:
    parts = []
    for recipe in RECIPES:
        for basis in power.BASES:
            frames = _frames(recipe, basis)
            for metric, y in (("S1 tokens/MW", sc.MW), ("S2 users", sc.CONC), ("per-chip throughput", PER_CHIP)):
                rc = sc.ratio_curve(frames, y, n)
                parts.append(pd.DataFrame({"trn2_recipe": recipe, "power_basis": basis, "metric": metric,
                                           "x": rc[sc.X], "x_is": sc.X, "trn3": rc[f"{y}_trn3"],
                                           "trn2": rc[f"{y}_trn2"], "ratio": rc["ratio"]}))
            rc = sc.conc_ratio_curve(frames, n)
            parts.append(pd.DataFrame({"trn2_recipe": recipe, "power_basis": basis, "metric": "S3 interactivity",
                                       "x": rc[sc.CONC], "x_is": sc.CONC, "trn3": rc[f"{sc.X}_trn3"],
                                       "trn2": rc[f"{sc.X}_trn2"], "ratio": rc["ratio"]}))
    return pd.concat(parts, ignore_index=True)


def table() -> pd.DataFrame:
    """One row per reading: S1-S3 and the per-chip ratio at the claims' reading point (x_ref), their range over
    the shared interactivities, and where the quotes (S1 5x, per chip 3x) sit on the curves (cached per
    process, as the sweeps are)."""
    return _table().copy()


@functools.lru_cache(maxsize=1)
def _table() -> pd.DataFrame:
    return result_cache.frame("serving.readings.table", _compute_table)


def _compute_table() -> pd.DataFrame:
    rows = []
    for recipe in RECIPES:
        for basis in power.BASES:
            frames = _frames(recipe, basis)
            r = sc.readings(frames)
            row = {"trn2_recipe": recipe, "power_basis": basis, "reading": RECIPE_TEXT[recipe] + f"; {basis} power",
                   "x_ref_tokens_per_s_per_user": r["x_ref"], "S1": r["s1"], "S2": r["s2"], "S3": r["s3"]}
            s1, chip = sc.ratio_curve(frames, sc.MW), sc.ratio_curve(frames, PER_CHIP)
            s3 = sc.conc_ratio_curve(frames)
            for key, rc in (("S1", s1), ("per_chip", chip), ("S3", s3)):
                row[f"{key}_min"], row[f"{key}_max"] = float(np.nanmin(rc["ratio"])), float(np.nanmax(rc["ratio"]))
            xs = chip[sc.X].to_numpy()
            row["per_chip_at_x_ref"] = float(np.interp(np.log(r["x_ref"]), np.log(xs), chip["ratio"]))
            row["x_where_per_chip_is_3x"] = _first_crossing(xs, chip["ratio"].to_numpy(), sc.PER_CHIP_QUOTE)
            row["x_where_S1_is_5x"] = _first_crossing(s1[sc.X].to_numpy(), s1["ratio"].to_numpy(), sc.S1_QUOTE)
            rows.append(row)
    return pd.DataFrame(rows)


def _envelope_words() -> str:
    """What measured Trainium serving covers (the claims' plans mostly lie beyond it)."""
    from perfmodel.catalog import serving_engines

    env = serving_engines.envelope(sc.engine(sc.OLD))
    return (f"at most {env['max_running']:g} sequences per replica and attention-DP {env['max_attention_dp']:g}, "
            f"so these readings are extrapolated" if env is not None else "not stated")


def sentence(claim: str) -> str:
    """The claim's value under every other reading, for its verdict note."""
    t = table()
    parts = [f"{row.trn2_recipe}/{row.power_basis} {row[claim]:.2f}x" for _, row in t.iterrows()]
    bf16 = t[(t.trn2_recipe == "bf16") & (t.power_basis == "modelled")].iloc[0]
    best = t[(t.trn2_recipe == "best") & (t.power_basis == "modelled")].iloc[0]
    stacks = " and ".join(sorted({sc.engine(n) for n in (sc.NEW, sc.OLD)}))
    return (f"Reading: Trn2 at its best recipe, per UltraServer, modelled power, both priced as {stacks} runs them "
            f"(the frontier over every plan; the measured envelope is {_envelope_words()}). Every reading (Trn2 recipe / power "
            f"basis; claims/serving/readings.py): {', '.join(parts)}. AWS's '3x throughput per chip' (S27, S45) "
            f"sits at {best.x_where_per_chip_is_3x:.0f} tokens/s/user with Trn2 at its best recipe; with the shipped "
            f"checkpoint upcast to BF16 on Trn2 the per-chip ratio is {bf16.per_chip_min:.1f}x or more everywhere.")
