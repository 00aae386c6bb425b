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


def test_the_frontier_and_the_plan_in_words():
    import pandas as pd

    from perfmodel.report import verdict

    df = pd.DataFrame({"system": ["a", "a", "b", "b"], "tokens_per_s_per_user": [10.0, 100.0, 10.0, 50.0],
                       "output_tokens_per_s_per_mw": [3e7, 1e7, 2e7, 4e6]})
    words = verdict.frontier_verdict(df, "output_tokens_per_s_per_mw")
    # a reaches 30 million (1.5x b's 20 million); both reach 50 tokens/s per user: a has 10 million there, b 4
    assert words.startswith("a reaches the most output tokens per s per MW (30 million, 1.50x b's 20 million)")
    assert "at 50 tokens per s per user, which every system reaches, a leads with 10 million (2.50x b)" in words
    plan = pd.DataFrame({"system": ["a", "b", "c"], "feasible": [True, True, False], "chips": [8, 2, 0],
                         "usd_per_month": [2000.0, 1000.0, float("nan")], "facility_power_peak_w": [9e3, 5e3, 0.0],
                         "mode": ["aggregated"] * 3, "price_status": ["published", "assumed", ""],
                         "note": ["", "", "no plan meets TPOT <= 20 ms; the fastest is 31 ms"]})
    text = verdict.plan_recommendation(plan, 15.0)
    assert text.startswith("**b** is the cheapest way to serve 15 requests/s at the peak within the SLA: 2 chips")
    assert "$1,000 per month§" in text and "next a at $2,000 per month (2.00x)" in text
    assert "No plan of c (no plan meets TPOT <= 20 ms" in text


def test_pareto_and_plan_open_with_their_verdict(capsys, monkeypatch):
    from perfmodel import cli

    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["pareto", "--hardware", "trn2-ultraserver", "trn3-ultraserver", "--workload", "llama-3-8b",
                     "--no-progress"]) == 0
    assert "reaches the most output tokens per s per MW" in capsys.readouterr().out.splitlines()[0]
    assert cli.main(["plan", "--rps", "10", "--workload", "llama-3-8b", "--systems", "trn2-ultraserver",
                     "p5.48xlarge", "--no-progress"]) == 0
    assert "is the cheapest way to serve 15 requests/s" in capsys.readouterr().out.splitlines()[0]
