"""Validation: any measurements file to predicted vs measured with error statistics, the
families that express each kind of measurement, and the calibration fit (cross-validated).

Front door: run_cases, summary, phase_verdicts, sheets, register_validation (from harness.py).
Change here when a measurement source, a family mapping or the fit changes.
Must not import: report, cli.
"""

from perfmodel.validation.harness import (CASE_COLUMNS, CASE_OUT, CSV, FAMILY_COLUMNS, FAMILY_MODULES, GROUPINGS,
                                          TARGET_MEDIAN_ABS, TARGET_P90_ABS, VALIDATIONS, CasesError, Family, frame,
                                          load_validation_modules, measurements, overall, parse_points, parse_size,
                                          phase_verdicts, register_validation, row, run_cases, run_validation, sheets,
                                          summary, unexpressed)

__all__ = ["CASE_COLUMNS", "CASE_OUT", "CSV", "CasesError", "FAMILY_COLUMNS", "FAMILY_MODULES", "Family", "GROUPINGS",
           "TARGET_MEDIAN_ABS", "TARGET_P90_ABS", "VALIDATIONS", "frame", "load_validation_modules", "measurements",
           "overall", "parse_points", "parse_size", "phase_verdicts", "register_validation", "row", "run_cases",
           "run_validation", "sheets", "summary", "unexpressed"]
