"""The vocabulary of measured quantities, one data file for every reader: reference/measured_quantities.toml.

    vocabulary()   the file: [serving.*] (quantities with their words, scopes, statistics, rate units: read by
                   serving_words.py) and [training.kinds.*] (each kind's patterns and examples: training_rows.py)

Does not: decide what a quantity predicts (the families do).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from perfmodel.catalog.files import read_toml

FILE = Path(__file__).resolve().parents[3] / "reference" / "measured_quantities.toml"


@lru_cache(maxsize=1)
def vocabulary() -> dict:
    return read_toml(FILE)
