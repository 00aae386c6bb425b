"""Operator sums: the per-configuration totals of one evaluation's per-operator rows (step time, FLOPs, bytes,
engine busy times), summed over operators in operator order as summing [op, configuration] arrays would.

    OpRows                    one evaluation's per-operator arrays at their own shapes (evaluate.run_rows)
    opsum(terms, shape)       a sum over operators, bit for bit as np.stack(terms).sum(axis=0)
    summarize_rows(...)       the summary metrics of evaluate's docstring, per configuration
    peak_flop_per_s(...)      the chip's peak for each compute type

Does not: evaluate operators (evaluate.py) or price collectives (comm/).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.core import elementwise as ew
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.object_cache import ObjectCache
from perfmodel.core.scenario import Phase
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model.ops import OpInfo, Pass
from perfmodel.model.roofline import ENGINES


def stack_rows(rows: list, shape: tuple) -> np.ndarray:
    """Per-operator arrays (any broadcastable shapes) as one float array [op, configuration...] (a point's rows may
    be Python ints: CompiledGraph.rows)."""
    if not rows:
        return np.zeros((0,) + tuple(shape))
    if shape == () and all(getattr(r, "ndim", 0) == 0 for r in rows):  # one configuration's numbers: one array
        return np.array(rows, dtype=np.float64)
    out = np.stack([np.broadcast_to(r, shape) for r in rows])
    return out if out.dtype == np.float64 else out.astype(np.float64)


def opsum(terms: list, shape: tuple, pairwise: bool | None = None) -> np.ndarray:
    """Sum of per-operator terms over the operators, bit for bit as np.stack(terms).sum(axis=0):
    numpy adds the rows of an [op, configuration] array one after another in operator order (a
    single configuration: pairwise). A term of None is a 0.0 left out of the sweep path (x + 0.0
    is x for every finite sum); terms stay at their own shapes (a scalar term costs no array), so
    a sweep never materialises [op, configuration] arrays. pairwise (default: one configuration)
    forces either order, for a sweep evaluated on its distinct rows only."""
    if pairwise is None:
        pairwise = int(np.prod(shape)) <= 1
    if terms and tuple(shape) == ():  # one configuration: the same 1-D array without a broadcast view per term
        return np.array([0.0 if t is None else t for t in terms], dtype=float).sum(axis=0)
    if pairwise or not terms:
        return stack_rows([0.0 if t is None else t for t in terms], shape).sum(axis=0)
    acc, owned = None, False
    for t in terms:
        if t is None:
            continue
        if acc is None:
            acc = t
        elif owned and np.shape(acc) == np.broadcast_shapes(np.shape(acc), np.shape(t)):
            np.add(acc, t, out=acc)
        else:
            acc = np.add(acc, t)
            owned = isinstance(acc, np.ndarray) and acc.ndim > 0
    if acc is None:
        return np.zeros(shape)
    return acc if owned and np.shape(acc) == tuple(shape) else np.array(np.broadcast_to(acc, shape), dtype=float)


@dataclass(frozen=True)
class OpRows:
    """All operators of one evaluation, per-operator arrays kept at their own shapes (no
    [op, configuration] array is built): rows[quantity][i], comm[i] (seconds per instance of
    op i's collective), shape (the configurations'), values (the bound symbols)."""

    ops: tuple[OpInfo, ...]
    rows: dict
    comm: list
    shape: tuple
    values: dict

    def stacked(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """(quantities as arrays [op, configuration...], comm times [op, configuration...])."""
        return ({k: stack_rows(r, self.shape) for k, r in self.rows.items()}, stack_rows(self.comm, self.shape))


def peak_flop_per_s(system: System, compute) -> np.ndarray:
    """Chip peak FLOP/s for each compute data type (the published peak, else the tensor rate)."""
    chip = system.chip

    def one(d: DType) -> float:
        return chip.peak_flop_per_s.get(d) or chip.tensor.rate(d)

    return bd._dtype_map(compute, one)


def _total(r: OpRows, x: list, keep=lambda op: True, pairwise: bool | None = None) -> np.ndarray:
    """sum over the operators `keep` selects of count x quantity x (per configuration)."""
    count = r.rows["count"]
    return opsum([count[i] * x[i] if keep(op) else None for i, op in enumerate(r.ops)], r.shape, pairwise)


def model_flop(r: OpRows, pairwise: bool | None = None) -> np.ndarray:
    """Model FLOPs per configuration: forward and backward operators (no recompute, no optimizer)."""
    return _total(r, r.rows["flop"], _model_work, pairwise)


def _model_work(op) -> bool:
    return op.pass_ in (Pass.FORWARD, Pass.BACKWARD)


def _has_comm(op) -> bool:
    return op.comm is not None


_SUMMED = ("time", "comm", "overhead", "model_flop", "flop", "hbm") + tuple(f"t_{e}" for e in ENGINES)
_KEEP = {"comm": _has_comm, "model_flop": _model_work}  # the sums that keep some operators only (others: all)
_MASKS = ObjectCache(128)  # per graph's operators: [summed quantity, op] which terms each sum keeps


def _sums_one(r: OpRows, t_ovh) -> dict:
    """summarize_rows' operator sums for one configuration as one [quantity, op] array: count x quantity with
    the terms a sum leaves out as 0.0, each row summed as opsum sums one configuration's terms (a contiguous
    row, numpy's pairwise order): the same numbers without ~400 numpy scalar operations."""
    keep = _MASKS.get((r.ops,), (), lambda: np.array([[_KEEP.get(k, lambda op: True)(op) for op in r.ops]
                                                      for k in _SUMMED], dtype=bool))
    q = r.rows
    time_ = np.array(q["time"], dtype=float)
    table = np.array([time_, np.array(r.comm, dtype=float), np.minimum(t_ovh, time_), q["flop"], q["flop"],
                      np.add(q["read"], q["write"]), *[q[f"t_{e}"] for e in ENGINES]], dtype=float)
    terms = np.where(keep, np.array(q["count"], dtype=float) * table, 0.0)
    return dict(zip(_SUMMED, terms.sum(axis=1)))


def _like(x, step):
    """x at step's shape (a sweep's array); one configuration's number as it is."""
    return x * np.ones_like(step) if getattr(step, "ndim", 0) else x


def summarize_rows(system: System, arch: ModelArch, kn: bd.Knobs, r: OpRows) -> dict[str, np.ndarray]:
    """Per-configuration totals (arrays over the sweep): sums over operators in operator order
    (opsum), the same numbers as summing arrays [op, configuration...] over the operators.
    Terms a sum leaves out (a zero mask, an operator with no collective) are skipped: adding their
    0.0 would change no finite result."""
    q = r.rows
    t_ovh = r.values[bd.S.t_ovh]  # fixed cost per operator instance: its own bound (attribution.py)
    if r.shape == ():
        sums = _sums_one(r, t_ovh)
    else:
        def total(x, keep=lambda op: True):
            return _total(r, x, keep)

        sums = {"time": total(q["time"]), "comm": total(r.comm, _has_comm),
                "overhead": total([np.minimum(t_ovh, t) for t in q["time"]]), "model_flop": model_flop(r),
                "flop": total(q["flop"]), "hbm": total([a + b for a, b in zip(q["read"], q["write"])]),
                **{f"t_{e}": total(q[f"t_{e}"]) for e in ENGINES}}
    compute_s, comm_s, overhead_s = sums["time"], sums["comm"], sums["overhead"]
    step = compute_s + comm_s
    # useful work per device is the mean stage's: an uneven pipeline's heaviest stage does more
    model_flop_ = sums["model_flop"] / bd.stage_stretch(arch, kn.pp)
    hw_flop, hbm = sums["flop"], sums["hbm"]
    engine = {e: sums[f"t_{e}"] for e in ENGINES}
    values = r.values
    peak = peak_flop_per_s(system, kn.compute)
    rt = values[bd.S.Rt]
    phase = Phase(kn.phase)
    B = bd.num(kn.batch)
    T = bd.num(1.0 if phase == Phase.DECODE else kn.seq_len)
    replica = bd.num(kn.tp) * bd.num(kn.da) * bd.num(kn.cp) * bd.num(kn.pp)
    nmb = bd.num(kn.microbatches)
    tokens = B * T * (nmb if phase == Phase.TRAIN else 1.0)
    out = {
        "step_time_s": step, "compute_time_s": compute_s, "comm_time_s": comm_s, "fixed_overhead_s": overhead_s,
        "model_flop": model_flop_, "hardware_flop": hw_flop, "hbm_bytes": hbm,
        "mfu_frac": model_flop_ / (step * peak), "tensor_util_frac": model_flop_ / (step * rt),
        "achieved_flop_per_s": model_flop_ / step, "intensity_flop_per_byte": hw_flop / ew.maximum(hbm, 1.0),
        "tokens_per_step": tokens, "tokens_per_s_per_replica": tokens / step,
        "tokens_per_s_per_chip": tokens / step / replica, "replica_chips": replica,
        "peak_flop_per_s": _like(peak, step), "tensor_rate_flop_per_s": _like(rt, step),
    }
    for e in ENGINES:
        out[f"{e}_busy_s"] = engine[e]
    if phase == Phase.DECODE:
        out["time_per_output_token_s"] = step
        out["tokens_per_s_per_user"] = 1.0 / step
    if phase == Phase.PREFILL:
        out["ttft_s"] = step
    return out
