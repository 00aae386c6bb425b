"""Claims S1-S4: computed from the frontiers, read where stated, misses explained with a driver."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import claims
from perfmodel.claims.serving import verdicts as cs
from perfmodel.claims.serving import curves


@pytest.fixture(scope="module")
def rows():
    return {r.id: r for fn in (cs.s1_tokens_per_mw, cs.s2_concurrency, cs.s3_interactivity, cs.s4_chart) for r in fn()}


def test_registered():
    claims.load_claim_modules()
    names = {fn.__name__ for fn in claims.CLAIMS}
    assert {"s1_tokens_per_mw", "s2_concurrency", "s3_interactivity", "s4_chart"} <= names


def test_every_row_is_computed(rows):
    assert set(rows) == {"S1", "S2.000", "S2.003", "S3", "S4"}
    for r in rows.values():
        assert np.isfinite(r.modelled) and r.modelled > 0 and r.note
    assert rows["S1"].quoted == 5.0 and rows["S3"].bound == "at_least"
    assert rows["S4"].within


def test_power_caveat_and_range_in_s1(rows):
    note = rows["S1"].note
    assert "NOT published" in note and "552-1000 W" in note and "Range the estimates allow" in note


def test_misses_name_a_driver_and_a_value(rows):
    for r in rows.values():
        if not r.within:
            assert "MISS" in r.note and ("largest elasticities" in r.note or "no parameter" in r.note), r.id
    if not rows["S1"].within:
        assert "Trainium3" in rows["S1"].note and "Trainium2 at" in rows["S1"].note


def test_readings_agree_with_the_chart(rows):
    fr = curves.sweeps()
    r = curves.readings(fr)
    chart = curves.chart_frame()
    assert set(chart["system"]) == {curves.NEW, curves.OLD} and {"tokens_per_mw", "concurrency"} <= set(chart["curve"])
    s1 = chart[chart["reading"] == "S1 reading (trn3, interpolated)"]
    s1_old = chart[chart["reading"] == "S1 reading (trn2, interpolated)"]
    assert s1[curves.MW].iloc[0] == pytest.approx(r["s1_new"])
    assert s1_old[curves.MW].iloc[0] == pytest.approx(r["s1_old"])
    # the S1 claim is the ratio of the two readings the chart draws at the same interactivity
    assert s1[curves.X].iloc[0] == s1_old[curves.X].iloc[0] == r["x_ref"]
    assert rows["S1"].modelled == pytest.approx(s1[curves.MW].iloc[0] / s1_old[curves.MW].iloc[0])
    # S3's operating point c_ref is Trn2's concurrency at x_ref: read back at c_ref, Trn2's curve gives x_ref
    assert r["s3_old"] == pytest.approx(r["x_ref"], rel=1e-6)
    # the interpolated reading lies between its two neighbouring frontier points
    nb = chart[(chart["system"] == curves.NEW) & chart["reading"].str.contains("S1 neighbour")]
    assert nb[curves.MW].min() <= r["s1_new"] <= nb[curves.MW].max()
    assert chart["power_caveat"].str.len().gt(0).all()


def test_read_curve_is_the_drawn_curve():
    df = pd.DataFrame({"eligible": True, "x": [1.0, 10.0, 100.0], "y": [100.0, 10.0, 1.0]})
    assert curves.read_curve(df, "x", "y", [0.5, 1.0, 3.1623, 100.0, 200.0])[:4] == pytest.approx(
        [100.0, 100.0, 31.623, 1.0], rel=1e-3)
    assert np.isnan(curves.read_curve(df, "x", "y", 200.0))


def test_s1_to_s3_are_read_for_every_reading(rows):
    """Issue 18: every defensible reading (Trn2 recipe best / bf16 / fp8, power basis modelled / all-in) gives its
    ratios; the verdict rows name the reading they judge and list the others."""
    from perfmodel.claims.serving import readings as sr

    t = sr.table().set_index(["trn2_recipe", "power_basis"])
    assert len(t) == len(sr.RECIPES) * 2
    best, bf16 = t.loc[("best", "modelled")], t.loc[("bf16", "modelled")]
    assert best["S1"] == pytest.approx(rows["S1"].modelled) and best["S2"] == pytest.approx(rows["S2.000"].modelled)
    # users and interactivity do not depend on power; tokens per MW does
    assert t.loc[("best", "all-in"), "S2"] == pytest.approx(best["S2"])
    assert t.loc[("best", "all-in"), "S1"] != pytest.approx(best["S1"])
    # Trn2 restricted to BF16 (its shipped MXFP4 experts upcast: no MX on Trn2) is slower: every ratio grows
    assert bf16["S1"] > best["S1"] and bf16["S2"] > best["S2"] and bf16["per_chip_at_x_ref"] > best["per_chip_at_x_ref"]
    assert np.isfinite(best["x_where_per_chip_is_3x"])  # where AWS's "3x per chip" sits on the modelled curves
    for key in ("S1", "S2.000", "S3"):
        assert "Reading: Trn2 at its best recipe" in rows[key].note and "bf16/modelled" in rows[key].note
    # the latency-bound end: the ratio over op_overhead's stated range and at the nxd-inference stack's value;
    # a larger fixed cost per operator weighs more on the faster chip, so S3 falls across the range
    import re

    for key in ("S1", "S3"):
        assert "nxd-inference stack's fitted 7.62 us" in rows[key].note
    tail = rows["S3"].note[rows["S3"].note.index("Latency-bound end"):]
    low, stack, high = (float(x) for x in re.findall(r"([0-9.]+)x at", tail))
    # the curves are priced with the stack (the engine frontier): the claim is read at the stack's own value
    assert low > stack > high and rows["S3"].modelled == pytest.approx(stack, abs=0.005)
    assert "priced as nxd-inference runs them" in rows["S3"].note and "extrapolated" in rows["S3"].note


def test_claims_chart_cli_gives_the_curves_of_every_reading(capsys):
    from perfmodel import cli
    from perfmodel.report import charts

    from perfmodel.claims.serving import readings as sr

    assert cli.main(["claims", "--claims-chart", "--format", "md"]) == 0  # the table: one row per reading
    assert capsys.readouterr().out.count("| best |") == 2
    cv = sr.curves(n=8)  # what --format csv / json / xlsx writes (60 points per curve there)
    assert set(cv["metric"]) == {"S1 tokens/MW", "S2 users", "per-chip throughput", "S3 interactivity"}
    assert set(cv["trn2_recipe"]) == {"best", "bf16", "fp8"} and set(cv["power_basis"]) == {"modelled", "all-in"}
    ok = cv[np.isfinite(cv["ratio"])]
    assert np.allclose(ok["ratio"], ok["trn3"] / ok["trn2"])
    spec = charts.claims_ratios(cv, "S1 tokens/MW", 5.0).to_dict()
    assert len(spec["layer"]) == 2  # the ratio lines and the quoted ratio


def test_the_report_draws_the_readings(rows):
    from perfmodel.report import compare

    sec = compare._readings_section()
    assert sec.title == "Seed claims S1-S3 by reading" and len(sec.charts) == 3
    tables = dict(sec.tables)
    assert len(tables["readings"]) == 6 and {"ratio", "metric"} <= set(tables["reading_curves"].columns)
