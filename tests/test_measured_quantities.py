"""The one vocabulary of measured quantities (reference/measured_quantities.toml): every training example reads
to its kind, and every serving word to its quantity (tests/test_serving_words.py)."""

from __future__ import annotations

import pytest

from perfmodel.validation.sources import quantities, training_rows

KINDS = quantities.vocabulary()["training"]["kinds"]


@pytest.mark.parametrize("kind, example", [(k, x) for k, e in KINDS.items() for x in e["examples"]])
def test_every_training_example_reads_to_its_kind(kind, example):
    metric, unit = example.rsplit(" ", 1)
    assert training_rows.metric_of(metric, unit) == kind


def test_both_families_read_the_same_file():
    from perfmodel.validation.sources import serving_words

    v = quantities.vocabulary()
    assert serving_words.vocabulary() is v["serving"] and {"serving", "training"} <= set(v)
    assert training_rows.metrics()[0][1] == "mfu" and all(p and k in KINDS for p, k in training_rows.metrics())
