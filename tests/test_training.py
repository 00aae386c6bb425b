"""Training step: pipeline bubble, overlap bounds, scaling, ZeRO stages, plan checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from perfmodel import catalog, training
from perfmodel.catalog import workload_files
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Recompute, Scenario
from perfmodel.model import bindings as bd
from perfmodel.model import memory, plan

TRN1 = catalog.load_system("trn1.32xlarge")
P5 = catalog.load_system("p5.48xlarge")
GPT = workload_files.load_workload("gpt3-6.7b")


def scen(tp=4, pp=1, dp=4, m=16, zero=0, schedule="1f1b", v=1, batch=1, seq=2048, recompute=Recompute.NONE):
    return Scenario(phase=Phase.TRAIN, batch=batch, seq_len=seq, recompute=recompute,
                    parallel=Parallelism(tp=tp, pp=pp, dp=dp, zero=zero, microbatches=m, pp_schedule=schedule,
                                         pp_virtual=v), optimizer=Optimizer.ADAM_BF16_SR)


def test_bubble_formula():
    assert training.bubble_fraction(4, 8) == pytest.approx(3 / 8)
    assert training.bubble_fraction(4, 8, "gpipe") == pytest.approx(3 / 8)
    assert training.bubble_fraction(4, 8, "interleaved", 2) == pytest.approx(3 / 16)
    assert training.bubble_fraction(1, 8) == 0.0
    assert np.allclose(training.bubble_fraction(np.array([2, 8]), 16), [1 / 16, 7 / 16])
    with pytest.raises(ValueError):
        training.bubble_fraction(2, 2, "zigzag")


def test_pipeline_adds_bubble_and_send_recv():
    r = training.train(TRN1, GPT, scen(tp=4, pp=4, dp=1, m=8), nodes=1)
    assert r["bubble_frac"] == pytest.approx(3 / 8)
    assert r["bubble_s"] > 0 and r["pp_send_recv_s"] > 0
    ri = training.train(TRN1, GPT, scen(tp=4, pp=4, dp=1, m=8, schedule="interleaved", v=2), nodes=1)
    assert ri["bubble_frac"] == pytest.approx(3 / 16)
    assert ri["pp_send_recv_s"] == pytest.approx(2 * r["pp_send_recv_s"])


@pytest.mark.parametrize("system,nodes", [(TRN1, 2), (P5, 4)])
def test_overlap_bounds(system, nodes):
    chips = system.node.chips * nodes
    r = training.train(system, GPT, scen(tp=4, pp=1, dp=chips // 4, m=4), nodes=nodes)
    assert 0 <= r["dp_comm_exposed_s"] <= r["dp_comm_s"] + 1e-12
    assert r["comm_exposed_s"] <= r["comm_total_s"] + 1e-12
    assert r["dp_comm_hidden_s"] + r["dp_comm_exposed_s"] == pytest.approx(r["dp_comm_s"])
    assert r["overlapped_bound_s"] - 1e-12 <= r["step_time_s"] <= r["serial_bound_s"] + 1e-12
    if system is P5:  # GPUs pay for overlap with SM contention, Trainium does not
        assert r["contention_s"] > 0
    else:
        assert r["contention_s"] == 0
    tl = r.timeline
    assert set(tl["lane"]) == {"compute", "comm"} and tl["duration_s"].ge(0).all()
    assert r.comm["exposed_s"].sum() == pytest.approx(r["comm_exposed_s"])


def test_scaling_efficiency_at_most_one_and_falling():
    df = training.scaling(TRN1, GPT, scen(tp=4, dp=4, m=16), [1, 2, 4, 8, 16])
    eff = df["scaling_efficiency_frac"].to_numpy()
    assert eff[0] == pytest.approx(1.0)
    assert np.all(eff <= 1 + 1e-12) and np.all(np.diff(eff) <= 1e-12)
    assert eff[-1] < 1.0
    assert df["dp"].tolist() == [4, 8, 16, 32, 64]


def test_zero_stages_trade_memory_for_communication():
    sc = [scen(tp=4, dp=8, m=4, zero=z) for z in range(4)]
    mem = [float(np.ravel(memory.footprint_for(TRN1, GPT, s).total_bytes)[0]) for s in sc]
    assert mem[0] > mem[1] > mem[2] > mem[3]
    kn = bd.Knobs(**{**bd.Knobs.of(sc[0]).__dict__, "zero": np.arange(4)})
    s = training.step_arrays(TRN1, GPT, kn)
    c = s["dp_comm_s"]
    assert c[1] == pytest.approx(c[0], rel=0.35)  # reduce-scatter + all-gather ~ one all-reduce
    assert c[2] > c[1]  # reduce-scatter every micro-batch
    assert c[3] > c[2]  # + two weight all-gathers every micro-batch
    assert s["optimizer_s"][1] < s["optimizer_s"][0]  # optimizer state sharded


def test_vectorised_over_configurations():
    base = bd.Knobs.of(scen(tp=4, dp=4, m=16))
    kn = dataclasses.replace(base, dp=np.array([4.0, 8.0, 16.0]), microbatches=np.array([16.0, 8.0, 4.0]))
    s = training.step_arrays(TRN1, GPT, kn)
    assert s["step_time_s"].shape == (3,)
    assert np.allclose(s["global_batch"], 64)


def test_plan_checks_and_placement():
    ok = plan.check(TRN1, GPT, scen(tp=4, dp=4, m=16), nodes=1, global_batch=64)
    assert ok.ok and not ok.errors
    pl = ok.placement.set_index("group")
    assert pl.loc["tp", "members_in_node"] == 4 and pl.loc["dp", "stride_chips"] == 4
    assert not pl.loc["dp", "crosses_efa"]
    two = plan.placement(TRN1, Parallelism(tp=4, dp=8)).set_index("group")
    assert two.loc["dp", "crosses_efa"] and two.loc["dp", "members_across_efa"] == 2
    bad = plan.check(TRN1, GPT, scen(tp=3, dp=4, m=16), nodes=1)
    assert any("attention heads" in e for e in bad.errors)
    big = plan.check(TRN1, workload_files.load_workload("gpt3-175b"), scen(tp=1, dp=1, m=1), nodes=1)
    assert any("does not fit" in e for e in big.errors)
    wrong = plan.check(TRN1, GPT, scen(tp=4, dp=8, m=16), nodes=1)
    assert any("needs 32 chips" in e for e in wrong.errors)
    gb = plan.check(TRN1, GPT, scen(tp=4, dp=4, m=16), nodes=1, global_batch=100)
    assert any("global batch" in e for e in gb.errors)


def test_plan_collectives_follow_the_plan_fields():
    """The graph's pipeline send/recv count uses the same virtual stages as the bubble, and
    sequence parallelism splits the pipeline activations t ways."""
    from perfmodel import catalog
    from perfmodel.catalog import workload_files
    from perfmodel.core.scenario import Phase
    from perfmodel.model import bindings as bd
    from perfmodel.training.step import step_arrays
    s = catalog.load_system("trn2-ultraserver")
    arch = workload_files.load_workload("llama-3-8b")
    kn = bd.Knobs(phase=Phase.TRAIN, batch=1, seq_len=2048, tp=4, pp=4, dp=1, microbatches=8)
    plain = step_arrays(s, arch, kn, pp_schedule="interleaved", pp_virtual=2)
    p2p = {n: (b, c) for n, _, _, _, b, c, _ in plain["_plan_ops"]}["pp.send_recv"]
    assert float(p2p[1]) == 2 * 8 * 2  # forward + backward, per micro-batch and virtual stage
    assert float(plain["bubble_frac"]) == pytest.approx(3 / (8 * 2))
    sp = step_arrays(s, arch, kn, sequence_parallel=True)
    b_sp = {n: b for n, _, _, _, b, _, _ in sp["_plan_ops"]}["pp.send_recv"]
    assert float(b_sp) == pytest.approx(float(p2p[0]) / 4)


def test_pipeline_scatter_gather_splits_each_send_over_the_tp_ranks():
    """Megatron-LM's scatter/gather (pp_scatter_gather = 1, Narayanan et al. 2021 sec. 4.1): each of the t TP ranks
    sends 1/t of the activations and the receivers all-gather them over the TP group; both are the pipeline's
    hand-off time (not TP comm). With sequence parallelism each rank sends its shard either way: no gather."""
    from perfmodel import catalog
    from perfmodel.catalog import workload_files
    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.core.scenario import Phase
    from perfmodel.model import bindings as bd
    from perfmodel.training.step import step_arrays
    s = catalog.load_system("dgx-a100-80gb")
    arch = workload_files.load_workload("llama-3-8b")
    cal = calibration_for(s)
    kn = bd.Knobs(phase=Phase.TRAIN, batch=1, seq_len=2048, tp=8, pp=4, dp=1, microbatches=8)
    whole = step_arrays(s, arch, kn, cal)
    split = step_arrays(s, arch, kn, cal.with_overrides({"pp_scatter_gather": 1}))
    ops_whole = {n: (g, b, c) for n, _, g, _, b, c, _ in whole["_plan_ops"]}
    ops_split = {n: (g, b, c) for n, _, g, _, b, c, _ in split["_plan_ops"]}
    assert float(ops_split["pp.send_recv"][1]) == pytest.approx(float(ops_whole["pp.send_recv"][1]) / 8)
    group, gathered, count = ops_split["pp.gather"]
    assert group == "tp" and float(gathered) == pytest.approx(float(ops_whole["pp.send_recv"][1]))
    assert float(count) == float(ops_split["pp.send_recv"][2]) and float(ops_whole["pp.gather"][2]) == 0
    # the scale-out hop carries 1/8 of the bytes and NVLink gathers them: the hand-off is faster, TP comm unchanged
    assert float(split["pp_send_recv_s"]) < float(whole["pp_send_recv_s"])
    assert float(split["tp_ep_cp_comm_s"]) == pytest.approx(float(whole["tp_ep_cp_comm_s"]))
    sp_whole = step_arrays(s, arch, kn, cal, sequence_parallel=True)
    sp_split = step_arrays(s, arch, kn, cal.with_overrides({"pp_scatter_gather": 1}), sequence_parallel=True)
    assert float(sp_split["pp_send_recv_s"]) == pytest.approx(float(sp_whole["pp_send_recv_s"]))


def test_fp8_training_keeps_the_attention_core_in_bf16():
    """Under an FP8 recipe the linear layers run in FP8 and the attention core in BF16 (Transformer Engine,
    torchao): the step is slower than all-FP8 would be, and a BF16 run is unchanged by the rule."""
    from perfmodel import catalog, training
    from perfmodel.catalog import workload_files
    from perfmodel.core.dtypes import DType
    from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
    from perfmodel.model.graph.build import graph_for

    arch = workload_files.load_workload("llama-3.1-8b")
    ops = graph_for(arch, Phase.TRAIN)
    core = [o for o in ops if o.name == "attn.core"]
    assert core and all(o.work.tensor_flop == 0 and o.work.tensor_b16_flop != 0 for o in core)
    h100 = catalog.load_system("dgx-h100")

    def step(compute):
        sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=8192, parallel=Parallelism(dp=8, zero=3),
                      recompute=Recompute.NONE, precision=Precision(weights=DType.BF16, compute=compute,
                                                                    activations=DType.BF16, kv_cache=DType.BF16),
                      optimizer=Optimizer.ADAM_MIXED)
        return training.train(h100, arch, sc, nodes=1)["step_time_s"]

    fp8, bf16 = step(DType.FP8), step(DType.BF16)
    assert fp8 < bf16 < 2 * fp8  # the linear layers' 2x does not reach the whole step
