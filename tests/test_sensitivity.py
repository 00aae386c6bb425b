"""Sensitivity: exact elasticities of power laws, perturbation of every spec family, ranking, errors."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.serving import sensitivity
from perfmodel.serving.steady_state import Grid, Mix, serve


@pytest.fixture(scope="module")
def inputs():
    s = catalog.load_system("trn2.48xlarge")
    return {"trn2": (s, calibration_for(s))}


def test_power_law_elasticities_are_exact(inputs):
    def fn(inp):
        s, c = inp["trn2"]
        return s.chip.hbm_bandwidth_bytes_per_s ** -1 * s.chip.tdp_w ** 0.5 * c["hbm_efficiency"] ** 2

    df = sensitivity.elasticities(fn, inputs)
    e = dict(zip(df["parameter"], df["elasticity"]))
    assert e["hbm_bandwidth"] == pytest.approx(-1.0) and e["tdp"] == pytest.approx(0.5)
    assert e["hbm_efficiency"] == pytest.approx(2.0) and e["op_overhead"] == pytest.approx(0.0)
    assert list(df["rank"][:3]) == [1, 2, 3] and df["parameter"].iloc[0] == "hbm_efficiency"
    assert np.all(np.diff(df["elasticity"].abs().to_numpy()) <= 1e-12)


def test_perturb_scales_the_named_field(inputs):
    s, c = inputs["trn2"]
    f = 1.1
    assert sensitivity.perturb_system(s, "hbm_bandwidth", f).chip.hbm_bandwidth_bytes_per_s == \
        pytest.approx(f * s.chip.hbm_bandwidth_bytes_per_s)
    t = sensitivity.perturb_system(s, "tensor_rate", f)
    assert all(t.chip.tensor.flop_per_s[d] == pytest.approx(f * v) for d, v in s.chip.tensor.flop_per_s.items())
    assert t.chip.peak_flop_per_s[next(iter(s.chip.peak_flop_per_s))] == pytest.approx(
        f * next(iter(s.chip.peak_flop_per_s.values())))
    assert sensitivity.perturb_system(s, "element_rate", f).chip.scalar.exp_elems_per_s == \
        pytest.approx(f * s.chip.scalar.exp_elems_per_s)
    lk = sensitivity.perturb_system(s, "link_bandwidth", f)
    assert all(a.bandwidth_bytes_per_s == pytest.approx(f * b.bandwidth_bytes_per_s) for a, b in zip(lk.tiers, s.tiers))
    p = next(q for q in sensitivity.parameters("trn2", s, c) if q.name == "op_overhead")
    c2 = sensitivity.perturb(inputs, p, f)["trn2"][1]
    assert c2["op_overhead"] == pytest.approx(f * c["op_overhead"])  # a time-valued assumption, set with its unit
    with pytest.raises(KeyError):
        sensitivity.perturb_system(s, "clock", f)


def test_serving_elasticities_are_physical(inputs):
    arch = workload_files.load_workload("llama-3-8b")
    g = Grid.of(tp=1, concurrency=4)

    def fn(inp):
        s, c = inp["trn2"]
        return {"tpot": serve(s, arch, g, Mix(512, 256), cal=c)["time_per_output_token_s"].iloc[0]}

    params = [p for p in sensitivity.parameters("trn2", *inputs["trn2"])
              if p.name in ("hbm_bandwidth", "hbm_efficiency", "tensor_rate", "tdp", "pue")]
    df = sensitivity.elasticities(fn, inputs, params).set_index("parameter")
    assert -1.0 <= df.loc["hbm_bandwidth", "elasticity"] < -0.3  # small-batch decode is HBM-bound
    assert df.loc["hbm_bandwidth", "elasticity"] == pytest.approx(df.loc["hbm_efficiency", "elasticity"])
    assert abs(df.loc["tdp", "elasticity"]) < 1e-9 and abs(df.loc["pue", "elasticity"]) < 1e-9
    assert set(df["result_name"]) == {"tpot"}


def test_errors(inputs):
    with pytest.raises(ValueError, match="finite and > 0"):
        sensitivity.elasticities(lambda inp: 0.0, inputs)
    with pytest.raises(ValueError, match="rel_step"):
        sensitivity.elasticities(lambda inp: 1.0, inputs, rel_step=0.7)
    p = sensitivity.parameters("trn2", *inputs["trn2"])[:1]
    calls = iter([1.0, np.nan, 2.0])
    df = sensitivity.elasticities(lambda inp: next(calls), inputs, p)
    assert np.isnan(df["elasticity"].iloc[0]) and "not finite" in df["note"].iloc[0]


def test_assumptions_are_evaluated_over_the_range_their_evidence_leaves(inputs):
    def fn(inp):
        s, c = inp["trn2"]
        return s.chip.hbm_bandwidth_bytes_per_s ** -1 * c["hbm_efficiency"] ** 2

    df = sensitivity.elasticities(fn, inputs, ranges=True).set_index("parameter")
    cal = inputs["trn2"][1]
    lo, hi = cal.params["hbm_efficiency"].low, cal.params["hbm_efficiency"].high  # stated in neuron.toml
    base = df.at["hbm_efficiency", "result"]
    assert df.at["hbm_efficiency", "result_at_range_low"] == pytest.approx(base * (lo / 0.85) ** 2)
    assert df.at["hbm_efficiency", "result_at_range_high"] == pytest.approx(base * (hi / 0.85) ** 2)
    assert np.isnan(df.at["hbm_bandwidth", "result_at_range_low"])  # a published spec value: no range stated
    assert "range_low" not in sensitivity.elasticities(fn, inputs).columns  # off unless asked: claims stay as fast
