"""The one-configuration path (evaluate.point): evaluate()'s summary row, the same numbers, without the
per-operator frame."""

import math

import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.model import evaluate

CASES = [
    ("dgx-h100", "llama-2-7b", Scenario(Phase.DECODE, batch=8, context=1024, parallel=Parallelism(tp=2))),
    ("trn2-ultraserver", "deepseek-v3", Scenario(Phase.DECODE, batch=64, context=4096,
                                                 parallel=Parallelism(tp=4, da=4, ep=16))),
    ("trn3-ultraserver", "llama-3-70b", Scenario(Phase.PREFILL, batch=2, seq_len=4096, parallel=Parallelism(tp=8))),
    ("dgx-h100", "llama-3-8b", Scenario(Phase.TRAIN, batch=2, seq_len=4096,
                                        parallel=Parallelism(tp=2, pp=2, dp=2, microbatches=8))),
]


@pytest.mark.parametrize("system,workload,scenario", CASES, ids=[f"{c[0]}-{c[1]}-{c[2].phase.value}" for c in CASES])
def test_a_point_is_the_evaluated_summary_row(system, workload, scenario):
    s, a = catalog.load_system(system), workload_files.load_workload(workload)
    row = evaluate.point(s, a, scenario)
    want = evaluate.evaluate(s, a, scenario).summary.iloc[0].to_dict()
    assert set(row) == set(want)
    for k, v in want.items():
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(row[k]), k
        else:
            assert row[k] == v, k  # bit for bit: the same sums in the same order


@pytest.mark.parametrize("system,workload,scenario", CASES, ids=[f"{c[0]}-{c[1]}-{c[2].phase.value}" for c in CASES])
def test_one_configuration_runs_the_graph_on_floats_with_numpys_numbers(system, workload, scenario):
    """The compiled source on Python floats (numeric.scalar_namespace) gives every operator quantity numpy gives,
    bit for bit, and point() sums them as the per-operator sweep path does."""
    import dataclasses

    import numpy as np

    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.model import bindings as bd
    from perfmodel.model.ops import GraphKey

    s, a = catalog.load_system(system), workload_files.load_workload(workload)
    cal = calibration_for(s)
    kn = bd.on_system(s, bd.Knobs.of(scenario))
    g = evaluate.compile_graph(GraphKey.of(a), scenario.phase, scenario.recompute, evaluate.Overlap.PIPELINED)
    assert g.scalar_fn is not None
    values = bd.bind(s, a, cal, kn)
    fast, _ = g.rows(values)
    slow, _ = dataclasses.replace(g, scalar_fn=None).rows(values)
    for q in fast:
        assert np.array_equal(np.asarray(fast[q]), np.asarray(slow[q]), equal_nan=True), q
    r = evaluate.run_rows(s, a, kn, cal, scenario.recompute)
    one = evaluate.summarize_rows(s, a, kn, r)
    swept = evaluate.summarize_rows(s, a, kn, dataclasses.replace(r, shape=(1,)))  # the per-term sums
    for k in one:
        assert np.array_equal(np.ravel(one[k]), np.ravel(swept[k]), equal_nan=True), k


def test_scalar_maxima_and_ceilings_are_numpys():
    """numpy.maximum / minimum keep NaN from either side; numpy.ceil keeps inf and NaN."""
    import numpy as np

    from perfmodel.model import numeric

    ns = numeric.scalar_namespace()
    for a, b in ((1.0, 2.0), (2.0, 1.0), (float("nan"), 1.0), (1.0, float("nan")), (-0.0, 0.0)):
        assert np.array_equal(ns["vmax"](a, b), np.maximum(a, b), equal_nan=True)
        assert np.array_equal(ns["vmin"](a, b), np.minimum(a, b), equal_nan=True)
    for x in (2.1, -2.1, 3.0, -0.5, -0.0, float("inf"), float("-inf"), float("nan")):
        assert np.array_equal(ns["ceil"](x), np.ceil(x), equal_nan=True)
        assert np.signbit(ns["ceil"](x)) == np.signbit(np.ceil(x))  # -0.5 rounds up to -0.0


@pytest.mark.parametrize("system,workload,scenario", CASES, ids=[f"{c[0]}-{c[1]}-{c[2].phase.value}" for c in CASES])
def test_a_point_is_its_configuration_in_a_sweep(system, workload, scenario):
    """point() binds, prices memory and checks rules on Python floats (scenario_knobs.num / where); the same
    configuration given as one-element arrays takes numpy's path: every total and the footprint agree bit for bit."""
    import dataclasses

    import numpy as np

    from perfmodel.model import bindings as bd

    s, a = catalog.load_system(system), workload_files.load_workload(workload)
    row = evaluate.point(s, a, scenario)
    kn = bd.Knobs.of(scenario)
    arrays = {k: np.asarray([getattr(kn, k)]) for k in ("batch", "seq_len", "context", "tp", "dp", "microbatches")}
    df = evaluate.evaluate_sweep(s, a, dataclasses.replace(kn, **arrays), recompute=scenario.recompute)
    swept = df.iloc[0].to_dict()
    for k in ("step_time_s", "compute_time_s", "comm_time_s", "model_flop", "hbm_bytes", "mfu_frac",
              "tokens_per_s_per_chip", "memory_bytes_per_chip", "valid", "fits", "invalid_reason"):
        assert row[k] == swept[k], k


def test_the_scalar_helpers_are_numpys_where_and_asarray():
    import numpy as np

    from perfmodel.model.scenario_knobs import num, where

    assert type(num(3)) is float and num(3) == 3.0
    assert np.array_equal(num([1, 2]), np.asarray([1.0, 2.0]))
    for cond in (True, False):
        assert where(cond, 2.0, 3.0) == np.where(cond, 2.0, 3.0)
        # an array branch keeps numpy's broadcast: the sweep's shape survives a scalar condition
        assert np.array_equal(where(cond, np.asarray([5.0, 6.0]), 1.0), np.where(cond, [5.0, 6.0], 1.0))
    assert np.array_equal(where(np.asarray([True, False]), 1.0, 0.0), [1.0, 0.0])


@pytest.mark.parametrize("count", ["tp", "pp", "da", "cp", "dp"])
def test_a_scalar_count_below_one_is_an_invalid_row_not_an_error(count):
    """A plan's single numbers run on Python floats, which raise on a division by zero; a count below 1 stays a
    numpy value (Knobs.__post_init__), so the sweep returns the row with the rule that breaks, as for arrays."""
    import warnings

    from perfmodel.model import bindings as bd

    s, a = catalog.load_system("dgx-h100"), workload_files.load_workload("llama-2-7b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        df = evaluate.evaluate_sweep(s, a, bd.Knobs(phase=Phase.DECODE, context=100, **{count: 0}))
    assert not df["valid"].iloc[0] and df["invalid_reason"].iloc[0].startswith("counts:")
