"""Capacity planner: demand files, SLA filtering, sizing arithmetic, continuous refinement, training plans."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog import demand_files, workload_files
from perfmodel.serving import planner, training_run

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"tp": [1, 2], "da": [1, 2, 4], "pp": [1], "concurrency": [1, 4, 16, 64, 256], "dtypes": ["fp8"]}


def test_lengths_and_demand_files():
    L = planner.Lengths.of({"512": 0.5, "2048": 0.5})
    assert L.mean == 1280 and L.max == 2048
    assert planner.Lengths.of(100).mean == 100
    for path in sorted((ROOT / "workloads" / "demands").glob("*.toml")):
        d = planner.Demand.from_dict(*demand_files.read(path))
        assert d.requests_per_s > 0 and d.name == path.stem
        workload_files.load_workload(d.workload)


def test_demand_errors(tmp_path):
    base = {"workload": "llama-3-8b", "requests_per_s": 1, "input_tokens": 10, "output_tokens": 10, "ttft_s": 1,
            "tpot_s": 0.1}
    with pytest.raises(ValueError, match="unknown field"):
        planner.Demand.from_dict({**base, "qps": 3})
    with pytest.raises(ValueError, match="missing field"):
        planner.Demand.from_dict({k: v for k, v in base.items() if k != "tpot_s"})
    with pytest.raises(ValueError, match="peak_to_average"):
        planner.Demand.from_dict({**base, "peak_to_average": 0.5})
    with pytest.raises(ValueError, match="lengths"):
        planner.Lengths.of({"0": 1.0})
    bad = tmp_path / "d.toml"
    bad.write_text("[nodemand]\n")
    with pytest.raises(ValueError, match=r"\[demand\]"):
        demand_files.read(bad)


def plan_of(demand, names, opts):
    """planner.plan_serving with its inputs resolved at the edge, as the CLI resolves them."""
    from perfmodel.catalog import system_inputs, workload_refs

    return planner.plan_serving(demand, workload_refs.load(demand.workload),
                                [system_inputs.resolve(n) for n in names], opts)


@pytest.fixture(scope="module")
def plan():
    d = planner.Demand.from_dict({"workload": "llama-3-8b", "requests_per_s": 50,
                                  "input_tokens": {"512": 0.5, "2048": 0.5}, "output_tokens": 256, "ttft_s": 1.0,
                                  "tpot_s": 0.03, "peak_to_average": 2.0})
    return d, plan_of(d, ["trn2.48xlarge", "p5.48xlarge"], planner.PlanOptions(grid_kw=SMALL))


def test_plan_meets_sla_and_sizes_for_the_peak(plan):
    d, df = plan
    assert list(df["system"]) == ["trn2.48xlarge", "p5.48xlarge"] and df["feasible"].all()
    assert np.all(df["time_per_output_token_s"] <= d.tpot_s) and np.all(df["ttft_s"] <= d.ttft_s)
    peak = d.requests_per_s * d.peak_to_average * d.output_tokens.mean
    assert np.all(df["replicas"] * df["peak_output_tokens_per_replica"] >= peak)
    assert np.all(df["replicas"] - 1 < peak / df["peak_output_tokens_per_replica"])
    assert np.all(df["chips"] == df["replicas"] * df["tp"] * df["da"] * df["pp"])
    assert np.all(df["usd_per_month"] > 0) and np.all(df["facility_power_peak_w"] > df["facility_power_avg_w"])
    t2 = df.iloc[0]
    assert t2["usd_per_month"] == pytest.approx(t2["instances"] * 85.964 * 730)
    assert t2["facility_power_peak_at_low_tdp_w"] < t2["facility_power_peak_w"] < \
        t2["facility_power_peak_at_high_tdp_w"]
    assert "NOT published" in t2["power_caveat"]


def test_refinement_uses_the_slack(plan):
    d, df = plan
    # the refined concurrency is off the coarse grid and still meets the TPOT target
    assert df["note"].str.contains("refined to the whole micro-batch").all(), list(df["note"])
    assert not set(df["capacity_concurrency"]) <= set(SMALL["concurrency"]), list(df["capacity_concurrency"])
    assert np.all(df["concurrency"] <= df["capacity_concurrency"])
    assert np.all(df["time_per_output_token_s"] <= d.tpot_s)


def test_infeasible_sla_is_reported():
    d = planner.Demand.from_dict({"workload": "llama-3-8b", "requests_per_s": 1, "input_tokens": 512,
                                  "output_tokens": 64, "ttft_s": 1e-4, "tpot_s": 1e-4})
    df = plan_of(d, ["trn2.48xlarge"], planner.PlanOptions(grid_kw=SMALL))
    assert not df["feasible"].iloc[0] and "no configuration meets" in df["note"].iloc[0]


def test_training_plan_arithmetic():
    s = catalog.load_system("trn2.48xlarge")
    a = workload_files.load_workload("llama-3-8b")
    df = training_run.plan_training(s, a, 1e12, chips=16, seq_len=2048, global_batch_tokens=2 ** 20)
    r = df.iloc[0]
    assert r["chips"] == 16 and r["tp"] * r["pp"] * r["dp"] == 16
    assert r["compute_days"] == pytest.approx(1e12 / r["tokens_per_s"] / 86400)
    # the wall clock adds evaluation, checkpoints and interrupts (training/time_to_train.py)
    assert r["days"] == pytest.approx(r["compute_days"] / r["goodput_frac"]) and 0.9 < r["goodput_frac"] < 1
    assert r["usd_per_run"] == pytest.approx(16 * 85.964 / 16 * 24 * r["days"], rel=1e-6)
    assert 0 < r["mfu_frac"] < 1
    with pytest.raises(ValueError, match="exactly one"):
        training_run.plan_training(s, a, 1e12)


def test_replicas_may_span_whole_scale_up_domains():
    """Beyond the domain a replica takes whole domains (its collectives over the scale-out tier); sizing counts
    the domains each one spans, and an xPyD answer has whole prefill workers."""
    from perfmodel.serving import search

    p5e = catalog.load_system("p5e.48xlarge")
    ds = workload_files.load_workload("deepseek-v3")
    g = search.plan_grid(p5e, ds, dtypes=["fp8"], concurrency=[256], max_chips=32)
    chips = set((g.tp * g.da * g.pp).astype(int))
    assert {16, 32} <= chips and not chips & {12, 24} and max(chips) == 32
    df = pd.DataFrame({"output_tokens_per_s_per_replica": [1000.0, 1000.0], "replica_chips": [16.0, 4.0],
                       "prefill_chips_per_replica": [0.0, 2.6], "replicas_per_scaleup": [0.5, 1.0]})
    out = planner._size(df, p5e, 3000.0, whole_scaleup=False)
    assert list(out["replicas"]) == [3, 3] and list(out["prefill_workers"]) == [0, 2]  # ceil(3 x 2.6 / 4)
    assert list(out["chips"]) == [48, 20] and list(out["scaleups"]) == [6, 3]  # 2 domains each; 2 workers a node
