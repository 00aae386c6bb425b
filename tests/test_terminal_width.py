"""Every command's output fits the terminal it is printed to (issue 22): at 80 and 120 columns no line is
longer than the terminal, numbers are never split across lines, and what a table leaves out is named under it
(`--wide` shows it). Output that is not a terminal and has no COLUMNS keeps every column."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfmodel import cli
from perfmodel.core import terminal
from perfmodel.report import export

COMMANDS = {
    "specs list": ["specs", "list"],
    "specs compare": ["specs", "compare", "trn2.48xlarge", "dgx-h100"],
    "workloads list": ["workloads", "list"],
    "roofline": ["roofline", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b"],
    "memory": ["memory", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-70b", "--tp", "8"],
    "serve": ["serve", "--hardware", "dgx-h100", "--workload", "llama-3.1-70b", "--tp", "8"],
    "train": ["train", "--hardware", "dgx-h100", "--nodes", "1", "--workload", "llama-3.1-8b", "--seq", "4096",
              "--global-batch", "64", "--micro-batch", "1", "--zero", "1"],
    "collective": ["collective", "--hardware", "trn2.48xlarge", "--op", "all-reduce", "--chips", "16",
                   "--size-range", "1KiB:1GiB"],
    "knobs": ["knobs", "--hardware", "trn2.48xlarge"],
    "plan": ["plan", "--workload", "llama-3.1-70b", "--rps", "5", "--input", "1024", "--output", "256",
             "--systems", "dgx-h100", "trn2.48xlarge"],
    "pareto": ["pareto", "--hardware", "dgx-h100", "--workload", "llama-3.1-8b"],
    "validate": ["validate", "gemm", "bandwidth", "nccl", "--show", "all"],
    "sensitivity": ["sensitivity", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b", "--tp", "2",
                    "--concurrency", "8", "--top", "10", "--no-progress"],
    "compare": ["compare", "SCENARIO_A", "SCENARIO_B"],
}


@pytest.fixture
def scenarios(tmp_path) -> dict[str, str]:
    """Two scenario files for `compare` (as `roofline --save-scenario` writes them), by their placeholder."""
    from perfmodel.catalog import scenario_files as sf
    from perfmodel.catalog import whatif as wi

    opts, out = wi.ScenarioOptions(phase="decode", batch=64, context=4096, tp=4), {}
    for key, system in (("SCENARIO_A", "trn2-ultraserver"), ("SCENARIO_B", "trn3-ultraserver")):
        out[key] = str(tmp_path / f"{key}.toml")
        Path(out[key]).write_text(sf.to_toml(sf.Saved(system, system, "llama-3-8b", opts)))
    return out


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_line_fits_the_terminal(name, width, monkeypatch, capsys, scenarios):
    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main([scenarios.get(a, a) for a in COMMANDS[name]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(line) for line in lines) <= width, max(lines, key=len)
    for line in (x for x in lines if "│" in x):  # a number split in a cell would leave '1,527,' before the border
        assert not re.search(r"\d,\s*│", line), line


def test_what_a_table_leaves_out_is_named_and_wide_shows_it(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(COMMANDS["serve"]) == 0
    narrow = capsys.readouterr().out
    assert re.search(r"\d+ more columns? with --wide", narrow)
    assert "every row: " in narrow  # a value shared by every row is said once, not repeated in a column
    assert cli.main(COMMANDS["serve"] + ["--wide"]) == 0
    wide = capsys.readouterr().out
    assert max(len(line) for line in wide.splitlines()) > 80 and "more column" not in wide
    assert terminal.WIDE.get() is False  # --wide ends with its command


def test_a_pipe_without_columns_keeps_every_column(monkeypatch):
    import pandas as pd

    monkeypatch.delenv("COLUMNS", raising=False)
    df = pd.DataFrame({f"column number {i}": [1234567.0 + i] for i in range(30)})
    text = export.render_table(df)
    assert "more column" not in text and "column" in text and "1,234,596" in text
    monkeypatch.setenv("COLUMNS", "80")
    narrow = export.render_table(df)
    assert max(len(line) for line in narrow.splitlines()) <= 80 and "more columns with --wide" in narrow
