"""Compiled graphs on disk (model/graph/cache.py): a graph read back computes exactly what a fresh compile
does; an unreadable entry, a changed formula (fingerprint) or the cache turned off fall back to compiling."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.catalog import workload_files
from perfmodel.core.scenario import Phase, Recompute
from perfmodel.model import evaluate as ev
from perfmodel.model.graph import cache as graph_cache
from perfmodel.model.ops import GraphKey
from perfmodel.model.roofline import Overlap

ARGS = (GraphKey.of(workload_files.load_workload("llama-3-8b")), Phase.DECODE, Recompute.NONE, Overlap.PIPELINED)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    ev.compile_graph.cache_clear()
    yield tmp_path
    ev.compile_graph.cache_clear()


def _outputs(cg):
    rng = np.random.default_rng(1)
    return [np.asarray(x, dtype=float) for x in cg.fn(*[rng.uniform(1.0, 4.0, size=3) for _ in cg.symbols])]


def test_a_graph_read_back_computes_what_a_fresh_compile_does(cache):
    fresh = ev.compile_graph(*ARGS)
    assert len(list(cache.glob("graphs/*.json"))) == 1
    ev.compile_graph.cache_clear()
    again = ev.compile_graph(*ARGS)
    assert again.fn is not fresh.fn and again.symbols == fresh.symbols  # rebuilt symbols bind the same values
    for a, b in zip(_outputs(fresh), _outputs(again)):
        np.testing.assert_array_equal(a, b)


def test_unreadable_entries_a_changed_formula_or_the_cache_off_compile_again(cache, monkeypatch):
    ev.compile_graph(*ARGS)
    (entry,) = cache.glob("graphs/*.json")
    entry.write_text("{not json")
    ev.compile_graph.cache_clear()
    assert ev.compile_graph(*ARGS).symbols  # compiled again, and the entry rewritten
    assert graph_cache.load((repr(ARGS[0]), "decode", "none", "pipelined")) is not None
    monkeypatch.setattr(graph_cache, "fingerprint", lambda: "another version of the formulas")
    assert graph_cache.load((repr(ARGS[0]), "decode", "none", "pipelined")) is None
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", "off")
    assert graph_cache.directory() is None and graph_cache.load(("anything",)) is None


def test_a_graph_read_back_builds_no_sympy_graph_and_keeps_its_operators(cache, monkeypatch):
    fresh = ev.compile_graph(*ARGS)
    ev.compile_graph.cache_clear()

    def no_build(*a, **k):
        raise AssertionError("a graph read from disk was built again")

    monkeypatch.setattr(ev.gr, "build_graph", no_build)
    again = ev.compile_graph(*ARGS)
    assert again.ops == fresh.ops  # names, blocks, kinds, passes, collectives and their groups
    assert any(op.comm is not None and op.comm.group == "tp" for op in again.ops)


def test_the_fingerprint_hashes_the_graph_builders_and_the_formulas():
    """A change to any file that defines a graph's expressions misses every entry: the graph builders
    (model/graph/), the formulas (model/) and the symbols (core/) are all hashed."""
    names = {n for n, _ in graph_cache.sources()}
    assert {"model/graph/build.py", "model/graph/training.py", "model/formulas.py", "model/moe_kernels.py",
            "core/symbols.py"} <= names
