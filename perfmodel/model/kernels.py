"""Cost of stand-alone kernels (one matmul, one attention block) on a chip.

The same formulas (formulas.py) and roofline (roofline.py) as the full graphs, bound to a
chip's rates and a data-type choice, for questions about one operator: how long does a
4096^3 matmul take in FP8 on Trn2, which engine bounds a flash-attention tile on Trn3.

    kernel_costs(system, {"name": Work, ...}, compute="fp8") -> DataFrame, one row per kernel:
        flop, HBM bytes, busy time per engine, time (pipelined or serial), bound, tensor_util_frac,
        achieved FLOP/s and bytes/s (validation_kernels compares these with published kernels)

Does not: model communication or a whole model (evaluate.py does).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import sympy as sp

from perfmodel.core import symbols as S
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.hardware import System
from perfmodel.model import bindings as bd
from perfmodel.model import formulas as fm
from perfmodel.model import numeric
from perfmodel.model import roofline as rl


@functools.lru_cache(maxsize=512)
def _lambdify(expr: sp.Expr):
    """(symbols, numpy function) of an expression, compiled once per expression."""
    e = sp.sympify(expr)
    syms = sorted(e.free_symbols, key=lambda s: s.name)
    return syms, numeric.lambdify_numeric(syms, e)


def kernel_values(system: System, cal: Calibration, compute, weights=None, activations=DType.BF16,
                  kv_cache=None, materialised: bool = False) -> dict:
    """Symbol values for kernels: hardware rates, assumptions, bytes per element; materialised: attention
    without a flash kernel (i_mat = 1: the score matrix through HBM between its kernels)."""
    weights = compute if weights is None else weights
    kv_cache = activations if kv_cache is None else kv_cache
    vals = bd.hardware_values(system, cal, compute)
    vals.update(bd.conversion_values(system, cal, weights, compute))
    vals.update({S.bw: bytes_per_element(DType.parse(weights)), S.bc: bytes_per_element(DType.parse(compute)),
                 S.ba: bytes_per_element(DType.parse(activations)),
                 S.bkv: bytes_per_element(DType.parse(kv_cache))})
    vals[S.bwe] = vals[S.bw]
    vals[fm.i_mat] = 1.0 if materialised else 0.0
    vals.setdefault(S.Ssram, bd._sram(system))
    vals[fm.q_we] = vals[fm.q_w]
    return vals


def kernel_costs(system: System, works: dict[str, fm.Work], compute, weights=None, activations=DType.BF16,
                 kv_cache=None, cal: Calibration | None = None, overlap: rl.Overlap = rl.Overlap.PIPELINED,
                 include_overhead: bool = False, materialised: bool = False) -> pd.DataFrame:
    """One row per kernel: busy time per engine, total time, bound engine, tensor utilisation."""
    cal = cal or calibration_of(system)
    vals = kernel_values(system, cal, compute, weights, activations, kv_cache, materialised)
    if not include_overhead:
        vals[S.t_ovh] = 0.0
    rows = []
    for name, w in works.items():
        row = {"kernel": name, "system": system.name, "compute_dtype": DType.parse(compute).value}
        busy = {}
        for eng, expr in rl.engine_times(w).items():
            syms, fn = _lambdify(expr)
            busy[eng] = float(fn(*[vals[s] for s in syms])) if syms else float(expr)
            row[f"{eng}_busy_s"] = busy[eng]
        syms, fn = _lambdify(rl.op_time(w, overlap))
        t = float(fn(*[vals[s] for s in syms])) if syms else 0.0
        syms, fn = _lambdify(w.flop)
        flop = float(fn(*[vals[s] for s in syms])) if syms else float(w.flop)
        syms, fn = _lambdify(w.read + w.write)
        nbytes = float(fn(*[vals[s] for s in syms])) if syms else float(w.read + w.write)
        row.update({"flop": flop, "hbm_bytes": nbytes, "time_s": t, "bound": max(busy, key=busy.get),
                    "tensor_util_frac": flop / (t * float(np.asarray(vals[S.Rt]))) if t else 0.0,
                    "achieved_flop_per_s": flop / t if t else 0.0,
                    "achieved_bytes_per_s": nbytes / t if t else 0.0})
        rows.append(row)
    return pd.DataFrame(rows)


_M, _N, _K = sp.symbols("M_gemm N_gemm K_gemm", positive=True)


def matmul_times(system: System, cal: Calibration, m, n, k, compute, overlap: rl.Overlap = rl.Overlap.PIPELINED):
    """Seconds of M x N x K matmuls (arrays of shapes, one compiled formula, no loop per shape) at `compute`,
    operands already in that type (no quantize pass), the per-kernel overhead included."""
    vals = kernel_values(system, cal.with_overrides({"fp8_activation_quantize_passes": 0}), compute,
                         activations=compute)
    vals.update({_M: np.asarray(m, float), _N: np.asarray(n, float), _K: np.asarray(k, float)})
    syms, fn = _lambdify(rl.op_time(fm.matmul(_M, _K, _N), overlap))
    return fn(*[vals[s] for s in syms])


def attention_block(tokens: float, d_model: float, heads: float, kv_heads: float, head_dim: float,
                    context: float = 0.0, causal: bool = True) -> dict[str, fm.Work]:
    """A fused attention layer on one device: QKV projection, flash attention, output projection.

    tokens: query tokens in the block (B T); heads / kv_heads: on this device.
    """
    s_avg = fm.causal_mean_keys(sp.Integer(int(tokens)), sp.Integer(int(context))) if causal else tokens + context
    s_kv = tokens + context
    hp, sp_ = fm.kv_passes(tokens, heads / kv_heads, head_dim, head_dim, S.ba)
    return {
        "qkv_proj": fm.matmul(tokens, d_model, (heads + 2 * kv_heads) * head_dim),
        "flash_attention": fm.attention(tokens, heads, kv_heads, s_avg, s_kv, head_dim, head_dim, hbm_passes=hp,
                                        sram_passes=sp_),
        "o_proj": fm.matmul(tokens, heads * head_dim, d_model),
    }


def block_utilisation(costs: pd.DataFrame) -> float:
    """Tensor utilisation of a block run back to back: sum of useful FLOPs / (sum of times x rate)."""
    rate = (costs["flop"] / (costs["tensor_util_frac"] * costs["time_s"])).iloc[0]
    return float(costs["flop"].sum() / (costs["time_s"].sum() * rate))
