"""Calibrated-set files (written by `perfmodel calibrate`): their strict schema and their TOML writer.

A calibrated-set file (hardware_specs/calibration/fitted/<family>-<date>.toml or any path):

    schema_version = 1
    family = "neuron"                       # neuron (Trainium + Inferentia) | nvidia
    created = "2025-01-31T12:00:00"         # ISO date or date-time
    method = "scipy.optimize.least_squares ..."
    [fitted_on]      cases_file, sha256, cases, hardware_families, validation_families
    [params.<name>]  value, initial, lower, upper (absent: unbounded), kind, std_error
    [not_identified] <name> = "why the data could not fix it (held at its family-file value)"
    [cross_validation] folds, grouping, seed, cases, (un)calibrated_{median,p90}_abs_error, [[cross_validation.fold]]
    [in_sample]      cases, (un)calibrated_{median,p90}_abs_error (final fit on every case)

Values are written like the family files: strings with units for dimensional kinds ('2.4 us'),
plain numbers for ratios and counts.

Reading one, with every parameter checked against its family file, is
calibration.load_calibrated_set; this module only says what the file holds and writes it.
Does not: read files, or check parameters against a family file.
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal, Mapping

from pydantic import BaseModel, Field, StrictFloat, StrictInt

from perfmodel.catalog.spec_schema import STRICT

_Number = str | StrictInt | StrictFloat  # strict: true / false is not a number (lax mode reads true as 1)


class _FittedParam(BaseModel):
    model_config = STRICT
    value: _Number
    initial: _Number
    lower: _Number
    upper: _Number | None = None
    kind: str
    std_error: _Number | None = None


class _FittedOn(BaseModel):
    model_config = STRICT
    cases_file: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    cases: int = Field(gt=0)
    hardware_families: list[str] = []
    validation_families: list[str] = []


class _ErrorStats(BaseModel):
    model_config = STRICT
    cases: int = Field(ge=0)
    uncalibrated_median_abs_error: float
    uncalibrated_p90_abs_error: float
    calibrated_median_abs_error: float
    calibrated_p90_abs_error: float


class _Fold(_ErrorStats):
    fold: int = Field(ge=1)
    held_out_groups: list[str] = []
    params: dict[str, float] = {}  # values fitted on the other folds (SI)


class _CrossValidation(_ErrorStats):
    folds: int = Field(ge=2)
    grouping: str
    seed: int
    fold: list[_Fold] = []


class CalibratedSetFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    family: Literal["neuron", "nvidia"]
    created: str
    method: str = Field(min_length=1)
    description: str = ""
    fitted_on: _FittedOn
    params: dict[str, _FittedParam] = Field(min_length=1)
    not_identified: dict[str, str] = {}
    cross_validation: _CrossValidation | None = None
    in_sample: _ErrorStats | None = None


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_scalar(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _toml_lines(data: Mapping, prefix: str = "") -> list[str]:
    key = (lambda k: k if _BARE_KEY.match(k) else _toml_scalar(k))
    is_tables = (lambda v: isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v))
    lines = [f"{key(k)} = {_toml_scalar(v)}" for k, v in data.items()
             if v is not None and not isinstance(v, Mapping) and not is_tables(v)]
    for k, v in data.items():
        if isinstance(v, Mapping) and v:
            inner = _toml_lines(v, f"{prefix}{key(k)}.")
            has_keys = any(not isinstance(x, Mapping) and not is_tables(x) for x in v.values())
            lines += (["", f"[{prefix}{key(k)}]"] if has_keys else []) + inner
    for k, v in data.items():
        if is_tables(v):
            for item in v:
                lines += ["", f"[[{prefix}{key(k)}]]"] + _toml_lines(item, f"{prefix}{key(k)}.")
    return lines


def dump_calibrated_set(f: CalibratedSetFile, header: str = "") -> str:
    """TOML text of a calibrated-set file (load_calibrated_set reads it back)."""
    head = [f"# {line}".rstrip() for line in header.splitlines()]
    return "\n".join(head + _toml_lines(f.model_dump(exclude_none=True))) + "\n"
