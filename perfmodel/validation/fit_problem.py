"""Calibration fit, the problem: one family's cases and parameters, their bounds, the memoised model,
identifiability, and one least-squares fit on a subset of the cases.

calibrate.py states the method (residuals, bounds, identifiability, folds) and runs it; this
module holds its pieces, fit_result.py what comes out.
Does not: run the cross-validation or write any file.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.catalog import calibration
from perfmodel.catalog.files import catalog_root
from perfmodel.catalog.replacements import Replacements
from perfmodel.validation import harness

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
    from perfmodel.core import units

    if initial > 0:
        return initial
    return units.US if kind == "time" else 1.0


def error_stats(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """(median, p90) of |predicted / measured - 1|."""
    a = np.abs(pred / meas - 1.0)
    a = a[np.isfinite(a)]
    if not a.size:
        return math.nan, math.nan
    return float(np.median(a)), float(np.percentile(a, 90))


def sha256_of(path: Path) -> str:
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
        df = harness.run_cases(self.cases_path, list(self.families), replaced=Replacements(calibrated=(trial,)))
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
        initial.append(calibration.parameter_value(p.value, p.kind, f"{fam_path}: {n}"))
    bounds = [bounds_for(k, v) for k, v in zip(kinds, initial)]
    path = Path(cases_path) if cases_path else harness.CSV
    base = harness.run_cases(path, strict=True)  # a fit does not pass over a row it cannot read: it names it
    hw = HARDWARE_FAMILIES[family]
    sel = base[base["hardware_family"].isin(hw) & np.isfinite(pd.to_numeric(base["predicted"], errors="coerce"))]
    sel = sel[~sel["case_id"].duplicated()]
    if sel.empty:
        raise CalibrateError(f"{path}: no case on {' or '.join(hw)} hardware that the model predicts: nothing to fit")
    order = list(harness.VALIDATIONS)
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
