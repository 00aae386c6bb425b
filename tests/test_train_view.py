"""`perfmodel train` answers first: step time, throughput, MFU, fit and plan in words, then where the step's time
goes; the parts add up to the step (training/step.py's timeline); every field under --wide and in csv / json."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from perfmodel import cli

ARGS = ["train", "--hardware", "trn1.32xlarge", "--nodes", "16", "--workload", "gpt3-6.7b", "--seq", "2048",
        "--global-batch", "1024", "--micro-batch", "1", "--tp", "4"]


def test_the_answer_and_the_breakdown_add_up(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert cli.main([*ARGS, "--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out)).iloc[0]
    assert cli.main(ARGS) == 0
    out = capsys.readouterr().out
    assert f"{row['tokens_per_s']:,.0f} tokens/s" in out and f"MFU {100 * row['mfu_frac']:.1f}%" in out
    words = " ".join(out.split())  # the title's lines are wrapped to the terminal
    assert "tp 4 x pp 1 x dp 64" in words and "fits memory" in words
    assert "e+" not in out and len(out.splitlines()) < 25  # not 60 raw fields
    from perfmodel import catalog, training
    from perfmodel.catalog import workload_files
    from perfmodel.cli.comm import _train_scenario
    from perfmodel.report import train_view

    args = cli.build_parser().parse_args(ARGS)
    system = catalog.load_system("trn1.32xlarge")
    r = training.train(system, workload_files.load_workload("gpt3-6.7b"), _train_scenario(args, system), 16)
    parts = train_view.breakdown(r.timeline, float(r.summary["step_time_s"].iloc[0]))
    inside = parts.iloc[:list(parts["component"]).index("step")]
    assert inside["time_s"].sum() == pytest.approx(row["step_time_s"], rel=1e-9)
    assert parts["component"].iloc[-1].endswith(", not in the step)")  # the hidden data-parallel comm
    assert cli.main([*ARGS, "--wide"]) == 0
    assert "dp_comm_hidden_s" in capsys.readouterr().out  # every field of the step model


def test_sensitivity_values_are_in_peoples_units(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["sensitivity", "--hardware", "trn2.48xlarge", "--workload", "llama-3.1-8b", "--tp", "2", "--concurrency",
            "8", "--no-progress"]
    assert cli.main(argv) == 0
    table = capsys.readouterr().out
    for text in ("2.9 TB/s", "500 W", "2 us"):  # HBM bandwidth, TDP, op_overhead as people write them
        assert text in table, text
    assert cli.main([*argv, "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    row = df[df["parameter"] == "hbm_bandwidth"].iloc[0]
    assert row["value"] == pytest.approx(2.9e12) and row["unit"] == "bandwidth"  # csv keeps SI and says the unit


def test_knobs_say_why_the_tensor_rate_is_not_the_published_peak(capsys):
    assert cli.main(["knobs", "--hardware", "trn2.48xlarge", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("name")
    text = df.loc["tensor_rate", "description"]
    assert "632 TFLOP/s" in text and "published peak (MFU's denominator) is 667 TFLOP/s" in text
    assert cli.main(["knobs", "--hardware", "dgx-h100", "--format", "csv"]) == 0
    h100 = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("name")
    assert "published peak" not in h100.loc["tensor_rate", "description"]  # rate and peak are one number there
