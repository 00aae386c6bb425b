"""Issue 20's training mechanisms: each moves the step the way its physics says, and only where it applies."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

from perfmodel import catalog, training
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.model import formulas as fm
from perfmodel.model import kernels
from perfmodel.model.graph.build import graph_for
from perfmodel.core.symbols import bw, bwe
from perfmodel.model.ops import OpKind, Pass, f_rc, i_fr, i_z3, nmb

H100 = catalog.load_system("dgx-h100")
A100 = catalog.load_system("dgx-a100-80gb")
LLAMA = workload_files.load_workload("llama-3.1-8b")


def scen(compute=DType.BF16, tp=1, pp=1, dp=8, m=8, zero=0, v=1, sp=False, seq=4096):
    return Scenario(phase=Phase.TRAIN, batch=1, seq_len=seq, recompute=Recompute.NONE,
                    parallel=Parallelism(tp=tp, pp=pp, dp=dp, zero=zero, microbatches=m, pp_virtual=v,
                                         pp_schedule="interleaved" if v > 1 else "1f1b", sequence_parallel=sp),
                    precision=Precision(weights=DType.BF16, compute=compute, activations=DType.BF16,
                                        kv_cache=DType.BF16), optimizer=Optimizer.ADAM_MIXED)


def no_spread(system):
    return calibration_for(system).with_overrides({"rank_speed_spread_frac": 0.0})


# ---------------------------------------------------------------- low-precision recipe


def test_fp8_training_quantizes_each_linear_layers_input_and_output_gradient():
    ops = graph_for(LLAMA, Phase.TRAIN)
    linear = [o for o in ops if o.pass_ == Pass.FORWARD and o.io is not None]
    casts = {o.name: o for o in ops if o.name.endswith(".cast") and o.pass_ == Pass.FORWARD}
    assert {o.name for o in linear} == {"attn.qkv", "attn.o_proj", "mlp.up", "mlp.down"}
    for o in linear:  # the forward casts the input (M K), the backward the output gradient (M N)
        c = casts[f"{o.name}.cast"]
        assert c.kind == OpKind.ELEMENTWISE and fm.f8 in c.count.free_symbols
        trained = {i_fr: 0}  # every weight trained (LoRA's frozen layers write one copy: the LoRA test)
        assert sp.simplify(c.work.write.subs(trained) - fm.low_precision_cast(o.io[0]).write) == 0
        assert sp.simplify(c.backward.write.subs(trained) - fm.low_precision_cast(o.io[1]).write) == 0
        assert c.work.read == fm.low_precision_cast(o.io[0]).read
    # the LM head stays in BF16 (Megatron-Core's output layer is not a Transformer Engine module)
    head = [o for o in ops if o.name == "head.lm_head"]
    assert head and all(o.work.tensor_flop == 0 and o.work.tensor_b16_flop != 0 for o in head)


def test_fp8_weights_are_quantized_once_per_step_not_per_micro_batch():
    """Each quantized layer's weights are cast once per optimizer step (the recipe keeps them for every micro-batch):
    the graph's weight casts carry no micro-batch factor (ZeRO-3 aside), the head, the embedding and the BF16
    router have none, routed experts are read at their own type, and their share per micro-batch falls as a step
    runs more micro-batches."""
    ops = graph_for(LLAMA, Phase.TRAIN)
    casts = {o.name: o for o in ops if o.name.endswith(".weight_cast")}
    linear = {o.name: o for o in ops if o.pass_ == Pass.FORWARD and o.io is not None}
    assert set(casts) == {f"{n}.weight_cast" for n in linear}
    for name, c in casts.items():
        o = linear[name.removesuffix(".weight_cast")]
        assert c.work == fm.low_precision_cast(o.work.params, bw) and fm.f8 in c.count.free_symbols
        # no micro-batch factor, except under ZeRO-3 (the gathered weights are freed and cast again each use)
        assert c.count.subs(i_z3, 0).free_symbols.isdisjoint({nmb})
        assert sp.simplify(c.count.subs(i_z3, 1) - o.count * fm.f8 * 2) == 0  # o.count is per step: x nmb
    moe = graph_for(workload_files.load_workload("deepseek-v3"), Phase.TRAIN)
    experts = [o for o in moe if o.name.startswith("moe.expert.") and o.name.endswith(".weight_cast")]
    assert len(experts) == 2 and all(o.work.read.has(bwe) and not o.work.read.has(bw) for o in experts)
    assert not [o for o in moe if o.name.startswith("moe.router.") and o.name.endswith("_cast")]  # BF16 router
    cal = no_spread(H100)
    opt = {(d, m): training.train(H100, LLAMA, scen(d, m=m), nodes=1, cal=cal)["optimizer_s"]
           for d in (DType.BF16, DType.FP8) for m in (1, 8)}
    # priced with the optimizer step: the same for one micro-batch or eight, and only under the recipe
    assert opt[DType.FP8, 1] == pytest.approx(opt[DType.FP8, 8]) and opt[DType.FP8, 1] > opt[DType.BF16, 1]


def test_casts_cost_nothing_at_bf16_and_their_bytes_under_fp8():
    cal = no_spread(H100)
    bf16 = training.train(H100, LLAMA, scen(DType.BF16), nodes=1, cal=cal)
    bf16_free = training.train(H100, LLAMA, scen(DType.BF16), nodes=1,
                               cal=cal.with_overrides({"low_precision_training_copies": 0}))
    assert bf16["step_time_s"] == pytest.approx(bf16_free["step_time_s"], rel=1e-12)
    copies = [training.train(H100, LLAMA, scen(DType.FP8), nodes=1,
                             cal=cal.with_overrides({"low_precision_training_copies": c}))["step_time_s"]
              for c in (0, 1, 2)]
    assert copies[0] < copies[1] < copies[2]  # each copy is one more byte per element written
    current = training.train(H100, LLAMA, scen(DType.FP8), nodes=1,
                             cal=cal.with_overrides({"low_precision_training_amax_reads": 1}))["step_time_s"]
    assert current > copies[2]  # current scaling reads each tensor once more for its amax
    # Blackwell reads FP8 operands column-wise: one copy; Hopper needs the transposed one
    assert calibration_for(catalog.load_system("p6-b200.48xlarge"))["low_precision_training_copies"] == 1
    assert calibration_for(H100)["low_precision_training_copies"] == 2


# ---------------------------------------------------------------- GEMM efficiency by shape


def test_short_k_gemms_run_below_long_k_ones_on_hopper_not_where_unmeasured():
    def eff(system, k, dtype):
        c = kernels.kernel_costs(system, {"g": fm.matmul(4096, k, 4096)}, compute=dtype, activations=dtype,
                                 cal=calibration_for(system).with_overrides({"fp8_activation_quantize_passes": 0}))
        return c.iloc[0]["flop"] / c.iloc[0]["tensor_busy_s"] / system.chip.tensor.rate(dtype)

    k0 = calibration_for(H100)["gemm_tile_fixed_k"]
    for dtype, k0_t in ((DType.BF16, k0), (DType.FP8, 2 * k0)):  # the same time is twice the FP8 K steps
        assert eff(H100, 1024, dtype) / eff(H100, 16384, dtype) == pytest.approx(
            (1024 / (1024 + k0_t)) / (16384 / (16384 + k0_t)), rel=1e-9)
    assert eff(A100, 1024, DType.BF16) == pytest.approx(eff(A100, 16384, DType.BF16), rel=1e-9)


def test_block_scaled_fp8_kernels_lose_more_at_short_k_than_the_cublas_fit():
    """gemm_tile_fixed_k is cuBLAS's (perfmodel's H100 K sweeps, tests/test_device_gpus.py). DeepGEMM's
    block-scaled FP8 kernels (README table, H800, M = 4096) promote their accumulators every 128 K steps, extra
    fixed work per tile: their throughput relative to K = 16384 falls below the cuBLAS fit's at every shorter K."""
    h800 = catalog.load_system("hgx-h800")
    rows = {512: 590.0, 1536: 990.0, 2048: 1025.0, 7168: 1304.0}
    k0 = 2 * calibration_for(h800)["gemm_tile_fixed_k"]
    for k, tflops in rows.items():
        assert (k / (k + k0)) / (16384 / (16384 + k0)) > tflops / 1358.0


def test_flash_attention_backward_runs_below_its_forward_on_gpus():
    cal = calibration_for(H100)
    assert 0 < cal["attention_backward_relative_efficiency"] < 1
    slow = training.train(H100, LLAMA, scen(), nodes=1, cal=no_spread(H100))
    same = training.train(H100, LLAMA, scen(), nodes=1,
                          cal=no_spread(H100).with_overrides({"attention_backward_relative_efficiency": 1.0}))
    assert slow["backward_s"] > same["backward_s"] and slow["forward_s"] == pytest.approx(same["forward_s"])


# ---------------------------------------------------------------- per-step costs: the slowest rank


def test_the_slowest_rank_grows_with_the_number_of_ranks():
    z = training.step.slowest_rank_z(np.array([1, 2, 8, 64, 1024, 16384]))
    assert z[0] == 0 and np.all(np.diff(z) > 0)
    assert z[2] == pytest.approx(1.42, abs=0.02)  # expected maximum of 8 normal draws
    assert z[-1] < np.sqrt(2 * np.log(16384))  # below the asymptote
    r = training.train(H100, LLAMA, scen(dp=64), nodes=8)
    sigma = calibration_for(H100)["rank_speed_spread_frac"]
    work = r["step_time_s"] - r["straggler_s"]
    assert r["straggler_s"] == pytest.approx(work * sigma * training.step.slowest_rank_z(64))


def test_weak_scaling_loses_to_the_slowest_rank_even_with_free_communication():
    trn1 = catalog.load_system("trn1.32xlarge")
    gpt = workload_files.load_workload("gpt3-6.7b")
    sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=2048, parallel=Parallelism(tp=4, dp=4, microbatches=16),
                  optimizer=Optimizer.ADAM_BF16_SR)
    cal = calibration_for(trn1).with_overrides({"comm_overlap_frac": 1.0})
    df = training.scaling(trn1, gpt, sc, [1, 16], cal=cal)
    eff = df["scaling_efficiency_frac"].to_numpy()
    expect = (1 + cal["rank_speed_spread_frac"] * training.step.slowest_rank_z(16)) / (
        1 + cal["rank_speed_spread_frac"] * training.step.slowest_rank_z(256))
    assert eff[1] < 1.0 and df["straggler_s"].iloc[1] > df["straggler_s"].iloc[0]
    if df["dp_comm_exposed_s"].iloc[1] == 0:
        assert eff[1] == pytest.approx(expect, rel=1e-3)


# ---------------------------------------------------------------- overlap that real stacks have


def test_pipeline_send_recv_hides_under_the_interleaved_schedules_compute():
    sc = scen(tp=1, pp=4, dp=2, m=16, v=4)
    cal = no_spread(H100)
    blocking = training.train(H100, LLAMA, sc, nodes=1, cal=cal)
    hidden = training.train(H100, LLAMA, sc, nodes=1, cal=cal.with_overrides({"pp_comm_overlap_frac": 1.0}))
    assert hidden["pp_send_recv_hidden_s"] == pytest.approx(blocking["pp_send_recv_s"])
    assert hidden["step_time_s"] < blocking["step_time_s"]
    assert hidden.comm.set_index("class").at["pipeline send/recv", "exposed_s"] == pytest.approx(0.0, abs=1e-12)


def test_the_distributed_optimizers_weight_gather_hides_under_the_next_forward():
    sc = scen(dp=8, m=4, zero=1)
    cal = no_spread(H100)
    exposed = training.train(H100, LLAMA, sc, nodes=1, cal=cal)
    gathered = training.train(H100, LLAMA, sc, nodes=1, cal=cal.with_overrides({"param_gather_overlap_frac": 1.0}))
    assert gathered["dp_comm_exposed_s"] < exposed["dp_comm_exposed_s"]
    assert gathered["dp_comm_hidden_s"] - exposed["dp_comm_hidden_s"] <= gathered["forward_s"] / 4 + 1e-12


def test_unfused_element_wise_ops_move_more_bytes_and_only_they():
    cal = no_spread(A100)
    fused = training.train(A100, LLAMA, scen(), nodes=1, cal=cal)
    eager = training.train(A100, LLAMA, scen(), nodes=1, cal=cal.with_overrides({"elementwise_traffic_factor": 3.0}))
    assert eager["step_time_s"] > fused["step_time_s"]
    assert eager["mfu_frac"] < fused["mfu_frac"]
    ops = graph_for(LLAMA, Phase.TRAIN)
    scaled = {o.name for o in ops if fm.e_x in o.work.read.free_symbols}
    assert {"attn.norm", "mlp.norm", "attn.rope", "mlp.act", "mlp.residual"} <= scaled
    assert not any(n.endswith(".cast") or n.startswith("head.") or n.startswith("embed.") for n in scaled)


@pytest.mark.parametrize("policy,matmul_share", [(Recompute.ALTERNATE_LAYERS, 0.5), (Recompute.SELECTIVE_OP, 0.5),
                                                 (Recompute.FULL, 1.0), (Recompute.SELECTIVE, 0.0)])
def test_recompute_policies_rerun_their_share_of_the_forward(policy, matmul_share):
    ops = graph_for(LLAMA, Phase.TRAIN, policy)
    fwd = {o.name: o for o in ops if o.pass_ == Pass.FORWARD}
    rec = {o.name: o for o in ops if o.pass_ == Pass.RECOMPUTE and not o.name.endswith("_scores")}
    share = (rec["mlp.up"].count / fwd["mlp.up"].count) if "mlp.up" in rec else 0
    assert float(sp.sympify(share).subs(f_rc, 1)) == matmul_share  # full: f_rc of the layers, all by default
    if policy == Recompute.SELECTIVE_OP:  # element-wise ops again, attention kept
        assert rec["mlp.act"].count == fwd["mlp.act"].count and "attn.core" not in rec


def test_the_cli_offers_every_recompute_policy():
    import inspect

    from perfmodel.cli import report
    src = inspect.getsource(report)
    assert all(f'"{r.value}"' in src for r in Recompute)


def test_a_hidden_weight_gather_keeps_the_step_between_its_bounds():
    sc = scen(dp=8, m=4, zero=1)
    cal = calibration_for(H100).with_overrides({"param_gather_overlap_frac": 1.0})
    r = training.train(H100, LLAMA, sc, nodes=1, cal=cal)
    assert r["overlapped_bound_s"] - 1e-12 <= r["step_time_s"] <= r["serial_bound_s"] + 1e-12


def test_moe_training_permutes_tokens_and_serving_does_not():
    moe = workload_files.load_workload("qwen3-235b-a22b")
    train = {o.name: o for o in graph_for(moe, Phase.TRAIN) if o.pass_ == Pass.FORWARD}
    assert "moe.permute" in train
    w = train["moe.permute"].work  # (1 + k) N D read and written: permute in, unpermute out
    assert w.read == w.write and w.read.has(fm.ba) and train["moe.permute"].backward == w
    assert "moe.permute" not in {o.name for o in graph_for(moe, Phase.PREFILL)}
    assert "moe.permute" not in {o.name for o in graph_for(LLAMA, Phase.TRAIN)}


def test_zero_shards_dense_state_over_every_replica_copy_and_experts_over_dp():
    """Under expert data parallelism a dense parameter has dp x da copies (attention-DP ranks replicate it) and
    the distributed optimizer shards its state over all of them; an expert's copies are the dp replicas only."""
    from perfmodel.model import bindings as bd
    from perfmodel.model import memory

    moe = workload_files.load_workload("qwen3-235b-a22b")
    gb200 = catalog.load_system("gb200-nvl72")
    sc = Scenario(phase=Phase.TRAIN, batch=16, seq_len=4096, optimizer=Optimizer.ADAM_MIXED,
                  parallel=Parallelism(tp=1, da=16, ep=16, dp=4, zero=1, microbatches=4))
    kn = bd.on_system(gb200, bd.Knobs.of(sc))
    fp = memory.footprint(gb200, moe, kn)
    per = Optimizer.ADAM_MIXED.bytes_per_param["optimizer"]
    p_all = float(np.ravel(memory.params_per_device(moe, kn, Phase.TRAIN))[0])
    p_exp = float(np.ravel(memory.params_per_device(moe, kn, Phase.TRAIN, experts=True))[0])
    want = (p_all - p_exp) * per / (4 * 16) + p_exp * per / 4
    assert float(np.ravel(fp.components["optimizer_state"])[0]) == pytest.approx(want)


def test_dense_gradients_reduce_over_every_copy_and_experts_over_their_replicas():
    """A dense weight's gradient is reduced over its dp x da x cp copies (Megatron-Core's dense data-parallel group
    spans the expert-parallel ranks), a routed expert's over its dp x cp replicas; the optimizer step updates each
    rank's shard of both. An EP-only plan (dp = 1) still reduces its attention gradients."""
    from perfmodel.model import bindings as bd
    from perfmodel.model import memory

    moe = workload_files.load_workload("qwen3-235b-a22b")
    gb200 = catalog.load_system("gb200-nvl72")

    def step(dp, da, zero=1):
        sc = Scenario(phase=Phase.TRAIN, batch=da, seq_len=4096, optimizer=Optimizer.ADAM_MIXED,
                      parallel=Parallelism(tp=1, da=da, ep=da, dp=dp, zero=zero, microbatches=4))
        r = training.step.train(gb200, moe, sc, cal=no_spread(gb200))
        return sc, r.comm_ops.set_index("op")

    sc, ops = step(dp=1, da=16)
    kn = bd.on_system(gb200, bd.Knobs.of(sc))
    p_all = float(np.ravel(memory.params_per_device(moe, kn, Phase.TRAIN))[0])
    p_exp = float(np.ravel(memory.params_per_device(moe, kn, Phase.TRAIN, experts=True))[0])
    g = Optimizer.ADAM_MIXED.bytes_per_param["gradients"]
    dense, expert = ops.loc["dp.grad_reduce_scatter"], ops.loc["dp.expert_grad_reduce_scatter"]
    assert (dense["group"], expert["group"]) == ("dp", "edp")
    assert dense["bytes"] == pytest.approx((p_all - p_exp) * g) and expert["bytes"] == pytest.approx(p_exp * g)
    assert dense["total_s"] > 0 and expert["total_s"] == 0  # 16 copies of the attention, one of each expert
    assert step(dp=2, da=16)[1].loc["dp.expert_grad_reduce_scatter", "total_s"] > 0
    # a dense model has no expert collectives and its one data-parallel group is dp
    dense_ops = training.step.train(H100, LLAMA, scen(dp=8, zero=1)).comm_ops.set_index("op")
    assert not dense_ops.index.str.contains("expert").any()
    assert dense_ops.loc["dp.grad_reduce_scatter", "group"] == "dp"
    # the optimizer updates (dense / (dp da) + experts / dp) parameters: fewer than with the dense state unsharded
    opt = [o for o in graph_for(moe, Phase.TRAIN) if o.name == "optimizer.step"][0]
    assert {s.name for s in opt.work.read.free_symbols} >= {"zs", "zsd"}


def test_context_parallel_ranks_reduce_and_shard_what_they_share():
    """Context-parallel ranks compute the same weights' gradients on other tokens: the gradient reduction and the
    distributed optimizer's shards span dp x cp (Megatron-Core's data-parallel group with CP), so at the same dp
    a CP2 plan holds half the optimizer state per chip and reduces its gradients over twice the ranks."""
    from perfmodel.model import memory
    from perfmodel.model.bindings import Knobs

    def run(cp):
        sc = scen(dp=4, zero=1, seq=8192).replace(parallel=Parallelism(dp=4, cp=cp, zero=1, microbatches=8))
        fp = memory.footprint_for(H100, LLAMA, sc)
        ops = training.step.train(H100, LLAMA, sc, cal=no_spread(H100)).comm_ops.set_index("op")
        return float(np.ravel(fp.components["optimizer_state"])[0]), ops.loc["dp.grad_reduce_scatter"]

    (state1, rs1), (state2, rs2) = run(1), run(2)
    assert state2 == pytest.approx(state1 / 2)
    assert rs2["bytes"] == rs1["bytes"]  # each rank's gradients are the whole stage's, whatever its tokens
    # the group is placed at its true span: with pipeline stages between dp replicas it is not packed together
    kn = Knobs.of(scen(pp=4, dp=8).replace(parallel=Parallelism(tp=4, pp=4, dp=8, cp=2, zero=1, microbatches=8)))
    assert float(kn.dense_dp) == 16 and float(kn.dense_dp_stride) * float(kn.dense_dp) == 4 * 4 * 16
    solo = Knobs.of(scen().replace(parallel=Parallelism(tp=4, cp=2, dp=1, zero=1, microbatches=8)))
    assert float(solo.dense_dp_stride) == 4  # the cp ranks alone sit tp apart


def test_offloaded_activations_leave_hbm_for_host_memory_over_the_host_link():
    """Megatron-Core's CPU activation offloading: o layers' saved activations sit in host memory (one layer's staged
    in HBM while it moves) and cross the chip's host link each way per micro-batch, on the critical path only
    where the copy outlasts the pass it overlaps: NVLink-C2C on GB200 hides it, an H100's PCIe Gen5 link does
    not at the same size. A system that states no host link cannot price it and refuses the plan."""
    from perfmodel.model import bindings as bd
    from perfmodel.model import feasibility, memory

    gb200 = catalog.load_system("gb200-nvl72")
    sc = scen(dp=64, zero=3, m=2, seq=8192).replace(batch=2)
    per_layer = None
    for off in (0, 8):
        fp = memory.footprint_for(gb200, LLAMA, sc.replace(offload_layers=off))
        act, host = float(np.ravel(fp.components["activations"])[0]), float(np.ravel(fp.host_bytes)[0])
        per_layer = per_layer or act / LLAMA.num_hidden_layers
        assert act == pytest.approx(per_layer * (LLAMA.num_hidden_layers - off + min(off, 1)))
        assert host == pytest.approx(per_layer * off)
    assert fp.host_capacity_bytes == gb200.node.host_memory_bytes / gb200.node.chips
    fast = training.step.train(gb200, LLAMA, sc.replace(offload_layers=8), cal=no_spread(gb200))
    assert fast["offload_exposed_s"] == 0 and fast["offload_bytes_per_microbatch"] == pytest.approx(host)
    slow = training.step.train(H100, LLAMA, sc.replace(offload_layers=24), cal=no_spread(H100))
    t_x = slow["offload_bytes_per_microbatch"] / H100.node.host_link_bytes_per_s
    assert slow["offload_exposed_s"] == pytest.approx(
        2 * (max(t_x - slow["forward_s"] / 2, 0) + max(t_x - slow["backward_s"] / 2, 0)))
    assert slow["offload_exposed_s"] > 0
    assert slow["overlapped_bound_s"] <= slow["step_time_s"] <= slow["serial_bound_s"]
    assert slow["serial_bound_s"] - slow["overlapped_bound_s"] >= 2 * 2 * t_x - slow["offload_exposed_s"] - 1e-9
    assert "activation offload to host, exposed" in set(slow.timeline["component"])
    trn2 = catalog.load_system("trn2-ultraserver")
    f = feasibility.feasibility(trn2, LLAMA, bd.Knobs.of(sc.replace(offload_layers=8))).first()
    assert not f["valid"] and any(r.startswith("offload_host_link") for r in f["reasons"])
    f = feasibility.feasibility(gb200, LLAMA, bd.Knobs.of(sc.replace(offload_layers=32))).first()
    assert not f["valid"] and any(r.startswith("offload_layers") for r in f["reasons"])
    with pytest.raises(ValueError, match="offload_layers"):
        Scenario(phase=Phase.DECODE, batch=1, context=1, offload_layers=2).validate()


def test_a_low_precision_recipe_saves_quantized_inputs_and_keeps_quantized_weights():
    """Transformer Engine's FP8 linears save for their wgrad only the FP8 copy of their input (QKV, fc1, fc2:
    1 byte, not 2; the attention output is kept twice, BF16 for the flash backward and FP8 for the output
    projection) and keep c_8 FP8 copies of their weights for the step's micro-batches."""
    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.model import bindings as bd
    from perfmodel.model import memory

    a = LLAMA
    D, F, out = a.hidden_size, a.intermediate_size, a.num_attention_heads * a.head_dim
    bf16 = memory.activation_bytes_per_token_layer(a, 1, 1, 2.0, 1.0)
    fp8 = memory.activation_bytes_per_token_layer(a, 1, 1, 2.0, 1.0, bq=1.0)
    assert float(bf16 - fp8) == pytest.approx((2 * D + F) - out)
    cal = calibration_for(H100)
    kn8, kn16 = (bd.Knobs.of(scen(compute=c, zero=1)) for c in (DType.FP8, DType.BF16))
    p_q = float(np.ravel(memory.params_per_device(a, kn8, Phase.TRAIN, quantized=True))[0])
    p_all = float(np.ravel(memory.params_per_device(a, kn8, Phase.TRAIN))[0])
    assert p_q < p_all  # the embedding and the LM head stay BF16
    copies = float(np.ravel(memory.low_precision_weight_bytes(a, kn8, cal))[0])
    assert copies == pytest.approx(p_q * cal["low_precision_training_copies"])
    assert float(np.ravel(memory.low_precision_weight_bytes(a, kn16, cal))[0]) == 0


def test_a_sweep_over_the_compute_type_prices_each_recipes_memory():
    """One vectorised evaluation over BF16 and FP8 training: each configuration gets its own saved-input bytes and
    quantized weight copies (the FP8 rows' activations smaller, their weights larger), as evaluated one by one."""
    from perfmodel.model import memory
    from perfmodel.model.bindings import Knobs

    cal = calibration_for(H100)
    both = Knobs.of(scen(zero=1)).__dict__ | {"compute": np.array([DType.BF16, DType.FP8], dtype=object)}
    fp = memory.footprint(H100, LLAMA, Knobs(**both), cal)
    for i, d in enumerate((DType.BF16, DType.FP8)):
        one = memory.footprint(H100, LLAMA, Knobs.of(scen(compute=d, zero=1)), cal)
        for k in ("activations", "weights"):
            assert float(np.ravel(fp.components[k])[i]) == pytest.approx(float(np.ravel(one.components[k])[0]))
    act, w = (np.ravel(fp.components[k]) for k in ("activations", "weights"))
    assert act[1] < act[0] and w[1] > w[0]


def test_the_training_options_sweep_and_are_refused_where_they_do_not_apply():
    """offload_layers, lora_rank and recompute_layers are sweep fields: one vectorised sweep prices each row as the
    scenario would be one at a time; outside training, or recompute_layers without full recompute, a row is invalid
    with its reason (never silently ignored)."""
    from perfmodel.sweep.engine import SweepSpec
    from perfmodel.sweep.run import run_sweep

    fixed = {"recompute": "full", "zero": 1, "dp": 8, "batch": 1, "seq_len": 4096, "microbatches": 8}
    df = run_sweep(SweepSpec(H100, LLAMA, "train", fixed=fixed,
                             grid={"recompute_layers": [0, 8], "lora_rank": [0, 16]}), progress=False)
    for r in df.itertuples():
        sc = scen(zero=1, m=8).replace(recompute=Recompute.FULL, recompute_layers=int(r.recompute_layers),
                                       lora_rank=int(r.lora_rank))
        assert r.step_time_s == pytest.approx(training.step.train(H100, LLAMA, sc)["step_time_s"], rel=1e-9)
    bad = run_sweep(SweepSpec(H100, LLAMA, "train", fixed={"recompute": "none"},
                              grid={"recompute_layers": [0, 4]}), progress=False)
    assert list(bad["valid"]) == [True, False] and "recompute_layers" in bad["invalid_reason"].iloc[1]
    dec = run_sweep(SweepSpec(H100, LLAMA, "decode", fixed={"context": 1024},
                              grid={"lora_rank": [0, 8]}), progress=False)
    assert list(dec["valid"]) == [True, False] and "training only" in dec["invalid_reason"].iloc[1]


def test_op_level_selective_checkpointing_keeps_every_other_matmul_output():
    """torchtitan's 'op' policy saves the outputs of every other matmul and of the attention kernel and recomputes
    the rest from the layer input: a Llama layer keeps D + H d + (Q, K, V, o-proj, gate, up, down outputs) / 2
    per token, under half of what keeping everything does, and the step recomputes half its matmuls."""
    from perfmodel.model import memory

    a = LLAMA
    D, F, hd = a.hidden_size, a.intermediate_size, a.head_dim
    qkv = (a.num_attention_heads + 2 * a.num_key_value_heads) * hd
    op = memory.selective_op_bytes_per_token_layer(a, 1, 1, 2.0, 1.0)
    assert float(op) == pytest.approx(2.0 * (D + a.num_attention_heads * hd + (qkv + D + 2 * F + D) / 2))
    assert float(op) < 0.5 * float(memory.activation_bytes_per_token_layer(a, 1, 1, 2.0, 1.0))
    def kept(rc):
        return float(np.ravel(memory.footprint_for(H100, a, scen().replace(recompute=rc)).components["activations"])[0])

    assert kept(Recompute.FULL) < kept(Recompute.SELECTIVE_OP) < kept(Recompute.NONE)


def test_lora_trains_its_adapters_and_only_propagates_through_the_frozen_weights():
    """LoRA fine-tuning (rank r on the attention projections): a frozen linear layer's backward is its dgrad alone,
    the adapters add 2 M r (K + N) FLOPs forward and train by the full rule; gradients, optimizer state and
    gradient collectives are the adapters' only, the frozen weights are still held (and gathered under ZeRO-3)."""
    from perfmodel.model import memory
    from perfmodel.model.bindings import Knobs
    from perfmodel.model.ops import i_fr
    from perfmodel.validation.sources.training_rows import lora_rank_of

    bwd = {o.name: o for o in graph_for(LLAMA, Phase.TRAIN) if o.pass_ == Pass.BACKWARD}
    fwd = {o.name: o for o in graph_for(LLAMA, Phase.TRAIN) if o.pass_ == Pass.FORWARD}
    full, frozen = (sp.simplify(bwd["mlp.up"].work.flop.subs(i_fr, v) / fwd["mlp.up"].work.flop) for v in (0, 1))
    assert (full, frozen) == (2, 1)
    assert sp.simplify(bwd["attn.qkv.lora"].work.flop / fwd["attn.qkv.lora"].work.flop) == 2  # adapters train
    head = sp.simplify(bwd["head.lm_head"].work.flop.subs(i_fr, 1) / fwd["head.lm_head"].work.flop)
    assert head == 1  # the LM head is frozen too: its backward is the dgrad alone
    assert "mlp.up.lora" not in fwd and fwd["attn.qkv.lora"].count.has(i_fr)
    # an 8-bit recipe writes one row-wise copy per tensor of a frozen layer (no wgrad: no transposed copy), and never
    # re-casts frozen weights per step
    cast = fwd["mlp.up.cast"].work.write
    assert sp.simplify(cast.subs(i_fr, 1) / cast.subs({i_fr: 0, fm.c8: 1})) == 1
    wcast = [o for o in graph_for(LLAMA, Phase.TRAIN) if o.name == "mlp.up.weight_cast"][0]
    assert sp.simplify(wcast.count.subs({i_fr: 1, i_z3: 0})) == 0

    def run(rank):
        sc = scen(dp=8, zero=1).replace(lora_rank=rank)
        return training.step.train(H100, LLAMA, sc, cal=no_spread(H100)), memory.footprint_for(H100, LLAMA, sc)

    (base, fp0), (lora, fp16) = run(0), run(16)
    kn = Knobs.of(scen(dp=8, zero=1).replace(lora_rank=16))
    adapters = float(np.ravel(memory.params_per_device(LLAMA, kn, Phase.TRAIN, lora=True))[0])
    D, hd = LLAMA.hidden_size, LLAMA.head_dim
    qkv = (LLAMA.num_attention_heads + 2 * LLAMA.num_key_value_heads) * hd
    assert adapters == pytest.approx(LLAMA.num_hidden_layers * 16 * ((D + qkv) + (LLAMA.num_attention_heads * hd + D)))
    assert lora["backward_s"] < 0.75 * base["backward_s"] and lora["forward_s"] >= base["forward_s"]
    assert lora["grad_bytes_per_chip"] == pytest.approx(adapters * 2)  # BF16 gradients of the adapters only
    comp = {k: float(np.ravel(v)[0]) for k, v in fp16.components.items()}
    assert comp["optimizer_state"] == pytest.approx(adapters * 8 / 8)  # Adam's two FP32 moments, ZeRO-1 over 8
    assert comp["weights"] > float(np.ravel(fp0.components["weights"])[0])  # the frozen weights and the adapters
    # frozen MLP linears keep no inputs (fc1's D, fc2's F per token, BF16): the attention block's (its adapters'
    # wgrad reads them), the gate / up outputs (the activation's backward) and the norm inputs stay
    def a_tok(k):
        return float(np.ravel(memory.saved_bytes_per_layer(LLAMA, k, calibration_for(H100), Recompute.NONE)[1])[0])

    t = scen(dp=8, zero=1).parallel.tp
    assert a_tok(Knobs.of(scen(dp=8, zero=1))) - a_tok(kn) == pytest.approx(2.0 * (D + LLAMA.intermediate_size / t))
    assert comp["activations"] < float(np.ravel(fp0.components["activations"])[0])
    assert any("keep no inputs" in n for n in fp16.notes)
    assert (lora_rank_of("LoRA r=16"), lora_rank_of("LoRA 70B"), lora_rank_of("kv_lora_rank 512")) == (16, None, 0)
    with pytest.raises(ValueError, match="lora_rank"):
        Scenario(phase=Phase.PREFILL, batch=1, lora_rank=8).validate()


def test_full_recompute_of_some_layers_reruns_and_frees_their_share():
    """Megatron-Core's block recompute (recompute_num_layers = n of a stage's L / p layers): the step re-runs n / (L/p)
    of a full recompute's forward and those layers keep only their input, the others every activation."""
    from perfmodel.model import memory
    from perfmodel.model.bindings import Knobs
    from perfmodel.validation.sources.training_rows import recompute_layers_of

    def run(rc, n=0):
        sc = scen(dp=8, zero=1).replace(recompute=rc, recompute_layers=n)
        r = training.step.train(H100, LLAMA, sc, cal=no_spread(H100))
        return r["backward_s"], float(np.ravel(memory.footprint_for(H100, LLAMA, sc).components["activations"])[0])

    (b0, a0), (b8, a8), (b_all, a_all) = run(Recompute.NONE), run(Recompute.FULL, 8), run(Recompute.FULL)
    share = 8 / LLAMA.num_hidden_layers
    assert b8 - b0 == pytest.approx(share * (b_all - b0), rel=1e-6)
    assert a8 == pytest.approx(share * a_all + (1 - share) * a0, rel=1e-9)
    assert recompute_layers_of("TP1, recompute 5 layers") == 5 and recompute_layers_of("full recompute") == 0
    assert recompute_layers_of("recompute_method=uniform, recompute_num_layers=1") == 0  # uniform: every layer
    # Megatron-Core counts recompute_num_layers per model chunk: v chunks of a stage re-run v times as many layers
    vp = Knobs.of(scen(pp=4, v=2, m=8).replace(recompute=Recompute.FULL, recompute_layers=2))
    assert float(vp.recompute_share(LLAMA.num_hidden_layers)) == pytest.approx(2 * 2 / (LLAMA.num_hidden_layers / 4))
    with pytest.raises(ValueError, match="recompute_layers"):
        scen().replace(recompute=Recompute.SELECTIVE, recompute_layers=4).validate()


def test_chunked_tp_overlap_hides_all_but_one_chunk_per_plan():
    cal = no_spread(H100).with_overrides({"tp_comm_chunked_overlap": 1})
    tp = np.array([2, 4, 8])
    from perfmodel.model import bindings as bd
    kn = dataclasses.replace(bd.Knobs.of(scen(tp=8, dp=1)), tp=tp)
    s = training.step.step_arrays(H100, LLAMA, bd.on_system(H100, kn), cal)
    hidden = s["tp_ep_cp_comm_hidden_s"] / s["tp_ep_cp_comm_s"]
    np.testing.assert_allclose(hidden, 1 - 1 / tp)  # one vectorised sweep, each tp its own share


def test_chunked_tp_overlap_slows_compute_by_its_own_contention():
    """TP collectives pipelined with their GEMMs (userbuffers) slow the compute they hide under at
    chunked_tp_contention_frac per second, below NCCL's comm_compute_contention_frac; other hidden
    communication keeps NCCL's rate."""
    from perfmodel.model import bindings as bd
    kn = bd.on_system(H100, bd.Knobs.of(scen(tp=4, dp=2, pp=1, zero=1)))
    base = no_spread(H100).with_overrides({"tp_comm_chunked_overlap": 1})
    s = training.step.step_arrays(H100, LLAMA, kn, base)
    c_nccl, c_ub = base["comm_compute_contention_frac"], base["chunked_tp_contention_frac"]
    assert 0 < c_ub < c_nccl
    expect = c_nccl * (s["dp_comm_hidden_s"] + s["pp_send_recv_hidden_s"]) + c_ub * s["tp_ep_cp_comm_hidden_s"]
    np.testing.assert_allclose(s["contention_s"], expect, rtol=1e-12)
    plain = training.step.step_arrays(H100, LLAMA, kn, base.with_overrides({"tp_comm_chunked_overlap": 0,
                                                                             "tp_comm_overlap_frac": 0.75}))
    np.testing.assert_allclose(plain["contention_s"], c_nccl * (plain["dp_comm_hidden_s"] + plain[
        "pp_send_recv_hidden_s"] + plain["tp_ep_cp_comm_hidden_s"]), rtol=1e-12)
