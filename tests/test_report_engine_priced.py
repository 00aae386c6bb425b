"""The report's serving cases priced as today's engine runs them (report/engine_priced.py), beside the
accelerator alone: expected values computed here from the formula's letters."""

import math

import pytest

from perfmodel.catalog import neuron_stacks, serving_engines
from perfmodel.model import evaluate
from perfmodel.report import engine_priced, frames
from perfmodel.report.compare import CASES
from perfmodel.serving import options


def _run(system, case_key):
    case = next(c for c in CASES if c.key == case_key)
    ld = frames.load(system, case.workload)
    opts, _ = frames.fit_plan(ld, case.options.replace(dtype=frames.pick_dtype(ld.system, case.dtypes)))
    return frames.run_scenario(ld, opts)


def test_a_gpu_decode_step_gains_the_engines_host_time_per_step():
    """t_e = t + tau_0 + tau_1 B / d_a; tokens/s per chip scale by t / t_e; power falls with the activity."""
    run = _run("p5.48xlarge", "llama-3-70b-decode")
    row = run.result.summary.iloc[0]
    prof = serving_engines.engine("vllm")
    tau = prof["step_cost"] + prof["step_cost_per_sequence"] * row["batch"] / max(row["da"], 1)
    got = engine_priced.engine_columns(run, None)
    assert got["engine"] == "vllm"
    assert got["engine_host_time_s"] == pytest.approx(tau, rel=1e-12)
    assert got["engine_step_time_s"] == pytest.approx(row["step_time_s"] + tau, rel=1e-12)
    assert got["engine_tokens_per_s_per_chip"] == pytest.approx(
        row["batch"] / (row["step_time_s"] + tau) / row["replica_chips"], rel=1e-9)
    econ = frames.economics(run.loaded.system, row, run.loaded.cal)
    # fewer tokens per second, but the chip idles while the host works: per MW falls by less than per chip
    per_chip_ratio = got["engine_tokens_per_s_per_chip"] / row["tokens_per_s_per_chip"]
    assert per_chip_ratio < got["engine_tokens_per_mw"] / econ["tokens_per_mw"] < 1.0
    assert got["engine_usd_per_million_tokens"] == pytest.approx(econ["usd_per_million_tokens"] / per_chip_ratio,
                                                                 rel=1e-9)


def test_a_trainium_step_is_re_priced_under_the_neuron_stacks_rules():
    run = _run("trn2-ultraserver", "llama-3-70b-decode")
    su = options.setup(run.loaded.system, options.ServingOptions(software=neuron_stacks.software("nxd-inference", run.loaded.system)), run.loaded.cal)
    stacked = evaluate.evaluate(run.loaded.system, run.loaded.arch, run.result.scenario, su.cal).summary.iloc[0]
    got = engine_priced.engine_columns(run, None)
    assert got["engine"] == "nxd-inference"
    assert got["engine_step_time_s"] == pytest.approx(stacked["step_time_s"] + got["engine_host_time_s"], rel=1e-12)
    assert got["engine_step_time_s"] > run.result.summary.iloc[0]["step_time_s"]  # per-op overhead of the stack


def test_training_and_the_roofline_carry_no_engine_figures():
    train = engine_priced.engine_columns(_run("p5.48xlarge", "gpt3-175b-train"), None)
    assert train["engine"] == "" and math.isnan(train["engine_tokens_per_s_per_chip"])
    none = engine_priced.engine_columns(_run("p5.48xlarge", "llama-3-70b-decode"), "none")
    assert none["engine"] == "none" and math.isnan(none["engine_tokens_per_mw"])


def test_the_verdict_quotes_the_engine_priced_figures_of_a_serving_case():
    from perfmodel.report.verdict import case_line

    rows = [engine_priced.with_engine(_run(s, "llama-3-70b-decode").summary(), _run(s, "llama-3-70b-decode"), None)
            for s in ("p5.48xlarge", "p6-b200.48xlarge")]
    import pandas as pd

    part = pd.concat(rows, ignore_index=True)
    line = case_line("Llama-3 70B decode (batch 64)", part)
    best = part.loc[part["engine_tokens_per_s_per_chip"].idxmax()]
    assert f"{best['engine_tokens_per_s_per_chip']:,.0f} tokens/s" in line
    from perfmodel.report.verdict import verdict_text

    assert "Serving cases as vllm serve them" in verdict_text([("Llama-3 70B decode", part)])
