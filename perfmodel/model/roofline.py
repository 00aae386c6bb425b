"""Multi-engine roofline: time of an operator on each engine and under an overlap policy.

Per operator instance (symbols.py letters; rates whole-chip):

    t_tensor = W_t / (R_t eta_t) + W_t16 / (R_b16 eta_t)         tensor engine (padded FLOPs; eta_t is
                                                                  the compute type's: bindings.tensor_efficiency)
    a        = W_v / (R_v eta_v),  b = W_s / (R_s eta_v)          vector / scalar own work
    t_vs     = max(a, b, (a r_v + b r_s + W_exp / eta_v) / (r_v + r_s))
               exp work is split between the engines that have an exp instruction (exp rates
               r_v on the vector engine: Trn3's fast exp; r_s on the scalar engine / GPU MUFU)
               so that they finish together: the optimal makespan of the two engines
    t_gpsimd = W_g / (R_g eta_v)
    t_memory = (bytes_read + bytes_written + S_io (1/rho_mat - 1)) / (BW_hbm eta_m)      DMA / HBM
               (S_io: the bytes of a materialised attention score matrix among them, moved by kernels that
               reach rho_mat of the bandwidth streaming kernels do)

    pipelined: t = max(t_tensor, t_vs, t_gpsimd, t_memory) + t_ovh
    serial:    t = t_tensor + a + b + W_exp / (max(r_v, r_s) eta_v) + t_gpsimd + t_memory + t_ovh

Busy time per engine (for utilisation) attributes exp at the combined rate to each engine
that has an exp instruction (h_v, h_s = 1 or 0). The bound is the busiest engine. Both
policies are the scaling book's T_lower / T_upper; reports can show both.

Does not: price communication (collectives.py) or bind numbers (evaluate.py).
"""

from __future__ import annotations

from enum import Enum

import sympy as sp

from perfmodel.core.symbols import Bhbm, Rg, Rs, Rt, Rv, eta_m, eta_t, eta_v, t_ovh
from perfmodel.model.formulas import Work, rho_mat
from perfmodel.model.numeric import vmax  # an unevaluated maximum: sympy's Max costs 0.1 s per operator

Rb = sp.Symbol("Rb", positive=True)  # tensor-engine rate at BF16 (transposes)
Rxv = sp.Symbol("Rxv", nonnegative=True)  # exp rate of the vector engine (0 if it has no exp instruction)
Rxs = sp.Symbol("Rxs", positive=True)  # exp rate of the scalar engine (activation function unit / MUFU)
hv = sp.Symbol("hv", nonnegative=True)  # 1 if the vector engine has an exp instruction, else 0

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "memory")


class Overlap(str, Enum):
    PIPELINED = "pipelined"  # engines and DMA overlap: the slowest bounds the operator
    SERIAL = "serial"  # nothing overlaps: the sum


def engine_times(w: Work) -> dict[str, sp.Expr]:
    """Busy time on each engine for one instance of an operator's work (seconds)."""
    exp_share = w.exp / ((Rxv + Rxs) * eta_v)
    return {
        "tensor": w.tensor_flop / (Rt * eta_t) + w.tensor_b16_flop / (Rb * eta_t),
        "vector": w.vector / (Rv * eta_v) + hv * exp_share,
        "scalar": w.scalar / (Rs * eta_v) + exp_share,
        "gpsimd": w.gpsimd / (Rg * eta_v),
        "memory": (w.read + w.write + _score_surcharge(w)) / (Bhbm * eta_m),
    }


def _score_surcharge(w: Work) -> sp.Expr:
    """Extra bytes-at-eta_m that a materialised score matrix's slower kernels cost (0 for every other operator)."""
    return 0 if w.score_io == 0 else w.score_io * (1 / rho_mat - 1)


def vector_scalar_makespan(w: Work) -> sp.Expr:
    """Time for the vector and scalar engines to finish their work with exp split optimally."""
    a = w.vector / (Rv * eta_v)
    b = w.scalar / (Rs * eta_v)
    if w.exp == 0:
        return vmax(a, b)
    return vmax(a, b, (a * Rxv + b * Rxs + w.exp / eta_v) / (Rxv + Rxs))


def op_time(w: Work, overlap: Overlap = Overlap.PIPELINED) -> sp.Expr:
    """Time of one operator instance under `overlap` (seconds), including the fixed overhead."""
    et = engine_times(w)
    if all(e == 0 for e in et.values()):
        return sp.Integer(0)
    if Overlap(overlap) == Overlap.PIPELINED:
        terms = [et["tensor"], vector_scalar_makespan(w), et["gpsimd"], et["memory"]]
        core = vmax(*[x for x in terms if x != 0])
    else:
        exp_alone = w.exp / (vmax(Rxv, Rxs) * eta_v)
        core = et["tensor"] + w.vector / (Rv * eta_v) + w.scalar / (Rs * eta_v) + exp_alone + et["gpsimd"] + et["memory"]
    return core + t_ovh
