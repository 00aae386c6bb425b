"""Communication claims C1-C4: computed, within tolerance where the model reproduces them,
and every miss asserted as a miss with its reason."""

from __future__ import annotations

import math

import pytest

from perfmodel import claims
from perfmodel.claims import comm


@pytest.fixture(scope="module")
def rows():
    out = []
    for fn in (comm.c1_two_d_ring, comm.c2_neuronswitch, comm.c3_gpt3_overhead,
               comm.c4_scaling):
        out.extend(fn())
    return {r.id: r for r in out}


def test_registered():
    claims.load_claim_modules()
    names = {fn.__name__ for fn in claims.CLAIMS}
    assert {"c1_two_d_ring", "c2_neuronswitch", "c3_gpt3_overhead", "c4_scaling"} <= names


def test_every_row_is_computed(rows):
    assert {"C1", "C2.all_gather", "C2.all_reduce", "C3.trn1_over_trn1n", "C3.p4d_over_trn1"} <= set(rows)
    assert sum(k.startswith("C4.") for k in rows) == 6
    for r in rows.values():
        assert math.isfinite(r.modelled) and r.note


def test_misses_say_why(rows):
    for r in rows.values():
        if not r.within:
            assert "MISS" in r.note, r.id


def test_c1_two_d_ring_at_512(rows):
    r = rows["C1"]
    assert r.within and 60 < r.modelled < 95
    assert "GB" in r.note and "512" in r.note  # message size stated


def test_c2_is_a_latency_regime_miss(rows):
    for key in ("C2.all_gather", "C2.all_reduce"):
        r = rows[key]
        assert r.modelled > 1.0  # the switch is faster
        assert r.within or "collective_fixed_latency" in r.note
    # all-gather: not by the quoted 6x (the per-call cost dominates the latency regime)
    assert not rows["C2.all_gather"].within and "collective_fixed_latency" in rows["C2.all_gather"].note
    assert "peak ratio" in rows["C2.all_gather"].note


def test_c3_ordering_holds(rows):
    for key in ("C3.trn1_over_trn1n", "C3.p4d_over_trn1"):
        assert rows[key].within and rows[key].modelled > 1.0


def test_c4(rows):
    assert rows["C4.gpt3_6.7b.efficiency"].within
    for case in ("bert_ph1", "bert_ph2", "gpt3_6.7b"):
        r = rows[f"C4.{case}.efficiency"]
        # below 100% for a reason the model states: the slowest of 256 chips paces every step (and exposed
        # gradient sync); a miss names the per-step work the model leaves out
        assert r.modelled < 99.0 and "slowest chip" in r.note
        assert r.within or "step time" in r.note
    for case in ("bert_ph1", "bert_ph2", "gpt3_6.7b"):
        r = rows[f"C4.{case}.throughput_1node"]
        assert "implies MFU" in r.note and "torch-neuronx-2022" in r.note
        assert r.modelled > r.quoted  # 2022 software reached less than the modelled kernels
        assert "p4d.24xlarge" in r.note  # the evidence that names the gap: the same talk's A100 comparison


def test_c4_names_its_gap_with_the_talks_own_a100_measurement():
    # seed 004: Trn1 1.5x faster than p4d on BERT-Large phase 1, i.e. ~1,900 seq/s on 8 A100; perfmodel, with the
    # A100 efficiencies measured on today's kernels, is further above that than it is above Trainium1's 2,846:
    # the gap belongs to 2022's software, not to an assumed Trainium efficiency
    over_a100 = comm.c4_p4d_bert_ph1() / (comm.C4_CASES[0][7] / comm.C4_P4D_SPEEDUP)
    trn1 = comm.c4_numbers()["bert_ph1"].iloc[0]["sequences_per_s"] / comm.C4_CASES[0][7]
    assert over_a100 > trn1 > 1.5
