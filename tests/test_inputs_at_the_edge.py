"""Inputs resolved once at the edge: after the system, its calibration, the model and the engine are loaded, a
serving search, a plan and a training step read nothing more from the catalogue (no calibration look-up, no file,
no engine or stack by name). The architecture test checks the imports; this checks the calls."""

from __future__ import annotations

import pytest

from perfmodel import catalog, training
from perfmodel.catalog import calibration, files, neuron_stacks, serving_engines, system_inputs, workload_files
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Scenario
from perfmodel.serving import planner, search
from perfmodel.serving.steady_state import Grid, Mix, ServingOptions, serve


def seal(monkeypatch):
    """Every catalogue look-up a computation could make raises from here on."""
    def refuse(*_a, **_k):
        raise AssertionError("a look-up below the edge")

    for mod, names in ((calibration, ("calibration_for", "_calibration")), (files, ("load_system", "_load_system")),
                       (workload_files, ("load_workload",)), (serving_engines, ("engine", "engines", "resolve")),
                       (neuron_stacks, ("stack", "stacks", "software", "for_system"))):
        for n in names:
            monkeypatch.setattr(mod, n, refuse)
    monkeypatch.setattr(catalog, "load_system", refuse)


def test_a_serving_search_and_a_plan_run_on_their_inputs_alone(monkeypatch):
    arch = workload_files.load_workload("llama-3.1-8b")
    gpu = system_inputs.resolve("p5e.48xlarge")  # the family's default engine, its record and envelope
    trn = system_inputs.resolve("trn2.48xlarge")
    assert gpu.software is not None and gpu.software.name == gpu.engine and trn.software.role == "serving"
    demand = planner.Demand.from_dict({"workload": "llama-3.1-8b", "requests_per_s": 10, "input_tokens": 1024,
                                       "output_tokens": 256, "ttft_s": 2.0, "tpot_s": 0.05})
    small = {"tp": [1, 2], "da": [1], "pp": [1], "concurrency": [8, 64], "dtypes": ["fp8"]}
    expected = planner.plan_serving(demand, arch, [gpu, trn], planner.PlanOptions(grid_kw=small))
    with monkeypatch.context() as m:
        seal(m)
        again = planner.plan_serving(demand, arch, [gpu, trn], planner.PlanOptions(grid_kw=small))
        row = serve(gpu.system, arch, Grid.of(tp=[1], concurrency=[16], compute="fp8"), Mix(1024, 256),
                    ServingOptions(software=gpu.software)).iloc[0]
        df = search.frontier_sweep(trn.system, arch, Mix(1024, 256), software=trn.software,
                                   envelope_profile=trn.envelope, tp=[1, 2], concurrency=[8, 32])
    assert again.equals(expected) and row["engine"] == gpu.engine and len(df)


def test_a_training_step_runs_on_its_inputs_alone(monkeypatch):
    trn1 = catalog.load_system("trn1.32xlarge")
    bert = workload_files.load_workload("bert-large")
    stack = neuron_stacks.for_system("nxd-training", "training", trn1)
    sc = Scenario(phase=Phase.TRAIN, batch=4, seq_len=512, parallel=Parallelism(dp=16, microbatches=8),
                  optimizer=Optimizer.ADAM_BF16_SR)
    with monkeypatch.context() as m:
        seal(m)
        r = training.train(trn1, bert, sc, 1, stack=stack)
    assert r["stack"] == "nxd-training" and r["step_time_s"] > 0


def test_a_name_alone_never_reaches_a_step():
    p5 = catalog.load_system("p5e.48xlarge")
    arch = workload_files.load_workload("llama-3.1-8b")
    with pytest.raises(ValueError, match="'vllm': not resolved"):
        serve(p5, arch, Grid.of(tp=[1], concurrency=[8], compute="fp8"), Mix(1024, 256), ServingOptions(engine="vllm"))
