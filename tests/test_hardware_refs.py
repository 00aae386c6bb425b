"""A system brought in as a file anywhere (`--hardware ./my-system.toml`), its chip a catalogue key or a chip file
beside it, validated by the catalogue's loaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel import catalog, cli
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core.scenario import Phase, Scenario
from perfmodel.model.evaluate import evaluate

SPECS = catalog.catalog_root() / "hardware_specs"
LLAMA = workload_files.load_workload("llama-3.1-8b")
DECODE = Scenario(Phase.DECODE, batch=8, context=2048)


def _system(tmp_path: Path, name: str, chip: str = "h100-sxm") -> Path:
    text = (SPECS / "dgx-h100.toml").read_text().replace('name = "dgx-h100"', f'name = "{name}"', 1)
    dest = tmp_path / f"{name}.toml"
    dest.write_text(text.replace('chip = "h100-sxm"', f'chip = "{chip}"', 1))
    return dest


def _chip(tmp_path: Path, name: str, hbm: str) -> Path:
    text = (SPECS / "chips" / "h100-sxm.toml").read_text().replace('name = "h100-sxm"', f'name = "{name}"', 1)
    dest = tmp_path / f"{name}.toml"
    dest.write_text(text.replace('value = "3.35 TB/s"', f'value = "{hbm}"', 1))
    return dest


def test_a_system_file_anywhere_is_the_catalogues_system(tmp_path):
    mine = catalog.load_system(str(_system(tmp_path, "my-box")))
    ref = catalog.load_system("dgx-h100")
    assert mine.name == "my-box" and mine.chip == ref.chip and mine.node.chips == ref.node.chips
    assert evaluate(mine, LLAMA, DECODE)["step_time_s"] == pytest.approx(evaluate(ref, LLAMA, DECODE)["step_time_s"])


def test_a_chip_file_beside_it_changes_what_it_should(tmp_path):
    _chip(tmp_path, "my-gpu", "6.7 TB/s")
    mine = catalog.load_system(str(_system(tmp_path, "my-box", chip="my-gpu.toml")))
    ref = catalog.load_system("dgx-h100")
    assert mine.chip.hbm_bandwidth_bytes_per_s == pytest.approx(2 * ref.chip.hbm_bandwidth_bytes_per_s)
    assert calibration_for(mine)["hbm_efficiency"] == calibration_for(ref)["hbm_efficiency"]  # family values
    # batch-8 decode reads the weights once a step: twice the bandwidth, nearly half the time
    t_mine, t_ref = (evaluate(s, LLAMA, DECODE)["step_time_s"] for s in (mine, ref))
    assert 0.45 < t_mine / t_ref < 0.6


def test_the_cli_takes_a_hardware_path(tmp_path, capsys):
    path = _system(tmp_path, "my-box")
    assert cli.main(["roofline", "--hardware", str(path), "--workload", "llama-3.1-8b", "--format", "csv"]) == 0
    assert "my-box" in capsys.readouterr().out


@pytest.mark.parametrize("edit, words", [
    (None, "no such system file"),
    (('name = "my-box"', 'name = "other"'), "must equal the file name 'my-box'"),
    (('chip = "h100-sxm"', 'chip = "absent.toml"'), "absent.toml: no such chip file"),
    (('value = "8"', 'value = "eight"'), "node.chips"),
])
def test_a_bad_file_is_one_line_naming_file_and_field(tmp_path, edit, words):
    path = _system(tmp_path, "my-box")
    if edit is None:
        path.unlink()
    else:
        path.write_text(path.read_text().replace(*edit, 1))
    with pytest.raises(CatalogError) as e:
        catalog.load_system(str(path))
    assert words in str(e.value) and "\n" not in str(e.value)
