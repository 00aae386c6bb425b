"""The formulas as LaTeX: operator families (generic letters) and a graph's instances.

    family_table()            one row per formula family (matmul, attention, norm, ...):
                              FLOPs, HBM bytes and engine work in generic letters (M, K, N, ...)
    op_formula_table(arch, phase)
                              one row per operator of a model's graph: FLOPs, bytes and time
                              in the model's letters (D, H, K, d_h, B, T, t, ...)
    symbol_table()            every symbol: meaning and unit

These are the same sympy expressions the evaluator lambdifies (nothing re-typed here).
Does not: evaluate numbers.
"""

from __future__ import annotations

import pandas as pd
import sympy as sp

from perfmodel.core.scenario import Phase
from perfmodel.core.symbols import C0, LATEX_NAMES, Kc, ktop, latex, table
from perfmodel.core.workload import ModelArch
from perfmodel.model import attention_variant_formulas as av
from perfmodel.model import formulas as fm
from perfmodel.model.graph import build as gr
from perfmodel.model import ops
from perfmodel.model import roofline as rl
from perfmodel.model.ops import OpKind
from perfmodel.model.roofline import Overlap, engine_times, op_time

_M, _K, _N, _n, _S = sp.symbols("M K N n S_avg", positive=True)
_h, _kvh, _dqk, _dv, _Skv = sp.symbols("h h_kv d_qk d_v S_kv", positive=True)
_m, _hk, _dk, _C, _T = sp.symbols("m h_k d_k C T", positive=True)  # sequences, key heads, key width, channels

_EXTRA_LATEX = {fm.q_a: "q_a", fm.q_w: "q_w", fm.q_we: "q_{we}", fm.x_tr: "x_{tr}", fm.p_av: "p_{av}",
                fm.p_sm: "p_{sm}", fm.qb: "q_b", ops.Lfa: "L_{full}", ops.Lsw: "L_{sw}", ops.Ld: "L_{dense}",
                ops.Lla: "L_{lin}", av.cg: "c_{gdn}", _m: "m", _hk: "h_k", _dk: "d_k", _C: "C",
                ops.Lm: "L_{moe}",
                ops.da: "d_a", ops.nmb: "m", ops.i_a2a: r"\mathbb{1}_{a2a}", ops.i_ag: r"\mathbb{1}_{ag}",
                ops.i_ep: r"\mathbb{1}_{ep}", ops.zs: "z", ops.zsd: "z_d", ops.bg: "b_g",
                ops.rho_r: r"\rho_r", ops.rho_w: r"\rho_w", ops.n_b: "n_b",
                ops.r_lo: "r", ops.i_fr: r"\mathbb{1}_{frozen}", ops.f_rc: "f_{rc}",
                ops.bo_r: "b_{o,r}", ops.bo_w: "b_{o,w}", ops.dp_: "d_p", _S: r"\bar{S}", _Skv: "S_{kv}",
                _dqk: "d_{qk}", _kvh: "h_{kv}", rl.Rb: "R_{b16}", rl.Rxv: "r_v", rl.Rxs: "r_s", rl.hv: "h_v",
                fm.i_mat: r"\mathbb{1}_{mat}", ops.i_sp: r"\mathbb{1}_{sp}", ops.i_sg: r"\mathbb{1}_{sg}",
                ops.i_pp: r"\mathbb{1}_{pp}", fm.rho_mat: r"\rho_{mat}",
                ops.i_cp: r"\mathbb{1}_{cp}", ops.vpp: "v", ops.bwt: "b_{wt}",
                **{z: rf"\mathbb{{1}}_{{z{k}}}" for k, z in enumerate((ops.i_z0, ops.i_z1, ops.i_z2, ops.i_z3))}}


def _tex(expr) -> str:
    return sp.latex(sp.sympify(expr), symbol_names={**LATEX_NAMES, **_EXTRA_LATEX}, mul_symbol="dot")


def _families() -> list[tuple[str, str, fm.Work]]:
    return [
        ("matmul", "C[M,N] = A[M,K] W[K,N] (weights: W is a parameter)", fm.matmul(_M, _K, _N)),
        ("matmul (activations)", "C[M,N] = A[M,K] B[K,N], both activations (attention-free batched matmul)",
         fm.matmul(_M, _K, _N, weights=False)),
        ("attention", "flash attention over n query tokens, h heads sharing h_kv KV heads",
         fm.attention(_n, _h, _kvh, _S, _Skv, _dqk, _dv)),
        ("gated_delta_rule (decode)", "Gated DeltaNet recurrence: n tokens of m sequences, h_k key and h heads of "
         "d_k x d_v state", av.gated_delta_rule_decode(_n, _m, _hk, _h, _dk, _dv)),
        ("gated_delta_rule (chunked)", "Gated DeltaNet in chunks of c_gdn tokens (prefill, training); C_0 tokens "
         "of context", av.gated_delta_rule_chunked(_n, _m, _hk, _h, _dk, _dv, C0)),
        ("causal_conv", "depthwise causal conv of K_c taps and SiLU over C channels (Gated DeltaNet q, k, v)",
         av.causal_conv(_n, _m, _C, Kc)),
        ("lightning_indexer", "DeepSeek Sparse Attention indexer: n queries, h heads of d_k score S_avg of S_kv "
         "held keys, k_top kept", av.lightning_indexer(_n, _h, _dk, _S, _Skv, ktop)),
        ("sparse attention", "MLA over the indexer's top-k keys (multi-query form, one latent KV head of d_qk): "
         "n = B T queries, each attending (1/T) sum_i min(C_0 + i, k_top) gathered keys",
         fm.attention(_n, _h, 1, av.sparse_mean_keys(_T, C0, ktop), _n * av.sparse_mean_keys(_T, C0, ktop), _dqk, _dv,
                      kv_width=_dqk)),
        ("rmsnorm", "RMSNorm over n rows of width K", fm.norm(_n, _K, "rmsnorm")),
        ("layernorm", "LayerNorm over n rows of width K", fm.norm(_n, _K, "layernorm")),
        ("elementwise", "one vector pass over n elements (residual add, RoPE pass, ...)",
         fm.elementwise(_n, vector=1)),
        ("adam_step", "AdamW update of n parameters", fm.adam_step(_n, ops.bo_r, ops.bo_w)),
        ("low_precision_cast", "training's quantization of n activation (or output-gradient) elements before an "
         "8-bit GEMM: c_8 copies, 1 + r_8 reads (a layer's weights: the same at b_w, once per step)",
         fm.low_precision_cast(_n)),
    ]


def family_table() -> pd.DataFrame:
    rows = []
    for name, meaning, w in _families():
        et = engine_times(w)
        rows.append({
            "formula": name, "meaning": meaning, "flop_latex": _tex(w.flop),
            "tensor_flop_latex": _tex(w.tensor_flop), "hbm_bytes_latex": _tex(w.read + w.write),
            "vector_latex": _tex(w.vector), "exp_latex": _tex(w.exp),
            "time_pipelined_latex": _tex(op_time(w, Overlap.PIPELINED)),
            "time_serial_latex": _tex(op_time(w, Overlap.SERIAL)),
            "tensor_time_latex": _tex(et["tensor"]), "memory_time_latex": _tex(et["memory"]),
        })
    return pd.DataFrame(rows)


def op_formula_table(arch: ModelArch, phase: Phase) -> pd.DataFrame:
    """Per-operator formulas of `arch`'s graph for `phase`, in model letters."""
    ops = gr.graph_for(arch, Phase(phase))
    rows = []
    for op in ops:
        if op.kind == OpKind.COLLECTIVE:
            rows.append({"op": op.name, "pass": op.pass_.value, "kind": op.kind.value, "count_latex": _tex(op.count),
                         "flop_latex": "0", "hbm_bytes_latex": "0",
                         "time_latex": rf"\text{{{op.comm.collective.value} of }} {_tex(op.comm.nbytes)}"
                                       rf"\ \text{{bytes over the {op.comm.group} group}}"})
            continue
        rows.append({"op": op.name, "pass": op.pass_.value, "kind": op.kind.value, "count_latex": _tex(op.count),
                     "flop_latex": _tex(op.work.flop), "hbm_bytes_latex": _tex(op.work.read + op.work.write),
                     "time_latex": _tex(op_time(op.work))})
    return pd.DataFrame(rows)


def symbol_table() -> pd.DataFrame:
    rows = [{"symbol": name, "latex": latex(s.symbol), "meaning": s.meaning, "unit": s.unit}
            for name, s in table().items()]
    extra = [(fm.q_a, "vector passes per activation element to quantize it for the tensor engine"),
             (fm.q_w, "vector passes per weight element to dequantize it"),
             (fm.q_we, "vector passes per routed-expert weight element to dequantize it"),
             (fm.x_tr, "1 if attention transposes run on the tensor engine (Trn1/Trn2), 0 if hidden (Trn3, GPUs)"),
             (fm.p_av, "vector passes per attention score (row max, rescale)"),
             (fm.p_sm, "vector passes per score element of an unfused (materialised) softmax"),
             (fm.qb, "flash-attention query block (tokens per KV sweep)"),
             (ops.da, "attention data parallel inside a replica"), (ops.nmb, "micro-batches per training step"),
             (ops.Lfa, "full-attention layers per stage"), (ops.Lsw, "sliding-window layers per stage"),
             (ops.Lla, "Gated DeltaNet (linear-attention) layers per stage"),
             (av.cg, "Gated DeltaNet chunk of the chunked kernels (tokens)"),
             (ops.Ld, "dense-MLP layers per stage"), (ops.Lm, "MoE layers per stage")]
    rows += [{"symbol": s.name, "latex": _tex(s), "meaning": m, "unit": "1"} for s, m in extra]
    return pd.DataFrame(rows)


def symbolic_elasticity(expr: sp.Expr, symbol: sp.Symbol) -> sp.Expr:
    """d ln(expr) / d ln(symbol) = (symbol / expr) d expr / d symbol, from the sympy formula itself.

    Piecewise regions of max() differentiate to the active term (sympy's Heaviside), so for an
    operator bound by HBM the elasticity of its time to HBM bandwidth is -1 and to the tensor
    rate 0, and the other way round when it is compute-bound.
    """
    return sp.simplify(sp.diff(expr, symbol) * symbol / expr)


def op_time_elasticities(arch: ModelArch, phase: Phase, op_name: str, symbols: list[sp.Symbol],
                         values: dict) -> dict[str, float]:
    """Elasticity of one operator's time to each symbol, evaluated at `values` (symbol -> number)."""
    op = next(o for o in gr.graph_for(arch, Phase(phase)) if o.name == op_name)
    t = op_time(op.work)
    out = {}
    for s in symbols:
        e = sp.diff(t, s) * s / t
        out[s.name] = float(e.subs(values).replace(sp.Heaviside, lambda x, *a: sp.Piecewise((1, x > 0), (0, True)))
                            .evalf(subs=values))
    return out
