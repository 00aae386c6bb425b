"""CLI: simulate (summary, load sweep with its chart, per-request CSV), plan from a trace at p99, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfmodel import cli
from perfmodel.catalog import trace_files
from perfmodel.simulation import traffic

BASE = ["simulate", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--input", "512", "--output", "128",
        "--no-progress"]


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_simulate_summary_and_requests(tmp_path, capsys):
    out_csv = tmp_path / "requests.csv"
    code, out, _ = run([*BASE, "--rate", "5", "--requests", "300", "--requests-out", str(out_csv)], capsys)
    assert code == 0 and "ttft p99" in out and " ms" in out
    frame = pd.read_csv(out_csv)
    assert len(frame) == 300 and (frame["ttft_s"] > 0).all()
    chart, timeline = tmp_path / "queue.html", tmp_path / "queue.csv"
    code, _, _ = run([*BASE, "--rate", "5", "--requests", "300", "--chart", str(chart), "--timeline-out",
                      str(timeline)], capsys)
    queue = pd.read_csv(timeline)
    assert code == 0 and "vega" in chart.read_text() and len(queue) > 10 and queue["running"].max() > 0
    code, out, _ = run([*BASE, "--traffic", "closed", "--clients", "8", "--requests", "200", "--format", "json"],
                       capsys)
    row = json.loads(out)["results"]["table"][0]
    assert code == 0 and row["traffic"] == "closed" and row["ttft_p50_s"] > 0


def test_load_sweep_writes_its_chart(tmp_path, capsys):
    chart = tmp_path / "ttft.svg"
    code, out, _ = run([*BASE, "--load-sweep", "--requests", "250", "--chart", str(chart), "--format", "csv"], capsys)
    assert code == 0 and chart.read_text().startswith("<svg")
    df = pd.read_csv(__import__("io").StringIO(out))
    assert len(df) == 7 and (df["sim_ttft_p99_s"] >= df["sim_ttft_p50_s"]).all()


def test_simulate_errors_are_one_line(tmp_path, capsys):
    code, _, err = run([*BASE, "--traffic", "trace", "--trace", str(tmp_path / "missing.csv")], capsys)
    assert code == 1 and "missing.csv" in err and "\n" not in err.strip()
    with pytest.raises(SystemExit) as stop:  # refused while the options are read, before any simulation
        run([*BASE, "--chart", "x.pdf"], capsys)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "argument --chart: 'x.pdf'" in err and ".svg, .png or .html" in err
    code, _, err = run([*BASE, "--tp", "3"], capsys)  # 32 heads do not split over 3
    assert code == 1 and "cannot run" in err


def test_plan_from_a_trace_at_p99(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "trace.csv"
    pd.DataFrame({"arrival_s": np.cumsum(rng.exponential(0.1, 1000)), "input_tokens": rng.integers(200, 2000, 1000),
                  "output_tokens": rng.integers(50, 400, 1000)}).to_csv(path, index=False)
    d = traffic.demand_from_trace(traffic.requests_of(trace_files.read(path)), path.stem, "llama-3.1-8b", 1.0, 0.03)
    assert abs(d.requests_per_s - 10) < 1.0 and d.percentile == 99
    assert abs(d.input_tokens.mean - 1100) < 60 and abs(d.output_tokens.mean - 225) < 15
    code, out, _ = run(["plan", "--trace", str(path), "--workload", "llama-3.1-8b", "--ttft", "1", "--tpot", "0.03",
                        "--systems", "p5.48xlarge", "--max-replica-chips", "2", "--no-progress", "--format", "json"],
                       capsys)
    row = json.loads(out)["results"]["table"][0]
    assert code == 0 and row["verified"] and row["sim_ttft_p99_s"] <= 1.0 and row["sim_tpot_p99_s"] <= 0.03
