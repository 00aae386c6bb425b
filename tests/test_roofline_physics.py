"""Physics of the cost model: bounds, intensity, monotonicity, units (issue 3 must-shows)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.scenario import Parallelism, Phase, Precision, Scenario
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import evaluate, evaluate_sweep
from perfmodel.model.memory import footprint
from perfmodel.model.roofline import Overlap

LLAMA8 = workload_files.load_workload("llama-3-8b")
H100 = catalog.load_system("p5.48xlarge")
TRN2 = catalog.load_system("trn2.48xlarge")


@pytest.mark.parametrize("system", [H100, TRN2], ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_decode_intensity_is_about_2B_over_bytes_per_weight(system, dtype):
    """Dense decode at batch B, short context: FLOP / HBM byte ~ 2 B / b_w; memory-bound."""
    for B in (1, 4, 16):
        r = evaluate(system, LLAMA8, Scenario(Phase.DECODE, batch=B, context=64,
                                              precision=Precision.uniform(dtype)))
        expected = 2 * B / bytes_per_element(DType(dtype))
        assert r["intensity_flop_per_byte"] == pytest.approx(expected, rel=0.15)
        matmuls = r.ops[r.ops.kind == "matmul"]
        assert (matmuls.bound == "memory").all()


def test_prefill_at_long_sequence_is_compute_bound():
    r = evaluate(H100, LLAMA8, Scenario(Phase.PREFILL, batch=1, seq_len=8192))
    heavy = r.ops[r.ops.kind.isin(["matmul", "attention"]) & (r.ops.op != "head.lm_head")]  # head: last token only
    assert (heavy.bound == "tensor").all()
    ridge = H100.chip.peak(DType.BF16) / H100.chip.hbm_bandwidth_bytes_per_s
    assert r["intensity_flop_per_byte"] > ridge


def test_fp8_halves_matmul_time_on_trn2():
    from perfmodel.model import formulas as fm
    from perfmodel.model import kernels
    t = {d: kernels.kernel_costs(TRN2, {"mm": fm.matmul(4096, 4096, 4096)}, d).iloc[0].time_s for d in ("bf16", "fp8")}
    assert t["bf16"] / t["fp8"] == pytest.approx(2.0, rel=0.02)


def test_lower_precision_halves_memory_time_of_decode():
    sc = Scenario(Phase.DECODE, batch=4, context=512)
    m16 = evaluate(H100, LLAMA8, sc).ops.eval("memory_s * count").sum()
    m8 = evaluate(H100, LLAMA8, sc.replace(precision=Precision.uniform("fp8"))).ops.eval("memory_s * count").sum()
    assert m16 / m8 == pytest.approx(2.0, rel=0.05)


def test_serial_bound_is_at_least_pipelined_and_at_most_the_sum_of_engines():
    sc = Scenario(Phase.PREFILL, batch=2, seq_len=2048)
    pip = evaluate(TRN2, LLAMA8, sc, overlap=Overlap.PIPELINED)
    ser = evaluate(TRN2, LLAMA8, sc, overlap=Overlap.SERIAL)
    assert ser["compute_time_s"] >= pip["compute_time_s"]
    assert ser["compute_time_s"] <= 5 * pip["compute_time_s"]  # at most one term per engine


def test_summary_units_are_consistent():
    r = evaluate(TRN2, LLAMA8, Scenario(Phase.PREFILL, batch=1, seq_len=1024))
    assert r["achieved_flop_per_s"] == pytest.approx(r["model_flop"] / r["step_time_s"])
    assert 0 < r["mfu_frac"] <= 1 and 0 < r["tensor_util_frac"] <= 1
    assert r["tokens_per_s_per_chip"] == pytest.approx(1024 / r["step_time_s"])


# ------------------------------------------------------------------ property-based tests

NAMES = ["llama-3-8b", "mistral-7b", "gpt3-6.7b", "mixtral-8x7b", "gpt-oss-20b", "qwen3-235b-a22b", "deepseek-v3",
         "bert-large"]
SYSTEMS = ["trn1.32xlarge", "trn2.48xlarge", "trn3-ultraserver", "p5.48xlarge", "p4d.24xlarge", "gb200-nvl72"]


@st.composite
def scenarios(draw):
    name = draw(st.sampled_from(NAMES))
    arch = workload_files.load_workload(name)
    system = catalog.load_system(draw(st.sampled_from(SYSTEMS)))
    phases = [Phase.PREFILL, Phase.TRAIN] if arch.encoder_only else [Phase.PREFILL, Phase.DECODE, Phase.TRAIN]
    phase = draw(st.sampled_from(phases))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if t <= system.node.chips]))
    ep = draw(st.sampled_from([e for e in (1, 2, 4, 8) if tp % e == 0])) if arch.is_moe else 1
    dtypes = [d for d in ("bf16", "fp8", "mxfp8") if system.chip.supports(DType(d))]
    dtype = draw(st.sampled_from(dtypes)) if phase != Phase.TRAIN else "bf16"
    sc = Scenario(phase, batch=draw(st.integers(1, 64)), seq_len=draw(st.sampled_from([128, 512, 2048])),
                  context=draw(st.integers(1, 8192)) if phase == Phase.DECODE else 0,
                  parallel=Parallelism(tp=tp, ep=ep), precision=Precision.uniform(dtype))
    return system, arch, sc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_nan_inf_or_negative(case):
    system, arch, sc = case
    r = evaluate(system, arch, sc)
    num = r.summary.select_dtypes("number")
    assert np.isfinite(num.to_numpy()).all() and (num.to_numpy() >= 0).all()
    ops = r.ops.select_dtypes("number").drop(columns=["intensity_flop_per_byte"])
    assert np.isfinite(ops.to_numpy()).all() and (ops.to_numpy() >= 0).all()
    fp = footprint(system, arch, bd.Knobs.of(sc), recompute=sc.recompute)
    assert all((v >= 0).all() and np.isfinite(v).all() for v in fp.components.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["tensor", "hbm", "vector"]), st.floats(1.1, 4.0))
def test_more_rate_or_bandwidth_never_slower(case, what, factor):
    system, arch, sc = case
    chip = system.chip
    if what == "tensor":
        faster = system.replace_chip(tensor=dataclasses.replace(
            chip.tensor, flop_per_s={d: v * factor for d, v in chip.tensor.flop_per_s.items()}))
    elif what == "hbm":
        faster = system.replace_chip(hbm_bandwidth_bytes_per_s=chip.hbm_bandwidth_bytes_per_s * factor)
    else:
        faster = system.replace_chip(vector=dataclasses.replace(chip.vector, elems_per_s=chip.vector.elems_per_s * factor))
    assert evaluate(faster, arch, sc)["step_time_s"] <= evaluate(system, arch, sc)["step_time_s"] * (1 + 1e-12)


@pytest.mark.parametrize("name,system", [("llama-3-8b", "trn2.48xlarge"), ("gpt-oss-120b", "trn3-ultraserver"),
                                         ("llama-3-70b", "p5.48xlarge")])
def test_decode_throughput_never_falls_with_batch_until_memory_binds(name, system):
    arch = workload_files.load_workload(name)
    s = catalog.load_system(system)
    batch = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    kn = bd.Knobs(phase=Phase.DECODE, batch=batch, context=2048, tp=8, ep=8 if arch.is_moe else 1)
    df = evaluate_sweep(s, arch, kn)
    fits = footprint(s, arch, kn).fits
    tput = df["tokens_per_s_per_replica"].to_numpy()[fits]
    assert len(tput) >= 3
    assert (np.diff(tput) >= -1e-9 * tput[:-1]).all()


def test_sweep_equals_single_evaluations():
    batch = np.array([1, 8, 64])
    df = evaluate_sweep(TRN2, LLAMA8, bd.Knobs(phase=Phase.DECODE, batch=batch, context=1024))
    for b, t in zip(batch, df["step_time_s"]):
        assert evaluate(TRN2, LLAMA8, Scenario(Phase.DECODE, batch=int(b), context=1024))["step_time_s"] == pytest.approx(t)


def test_a_matmul_runs_at_its_operand_types_efficiency():
    """FP8 matmuls reach a smaller share of their (doubled) peak than BF16 ones (the GEMM table: 73% vs
    80%): each type's tensor time is FLOPs / (its rate x its efficiency), and a what-if on one type's
    efficiency moves only that type."""
    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.model import formulas as fm
    from perfmodel.model import kernels
    s = catalog.load_system("dgx-h100")
    cal = calibration_for(s).with_overrides({"fp8_activation_quantize_passes": 0})
    work = {"gemm": fm.matmul(8192, 8192, 8192)}
    flop = 2 * 8192 ** 3

    def tensor_s(dtype, c=cal):
        return kernels.kernel_costs(s, work, compute=dtype, activations=dtype, cal=c).iloc[0]["tensor_busy_s"]

    for dtype, eff in ((DType.BF16, "tensor_efficiency"), (DType.FP8, "fp8_tensor_efficiency")):
        # each output tile's fixed cost is k0 more K steps (Hopper: 160 BF16 elements, the same time in FP8 is 320);
        # sustained work runs at the power-limited clock (sustained_tensor_ratio)
        k0 = cal["gemm_tile_fixed_k"] * round(s.chip.tensor.rate(dtype) / s.chip.tensor.rate(DType.BF16))
        issued = flop * (8192 + k0) / 8192
        rate = s.chip.tensor.rate(dtype) * cal[eff] * cal["sustained_tensor_ratio"]
        assert tensor_s(dtype) == pytest.approx(issued / rate, rel=1e-9)
    slower = cal.with_overrides({"fp8_tensor_efficiency": cal["fp8_tensor_efficiency"] / 2})
    assert tensor_s(DType.FP8, slower) == pytest.approx(2 * tensor_s(DType.FP8), rel=1e-9)
    assert tensor_s(DType.BF16, slower) == pytest.approx(tensor_s(DType.BF16), rel=1e-12)
    assert cal["fp8_tensor_efficiency"] < cal["tensor_efficiency"]
