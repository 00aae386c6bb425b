"""Evaluate a workload on a system: per-operator costs and per-scenario summary, vectorised.

    evaluate(system, arch, scenario)          -> Result (per-op frame + one summary row)
    point(system, arch, scenario)             -> the summary row as a dict (no per-op frame)
    evaluate_sweep(system, arch, knobs)       -> summary DataFrame, one row per configuration

One symbolic graph per model structure is lambdified once (cached) into a numpy function returning every
operator's counts, work, engine times and time; a sweep of N configurations is one call on arrays of length N,
never a Python loop per configuration. The sweep path (run_rows + summarize_rows: evaluate_sweep, serving,
training) keeps each operator's arrays at their own shapes (a quantity the swept fields do not touch stays a
scalar) and sums over operators in operator order (opsum), as summing run()'s [op, configuration] arrays would.

Summary metrics (per device unless named otherwise):
    step_time_s = sum_ops count x time + sum_comm count x comm time (exposed)
    mfu         = model FLOPs / (step_time x chip peak for the compute type)
    tensor_util = model FLOPs / (step_time x tensor-engine rate for the compute type)

Does not: read files or format output.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import sympy as sp

from perfmodel.comm import collectives
from perfmodel.comm.algorithms import Collective
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Phase, Recompute, Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import attribution, feasibility, numeric
from perfmodel.model.graph import cache as graph_cache
from perfmodel.model import bindings as bd
from perfmodel.model.graph import build as gr
from perfmodel.model.formulas import FIELDS
from perfmodel.model.ops import GraphKey, OpInfo, OpKind
from perfmodel.model.roofline import ENGINES, Overlap, engine_times, op_time

# the operator sums keep their evaluate names (the sweep engine and the training step call evaluate.model_flop / opsum)
from perfmodel.model.totals import OpRows, model_flop, opsum, peak_flop_per_s, stack_rows, summarize_rows  # noqa: F401

QUANTITIES = ("count",) + FIELDS + tuple(f"t_{e}" for e in ENGINES) + ("time", "comm_bytes")


@dataclass(frozen=True)
class CompiledGraph:
    ops: tuple[OpInfo, ...]
    symbols: tuple[sp.Symbol, ...]
    fn: object  # numpy function of symbols -> list of arrays, QUANTITIES per op
    scalar_fn: object = None  # the same source on Python floats (numeric.scalar_namespace): one configuration

    def arguments(self, values: dict) -> list:
        """The graph's arguments from bound values, in its symbols' order. A graph read from disk rebuilds its
        symbols with their original assumptions (graph_cache), so they are the bound dict's own objects and each
        look-up is a hash hit (an equal but distinct sympy symbol would cost ~10 us to compare)."""
        try:
            return [values[s] for s in self.symbols]
        except KeyError:
            missing = [str(s) for s in self.symbols if s not in values]
            raise KeyError(f"no value bound for symbols {', '.join(missing)}") from None

    def rows(self, values: dict) -> tuple[dict[str, list[np.ndarray]], tuple]:
        """Per quantity, one float array per operator at its own shape (a quantity that does not
        depend on the swept fields stays a scalar), and the configurations' broadcast shape."""
        args = self.arguments(values)
        if self.scalar_fn is not None and set(map(type, args)) == {float}:  # one configuration's Python floats
            shape, raw = (), self._scalar(args)
        else:
            # only arrays with dimensions shape the result (floats and 0-d arrays do not): one configuration skips
            # numpy's broadcast of ~50 scalars (~45 us, as long as the graph function itself)
            dims = [a.shape for a in args if getattr(a, "ndim", 0)]
            shape = np.broadcast_shapes(*dims) if dims else ()
            raw = self._scalar(args) if shape == () and self.scalar_fn is not None else None
        if raw is None:  # one configuration the floats refused: numpy's values carry a zero to inf / NaN
            raw = self.fn(*args) if shape else self.fn(*[np.asarray(a, dtype=float) for a in args])
        n_q, n_ops = len(QUANTITIES), len(self.ops)
        if shape == ():  # one configuration: Python numbers as the graph's source gives them (a constant's an int,
            # whose arithmetic with floats is a float's: the same numbers as a sweep's arrays)
            return {qname: raw[qi::n_q] for qi, qname in enumerate(QUANTITIES)}, shape
        return {qname: [np.asarray(raw[i * n_q + qi], dtype=float) for i in range(n_ops)]
                for qi, qname in enumerate(QUANTITIES)}, shape

    def _scalar(self, args: list):
        """The graph on Python floats (5x faster than numpy on scalars, the same numbers), or None where Python
        arithmetic raises what numpy would carry as inf or NaN (a division by zero, an overflowing power)."""
        try:
            return self.scalar_fn(*[float(a) for a in args])
        except (ArithmeticError, ValueError):
            return None

    def __call__(self, values: dict) -> dict[str, np.ndarray]:
        """Per quantity, one array [op, configuration...]."""
        rows, shape = self.rows(values)
        return {qname: stack_rows(r, shape) for qname, r in rows.items()}


@functools.lru_cache(maxsize=128)
def compile_graph(key: GraphKey, phase: Phase, recompute: Recompute, overlap: Overlap) -> CompiledGraph:
    """Lambdify every operator quantity of a graph into one numpy function (cached in the process, and its
    source with the operators' records on disk for the next process, which then builds no sympy: graph_cache)."""
    with graph_cache.BUILD:
        return _compile(key, phase, recompute, overlap)


def _compile(key: GraphKey, phase: Phase, recompute: Recompute, overlap: Overlap) -> CompiledGraph:
    parts = (repr(key), Phase(phase).value, Recompute(recompute).value, Overlap(overlap).value)
    hit = graph_cache.load(parts)
    if hit is not None and isinstance(hit[2], list):
        source, syms, meta = hit
        return CompiledGraph(ops=tuple(OpInfo.from_list(x) for x in meta), symbols=syms,
                             fn=graph_cache.function(source, numeric.namespace()),
                             scalar_fn=graph_cache.function(source, numeric.scalar_namespace()))
    ops = gr.build_graph(key, phase, recompute)
    exprs = []
    for op in ops:
        w = op.work
        et = engine_times(w)
        t = op_time(w, overlap) if op.kind != OpKind.COLLECTIVE else sp.Integer(0)
        comm = op.comm.nbytes if op.comm else sp.Integer(0)
        exprs += [op.count, *[getattr(w, f) for f in FIELDS], *[et[e] for e in ENGINES], t, comm]
    exprs = [sp.sympify(e) for e in exprs]
    syms = sorted(set().union(*[e.free_symbols for e in exprs]), key=lambda s: s.name)
    # common subexpressions found in the order met (sympy's canonical ordering of them is half of CSE's time;
    # the compiled numbers were compared identical: report, claims, validate)
    fn = numeric.lambdify_numeric(syms, exprs, cse=lambda e: sp.cse(e, order="none"))
    infos = tuple(OpInfo.of(op) for op in ops)
    source = inspect.getsource(fn)
    graph_cache.store(parts, source, tuple(syms), [i.to_list() for i in infos])
    return CompiledGraph(ops=infos, symbols=tuple(syms), fn=fn,
                         scalar_fn=graph_cache.function(source, numeric.scalar_namespace()))


# group -> (size knob, stride knobs): groups are placed innermost first (tp, da/ep, cp, pp, dp); the training plan's
# data-parallel groups are every rank holding a copy: 'dp' of the dense weights (dp x da x cp, Knobs.dense_dp),
# 'edp' of the routed experts (dp x cp, Knobs.expert_dp)
_GROUPS = {"tp": ("tp", ()), "ep": ("ep", ()), "da": ("da", ("tp",)), "cp": ("cp", ("tp", "da")),
           "pp": (None, ("tp", "da", "cp")),
           "dp": ("dense_dp", ("dense_dp_stride",)), "edp": ("expert_dp", ("expert_dp_stride",))}


def _group_of(kn: bd.Knobs, group: str) -> tuple:
    """(size, stride) of a plan group (_GROUPS): Python floats for one configuration, else arrays."""
    size_knob, stride_knobs = _GROUPS[group]
    size = 2.0 if size_knob is None else bd.num(getattr(kn, size_knob))
    strides = [bd.num(getattr(kn, s)) for s in stride_knobs]
    if all(isinstance(x, float) for x in strides):  # their product in numpy's order (a left-to-right reduce)
        return size, functools.reduce(operator.mul, strides, 1.0) if strides else 1.0
    return size, np.prod(np.broadcast_arrays(*[np.asarray(x, dtype=float) for x in strides]), axis=0)


def _comm_rows(system: System, cal: Calibration, ops, comm_bytes: list, kn: bd.Knobs,
               fields: tuple[str, ...] = ("time_s",)) -> list:
    """Seconds per instance of each Comm op (0.0 for the others): the fastest algorithm for its
    bytes, group size and placement (collectives.collective_time). Expert all-to-alls move the
    busiest chip's share: the mean bytes x the MoE load imbalance u (scenario moe_imbalance, else
    `moe_load_imbalance`). Tensor-parallel collectives run over kn.ranks_per_chip ranks per chip
    (one per NeuronCore where the runtime counts cores as ranks: collectives.collective_cost).
    fields: the collective_cost fields to add up (default its time; attribution asks for the latency)."""
    out = [np.zeros(())] * len(ops)
    tp_ranks = int(bd.on_system(system, kn).ranks_per_chip)  # once per evaluation (idempotent on resolved knobs)
    u = cal["moe_load_imbalance"] if kn.moe_imbalance is None else kn.moe_imbalance
    groups, cache = {}, {}  # per group (size, stride), and their codes, shared by the group's collectives
    for i, op in enumerate(ops):
        if op.comm is None:
            continue
        if op.comm.group not in groups:
            groups[op.comm.group] = _group_of(kn, op.comm.group)
        size, stride = groups[op.comm.group]
        nbytes = comm_bytes[i]
        if op.comm.collective == Collective.ALL_TO_ALL and op.comm.group == "ep":
            nbytes = nbytes * bd.num(u)
        rpc = tp_ranks if op.comm.group == "tp" else 1
        if fields == ("time_s",):
            out[i] = collectives.collective_time(system, cal, op.comm.collective, nbytes, size, stride,
                                                 ranks_per_chip=rpc, cache=cache)
            continue
        got = collectives.collective_fields(system, cal, op.comm.collective, nbytes, size, stride, fields,
                                            ranks_per_chip=rpc)
        out[i] = sum(np.asarray(got[f], dtype=float) for f in fields)
    return out


def _comm_times(system: System, cal: Calibration, ops, q: dict, kn: bd.Knobs) -> np.ndarray:
    """_comm_rows as one array [op, configuration...] (the shape of q["time"])."""
    return stack_rows(_comm_rows(system, cal, ops, list(q["comm_bytes"]), kn), q["time"].shape[1:])


def run_rows(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
             recompute: Recompute = Recompute.NONE, overlap: Overlap = Overlap.PIPELINED) -> OpRows:
    """Evaluate all operators, per-operator arrays at their own shapes (the sweep path)."""
    cal = cal or calibration_of(system)
    kn = bd.on_system(system, kn)
    compiled = compile_graph(GraphKey.of(arch), Phase(kn.phase), Recompute(recompute), Overlap(overlap))
    values = bd.bind(system, arch, cal, kn)
    rows, shape = compiled.rows(values)
    comm = _comm_rows(system, cal, compiled.ops, rows["comm_bytes"], kn)
    return OpRows(ops=compiled.ops, rows=rows, comm=comm, shape=shape, values=values)


def run(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
        recompute: Recompute = Recompute.NONE, overlap: Overlap = Overlap.PIPELINED):
    """Evaluate all operators: returns (ops, quantities dict of arrays [op, config...], comm times)."""
    r = run_rows(system, arch, kn, cal, recompute, overlap)
    q, comm = r.stacked()
    return r.ops, q, comm, r.values


@dataclass(frozen=True)
class Result:
    """One scenario evaluated. Fields: system and workload keys, the Scenario, the overlap
    policy, `ops` (per-operator frame, SI units), `summary` (one row: inputs, outputs, and
    valid / invalid_reason / fits / memory_bytes_per_chip), `calibration` (the assumptions
    used), `feasibility` and `warnings` (why the plan is invalid, if it is)."""

    system: str
    workload: str
    scenario: Scenario
    overlap: Overlap
    ops: pd.DataFrame
    summary: pd.DataFrame
    calibration: Calibration
    feasibility: dict = field(default_factory=dict)  # feasibility.Feasibility.first(): valid, reasons, fits
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


def _first(v):
    """A column's (first) value as a Python number: directly where it is one number (a point's), else its first."""
    if isinstance(v, (float, np.floating)):
        return float(v)
    return v.item() if isinstance(v, np.ndarray) and v.size == 1 else np.asarray(v).ravel()[0].item()


def _row(system: System, arch: ModelArch, scenario: Scenario, overlap: Overlap, summ: dict, feas) -> dict:
    """The summary row: the scenario's inputs, every total as a float, the feasibility columns."""
    row = scenario_columns(system, arch, scenario)
    row["overlap"] = Overlap(overlap).value
    bad = [k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)]
    for k, v in summ.items():
        row[k] = x = float(v) if isinstance(v, float) else float(_first(v))  # numpy's float64 is a float
        if not math.isfinite(x):
            bad.append(k)
    if bad:
        raise ValueError(f"non-finite results for {', '.join(bad)}: check the scenario and spec values")
    row.update({k: _first(v) for k, v in feas.columns().items()})
    return row


def point(system: System, arch: ModelArch, scenario: Scenario, cal: Calibration | None = None,
          overlap: Overlap = Overlap.PIPELINED) -> dict:
    """One scenario's summary row as a dict (evaluate()'s summary, the same numbers), without the per-operator
    frame: for the API called in a loop and the app's what-if (a third of evaluate's time)."""
    scenario.validate()
    cal = cal or calibration_of(system)
    kn = bd.knobs_on(system, scenario)
    r = run_rows(system, arch, kn, cal, scenario.recompute, overlap)
    return _row(system, arch, scenario, overlap, summarize_rows(system, arch, kn, r),
                feasibility.feasibility(system, arch, kn, cal, scenario.recompute))


def evaluate(system: System, arch: ModelArch, scenario: Scenario, cal: Calibration | None = None,
             overlap: Overlap = Overlap.PIPELINED) -> Result:
    """Evaluate one scenario: per-operator costs and a one-row summary."""
    scenario.validate()
    cal = cal or calibration_of(system)
    kn = bd.knobs_on(system, scenario)
    r = run_rows(system, arch, kn, cal, scenario.recompute, overlap)
    (q, comm), ops, values = r.stacked(), r.ops, r.values
    summ = summarize_rows(system, arch, kn, r)
    feas = feasibility.feasibility(system, arch, kn, cal, scenario.recompute)
    row = _row(system, arch, scenario, overlap, summ, feas)
    latency = stack_rows(_comm_rows(system, cal, ops, list(q["comm_bytes"]), kn, ("latency_s", "fixed_s")),
                         q["time"].shape[1:])
    frame = attribution.op_frame(ops, q, comm, overhead_s=float(np.ravel(values[bd.S.t_ovh])[0]),
                                 comm_latency=latency)
    return Result(system=system.name, workload=arch.name, scenario=scenario, overlap=Overlap(overlap),
                  ops=frame, summary=pd.DataFrame([row]), calibration=cal, feasibility=feas.first(),
                  warnings=tuple(feas.first()["reasons"]) + tuple(feasibility.advisories(system, kn)))


def evaluate_sweep(system: System, arch: ModelArch, knobs: bd.Knobs, cal: Calibration | None = None,
                   recompute: Recompute = Recompute.NONE, overlap: Overlap = Overlap.PIPELINED) -> pd.DataFrame:
    """Summary frame for every configuration in `knobs` (array fields broadcast together)."""
    cal = cal or calibration_of(system)
    summ = summarize_rows(system, arch, knobs, run_rows(system, arch, knobs, cal, recompute, overlap))
    feas = feasibility.feasibility(system, arch, knobs, cal, recompute).columns()
    shape = np.broadcast_shapes(*[np.shape(v) for v in (*summ.values(), *feas.values())])
    cols = {}
    for name in ("batch", "seq_len", "context", "tp", "da", "ep", "cp", "pp", "dp", "microbatches"):
        cols[name] = np.broadcast_to(np.asarray(getattr(knobs, name)), shape)
    for name in ("weights", "compute", "activations", "kv_cache"):
        codes, distinct = bd.dtype_codes(getattr(knobs, name))
        names = np.asarray([DType(d).value if not isinstance(d, str) else DType.parse(d).value for d in distinct],
                           dtype=object)
        cols[f"{name}_dtype"] = np.broadcast_to(np.asarray(names[codes], dtype=object), shape)
    df = pd.DataFrame({k: np.asarray(v).ravel() for k, v in cols.items()})
    for k, v in summ.items():
        df[k] = np.broadcast_to(np.asarray(v, dtype=float), shape).ravel()
    for k, v in feas.items():
        df[k] = np.broadcast_to(v, shape).ravel()
    df.insert(0, "phase", Phase(knobs.phase).value)
    df.insert(0, "workload", arch.name)
    df.insert(0, "system", system.name)
    return df
