"""Multi-engine roofline: time of an operator on each engine and under an overlap policy.

Per operator instance (symbols.py letters; rates whole-chip):

    t_tensor = W_t / (R_t eta_t) + W_t16 / (R_b16 eta_t)         tensor engine (padded FLOPs)
    t_vector = W_v / (R_v eta_v) + x_v W_exp / (R_exp eta_v)      vector engine (+ exp if it runs there)
    t_scalar = W_s / (R_s eta_v) + (1 - x_v) W_exp / (R_exp eta_v)
    t_gpsimd = W_g / (R_g eta_v)
    t_memory = (bytes_read + bytes_written) / (BW_hbm eta_m)      DMA / HBM

    pipelined: t = max(t_tensor, t_vector, t_scalar, t_gpsimd, t_memory) + t_ovh
    serial:    t = t_tensor + t_vector + t_scalar + t_gpsimd + t_memory + t_ovh

The bound is the engine with the largest term. Both policies are the scaling book's
T_lower / T_upper; reports can show both.

Does not: price communication (collectives.py) or bind numbers (evaluate.py).
"""

from __future__ import annotations

from enum import Enum

import sympy as sp

from perfmodel.formulas import Work
from perfmodel.symbols import Bhbm, Rg, Rs, Rt, Rv, Rx, eta_m, eta_t, eta_v, t_ovh

Rb = sp.Symbol("Rb", positive=True)  # tensor-engine rate at BF16 (transposes)
xv = sp.Symbol("xv", nonnegative=True)  # 1 if exp runs on the vector engine (faster exp there), else scalar

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "memory")


class Overlap(str, Enum):
    PIPELINED = "pipelined"  # engines and DMA overlap: the slowest bounds the operator
    SERIAL = "serial"  # nothing overlaps: the sum


def engine_times(w: Work) -> dict[str, sp.Expr]:
    """Time on each engine for one instance of an operator's work (seconds)."""
    return {
        "tensor": w.tensor_flop / (Rt * eta_t) + w.tensor_b16_flop / (Rb * eta_t),
        "vector": w.vector / (Rv * eta_v) + xv * w.exp / (Rx * eta_v),
        "scalar": w.scalar / (Rs * eta_v) + (1 - xv) * w.exp / (Rx * eta_v),
        "gpsimd": w.gpsimd / (Rg * eta_v),
        "memory": (w.read + w.write) / (Bhbm * eta_m),
    }


def op_time(w: Work, overlap: Overlap = Overlap.PIPELINED) -> sp.Expr:
    """Time of one operator instance under `overlap` (seconds), including the fixed overhead."""
    times = [e for e in engine_times(w).values() if e != 0]
    if not times:
        return sp.Integer(0)
    core = sp.Max(*times) if Overlap(overlap) == Overlap.PIPELINED else sp.Add(*times)
    return core + t_ovh
