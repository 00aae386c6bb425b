"""A workload brought in without editing the checkout: a workload file anywhere, a config.json, or a Hugging Face
id from the local Hugging Face cache, wherever a command takes a workload name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfmodel import catalog, cli
from perfmodel.catalog import workload_files, workload_refs
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.model.evaluate import evaluate

QWEN_JSON = Path(__file__).resolve().parents[1] / "reference" / "model_configs" / "Qwen--Qwen3-32B.json"


def _copy_as(tmp_path: Path, key: str, name: str) -> Path:
    """The catalogue's workload `key` saved outside the checkout as NAME.toml."""
    text = (catalog.catalog_root() / "workloads" / f"{key}.toml").read_text()
    dest = tmp_path / f"{name}.toml"
    dest.write_text(text.replace(f'name = "{key}"', f'name = "{name}"', 1))
    return dest


def _fake_hf_cache(root: Path, repo_id: str, config: Path) -> None:
    """The layout huggingface_hub writes: models--org--name/refs/main -> snapshots/<commit>/config.json."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    shutil.copy(config, repo / "snapshots" / commit / "config.json")


def test_a_workload_file_anywhere_runs_as_the_catalogues(tmp_path):
    path = _copy_as(tmp_path, "llama-3.1-8b", "my-llama")
    mine = workload_files.load_workload(str(path))
    assert mine.name == "my-llama"
    system = catalog.load_system("dgx-h100")
    from perfmodel.core.scenario import Phase, Scenario
    sc = Scenario(Phase.DECODE, batch=8, context=2048)
    a = evaluate(system, mine, sc)["step_time_s"]
    b = evaluate(system, workload_files.load_workload("llama-3.1-8b"), sc)["step_time_s"]
    assert a == pytest.approx(b, rel=1e-12)


def test_the_cli_takes_a_workload_path(tmp_path, capsys):
    path = _copy_as(tmp_path, "llama-3.1-8b", "my-llama")
    assert cli.main(["roofline", "--hardware", "dgx-h100", "--workload", str(path), "--format", "csv"]) == 0
    assert "my-llama" in capsys.readouterr().out


@pytest.mark.parametrize("ref, words", [
    ("missing/model.toml", "no such workload file"),
    ("missing/config.json", "no such config.json"),
    ("../workloads/llama-3-8b", "no such workload"),  # a key is never a path
])
def test_a_bad_reference_is_one_line_saying_what_is_allowed(ref, words):
    with pytest.raises(CatalogError) as e:
        workload_refs.load(ref)
    msg = str(e.value)
    assert words in msg and "\n" not in msg and "catalogue key" in msg + workload_refs.ALLOWED


def test_a_config_json_is_imported_on_the_fly_without_writing(tmp_path):
    cfg = tmp_path / "qwen3-32b" / "config.json"
    cfg.parent.mkdir()
    shutil.copy(QWEN_JSON, cfg)
    arch = workload_refs.load(str(cfg))
    raw = json.loads(QWEN_JSON.read_text())
    assert arch.name == "qwen3-32b" and arch.hidden_size == raw["hidden_size"]
    assert arch.num_hidden_layers == raw["num_hidden_layers"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.json", "qwen3-32b"]  # nothing written


def test_a_hugging_face_id_is_read_from_the_local_cache(tmp_path, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    _fake_hf_cache(tmp_path / "hub", "Qwen/Qwen3-32B", QWEN_JSON)
    arch = workload_refs.load("Qwen/Qwen3-32B")
    assert arch.name == "qwen3-32b" and arch.hidden_size == json.loads(QWEN_JSON.read_text())["hidden_size"]
    out = tmp_path / "models"
    out.mkdir()
    assert cli.main(["workloads", "import", "Qwen/Qwen3-32B", "--out", str(out)]) == 0
    written = out / "qwen3-32b.toml"
    assert workload_files.load_workload(str(written)).hidden_size == arch.hidden_size
    with pytest.raises(CatalogError, match=r"not in the local Hugging Face cache .*hub.*hf download Org/Absent"):
        workload_refs.load("Org/Absent")
    assert cli.main(["roofline", "--hardware", "dgx-h100", "--workload", "Org/Absent"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Org/Absent" in err[0]
