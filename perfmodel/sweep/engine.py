"""Sweep engine: any scenario field over lists or ranges, a Cartesian product evaluated in chunks.

    spec = SweepSpec(catalog.load_system("trn2-ultraserver"), catalog.load_workload("llama-3-70b"), "decode",
                     fixed={"tp": 8},
                     grid={"batch": [1, 2, 4, 8], "context": geometric(1024, 32768, 2)})
    spec.size                                   # 4 x 6 = 24 configurations
    for df in iter_chunks(spec, chunk_size=65536): ...   # one DataFrame per chunk
    sweep_run.run_sweep(spec, out="results.parquet")      # sinks, progress bar, Dask

Fields: every bindings.Knobs field (batch, seq_len, context, tp, da, ep, cp, pp, dp, microbatches,
zero, pp_virtual, moe_imbalance, flash_attention, the data types weights / compute / activations /
kv_cache / expert_weights) is vectorised: a chunk is one evaluation on arrays. Group fields
(system, workload, recompute, optimizer, pp_schedule, sequence_parallel, overlap) change the
operator graph or a scalar of the model: they form an outer product, each group evaluated vectorised.

Order (itertools.product order): group fields vary slowest, then the vectorised fields in the
order given, the last fastest. Configuration i of a group is np.unravel_index(i, sizes): a chunk
[start, stop) of flat indices becomes index arrays, then value arrays, so 100 million
configurations never exist at once (memory ~ chunk size x columns).

Evaluation per chunk: prefill / decode: evaluate.run_rows + summarize_rows (evaluate_sweep's
columns and numbers); train: training.step_arrays (pipeline bubble, communication exposed and
hidden, MFU). Input columns follow evaluate_sweep (batch ... microbatches, <type>_dtype); text
columns are pandas categoricals.

Does not: write files, draw progress or talk to Dask (run.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, reduce

import numpy as np
import pandas as pd

from perfmodel import training
from perfmodel.comm import collectives
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Phase, Recompute
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate, feasibility
from perfmodel.model.roofline import Overlap
from perfmodel.sweep.assemble import TextCodes
from perfmodel.sweep.fields import BOOLS, DTYPES, GROUPS, NUMERIC, Axis, _fail, make_axis

# evaluate_sweep's input columns, then any other swept field
INPUT_COLUMNS = ("batch", "seq_len", "context", "tp", "da", "ep", "cp", "pp", "dp", "microbatches")
DEFAULT_CHUNK = 65536
# text outputs of training.step_arrays, with every category they can take (stable across chunks)
TEXT_OUTPUTS = {"dp_algorithm": ("none",) + collectives.ALGORITHMS, "dp_crosses": ("none", "node", "scaleup", "scaleout")}


@dataclass(frozen=True)
class SweepSpec:
    """A system (or several), a workload (or several): records resolved at the edge (catalog.load_system,
    catalog.load_workload; a Dask worker receives them with the spec), a phase, swept fields `grid` (field -> values:
    a list, an array, linear() / geometric(), or a string parse_values reads) and `fixed` fields
    (field -> one value). Every configuration of the product is evaluated (see the module doc)."""

    system: System | tuple[System, ...]
    workload: ModelArch | tuple[ModelArch, ...]
    phase: str = "decode"
    grid: Mapping = field(default_factory=dict)
    fixed: Mapping = field(default_factory=dict)
    fits_only: bool = False  # keep only rows that are valid, fit memory and are finite (else: all, marked)

    def plan(self) -> Plan:
        return _plan(self)

    @property
    def size(self) -> int:
        return self.plan().size


def _plan(spec: SweepSpec) -> Plan:
    try:
        phase = Phase(spec.phase)
    except ValueError:
        raise _fail("phase", f"choose from {', '.join(p.value for p in Phase)}, got {spec.phase!r}") from None
    grid = {"system": spec.system, "workload": spec.workload, **dict(spec.grid)}
    both = set(spec.grid) & set(spec.fixed)
    for name in ("system", "workload"):
        if name in spec.fixed:
            raise _fail(name, f"give it as SweepSpec.{name} (one name or several)")
    if both:
        raise _fail(sorted(both)[0], "given both as swept and as fixed")
    axes = [make_axis(k, v, phase) for k, v in grid.items()]
    fixed_axes = [make_axis(k, v, phase) for k, v in dict(spec.fixed).items()]
    for a in fixed_axes:
        if a.size != 1:
            raise _fail(a.name, f"a fixed field takes one value, got {a.size}")
    fixed = {a.name: a.array[0] for a in fixed_axes}
    if phase == Phase.TRAIN and "overlap" in set(grid) | set(fixed):
        raise _fail("overlap", "applies to prefill and decode (a training step prices its own overlap)")
    if phase == Phase.DECODE and "context" not in grid and fixed.get("context", 0) < 1:
        raise _fail("context", "decode needs a KV cache: give context (>= 1) in the grid or as fixed")
    return Plan(spec=spec, phase=phase, groups=tuple(a for a in axes if a.name in GROUPS),
                inner=tuple(a for a in axes if a.name not in GROUPS), fixed=fixed)


@dataclass(frozen=True)
class Plan:
    """A checked spec: group axes (outer), vectorised axes (inner), fixed values."""

    spec: SweepSpec
    phase: Phase
    groups: tuple[Axis, ...]
    inner: tuple[Axis, ...]
    fixed: dict

    @property
    def group_shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.groups)

    @property
    def inner_shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.inner)

    @property
    def group_size(self) -> int:
        return int(np.prod(self.inner_shape, dtype=np.int64))

    @property
    def size(self) -> int:
        return int(np.prod(self.group_shape, dtype=np.int64)) * self.group_size

    def tasks(self, chunk_size: int = DEFAULT_CHUNK) -> Iterator[tuple[int, int, int]]:
        """(group, start, stop) per chunk, in order; a chunk never spans two groups."""
        if chunk_size < 1:
            raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
        for g in range(int(np.prod(self.group_shape, dtype=np.int64))):
            for start in range(0, self.group_size, chunk_size):
                yield g, start, min(start + chunk_size, self.group_size)

    def group_values(self, g: int) -> dict:
        idx = np.unravel_index(g, self.group_shape) if self.groups else ()
        return {a.name: a.array[i] for a, i in zip(self.groups, idx)}


def _categorical(codes: np.ndarray, labels, dtype=None) -> pd.Categorical:
    """codes (in range: the sweep's own indices) over labels; the categories' dtype built once per label set
    (building an Index of the labels was most of a chunk's seven label columns)."""
    return pd.Categorical.from_codes(codes, dtype=_category_dtype(tuple(labels), dtype), validate=False)


@lru_cache(maxsize=256)
def _category_dtype(labels: tuple, dtype) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(pd.Index(list(labels), dtype=dtype))


def evaluate_chunk(plan: Plan, g: int, start: int, stop: int) -> pd.DataFrame:
    """Configurations [start, stop) of group g: one vectorised evaluation, one row each."""
    df = pd.DataFrame({k: v.array() if isinstance(v, TextCodes) else v
                       for k, v in chunk_columns(plan, g, start, stop).items()})
    return df[df["valid"] & df["fits"] & df["finite"]].reset_index(drop=True) if plan.spec.fits_only else df


def chunk_columns(plan: Plan, g: int, start: int, stop: int) -> dict:
    """evaluate_chunk's columns before they become a DataFrame (every row, numpy arrays or Categoricals of
    stop - start entries, some read-only broadcast views; the reasons as assemble.TextCodes): what a returned
    frame copies into its columns."""
    n = stop - start
    gv = plan.group_values(g)
    system, arch = gv["system"], gv["workload"]
    cal = system.calibration
    idx = np.unravel_index(np.arange(start, stop), plan.inner_shape) if plan.inner else ()
    knobs = dict(plan.fixed)
    cols: dict[str, object] = {}
    for a, i in zip(plan.inner, idx):
        if a.name in DTYPES:
            knobs[a.name] = _categorical(i, a.array, object) if a.size > 1 else a.array[0]
            cols[f"{a.name}_dtype"] = _categorical(i, a.labels)
        elif a.name in BOOLS:
            knobs[a.name] = np.asarray(a.array, dtype=bool)[i] if a.size > 1 else bool(a.array[0])
            cols[a.name] = knobs[a.name]
        else:
            knobs[a.name] = a.array[i] if a.size > 1 else float(a.array[0])
            cols[a.name] = knobs[a.name]
    opts = {k: gv.get(k, plan.fixed.get(k)) for k in GROUPS[2:]}
    opt_fields = {"optimizer": opts["optimizer"]} if opts["optimizer"] is not None else {}
    kn = bd.Knobs(phase=plan.phase, **{k: v for k, v in knobs.items() if k not in GROUPS}, **opt_fields)
    recompute = opts["recompute"] or Recompute.NONE
    if plan.phase == Phase.TRAIN:
        out = training.step_arrays(system, arch, kn, cal, recompute, opts["pp_schedule"] or "1f1b",
                                   kn.pp_virtual, bool(opts["sequence_parallel"] or False))
        out = {k: v for k, v in out.items() if not k.startswith("_")}
    else:
        if opts["sequence_parallel"] is not None:
            kn = dataclasses.replace(kn, sequence_parallel=bool(opts["sequence_parallel"]))
        r = evaluate.run_rows(system, arch, kn, cal, recompute, opts["overlap"] or Overlap.PIPELINED)
        out = evaluate.summarize_rows(system, arch, kn, r)
    fe = feasibility.feasibility(system, arch, kn, cal, recompute)
    feas = fe.columns()
    if fe.reason_codes is not None:  # the reasons as codes: a returned frame makes its text column once
        feas["invalid_reason"] = TextCodes(np.ravel(fe.reason_codes[0]), tuple(fe.reason_codes[1]))
    numeric = [np.asarray(v, dtype=float) for v in out.values() if np.asarray(v).dtype != object]
    # every numeric output finite: a row that is not (a calibration value out of its range) is marked
    feas["finite"] = reduce(np.logical_and, [np.isfinite(v) for v in numeric], np.ones((), dtype=bool))
    frame: dict[str, object] = {}
    for a in plan.groups:  # one value per chunk
        frame[a.name] = _categorical(np.full(n, a.labels.index(_label(gv[a.name])), dtype=np.int16), a.labels)
    frame["phase"] = _categorical(np.zeros(n, dtype=np.int8), [plan.phase.value])
    for name in INPUT_COLUMNS:
        v = cols.pop(name, knobs.get(name, getattr(kn, name)))
        frame[name] = np.broadcast_to(np.asarray(v, dtype=float).astype(np.int64), (n,))
    for name in DTYPES[:4]:
        key = f"{name}_dtype"
        frame[key] = cols.pop(key) if key in cols else \
            _categorical(np.zeros(n, dtype=np.int8), [DType.parse(getattr(kn, name)).value])
    for k, v in cols.items():
        frame[k] = v.astype(np.int64) if k in NUMERIC and NUMERIC[k] is not None else v
    for k, v in out.items():
        v = np.asarray(v)
        if v.dtype == object:  # a few distinct texts: hash the objects once, then codes
            codes, texts = pd.factorize(np.broadcast_to(v, (n,)))
            cats = list(TEXT_OUTPUTS.get(k, texts))
            frame[k] = _categorical(np.asarray([cats.index(x) for x in texts], dtype=np.int16)[codes], cats)
        else:
            frame[k] = np.broadcast_to(v, (n,))
    for k, v in feas.items():  # reasons stay text (TextCodes): chunks' category sets would differ
        frame[k] = TextCodes(np.broadcast_to(v.codes, (n,)), v.texts) if isinstance(v, TextCodes) \
            else np.broadcast_to(v, (n,))
    return frame


def _label(v):
    if isinstance(v, (System, ModelArch)):
        return v.name
    return v.value if hasattr(v, "value") else (bool(v) if isinstance(v, (bool, np.bool_)) else v)


def iter_chunks(spec: SweepSpec | Plan, chunk_size: int = DEFAULT_CHUNK) -> Iterator[pd.DataFrame]:
    """The sweep's rows in order, one DataFrame per chunk, evaluated lazily (bounded memory)."""
    plan = spec if isinstance(spec, Plan) else spec.plan()
    for g, start, stop in plan.tasks(chunk_size):
        yield evaluate_chunk(plan, g, start, stop)
