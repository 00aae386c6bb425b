"""Each formula against a hand-computed case (numbers small enough to check on paper)."""

import pytest
import sympy as sp

from perfmodel.core import symbols as S
from perfmodel.model import formulas as fm
from perfmodel.model import roofline as rl

HW = {S.Rt: 100.0, rl.Rb: 100.0, S.Rv: 10.0, S.Rs: 5.0, rl.Rxv: 0.0, rl.Rxs: 5.0, rl.hv: 0.0, S.Rg: 10.0,
      S.Bhbm: 50.0, S.eta_t: 1.0, S.eta_m: 1.0, S.eta_v: 1.0, S.t_ovh: 0.0, S.mt: 1.0, S.kt: 1.0, S.kb: 1.0,
      S.nt: 1.0, S.ba: 2.0, S.bw: 1.0, S.bkv: 2.0, fm.q_a: 0.0, fm.q_w: 0.0, fm.x_tr: 0.0, fm.p_av: 1.0, fm.qb: 4.0,
      fm.i_mat: 0.0, fm.k0: 0.0, fm.r_abw: 1.0}


def ev(expr, **extra):
    vals = {**HW, **{S.by_name(k) if k in S.table() else sp.Symbol(k): v for k, v in extra.items()}}
    return float(sp.sympify(expr).subs(vals))


def test_matmul_by_hand():
    w = fm.matmul(4, 8, 16)  # C[4,16] = A[4,8] W[8,16]
    assert ev(w.flop) == 2 * 4 * 8 * 16  # 1024 FLOP
    assert ev(w.read) == 4 * 8 * 2 + 8 * 16 * 1  # activations bf16, weights 1 B
    assert ev(w.write) == 4 * 16 * 2
    assert ev(w.params) == 8 * 16
    # pipelined time = max(1024 / 100, (64 + 128 + 128) / 50) = max(10.24, 6.4)
    assert ev(rl.op_time(w)) == pytest.approx(10.24)
    assert ev(rl.op_time(w, rl.Overlap.SERIAL)) == pytest.approx(10.24 + 6.4)


def test_a_tiles_fixed_cost_is_extra_k_steps_by_hand():
    w = fm.matmul(4, 8, 16)
    # k0 = 8: each output tile pays 8 more K steps: 2 * 4 * (8 + 8) * 16 = 2048 issued for 1024 useful,
    # i.e. efficiency K / (K + k0) = 1/2; the useful FLOPs do not change
    assert ev(w.tensor_flop.subs(fm.k0, 8)) == 2048 and ev(w.flop) == 1024
    assert ev(rl.op_time(w).subs(fm.k0, 8)) == pytest.approx(20.48)


def test_a_low_precision_cast_reads_the_activation_and_writes_its_copies_by_hand():
    w = fm.low_precision_cast(sp.Integer(100))
    # 100 BF16 elements read (twice with an amax pass), written as 2 one-byte copies: 200 (or 400) + 200 bytes
    vals = {S.ba: 2.0, S.bc: 1.0, fm.c8: 2.0}
    assert float(w.read.subs({**vals, fm.r8: 0})) == 200 and float(w.write.subs(vals)) == 200
    assert float(w.read.subs({**vals, fm.r8: 1})) == 400 and float(w.vector) == 100


def test_matmul_tile_padding_by_hand():
    w = fm.matmul(3, 8, 16)
    # with m_t = 4: the 3-row side pads to 4: 2 * 4 * 8 * 16 = 1024 issued for 768 useful
    assert ev(w.tensor_flop.subs(S.mt, 4)) == 1024 and ev(w.flop) == 768


def test_matmul_bias_and_dequantize():
    w = fm.matmul(4, 8, 16, bias=True)
    assert ev(w.params) == 8 * 16 + 16
    assert ev(w.vector) == 4 * 16  # bias add
    w = fm.matmul(4, 8, 16)
    assert ev(w.vector.subs({fm.q_a: 2, fm.q_w: 1})) == 2 * 4 * 8 + 8 * 16


def test_attention_by_hand():
    # 2 query tokens, 4 heads sharing 2 KV heads, 3 keys on average, 5 keys held, d_qk = d_v = 8
    w = fm.attention(2, 4, 2, 3, 5, 8, 8)
    scores = 2 * 4 * 3
    assert ev(w.flop) == 2 * scores * (8 + 8)  # 768
    assert ev(w.exp) == scores and ev(w.vector) == scores  # p_av = 1
    assert ev(w.read) == 2 * 4 * 8 * 2 + 5 * 2 * 16 * 2  # Q + K,V (5 tokens x 2 KV heads x 16 x 2 B)
    assert ev(w.write) == 2 * 4 * 8 * 2
    # the vector engine has no exp here: exp runs on the scalar engine (24 / 5 = 4.8)
    assert ev(rl.vector_scalar_makespan(w)) == pytest.approx(max(24 / 10, 24 / 5))


def test_exp_split_between_engines_by_hand():
    w = fm.Work(vector=10, exp=30)  # a = 10/10 = 1, b = 0, r_v = 10, r_s = 5
    vals = {rl.Rxv: 10.0, rl.hv: 1.0}
    # optimal split: both finish at (a r_v + b r_s + E) / (r_v + r_s) = (10 + 0 + 30) / 15
    assert ev(rl.vector_scalar_makespan(w).subs(vals)) == pytest.approx(40 / 15)


def test_causal_mean_keys_and_window():
    assert ev(fm.causal_mean_keys(S.T, S.C0), T=7, C0=0) == 4  # (T+1)/2
    assert ev(fm.causal_mean_keys(S.T, S.C0, 10), T=1, C0=99) == 10  # decode capped by a window of 10
    assert ev(fm.kv_length(S.T, S.C0), T=1, C0=99) == 100


def test_norms_by_hand():
    assert ev(fm.norm(4, 8, "rmsnorm").vector) == 3 * 32
    assert ev(fm.norm(4, 8, "layernorm").vector) == 5 * 32
    assert ev(fm.norm(4, 8, "layernorm").params) == 16


def test_experts_touched():
    assert ev(fm.experts_touched(1, 8, 2)) == pytest.approx(2.0)  # one token touches exactly k experts
    assert ev(fm.experts_touched(10_000, 8, 2)) == pytest.approx(8.0)  # many tokens touch all


def test_adam_step_bytes():
    w = fm.adam_step(10, 14, 14)
    assert ev(w.read) == 140 and ev(w.write) == 140 and ev(w.vector) == 120


def test_materialised_attention_adds_score_traffic():
    w = fm.attention(2, 4, 2, 3, 5, 8, 8)
    scores = 2 * 4 * 3
    flash = ev(w.read) + ev(w.write)
    assert ev((w.read + w.write).subs(fm.i_mat, 1)) - flash == 4 * scores * 2  # S and P written and read, b_a = 2


def test_materialised_softmax_runs_over_the_whole_matrix():
    """Unfused softmax: exp and p_sm vector passes over every element of the T x S_full matrix
    (masked ones included); flash: exp and p_av passes over the causal scores only."""
    tq, h, s_avg, s_full = 4, 2, 2.5, 4  # 4 causal queries: mean 2.5 keys of 4
    w = fm.attention(tq, h, h, s_avg, s_full, 8, 8, s_full=s_full)
    n_full, causal = tq * h * s_full, tq * h * s_avg
    assert ev(w.exp) == causal and ev(w.vector) == 1.0 * causal  # p_av = 1
    assert ev(w.exp.subs(fm.i_mat, 1)) == n_full
    assert ev(w.vector.subs({fm.i_mat: 1, fm.p_sm: 5})) == 5 * n_full
    # the backward's 3 softmax-backward passes cover the whole matrix too
    b = fm.attention_backward(tq, h, h, s_avg, s_full, 8, 8, s_full=s_full)
    assert ev(b.vector.subs(fm.i_mat, 1)) == 3 * n_full and ev(b.vector) == 4 * causal


def test_formulas_differentiate_symbolically():
    """The same sympy formula gives the sensitivity: memory-bound time scales as 1 / BW_hbm."""
    from perfmodel.model.formula_catalog import symbolic_elasticity
    w = fm.matmul(4, 8, 16)
    t_mem = rl.engine_times(w)["memory"]
    assert symbolic_elasticity(t_mem, S.Bhbm) == -1
    t_tensor = rl.engine_times(w)["tensor"]
    assert symbolic_elasticity(t_tensor, S.Rt) == -1 and symbolic_elasticity(t_tensor, S.Bhbm) == 0


def test_op_time_elasticity_follows_the_bound():
    from perfmodel import catalog
    from perfmodel.catalog import workload_files
    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.core.scenario import Phase
    from perfmodel.model import bindings as bd
    from perfmodel.model.formula_catalog import op_time_elasticities
    arch = workload_files.load_workload("llama-3-8b")
    system = catalog.load_system("p5.48xlarge")
    cal = calibration_for(system)
    for batch, bound_symbol in ((1, S.Bhbm), (4096, S.Rt)):
        vals = bd.bind(system, arch, cal, bd.Knobs(phase=Phase.PREFILL, batch=batch, seq_len=1 if batch == 1 else 1))
        vals = {k: float(v) for k, v in vals.items()}
        vals[S.t_ovh] = 0.0
        el = op_time_elasticities(arch, Phase.PREFILL, "mlp.up", [S.Bhbm, S.Rt], vals)
        other = S.Rt if bound_symbol == S.Bhbm else S.Bhbm
        assert el[bound_symbol.name] == pytest.approx(-1.0) and el[other.name] == pytest.approx(0.0)
