"""CLI: specs / workloads / check commands, formats and exit codes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.cli.parser import main

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_specs_list_json(capsys):
    code, out, _ = run(capsys, "specs", "list", "--format", "json")
    rows = json.loads(out)["results"]["table"]
    assert code == 0 and {"trn2-ultraserver", "gb200-nvl72"} <= {r["system"] for r in rows}


def test_specs_show_keeps_the_file_strings(capsys):
    code, out, _ = run(capsys, "specs", "show", "trn2.48xlarge", "--format", "json")
    rows = {r["field"]: r for r in json.loads(out)["results"]["table"]}
    bw = rows["chip.memory.hbm_bandwidth"]
    assert code == 0 and bw["value_as_written"] == "2.9 TB/s" and bw["si_value"] == pytest.approx(2.9e12)
    assert bw["status"] == "published" and bw["source"] == "S7" and "3 TB/s" in bw["alternatives"]


def test_specs_compare_trn2_vs_trn3_ratios(capsys):
    code, out, _ = run(capsys, "specs", "compare", "trn2-ultraserver", "trn3-ultraserver", "--format", "json")
    data = json.loads(out)
    rows = {r["metric"]: r for r in data["results"]["table"]}
    ratio = "ratio_trn3-ultraserver_vs_trn2-ultraserver"
    assert code == 0 and data["meta"]["level"] == "scaleup"
    assert rows["peak_8bit_best_flop_per_s"][ratio] == pytest.approx(4.36, rel=0.01)  # compute
    assert rows["hbm_capacity_bytes"][ratio] == pytest.approx(3.375, rel=0.001)  # capacity
    assert rows["hbm_bandwidth_bytes_per_s"][ratio] == pytest.approx(3.80, rel=0.01)  # bandwidth


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
def test_specs_compare_other_formats(capsys, fmt):
    code, out, _ = run(capsys, "specs", "compare", "trn1.32xlarge", "trn2.48xlarge", "--level", "chip", "--format", fmt)
    assert code == 0, out
    # every format carries the HBM bandwidth row (its label) with the Trn2 / Trn1 ratio (2.9 TB/s / 880.5 GB/s)
    assert "HBM bandwidth" in out and "3.29" in out and "trn1.32xlarge" in out and "trn2.48xlarge" in out, out


def test_specs_compare_xlsx(tmp_path, capsys):
    out = tmp_path / "cmp.xlsx"
    code, text, _ = run(capsys, "specs", "compare", "trn2.48xlarge", "p5.48xlarge", "--format", "xlsx", "--out", str(out))
    assert code == 0 and out.exists()
    assert "results" in pd.ExcelFile(out).sheet_names


def test_workloads_list_and_show(capsys):
    code, out, _ = run(capsys, "workloads", "list", "--format", "csv")
    assert code == 0 and "gpt-oss-120b" in out and "params" in out.splitlines()[0]
    code, out, _ = run(capsys, "workloads", "show", "deepseek-v3", "--format", "json")
    fields = {r["field"] for r in json.loads(out)["results"]["table"]}
    assert code == 0 and {"kv_lora_rank", "params.total"} <= fields


def test_workloads_import_prints_a_loadable_file(capsys, tmp_path):
    src = ROOT / "tests" / "fixtures" / "hf"
    cfg = next(src.glob("*llama*3*8b*.json"), None) or next(src.glob("*.json"))
    code, out, _ = run(capsys, "workloads", "import", str(cfg), "--name", "imported")
    assert code == 0 and "[config]" in out and 'name = "imported"' in out


def test_unknown_system_is_one_clear_line(capsys):
    code, _, err = run(capsys, "specs", "show", "trn9")
    assert code == 1 and err.startswith("perfmodel: error:") and "trn9" in err and "Traceback" not in err


def test_check_ok_and_on_a_broken_copy(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "perfmodel", "check"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and "ok" in ok.stdout
    copy = tmp_path / "cat"
    shutil.copytree(ROOT / "hardware_specs", copy / "hardware_specs")
    shutil.copytree(ROOT / "workloads", copy / "workloads")
    spec = copy / "hardware_specs" / "chips" / "trainium3.toml"
    spec.write_text(spec.read_text().replace('value = "4.9 TB/s"', 'value = "4.9 TB"', 1))
    bad = subprocess.run([sys.executable, "-m", "perfmodel", "--catalog", str(copy), "check"], capture_output=True,
                         text=True, cwd=ROOT)
    assert bad.returncode != 0
    assert "trainium3.toml" in bad.stderr and "memory.hbm_bandwidth" in bad.stderr and "dimension" in bad.stderr
