"""Every answer with its error bar: intervals from measured residuals by regime, calibrated model by model
(core/intervals.py), built from the development files (validation/intervals.py), shipped as data
(hardware_specs/calibration/intervals.json) and shown on serve, pareto, plan, roofline and validate."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, cli
from perfmodel.catalog import interval_files, workload_files
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core import intervals as iv
from perfmodel.serving import error_bars
from perfmodel.validation import intervals as builder


def test_the_cli_default_level_is_the_models():
    """The parser writes the default level itself (no numpy at its start-up); it must be core's."""
    from perfmodel.cli import intervals as cli_intervals
    from perfmodel.core import intervals as core_intervals

    assert cli_intervals.DEFAULT == core_intervals.DEFAULT_LEVEL


def test_the_scale_factor_is_the_weighted_conformal_quantile_by_hand():
    # two models: A with scores 1, 2 (each weighs 1/2), B with 4 (weighs 1): every model counts once
    s = iv.Scores(np.array([1.0, 2.0, 4.0]), np.array(["A", "A", "B"], dtype=object))
    # cumulative weights over sorted scores: 1 -> 0.25, 2 -> 0.5, 4 -> 1.0: the first reaching the level
    assert (s.factor(0.5), s.factor(0.6)) == (2.0, 4.0)
    assert iv.Scores(np.array([1.0, 2.0, 3.0, 4.0]), np.array(list("ABCD"), dtype=object)).factor(0.4) == 2.0
    with pytest.raises(ValueError, match="interval level 1.2"):
        s.factor(1.2)


def _table(c=0.1, h=0.2):
    regimes = {("tpot",): (0.0, 0.5, 100, 5), ("tpot", "nvidia"): (c, h, 60, 3),
               ("tpot", "nvidia", "vllm"): (c, h, 40, 3), ("throughput",): (0.0, 0.3, 100, 5),
               ("throughput", "nvidia", "vllm"): (-c, h, 40, 3), ("ttft",): (-0.2, 0.4, 100, 5),
               ("ttft", "nvidia", "vllm"): (-0.2, 0.4, 40, 3)}
    one = iv.Scores(np.array([1.0, 2.0, 3.0, 4.0]), np.array(list("ABCD"), dtype=object))  # lambda(0.4) = 2
    return iv.IntervalTable(regimes, {"tpot": one, "throughput": one, "ttft": one})


def _frame(engine="vllm", envelope="measured", concurrency=16.0):
    return pd.DataFrame({"engine": [engine], "mode": ["aggregated"], "concurrency": [concurrency],
                         "envelope": [envelope], "ttft_s": [0.2], "time_per_output_token_s": [0.02],
                         "tokens_per_s_per_user": [50.0], "e2e_latency_s": [0.2 + 99 * 0.02],
                         "output_tokens_per_s_per_chip": [1000.0], "usd_per_million_output_tokens": [2.0]})


def test_an_answer_gets_its_regimes_interval_by_hand():
    s, a = catalog.load_system("p5e.48xlarge"), workload_files.load_workload("llama-3.1-8b")
    d = error_bars.attach(_frame(), s, a, _table(), 0.4).iloc[0]
    lam, c, h = 2.0, 0.1, 0.2  # the regime ("tpot", "nvidia", "vllm"): measured = p exp(-(c +- lambda h))
    assert d["time_per_output_token_s_low"] == pytest.approx(0.02 * math.exp(-(c + lam * h)))
    assert d["time_per_output_token_s_high"] == pytest.approx(0.02 * math.exp(-(c - lam * h)))
    # tokens/s per user is 1 / TPOT: TPOT's interval turned over
    assert d["tokens_per_s_per_user_low"] == pytest.approx(1 / d["time_per_output_token_s_high"])
    # throughput from its own regime (centre -c); $ per token is 1 / throughput
    assert d["output_tokens_per_s_per_chip_high"] == pytest.approx(1000 * math.exp(-(-c - lam * h)))
    assert d["usd_per_million_output_tokens_low"] == pytest.approx(2.0 * math.exp(-c - lam * h))
    # e2e = TTFT + (O - 1) TPOT, each part at its bound
    assert d["e2e_latency_s_low"] == pytest.approx(d["ttft_s_low"] + 99 * d["time_per_output_token_s_low"])
    assert d["interval_level"] == 0.4 and "nvidia vllm (40 points, 3 models)" in d["interval_basis"]
    assert "widened" not in d["interval_basis"]


@pytest.mark.parametrize("engine, envelope, why", [("none", "extrapolated", "no engine: the roofline"),
                                                   ("vllm", "extrapolated", "outside the engine's measured envelope")])
def test_an_answer_off_measured_ground_is_widened_and_says_so(engine, envelope, why):
    s, a = catalog.load_system("p5e.48xlarge"), workload_files.load_workload("llama-3.1-8b")
    d = error_bars.attach(_frame(engine, envelope), s, a, _table(), 0.4).iloc[0]
    lo, hi = d["time_per_output_token_s_low"], d["time_per_output_token_s_high"]
    c, h = (0.1, 0.2)
    assert math.log(hi / lo) == pytest.approx(2 * 2.0 * h * iv.WIDEN)  # lambda x WIDEN x h each side
    assert f"widened x{iv.WIDEN:g}: {why}" in d["interval_basis"]


def test_a_regime_with_no_rows_on_its_hardware_pools_to_the_quantity_and_is_widened():
    trn = catalog.load_system("trn2.48xlarge")  # the hand table holds no trainium regime
    d = error_bars.attach(_frame("nxd-inference"), trn, workload_files.load_workload("llama-3.1-8b"),
                          _table(), 0.4).iloc[0]
    assert "all hardware (100 points, 5 models), widened" in d["interval_basis"]
    assert "no trainium measurements" in d["interval_basis"]
    assert math.log(d["time_per_output_token_s_high"] / d["time_per_output_token_s_low"]) == \
        pytest.approx(2 * 2.0 * 0.5 * iv.WIDEN)


def test_the_shipped_intervals_file_is_what_the_command_builds():
    shipped = json.loads(interval_files.path_of().read_text())
    rows, meta = builder.build()
    built = builder.document(rows, meta)
    for field in ("schema_version", "built_by", "min_rows", "keys", "sources", "regimes", "scores", "rows"):
        assert shipped[field] == json.loads(json.dumps(built[field])), \
            f"{field} differs: rebuild with perfmodel validate --build-intervals"


@pytest.fixture(scope="module")
def lomo() -> pd.DataFrame:
    return builder.coverage(pd.DataFrame(builder.read_rows()))


def test_leave_one_model_out_coverage_is_near_its_level_on_the_development_files(lomo):
    """Intervals built without the model they are checked on (regimes and the scale factor both): with every
    model weighing once (the model is the exchangeable unit), coverage within 5 points of the level at 80% and
    90% for every quantity: what the method calibrates. Counted by points the models with most rows weigh most and
    it strays further (training at 80%: 67%, where Qwen3-30B-A3B's four runs err unlike the many dense ones; TPOT
    at 90%: 91%): the README reports it; no bound is held on it (none follows from the method)."""
    cov = lomo
    assert set(cov["quantity"]) == {"ttft", "tpot", "throughput", "training"}
    assert ((cov["coverage"] - cov["level"]).abs() <= 0.05).all(), cov
    assert (cov["median_width_high_over_low"] > 1.0).all()


def test_a_damaged_intervals_file_is_one_line(tmp_path):
    doc = json.loads(interval_files.path_of().read_text())
    bad = dict(doc, regimes=[dict(doc["regimes"][0], half=-1.0)] + doc["regimes"][1:])
    p = tmp_path / "intervals.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(CatalogError, match=r"intervals.json: field regimes\[0\]: centre .* half -1.0"):
        interval_files.load(p)
    p.write_text(json.dumps({k: v for k, v in doc.items() if k != "scores"}))
    with pytest.raises(CatalogError, match="scores"):
        interval_files.load(p)


def test_serve_shows_each_answer_with_its_interval_and_csv_carries_the_bounds(capsys):
    base = ["serve", "--hardware", "p5e.48xlarge", "--workload", "llama-3.1-8b", "--tp", "1", "--concurrency", "16",
            "--no-progress"]
    assert cli.main(base + ["--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "INTERVALS: 80% from measured residuals" in out
    assert len(re.findall(r"\| [\d.,]+ \([\d.,]+-[\d.,]+\) ", out)) >= 5  # "17.6 (15-21.1)" cells
    assert cli.main(base + ["--format", "csv", "--interval", "0.9"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    row = df.iloc[0]
    for col in ("ttft_s", "time_per_output_token_s", "output_tokens_per_s_per_chip"):
        assert row[f"{col}_low"] < row[col] * 1.5 and row[f"{col}_high"] > row[col] * 0.67
        assert row[f"{col}_low"] < row[f"{col}_high"]
    assert row["interval_level"] == 0.9
    assert cli.main(base + ["--format", "csv", "--interval", "0"]) == 0
    assert "ttft_s_low" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:  # argparse: the usage, then one line naming the option and the value
        cli.main(base + ["--interval", "1.5"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage, then the one line that says why
    assert "argument --interval: an interval level between 0.5 and 0.98 (or 0 for none), got '1.5'" in err


def test_validate_gives_each_case_its_interval_and_the_coverage(capsys):
    assert cli.main(["validate", "--show", "cases", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    has = df["predicted_low"].notna()
    assert has.sum() >= 100 and (df.loc[has, "predicted_low"] < df.loc[has, "predicted_high"]).all()
    assert cli.main(["validate", "--show", "summary", "--format", "md"]) == 0
    assert "interval coverage" in capsys.readouterr().out


def test_readme_coverage_block_is_the_commands_output(lomo):
    """README's intervals block is `perfmodel validate --show intervals --format md`, re-run."""
    from pathlib import Path

    from perfmodel.cli.validate import TITLES
    from perfmodel.report import export

    text = export.emit(lomo, "md", TITLES["interval_coverage"]).strip()
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert readme.split("<!-- intervals:begin -->")[1].split("<!-- intervals:end -->")[0].strip() == text


def test_confidence_tightens_the_targets_and_raises_the_demand_by_the_pessimistic_end():
    from perfmodel.serving import confidence, planner

    d = planner.Demand.from_dict({"workload": "llama-3.1-8b", "requests_per_s": 10, "input_tokens": 1024,
                                  "output_tokens": 256, "ttft_s": 2.0, "tpot_s": 0.05})
    row = {"ttft_s": 0.1, "ttft_s_high": 0.3, "time_per_output_token_s": 0.02, "time_per_output_token_s_high": 0.025,
           "output_tokens_per_s_per_chip": 100.0, "output_tokens_per_s_per_chip_low": 80.0}
    t = confidence.tightened(d, row)
    assert (t.ttft_s, t.tpot_s, t.requests_per_s) == pytest.approx((2.0 / 3, 0.04, 12.5))
    # an interval whose pessimistic end lies on the estimate's better side tightens nothing
    assert confidence.factors({**row, "ttft_s_high": 0.05})["ttft"] == 1.0


def test_plan_at_confidence_buys_at_least_the_estimates_fleet_and_says_both(capsys):
    base = ["plan", "--systems", "p5e.48xlarge", "--workload", "llama-3.1-8b", "--rps", "20", "--input", "1024",
            "--output", "256", "--ttft", "2", "--tpot", "0.05", "--no-progress", "--confidence", "0.9"]
    assert cli.main(base + ["--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out)).iloc[0]
    assert bool(row["feasible"]) and row["chips"] >= row["chips_at_estimate"] > 0
    assert "pessimistic end" in row["sized_for"]
    assert cli.main(base + ["--format", "md"]) == 0
    out = capsys.readouterr().out
    assert f"For the SLA to hold at the pessimistic end of the 90% interval: p5e.48xlarge {int(row['chips']):,} " \
           f"chips ({int(row['chips_at_estimate']):,} at the estimate)" in out


def test_a_training_step_carries_its_interval_and_trainium_says_it_is_widened(capsys):
    base = ["train", "--nodes", "4", "--workload", "llama-3.1-8b", "--seq", "4096", "--global-batch", "256",
            "--micro-batch", "1"]
    assert cli.main(base + ["--hardware", "p5.48xlarge", "--tp", "4", "--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out)).iloc[0]
    assert row["step_time_s_low"] < row["step_time_s_high"] and row["tokens_per_s_low"] < row["tokens_per_s_high"]
    assert row["step_time_s_low"] * row["tokens_per_s_high"] == pytest.approx(row["step_time_s"] * row["tokens_per_s"])
    assert cli.main(base + ["--hardware", "trn2.48xlarge", "--tp", "8"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "at 80%: training all hardware" in out and "widened x2: no trainium measurements" in out


def test_a_roofline_step_carries_its_phases_interval_widened_as_the_accelerators_bound(capsys):
    """Decode from TPOT's regime (its time and rates turned over), prefill from TTFT's, no engine: widened x2; the
    interval's ends multiply to the same product for a time and the rate it implies; --interval 0 gives none."""
    base = ["roofline", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--tp", "1", "--batch", "16",
            "--format", "json"]
    assert cli.main(base + ["--phase", "decode", "--context", "2048"]) == 0
    row = json.loads(capsys.readouterr().out)["results"]["results"][0]
    t, r = "time_per_output_token_s", "tokens_per_s_per_chip"
    assert row[f"{t}_low"] < row[t] < row[f"{t}_high"] and row[f"{r}_low"] < row[r] < row[f"{r}_high"]
    assert row[f"{t}_low"] * row[f"{r}_high"] == pytest.approx(row[t] * row[r])
    assert row["interval_basis"].startswith("80% from measured residuals: TPOT") and "the roofline" in row[
        "interval_basis"] and "widened x2" in row["interval_basis"]
    assert cli.main(base + ["--phase", "prefill", "--seq", "2048"]) == 0
    row = json.loads(capsys.readouterr().out)["results"]["results"][0]
    assert row["ttft_s_low"] < row["ttft_s"] < row["ttft_s_high"] and "TTFT" in row["interval_basis"]
    assert cli.main(base + ["--phase", "decode", "--context", "2048", "--interval", "0"]) == 0
    assert "interval_basis" not in json.loads(capsys.readouterr().out)["results"]["results"][0]


def test_the_reports_engine_figures_carry_their_intervals_and_the_verdict_quotes_the_leaders():
    from perfmodel.report import compare, verdict

    cases = [c for c in compare.CASES if c.key.startswith("gpt-oss") or "decode" in c.key][:1]
    comp = compare.comparison(cases, ["p5e.48xlarge", "trn2-ultraserver"])
    s = comp.results
    assert (s["engine_tokens_per_s_per_chip_low"] < s["engine_tokens_per_s_per_chip"]).all()
    assert (s["engine_tokens_per_s_per_chip"] < s["engine_tokens_per_s_per_chip_high"]).all()
    # $ per token goes with the step's time: its interval is the tokens/s one turned over
    priced = s["engine_usd_per_million_tokens"].notna()
    assert priced.any()
    assert (s["engine_usd_per_million_tokens_low"] * s["engine_tokens_per_s_per_chip_high"])[priced].tolist() == \
        pytest.approx((s["engine_usd_per_million_tokens"] * s["engine_tokens_per_s_per_chip"])[priced].tolist())
    assert s["interval_basis"].str.contains("TPOT").all()
    line = verdict.case_line(cases[0].title, s)
    assert re.search(r"tokens/s \([\d,]+-[\d,]+ at 80%\)", line), line


def test_a_simulation_carries_the_step_models_error_bars_on_its_percentiles(capsys):
    base = ["simulate", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--tp", "1", "--replicas", "2",
            "--rate", "5", "--input", "1024", "--output", "128", "--requests", "300", "--no-progress"]
    assert cli.main(base + ["--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out)).iloc[0]
    for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p99_s", "output_tokens_per_s"):
        assert row[f"{k}_low"] < row[f"{k}_high"]
    # every percentile of one quantity moves by the same factors (the step model's error, from its regime)
    assert row["ttft_p99_s_low"] / row["ttft_p99_s"] == pytest.approx(row["ttft_p50_s_low"] / row["ttft_p50_s"])
    assert "TTFT nvidia vllm" in row["interval_basis"]
    assert cli.main(base) == 0
    assert re.search(r"ttft p99 +│ [\d.,]+ ms \([\d.,]+-[\d.,]+\)", capsys.readouterr().out)
