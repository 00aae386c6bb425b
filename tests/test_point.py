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
