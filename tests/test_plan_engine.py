"""The planner prices plans as the hardware family's serving engine runs them, prefers plans inside that engine's
measured envelope, and says when its answer leaves measured ground; the frontier check compares like with like
(the measured engines, the measured data types)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog import serving_engines, workload_files
from perfmodel.serving import planner, search
from perfmodel.validation import frontier
from perfmodel.validation.sources import inferencex_engine

DEMAND = planner.Demand.from_dict({"workload": "llama-3.1-8b", "requests_per_s": 20, "input_tokens": 1024,
                                   "output_tokens": 256, "ttft_s": 2.0, "tpot_s": 0.05})
SMALL = {"tp": [1, 2], "da": [1, 2], "pp": [1], "concurrency": [8, 64, 256, 1024], "dtypes": ["fp8"]}


@pytest.fixture(scope="module")
def plans():
    from perfmodel.catalog import system_inputs, workload_refs

    arch = workload_refs.load(DEMAND.workload)  # the inputs resolved at the edge, as the CLI does
    return {e: planner.plan_serving(DEMAND, arch, [system_inputs.resolve("p5e.48xlarge", e)],
                                    planner.PlanOptions(grid_kw=SMALL)).iloc[0]
            for e in (None, "none")}


def test_the_default_plan_runs_on_the_familys_engine_inside_its_envelope(plans):
    row, env = plans[None], serving_engines.envelope("vllm")
    assert row["feasible"] and row["engine"] == "vllm" and row["envelope"] == "measured"
    # inside: no more sequences per replica than measured vLLM deployments ran, attention tensor-parallel
    assert row["capacity_concurrency"] <= env["max_running"] and row["da"] <= env["max_attention_dp"]
    assert "extrapolated" not in row["note"]


def test_the_roofline_plan_says_it_is_extrapolated(plans):
    row = plans["none"]
    assert row["engine"] == "none" and row["envelope"] == "extrapolated"
    assert "extrapolated: the accelerator alone" in row["note"]
    # the engine's host time and envelope cost replicas: the roofline never needs more chips
    assert row["chips"] <= plans[None]["chips"]


def test_a_model_frontier_keeps_only_the_measured_storage_types():
    system, arch = catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3.1-8b")
    mix = inferencex_engine.mean_mix(1024, 256)
    fr = frontier.model_frontier(system, arch, mix, "vllm", serving_engines.envelope("vllm"), {"bf16/bf16"})
    assert len(fr) and set(fr["weights_dtype"] + "/" + fr["expert_weights_dtype"]) == {"bf16/bf16"}
    full = frontier.model_frontier(system, arch, mix, "vllm", serving_engines.envelope("vllm"))
    assert "fp8" in set(full["weights_dtype"])  # unrestricted, the native FP8 plans join


def test_the_engine_frontier_is_the_best_of_the_groups_measured_engines():
    rows = frontier.rows_of("reference/inferencex_serving_dev.csv")
    one = rows[rows["system"].str.strip().eq("h100_sxm") & rows["model_path"].str.contains("Qwen3-32B")
               & pd.to_numeric(rows["isl"]).eq(1024) & pd.to_numeric(rows["osl"]).eq(128)]
    front = frontier.points(one)
    engines = sorted(set(one["backend"].str.strip()))
    assert len(engines) > 1 and set(front["engine"]) == {"+".join(engines)}
    system, arch = catalog.load_system("p5.48xlarge"), workload_files.load_workload("qwen3-32b")
    mix = inferencex_engine.mean_mix(1024, 128)
    pts = frontier.measured_points(one)
    types = set(pts["types"]) - {""}
    best = np.fmax.reduce([search.best_at(frontier.model_frontier(system, arch, mix, e,
                                                                  serving_engines.envelope(e, system.chip.name), types),
                                          frontier.Y, front["tokens_per_s_per_user"])
                           for e in engines])
    assert front["engine_tokens_per_s_per_gpu"].to_numpy() == pytest.approx(best, nan_ok=True)


def test_the_apps_frontier_draws_the_engine_and_the_roofline_apart():
    from perfmodel import report

    df = report.serving_frontier(["p5e.48xlarge"], "llama-3-8b", input_tokens=512, output_tokens=256, y="chip",
                                 frontiers="both")
    assert set(df["frontier"]) == {"engine", "roofline"}
    assert set(df["curve"]) == {"p5e.48xlarge", "p5e.48xlarge (roofline)"}
    assert set(df.loc[df["frontier"].eq("roofline"), "envelope"]) == {"extrapolated"}
    assert set(df.loc[df["frontier"].eq("engine"), "engine"]) == {"vllm"}
    with pytest.raises(ValueError, match="frontiers 'all'"):
        report.serving_frontier(["p5e.48xlarge"], "llama-3-8b", frontiers="all")


def test_the_configs_frontier_is_the_model_at_the_measured_configurations():
    """configs: each measured row's TTFT and TPOT predicted, turned into (x, y) by the same closed-loop formula as
    the measurement, and read at the measured frontier's interactivities."""
    from perfmodel.validation.sources import inferencex

    rows = frontier.rows_of("reference/inferencex_serving_dev.csv")
    one = rows[rows["system"].str.strip().eq("h100_sxm") & rows["model_path"].str.contains("Llama-3.1-70B")
               & pd.to_numeric(rows["isl"]).eq(1024) & pd.to_numeric(rows["osl"]).eq(1024)].reset_index(drop=True)
    front = frontier.points(one)
    pts = frontier.measured_points(one)
    pred = inferencex.predict(one)
    tpot, ttft = pred["tpot_ms"] / 1e3, pred["ttft_ms"] / 1e3
    x = 1 / tpot
    y = pts["concurrency"] * pts["output_mean"] / (ttft + (pts["output_mean"] - 1) * tpot) / pts["gpus"]
    for _, r in front.iterrows():  # the best predicted y at an interactivity at least the measured point's
        want = y[x >= r["tokens_per_s_per_user"]].max()
        assert r["configs_tokens_per_s_per_gpu"] == pytest.approx(want)
    assert front["configs_ratio"].notna().all()
