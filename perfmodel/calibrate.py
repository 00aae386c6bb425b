"""Calibration fit: one hardware family's named efficiency parameters fitted to measurements, cross-validated.

    fit("neuron")                        # default parameters, the development cases, 5 grouped folds
    fit("nvidia", ["tensor_efficiency", "op_overhead"], cases_path="my.csv", folds=3)

What is fitted: a few named parameters of one calibration family file (neuron = Trainium +
Inferentia, nvidia), one value for the whole family, never a value per case. The cases are
the rows of a measurements file (validation.py columns) whose system belongs to that family and
which the model predicts; each evaluation re-runs the validation families that hold them
(validation.run_cases) with the trial values applied (calibration.applied), so every model
path sees them exactly as a user of the fitted file would.

    residual_i = log(predicted_i / measured_i)        (one per case, unweighted)
    minimise sum_i loss(residual_i^2) over the parameters, inside bounds by kind:
        ratio   [0.05, 1.0]   (an initial value outside widens the range to include it;
                               a multiplier above 1 has no upper bound)
        others  [0, unbounded)  (times, counts, bandwidths)

with scipy.optimize.least_squares (trf), parameters scaled by their family-file values (so the
Jacobian columns are elasticities) and a forward-difference Jacobian (relative step DIFF_STEP);
model evaluations are memoised by parameter vector, so the starting point is shared by every fold.

Identifiability: before each fit the Jacobian at the family-file values is inspected; a
parameter whose elasticity (d log prediction / d log parameter) stays below NO_EFFECT on every
case is held at its family-file value ("no effect on these cases"), and of a set of parameters
whose columns are nearly collinear (smallest / largest singular value of the column-normalised
Jacobian below COLLINEAR) the one with the largest share of the weakest direction is held ("not
separable from ..."). After the fit, a parameter whose relative standard error (from the
Jacobian at the solution) exceeds MAX_REL_STD_ERROR times the larger of its fitted and
family-file values is held too and the others refitted ("not determined"). Held parameters are reported, never drifted; the spread of each parameter over
the folds is reported next to its fitted value.

Honest error: K folds over groups of cases (GROUPING: cases of the same measured model, so
near-duplicates, e.g. the same model at another batch or on the other Neuron instance, never sit
on both sides); each fold is fitted on the other K-1 and measured on its own cases. The report
gives median and p90 |error| on the held-out cases, uncalibrated (family-file values) next to
calibrated, pooled over folds and per fold, then the final fit on every case (in-sample).

Default parameters (DEFAULT_PARAMS): the efficiency-type ones, the same list for both families:
tensor_efficiency, hbm_efficiency, element_efficiency (sustained fractions of the engines and
HBM), op_overhead (fixed cost per operator), collective_fixed_latency (per-collective cost inside
a compiled graph), link_efficiency_node / _scaleup / _scaleout (sustained link fractions). Those
the cases cannot fix are held and reported. Parameters with per-chip overrides in the family file
are refused (one family-wide value would erase the per-chip differences).

Does not: change any file of the catalogue, or apply a fitted set unless asked (calibration.applied,
CLI --calibration).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel import calibration, validation
from perfmodel.catalog import catalog_root

DEFAULT_PARAMS = ("tensor_efficiency", "hbm_efficiency", "element_efficiency", "op_overhead",
                  "collective_fixed_latency", "link_efficiency_node", "link_efficiency_scaleup",
                  "link_efficiency_scaleout")
HARDWARE_FAMILIES = {"neuron": ("trainium", "inferentia"), "nvidia": ("nvidia",)}
GROUPING = "model"  # cases of the same measured model stay in one fold
METHOD = ("scipy.optimize.least_squares (trf, forward-difference Jacobian), residual log(predicted / measured) "
          "per case, bounds by parameter kind")
RATIO_BOUNDS = (0.05, 1.0)
NO_EFFECT = 0.01  # largest |d log prediction / d log parameter| below which a parameter does nothing here
MAX_REL_STD_ERROR = 1.0  # a fitted parameter less certain than +-100% of max(value, family-file value) is held
AT_BOUND = 1e-3  # a fitted value this close to a bound (in units of its family-file value) is 'at its bound'
COLLINEAR = 0.05  # smallest / largest singular value of the column-normalised Jacobian: not separable below
DIFF_STEP = 1e-4  # relative forward-difference step
MOVES = NO_EFFECT  # a case 'moves' with a parameter when its elasticity exceeds this
PENALTY = 10.0  # residual of a case the model stops predicting at a trial point (log: ~22,000x)
TOLERANCES = {"ftol": 1e-4, "xtol": 1e-3, "gtol": 1e-8}  # 0.1% on a parameter is plenty
MAX_NFEV = 60


class CalibrateError(ValueError):
    """A fit that cannot be set up (unknown family or parameter, no cases); the message says which."""


def bounds_for(kind: str, initial: float) -> tuple[float, float]:
    """(lower, upper) in SI for a parameter of `kind` starting at `initial` (see the module docstring)."""
    if kind == "flag":
        raise CalibrateError("flags (on/off switches) cannot be fitted")
    if kind == "ratio":
        lo, hi = RATIO_BOUNDS
        return min(lo, initial), (hi if initial <= hi else math.inf)
    return 0.0, math.inf


def _scale(kind: str, initial: float) -> float:
    """The unit each parameter is optimised in: its family-file value (or 1 us / 1 for a zero start)."""
    from perfmodel import units

    if initial > 0:
        return initial
    return units.US if kind == "time" else 1.0


def _stats(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """(median, p90) of |predicted / measured - 1|."""
    a = np.abs(pred / meas - 1.0)
    a = a[np.isfinite(a)]
    if not a.size:
        return math.nan, math.nan
    return float(np.median(a)), float(np.percentile(a, 90))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assign_folds(groups: Sequence[str], folds: int, seed: int = 0) -> np.ndarray:
    """Fold number (0..k-1) per case, whole groups per fold, balanced by case count; k = min(folds, groups)."""
    uniq, counts = np.unique(np.asarray(groups, dtype=str), return_counts=True)
    k = min(folds, len(uniq))
    order = np.random.default_rng(seed).permutation(len(uniq))
    order = order[np.argsort(-counts[order], kind="stable")]
    load = np.zeros(max(k, 1))
    fold_of = {}
    for i in order:
        f = int(np.argmin(load))
        fold_of[uniq[i]] = f
        load[f] += counts[i]
    return np.array([fold_of[g] for g in groups], dtype=int)


# ---------------------------------------------------------------- the problem: cases, parameters, memoised model


@dataclass
class Problem:
    family: str
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    initial: np.ndarray  # SI
    lower: np.ndarray
    upper: np.ndarray
    scale: np.ndarray
    cases_path: Path
    case_ids: np.ndarray
    measured: np.ndarray
    groups: np.ndarray
    hardware_families: tuple[str, ...]
    families: tuple[str, ...]
    evaluations: int = 0
    eval_seconds: float = 0.0
    _memo: dict = field(default_factory=dict, repr=False)

    def predictions(self, values: np.ndarray) -> np.ndarray:
        """Model predictions (row's unit) for every case with these parameter values (SI), memoised."""
        key = tuple(float(v) for v in values)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        t0 = time.perf_counter()
        trial = calibration.CalibratedSet(self.family, dict(zip(self.names, key)), origin="perfmodel calibrate (trial)",
                                          reason="trial values of a calibration fit")
        with calibration.applied(trial):
            df = validation.run_cases(self.cases_path, list(self.families))
        df = df[~df["case_id"].duplicated()].set_index("case_id")
        out = pd.to_numeric(df["predicted"], errors="coerce").reindex(self.case_ids).to_numpy(dtype=float)
        self.evaluations += 1
        self.eval_seconds += time.perf_counter() - t0
        self._memo[key] = out
        return out

    def residuals(self, values: np.ndarray, idx: np.ndarray) -> np.ndarray:
        p = self.predictions(values)[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.log(p / self.measured[idx])
        return np.where(np.isfinite(r), r, PENALTY)

    def jacobian(self, values: np.ndarray, idx: np.ndarray, free: np.ndarray) -> np.ndarray:
        """d residual / d (value / scale) for the free parameters: forward differences (backward at an upper bound)."""
        r0 = self.residuals(values, idx)
        z = values / self.scale
        out = np.zeros((len(idx), len(free)))
        for c, j in enumerate(free):
            h = DIFF_STEP * max(1.0, abs(z[j]))
            if (z[j] + h) * self.scale[j] > self.upper[j]:
                h = -h
            v = values.copy()
            v[j] = (z[j] + h) * self.scale[j]
            out[:, c] = (self.residuals(v, idx) - r0) / h
        return out


def setup(family: str, params: Sequence[str] | None = None, cases_path: Path | str | None = None,
          root: Path | None = None) -> Problem:
    """Check the family and parameters, read the family-file values and pick the cases (predicted, this family)."""
    if family not in HARDWARE_FAMILIES:
        raise CalibrateError(f"unknown calibration family {family!r} (known: {', '.join(HARDWARE_FAMILIES)}; "
                             "neuron covers Trainium and Inferentia)")
    if family in calibration.active():
        raise CalibrateError(f"a calibrated set for {family!r} is applied ({calibration.active()[family].origin}); "
                             "calibrate fits from the family file's values: run it without --calibration")
    fam_file, fam_path = calibration._family_file(family, root or catalog_root())
    names = tuple(params) if params else DEFAULT_PARAMS
    if len(set(names)) != len(names):
        raise CalibrateError(f"parameter listed twice in {', '.join(names)}")
    kinds, initial = [], []
    for n in names:
        if n not in fam_file.params:
            raise CalibrateError(f"{n!r} is not a parameter of {fam_path} (known: {', '.join(sorted(fam_file.params))})")
        chips = [c for c, o in fam_file.chips.items() if n in o.params]
        if chips:
            raise CalibrateError(f"{n} has per-chip values in {fam_path} ({', '.join(chips)}); one family-wide "
                                 "fitted value would erase them, so it cannot be fitted")
        p = fam_file.params[n]
        if p.kind == "flag" or isinstance(p.value, bool):
            raise CalibrateError(f"{n} is a flag (on/off) and cannot be fitted")
        kinds.append(p.kind)
        initial.append(calibration._value(p.value, p.kind, f"{fam_path}: {n}"))
    bounds = [bounds_for(k, v) for k, v in zip(kinds, initial)]
    path = Path(cases_path) if cases_path else validation.CSV
    base = validation.run_cases(path)
    hw = HARDWARE_FAMILIES[family]
    sel = base[base["hardware_family"].isin(hw) & np.isfinite(pd.to_numeric(base["predicted"], errors="coerce"))]
    sel = sel[~sel["case_id"].duplicated()]
    if sel.empty:
        raise CalibrateError(f"{path}: no case on {' or '.join(hw)} hardware that the model predicts: nothing to fit")
    order = list(validation.VALIDATIONS)
    fams = tuple(sorted(set(sel["family"]), key=order.index))
    return Problem(family=family, names=names, kinds=tuple(kinds), initial=np.array(initial, dtype=float),
                   lower=np.array([b[0] for b in bounds]), upper=np.array([b[1] for b in bounds]),
                   scale=np.array([_scale(k, v) for k, v in zip(kinds, initial)]), cases_path=path,
                   case_ids=sel["case_id"].to_numpy(dtype=str), measured=sel["measured"].to_numpy(dtype=float),
                   groups=sel[GROUPING].fillna("").astype(str).to_numpy(), hardware_families=hw, families=fams)


# ---------------------------------------------------------------- identifiability and one fit


def identify(jac: np.ndarray, names: Sequence[str]) -> dict[str, str]:
    """Parameters the cases cannot fix, with why: no effect, or not separable from another (see module doc)."""
    out: dict[str, str] = {}
    big = np.abs(jac).max(axis=0) if jac.size else np.zeros(len(names))
    keep = []
    for j, n in enumerate(names):
        if not big[j] > NO_EFFECT:
            out[n] = f"no effect on these cases (largest |elasticity| {big[j]:.1e})"
        else:
            keep.append(j)
    while len(keep) > 1:
        cols = jac[:, keep] / np.sqrt((jac[:, keep] ** 2).sum(axis=0))
        _, s, vt = np.linalg.svd(cols, full_matrices=False)
        if s[-1] / s[0] >= COLLINEAR:
            break
        weak = np.abs(vt[-1])
        drop = len(keep) - 1 - int(np.argmax(weak[::-1]))  # ties: hold the later-listed parameter
        partner = max((i for i in range(len(keep)) if i != drop), key=lambda i: weak[i])
        out[names[keep[drop]]] = (f"not separable from {names[keep[partner]]} on these cases (singular value ratio "
                                  f"{s[-1] / s[0]:.3f} < {COLLINEAR})")
        keep.pop(drop)
    return out


@dataclass
class SubsetFit:
    values: np.ndarray  # SI, held parameters at their initial values
    held: dict[str, str]
    at_bound: list[str]
    std_error: dict[str, float]  # SI, from the Jacobian at the solution (NaN at a bound)
    nfev: int
    message: str


def fit_subset(pr: Problem, idx: np.ndarray, loss: str = "linear") -> SubsetFit:
    """Least squares on the cases `idx` from the family-file values. Parameters identify() rejects are held;
    a fitted parameter whose standard error exceeds MAX_REL_STD_ERROR x max(fitted, family-file value) is held
    too and the rest refitted."""
    from scipy.optimize import least_squares

    x0 = pr.initial.copy()
    held = identify(pr.jacobian(x0, idx, np.arange(len(pr.names))), pr.names)
    start, nfev = x0.copy(), 0
    while True:
        free = np.array([j for j, n in enumerate(pr.names) if n not in held], dtype=int)
        if not free.size:
            return SubsetFit(x0, held, [], {}, nfev, "nothing identifiable: every parameter held")

        def full(z, free=free):
            v = x0.copy()
            v[free] = z * pr.scale[free]
            return v

        lb, ub = pr.lower[free] / pr.scale[free], pr.upper[free] / pr.scale[free]
        z0 = np.clip(start[free] / pr.scale[free], lb, ub)
        res = least_squares(lambda z: pr.residuals(full(z), idx), z0,
                            jac=lambda z, free=free: pr.jacobian(full(z), idx, free), bounds=(lb, ub), method="trf",
                            loss=loss,
                            x_scale=1.0, max_nfev=MAX_NFEV, **TOLERANCES)
        nfev += int(res.nfev)
        values = full(res.x)
        # within 0.1% of the family-file value from a bound: the cases push it there (or beyond)
        at_bound = [pr.names[j] for j, z, lo, hi in zip(free, res.x, lb, ub) if z - lo <= AT_BOUND or hi - z <= AT_BOUND]
        r = pr.residuals(values, idx)
        cov = np.linalg.pinv(res.jac.T @ res.jac) * float(r @ r) / max(len(idx) - len(free), 1)
        se = {pr.names[j]: (float(math.sqrt(max(cov[c, c], 0.0)) * pr.scale[j]) if pr.names[j] not in at_bound
                            else math.nan) for c, j in enumerate(free)}
        weak = {n: e / max(values[pr.names.index(n)], pr.scale[pr.names.index(n)]) for n, e in se.items()
                if e > MAX_REL_STD_ERROR * max(values[pr.names.index(n)], pr.scale[pr.names.index(n)])}
        if not weak:
            return SubsetFit(values, held, at_bound, se, nfev, str(res.message))
        worst = max(weak, key=weak.get)  # hold the worst one, refit the rest from where they are
        held[worst] = (f"not determined by these cases (standard error {weak[worst]:.0%} of its value when fitted, "
                       f"above {MAX_REL_STD_ERROR:.0%})")
        start = values.copy()
        start[pr.names.index(worst)] = x0[pr.names.index(worst)]


# ---------------------------------------------------------------- the whole procedure


@dataclass
class FitResult:
    problem: Problem
    final: SubsetFit
    cases_moved: dict[str, int]
    folds: list[dict]  # per fold: fold, cases, groups, held_out_groups, stats, params
    cv: dict | None  # pooled held-out stats (None with fewer than 2 groups)
    in_sample: dict
    folds_requested: int
    seed: int
    loss: str
    created: str
    seconds: float

    @property
    def fitted(self) -> dict[str, float]:
        return dict(zip(self.problem.names, map(float, self.final.values)))

    def params_frame(self) -> pd.DataFrame:
        """One row per parameter: initial and fitted (SI and as written), change, bounds, what fixed it."""
        pr, fin = self.problem, self.final
        rows = []
        for j, n in enumerate(pr.names):
            k, v0, v = pr.kinds[j], pr.initial[j], fin.values[j]
            status = (f"held: {fin.held[n]}" if n in fin.held else "fitted, at its bound" if n in fin.at_bound
                      else "fitted")
            rows.append({"parameter": n, "kind": k, "initial": calibration._as_written(v0, k),
                         "fitted": calibration._as_written(v, k), "change_frac": v / v0 - 1.0 if v0 else math.nan,
                         "lower": calibration._as_written(pr.lower[j], k),
                         "upper": calibration._as_written(pr.upper[j], k) if np.isfinite(pr.upper[j]) else "none",
                         "std_error": _written_or_blank(fin.std_error.get(n), k),
                         "fold_range": self._fold_range(n, k), "cases_moved": self.cases_moved[n], "status": status,
                         "initial_si": float(v0), "fitted_si": float(v)})
        return pd.DataFrame(rows)

    def _fold_range(self, name: str, kind: str) -> str:
        """'lowest - highest' value fitted across the folds: a wide range means the cases do not pin it down."""
        vals = [f["params"][name] for f in self.folds if name in f["params"]]
        if not vals:
            return ""
        return f"{calibration._as_written(min(vals), kind)} - {calibration._as_written(max(vals), kind)}"

    def cv_frame(self) -> pd.DataFrame:
        """Held-out error per fold, pooled over folds, and in-sample for the final fit on every case."""
        def stats(d):
            return {f"{k}_frac": d[k] for k in _STAT_KEYS}

        rows = [{"evaluation": f"fold {f['fold']} held out", "cases": f["cases"], "groups": len(f["held_out_groups"]),
                 **stats(f), "held_out_groups": ", ".join(f["held_out_groups"])} for f in self.folds]
        if self.cv:
            rows.append({"evaluation": f"all folds held out ({len(self.folds)}-fold CV)", "cases": self.cv["cases"],
                         "groups": sum(len(f["held_out_groups"]) for f in self.folds), **stats(self.cv),
                         "held_out_groups": "each case once"})
        rows.append({"evaluation": "in-sample (final fit on every case)", "cases": self.in_sample["cases"],
                     "groups": len(set(self.problem.groups)), **stats(self.in_sample), "held_out_groups": "none"})
        return pd.DataFrame(rows)

    def to_file(self, description: str = "") -> calibration.CalibratedSetFile:
        pr, fin = self.problem, self.final
        root = catalog_root().resolve()
        cases = pr.cases_path.resolve()
        shown = str(cases.relative_to(root)) if cases.is_relative_to(root) else str(cases)
        params = {}
        for j, n in enumerate(pr.names):
            if n in fin.held:
                continue
            k = pr.kinds[j]
            params[n] = {"value": calibration.file_value(fin.values[j], k),
                         "initial": calibration.file_value(pr.initial[j], k),
                         "lower": calibration.file_value(pr.lower[j], k),
                         "upper": calibration.file_value(pr.upper[j], k) if np.isfinite(pr.upper[j]) else None,
                         "kind": k, "std_error": _file_or_none(fin.std_error.get(n), k)}
        if not params:
            raise CalibrateError("no parameter could be fitted on these cases (all held): " +
                                 "; ".join(f"{n}: {why}" for n, why in fin.held.items()))
        def stats(d):
            return {"cases": d["cases"], **{k: float(f"{d[k]:.4g}") for k in _STAT_KEYS}}

        cv = None
        if self.cv:
            cv = {**stats(self.cv), "folds": len(self.folds), "grouping": GROUPING, "seed": self.seed,
                  "fold": [{"fold": f["fold"], **stats(f), "held_out_groups": f["held_out_groups"],
                            "params": {n: _round(v, 6) for n, v in f["params"].items()}} for f in self.folds]}
        data = {"schema_version": 1, "family": pr.family, "created": self.created,
                "method": METHOD + ("" if self.loss == "linear" else f", loss {self.loss}"),
                "description": description,
                "fitted_on": {"cases_file": shown, "sha256": _sha256(pr.cases_path), "cases": len(pr.case_ids),
                              "hardware_families": list(pr.hardware_families),
                              "validation_families": list(pr.families)},
                "params": {n: {k: v for k, v in p.items() if v is not None} for n, p in params.items()},
                "not_identified": dict(fin.held), "cross_validation": cv, "in_sample": stats(self.in_sample)}
        return calibration.CalibratedSetFile.model_validate(data)

    def write(self, path: Path | str | None = None, description: str = "") -> Path:
        """Write the calibrated-set file (default hardware_specs/calibration/fitted/<family>-<date>.toml)."""
        path = Path(path) if path else default_path(self.problem.family, self.created)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = (f"Calibrated parameter set for the {self.problem.family} family, written by perfmodel calibrate.\n"
                  "Used only when asked for: perfmodel --calibration FILE COMMAND (or calibration.applied).")
        path.write_text(calibration.dump_calibrated_set(self.to_file(description), header))
        return path


_STAT_KEYS = ("uncalibrated_median_abs_error", "uncalibrated_p90_abs_error", "calibrated_median_abs_error",
              "calibrated_p90_abs_error")


def _written_or_blank(x, kind: str) -> str:
    return calibration._as_written(x, kind) if x is not None and math.isfinite(x) else ""


def _file_or_none(x, kind: str):
    return calibration.file_value(float(f"{x:.3g}"), kind) if x is not None and math.isfinite(x) else None


def _round(x, digits: int):
    """x to `digits` significant digits; None when missing or not finite (left out of the file)."""
    return float(f"{x:.{digits}g}") if x is not None and math.isfinite(x) else None


def _stat_dict(pred0: np.ndarray, pred: np.ndarray, meas: np.ndarray) -> dict:
    m0, p0 = _stats(pred0, meas)
    m1, p1 = _stats(pred, meas)
    return {"cases": len(meas), "uncalibrated_median_abs_error": m0, "uncalibrated_p90_abs_error": p0,
            "calibrated_median_abs_error": m1, "calibrated_p90_abs_error": p1}


def default_path(family: str, created: str) -> Path:
    return catalog_root() / "hardware_specs" / "calibration" / "fitted" / f"{family}-{created[:10]}.toml"


_WORK: Problem | None = None  # the problem a forked worker inherits (fit(jobs > 1))


def _fit_task(idx: np.ndarray, loss: str) -> tuple[SubsetFit, np.ndarray, int, float]:
    """One fit in a worker: (fit, predictions at the fitted values, model evaluations, seconds)."""
    pr, t0 = _WORK, time.perf_counter()
    n0 = pr.evaluations
    sf = fit_subset(pr, idx, loss)
    return sf, pr.predictions(sf.values), pr.evaluations - n0, time.perf_counter() - t0


def _run_fits(pr: Problem, tasks: list[np.ndarray], loss: str, jobs: int, done: Callable[[int, float], None]):
    """Every fit of `tasks` (case index sets), one after another or in `jobs` forked processes (which inherit the
    warm model caches and the evaluations made so far); results in task order."""
    global _WORK
    import multiprocessing as mp

    _WORK = pr
    try:
        if jobs <= 1 or len(tasks) <= 1 or "fork" not in mp.get_all_start_methods():
            out = []
            for i, idx in enumerate(tasks):
                out.append(_fit_task(idx, loss))
                done(i, out[-1][3])
            return out
        from concurrent.futures import ProcessPoolExecutor, as_completed

        out = [None] * len(tasks)
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=mp.get_context("fork")) as ex:
            futures = {ex.submit(_fit_task, idx, loss): i for i, idx in enumerate(tasks)}
            for fut in as_completed(futures):
                i = futures[fut]
                out[i] = fut.result()
                pr.evaluations += out[i][2]
                done(i, out[i][3])
        return out
    finally:
        _WORK = None


def fit(family: str, params: Sequence[str] | None = None, cases_path: Path | str | None = None, folds: int = 5,
        seed: int = 0, loss: str = "linear", progress: Callable[[str], None] | None = None,
        jobs: int = 1) -> FitResult:
    """Fit `params` (default DEFAULT_PARAMS) of `family` ('neuron' | 'nvidia') to the family's cases of
    `cases_path` (default the development cases), with `folds`-fold grouped cross-validation (folds < 2: none).
    jobs > 1 runs the fold fits and the final fit in that many forked processes (same results, less wall time)."""
    t0 = time.perf_counter()
    say = progress or (lambda msg: None)
    pr = setup(family, params, cases_path)
    n = len(pr.case_ids)
    say(f"{family}: {n} cases in {len(set(pr.groups))} groups ({', '.join(pr.families)}); "
        f"fitting {', '.join(pr.names)}")
    every = np.arange(n)
    pred0 = pr.predictions(pr.initial)
    jac0 = pr.jacobian(pr.initial, every, np.arange(len(pr.names)))  # shared by every fit (memoised)
    moved = {nm: int((np.abs(jac0[:, j]) > MOVES).sum()) for j, nm in enumerate(pr.names)}
    fold_of = assign_folds(pr.groups, folds, seed) if folds >= 2 else np.zeros(n, dtype=int)
    k = int(fold_of.max()) + 1 if folds >= 2 else 0
    if folds >= 2 and k < 2:
        say("only one group of cases: no cross-validation")
        k = 0
    tests = [np.flatnonzero(fold_of == f) for f in range(k)]
    tasks = [np.flatnonzero(fold_of != f) for f in range(k)] + [every]

    def done(i: int, seconds: float) -> None:
        what = f"fold {i + 1}/{k}" if i < k else f"final fit on all {n} cases"
        say(f"{what}: done in {seconds:.0f} s")

    results = _run_fits(pr, tasks, loss, jobs, done)
    fold_rows, cv = [], None
    held_pred = np.full(n, np.nan)
    for f in range(k):
        sf, pred, _, _ = results[f]
        test = tests[f]
        held_pred[test] = pred[test]
        st = _stat_dict(pred0[test], held_pred[test], pr.measured[test])
        fold_rows.append({"fold": f + 1, "held_out_groups": sorted(set(pr.groups[test])), **st,
                          "params": {nm: float(v) for nm, v in zip(pr.names, sf.values) if nm not in sf.held}})
        say(f"fold {f + 1}/{k}: fitted on {len(tasks[f])} cases, held-out median |error| "
            f"{st['uncalibrated_median_abs_error']:.1%} -> {st['calibrated_median_abs_error']:.1%}")
    if k:
        cv = _stat_dict(pred0, held_pred, pr.measured)
    final, pred_final, _, _ = results[-1]
    ins = _stat_dict(pred0, pred_final, pr.measured)
    seconds = time.perf_counter() - t0
    say(f"final fit on all {n} cases: median |error| {ins['uncalibrated_median_abs_error']:.1%} -> "
        f"{ins['calibrated_median_abs_error']:.1%} ({seconds:.0f} s in all, {pr.evaluations} model evaluations)")
    created = dt.datetime.now().replace(microsecond=0).isoformat()
    return FitResult(problem=pr, final=final, cases_moved=moved, folds=fold_rows, cv=cv, in_sample=ins,
                     folds_requested=folds, seed=seed, loss=loss, created=created, seconds=seconds)
