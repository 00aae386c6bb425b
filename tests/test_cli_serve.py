"""CLI: serve, pareto, plan, sensitivity in every text format, xlsx through export.emit, clear errors."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from perfmodel import cli

SMALL = ["--hardware", "trn2.48xlarge", "--workload", "llama-3-8b", "--input", "512", "--output", "256"]


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_serve_json_has_rows_and_caveats(capsys):
    code, out, _ = run(["serve", *SMALL, "--tp", "2", "--concurrency", "1", "32", "--dtype", "fp8", "--format",
                        "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert len(doc["results"]["table"]) == 2 and doc["results"]["table"][0]["tp"] == 2
    assert doc["results"]["table"][1]["tokens_per_s_per_user"] < doc["results"]["table"][0]["tokens_per_s_per_user"]
    assert any("NOT published" in c for c in doc["meta"]["caveats"])
    assert any("PRICE" in c for c in doc["meta"]["caveats"])


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
def test_serve_text_formats(fmt, capsys):
    code, out, _ = run(["serve", *SMALL, "--concurrency", "8", "--format", fmt, "--no-progress"], capsys)
    assert code == 0 and "trn2.48xlarge" in out
    if fmt == "csv":
        assert pd.read_csv(io.StringIO(out))["concurrency"].tolist() == [8]
    if fmt in ("table", "md"):
        assert "NOT published" in out  # the power caveat travels with the table


def test_pareto_frontier_csv(capsys):
    code, out, _ = run(["pareto", *SMALL, "--tp", "1", "2", "--da", "1", "--pp", "1", "--concurrency", "1", "8", "64",
                        "--dtypes", "fp8", "--y", "chip", "--format", "csv", "--no-progress"], capsys)
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert len(df) >= 2 and df["on_frontier_chip"].all()
    assert df["tokens_per_s_per_user"].is_monotonic_increasing


def test_pareto_with_roofline_gives_both_frontiers_apart(capsys):
    args = ["pareto", "--hardware", "p5e.48xlarge", "--workload", "llama-3-8b", "--input", "512", "--output", "256",
            "--tp", "1", "2", "--da", "1", "--pp", "1", "--concurrency", "1", "8", "64", "512", "--dtypes", "fp8",
            "--y", "chip", "--format", "csv", "--no-progress"]
    code, out, _ = run([*args, "--with-roofline"], capsys)
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert set(df["frontier"]) == {"engine", "roofline"}
    eng, roof = df[df["frontier"].eq("engine")], df[df["frontier"].eq("roofline")]
    assert set(eng["engine"]) == {"vllm"} and set(roof["engine"]) == {"none"}
    assert set(roof["envelope"]) == {"extrapolated"} and "measured" in set(eng["envelope"])
    for f in (eng, roof):  # each its own Pareto frontier: interactivity up, throughput down
        assert f["tokens_per_s_per_user"].is_monotonic_increasing
        assert f["output_tokens_per_s_per_chip"].is_monotonic_decreasing
    # the engine's host time only costs: at the engine frontier's best throughput the roofline is at least as high
    assert roof["output_tokens_per_s_per_chip"].max() >= eng["output_tokens_per_s_per_chip"].max()
    code, out, _ = run(args, capsys)  # without the flag: the engine frontier alone
    assert set(pd.read_csv(io.StringIO(out))["frontier"]) == {"engine"}


def test_pareto_xlsx(tmp_path, capsys):
    path = tmp_path / "front.xlsx"
    code, out, _ = run(["pareto", *SMALL, "--tp", "1", "--da", "1", "--pp", "1", "--concurrency", "1", "16",
                        "--dtypes", "bf16", "--format", "xlsx", "--out", str(path), "--no-progress"], capsys)
    assert code == 0 and path.exists() and "meta" in pd.ExcelFile(path).sheet_names


def test_plan_serving_and_training(capsys):
    code, out, _ = run(["plan", "--systems", "p5.48xlarge", "--workload", "llama-3-8b", "--rps", "5", "--input",
                        "512:0.5,1024:0.5", "--output", "128", "--ttft", "1", "--tpot", "0.05", "--format", "json",
                        "--no-progress"], capsys)
    assert code == 0
    row = json.loads(out)["results"]["table"][0]
    assert row["feasible"] and row["time_per_output_token_s"] <= 0.05 and row["usd_per_month"] > 0
    code, out, _ = run(["plan", "--train", "--workload", "llama-3-8b", "--hardware", "trn2.48xlarge", "--tokens",
                        "1e11", "--chips", "16", "--seq", "2048", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["results"]["table"][0]["days"] > 0


def test_sensitivity_ranked(capsys):
    code, out, _ = run(["sensitivity", *SMALL, "--concurrency", "4", "--metric", "tokens_per_s_per_user", "--top", "5",
                        "--format", "json", "--no-progress"], capsys)
    assert code == 0
    rows = json.loads(out)["results"]["table"]
    assert len(rows) == 5 and [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert abs(rows[0]["elasticity"]) >= abs(rows[-1]["elasticity"])


def test_errors_are_one_line(capsys):
    code, _, err = run(["serve", *SMALL, "--dtype", "mxfp8"], capsys)
    assert code == 1 and err.startswith("perfmodel: error:") and "mxfp8" in err
    code, _, err = run(["plan", "--systems", "p5.48xlarge"], capsys)
    assert code == 1 and "--demand" in err
    code, _, err = run(["sensitivity", *SMALL, "--metric", "nonsense", "--no-progress"], capsys)
    assert code == 1 and "unknown metric" in err
