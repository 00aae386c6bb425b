"""Fidelity is a gate: no development corpus's (family, metric) group may get worse than the limits file says
(today's median and p90 |error| plus a stated margin, coverage at least today's)."""

from __future__ import annotations

import pytest

from perfmodel.validation import fidelity_gate as gate

LIMITS = gate.load()


def test_every_corpus_is_gated():
    assert set(LIMITS) == set(gate.CORPORA) and all(LIMITS.values())


@pytest.mark.parametrize("corpus", gate.CORPORA)
def test_no_group_is_worse_than_its_limit(corpus):
    bad = gate.failures(gate.measure(corpus), LIMITS[corpus])
    assert not bad, "fidelity got worse (or rewrite the limits with the command in their file):\n" + "\n".join(bad)


def test_the_gate_catches_a_worse_model_and_lost_coverage():
    corpus = "reference/neuron_trn2_vllm.csv"
    m = gate.measure(corpus)
    worse = m.assign(median_abs_error_frac=m["median_abs_error_frac"] * 1.5 + 0.05)
    lines = gate.failures(worse, LIMITS[corpus])
    assert lines and all("median |error|" in line and "above its limit" in line for line in lines)
    fewer = m.assign(predicted=m["predicted"] - 1)
    assert any("fewer than" in line or "no predicted" in line for line in gate.failures(fewer, LIMITS[corpus]))
    assert gate.failures(m, LIMITS[corpus]) == []
