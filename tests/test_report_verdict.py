"""The report opens with who wins each case, in words (issue 22): its first screen at 80 columns names each case,
its leader per chip with the margin, per MW and per dollar, and marks figures that rest on unpublished inputs."""

from __future__ import annotations

import pandas as pd

from perfmodel import cli
from perfmodel.report import verdict


def _part(**cols) -> pd.DataFrame:
    base = {"system": ["a", "b", "c"], "tokens_per_s_per_chip": [100.0, 300.0, 200.0],
            "tokens_per_mw": [5.0, 4.0, 6.0], "usd_per_million_tokens": [1.0, float("nan"), 0.5],
            "basis_performance": ["published", "projected", "estimated"],
            "basis_tokens_per_mw": ["estimated", "projected", "estimated"],
            "basis_usd_per_mtok": ["published", "assumed", "assumed"]}
    return pd.DataFrame({**base, **cols})


def test_a_case_line_names_each_leader_its_margin_and_its_basis():
    line = verdict.case_line("Case X (batch 8)", _part())
    assert line.startswith("- Case X: b† leads per chip (300 tokens/s, 1.50x c)")
    assert "per MW c*" in line and "per dollar c ($0.50/M tokens§)" in line  # no price for b: not cheapest
    assert "of systems that exist, c* (200 tokens/s)" in line  # the leader is projected
    one = verdict.case_line("Y", _part(tokens_per_mw=[1.0, 9.0, 1.0], usd_per_million_tokens=[2.0, 0.1, 1.0]))
    assert "b† leads per chip (300 tokens/s, 1.50x c), per MW† and per dollar ($0.10/M tokens§)" in one
    assert verdict.case_line("Z", _part().iloc[:0]) == "- Z: no system ran it."


def test_the_reports_first_screen_says_who_wins(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["report", "--cases", "llama-3-70b-decode", "gpt-oss-120b-decode", "--systems",
                     "trn2-ultraserver", "p5.48xlarge", "--no-progress"]) == 0
    screen = capsys.readouterr().out.splitlines()[:24]
    text = " ".join(screen)
    assert "## Verdict" in text and text.count("leads per chip") == 2
    assert "Llama-3 70B decode:" in text and "GPT-OSS 120B decode:" in text
    assert max(len(line) for line in screen) <= 80
