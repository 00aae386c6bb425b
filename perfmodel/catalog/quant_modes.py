"""Quantisation modes as measured files write them: hardware_specs/serving/quant_modes.toml.

    mode(word)      the Mode a quant-mode word means (lower case; spaces and '-' read as '_'), or None
    Mode.weights    the stored weight type;  Mode.compute: "weights", "bf16" (weight-only) or a type
    Mode.shipped    a 4-bit label that keeps a checkpoint's own 4-bit format when it ships one

Does not: decide what a chip runs (the readers ask the chip: a compute type it lacks is BF16).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from perfmodel.catalog.files import catalog_root, read_toml
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core.dtypes import DType


class _Mode(BaseModel):
    model_config = STRICT
    weights: str
    compute: str
    reason: str
    source: str  # where the word's meaning is documented (an engine's docs, a paper, a format's specification)
    shipped: bool = False


class _File(BaseModel):
    model_config = STRICT
    schema_version: int
    modes: dict[str, _Mode]


@dataclass(frozen=True)
class Mode:
    word: str
    weights: DType
    compute: DType | None  # None: the stored type itself
    shipped: bool
    reason: str
    source: str


def _word(text) -> str:
    return str(text).strip().lower().replace(" ", "_").replace("-", "_")


@lru_cache(maxsize=4)
def _modes(root: str) -> dict[str, Mode]:
    path = Path(root) / "hardware_specs" / "serving" / "quant_modes.toml"
    f = validate_file(_File, read_toml(path), str(path), None)
    out = {}
    for word, m in f.modes.items():
        try:
            weights = DType.parse(m.weights)
            compute = None if m.compute == "weights" else DType.parse(m.compute)
        except ValueError as exc:
            raise CatalogError(f"{path}: modes.{word}: {exc}") from None
        out[_word(word)] = Mode(word, weights, compute, m.shipped, m.reason, m.source)
    return out


def modes(root: Path | None = None) -> dict[str, Mode]:
    return dict(_modes(str(root or catalog_root())))


def mode(word, root: Path | None = None) -> Mode | None:
    """The quantisation mode `word` names, or None."""
    return _modes(str(root or catalog_root())).get(_word(word))
