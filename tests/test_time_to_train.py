"""A training run's wall clock (training/time_to_train.py): compute, evaluation, checkpoint pauses and the work and
restarts lost to interrupts; Daly's interval is the best one; goodput falls as a run spreads over more chips."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, cli
from perfmodel.catalog.calibration import calibration_for
from perfmodel.training import time_to_train as tt

H100 = catalog.load_system("dgx-h100")
S = 1e12  # checkpoint bytes: a 70B model's weights, master weights and Adam states


def _run(cal, chips=512, interval=None, tokens=1e12, step=10.0, eval_iter=3.0):
    tokens_per_s = 5e5 * np.asarray(chips, dtype=float) / 512  # weak scaling: the same rate per chip
    return tt.run_time(H100, cal, tokens, tokens_per_s, step, eval_iter, chips, S, interval)


def test_the_parts_add_up_and_interrupts_follow_the_wall_clock():
    cal = calibration_for(H100)
    r = _run(cal)
    parts = r["compute_s"] + r["eval_s"] + r["checkpoint_pause_s"] + r["lost_and_restart_s"]
    assert parts == pytest.approx(r["wall_s"], rel=1e-12)
    assert r["goodput_frac"] == pytest.approx(r["compute_s"] / r["wall_s"])
    assert r["interrupts"] == pytest.approx(r["wall_s"] / r["job_mtti_s"])
    assert r["job_mtti_s"] == pytest.approx(cal["chip_mean_time_to_interrupt"] / 512)
    # evaluation: n_ev forward-only iterations every I_ev steps
    share = cal["eval_iterations"] * 3.0 / (cal["eval_interval_steps"] * 10.0)
    assert r["eval_s"] / r["compute_s"] == pytest.approx(share)


def test_without_interrupts_only_the_checkpoint_pauses_remain():
    cal = calibration_for(H100).with_overrides({"chip_mean_time_to_interrupt": "1e11 s", "eval_iterations": 0})
    r = _run(cal, interval=3600.0)
    assert r["eval_s"] == 0
    # rare interrupts: each costs the restart and, on average, half an interval of work (first order in 1/M)
    per = r["resume_s"] + (3600.0 + r["checkpoint_pause_each_s"]) / 2
    assert r["lost_and_restart_s"] == pytest.approx(r["wall_s"] * per / r["job_mtti_s"], rel=1e-3)
    # synchronous save: the whole state through min(nodes x node rate, file system rate) per checkpoint
    rate = min(64 * cal["checkpoint_write_bandwidth_per_node"], cal["checkpoint_storage_bandwidth"])
    assert r["checkpoint_pause_each_s"] == pytest.approx(S / rate)
    assert r["checkpoint_pause_s"] / r["compute_s"] == pytest.approx(S / rate / 3600.0, rel=1e-6)


def test_dalys_interval_beats_checkpointing_more_or_less_often():
    cal = calibration_for(H100)
    best = _run(cal, chips=4096)
    tau = float(best["checkpoint_interval_s"])
    for k in (0.5, 0.8, 1.25, 2.0):
        assert _run(cal, chips=4096, interval=k * tau)["wall_s"] > best["wall_s"]


def test_goodput_falls_as_the_run_spreads_over_more_chips():
    cal = calibration_for(H100)
    chips = np.array([64, 512, 4096, 32768], dtype=float)
    r = _run(cal, chips=chips)  # one vectorised call over the chip counts
    good = r["goodput_frac"]
    assert np.all(np.diff(good) < 0) and good[0] > 0.95 and 0 < good[-1] < good[0]
    assert np.all(np.diff(r["checkpoint_interval_s"]) < 0)  # more interrupts: checkpoint more often


def test_asynchronous_save_pauses_for_the_host_copy_only():
    sync = calibration_for(H100)
    asy = sync.with_overrides({"checkpoint_async": 1})
    a, s = _run(asy), _run(sync)
    assert a["checkpoint_pause_each_s"] == pytest.approx(S / 512 / H100.node.host_link_bytes_per_s)
    assert a["checkpoint_pause_each_s"] < s["checkpoint_pause_each_s"] and a["wall_s"] < s["wall_s"]
    # the background write must finish before the next checkpoint
    assert a["checkpoint_interval_s"] >= S / min(64 * sync["checkpoint_write_bandwidth_per_node"],
                                                 sync["checkpoint_storage_bandwidth"])
    trn = catalog.load_system("trn2.48xlarge")  # no host link in its spec: refused, not guessed
    with pytest.raises(ValueError, match="host_link_bandwidth.*checkpoint_async"):
        tt.run_time(trn, calibration_for(trn).with_overrides({"checkpoint_async": 1}), 1e12, 1e5, 10.0, 3.0, 64,
                    S)


def test_the_formulas_are_shown_as_latex():
    df = tt.formula_table()
    assert set(df["quantity"]) == set(tt.FORMULAS) and df["latex"].str.contains(r"\\tau").any()


ARGS = ["train", "--hardware", "dgx-h100", "--nodes", "8", "--workload", "llama-3-8b", "--seq", "8192",
        "--global-batch", "128", "--micro-batch", "1", "--tp", "2", "--zero", "1"]


def test_the_cli_shows_the_run_and_refuses_a_run_view_without_tokens(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "140")
    assert cli.main([*ARGS, "--tokens", "1e12", "--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out)).iloc[0]
    assert row["run_wall_s"] > row["run_compute_s"] == pytest.approx(1e12 / row["tokens_per_s"])
    assert cli.main([*ARGS, "--tokens", "1e12", "--show", "run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"goodput {100 * row['run_goodput_frac']:.1f}%" in out and "work lost to interrupts" in out
    assert cli.main([*ARGS, "--tokens", "1e12", "--checkpoint-every", "2 h", "--format", "csv"]) == 0
    assert pd.read_csv(io.StringIO(capsys.readouterr().out))["run_checkpoint_interval_s"].iloc[0] == 7200
    assert cli.main([*ARGS, "--show", "run"]) != 0
    err = capsys.readouterr().err
    assert "need --tokens" in err and "Traceback" not in err


def test_weak_scaling_gives_the_run_at_every_node_count_in_one_call():
    from perfmodel import training
    from perfmodel.catalog import workload_files
    from perfmodel.core.dtypes import DType
    from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario

    sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=4096, parallel=Parallelism(tp=8, microbatches=8, zero=1),
                  recompute=Recompute.SELECTIVE, precision=Precision.uniform(DType.BF16),
                  optimizer=Optimizer.ADAM_MIXED)
    arch = workload_files.load_workload("llama-3-8b")
    df = training.scaling(H100, arch, sc, [16, 256, 4096], tokens=1e12)
    assert np.all(df["days"] > df["compute_days"])
    assert df["compute_days"].to_numpy() == pytest.approx(1e12 / df["tokens_per_s"].to_numpy() / 86400)
    assert np.all(np.diff(df["goodput_frac"]) < 0)  # more chips, more interrupts
    assert "days" not in training.scaling(H100, arch, sc, [16]).columns  # no tokens: the step alone
