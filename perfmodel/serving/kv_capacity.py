"""KV-cache capacity of a serving replica: bytes per sequence and how many sequences fit.

    kv_bytes_per_sequence   whole-model cache of one sequence (softmax layers' KV and index keys, linear
                            layers' fixed state): what a disaggregated prefill hands to the decode pool
    kv_fit                  (fits, bytes used per device, max concurrency per replica) at a context, from
                            one memory.footprint at batch C (KV and activations linear in the batch)

Does not: price time (steady_state.py).
"""

from __future__ import annotations

import numpy as np

from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Phase
from perfmodel.core.workload import ModelArch
from perfmodel.model import memory


def kv_bytes_per_sequence(arch: ModelArch, tokens, kv_dtype: DType) -> np.ndarray:
    """Whole-model cache bytes of one sequence of `tokens` tokens (all layers, all KV heads): the KV (and
    index keys) of the softmax-attention layers plus the fixed recurrent state of linear-attention layers
    (what a disaggregated prefill hands to the decode pool)."""
    return memory.cache_bytes_per_sequence(arch, tokens, 1.0, bytes_per_element(kv_dtype),
                                           bytes_per_element(DType.BF16))


def kv_fit(system: System, arch: ModelArch, grid, context, cal: Calibration | None = None,
           memory_fraction=None):
    """(fits, bytes used per device, max concurrency per replica) for decode at `context` tokens of the
    configurations of `grid` (a steady_state.Grid: its concurrency, plan and data types).

    One `memory.footprint` at batch C: KV cache and the step's activations are linear in the
    batch, everything else is fixed, so max C = floor((capacity - fixed) / per-sequence bytes),
    rounded down to a multiple of p x d_a. `memory_fraction` (a serving engine's allotment, e.g.
    vLLM's gpu_memory_utilization) makes the capacity that share of HBM instead of HBM less the
    runtime's reserve.
    """
    cal = cal or calibration_of(system)
    C = grid.concurrency
    kn = grid.knobs(Phase.DECODE, C, 1, np.maximum(np.asarray(context, dtype=float) - 1, 0))
    f = memory.footprint(system, arch, kn, cal)
    per_seq = (f.components["kv_cache"] + f.components["activations"]) / C
    fixed = f.total_bytes - per_seq * C
    capacity = f.capacity_bytes if memory_fraction is None else (
        np.asarray(memory_fraction, dtype=float) * system.chip.hbm_capacity_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        cmax = np.where(per_seq > 0, np.floor((capacity - fixed) / np.where(per_seq > 0, per_seq, 1.0)),
                        np.inf)
    step = grid.pp * grid.da
    cmax = np.where(np.isfinite(cmax), np.floor(np.maximum(cmax, 0) / step) * step, cmax)
    return np.asarray(f.fits), np.asarray(f.total_bytes, dtype=float), cmax
