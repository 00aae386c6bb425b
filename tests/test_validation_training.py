"""Training, GEMM and bandwidth validation families: every case predicted or explained, the MPT
workloads against llm-foundry's published counts, kernel predictions under the datasheet peak, and
the physics of the modelling gaps fixed for them (materialised attention, attention kernel
generations, communication-compute contention)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest
import sympy as sp

from perfmodel import catalog, training, validation
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.core.workload import parameter_count
from perfmodel.model import formulas as fm
from perfmodel.model.graph.build import graph_for
from perfmodel.model.ops import Pass
from perfmodel.validation.sources import kernels as vk
from perfmodel.validation.sources import training as vt
from perfmodel.validation.sources import training_rows

PHASES = ("train", "gemm", "bandwidth")
# llm-foundry scripts/train/benchmarking/README.md, NumParams at SeqLen 2048, and the nominal sizes
MPT_NUMPARAMS = {"mpt-3b": 2_651_837_440, "mpt-7b": 6_658_859_008, "mpt-13b": 12_853_954_560,
                 "mpt-30b": 29_975_214_080, "mpt-70b": 64_862_437_376}
MPT_NOMINAL = {"mpt-7b": 6.7e9, "mpt-13b": 13e9, "mpt-30b": 29.9e9}


@pytest.fixture(scope="module")
def cases() -> pd.DataFrame:
    df = validation.run_cases()
    return df[df["phase"].isin(PHASES)].reset_index(drop=True)


def test_every_train_gemm_bandwidth_case_is_predicted_or_has_a_reason(cases):
    src = validation.measurements()
    assert set(cases["case_id"]) == set(src.loc[src["phase"].isin(PHASES), "case_id"])
    pred = np.isfinite(cases["predicted"])
    assert (cases.loc[~pred, "reason"].str.len() > 10).all()
    assert (cases.loc[pred, "predicted"] > 0).all() and (cases.loc[pred, "system"] != "").all()
    # a family takes each of them (none falls through to "no model family takes phase ...")
    assert (cases["family"] != "").all()
    assert set(cases["family"]) == {"training", "gemm", "bandwidth"}  # one family reads every training row
    # the one case left out: GH200 is not in the catalogue and the row does not equate it to a chip
    missing = cases.loc[~pred, "case_id"].tolist()
    assert missing == ["GEMM-003"] and "GH200" in cases.loc[~pred, "reason"].iloc[0]


def test_per_phase_errors_are_reported(cases):
    v = validation.phase_verdicts(cases).set_index("phase")
    for phase in PHASES:
        assert v.at[phase, "predicted"] >= 1
        assert np.isfinite(v.at[phase, "median_abs_error_frac"]) and np.isfinite(v.at[phase, "p90_abs_error_frac"])
        assert v.at[phase, "verdict"] in {"within target", "MISS"}
    # the signed error is (predicted - measured) / measured
    e = (cases["predicted"] - cases["measured"]) / cases["measured"]
    np.testing.assert_allclose(cases["error_frac"].dropna(), e.dropna())


@pytest.mark.parametrize("name", sorted(MPT_NUMPARAMS))
def test_mpt_workloads_match_llm_foundry_counts(name):
    arch = workload_files.load_workload(name)
    n = parameter_count(arch).total
    assert n == MPT_NUMPARAMS[name] == arch.published_parameters  # exact: the benchmark's NumParams
    assert arch.position_embedding == "learned" and arch.attention_bias and arch.mlp_bias
    assert arch.vocab_size == 50368 and arch.intermediate_size == 4 * arch.hidden_size and arch.tie_word_embeddings
    if name in MPT_NOMINAL:
        assert abs(n / MPT_NOMINAL[name] - 1) < 0.02


def test_mpt_count_grows_with_the_position_table_as_the_benchmark_sets_max_seq_len():
    arch = workload_files.load_workload("mpt-7b")
    longer = dataclasses.replace(arch, max_position_embeddings=8192)
    assert parameter_count(longer).total == 6_684_024_832  # the README's NumParams for 7b at SeqLen 8192


def test_llm_foundry_mfu_formula_reproduces_the_measured_mfu_from_measured_throughput():
    """Our reading of llm-foundry's MFU (3 (2 N s) + 3 (4 L d s^2) per sequence, N with the
    position table) turns each row's measured tokens/s/GPU back into its measured MFU."""
    for _, m in validation.measurements("MOSAIC").iterrows():
        seq = int(m["input_len"])
        name = "mpt-" + re.search(r"MPT-(\d+B)", m["model"]).group(1).lower()
        arch = dataclasses.replace(workload_files.load_workload(name), max_position_embeddings=seq)
        tps = float(re.search(r"throughput (\d+)", m["notes"]).group(1))
        system = catalog.load_system(training_rows.system_of(m["hardware"]))
        dtype = DType.FP8 if "FP8" in m["dtype"] else DType.BF16
        mfu = vt.llm_foundry_flop_per_seq(arch, seq) * tps / seq / system.chip.peak_flop_per_s[dtype]
        assert 100 * mfu == pytest.approx(float(m["value_num"]), rel=0.005), m["case_id"]


def test_kernel_predictions_never_exceed_the_datasheet_peak(cases):
    k = cases[cases["phase"].eq("gemm") & np.isfinite(cases["predicted"]) & cases["unit"].eq("TFLOP/s")]
    assert len(k) >= 12
    for _, r in k.iterrows():
        system = catalog.load_system(r["system"])
        m = validation.measurements().set_index("case_id").loc[r["case_id"]]
        peak = system.chip.peak_flop_per_s[vk._dtype(m["dtype"])] / 1e12
        assert 0 < r["predicted"] < peak, r["case_id"]
    bw = cases[cases["phase"].eq("bandwidth")].iloc[0]
    assert bw["predicted"] < catalog.load_system(bw["system"]).chip.hbm_bandwidth_bytes_per_s / 1e9


@pytest.mark.parametrize("text, system", [
    ("H100 SXM (H200 same)", "dgx-h100"), ("H200 SXM", "p5e.48xlarge"), ("B200 SXM", "p6-b200.48xlarge"),
    ("GB200 SXM", "gb200-nvl72"), ("H800 SXM5 (3.35 TB/s HBM3 spec)", "hgx-h800"), ("A100 SXM", "dgx-a100-80gb"),
    ("A100-40GB (1600 Gb/s RoCE)", "dgx-a100-40gb"), ("GH200 SXM (900W, 141GiB HBM3e)", ""), ("TPU v5p", "")])
def test_hardware_text_maps_to_catalogue_systems(text, system):
    name, reason = vk.system_for(text)
    assert name == system and (bool(reason) == (not system))


def test_gemm_prediction_is_tensor_bound_and_scales_with_peak():
    h100 = vk.gemm_cost(catalog.load_system("dgx-h100"), 4096, 4096, 4096, DType.BF16)
    fp8 = vk.gemm_cost(catalog.load_system("dgx-h100"), 4096, 4096, 4096, DType.FP8)
    a100 = vk.gemm_cost(catalog.load_system("dgx-a100-80gb"), 4096, 4096, 4096, DType.BF16)
    assert h100["bound"] == "tensor" and fp8["bound"] == "tensor"
    # twice the peak, at the lower efficiency FP8 matmuls reach (fp8_tensor_efficiency vs tensor_efficiency), and
    # a tile's fixed cost (gemm_tile_fixed_k) is twice as many FP8 K steps: K / (K + k0) at each type
    cal = calibration_for(catalog.load_system("dgx-h100"))
    k0 = cal["gemm_tile_fixed_k"]
    ratio = 2.0 * cal["fp8_tensor_efficiency"] / cal["tensor_efficiency"] * (4096 + k0) / (4096 + 2 * k0)
    assert fp8["achieved_flop_per_s"] / h100["achieved_flop_per_s"] == pytest.approx(ratio, rel=0.02) and ratio < 2.0
    a100_cal = calibration_for(catalog.load_system("dgx-a100-80gb"))
    per_chip = cal["tensor_efficiency"] * 4096 / (4096 + k0) / (a100_cal["tensor_efficiency"] * 4096 / (
        4096 + a100_cal["gemm_tile_fixed_k"]))
    assert h100["achieved_flop_per_s"] / a100["achieved_flop_per_s"] == pytest.approx(989 / 312 * per_chip, rel=0.02)


def test_older_attention_kernels_are_slower_on_hopper_than_on_ampere_relative_to_peak():
    h100, a100 = catalog.load_system("dgx-h100"), catalog.load_system("dgx-a100-80gb")

    def util(system, gen):
        c = vk.flash_attention_cost(system, 4096, 128, DType.BF16, False, gen)
        return c["achieved_flop_per_s"] / system.chip.peak_flop_per_s[DType.BF16]

    assert util(h100, "attention") > util(h100, "flash_attention_2") > util(h100, "flash_attention_1")
    assert util(a100, "flash_attention_2") > 2 * util(h100, "flash_attention_2")  # mma.sync on Hopper


# ---------------------------------------------------------------- materialised (non-flash) attention


def _num(expr, **vals):
    subs = {fm.i_mat: vals.pop("i_mat"), fm.r_att: 1, fm.p_av: 4, fm.x_tr: 0, fm.mt: 1, fm.kt: 1, fm.nt: 1, fm.kb: 1,
            fm.k_d: 0, fm.k_s: 0, fm.g_ref: 1, fm.r_abw: 1}
    subs.update({sp.Symbol(k, positive=True) if k not in ("ba",) else fm.ba: v for k, v in vals.items()})
    return float(sp.sympify(expr).subs(subs))


def test_materialised_attention_traffic_by_hand():
    """B T = 4 queries, 2 heads, causal mean 2.5 keys of 4: the unfused path moves the full 4 x 4
    matrix per head: forward reads (2 + d) n b, writes (2 + d) n b + d n; backward reads
    ((5 + d) b + d) n, writes (2 + d) n b; flash attention (i_mat = 0) moves none of it."""
    args = (4, 2, 2, 2.5, 4, 8, 8)
    kw = dict(b_q=2, b_kv_elem=2, s_full=4, dropout=1)
    n = 4 * 2 * 4  # full score elements
    fwd, bwd = fm.attention(*args, **kw), fm.attention_backward(*args, **kw)
    flash_fwd = fm.attention(*args, b_q=2, b_kv_elem=2)
    base_r = _num(flash_fwd.read, i_mat=0)
    assert _num(fwd.read, i_mat=1) - base_r == 3 * n * 2
    assert _num(fwd.write, i_mat=1) - _num(flash_fwd.write, i_mat=0) == 3 * n * 2 + n
    assert _num(bwd.read, i_mat=1) - _num(bwd.read, i_mat=0) == (6 * 2 + 1) * n
    assert _num(bwd.write, i_mat=1) - _num(bwd.write, i_mat=0) == 3 * n * 2
    # the GEMMs of the unfused path run over all keys (the mask is applied afterwards)
    assert _num(fwd.tensor_flop, i_mat=1) / _num(fwd.tensor_flop, i_mat=0) == pytest.approx(4 / 2.5)
    # without dropout (inference) the forward is the two-pass S, P traffic
    nodrop = fm.attention(*args, b_q=2, b_kv_elem=2, s_full=4)
    assert _num(nodrop.read, i_mat=1) - base_r == 2 * n * 2


def test_flash_attention_backward_is_the_former_generic_rule():
    """attention_backward with i_mat = 0 equals the FA2-style rule the graph applied before, its tensor work
    issued at r_abw of the forward's efficiency (flash kernels only: the unfused path's GEMMs keep theirs)."""
    args = (64, 4, 2, 32.5, 64, 16, 16)
    w, b = fm.attention(*args), fm.attention_backward(*args)
    assert sp.simplify((b.read - (2 * w.read + w.write)).subs(fm.i_mat, 0)) == 0
    assert sp.simplify((b.write - w.read).subs(fm.i_mat, 0)) == 0
    assert sp.simplify((b.tensor_flop - 2 * w.tensor_flop / fm.r_abw).subs(fm.i_mat, 0)) == 0
    assert sp.simplify((b.tensor_flop - 2 * w.tensor_flop).subs(fm.i_mat, 1)) == 0
    assert sp.simplify((b.vector - (3 * w.exp + w.vector)).subs(fm.i_mat, 0)) == 0


def test_materialised_training_step_is_slower_and_recomputes_no_scores():
    arch = vt._gpt_arch("GPT 1.7B (h=2304, L=24, heads=24, V=51200)")
    system = catalog.load_system("dgx-a100-80gb")

    def step(flash: bool) -> float:
        sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=2048, parallel=Parallelism(dp=8, microbatches=4),
                      recompute=Recompute.FULL, precision=Precision.uniform(DType.FP16), flash_attention=flash)
        return training.train(system, arch, sc, nodes=1)["step_time_s"]

    assert step(False) > 1.2 * step(True)
    ops = graph_for(arch, Phase.TRAIN, Recompute.FULL)
    rec = [o for o in ops if o.name.endswith("_scores") and o.pass_ == Pass.RECOMPUTE]
    assert rec and all(sp.simplify(o.work.flop.subs(fm.i_mat, 1)) == 0 for o in rec)


def test_score_bytes_move_at_the_materialised_ratio_and_flash_has_none():
    """score_io holds exactly the unfused path's score-matrix bytes (forward and backward), is 0 for flash kernels
    (i_mat = 0) and absent from every other operator's time, and the memory time of a materialised forward grows
    by score_io (1/rho - 1) / (B eta_m): halving rho adds one more score_io at eta_m."""
    from perfmodel.model import roofline as rl

    args = (4, 2, 2, 2.5, 4, 8, 8)
    kw = dict(b_q=2, b_kv_elem=2, s_full=4, dropout=1)
    n = 4 * 2 * 4
    fwd, bwd = fm.attention(*args, **kw), fm.attention_backward(*args, **kw)
    assert _num(fwd.score_io, i_mat=1) == (3 * 2 + 3 * 2 + 1) * n
    assert _num(bwd.score_io, i_mat=1) == (6 * 2 + 1 + 3 * 2) * n
    assert _num(fwd.score_io, i_mat=0) == 0 and _num(bwd.score_io, i_mat=0) == 0
    mem = rl.engine_times(fwd)["memory"]
    bw, eta = sp.Symbol("Bhbm", positive=True), sp.Symbol("eta_m", positive=True)

    def t(rho):
        return _num(mem.subs({fm.rho_mat: rho, bw: 1.0, eta: 1.0}), i_mat=1)
    assert t(0.5) - t(1.0) == pytest.approx(_num(fwd.score_io, i_mat=1))
    assert rl.engine_times(fm.matmul(64, 64, 64))["memory"].free_symbols.isdisjoint({fm.rho_mat})


def test_standard_attention_kernel_rows_check_the_measured_ratio():
    """ATT-001..012 (FlashAttention's Appendix E.6 tables, A100 40GB) are the rows the NVIDIA ratio was read from:
    with it each is within 20% and their median error within 5%; at a ratio of 1 (score bytes at streaming
    bandwidth) the 2k forward without dropout (ATT-002) is predicted more than 20% fast."""
    att = validation.run_cases(families=["attention"])
    e = att["error_frac"]
    assert len(att) == 12 and e.notna().all()
    assert e.abs().max() < 0.20 and abs(e.median()) < 0.05
    system = catalog.load_system("dgx-a100-40gb")
    cal = calibration_for(system)
    assert cal.params["materialised_attention_bandwidth_ratio"].status == "measured"
    fast = vk.burst(cal.with_overrides({"materialised_attention_bandwidth_ratio": 1.0}))
    w = fm.attention(16 * 2048, 8, 8, 2048, 16 * 2048, 64, 64, s_full=2048)
    t1 = vk._cost(system, w, DType.FP16, fast, materialised=True)["time_s"]
    assert t1 < 0.8 * 4.32e-3  # ATT-002 measured 4.32 ms


# ---------------------------------------------------------------- training model parameters


def test_attention_kernel_generation_slows_a_long_sequence_step():
    system = catalog.load_system("dgx-h100")
    arch = workload_files.load_workload("mpt-7b")
    sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=8192, parallel=Parallelism(dp=8, zero=3, microbatches=2),
                  recompute=Recompute.FULL, precision=Precision.uniform(DType.BF16))
    t = {g: training.train(system, arch, sc, nodes=1, cal=vt.attention_kernel(system, g))["step_time_s"]
         for g in ("flash_attention_1", "flash_attention_2")}
    t["current"] = training.train(system, arch, sc, nodes=1)["step_time_s"]
    assert t["flash_attention_1"] > t["flash_attention_2"] > t["current"]


def test_contention_charges_hidden_communication():
    system = catalog.load_system("dgx-h100")
    arch = workload_files.load_workload("mpt-13b")
    sc = Scenario(phase=Phase.TRAIN, batch=2, seq_len=2048, parallel=Parallelism(dp=8, zero=3, microbatches=1),
                  precision=Precision.uniform(DType.BF16))
    cal = calibration_for(system).with_overrides({"rank_speed_spread_frac": 0.0})  # the compute alone
    assert cal.params["comm_compute_contention_frac"].status == "measured"
    lo = training.train(system, arch, sc, nodes=1, cal=cal.with_overrides({"comm_compute_contention_frac": 0.0}))
    hi = training.train(system, arch, sc, nodes=1, cal=cal)
    assert lo["dp_comm_exposed_s"] == pytest.approx(hi["dp_comm_exposed_s"])
    assert hi["step_time_s"] - lo["step_time_s"] == pytest.approx(
        cal["comm_compute_contention_frac"] * hi["dp_comm_hidden_s"], rel=1e-6)


def test_attention_efficiency_parameters_are_documented():
    for chip in ("dgx-h100", "dgx-a100-80gb"):
        cal = calibration_for(catalog.load_system(chip))
        for name in ("attention_tensor_efficiency", "flash_attention_2_tensor_efficiency",
                     "flash_attention_1_tensor_efficiency"):
            p = cal.params[name]
            assert 0 < p.value <= cal["tensor_efficiency"] and p.reason
            assert p.status == "assumed" or p.source


def test_development_training_rows_meet_the_issue_bars(cases):
    """Issue 20's bars on the development training rows (21 rows: Megatron-LM 2021, MosaicML, FlashAttention-2):
    median |error| <= 10%, p90 <= 25% and a median signed error within +-5% (measured 5.5% / 11.3% / +4.7% once
    materialised attention's score kernels run at their measured bandwidth; +9.2% before)."""
    e = cases.loc[cases["phase"].eq("train"), "error_frac"].dropna()
    assert len(e) == 21
    assert e.abs().median() <= 0.10 and e.abs().quantile(0.9) <= 0.25
    assert abs(e.median()) <= 0.05
