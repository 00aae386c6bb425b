"""Frontier search: vectorised Pareto mask, plan grid validity, frontier flags and readings."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.core.dtypes import DType
from perfmodel.serving import search
from perfmodel.serving.steady_state import Mix


def brute_pareto(x, y):
    keep = []
    for i in range(len(x)):
        dominated = any((x[j] >= x[i] and y[j] >= y[i]) and (x[j] > x[i] or y[j] > y[i]) for j in range(len(x)))
        keep.append(not dominated)
    return np.array(keep)


@pytest.mark.parametrize("seed", range(5))
def test_pareto_mask_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 20, 300).astype(float)  # many ties
    y = rng.integers(0, 20, 300).astype(float)
    m = search.pareto_mask(x, y)
    ref = brute_pareto(x, y)
    # duplicates of a frontier point: exactly one of them is kept
    kept = {(a, b) for a, b in zip(x[m], y[m])}
    assert kept == {(a, b) for a, b in zip(x[ref], y[ref])}
    assert m.sum() == len(kept)


def test_pareto_mask_ignores_nan():
    m = search.pareto_mask([1, 2, np.nan], [5, 1, 9])
    assert list(m) == [True, True, False]


@pytest.fixture(scope="module")
def oss():
    return workload_files.load_workload("gpt-oss-120b")


def test_plan_grid_is_valid(oss):
    s = catalog.load_system("trn2-ultraserver")
    g = search.plan_grid(s, oss)
    assert len(g) > 10_000
    assert np.all(g.tp * g.da * g.pp <= s.scaleup_chips)
    assert np.all((g.tp * g.da) % g.ep == 0) and np.all(128 % g.ep == 0)
    assert np.all(g.concurrency % (g.da * g.pp) == 0)
    assert {d.value for d in g.compute} == {"bf16", "fp8"}  # Trainium2 has no MX formats
    assert {d.value for d in g.expert_weights} == {"bf16", "fp8", "mxfp4"}  # as shipped, dequantized on VectorE
    t3 = {d.value for d in search.plan_grid(catalog.load_system("trn3-ultraserver"), oss, tp=[1], da=[1],
                                            concurrency=[1]).compute}
    assert {"mxfp8", "mxfp4"} <= t3


def test_default_concurrency_grid():
    c = search.default_concurrency(64)
    assert c[0] == 1 and c[-1] == 64 and np.all(np.diff(c) > 0) and np.all(c[1:] / c[:-1] <= 2.0)
    assert len(search.default_concurrency(64, per_octave=4)) > len(c)


def test_recipes_raise_when_nothing_is_supported(oss):
    with pytest.raises(ValueError, match="supported"):
        search.recipes(catalog.load_system("trn2-ultraserver"), oss, [DType.MXFP8])


def test_frontier_sweep_flags(oss):
    s = catalog.load_system("trn3-ultraserver")
    df = search.frontier_sweep(s, oss, Mix(1024, 1024), tp=[1, 2], da=[1, 4, 16], pp=[1],
                               concurrency=[1, 8, 64, 512, 4096], dtypes=["mxfp4", "bf16"])
    assert {"on_frontier_chip", "on_frontier_mw", "on_frontier_usd", "eligible"} <= set(df.columns)
    for y, col in search.Y_COLS.items():
        f = df[df[f"on_frontier_{y}"]]
        assert len(f) >= 2 and f["eligible"].all()
        elig = df[df["eligible"]]
        for r in f.itertuples():  # nothing eligible dominates a frontier point
            better = elig[(elig[search.X] >= getattr(r, search.X)) & (elig[col] > getattr(r, col))]
            assert better.empty
    fr = search.frontier(df, "mw")
    best = search.best_at(fr, "output_tokens_per_s_per_mw", [0, 10, 50, 1e6])
    assert best[0] >= best[1] >= best[2] and np.isnan(best[3])
    ttft = search.mark_frontiers(df, max_ttft_s=0.03)
    assert not ttft.loc[ttft["ttft_s"] > 0.03, "eligible"].any()
