"""How a device's MoE kernel runs its routed experts: the rows it computes, the expert weights it loads and how
many times it issues each projection a layer, against the grouped GEMMs graph/build.py prices by default.

    kernel block B = 0   grouped GEMMs over the routed token-expert pairs (vLLM, TensorRT-LLM, SGLang, the
                         NKI MoE kernels): rho_r = rho_w = n_b = 1
    kernel block B > 0   NxD's expert MLPs (neuronx-distributed, modules/moe/expert_mlps_v2.py, ExpertMLPsV2.forward;
                         the Neuron serving stacks built on it, hardware_specs/stacks/neuron.toml moe_kernel_block):
      T k / E < 1 (its selective-loading threshold, 1.0; a decode step or a speculation's few tokens):
                         only the chosen experts (selective loading): as grouped GEMMs
      token generation (decode), T k / E >= 1:
                         every local expert on every token: rows T E_l, weights E_l, one batched matmul
      context encoding, T k < B: every local expert on every token (forward_all_experts)
      context encoding, T k >= B: blockwise, at its compiled worst case (static shapes):
                         N = min(ceil((T k - (E_l - 1)) / B) + E_l - 1, T k) blocks of B rows, each block one
                         expert's weights and one instance of each projection (its fixed cost)
    with T the step's tokens on the replica (N_r), E_l = E / e the rank's experts, and against the grouped
    GEMMs' rows u_r N_r k / e and experts touched E (1 - (1 - k/E)^(u_r N_r)) / e (graph/build._grouped_experts):
        rho_r = rows / (u_r N_r k / e),   rho_w = weight loads / experts touched,   n_b = instances a layer

Does not: build the graph (graph/build.py uses the three symbols) or choose the block size (the stack does).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from perfmodel.core.scenario import Phase
from perfmodel.core.symbols import E, T, B, cp, ep, k, u
from perfmodel.model import formulas as fm
from perfmodel.model import ops
from perfmodel.model.numeric import lambdify_numeric
from perfmodel.model.scenario_knobs import num


@lru_cache(maxsize=1)
def _touched():
    """formulas.experts_touched (written once, there) as a numpy function of (tokens, E, k)."""
    return lambdify_numeric((T, E, k), fm.experts_touched(T, E, k))


def values(kn, vals: dict) -> dict:
    """{rho_r, rho_w, n_b} for the knobs' kernel block (module doc); `vals` the bound symbols (B, T, cp, E, k, e, u,
    1_ep). All 1, as Python floats, where the block is 0 (the grouped GEMMs: the graph's own values, bit for bit)."""
    block = num(kn.moe_kernel_block)
    if isinstance(block, float) and block == 0.0:
        return {ops.rho_r: 1.0, ops.rho_w: 1.0, ops.n_b: 1.0}
    tokens = num(vals[B]) * num(vals[T]) / num(vals[cp])
    experts, top, ranks = num(vals[E]), num(vals[k]), num(vals[ep])
    u_r = 1.0 + (num(vals[u]) - 1.0) * num(vals[ops.i_ep])
    local = experts / ranks
    rows_g = u_r * tokens * top / ranks
    touched_g = _touched()(u_r * tokens, experts, top) / ranks
    b = np.maximum(block, 1.0)
    selective = np.asarray(tokens * top / experts < 1.0)  # numpy booleans: ~ on a Python bool is not "not"
    if Phase(kn.phase) == Phase.DECODE:  # a decode step is never blockwise
        every, blocks = ~selective, 1.0
    else:
        every = ~selective & np.asarray(tokens * top < b)
        blocks = np.minimum(np.ceil((tokens * top - (local - 1.0)) / b) + local - 1.0, tokens * top)
    padded = ~selective & ~every
    rows = np.where(every, tokens * local, np.where(padded, blocks * b, rows_g))
    loads = np.where(every, local, np.where(padded, blocks, touched_g))
    n = np.where(padded, blocks, 1.0)
    on = np.asarray(block) > 0
    return {ops.rho_r: np.where(on, rows / rows_g, 1.0), ops.rho_w: np.where(on, loads / touched_g, 1.0),
            ops.n_b: np.where(on, n, 1.0)}
