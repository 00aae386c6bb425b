"""The caches load only this user's entries (issue 47): an entry holds code (a compiled graph's source, a
pickle), so a cache folder someone else can write is not read, said in one line, and the value is computed."""

import os

import pytest

from perfmodel.claims import result_cache
from perfmodel.core import cache_root


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache_root, "_WARNED", set())
    return tmp_path / "cache"


def test_an_entry_in_a_folder_others_can_write_is_not_read(cache, capsys):
    calls = []

    def compute():
        calls.append(1)
        return [1, 2, 3]

    assert result_cache.pickled("trust-test", compute, list) == [1, 2, 3] and len(calls) == 1
    assert result_cache.pickled("trust-test", compute, list) == [1, 2, 3] and len(calls) == 1  # read back
    folder = cache / "claims"
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)  # created for this user alone
    entry = next(folder.iterdir())
    os.chmod(folder, 0o777)  # anyone could have replaced the pickle
    assert result_cache.pickled("trust-test", compute, list) == [1, 2, 3] and len(calls) == 2  # computed again
    assert result_cache.pickled("trust-test", compute, list) == [1, 2, 3] and len(calls) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(folder) in err[0] and "writable by others" in err[0]  # said once
    os.chmod(folder, 0o700)
    os.chmod(entry, 0o666)
    assert not cache_root.trusted(entry)
    os.chmod(entry, 0o644)
    assert cache_root.trusted(entry)


def test_the_app_sends_no_usage_statistics():
    import tomllib
    from pathlib import Path

    conf = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    assert conf["browser"]["gatherUsageStats"] is False
