"""CLI: `collective`, `train` and `validate` output columns in json / csv."""

from __future__ import annotations

import io
import json

import pandas as pd

from perfmodel import validation
from perfmodel.cli.parser import main


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_collective_json(capsys):
    out = json.loads(run(capsys, "collective", "--hardware", "trn1.32xlarge", "--op", "all-reduce", "--chips", "16,64",
                         "--size-range", "1KiB:1GiB", "-f", "json"))
    rows = pd.DataFrame(out["results"]["table"])
    for col in ("group", "size_bytes", "algorithm", "time_s", "latency_s", "bandwidth_s", "busbw_bytes_per_s",
                "regime", "crosses", "time_ring_s", "time_2d_ring_s", "time_tree_s", "time_direct_s",
                "time_hierarchical_s"):
        assert col in rows.columns
    assert len(rows) == 2 * 21 and set(rows["group"]) == {16, 64}
    assert out["meta"]["collective"] == "all-reduce"


def test_collective_csv_one_size_forced_algorithm(capsys):
    df = pd.read_csv(io.StringIO(run(capsys, "collective", "--hardware", "p5.48xlarge", "--op", "all-gather",
                                     "--chips", "16", "--size", "1MiB", "--algorithm", "ring", "-f", "csv")))
    assert len(df) == 1 and df["algorithm"].iloc[0] == "ring" and df["size_bytes"].iloc[0] == 2 ** 20


def test_train_json_and_csv(capsys):
    args = ["train", "--hardware", "trn1.32xlarge", "--nodes", "2", "--workload", "gpt3-6.7b", "--seq", "2048",
            "--global-batch", "128", "--micro-batch", "1", "--tp", "4", "--pp", "1", "--zero", "1"]
    out = json.loads(run(capsys, *args, "-f", "json"))
    row = out["results"]["table"][0]
    for col in ("step_time_s", "tokens_per_s", "mfu_frac", "dp_comm_exposed_s", "dp_comm_hidden_s", "bubble_s",
                "comm_exposed_s", "overlapped_bound_s", "serial_bound_s", "chips", "fits"):
        assert col in row
    assert row["dp"] == 8 and row["microbatches"] == 16 and row["zero"] == 1
    comm = pd.read_csv(io.StringIO(run(capsys, *args, "--show", "comm", "-f", "csv")))
    assert list(comm.columns) == ["class", "total_s", "hidden_s", "exposed_s", "exposed_frac"]
    sc = pd.read_csv(io.StringIO(run(capsys, *args, "--show", "scaling", "-f", "csv")))
    assert sc["nodes"].tolist() == [1, 2] and "scaling_efficiency_frac" in sc.columns


def test_validate_registry_and_cli(capsys):
    validation.load_validation_modules()
    assert {"neuron-collectives", "nccl", "training"} <= set(validation.VALIDATIONS)
    df = validation.run_validation("nccl")
    assert list(df.columns[:len(validation.CASE_OUT)]) == list(validation.CASE_OUT)
    out = json.loads(run(capsys, "validate", "nccl", "neuron-collectives", "--show", "summary", "-f", "json"))
    fams = pd.DataFrame(out["results"]["by_family"])
    assert fams["family"].tolist() == ["nccl", "neuron-collectives"]
    assert {"median_abs_error_frac", "p90_abs_error_frac"} <= set(fams.columns)
