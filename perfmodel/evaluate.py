"""Evaluate a workload on a system: per-operator costs and per-scenario summary, vectorised.

    evaluate(system, arch, scenario)          -> Result (per-op frame + one summary row)
    evaluate_sweep(system, arch, knobs)       -> summary DataFrame, one row per configuration

One symbolic graph per model structure is lambdified once (cached) into a numpy function
returning every operator's counts, work, engine times and time; a sweep of N
configurations is one call on arrays of length N, never a Python loop per configuration.

Summary metrics (per device unless named otherwise):
    step_time_s = sum_ops count x time + sum_comm count x comm time (exposed)
    mfu         = model FLOPs / (step_time x chip peak for the compute type)
    tensor_util = model FLOPs / (step_time x tensor-engine rate for the compute type)

Does not: read files or format output.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import sympy as sp

from perfmodel import bindings as bd
from perfmodel import collectives
from perfmodel import graph as gr
from perfmodel.calibration import Calibration, calibration_for
from perfmodel.dtypes import DType
from perfmodel.formulas import FIELDS
from perfmodel.graph import GraphKey, Op, OpKind, Pass
from perfmodel.hardware import System
from perfmodel.roofline import ENGINES, Overlap, engine_times, op_time
from perfmodel.scenario import Phase, Recompute, Scenario
from perfmodel.workload import ModelArch

_vmax = sp.Function("vmax")
_vmin = sp.Function("vmin")
_NAMESPACE = {"vmax": lambda *a: functools.reduce(np.maximum, a), "vmin": lambda *a: functools.reduce(np.minimum, a)}
QUANTITIES = ("count",) + FIELDS + tuple(f"t_{e}" for e in ENGINES) + ("time", "comm_bytes")


def _numeric(expr: sp.Expr) -> sp.Expr:
    return sp.sympify(expr).replace(sp.Max, _vmax).replace(sp.Min, _vmin)


@dataclass(frozen=True)
class CompiledGraph:
    ops: tuple[Op, ...]
    symbols: tuple[sp.Symbol, ...]
    fn: object  # numpy function of symbols -> list of arrays, QUANTITIES per op

    def __call__(self, values: dict) -> dict[str, np.ndarray]:
        missing = [s for s in self.symbols if s not in values]
        if missing:
            raise KeyError(f"no value bound for symbols {', '.join(map(str, missing))}")
        raw = self.fn(*[values[s] for s in self.symbols])
        shape = np.broadcast_shapes(*[np.shape(values[s]) for s in self.symbols])
        n_q = len(QUANTITIES)
        out = {}
        for qi, qname in enumerate(QUANTITIES):
            rows = [np.broadcast_to(np.asarray(raw[i * n_q + qi], dtype=float), shape) for i in range(len(self.ops))]
            out[qname] = np.stack(rows) if rows else np.zeros((0,) + shape)
        return out


@functools.lru_cache(maxsize=128)
def compile_graph(key: GraphKey, phase: Phase, recompute: Recompute, overlap: Overlap) -> CompiledGraph:
    """Lambdify every operator quantity of a graph into one numpy function (cached)."""
    ops = gr.build_graph(key, phase, recompute)
    exprs = []
    for op in ops:
        w = op.work
        et = engine_times(w)
        t = op_time(w, overlap) if op.kind != OpKind.COLLECTIVE else sp.Integer(0)
        comm = op.comm.nbytes if op.comm else sp.Integer(0)
        exprs += [op.count, *[getattr(w, f) for f in FIELDS], *[et[e] for e in ENGINES], t, comm]
    exprs = [_numeric(e) for e in exprs]
    syms = sorted(set().union(*[e.free_symbols for e in exprs]), key=lambda s: s.name)
    fn = sp.lambdify(syms, exprs, modules=[_NAMESPACE, "numpy"], cse=True)
    return CompiledGraph(ops=ops, symbols=tuple(syms), fn=fn)


# group -> (size knob, stride knobs): groups are placed innermost first (tp, da/ep, cp, pp, dp)
_GROUPS = {"tp": ("tp", ()), "ep": ("ep", ()), "cp": ("cp", ("tp", "da")), "pp": (None, ("tp", "da", "cp")),
           "dp": ("dp", ("tp", "da", "cp", "pp"))}


def _comm_times(system: System, cal: Calibration, ops, q: dict, kn: bd.Knobs) -> np.ndarray:
    """Seconds per instance of each Comm op: the fastest algorithm for its bytes, group size and
    placement (collectives.collective_cost). Expert all-to-alls move the busiest chip's share:
    the mean bytes x the MoE load imbalance u (scenario moe_imbalance, else `moe_load_imbalance`)."""
    out = np.zeros_like(q["time"])
    u = cal["moe_load_imbalance"] if kn.moe_imbalance is None else kn.moe_imbalance
    for i, op in enumerate(ops):
        if op.comm is None:
            continue
        size_knob, stride_knobs = _GROUPS[op.comm.group]
        size = 2.0 if size_knob is None else np.asarray(getattr(kn, size_knob), dtype=float)
        stride = np.prod(np.broadcast_arrays(*[np.asarray(getattr(kn, s), dtype=float) for s in stride_knobs]),
                         axis=0) if stride_knobs else 1.0
        nbytes = q["comm_bytes"][i]
        if op.comm.collective == gr.Collective.ALL_TO_ALL and op.comm.group == "ep":
            nbytes = nbytes * np.asarray(u, dtype=float)
        out[i] = collectives.collective_cost(system, cal, op.comm.collective, nbytes, size, stride).time_s
    return out


def run(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
        recompute: Recompute = Recompute.NONE, overlap: Overlap = Overlap.PIPELINED):
    """Evaluate all operators: returns (ops, quantities dict of arrays [op, config...], comm times)."""
    cal = cal or calibration_for(system)
    compiled = compile_graph(GraphKey.of(arch), Phase(kn.phase), Recompute(recompute), Overlap(overlap))
    values = bd.bind(system, arch, cal, kn)
    q = compiled(values)
    comm = _comm_times(system, cal, compiled.ops, q, kn)
    return compiled.ops, q, comm, values


def _peak(system: System, compute) -> np.ndarray:
    chip = system.chip

    def one(d: DType) -> float:
        return chip.peak_flop_per_s.get(d) or chip.tensor.rate(d)

    return bd._dtype_map(compute, one)


def summarize(system: System, arch: ModelArch, kn: bd.Knobs, ops, q: dict, comm: np.ndarray,
              values: dict) -> dict[str, np.ndarray]:
    """Per-configuration totals (arrays over the sweep)."""
    count = q["count"]
    compute_s = (count * q["time"]).sum(axis=0)
    comm_s = (count * comm).sum(axis=0)
    step = compute_s + comm_s
    is_model = np.array([op.pass_ in (Pass.FORWARD, Pass.BACKWARD) for op in ops])[:, None] if q["time"].ndim > 1 \
        else np.array([op.pass_ in (Pass.FORWARD, Pass.BACKWARD) for op in ops])
    model_flop = (count * q["flop"] * is_model).sum(axis=0)
    hw_flop = (count * q["flop"]).sum(axis=0)
    hbm = (count * (q["read"] + q["write"])).sum(axis=0)
    engine = {e: (count * q[f"t_{e}"]).sum(axis=0) for e in ENGINES}
    peak = _peak(system, kn.compute)
    rt = values[bd.S.Rt]
    phase = Phase(kn.phase)
    B = np.asarray(kn.batch, dtype=float)
    T = np.asarray(1.0 if phase == Phase.DECODE else kn.seq_len, dtype=float)
    replica = (np.asarray(kn.tp, dtype=float) * np.asarray(kn.da, dtype=float) * np.asarray(kn.cp, dtype=float)
               * np.asarray(kn.pp, dtype=float))
    nmb = np.asarray(kn.microbatches, dtype=float)
    tokens = B * T * (nmb if phase == Phase.TRAIN else 1.0)
    out = {
        "step_time_s": step, "compute_time_s": compute_s, "comm_time_s": comm_s,
        "model_flop": model_flop, "hardware_flop": hw_flop, "hbm_bytes": hbm,
        "mfu_frac": model_flop / (step * peak), "tensor_util_frac": model_flop / (step * rt),
        "achieved_flop_per_s": model_flop / step, "intensity_flop_per_byte": hw_flop / np.maximum(hbm, 1.0),
        "tokens_per_step": tokens, "tokens_per_s_per_replica": tokens / step,
        "tokens_per_s_per_chip": tokens / step / replica, "replica_chips": replica,
        "peak_flop_per_s": peak * np.ones_like(step), "tensor_rate_flop_per_s": rt * np.ones_like(step),
    }
    for e in ENGINES:
        out[f"{e}_busy_s"] = engine[e]
    if phase == Phase.DECODE:
        out["time_per_output_token_s"] = step
        out["tokens_per_s_per_user"] = 1.0 / step
    if phase == Phase.PREFILL:
        out["ttft_s"] = step
    return out


def op_frame(ops, q: dict, comm: np.ndarray, col: int = 0) -> pd.DataFrame:
    """Tidy per-operator frame for configuration `col` of a sweep (col 0 for a single scenario)."""
    def pick(a):
        return a if a.ndim == 1 else a[:, col]

    rows = []
    for i, op in enumerate(ops):
        r = {"op": op.name, "block": op.group, "kind": op.kind.value, "pass": op.pass_.value,
             "count": float(pick(q["count"])[i])}
        for f in FIELDS:
            r[f] = float(pick(q[f])[i])
        times = {e: float(pick(q[f"t_{e}"])[i]) for e in ENGINES}
        t = float(pick(q["time"])[i])
        c = float(pick(comm)[i])
        r.update({f"{e}_s": v for e, v in times.items()})
        r["comm_s"] = c
        r["time_s"] = t + c
        r["total_time_s"] = r["count"] * r["time_s"]
        busy = {**times, "comm": c}
        r["bound"] = max(busy, key=busy.get) if max(busy.values()) > 0 else "overhead"
        r["intensity_flop_per_byte"] = r["flop"] / (r["read"] + r["write"]) if (r["read"] + r["write"]) else np.nan
        r["achieved_flop_per_s"] = r["flop"] / r["time_s"] if r["time_s"] else 0.0
        for e, v in times.items():
            r[f"util_{e}_frac"] = v / t if t else 0.0
        r["comm_bytes"] = float(pick(q["comm_bytes"])[i])
        r["collective"] = op.comm.collective.value if op.comm else ""
        r["comm_group"] = op.comm.group if op.comm else ""
        rows.append(r)
    df = pd.DataFrame(rows)
    return df.rename(columns={"read": "hbm_read_bytes", "write": "hbm_write_bytes", "sram": "sram_bytes",
                              "params": "params_elems",
                              "vector": "vector_elems", "scalar": "scalar_elems", "exp": "exp_elems",
                              "gpsimd": "gpsimd_elems"})


@dataclass(frozen=True)
class Result:
    """One scenario evaluated. Fields: system and workload keys, the Scenario, the overlap
    policy, `ops` (per-operator frame, SI units), `summary` (one row: inputs and outputs),
    `calibration` (the assumptions used) and `warnings`."""

    system: str
    workload: str
    scenario: Scenario
    overlap: Overlap
    ops: pd.DataFrame
    summary: pd.DataFrame
    calibration: Calibration
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def __getitem__(self, key: str) -> float:
        return float(self.summary.iloc[0][key])


def scenario_columns(system: System, arch: ModelArch, s: Scenario) -> dict:
    p, q = s.parallel, s.precision
    return {"system": system.name, "workload": arch.name, "phase": s.phase.value, "batch": s.batch,
            "seq_len": s.seq_len, "context": s.context, "tp": p.tp, "pp": p.pp, "dp": p.dp, "ep": p.ep, "cp": p.cp,
            "da": p.da, "zero": p.zero, "microbatches": p.microbatches, "weights_dtype": q.weights.value,
            "compute_dtype": q.compute.value, "activations_dtype": q.activations.value, "kv_dtype": q.kv_cache.value,
            "expert_weights_dtype": q.experts.value,
            "recompute": s.recompute.value, "optimizer": s.optimizer.value, "flash_attention": s.flash_attention}


def evaluate(system: System, arch: ModelArch, scenario: Scenario, cal: Calibration | None = None,
             overlap: Overlap = Overlap.PIPELINED) -> Result:
    """Evaluate one scenario: per-operator costs and a one-row summary."""
    scenario.validate()
    cal = cal or calibration_for(system)
    kn = bd.Knobs.of(scenario)
    ops, q, comm, values = run(system, arch, kn, cal, scenario.recompute, overlap)
    summ = summarize(system, arch, kn, ops, q, comm, values)
    row = {**scenario_columns(system, arch, scenario), "overlap": Overlap(overlap).value,
           **{k: float(np.asarray(v).ravel()[0]) for k, v in summ.items()}}
    warnings = []
    bad = [k for k, v in row.items() if isinstance(v, float) and not np.isfinite(v)]
    if bad:
        raise ValueError(f"non-finite results for {', '.join(bad)}: check the scenario and spec values")
    return Result(system=system.name, workload=arch.name, scenario=scenario, overlap=Overlap(overlap),
                  ops=op_frame(ops, q, comm), summary=pd.DataFrame([row]), calibration=cal,
                  warnings=tuple(warnings))


def evaluate_sweep(system: System, arch: ModelArch, knobs: bd.Knobs, cal: Calibration | None = None,
                   recompute: Recompute = Recompute.NONE, overlap: Overlap = Overlap.PIPELINED) -> pd.DataFrame:
    """Summary frame for every configuration in `knobs` (array fields broadcast together)."""
    cal = cal or calibration_for(system)
    ops, q, comm, values = run(system, arch, knobs, cal, recompute, overlap)
    summ = summarize(system, arch, knobs, ops, q, comm, values)
    shape = np.broadcast_shapes(*[np.shape(v) for v in summ.values()])
    cols = {}
    for name in ("batch", "seq_len", "context", "tp", "da", "ep", "cp", "pp", "dp", "microbatches"):
        cols[name] = np.broadcast_to(np.asarray(getattr(knobs, name)), shape)
    for name in ("weights", "compute", "activations", "kv_cache"):
        v = np.asarray(getattr(knobs, name), dtype=object)
        cols[f"{name}_dtype"] = np.broadcast_to(np.vectorize(lambda d: DType(d).value if not isinstance(d, str)
                                                             else DType.parse(d).value, otypes=[object])(v), shape)
    df = pd.DataFrame({k: np.asarray(v).ravel() for k, v in cols.items()})
    for k, v in summ.items():
        df[k] = np.broadcast_to(np.asarray(v, dtype=float), shape).ravel()
    df.insert(0, "phase", Phase(knobs.phase).value)
    df.insert(0, "workload", arch.name)
    df.insert(0, "system", system.name)
    return df
