"""Terminal charts (plotext) for the frontier and the roofline: `--plot` draws them above the table as plain text
(no colour codes) within the terminal's width, naming each series and both axes."""

from __future__ import annotations

import pytest

from perfmodel import cli


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("argv, names", [
    (["pareto", "--hardware", "trn2-ultraserver", "trn3-ultraserver", "--workload", "llama-3-8b", "--no-progress",
      "--plot"], ["trn2-ultraserver", "trn3-ultraserver", "tokens per s per user", "per MW"]),
    (["roofline", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--batch", "8", "--dtype", "fp8",
      "--plot"], ["roof fp8", "roof bf16", "memory-bound", "Arithmetic intensity (FLOP/byte)", "(TFLOP/s)"]),
])
def test_plot_fits_the_terminal_and_names_what_it_draws(argv, names, columns, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    chart = out.split("┏")[0]  # the chart comes before the first table
    assert "\x1b" not in out and "┤" in chart and "└" in chart
    assert max(len(line) for line in out.splitlines()) <= columns
    for name in names:
        assert name in chart, name
