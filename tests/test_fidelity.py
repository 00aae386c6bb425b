"""The fidelity table (validation/fidelity.py): cells by system x backend x model x mode x metric, targets
per metric, and a gap named for every cell that misses (from the rule table), none for a cell within."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.validation import fidelity


def _cases(err_ttft: float, err_tpot: float, n: int = 10, **cell) -> pd.DataFrame:
    base = dict(system="p5.48xlarge", backend="vllm", workload="llama-3.1-70b", mode="agg", sized="") | cell
    rows = []
    for metric, err in (("TTFT mean", err_ttft), ("TPOT mean", err_tpot)):
        for i in range(n):
            measured = 100.0 + i
            rows.append({**base, "case_id": f"r{i}:{metric[:4].lower()}", "metric": metric, "measured": measured,
                         "predicted": measured * (1 + err), "predicted_unfitted": measured * (1 + 2 * err),
                         "error_frac": err, "unit": "ms"})
    return pd.DataFrame(rows)


def test_targets_per_metric_and_a_gap_only_where_a_cell_misses():
    # TTFT 20% is within its 25% target, TPOT 20% misses its 15%
    t = fidelity.table(_cases(0.20, 0.20)).set_index("metric")
    assert t.at["TTFT mean", "verdict"] == "within target" and t.at["TTFT mean", "gap"] == ""
    assert t.at["TPOT mean", "verdict"] == "MISS" and t.at["TPOT mean", "gap"] != ""
    assert t["coverage_frac"].eq(1.0).all() and np.allclose(t["median_abs_error_unfitted_frac"], 0.4)


def test_the_gap_follows_the_cells_mechanism():
    sized = fidelity.table(_cases(0.5, 0.5, mode="disagg", sized="decode workers sized (KV rule)",
                                  backend="trtllm", workload="deepseek-v3")).set_index("metric")
    assert sized.at["TPOT mean", "gap"].startswith("decode workers not given")
    assert sized.at["TTFT mean", "gap"].startswith("disaggregated first token")
    mla = fidelity.table(_cases(0.5, 0.05, backend="trtllm", workload="deepseek-v3")).set_index("metric")
    assert mla.at["TTFT mean", "gap"].startswith("MoE / MLA prefill") and mla.at["TPOT mean", "gap"] == ""


def test_overall_by_metric_and_backend_and_nothing_without_serving_cases():
    two = pd.concat([_cases(0.1, 0.1), _cases(0.3, 0.3, backend="sglang")])
    o = fidelity.overall(two)
    assert set(o["backend"]) == {"all", "vllm", "sglang"}
    # each case counted once per view: by metric, by backend, by plan, by backend x plan
    assert o["cases"].sum() == 4 * len(two) and set(o["plan"]) == {"all", fidelity.STATED}
    assert fidelity.sheets(two.drop(columns=["mode", "backend"])) == {}
    assert set(fidelity.sheets(two)) == {"fidelity_overall", "fidelity", "fidelity_cases"}


def test_overall_splits_rows_whose_pools_a_rule_sized_from_rows_that_give_them():
    stated = _cases(0.1, 0.1, mode="disagg")
    sized = _cases(0.6, 0.6, mode="disagg", sized="decode workers sized (KV rule)").assign(
        case_id=lambda d: "s" + d["case_id"])
    o = fidelity.overall(pd.concat([stated, sized])).set_index(["metric", "backend", "plan"])
    assert np.isclose(o.loc[("TPOT mean", "all", fidelity.STATED), "median_abs_error_frac"], 0.1)
    assert np.isclose(o.loc[("TPOT mean", "all", fidelity.SIZED), "median_abs_error_frac"], 0.6)
    assert o.loc[("TPOT mean", "all", fidelity.STATED), "verdict"] == "within target"
    assert o.loc[("TPOT mean", "all", "all"), "cases"] == len(stated) // 2 + len(sized) // 2
