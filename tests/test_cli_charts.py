"""Charts from the commands that compare systems or sizes: `--chart FILE.svg|png|html` writes the command's chart,
and a table written to `--out FILE.html` is a page (the table in people's units and the chart inline as SVG), never
terminal text in an .html file."""

from __future__ import annotations

import pytest

from perfmodel import cli

COMMANDS = {
    "pareto": ["pareto", "--hardware", "trn2-ultraserver", "trn3-ultraserver", "--workload", "llama-3-8b",
               "--no-progress"],
    "serve": ["serve", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b", "--tp", "2", "--concurrency",
              "1", "8", "32"],
    "collective": ["collective", "--hardware", "trn2-ultraserver", "--op", "all-reduce", "--chips", "16,64",
                   "--size-range", "1KiB:1GiB"],
    "plan": ["plan", "--rps", "10", "--workload", "llama-3-8b", "--systems", "trn2-ultraserver", "p5.48xlarge",
             "--no-progress"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_chart_and_an_html_page(name, tmp_path, capsys):
    svg, page = tmp_path / f"{name}.svg", tmp_path / f"{name}.html"
    assert cli.main([*COMMANDS[name], "--chart", str(svg), "--out", str(page)]) == 0
    capsys.readouterr()
    drawn = svg.read_text()
    assert drawn.startswith("<svg") and drawn.count("<path") > 3  # lines or bars, not an empty frame
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<table" in html and "<svg" in html and "┃" not in html
    assert "<script" not in html  # opens offline


def test_a_chart_file_of_another_kind_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:  # argparse: the usage, then one line naming the option and the value
        cli.main([*COMMANDS["pareto"], "--chart", str(tmp_path / "c.txt")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "argument --chart" in err and "a chart is written as .svg, .png or .html" in err


def test_an_existing_chart_file_is_refused_before_any_work(tmp_path, capsys):
    """As --out: refused while the command line is parsed (argparse's exit), not after the sweep."""
    chart = tmp_path / "c.svg"
    chart.write_text("<svg/>")
    with pytest.raises(SystemExit) as stop:
        cli.main([*COMMANDS["pareto"], "--chart", str(chart)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"--chart {chart} exists; pass --force to replace it")


@pytest.mark.parametrize("args, tables", [
    (["roofline", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b"], 3),
    (["memory", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b"], 2),
])
def test_commands_of_several_tables_write_a_page_too(args, tables, tmp_path, capsys):
    """roofline and memory print several tables: to --out FILE.html they are one page, each under its heading
    (they wrote the terminal's box text into the .html before)."""
    page = tmp_path / "p.html"
    assert cli.main([*args, "--out", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text()
    assert html.startswith("<!doctype html>") and html.count("<table") == tables == html.count("<h2>")
    assert "┃" not in html and "<script" not in html
