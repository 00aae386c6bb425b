"""The intervals file: hardware_specs/calibration/intervals.json (written by `perfmodel validate --build-intervals`,
validation/intervals.py), read at the edge into core/intervals.IntervalTable.

    schema_version 1; built_by, commit, min_rows, keys (core/intervals.KEYS), sources (file, sha256, residuals)
    regimes   [{key, centre, half, rows, models}]   every key prefix with min_rows residuals or more
    scores    {quantity, model, score}              each point's leave-one-model-out score
    rows      {<keys>, model, residual}             the residuals themselves (ln predicted / measured)

Strict: a missing or extra field, a key that is not a prefix of KEYS, a regime under min_rows, a non-finite or
negative scale or score is one line naming the file and the field.

Does not: build residuals or compute intervals.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from perfmodel.catalog.root import catalog_root
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core import input_files
from perfmodel.core import intervals as iv

FILE = Path("hardware_specs") / "calibration" / "intervals.json"


class _Source(BaseModel):
    model_config = STRICT
    file: str
    sha256: str
    residuals: int


class _Regime(BaseModel):
    model_config = STRICT
    key: list[str]
    centre: float
    half: float
    rows: int
    models: int


class _File(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    built_by: str
    commit: str
    min_rows: int
    keys: list[str]
    sources: list[_Source]
    regimes: list[_Regime]
    scores: dict[str, list]
    rows: dict[str, list]


def path_of(root: Path | None = None) -> Path:
    return (root or catalog_root()) / FILE


def load(path: Path | str | None = None) -> iv.IntervalTable:
    """The IntervalTable of an intervals file (default: the catalogue's), checked (module doc)."""
    return _load(str(path or path_of()))


@lru_cache(maxsize=4)
def _load(path: str) -> iv.IntervalTable:
    try:
        data = json.loads(input_files.read_text(path, "intervals file"))
    except input_files.InputError as exc:
        raise CatalogError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    f = validate_file(_File, data, path, None)
    if tuple(f.keys) != iv.KEYS:
        raise CatalogError(f"{path}: field keys: {f.keys} (this perfmodel reads {list(iv.KEYS)}; rebuild with "
                           "perfmodel validate --build-intervals)")
    regimes = {}
    for i, r in enumerate(f.regimes):
        where = f"{path}: field regimes[{i}]"
        if not 1 <= len(r.key) <= len(iv.KEYS):
            raise CatalogError(f"{where}.key: {r.key} is not a prefix of {list(iv.KEYS)}")
        if r.rows < f.min_rows or r.models < 1:
            raise CatalogError(f"{where}.rows: {r.rows} residuals from {r.models} models (at least {f.min_rows})")
        if not (math.isfinite(r.centre) and math.isfinite(r.half) and r.half > 0):
            raise CatalogError(f"{where}: centre {r.centre!r} and half {r.half!r} must be finite, half > 0")
        regimes[tuple(r.key)] = (r.centre, r.half, r.rows, r.models)
    cols = ("quantity", "model", "score")
    if sorted(f.scores) != sorted(cols) or len({len(f.scores[c]) for c in cols}) != 1:
        raise CatalogError(f"{path}: field scores: give the columns {', '.join(cols)}, of one length")
    score = np.asarray(f.scores["score"], dtype=float)
    if not np.all(np.isfinite(score) & (score >= 0)):
        raise CatalogError(f"{path}: field scores.score: every score a finite number >= 0")
    q, m = np.asarray(f.scores["quantity"], dtype=object), np.asarray(f.scores["model"], dtype=object)
    scores = {k: iv.Scores(score[q == k], m[q == k]) for k in sorted(set(q))}
    return iv.IntervalTable(regimes, scores, path)
