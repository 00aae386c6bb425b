"""Validation harness: any measurements file -> predicted vs measured, with error statistics.

A measurements file has the columns of reference/published_measurements.csv (CASE_COLUMNS):
hardware, num_chips, model, phase, parallelism, batch, input / output length, dtype, metric,
value, unit, source; or those of a recognised format (formats.py, e.g. the InferenceX serving
corpus), which is known by its columns and adapted to cases on reading. Each row goes to the
first registered *family* whose `selects(rows)` mask claims it; the family predicts the rows it
can express and gives a reason for those it cannot. Rows no family claims are listed with the
reason too: nothing is dropped silently.

A family is a pure function of its rows (all text columns, plus `value_num`) and of what the run
replaces in the catalogue (catalog/replacements.py: calibrated sets, engine profiles, Neuron stacks),
which it passes to every system, engine and stack it resolves:

    @register_validation("nccl", selects=lambda r: r["phase"].eq("collective") & ...)
    def nccl(rows, replaced) -> DataFrame   # case_id, metric, measured, predicted, unit, note
                                            # (+ system, reason); one row per measured point

    error_frac = (predicted - measured) / measured        (signed; NaN where not predicted)

`run_cases(path)` gives the tidy frame (CASE_OUT columns); `summary(frame, by)` the median and
90th-percentile |error| by phase, hardware family, metric or family. The development cases are
vendored in reference/ (never read from ../shared) with their sources.

A file that cannot be read as cases is one CasesError line naming the file (and the row, case and
field where there is one): not a CSV, missing columns, no rows, a value that is not a positive
number, a count (num_chips, batch, input_len, output_len, a TP/PP/DP/EP/CP degree) that is not a
whole number within core/limits.py, or a row its family cannot model. A file is read again when it
changes (the cache is keyed on its size and time modified).

Does not: fit anything to the measurements (calibration.py / calibrate.py do that, on request).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core import input_files, limits, units
from perfmodel.validation import case_checks, fidelity, formats

CSV = Path(__file__).resolve().parents[2] / "reference" / "published_measurements.csv"
CASE_COLUMNS = ("case_id", "hardware", "num_chips", "model", "phase", "parallelism", "batch", "input_len",
                "output_len", "dtype", "metric", "value", "unit", "source")
FAMILY_COLUMNS = ("case_id", "metric", "measured", "predicted", "unit", "note")
CASE_OUT = ("case_id", "family", "phase", "hardware", "system", "hardware_family", "model", "metric", "measured",
            "predicted", "unit", "error_frac", "note", "reason")
GROUPINGS = ("phase", "hardware_family", "metric", "family", "system")

_SIZE_UNITS = {"B": 1.0, "KiB": units.KiB, "MiB": units.MiB, "GiB": units.GiB}


@dataclass(frozen=True)
class Family:
    name: str
    selects: Callable[[pd.DataFrame], pd.Series]
    predict: Callable[[pd.DataFrame, Replacements], pd.DataFrame]  # (rows, what the run replaces) -> cases
    doc: str
    gaps: dict[str, str]  # phase -> the known modelling gap behind this family's misses there


VALIDATIONS: dict[str, Family] = {}


def register_validation(name: str, selects: Callable[[pd.DataFrame], pd.Series], gaps: dict[str, str] | None = None):
    """Decorator: add family `name`; `selects(rows)` is a boolean mask of the rows it claims;
    `gaps` names, per phase, the modelling gap known to cause the family's misses (shown when
    that phase misses its target)."""
    def deco(fn: Callable[[pd.DataFrame, Replacements], pd.DataFrame]) -> Callable:
        doc = (fn.__doc__ or "").strip().splitlines()
        VALIDATIONS[name] = Family(name, selects, fn, doc[0] if doc else "", dict(gaps or {}))
        return fn
    return deco


class CasesError(ValueError):
    """A measurements file that cannot be read as cases (names the file and the column)."""


def _adapt(df: pd.DataFrame, path: str) -> pd.DataFrame:
    """A file in a recognised format (formats.py: known by its columns) as cases; a file of cases as it is."""
    if set(CASE_COLUMNS) <= set(df.columns):
        return df
    load_validation_modules()  # the family modules register the formats they predict
    fmt = formats.recognise(df.columns)
    if fmt is None or df.empty:
        return df
    try:
        return fmt.adapt(df)
    except formats.FormatError as exc:
        raise CasesError(f"{path}: {fmt.name} format: {exc}") from None


def _read(path: str) -> pd.DataFrame:
    """The cases of a measurements file, read once per version of the file (path, size, time modified)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise CasesError(f"{path}: no such measurements file") from None
    return _read_version(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _read_version(path: str, size: int, mtime_ns: int) -> pd.DataFrame:
    p = Path(path)
    try:
        df = input_files.read_csv(p, "measurements file", dtype=str, keep_default_na=False)
    except input_files.InputError as exc:
        raise CasesError(str(exc)) from None
    except pd.errors.EmptyDataError:
        raise CasesError(f"{path}: empty file: No columns to parse (a measurements file needs a header line with "
                         f"the columns {', '.join(CASE_COLUMNS)} and one row per case)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise CasesError(f"{path}: not a CSV file ({str(exc).strip().splitlines()[0][:200]})") from None
    df = _adapt(df, path)
    missing = [c for c in CASE_COLUMNS if c not in df.columns]
    if missing:
        raise CasesError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(CASE_COLUMNS)}, or the "
                         f"columns of a recognised format: {formats.described() or 'none registered'})")
    if df.empty:
        raise CasesError(f"{path}: no cases (a header line and no rows)")
    blank = df.index[df["case_id"].str.strip().eq("")]
    if len(blank):
        raise CasesError(f"{path}: row {blank[0] + 2} field 'case_id': empty (every case needs an id)")
    if "notes" not in df.columns:
        df["notes"] = ""
    dup = df["case_id"][df["case_id"].duplicated()]
    if len(dup):
        raise CasesError(f"{path}: field 'case_id': {dup.iloc[0]!r} appears more than once")
    num = pd.to_numeric(df["value"], errors="coerce")  # a bad value or count is its row's problem, not the file's
    return df.assign(value_num=num.astype(float), problem=case_checks.row_problems(df))


def measurements(prefix: str | tuple[str, ...] | None = None, path: Path | str | None = None) -> pd.DataFrame:
    """The measurement rows (all columns as text; `value` also as float `value_num`), optionally by case-id prefix."""
    df = _read(str(path or CSV)).copy()
    if prefix:
        df = df[df["case_id"].str.startswith(prefix)]
    return df.reset_index(drop=True)


def row(case_id: str, hardware: str, metric: str, measured: float, predicted: float, unit: str,
        note: str = "", system: str = "", reason: str = "") -> dict:
    """One family output row; error_frac from measured and predicted."""
    err = (predicted - measured) / measured if measured and np.isfinite(predicted) else float("nan")
    return {"case_id": case_id, "hardware": hardware, "metric": metric, "measured": float(measured),
            "predicted": float(predicted), "unit": unit, "error_frac": err, "note": note, "system": system,
            "reason": reason}


def unexpressed(m, reason: str) -> dict:
    """Output row for a case the model cannot express yet (kept, with why)."""
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), np.nan, m["unit"], "", "", reason)


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["case_id", "hardware", "metric", "measured", "predicted", "unit", "error_frac",
                                       "note", "system", "reason"])


# a size: a plain decimal number (not the tail of '1e30' or '-1') and its unit
_SIZE = r"(?<![\w.+-])(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)"


def parse_size(text: str) -> float:
    """First '<number> <B|KiB|MiB|GiB>' in text, in bytes (e.g. 'all-reduce fp32 1 GiB' -> 2^30); at least 1 byte."""
    m = re.search(_SIZE + r"\b", text)
    if not m:
        raise ValueError(f"no message size in {text!r}")
    size = float(m.group(1)) * _SIZE_UNITS[m.group(2)]
    if not 1 <= size <= limits.MAX_QUANTITY_SI:
        raise ValueError(f"message size {m.group(0)!r} in {text!r} is not at least 1 byte")
    return size


def parse_points(text: str) -> list[tuple[float, float, str]]:
    """'<size> <value> [us]' points in a notes field: '8 GiB 479.28; 8 KiB 149 us' ->
    [(8 GiB in bytes, 479.28, ''), (8192.0, 149.0, 'us')]; sizes of at least 1 byte, values > 0."""
    out = []
    for m in re.finditer(_SIZE + r"\s+(\d+(?:\.\d+)?)(?![\w.])\s*(us)?", text):
        size, value = float(m.group(1)) * _SIZE_UNITS[m.group(2)], float(m.group(3))
        if size >= 1 and value > 0:
            out.append((size, value, m.group(4) or ""))
    return out


# the modules that register families, one per measurement dialect (validation/sources/)
# (in this order: families register, and report, in import order)
FAMILY_MODULES = tuple(f"perfmodel.validation.sources.{m}" for m in (  # one module per dialect (sources/)
    "comm", "inference", "kernels", "serving", "training", "training_public", "inferencex", "serving_words"))


def load_validation_modules() -> None:
    """Import every family module so its families register."""
    for mod in FAMILY_MODULES:
        importlib.import_module(mod)


@lru_cache(maxsize=64)
def _hardware_family(system: str) -> str:
    from perfmodel import catalog

    return catalog.load_system(system).chip.family.value if system else "(no catalogue system)"


def _predict(fam: Family, rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    with np.errstate(all="ignore"):  # a non-finite prediction is caught below, not printed as a warning
        return fam.predict(rows.reset_index(drop=True), replaced)


def _family_frame(fam: Family, rows: pd.DataFrame, path: str, strict: bool = False,
                  replaced: Replacements = NONE) -> pd.DataFrame:
    """The family's predictions for `rows` (index: the file's row - 2). A row the family cannot read, or gives
    neither a prediction nor a reason for, is listed with that reason and the others are predicted (`strict`:
    one line naming the file, the row and the case instead)."""
    try:
        df = _predict(fam, rows, replaced)
    except Exception:  # noqa: BLE001 - a failing row is listed, found by predicting rows alone
        parts = []
        for i in rows.index:
            try:
                parts.append(_predict(fam, rows.loc[[i]], replaced))
            except Exception as one:  # noqa: BLE001
                why = str(one).strip().splitlines()[0][:200] if str(one).strip() else type(one).__name__
                if strict:
                    raise CasesError(f"{path}: row {i + 2} (case {rows.at[i, 'case_id']!r}): the {fam.name} family "
                                     f"cannot model it: {why}") from None
                parts.append(frame([unexpressed(rows.loc[i], f"the {fam.name} family cannot model it: {why}")]))
        df = pd.concat(parts, ignore_index=True)
    missing = [c for c in FAMILY_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"validation family {fam.name!r} lacks columns {missing}")
    df = df.copy()
    for col in ("system", "reason"):
        df[col] = df[col].fillna("") if col in df.columns else ""
    df["predicted"] = pd.to_numeric(df["predicted"], errors="coerce")
    bad = df["reason"].eq("") & ~np.isfinite(df["predicted"])
    if bad.any() and strict:  # a family must say why it could not predict
        case = df.loc[bad, "case_id"].iloc[0]
        row = rows.index[rows["case_id"].eq(str(case).split("@")[0])]
        raise CasesError(f"{path}: {f'row {row[0] + 2} ' if len(row) else ''}(case {case!r}): the {fam.name} "
                         "family gives no prediction and no reason (a value it cannot model)")
    df.loc[bad, "predicted"] = np.nan
    df.loc[bad, "reason"] = f"the {fam.name} family could not predict it (a value it cannot model)"
    df["family"] = fam.name
    return df


def run_cases(path: Path | str | None = None, families: list[str] | None = None, strict: bool = False,
              replaced: Replacements = NONE) -> pd.DataFrame:
    """Every case of the measurements file through the model: CASE_OUT columns (+ family extras), with what
    `replaced` holds (calibrated sets, engine profiles, Neuron stacks: catalog/replacements.py) in place of the
    catalogue files' values.

    Families are tried in registration order; a case belongs to the first that selects it.
    `families` restricts the run (cases of other families are then left out, not listed). A row that cannot
    be a case (case_checks) or that its family cannot model is listed with its reason and the rest are
    predicted; `strict`: such a row is an error (CasesError, one line)."""
    load_validation_modules()
    unknown = [f for f in families or [] if f not in VALIDATIONS]
    if unknown:
        raise KeyError(f"unknown validation family {unknown[0]!r} (known: {', '.join(VALIDATIONS)})")
    cases = measurements(path=path)
    shown = str(path or CSV)
    base = cases.set_index("case_id")
    broken = cases["problem"].ne("")
    if strict and broken.any():
        raise CasesError(case_checks.first(cases, cases["problem"], shown))
    parts = [frame([unexpressed(r, r["problem"]) for _, r in cases[broken].iterrows()]).assign(family="")] \
        if broken.any() else []
    free = ~broken
    for fam in VALIDATIONS.values():
        mask = free & fam.selects(cases).fillna(False).astype(bool)
        free &= ~mask
        if mask.any() and (not families or fam.name in families):
            parts.append(_family_frame(fam, cases[mask], shown, strict, replaced))
    if not families and free.any():
        rest = cases[free]
        parts.append(pd.DataFrame({
            "case_id": rest["case_id"], "metric": rest["metric"], "measured": rest["value_num"],
            "predicted": np.nan, "unit": rest["unit"], "note": "", "system": "", "family": "",
            "reason": "no model family takes phase '" + rest["phase"] + "' with metric '" + rest["metric"] + "'"}))
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(CASE_OUT))
    key = df["case_id"].str.split("@").str[0]  # expanded points (CASE@size) keep their case's fields
    for col in ("phase", "hardware", "model"):
        df[col] = key.map(base[col])
    df["hardware_family"] = df["system"].map(_hardware_family)
    df["error_frac"] = (df["predicted"] - df["measured"]) / df["measured"]
    return df[list(CASE_OUT) + [c for c in df.columns if c not in CASE_OUT]].reset_index(drop=True)


def run_validation(name: str, path: Path | str | None = None, replaced: Replacements = NONE) -> pd.DataFrame:
    """One family's cases (CASE_OUT columns)."""
    return run_cases(path, [name], replaced=replaced)


def _stats(e: pd.Series) -> dict:
    a = e.abs().dropna()
    if not a.size:
        return {k: np.nan for k in ("median_abs_error_frac", "p90_abs_error_frac", "mean_error_frac",
                                    "worst_abs_error_frac", "within_25pct_frac")}
    return {"median_abs_error_frac": float(a.median()), "p90_abs_error_frac": float(np.percentile(a, 90)),
            "mean_error_frac": float(e.dropna().mean()), "worst_abs_error_frac": float(a.max()),
            "within_25pct_frac": float((a <= 0.25).mean())}


def summary(df: pd.DataFrame, by: str | list[str] = "phase") -> pd.DataFrame:
    """Error statistics per group: cases, predicted, not expressed, median / p90 / worst |error|,
    mean signed error (bias) and the share within 25%."""
    keys = [by] if isinstance(by, str) else list(by)
    out = []
    for name, g in df.groupby(keys, sort=True, dropna=False):
        name = name if isinstance(name, tuple) else (name,)
        e = pd.to_numeric(g["error_frac"], errors="coerce")
        out.append({**dict(zip(keys, name)), "cases": len(g), "predicted": int(e.notna().sum()),
                    "not_expressed": int(e.isna().sum()), **_stats(e)})
    return pd.DataFrame(out)


def overall(df: pd.DataFrame) -> dict:
    """The one-line totals: cases, predicted, and the error statistics over all predicted cases."""
    e = pd.to_numeric(df["error_frac"], errors="coerce")
    return {"cases": len(df), "predicted": int(e.notna().sum()), "not_expressed": int(e.isna().sum()), **_stats(e)}


# Accuracy targets per phase on the development cases, uncalibrated (the validation issue's bar).
TARGET_MEDIAN_ABS = 0.15
TARGET_P90_ABS = 0.40


def phase_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """Phase summary with the target check (median |error| <= 15% and p90 <= 40%) and, for a
    phase that misses, the modelling gaps its families name for it."""
    s = summary(df, "phase")
    ok = (s["median_abs_error_frac"] <= TARGET_MEDIAN_ABS) & (s["p90_abs_error_frac"] <= TARGET_P90_ABS)
    s["verdict"] = np.where(s["predicted"].eq(0), "not predicted", np.where(ok, "within target", "MISS"))

    def gap(phase: str) -> str:
        fams = df.loc[df["phase"].eq(phase), "family"].dropna().unique()
        return " | ".join(f"{f}: {VALIDATIONS[f].gaps[phase]}" for f in fams
                          if f in VALIDATIONS and phase in VALIDATIONS[f].gaps)
    s["gap"] = [gap(p) if v == "MISS" else "" for p, v in zip(s["phase"], s["verdict"])]
    return s


def sheets(path: Path | str | None = None, families: list[str] | None = None, strict: bool = False,
           bounds: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
           replaced: Replacements = NONE) -> dict[str, pd.DataFrame]:
    """What reports, the CLI and the app show: the cases, summaries by phase (with the target
    verdict), hardware family, metric and family, and the cases not expressed (with the reason). With `bounds`
    (validation/intervals.case_bounds), each case's predicted_low / predicted_high and the coverage: the share of
    measurements inside their interval, by family and metric."""
    df = run_cases(path, families, strict, replaced)
    cols = ["case_id", "family", "phase", "hardware_family", "system", "metric", "measured", "predicted", "unit",
            "error_frac", "note"]
    out = {}
    if bounds is not None:
        df = pd.concat([df, bounds(df)], axis=1)
        cols[cols.index("predicted") + 1:cols.index("predicted") + 1] = ["predicted_low", "predicted_high"]
        has = df["predicted_low"].notna()
        inside = (df["measured"] >= df["predicted_low"]) & (df["measured"] <= df["predicted_high"])
        out["coverage"] = df[has].assign(inside=inside[has]).groupby(["family", "metric"], sort=True).agg(
            cases=("inside", "size"), inside_frac=("inside", "mean")).reset_index()
    return {
        "cases": df[cols],
        "by_phase": phase_verdicts(df),
        "by_hardware_family": summary(df, "hardware_family"),
        "by_metric": summary(df, "metric"),
        "by_family": summary(df, "family"),
        "not_expressed": df.loc[df["predicted"].isna(), ["case_id", "phase", "hardware", "metric", "reason"]],
        **out,
        **fidelity.sheets(df),  # serving cases with backend and mode: by system x backend x model x mode
    }
