"""Computed claims on disk (claims/result_cache.py): read back as computed, recomputed when the code or the
catalogue changes, when an entry cannot be read, or with the cache off."""

from __future__ import annotations

import shutil

import pytest

from perfmodel.catalog import files
from perfmodel.claims import registry, result_cache

CALLS = []


def a_claim() -> list[registry.ClaimResult]:
    CALLS.append(1)
    return [registry.ClaimResult("X1", "a claim", "000", 2.0, 2.1, "x", 0.1, note="computed", bound="at_least")]


def _rows():
    return result_cache.rows(a_claim, lambda d: registry.ClaimResult(**d))


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    CALLS.clear()
    return tmp_path


def test_a_claim_is_computed_once_per_version_and_read_back_whole(cache):
    first = _rows()
    again = _rows()
    assert len(CALLS) == 1 and again == first and again[0].within == first[0].within
    (entry,) = (cache / "claims").glob("*.json")
    entry.write_text("{not json")
    assert _rows() == first and len(CALLS) == 2  # an unreadable entry: computed again


def test_a_changed_catalogue_file_or_the_cache_off_computes_again(cache, tmp_path_factory, monkeypatch):
    _rows()
    copy = tmp_path_factory.mktemp("catalogue")
    for d in result_cache.CATALOGUE_DIRS:
        shutil.copytree(files.catalog_root() / d, copy / d)
    monkeypatch.setenv("PERFMODEL_CATALOG", str(copy))
    _rows()
    assert len(CALLS) == 1  # the same files: the same version
    spec = next((copy / "hardware_specs").rglob("*.toml"))
    spec.write_text(spec.read_text() + "\n# edited\n")
    _rows()
    assert len(CALLS) == 2
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", "off")
    _rows(), _rows()
    assert len(CALLS) == 4


def test_a_claims_frame_is_read_back_equal(cache):
    import pandas as pd

    def frame():
        CALLS.append(1)
        return pd.DataFrame({"reading": pd.Categorical(["a", "b"]), "ratio": [1.5, float("nan")], "note": ["x", "y"]})

    first = result_cache.frame("a frame", frame)
    again = result_cache.frame("a frame", frame)
    assert len(CALLS) == 1
    pd.testing.assert_frame_equal(first, again)
    assert len(list((cache / "claims").glob("*.pkl"))) == 1


def test_the_report_reads_its_comparison_back_and_a_what_if_is_its_own_entry(cache, monkeypatch):
    from perfmodel import report
    from perfmodel.catalog import whatif as wi
    from perfmodel.report import compare

    cases, systems = report.CASES[2:3], ["trn2-ultraserver"]
    first = report.build_report(cases, systems)

    def not_again(*a, **k):
        raise AssertionError("the comparison was evaluated again")

    monkeypatch.setattr(compare, "comparison", not_again)
    again = report.build_report(cases, systems)
    assert again.comparison.results.equals(first.comparison.results)
    with pytest.raises(AssertionError, match="evaluated again"):
        report.build_report(cases, systems, wi.parse_assignments(["hbm_efficiency=0.8"]))


def test_a_cache_folder_keeps_under_its_cap_dropping_the_entries_used_longest_ago(tmp_path):
    import os

    from perfmodel.core import cache_root

    for i, age in enumerate((300, 200, 100)):
        (tmp_path / f"e{i}.json").write_bytes(b"x" * 1000)
        os.utime(tmp_path / f"e{i}.json", (1_000_000 - age, 1_000_000 - age))
    cache_root.used(tmp_path / "e0.json")  # read just now: the newest
    cache_root.prune(tmp_path, max_bytes=2000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e0.json", "e2.json"]
