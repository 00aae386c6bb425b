"""Calibration fit, the result: fitted values with their spread over folds, held-out error, and the
calibrated-set file it writes.

Does not: fit anything (calibrate.py, fit_problem.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.catalog import calibrated_set_file, calibration
from perfmodel.catalog.files import catalog_root
from perfmodel.core import safe_write
from perfmodel.validation.fit_problem import GROUPING, METHOD, CalibrateError, Problem, SubsetFit, error_stats, sha256_of


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
            rows.append({"parameter": n, "kind": k, "initial": calibration.as_written(v0, k),
                         "fitted": calibration.as_written(v, k), "change_frac": v / v0 - 1.0 if v0 else math.nan,
                         "lower": calibration.as_written(pr.lower[j], k),
                         "upper": calibration.as_written(pr.upper[j], k) if np.isfinite(pr.upper[j]) else "none",
                         "std_error": _written_or_blank(fin.std_error.get(n), k),
                         "fold_range": self._fold_range(n, k), "cases_moved": self.cases_moved[n], "status": status,
                         "initial_si": float(v0), "fitted_si": float(v)})
        return pd.DataFrame(rows)

    def _fold_range(self, name: str, kind: str) -> str:
        """'lowest - highest' value fitted across the folds: a wide range means the cases do not pin it down."""
        vals = [f["params"][name] for f in self.folds if name in f["params"]]
        if not vals:
            return ""
        return f"{calibration.as_written(min(vals), kind)} - {calibration.as_written(max(vals), kind)}"

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

    def to_file(self, description: str = "") -> calibrated_set_file.CalibratedSetFile:
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
                "fitted_on": {"cases_file": shown, "sha256": sha256_of(pr.cases_path), "cases": len(pr.case_ids),
                              "hardware_families": list(pr.hardware_families),
                              "validation_families": list(pr.families)},
                "params": {n: {k: v for k, v in p.items() if v is not None} for n, p in params.items()},
                "not_identified": dict(fin.held), "cross_validation": cv, "in_sample": stats(self.in_sample)}
        return calibrated_set_file.CalibratedSetFile.model_validate(data)

    def write(self, path: Path | str | None = None, description: str = "") -> Path:
        """Write the calibrated-set file (default hardware_specs/calibration/fitted/<family>-<date>.toml),
        through a temporary file renamed into place: a failed write leaves any earlier file whole."""
        path = Path(path) if path else default_path(self.problem.family, self.created)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = (f"Calibrated parameter set for the {self.problem.family} family, written by perfmodel calibrate.\n"
                  "Used only when asked for: perfmodel --calibration FILE COMMAND (or catalog.Replacements.of_files).")
        safe_write.write_text(path, calibrated_set_file.dump_calibrated_set(self.to_file(description), header))
        return path


_STAT_KEYS = ("uncalibrated_median_abs_error", "uncalibrated_p90_abs_error", "calibrated_median_abs_error",
              "calibrated_p90_abs_error")


def _written_or_blank(x, kind: str) -> str:
    return calibration.as_written(x, kind) if x is not None and math.isfinite(x) else ""


def _file_or_none(x, kind: str):
    return calibration.file_value(float(f"{x:.3g}"), kind) if x is not None and math.isfinite(x) else None


def _round(x, digits: int):
    """x to `digits` significant digits; None when missing or not finite (left out of the file)."""
    return float(f"{x:.{digits}g}") if x is not None and math.isfinite(x) else None


def stat_dict(pred0: np.ndarray, pred: np.ndarray, meas: np.ndarray) -> dict:
    m0, p0 = error_stats(pred0, meas)
    m1, p1 = error_stats(pred, meas)
    return {"cases": len(meas), "uncalibrated_median_abs_error": m0, "uncalibrated_p90_abs_error": p0,
            "calibrated_median_abs_error": m1, "calibrated_p90_abs_error": p1}


def default_path(family: str, created: str) -> Path:
    return catalog_root() / "hardware_specs" / "calibration" / "fitted" / f"{family}-{created[:10]}.toml"
