"""Feasibility and honest attribution (issue 15, deliverables 1 and 5), and the issue's cases as
regression tests: an impossible configuration is never shown as a valid answer, a result's
breakdown sums to its time, whole units are integers."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog, report
from perfmodel.catalog import whatif as wi
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.cli.parser import main
from perfmodel.core import units
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.model import attribution, feasibility
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import evaluate, evaluate_sweep
from perfmodel.report import compare
from perfmodel.serving import search
from perfmodel.serving.steady_state import Grid, Mix

ROOFLINE_70B = ["roofline", "--workload", "llama-3-70b", "--phase", "decode", "--batch", "8", "--context", "1024"]


def cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


def refusal(capsys, *argv) -> str:
    rc, out, err = cli(capsys, *argv)
    assert rc not in (0, None), out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------- the CLI refuses what cannot run


def test_roofline_refuses_a_model_that_does_not_fit_and_shows_it_only_on_request(capsys):
    argv = [*ROOFLINE_70B, "--hardware", "trn1.2xlarge", "--tp", "1"]
    line = refusal(capsys, *argv)
    assert "does not fit" in line and "GiB per chip" in line and "--allow-oversubscribed" in line
    rc, out, err = cli(capsys, *argv, "--allow-oversubscribed", "-f", "csv")
    assert rc == 0 and "NOT A VALID ANSWER" in err and len(out.splitlines()) > 10  # the rows, the banner apart
    rc, out, _ = cli(capsys, *argv, "--allow-oversubscribed")
    assert rc == 0 and out.startswith("NOT A VALID ANSWER")


@pytest.mark.parametrize("hardware, flags, fragments", [
    ("trn2-ultraserver", ["--tp", "7"], ("invalid plan", "tp_heads", "tp=7", "64 attention heads")),
    ("trn2-ultraserver", ["--tp", "3"], ("invalid plan", "tp_heads", "tp=3")),
    ("trn2-ultraserver", ["--tp", "1024"], ("invalid plan", "tp_heads", "tp=1024")),
    ("p5.48xlarge", ["--tp", "8", "--pp", "81"], ("invalid plan", "pp_layers", "80 layers")),
    ("p5.48xlarge", ["--tp", "8", "--ep", "3"], ("parallelism field ep", "must divide tp x da = 8")),
])
def test_roofline_refuses_an_invalid_plan_naming_the_rule(capsys, hardware, flags, fragments):
    line = refusal(capsys, *ROOFLINE_70B, "--hardware", hardware, *flags)
    assert all(f in line for f in fragments), line


def test_tensor_parallel_across_nodes_is_valid_priced_over_scale_out_and_noted():
    """TP16 over two 8-GPU H200 nodes runs (InferenceX measures it): valid, each all-reduce crosses
    the scale-out network (slower than NVLink), and the result says so."""
    system, arch = catalog.load_system("p5e.48xlarge"), workload_files.load_workload("llama-3-70b")
    run = {tp: evaluate(system, arch, Scenario(Phase.DECODE, batch=32, context=2048, parallel=Parallelism(tp=tp)))
           for tp in (8, 16)}
    assert run[16].summary["valid"].iloc[0] and "scale-out network" in run[16].warnings[0]
    assert not run[8].warnings
    ar = {tp: r.ops.set_index("op").loc["attn.tp_all_reduce", "comm_s"] for tp, r in run.items()}
    assert ar[16] > 2 * ar[8]


def test_memory_refuses_an_invalid_plan(capsys):
    line = refusal(capsys, "memory", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--tp", "7")
    assert "tp_heads" in line


def test_context_beyond_the_model_positions_is_invalid(capsys):
    line = refusal(capsys, "roofline", "--hardware", "p5.48xlarge", "--workload", "llama-3-70b", "--phase", "decode",
                   "--context", "9000", "--tp", "8")
    assert "context_max" in line and "8,192" in line or "8192" in line


def test_an_uneven_pipeline_is_priced_at_its_heaviest_stage(capsys):
    """pp 7 on 80 layers runs (runtimes split layers unevenly); the step is that of 12 layers."""
    system, arch = catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3-70b")
    run = {p: evaluate(system, arch, Scenario(Phase.DECODE, batch=8, context=1024, parallel=Parallelism(tp=8, pp=p)))
           for p in (1, 7, 8)}
    assert np.isclose(bd.stage_stretch(arch, 7), 12 / (80 / 7)) and bd.stage_stretch(arch, 8) == 1.0
    layers = {p: r.ops.loc[r.ops["op"] == "attn.norm", "count"].iloc[0] for p, r in run.items()}
    assert layers == {1: 80, 7: 12, 8: 10}
    assert run[7].summary["valid"].iloc[0] and not run[7].warnings
    step = {p: r.summary["step_time_s"].iloc[0] for p, r in run.items()}
    assert step[8] < step[7] < step[1]
    # useful work per device is the mean stage's (L / p layers), so MFU does not count the heaviest
    # stage's extra layers: between 8 stages' and 8/7 of it, below what the 12-layer stage does
    flop = {p: r.summary["model_flop"].iloc[0] for p, r in run.items()}
    assert flop[8] < flop[7] < flop[8] * 8 / 7 < (run[7].ops["count"] * run[7].ops["flop"]).sum()
    rc, out, _ = cli(capsys, *ROOFLINE_70B, "--hardware", "p5.48xlarge", "--tp", "8", "--pp", "7", "-f", "csv")
    assert rc == 0 and "NOT A VALID" not in out


def test_serve_refuses_a_replica_that_does_not_fit(capsys):
    argv = ["serve", "--hardware", "trn1.2xlarge", "--workload", "llama-3-70b", "--tp", "1", "--concurrency", "1",
            "--no-progress"]
    assert "does not fit" in refusal(capsys, *argv)
    rc, out, err = cli(capsys, *argv, "--allow-oversubscribed", "-f", "csv")
    assert rc == 0 and "NOT A VALID ANSWER" in err and not pd.read_csv(io.StringIO(out))["kv_fits"].any()


def test_collective_beyond_one_system_says_how_many_it_spans_and_prints_no_infinity(capsys):
    rc, out, _ = cli(capsys, "collective", "--hardware", "trn2-ultraserver", "--op", "all-reduce", "--chips",
                     "64,100000", "--size", "1MiB", "-f", "json")
    assert rc == 0
    doc = json.loads(out)
    rows = doc["results"]["table"]
    assert "1,563" in json.dumps(doc) and all(isinstance(r["group"], int) for r in rows)
    for r in rows:  # an algorithm that cannot run a group is empty, never inf
        assert all(v is None or math.isfinite(v) for v in r.values() if isinstance(v, float))
    rc, out, _ = cli(capsys, "collective", "--hardware", "gb200-nvl72", "--op", "all-reduce", "--chips", "8,144",
                     "--size", "1MiB", "-f", "csv")
    back = pd.read_csv(io.StringIO(out))
    assert back["time_nvls_s"].notna().tolist() == [True, False]  # NVLS only inside the 72-GPU NVLink domain
    assert "time_2d_ring_s" in back and np.isfinite(back.select_dtypes("number").fillna(0).to_numpy()).all()


# ---------------------------------------------------------------- sweeps mark rows, search and planner skip them


def test_sweep_marks_a_configuration_that_needs_a_terabyte_and_fits_only_drops_it(capsys):
    argv = ["sweep", "--hardware", "trn2-ultraserver", "--workload", "llama-3-70b", "--phase", "decode",
            "--grid", "batch=1,1000", "--fixed", "context=7000", "--grid", "tp=1,7,64", "--no-progress", "-f", "csv"]
    rc, out, _ = cli(capsys, *argv)
    df = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(df) == 6 and {"valid", "fits", "memory_bytes_per_chip", "finite"} <= set(df.columns)
    big = df[(df["batch"] == 1000) & (df["tp"] == 1)].iloc[0]
    assert not big["fits"] and big["memory_bytes_per_chip"] > 1000 * units.BILLION  # over a terabyte
    assert (~df.loc[df["tp"] == 7, "valid"]).all() and df.loc[df["tp"] == 7, "invalid_reason"].str.contains(
        "tp_heads").all()
    rc, out, _ = cli(capsys, *argv, "--fits-only")
    kept = pd.read_csv(io.StringIO(out))
    assert rc == 0 and len(kept) and kept["valid"].all() and kept["fits"].all() and kept["finite"].all()
    assert set(kept["tp"]) <= {1, 64}


def test_evaluate_sweep_carries_a_reason_per_row():
    system, arch = catalog.load_system("trn2-ultraserver"), workload_files.load_workload("llama-3-70b")
    kn = bd.Knobs(phase=Phase.DECODE, batch=np.array([8.0, 8.0, 8.0]), seq_len=1.0, context=1024.0,
                  tp=np.array([8.0, 3.0, 128.0]))
    df = evaluate_sweep(system, arch, kn)
    assert df["valid"].tolist() == [True, False, False]
    assert df["invalid_reason"].iloc[0] == "" and "tp_heads" in df["invalid_reason"].iloc[1]
    assert "tp_heads" in df["invalid_reason"].iloc[2]


def test_frontier_search_never_chooses_an_invalid_or_non_fitting_plan():
    system, arch = catalog.load_system("trn2-ultraserver"), workload_files.load_workload("llama-3-70b")
    tp, conc = (a.ravel() for a in np.meshgrid([1, 3, 4, 8], [1, 64, 4096]))
    grid = Grid.of(tp=tp, concurrency=conc)
    df = search.finish_sweep(search.serve_sweep(system, arch, Mix(1024, 256), ["aggregated"], grid,
                                                calibration_for(system)), system,
                             calibration_for(system))
    assert (~df["valid"]).any() and (~df["kv_fits"]).any()  # the grid holds both kinds
    on = df[df[[c for c in df.columns if c.startswith("on_frontier_")]].any(axis=1)]
    assert len(on) and on["valid"].all() and on["kv_fits"].all() and not (on["tp"] == 3).any()


# ---------------------------------------------------------------- whole units and honest attribution


def test_min_fit_counts_whole_instances_with_the_node_share_apart():
    system, arch = catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3-8b")
    fit = feasibility.min_fit(system, arch, Scenario(Phase.DECODE, batch=1, context=1024))
    assert (fit.chips, fit.instances, fit.node_share) == (1, 1, 0.125)
    assert isinstance(fit.instances, int)
    big = feasibility.min_fit(system, workload_files.load_workload("llama-3-70b"),
                              Scenario(Phase.TRAIN, batch=1, seq_len=4096, parallel=Parallelism(zero=1)))
    assert big.instances == math.ceil(big.chips / system.node.chips) and big.node_share == big.chips / 8


@pytest.fixture(scope="module")
def report_comparison():
    return compare.comparison()


def test_every_report_case_breaks_down_to_its_step_time(report_comparison):
    """Across the report's systems and phases (prefill, decode, training): the bound shares sum
    to the step time and every operator's parts to its time."""
    c = report_comparison
    assert c.errors.empty, c.errors
    assert set(c.results["phase"]) == {"prefill", "decode", "train"}
    assert len(c.results) == len(compare.CASES) * len(compare.SYSTEMS)
    for (case, name), ops in c.per_operator.groupby(["case", "system"], sort=False):
        row = c.results[(c.results["case"] == case) & (c.results["system"] == name)].iloc[0]
        shares = attribution.bound_shares(ops)
        total = (ops["count"] * ops["time_s"]).sum()
        assert shares["time_s"].sum() == pytest.approx(total, rel=1e-9), (case, name)
        assert total == pytest.approx(row["step_time_s"], rel=1e-9), (case, name)
        assert shares["share_frac"].sum() == pytest.approx(1.0, rel=1e-9)
        assert set(shares["bound"]) <= set(attribution.BOUNDS)
        parts = ops["bound_part_s"] + ops["overhead_s"] + ops["comm_s"]
        assert np.allclose(parts, ops["time_s"], rtol=1e-12, atol=0), (case, name)
        assert row["valid"] and row["fits"]
        assert float(row["min_instances"]).is_integer() and row["min_instances"] >= 1


def test_a_decode_step_made_of_fixed_overheads_is_bound_by_overhead():
    """Llama-3-8B decode at batch 1 over 8 B200s: 2 GB of weights read in a quarter of a
    millisecond, while ~290 launches and 64 all-reduces cost their fixed times; attribution names
    per-operator overhead and collective latency, not HBM (folded into the busiest engine, the step
    read "memory 100%")."""
    ld = report.load("p6-b200.48xlarge", "llama-3-8b")
    run = report.run_scenario(ld, wi.ScenarioOptions(phase="decode", batch=1, seq_len=1, context=128, tp=8),
                              with_fit=False)
    shares = attribution.bound_shares(run.result.ops).set_index("bound")["share_frac"]
    assert shares.index[0] == "overhead" and shares["overhead"] > 0.4 and shares["comm latency"] > 0.3
    assert shares["memory"] < 0.2
    row = run.result.summary.iloc[0]
    assert row["fixed_overhead_s"] == pytest.approx(shares["overhead"] * row["step_time_s"], rel=1e-9)


def test_interleaved_pipelines_may_split_layers_unevenly_but_not_into_empty_chunks():
    """Megatron-Core runs an interleaved schedule whose chunks are uneven (first / last stage layer counts,
    pipeline layouts: NeMo's Llama 3.1 405B at PP8 VP4 over 126 layers); a chunk with no layer is not a plan."""
    from perfmodel import catalog
    from perfmodel.catalog import workload_files
    from perfmodel.core.scenario import Parallelism, Phase, Scenario
    from perfmodel.model import bindings as bd
    from perfmodel.model import feasibility

    system, arch = catalog.load_system("gb300-nvl72"), workload_files.load_workload("llama-3.1-405b")

    def rules(pp: int, v: int):
        sc = Scenario(Phase.TRAIN, batch=1, seq_len=8192, parallel=Parallelism(tp=2, pp=pp, dp=1, pp_virtual=v,
                                                                                pp_schedule="interleaved"))
        return feasibility.check_rules(system, arch, bd.Knobs.of(sc))

    ok, why = rules(8, 4)  # 126 layers in 32 chunks: 30 of 4 layers and 2 of 3
    assert bool(ok) and str(why) == ""
    ok, why = rules(16, 8)  # 128 chunks for 126 layers
    assert not bool(ok) and "pp_interleaved" in str(why) and "every chunk holds a layer" in str(why)
