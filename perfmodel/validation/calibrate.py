"""Calibration fit: one hardware family's named efficiency parameters fitted to measurements, cross-validated.

    fit("neuron")                        # default parameters, the development cases, 5 grouped folds
    fit("nvidia", ["tensor_efficiency", "op_overhead"], cases_path="my.csv", folds=3)

What is fitted: a few named parameters of one calibration family file (neuron = Trainium +
Inferentia, nvidia), one value for the whole family, never a value per case. The cases are
the rows of a measurements file (harness.py columns) whose system belongs to that family and
which the model predicts; each evaluation re-runs the validation families that hold them
(validation.run_cases) with the trial values passed as a calibrated set (run_cases(replaced=...)),
so every model path sees them exactly as a user of the fitted file would.

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

Does not: change any file of the catalogue, or apply a fitted set unless asked (load_system(replaced=...),
CLI --calibration).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from perfmodel.validation.fit_problem import (DEFAULT_PARAMS, METHOD, MOVES, Problem, SubsetFit, assign_folds,
                                              fit_subset, setup)
from perfmodel.validation.fit_result import FitResult, stat_dict

__all__ = ["DEFAULT_PARAMS", "METHOD", "FitResult", "fit"]

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
        jobs: int = 1, confirm: Callable[[int, int, int], None] | None = None) -> FitResult:
    """Fit `params` (default DEFAULT_PARAMS) of `family` ('neuron' | 'nvidia') to the family's cases of
    `cases_path` (default the development cases), with `folds`-fold grouped cross-validation (folds < 2: none).
    jobs > 1 runs the fold fits and the final fit in that many forked processes (same results, less wall time).
    confirm(folds, cases, parameters), when given, is called before any fit (it may raise to stop the work)."""
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
    if confirm:
        confirm(k, n, len(pr.names))
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
        st = stat_dict(pred0[test], held_pred[test], pr.measured[test])
        fold_rows.append({"fold": f + 1, "held_out_groups": sorted(set(pr.groups[test])), **st,
                          "params": {nm: float(v) for nm, v in zip(pr.names, sf.values) if nm not in sf.held}})
        say(f"fold {f + 1}/{k}: fitted on {len(tasks[f])} cases, held-out median |error| "
            f"{st['uncalibrated_median_abs_error']:.1%} -> {st['calibrated_median_abs_error']:.1%}")
    if k:
        cv = stat_dict(pred0, held_pred, pr.measured)
    final, pred_final, _, _ = results[-1]
    ins = stat_dict(pred0, pred_final, pr.measured)
    seconds = time.perf_counter() - t0
    say(f"final fit on all {n} cases: median |error| {ins['uncalibrated_median_abs_error']:.1%} -> "
        f"{ins['calibrated_median_abs_error']:.1%} ({seconds:.0f} s in all, {pr.evaluations} model evaluations)")
    created = dt.datetime.now().replace(microsecond=0).isoformat()
    return FitResult(problem=pr, final=final, cases_moved=moved, folds=fold_rows, cv=cv, in_sample=ins,
                     folds_requested=folds, seed=seed, loss=loss, created=created, seconds=seconds)
