"""Sweep fields: which scenario fields a sweep takes, their value syntax (lists, ranges, series) and checks.

    parse_values("1,2,4,8")        [1, 2, 4, 8]                 a list (text items stay text: "bf16,fp8")
    parse_values("128:1024:128")   [128, 256, ..., 1024]        linear, step 128 (default 1), both ends included
    parse_values("1024:32768:x2")  [1024, 2048, ..., 32768]     geometric, factor 2
    make_axis("batch", values, phase)   -> Axis: checked values; errors name the field

Vectorised fields (NUMERIC, DTYPES, BOOLS) are bindings.Knobs fields a chunk evaluates as arrays;
group fields (GROUPS) change the operator graph or a scalar of the model and form an outer product.
Does not: enumerate or evaluate anything (engine.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel import training
from perfmodel.core import limits
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Optimizer, Phase, Recompute
from perfmodel.core.workload import ModelArch
from perfmodel.model.roofline import Overlap

# vectorised numeric fields -> smallest value (None: any number >= 1, not only whole ones)
NUMERIC = {"batch": 1, "seq_len": 1, "context": 0, "tp": 1, "da": 1, "ep": 1, "cp": 1, "pp": 1, "dp": 1,
           "microbatches": 1, "zero": 0, "pp_virtual": 1, "moe_imbalance": None,
           "offload_layers": 0, "lora_rank": 0, "recompute_layers": 0}
# ... and largest value: the ceilings of core/limits.py the scenario validators apply (Scenario, Parallelism)
CEILING = {"batch": limits.MAX_BATCH, "seq_len": limits.MAX_SEQ_TOKENS, "context": limits.MAX_SEQ_TOKENS,
           **dict.fromkeys(("tp", "da", "ep", "cp", "pp", "dp"), limits.MAX_CHIPS), "microbatches": limits.MAX_BATCH,
           "zero": 3, "pp_virtual": limits.MAX_LAYERS, "moe_imbalance": limits.MAX_EXPERTS,
           "offload_layers": limits.MAX_LAYERS, "lora_rank": limits.MAX_WIDTH, "recompute_layers": limits.MAX_LAYERS}
# values one range may list: the longest whole-number axis a sweep can need is batch 1..MAX_BATCH; more
# is a typo ('1:1e12', a step of 1e-9, a factor of x1.0000001) that would fill memory before any check
MAX_AXIS_VALUES = limits.MAX_BATCH
DTYPES = ("weights", "compute", "activations", "kv_cache", "expert_weights")
BOOLS = ("flash_attention",)
GROUPS = ("system", "workload", "recompute", "optimizer", "pp_schedule", "sequence_parallel", "overlap")


def _count(n: float, text: str) -> int:
    """The number of values of a range, refused beyond MAX_AXIS_VALUES before any is made."""
    if not n < MAX_AXIS_VALUES:
        raise ValueError(f"{text} lists {n:,.0f} values, more than the {MAX_AXIS_VALUES:,} one field may take")
    return int(n) + 1


def linear(start: float, stop: float, step: float = 1) -> np.ndarray:
    """start, start + step, ... up to stop (inclusive when it falls on the grid)."""
    text = f"range {start:.12g}:{stop:.12g}:{step:.12g}"
    if not all(np.isfinite([start, stop, step])):
        raise ValueError(f"{text}: start, stop and step must be finite numbers")
    if step <= 0 or stop < start:
        raise ValueError(f"{text}: needs start <= stop and a step > 0")
    return start + step * np.arange(_count(np.floor((stop - start) / step + 1e-9), text))


def geometric(start: float, stop: float, factor: float = 2) -> np.ndarray:
    """start, start x factor, ... up to stop (inclusive when it falls on the series)."""
    text = f"series {start:.12g}:{stop:.12g}:x{factor:.12g}"
    if not all(np.isfinite([start, stop, factor])):
        raise ValueError(f"{text}: start, stop and factor must be finite numbers")
    if factor <= 1 or start <= 0 or stop < start:
        raise ValueError(f"{text}: needs 0 < start <= stop and a factor > 1")
    k = _count(np.floor(np.log(stop / start) / np.log(factor) + 1e-9), text)
    return start * float(factor) ** np.arange(k)


def parse_values(text: str) -> list:
    """'1,2,4,8' (a list), 'A:B' or 'A:B:S' (linear, step S, default 1), 'A:B:xF' (geometric,
    factor F); both ends inclusive. Items that are not numbers stay text (data types, names)."""
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise ValueError(f"range {text[:60]!r}: use START:STOP, START:STOP:STEP or START:STOP:xFACTOR")
        geo = len(parts) == 3 and parts[2].strip().lower().startswith("x")
        step = parts[2].strip()[1:] if geo else (parts[2] if len(parts) == 3 else "1")
        try:
            a, b, c = float(parts[0]), float(parts[1]), float(step)
        except ValueError:
            raise ValueError(f"range {text[:60]!r}: START, STOP and STEP (or xFACTOR) must be numbers") from None
        return list(geometric(a, b, c) if geo else linear(a, b, c))
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError("empty value list")

    def num(t: str):
        try:
            return float(t)
        except ValueError:
            return t
    return [num(t) for t in items]


@dataclass(frozen=True)
class Axis:
    """One swept field: its values as given (`labels`) and as the model takes them (`array`: floats,
    DType or bool objects; group fields: names / enum values)."""

    name: str
    labels: tuple
    array: np.ndarray

    @property
    def size(self) -> int:
        return len(self.labels)


def _fail(name: str, why: str) -> ValueError:
    return ValueError(f"sweep field {name}: {why}")


def _values(name: str, values) -> list:
    if isinstance(values, str):
        try:
            values = parse_values(values)
        except ValueError as exc:
            raise _fail(name, str(exc)) from None
    elif np.ndim(values) == 0:
        values = [values]
    values = list(np.asarray(values, dtype=object).ravel()) if not isinstance(values, (list, tuple)) else list(values)
    if not values:
        raise _fail(name, "no values")
    return values


def make_axis(name: str, values, phase: Phase) -> Axis:
    """Check and convert one field's values; errors name the field."""
    vals = _values(name, values)
    if name in NUMERIC:
        try:
            arr = np.asarray(vals, dtype=float)
        except (TypeError, ValueError):
            raise _fail(name, f"values must be numbers, got {vals[:5]}") from None
        lo, hi = NUMERIC[name], CEILING[name]
        if not np.all(np.isfinite(arr)):
            raise _fail(name, f"values must be finite, got {arr[~np.isfinite(arr)][:5].tolist()}")
        if name == "zero" and np.any(arr > hi):
            raise _fail(name, f"ZeRO stage must be 0, 1, 2 or 3, got {arr[arr > hi][:5].tolist()}")
        if lo is None:
            if np.any((arr < 1) | (arr > hi)):
                raise _fail(name, f"values must be >= 1 and <= {hi:,}, got {arr[(arr < 1) | (arr > hi)][:5].tolist()}")
        elif np.any(arr < lo) or np.any(arr > hi) or np.any(arr != np.round(arr)):
            bad = arr[(arr < lo) | (arr > hi) | (arr != np.round(arr))][:5].tolist()
            raise _fail(name, f"values must be whole numbers >= {lo} and <= {hi:,}, got {bad}")
        if name == "context" and phase == Phase.DECODE and np.any(arr < 1):
            raise _fail(name, "decode needs a KV cache (context >= 1)")
        labels = tuple(int(v) if lo is not None else float(v) for v in arr)
        return Axis(name, labels, arr)
    if name in DTYPES:
        try:
            ds = [DType.parse(v) for v in vals]
        except ValueError as exc:
            raise _fail(name, str(exc)) from None
        return Axis(name, tuple(d.value for d in ds), np.asarray(ds, dtype=object))
    if name in BOOLS or name == "sequence_parallel":
        truth = {"true": True, "yes": True, "false": False, "no": False}
        try:
            bs = [bool(v) if isinstance(v, (bool, np.bool_, int, float)) and v in (0, 1) else truth[str(v).lower()]
                  for v in vals]
        except KeyError:
            raise _fail(name, f"values must be true / false (or 1 / 0), got {vals[:5]}") from None
        return Axis(name, tuple(bool(b) for b in bs), np.asarray([bool(b) for b in bs], dtype=object))
    kinds = {"recompute": Recompute, "optimizer": Optimizer, "overlap": Overlap}
    if name in kinds:
        try:
            es = [kinds[name](str(v)) for v in vals]
        except ValueError:
            raise _fail(name, f"choose from {', '.join(e.value for e in kinds[name])}, got {vals[:5]}") from None
        return Axis(name, tuple(e.value for e in es), np.asarray(es, dtype=object))
    if name == "pp_schedule":
        bad = [v for v in vals if v not in training.SCHEDULES]
        if bad:
            raise _fail(name, f"choose from {', '.join(training.SCHEDULES)}, got {bad[:5]}")
        return Axis(name, tuple(vals), np.asarray(vals, dtype=object))
    if name in ("system", "workload"):  # records resolved at the edge (catalog.load_system / load_workload)
        kind = System if name == "system" else ModelArch
        if not all(isinstance(v, kind) for v in vals):
            loader = "catalog.load_system(name)" if name == "system" else "catalog.load_workload(name)"
            raise _fail(name, f"give {kind.__name__} records ({loader}), got {vals[:5]}: a sweep resolves no "
                              "names itself")
        names = [v.name for v in vals]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise _fail(name, f"{twice[0]!r} given twice (a sweep labels its rows by name)")
        return Axis(name, tuple(names), np.asarray(vals, dtype=object))
    raise _fail(name, f"unknown field (choose from {', '.join(list(NUMERIC) + list(DTYPES) + list(BOOLS) + list(GROUPS))})")
