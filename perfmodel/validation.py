"""Published-measurement checks: the shared CSV reader and the registry of validation families.

A family is a function returning a tidy frame, one row per measured point:

    case_id, hardware, metric, measured, predicted, unit, error_frac, note
    error_frac = (predicted - measured) / measured   (NaN where the model cannot predict the row)

Register one with the decorator in your own module (`perfmodel/validation_*.py` modules are
imported by `load_validation_modules`):

    @register_validation("nccl")
    def nccl() -> pd.DataFrame: ...

`run_validation(name)` runs one family and checks its columns; `summary(frame)` gives the error
statistics the CLI prints (rows, predicted rows, median / mean / worst |error|, share within 10%
and 25%). The measurements are `reference/published_measurements.csv`, vendored beside the
package (never ../shared).

Does not: tune anything to the measurements, or format output.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from perfmodel import units

CSV = Path(__file__).resolve().parent.parent / "reference" / "published_measurements.csv"
COLUMNS = ("case_id", "hardware", "metric", "measured", "predicted", "unit", "error_frac", "note")
VALIDATIONS: dict[str, Callable[[], pd.DataFrame]] = {}

_SIZE_UNITS = {"B": 1.0, "KiB": units.KiB, "MiB": units.MiB, "GiB": units.GiB}


def register_validation(name: str):
    """Decorator: add a family `name` -> function returning the tidy frame of COLUMNS."""
    def deco(fn: Callable[[], pd.DataFrame]) -> Callable[[], pd.DataFrame]:
        VALIDATIONS[name] = fn
        return fn
    return deco


@lru_cache(maxsize=4)
def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def measurements(prefix: str | tuple[str, ...] | None = None, path: Path | None = None) -> pd.DataFrame:
    """The measurement rows (all columns as text; `value` also as float), optionally by case-id prefix."""
    df = _read(str(path or CSV)).copy()
    df["value_num"] = pd.to_numeric(df["value"], errors="coerce")
    if prefix:
        df = df[df["case_id"].str.startswith(prefix)]
    return df.reset_index(drop=True)


def row(case_id: str, hardware: str, metric: str, measured: float, predicted: float, unit: str,
        note: str = "") -> dict:
    """One tidy row; error_frac from measured and predicted."""
    err = (predicted - measured) / measured if measured and np.isfinite(predicted) else float("nan")
    return {"case_id": case_id, "hardware": hardware, "metric": metric, "measured": float(measured),
            "predicted": float(predicted), "unit": unit, "error_frac": err, "note": note}


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS))


def parse_size(text: str) -> float:
    """First '<number> <B|KiB|MiB|GiB>' in text, in bytes (e.g. 'all-reduce fp32 1 GiB' -> 2^30)."""
    m = re.search(r"(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)\b", text)
    if not m:
        raise ValueError(f"no message size in {text!r}")
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)]


def parse_points(text: str) -> list[tuple[float, float, str]]:
    """'<size> <value> [us]' points in a notes field: '8 GiB 479.28; 8 KiB 149 us' ->
    [(8 GiB in bytes, 479.28, ''), (8192.0, 149.0, 'us')]."""
    out = []
    for m in re.finditer(r"(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)\s+(\d+(?:\.\d+)?)\s*(us)?", text):
        out.append((float(m.group(1)) * _SIZE_UNITS[m.group(2)], float(m.group(3)), m.group(4) or ""))
    return out


def load_validation_modules() -> None:
    """Import every perfmodel.validation_* module so its families register."""
    import perfmodel

    for info in pkgutil.iter_modules(perfmodel.__path__):
        if info.name.startswith("validation_"):
            importlib.import_module(f"perfmodel.{info.name}")


def run_validation(name: str) -> pd.DataFrame:
    """Run one registered family; the frame has COLUMNS first (extra columns kept after them)."""
    load_validation_modules()
    if name not in VALIDATIONS:
        raise KeyError(f"unknown validation family {name!r} (known: {', '.join(sorted(VALIDATIONS))})")
    df = VALIDATIONS[name]()
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"validation family {name!r} lacks columns {missing}")
    return df[list(COLUMNS) + [c for c in df.columns if c not in COLUMNS]].reset_index(drop=True)


def summary(df: pd.DataFrame, family: str = "") -> pd.DataFrame:
    """Error statistics of one family's frame (one row)."""
    e = pd.to_numeric(df["error_frac"], errors="coerce")
    a = e.abs().dropna()
    return pd.DataFrame([{
        "family": family, "rows": len(df), "predicted_rows": int(a.size),
        "median_abs_error_frac": float(a.median()) if a.size else np.nan,
        "mean_abs_error_frac": float(a.mean()) if a.size else np.nan,
        "mean_error_frac": float(e.dropna().mean()) if a.size else np.nan,
        "worst_abs_error_frac": float(a.max()) if a.size else np.nan,
        "within_10pct_frac": float((a <= 0.10).mean()) if a.size else np.nan,
        "within_25pct_frac": float((a <= 0.25).mean()) if a.size else np.nan,
    }])
