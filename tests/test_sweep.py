"""Sweep engine: product size and order, chunked = one-shot, sinks, errors, Dask, physics."""

import dataclasses
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, training
from perfmodel.catalog import calibration
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate
from perfmodel.sweep import SweepSpec, geometric, iter_chunks, linear, parse_values, run_sweep
from perfmodel.sweep.engine import evaluate_chunk

SYSTEM_NAME, MODEL_NAME = "trn2-ultraserver", "llama-3-8b"
SYSTEM, MODEL = catalog.load_system(SYSTEM_NAME), catalog.load_workload(MODEL_NAME)
MISTRAL = catalog.load_workload("mistral-7b")


def _float_columns(df):
    return [c for c in df.columns if df[c].dtype.kind == "f"]


def test_value_syntax():
    assert parse_values("1,2,4,8") == [1, 2, 4, 8]
    assert parse_values("1024:8192:x2") == [1024, 2048, 4096, 8192]
    assert parse_values("1:4") == [1, 2, 3, 4] and parse_values("0:10:5") == [0, 5, 10]
    assert parse_values("bf16, fp8") == ["bf16", "fp8"]
    assert list(linear(2, 7, 2)) == [2, 4, 6] and list(geometric(1, 100, 10)) == [1, 10, 100]
    with pytest.raises(ValueError, match="range"):
        parse_values("1:2:3:4")


def test_product_size_and_order():
    spec = SweepSpec(SYSTEM, (MODEL, MISTRAL), "decode",
                     grid={"batch": [1, 2, 3], "context": [100, 200], "compute": ["bf16", "fp8"]})
    plan = spec.plan()
    assert spec.size == 2 * 3 * 2 * 2 and plan.group_size == 12
    df = run_sweep(spec, chunk_size=5, progress=False)
    want = list(itertools.product([MODEL_NAME, "mistral-7b"], [1, 2, 3], [100, 200], ["bf16", "fp8"]))
    got = list(zip(df["workload"].astype(str), df["batch"], df["context"], df["compute_dtype"].astype(str)))
    assert got == want  # group fields slowest, then the grid in order, the last fastest
    assert [len(c) for c in iter_chunks(spec, 5)] == [5, 5, 2] * 2  # a chunk never spans two groups


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_chunks_equal_one_shot_evaluate_sweep(phase):
    batch, lengths, tp = [1, 3, 8, 32], [512, 2048, 8192], [1, 2, 8]
    length = "context" if phase == "decode" else "seq_len"
    spec = SweepSpec(SYSTEM, MODEL, phase, grid={"batch": batch, length: lengths, "tp": tp,
                                                  "weights": ["bf16", "fp8"]}, fixed={"compute": "bf16"})
    df = run_sweep(spec, chunk_size=7, progress=False)  # 72 rows: chunks of 7 and a last of 2
    b, n, t, w = (np.asarray(x) for x in zip(*itertools.product(batch, lengths, tp, ["bf16", "fp8"])))
    kn = bd.Knobs(phase=Phase(phase), batch=b.astype(float), tp=t.astype(float),
                  weights=np.asarray(w, dtype=object), **{length: n.astype(float)})
    ref = evaluate.evaluate_sweep(SYSTEM, MODEL, kn)
    assert len(df) == len(ref) == 72
    for c in _float_columns(ref):  # the same numbers, bit for bit
        assert np.array_equal(df[c].to_numpy(), ref[c].to_numpy()), c
    assert (df["weights_dtype"].astype(str).to_numpy() == ref["weights_dtype"].to_numpy()).all()


def test_training_chunks_equal_step_arrays_with_communication():
    grid = {"tp": [1, 2, 8], "pp": [1, 4], "dp": [1, 8, 64], "zero": [0, 1, 3]}
    spec = SweepSpec(SYSTEM, MODEL, "train", grid=grid, fixed={"microbatches": 8, "seq_len": 4096})
    df = run_sweep(spec, chunk_size=13, progress=False)
    t, p, d, z = (np.asarray(x, dtype=float) for x in zip(*itertools.product(*grid.values())))
    kn = bd.Knobs(phase=Phase.TRAIN, seq_len=4096, microbatches=8, tp=t, pp=p, dp=d, zero=z)
    ref = training.step_arrays(SYSTEM, MODEL, kn)
    assert len(df) == 54 and (df["comm_total_s"] > 0).any()
    for k, v in ref.items():
        if not k.startswith("_") and np.asarray(v).dtype.kind == "f":
            assert np.array_equal(df[k].to_numpy(), np.broadcast_to(v, (54,))), k
    assert list(df["dp_algorithm"].astype(str)) == list(np.broadcast_to(ref["dp_algorithm"], (54,)))


def test_parquet_and_csv_sinks_round_trip(tmp_path):
    spec = SweepSpec(SYSTEM, MODEL, "decode", grid={"batch": [1, 2, 4], "context": "1024:8192:x2",
                                                     "kv_cache": ["bf16", "fp8"]})
    df = run_sweep(spec, chunk_size=10, progress=False)
    run = run_sweep(spec, tmp_path / "s.parquet", chunk_size=10, progress=False)
    assert (run.rows, run.chunks) == (24, 3)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "s.parquet"), df)
    run_sweep(spec, tmp_path / "s.csv", chunk_size=10, progress=False)
    back = pd.read_csv(tmp_path / "s.csv")
    assert list(back.columns) == list(df.columns) and len(back) == 24
    for c in df.columns:
        if c in _float_columns(df):
            assert np.array_equal(back[c].to_numpy(), df[c].to_numpy()), c
        else:  # CSV has no empty string: a valid row's empty reason reads back as NaN
            assert list(back[c].fillna("").astype(str)) == list(df[c].astype(str)), c
    seen = []
    run_sweep(spec, seen.append, chunk_size=10, progress=False)
    pd.testing.assert_frame_equal(pd.concat(seen, ignore_index=True), df)
    with pytest.raises(ValueError, match="parquet or .csv"):
        run_sweep(spec, tmp_path / "s.txt", progress=False)


@pytest.mark.parametrize("grid, fixed, match", [
    ({"bach": [1]}, {"context": 10}, "sweep field bach: unknown field"),
    ({"batch": [0, 1]}, {"context": 10}, "sweep field batch: values must be whole numbers >= 1"),
    ({"batch": [1.5]}, {"context": 10}, "sweep field batch"),
    ({"compute": ["fp9"]}, {"context": 10}, "sweep field compute: unknown data type 'fp9'"),
    ({"zero": [4]}, {"context": 10}, "sweep field zero"),
    ({"batch": [1]}, {}, "sweep field context: decode needs a KV cache"),
    ({"batch": [1]}, {"context": [1, 2]}, "sweep field context: a fixed field takes one value"),
    ({"workload": ["llama-3-8b"]}, {"context": 10}, "sweep field workload: give ModelArch records"),
    ({"recompute": ["some"]}, {"context": 10}, "sweep field recompute: choose from"),
])
def test_bad_fields_and_values_name_the_field(grid, fixed, match):
    with pytest.raises(ValueError, match=match):
        SweepSpec(SYSTEM, MODEL, "decode", grid=grid, fixed=fixed).plan()


def test_dask_local_cluster_gives_the_same_rows(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    spec = SweepSpec(SYSTEM, (MODEL, MISTRAL), "decode",
                     grid={"batch": [1, 2, 4, 8], "context": "1024:16384:x2", "tp": [1, 2]})
    local = run_sweep(spec, chunk_size=9, progress=False)

    def best(df):
        return df.nlargest(1, "tokens_per_s_per_chip")

    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = run_sweep(spec, chunk_size=9, progress=False, client=client)
        parts = run_sweep(spec, tmp_path / "parts", chunk_size=9, progress=False, client=client)
        reduced = run_sweep(spec, chunk_size=9, progress=False, client=client, reduce=best)
        slow = calibration.CalibratedSet("neuron", {"hbm_efficiency": 0.5}, "test", "test")
        # resolved at the edge: the system carries the set to the workers
        slow_spec = dataclasses.replace(spec, system=catalog.load_system(
            SYSTEM_NAME, replaced=catalog.Replacements(calibrated=(slow,))))
        cal_remote = run_sweep(slow_spec, chunk_size=9, progress=False, client=client)
        cal_local = run_sweep(slow_spec, chunk_size=9, progress=False)
    pd.testing.assert_frame_equal(cal_remote, cal_local)
    shipped = pickle.loads(pickle.dumps(slow_spec))  # what a worker process receives: the resolved records
    assert shipped.system.calibration["hbm_efficiency"] == 0.5 and shipped == slow_spec
    assert (cal_local["step_time_s"] > local["step_time_s"]).all()
    pd.testing.assert_frame_equal(remote, local)
    assert (parts.rows, parts.chunks) == (80, 10)  # a Parquet dataset written by the workers
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "parts"), local)
    pd.testing.assert_frame_equal(reduced, run_sweep(spec, chunk_size=9, progress=False, reduce=best))
    assert len(reduced) == 10
    pd.testing.assert_frame_equal(run_sweep(spec, chunk_size=9, progress=False, workers=2), local)


def test_threads_a_sweep_takes_unasked(monkeypatch):
    """default_workers: the CPUs the process may run on, at most DEFAULT_WORKERS_MAX; run_sweep evaluates chunks on
    that many threads unasked, but keeps a reduce function on the calling thread."""
    import os
    import threading

    from perfmodel.sweep import run as sweep_run

    for cpus, want in ((1, 1), (2, 2), (16, sweep_run.DEFAULT_WORKERS_MAX)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cpus: set(range(n)), raising=False)
        assert sweep_run.default_workers() == want
    monkeypatch.setattr(sweep_run, "default_workers", lambda: 3)
    seen, columns, evaluate_chunk_ = set(), sweep_run.chunk_columns, sweep_run.evaluate_chunk
    monkeypatch.setattr(sweep_run, "chunk_columns", lambda *a: seen.add(threading.current_thread().name) or columns(*a))
    monkeypatch.setattr(sweep_run, "evaluate_chunk",
                        lambda *a: seen.add(threading.current_thread().name) or evaluate_chunk_(*a))
    spec = SweepSpec(SYSTEM, MODEL, "decode", grid={"batch": "1:64", "context": [512, 2048]})
    run_sweep(spec, chunk_size=7, progress=False)
    assert sum(name.startswith("perfmodel-sweep") for name in seen) >= 2  # the pool's threads did the work
    seen.clear()
    run_sweep(spec, chunk_size=7, progress=False, reduce=lambda df: df)
    assert seen == {threading.current_thread().name}


def test_threads_give_the_rows_of_one_thread(monkeypatch):
    """The rows in the same order as one thread's, under a calibrated set too (the threads see the caller's)."""
    from perfmodel.sweep import run as sweep_run

    monkeypatch.setattr(sweep_run, "default_workers", lambda: 3)
    spec = SweepSpec(SYSTEM, MODEL, "decode", grid={"batch": "1:64", "context": [512, 2048, 9000], "tp": [1, 3]})
    one = run_sweep(spec, chunk_size=7, progress=False, workers=1)
    pd.testing.assert_frame_equal(run_sweep(spec, chunk_size=7, progress=False), one)
    slow = calibration.CalibratedSet("neuron", {"hbm_efficiency": 0.5}, "test", "test")
    spec = dataclasses.replace(spec, system=catalog.load_system(SYSTEM_NAME,
                                                                replaced=catalog.Replacements(calibrated=(slow,))))
    pd.testing.assert_frame_equal(run_sweep(spec, chunk_size=7, progress=False),
                                  run_sweep(spec, chunk_size=7, progress=False, workers=1))


def test_decode_step_time_rises_with_context_and_prefill_with_length():
    dec = run_sweep(SweepSpec(SYSTEM, MODEL, "decode", grid={"batch": [1, 16, 256], "context": "256:131072:x2"}),
                    progress=False)
    for _, g in dec.groupby("batch"):
        assert np.all(np.diff(g["step_time_s"].to_numpy()) >= 0)
    pre = run_sweep(SweepSpec(SYSTEM, MODEL, "prefill", grid={"batch": [1, 8], "seq_len": "128:32768:x2"}),
                    progress=False)
    for _, g in pre.groupby("batch"):
        assert np.all(np.diff(g["ttft_s"].to_numpy()) > 0)


def test_a_hundred_million_configurations_are_enumerated_lazily():
    spec = SweepSpec(SYSTEM, MODEL, "decode", grid={"batch": "1:1000", "context": "1:100000"})
    plan = spec.plan()
    assert plan.size == 100_000_000
    tasks = plan.tasks(65536)
    next(tasks)
    g, start, stop = 0, 50_000_000, 50_000_004  # any chunk, without the ones before it
    df = evaluate_chunk(plan, g, start, stop)
    assert list(df["batch"]) == [501] * 4 and list(df["context"]) == [1, 2, 3, 4]


def test_cli_sweep_writes_a_file_and_errors_in_one_line(tmp_path, capsys):
    from perfmodel.cli.parser import main

    out = tmp_path / "r.csv"
    assert main(["sweep", "--hardware", SYSTEM_NAME, "--workload", MODEL_NAME, "--phase", "prefill", "--grid", "batch=1,2",
                 "--grid", "seq_len=128:1024:x2", "--out", str(out), "--no-progress"]) == 0
    assert len(pd.read_csv(out)) == 8 and "wrote 8 configurations" in capsys.readouterr().out
    assert main(["sweep", "--hardware", SYSTEM_NAME, "--workload", MODEL_NAME, "--grid", "batch=1", "--grid", "tpp=2",
                 "--fixed", "context=8", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sweep field tpp: unknown field" in err[0]


def test_progress_counts_configurations_and_reduce_keeps_what_it_returns():
    spec = SweepSpec(SYSTEM, MODEL, "prefill", grid={"batch": "1:10", "seq_len": "128:1024:x2"})
    seen = []
    df = run_sweep(spec, chunk_size=15, progress=lambda done, total: seen.append((done, total)),
                   reduce=lambda d: d[d["batch"] == 1])
    assert seen == [(15, 40), (30, 40), (40, 40)]
    assert list(df["seq_len"]) == [128, 256, 512, 1024]
