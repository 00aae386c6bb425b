"""Feasibility of a configuration: is the plan one a runtime can execute, and does it fit memory.

A configuration is *valid* when every rule below holds, and *fits* when its memory per chip
(memory.footprint: weights, training state, activations, KV cache, and the runtime's reserve
`runtime_reserved_memory`, a named calibration parameter) is at most the chip's HBM capacity and the
activations it offloads (offload_layers) at most the node's host memory per chip.
Every result the model returns carries both (evaluate, evaluate_sweep, sweeps, serving grids,
training plans); commands refuse an invalid plan and show a non-fitting one only on request.

    rule          holds when                                  why
    counts        B, T, t, d_a, e, c, p, d, m >= 1; C_0 >= 0   a count of zero or less is no plan
    tp_heads      H mod t = 0                                  heads are split whole over t chips
    tp_kv_heads   K mod t = 0  or  t mod K = 0                 KV heads split, or each replicated t/K x
    pp_layers     p <= L                                       a stage holds a layer (an uneven split is
                                                               priced at its heaviest stage,
                                                               bindings.stage_stretch)
    pp_interleaved  L >= p v when v > 1                        a layer in every virtual chunk; uneven chunks run
                                                               (Megatron-Core's first / last stage layer counts and
                                                               pipeline layouts), priced at the heaviest stage
    tp_linear_heads  H_k mod t = 0 (Gated DeltaNet layers)     key heads (and their value-head groups) split whole
    ep_experts    E mod e = 0 (MoE)                            whole experts per expert-parallel rank
    ep_group      (t d_a) mod e = 0                            experts are split over the replica's chips
    cp_sequence   T mod c = 0 (prefill, train)                 whole sequence chunks per context rank
    batch_da      B mod d_a = 0                                attention data parallel splits sequences
    context_max   C_0 + T_new <= P                             the model's positions (max_position_embeddings)
    offload_layers  o < ceil(L / p) (train)                    a stage keeps its last layer's activations: its
                                                               backward starts there as the forward ends
    offload_host_link  o = 0 or the node states a host link    offloaded bytes are priced over it
                                                               (node.host_link_bandwidth)
    recompute_layers   0 unless recompute is full (train)      it counts the layers full recompute re-runs
    offload_layers, lora_rank, recompute_layers = 0 (prefill, decode): training options

(H attention heads, K KV heads, L layers, E experts, P max positions, T_new the tokens this step
adds: T for prefill and training, 1 for decode.) Where the software pads the query heads to
its ranks (pad_heads: Transformers NeuronX) the two head rules do not apply; a Neuron runtime's rank
sharding (KV heads replicated up to the ranks, bindings.on_system) keeps them on the chips' TP degree.
Tensor parallelism beyond the scale-up domain is not a broken rule: engines run it (TP16 over two
8-GPU nodes is measured in the InferenceX corpus) and its all-reduces are priced over the
scale-out tier; `advisories` says so beside the result.

All rules are vectorised over a sweep's arrays: one boolean array per rule, a bit per rule, and
the reason text built once per distinct combination of failing rules (a sweep has few).

    min_fit(system, arch, scenario)   the fewest chips (whole instances) holding a scenario with a valid plan

Does not: price time, or search serving plans (serving.search, serving.planner).
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Callable

import numpy as np

from perfmodel.core import units
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System
from perfmodel.core.object_cache import ObjectCache
from perfmodel.core.scenario import Phase, Recompute, Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import memory

COUNT_FIELDS = ("batch", "seq_len", "tp", "da", "ep", "cp", "pp", "dp", "microbatches")
TRAINING_ONLY = ("offload_layers", "lora_rank", "recompute_layers")  # Scenario fields of the training phase


@dataclass(frozen=True)
class Rule:
    """A validity rule: `broken(v)` is True where the configuration breaks it; `text(v)` says why,
    with the knob values where one configuration is asked about (the knob name in a sweep)."""

    name: str
    broken: Callable[[dict], np.ndarray]
    text: Callable[[dict], str]


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


_RULES = ObjectCache(64)  # each (system, model, phase, recompute)'s rules: built once, not per configuration


def _rules(system: System, arch: ModelArch, phase: Phase, recompute: Recompute = Recompute.NONE) -> tuple[Rule, ...]:
    """The validity rules of a system, model, phase and training recompute policy (kept: they are closures over
    those four, the same for every configuration)."""
    return _RULES.get((system, arch), (Phase(phase), Recompute(recompute)),
                      lambda: _make_rules(system, arch, Phase(phase), Recompute(recompute)))


def _make_rules(system: System, arch: ModelArch, phase: Phase, recompute: Recompute) -> tuple[Rule, ...]:
    H, K, L = arch.num_attention_heads, arch.num_key_value_heads, arch.num_hidden_layers
    E, P = arch.num_experts, arch.max_position_embeddings
    rules = [
        Rule("counts", lambda v: functools.reduce(operator.or_, [v[k] < 1 for k in COUNT_FIELDS], v["context"] < 0),
             lambda s: "batch, sequence, context and every parallel degree must be whole numbers >= 1 "
                       "(context >= 0)"),
        Rule("tp_heads", lambda v: (v["pad_heads"] == 0) & (H % v["tp"] != 0),
             lambda s: f"{s['tp']} does not divide the {H} attention heads of {arch.name}"),
        Rule("tp_kv_heads", lambda v: (v["pad_heads"] == 0) & (K % v["tp"] != 0) & (v["tp"] % K != 0),
             lambda s: f"{s['tp']} is neither a divisor nor a multiple of the {K} KV heads of {arch.name}"),
        Rule("pp_layers", lambda v: v["pp"] > L,
             lambda s: f"{s['pp']} pipeline stages for the {L} layers of {arch.name} (a stage holds at least one)"),
        Rule("pp_interleaved", lambda v: (v["pp_virtual"] > 1) & (v["pp"] * v["pp_virtual"] > L),
             lambda s: f"{s['pp']} stages x {s['pp_virtual']} virtual chunks is more chunks than the {L} layers of "
                       f"{arch.name} (every chunk holds a layer)"),
        Rule("ep_group", lambda v: v["tp"] * v["da"] % v["ep"] != 0,
             lambda s: f"{s['ep']} does not divide the replica's tp x da chips ({s['tp']}, {s['da']})"),
        Rule("batch_da", lambda v: v["batch"] % v["da"] != 0,
             lambda s: f"{s['batch']} is not a multiple of the attention data-parallel degree {s['da']}"),
        Rule("context_max", lambda v: v["context"] + (1.0 if phase == Phase.DECODE else v["seq_len"]) > P,
             lambda s: f"{s['context']} + {'1 new token' if phase == Phase.DECODE else s['seq_len']} "
                       f"exceeds the {P} positions of {arch.name} (max_position_embeddings)"),
    ]
    if phase != Phase.TRAIN:  # training-only options (a sweep may carry them into any phase)
        for name in TRAINING_ONLY:
            rules.append(Rule(name, lambda v, n=name: v[n] > 0,
                              lambda s, n=name: f"{s[n]} applies to training only (phase {phase.value})"))
    elif Recompute(recompute) != Recompute.FULL:
        rules.append(Rule("recompute_layers", lambda v: v["recompute_layers"] > 0,
                          lambda s: f"{s['recompute_layers']} counts the layers full recompute re-runs "
                                    f"(recompute {Recompute(recompute).value})"))
    if phase == Phase.TRAIN:
        rules.append(Rule("offload_layers", lambda v: v["offload_layers"] >= np.ceil(L / v["pp"]),
                          lambda s: f"{s['offload_layers']} is not fewer than a stage's layers ({L} layers of "
                                    f"{arch.name} over {s['pp']}): a stage keeps at least its last layer's "
                                    f"activations"))
        if system.node.host_link_bytes_per_s is None:
            rules.append(Rule("offload_host_link", lambda v: v["offload_layers"] > 0,
                              lambda s: f"{system.display_name} states no host link bandwidth "
                                        f"(node.host_link_bandwidth): offloaded activations cannot be priced"))
    if arch.num_linear_layers:
        hk = arch.linear_num_key_heads
        rules.append(Rule("tp_linear_heads", lambda v: hk % v["tp"] != 0,
                          lambda s: f"{s['tp']} does not divide the {hk} Gated DeltaNet key heads of {arch.name}"))
    if arch.is_moe:
        rules.append(Rule("ep_experts", lambda v: E % v["ep"] != 0,
                          lambda s: f"{s['ep']} does not divide the {E} experts of {arch.name}"))
    if phase != Phase.DECODE:
        rules.append(Rule("cp_sequence", lambda v: v["seq_len"] % v["cp"] != 0,
                          lambda s: f"{s['cp']} does not divide the sequence length ({s['seq_len']})"))
    return tuple(rules)


def advisories(system: System, kn: bd.Knobs) -> list[str]:
    """Notes on a valid plan that is unusual and costly, or that a stack may refuse (one scenario's knobs)."""
    tp, notes = float(np.max(_f(kn.tp))), []
    if tp > system.scaleup_chips:
        notes.append(f"tensor parallel over {tp:.0f} chips crosses the {system.scaleup_chips}-chip scale-up domain of "
                     f"{system.display_name}: its all-reduces run over the scale-out network")
    if np.any(_f(kn.offload_layers) > 0) and np.any(_f(kn.pp) > 1):
        notes.append("activation offloading with pipeline parallelism: priced as the mechanism runs, but "
                     "Megatron-Core's CPU offloading refuses pipeline parallelism (and activation recompute)")
    return notes


@dataclass(frozen=True)
class Feasibility:
    """Per configuration (arrays broadcast to the sweep's shape): valid, its reasons ("" when
    valid), fits, memory per chip and the chip's capacity."""

    valid: np.ndarray
    reasons: np.ndarray
    fits: np.ndarray
    memory_bytes: np.ndarray
    capacity_bytes: float
    host_bytes: np.ndarray | float = 0.0  # activations offloaded to host memory per chip
    host_capacity_bytes: float | None = None  # the node's host memory per chip
    # reasons as (codes, distinct texts), reasons == texts[codes]: a sweep's column of millions of rows and a
    # few texts is kept as codes (sweep/assemble.py), not converted from Python strings row by row
    reason_codes: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def usable(self) -> np.ndarray:
        """Valid and fits: a configuration a planner may be shown as an answer."""
        return self.valid & self.fits

    def columns(self) -> dict[str, np.ndarray]:
        """The result columns every evaluation carries."""
        return {"valid": self.valid, "invalid_reason": self.reasons, "fits": self.fits,
                "memory_bytes_per_chip": self.memory_bytes,
                "memory_capacity_bytes": np.full(np.shape(self.fits), self.capacity_bytes)}

    def first(self) -> dict:
        """The first configuration as plain Python values (one scenario)."""
        return {"valid": bool(np.ravel(self.valid)[0]), "reasons": [r for r in str(np.ravel(self.reasons)[0])
                                                                    .split("; ") if r],
                "fits": bool(np.ravel(self.fits)[0]), "memory_bytes": float(np.ravel(self.memory_bytes)[0]),
                "capacity_bytes": float(self.capacity_bytes), "host_bytes": float(np.ravel(self.host_bytes)[0]),
                "host_capacity_bytes": self.host_capacity_bytes}


def _values(kn: bd.Knobs) -> dict[str, np.ndarray]:
    names = COUNT_FIELDS + ("context", "pp_virtual", "head_shards", "pad_heads") + TRAINING_ONLY
    return {k: bd.num(getattr(kn, k)) for k in names}  # one configuration's: Python floats


def _shown(raw: dict[str, np.ndarray]) -> dict[str, object]:
    """'tp=8' where the knob has one value (a single configuration), else its name 'tp' (a sweep)."""
    def one(k: str, x: float) -> str:
        return f"{k}={int(x) if float(x).is_integer() else x:g}" if np.isfinite(x) else f"{k}={x}"

    return {k: one(k, float(np.ravel(v)[0])) if np.size(v) == 1 else k for k, v in raw.items()}


def _reasons(rules, broken: list[bool], v: dict) -> str:
    """'name: why; ...' of the broken rules ('' when none is)."""
    if not any(broken):
        return ""
    shown = _shown(v)
    return "; ".join(f"{r.name}: {r.text(shown)}" for r, b in zip(rules, broken) if b)


def check_rules(system: System, arch: ModelArch, kn: bd.Knobs,
                recompute: Recompute = Recompute.NONE) -> tuple[np.ndarray, np.ndarray]:
    """(valid, reasons) of the configurations in `kn`, broadcast together (recompute: the training policy)."""
    valid, reasons, _ = _checked(system, arch, kn, recompute)
    return valid, reasons


def _checked(system: System, arch: ModelArch, kn: bd.Knobs, recompute: Recompute):
    """check_rules' (valid, reasons) and, for arrays, the reasons as (codes, distinct texts) (None for one
    configuration: its reasons are one text)."""
    v = _values(bd.on_system(system, kn))
    rules = _rules(system, arch, Phase(kn.phase), recompute)
    if all(isinstance(x, float) for x in v.values()):  # one configuration: its rules on Python floats and its
        try:  # reasons directly (np.unique and broadcasts cost more than the rules)
            broken = [bool(r.broken(v)) for r in rules]
        except ArithmeticError:  # a zero count or head count: numpy's path below carries it to NaN (broken)
            broken = None
        if broken is not None:
            text = _reasons(rules, broken, v)
            return np.bool_(not text), text, None
    v = {k: np.asarray(x) for k, x in v.items()}  # numpy's division and modulo carry a zero to inf / NaN
    with np.errstate(divide="ignore", invalid="ignore"):
        broken = [np.asarray(r.broken(v), dtype=bool) for r in rules]
    shape = np.broadcast_shapes(*[b.shape for b in broken], *[np.shape(x) for x in v.values()])
    code = np.zeros(shape, dtype=np.int64)
    for i, b in enumerate(broken):
        code |= np.broadcast_to(b, shape).astype(np.int64) << i
    distinct, inverse = np.unique(code, return_inverse=True)
    texts = np.asarray([_reasons(rules, [bool(int(c) >> i & 1) for i in range(len(rules))], v) for c in distinct],
                       dtype=object)
    codes = inverse.reshape(shape)
    return code == 0, texts[codes], (codes, texts)


def _distinct(x: np.ndarray) -> list:
    return [x.item()] if x.ndim == 0 else np.unique(x).tolist()


def feasibility(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
                recompute: Recompute = Recompute.NONE) -> Feasibility:
    """Validity and memory fit of every configuration in `kn` (see the module doc)."""
    cal = cal or calibration_of(system)
    valid, reasons, coded = _checked(system, arch, kn, recompute)
    flash, sp = kn.flash_attention, kn.sequence_parallel
    if isinstance(flash, bool) and isinstance(sp, bool):  # one value of each (a point's, most sweeps')
        switches = [(flash, sp)]
    else:
        flash, sp = np.asarray(flash, dtype=bool), np.asarray(sp, dtype=bool)
        switches = [(f, s) for f in _distinct(flash) for s in _distinct(sp)]
    with np.errstate(divide="ignore", invalid="ignore"):
        # footprint takes these two switches as scalars: a sweep over them is priced once per value
        fps = {(f, s): memory.footprint(system, arch, kn, cal, recompute, f, s) for f, s in switches}

    def pick(x):  # each configuration's value from the footprint of its (flash, sp) switches
        return sum(np.where((flash == f) & (sp == s), _f(x(fp)), 0.0) for (f, s), fp in fps.items())

    fp = next(iter(fps.values()))
    if len(fps) == 1:  # one value of each switch: the footprint's own
        total, host, host_fits = _f(fp.total_bytes), _f(fp.host_bytes), np.asarray(fp.host_fits, dtype=bool)
    else:
        total, host, host_fits = pick(lambda fp: fp.total_bytes), pick(lambda fp: fp.host_bytes), \
            pick(lambda fp: fp.host_fits) > 0
    capacity, host_capacity = system.chip.hbm_capacity_bytes, fp.host_capacity_bytes
    if valid.ndim == 0:  # one configuration's rules: the answer takes the footprint's shape as a view
        valid, reasons = np.asarray(valid).reshape(total.shape), np.asarray(reasons).reshape(total.shape)
        coded = coded and (np.asarray(coded[0]).reshape(total.shape), coded[1])
    else:
        shape = np.broadcast_shapes(valid.shape, total.shape)
        total, valid, reasons = (np.broadcast_to(x, shape) for x in (total, valid, reasons))
        coded = coded and (np.broadcast_to(coded[0], shape), coded[1])
    # fits is about memory alone (an invalid plan's footprint is still reported): `usable` is both; offloaded
    # activations within the host memory per chip (Footprint.host_fits)
    fits = np.isfinite(total) & (total <= capacity) & host_fits
    return Feasibility(valid=valid, reasons=reasons, fits=fits, memory_bytes=total, capacity_bytes=capacity,
                       host_bytes=host, host_capacity_bytes=host_capacity, reason_codes=coded)


def oversubscribed_line(f: dict, chip: str) -> str:
    """One line for a configuration that does not fit (f: Feasibility.first())."""
    gib = units.GiB
    if f["memory_bytes"] <= f["capacity_bytes"] and f.get("host_capacity_bytes") \
            and f.get("host_bytes", 0.0) > f["host_capacity_bytes"]:
        return (f"does not fit: offloaded activations need {f['host_bytes'] / gib:,.1f} GiB of host memory per chip, "
                f"the node has {f['host_capacity_bytes'] / gib:,.1f} GiB per chip "
                f"({f['host_bytes'] / f['host_capacity_bytes']:.2f}x)")
    return (f"does not fit: needs {f['memory_bytes'] / gib:,.1f} GiB per chip, {chip} has "
            f"{f['capacity_bytes'] / gib:,.1f} GiB ({f['memory_bytes'] / f['capacity_bytes']:.2f}x)")


@dataclass(frozen=True)
class FitResult:
    """The fewest chips that hold a scenario: whole chips and instances (nodes), and the plan.
    node_share: the chips as a fraction of one instance (a replica smaller than a node)."""

    chips: int
    instances: int
    node_share: float
    plan: dict
    total_bytes: float
    capacity_bytes: float


def min_fit(system: System, arch: ModelArch, scenario: Scenario, cal: Calibration | None = None,
            max_chips: int = 8192, flash_attention: bool = True) -> FitResult:
    """Fewest chips (and instances) on which `scenario` fits with a valid plan, searched vectorised.

    Inference: tensor parallel t in powers of two within the scale-up domain, then pipeline
    stages p; fewest chips t x p wins. Training: chips = 2^j; for each, every split
    t (power of two within a node) x p x dp with the scenario's ZeRO stage; fewest chips with
    any valid, fitting plan wins (ties: least pipeline, then least t). A plan breaking a rule
    of this module (heads, KV heads, layers, experts not divisible) is never chosen.
    """
    cal = cal or calibration_of(system)
    kn0 = bd.Knobs.of(scenario)
    L = arch.num_hidden_layers
    pows = [2 ** j for j in range(0, int(np.log2(max_chips)) + 1)]
    rows = []
    for chips in pows:  # a fixed set of at most 14 x 14 x 14 candidate plans, not a user-given count
        for t in pows:
            if t > min(chips, system.node.chips if scenario.phase == Phase.TRAIN else system.scaleup_chips):
                continue
            for p in pows:
                if t * p > chips or p > L:
                    continue
                dp = chips // (t * p) if scenario.phase == Phase.TRAIN else 1
                if scenario.phase != Phase.TRAIN and t * p != chips:
                    continue
                rows.append((chips, t, p, dp))
    arr = np.asarray(rows, dtype=float)
    ep = np.minimum(arr[:, 1], max(1, arch.num_experts or 1)) if arch.is_moe else np.ones(len(arr))
    ep = np.where(arr[:, 1] % ep == 0, ep, 1.0)
    kn = bd.Knobs(**{**kn0.__dict__, "tp": arr[:, 1], "pp": arr[:, 2], "dp": arr[:, 3], "ep": ep,
                     "microbatches": np.maximum(arr[:, 2], kn0.microbatches)})
    fp = memory.footprint(system, arch, kn, cal, scenario.recompute, flash_attention,
                          scenario.parallel.sequence_parallel)
    valid, _ = check_rules(system, arch, kn)
    ok = fp.fits & valid & (arr[:, 0] <= max_chips)
    if not ok.any():
        raise ValueError(f"{arch.name} does not fit on up to {max_chips} {system.chip.display_name} chips "
                         f"with a valid plan for this scenario")
    idx = np.flatnonzero(ok)
    best = min(idx, key=lambda i: (arr[i, 0], arr[i, 2], arr[i, 1]))
    chips = int(arr[best, 0])
    return FitResult(chips=chips, instances=-(-chips // system.node.chips), node_share=chips / system.node.chips,
                     plan={"tp": int(arr[best, 1]), "pp": int(arr[best, 2]), "dp": int(arr[best, 3]),
                           "ep": int(ep[best]), "zero": scenario.parallel.zero},
                     total_bytes=float(fp.total_bytes[best]), capacity_bytes=fp.capacity_bytes)
