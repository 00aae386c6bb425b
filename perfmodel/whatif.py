"""What-if overrides: scale or set spec values, calibration parameters and workload fields.

One override is a name and a value text:

    hbm_bandwidth=+50%        scale by 1.5          tensor_rate=x2     scale by 2
    hbm_bandwidth=6 TB/s      set (units as in spec files)            hbm_efficiency=0.7   set
    num_hidden_layers=40      set a workload (ModelArch) field        price=*0.8           scale

Three families, told apart by name (or an explicit prefix `spec.`, `cal.`, `workload.`):
    spec      SPEC_KNOBS below (a chip, node or link-tier value of the System)
    cal       any calibration parameter (hardware_specs/calibration/*.toml)
    workload  any numeric or boolean ModelArch field (Hugging Face names)

Everything is copied, never mutated (dataclasses.replace); a spec value that a what-if
changed is recorded in the copy's provenance with status "assumed" and the old value, so
reports and the provenance sheet show it. `WhatIf` is a frozen, hashable record that
round-trips through URL query parameters (app) and `--set NAME=VALUE` (CLI).

Does not: evaluate anything, or read files beyond the catalogue loaders it is given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

from perfmodel import units
from perfmodel.calibration import Calibration
from perfmodel.dtypes import DType
from perfmodel.hardware import ElementEngine, Scope, System
from perfmodel.provenance import Status
from perfmodel.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.workload import ModelArch

FAMILIES = ("spec", "cal", "workload")


class WhatIfError(ValueError):
    """An override that names nothing known or whose value cannot be read."""


# ---------------------------------------------------------------- values: scale or set


@dataclass(frozen=True)
class Change:
    """`op` is "scale" (value is the factor) or "set" (value is the text to parse)."""

    op: str
    factor: float = 1.0
    text: str = ""


def parse_change(text: str) -> Change:
    """'x1.5' / '*1.5' / '+50%' / '-20%' scale; anything else sets (parsed later by kind)."""
    s = str(text).strip()
    if not s:
        raise WhatIfError("empty what-if value")
    try:
        if s[0] in "x*×":
            factor = float(s[1:])
        elif s.endswith("%") and s[0] in "+-":
            factor = 1.0 + float(s[:-1]) / 100.0
        else:
            return Change("set", text=s)
    except ValueError:
        raise WhatIfError(f"cannot read the scale {s!r}: write x1.5, *1.5, +50% or -20%") from None
    if not factor > 0:
        raise WhatIfError(f"scale {s!r} must leave a positive value (factor {factor:g})")
    return Change("scale", factor=factor)


def _set_value(change: Change, kind: str, name: str) -> float:
    try:
        value = units.parse(change.text if kind not in ("count", "ratio") else _number_or_text(change.text), kind)
    except units.UnitError as exc:
        raise WhatIfError(f"{name}: {exc} (or scale it: x1.5, +50%)") from None
    if not value > 0:
        raise WhatIfError(f"{name}: must be positive, got {change.text!r}")
    return value


def _number_or_text(s: str):
    try:
        return float(s)
    except ValueError:
        return s


def _apply(old: float, change: Change, kind: str, name: str) -> float:
    return old * change.factor if change.op == "scale" else _set_value(change, kind, name)


# ---------------------------------------------------------------- spec knobs


def _scale_map(m: Mapping, factor: float, keys=None) -> Mapping:
    return MappingProxyType({k: (v * factor if keys is None or k in keys else v) for k, v in m.items()})


def _engine(e: ElementEngine | None, factor: float, exp_only: bool = False) -> ElementEngine | None:
    if e is None:
        return None
    if exp_only:
        return dataclasses.replace(e, exp_elems_per_s=e.exp_elems_per_s * factor)
    rates = {f.name: getattr(e, f.name) * factor for f in dataclasses.fields(e)
             if f.name.endswith("_per_s") and getattr(e, f.name)}  # every rate of the engine
    return dataclasses.replace(e, **rates)


def _tensor(system: System, factor: float, dtypes=None) -> System:
    c = system.chip
    t = dataclasses.replace(c.tensor, flop_per_s=_scale_map(c.tensor.flop_per_s, factor, dtypes))
    return dataclasses.replace(system, chip=dataclasses.replace(
        c, tensor=t, peak_flop_per_s=_scale_map(c.peak_flop_per_s, factor, dtypes),
        peak_sparse_flop_per_s=_scale_map(c.peak_sparse_flop_per_s, factor, dtypes)))


def _tiers(system: System, factor: float, scopes: tuple[Scope, ...]) -> System:
    tiers = tuple(dataclasses.replace(t, bandwidth_bytes_per_s=t.bandwidth_bytes_per_s * factor)
                  if t.scope in scopes else t for t in system.tiers)
    chip = system.chip
    if Scope.NODE in scopes and chip.link_bandwidth_bytes_per_s:
        chip = dataclasses.replace(chip, link_bandwidth_bytes_per_s=chip.link_bandwidth_bytes_per_s * factor)
    node = system.node
    if Scope.SCALEOUT in scopes and node.efa_bandwidth_bytes_per_s:
        node = dataclasses.replace(node, efa_bandwidth_bytes_per_s=node.efa_bandwidth_bytes_per_s * factor)
    return dataclasses.replace(system, tiers=tiers, chip=chip, node=node)


def _tier_bw(system: System, scopes: tuple[Scope, ...]) -> float | None:
    bws = [t.bandwidth_bytes_per_s for t in system.tiers if t.scope in scopes]
    return max(bws) if bws else None


def _tier_paths(system: System, scopes: tuple[Scope, ...]) -> tuple[str, ...]:
    out = tuple(f"tiers.{t.name}.bandwidth" for t in system.tiers if t.scope in scopes)
    if Scope.NODE in scopes:
        out += ("chip.interconnect.bandwidth",)
    if Scope.SCALEOUT in scopes:
        out += ("node.efa_bandwidth",)
    return out


def _chip_field(attr: str) -> tuple[Callable, Callable]:
    def get(s: System):
        return getattr(s.chip, attr)

    def scale(s: System, f: float) -> System:
        return s.replace_chip(**{attr: getattr(s.chip, attr) * f})

    return get, scale


def _node_field(attr: str) -> tuple[Callable, Callable]:
    def get(s: System):
        return getattr(s.node, attr)

    def scale(s: System, f: float) -> System:
        return dataclasses.replace(s, node=dataclasses.replace(s.node, **{attr: getattr(s.node, attr) * f}))

    return get, scale


@dataclass(frozen=True)
class SpecKnob:
    """A spec value a what-if may scale or set. `get` returns the SI value (None: not
    published for this system); `scale` returns a System copy with the value times f;
    `paths` are the provenance prefixes the knob changes (a tuple, or a function of the
    System for link tiers), for the provenance sheet."""

    name: str
    description: str
    kind: str
    get: Callable[[System], float | None]
    scale: Callable[[System, float], System]
    paths: tuple[str, ...] | Callable[[System], tuple[str, ...]]

    def paths_for(self, system: System) -> tuple[str, ...]:
        return self.paths(system) if callable(self.paths) else self.paths


def _knobs() -> dict[str, SpecKnob]:
    k: list[SpecKnob] = []
    g, s = _chip_field("hbm_bandwidth_bytes_per_s")
    k.append(SpecKnob("hbm_bandwidth", "HBM bandwidth per chip", "bandwidth", g, s, ("chip.memory.hbm_bandwidth",)))
    g, s = _chip_field("hbm_capacity_bytes")
    k.append(SpecKnob("hbm_capacity", "HBM capacity per chip", "capacity", g, s, ("chip.memory.hbm_capacity",)))
    k.append(SpecKnob("tensor_rate", "tensor-engine rate and peak, every data type (get/set: BF16)", "flop_rate",
                      lambda s: s.chip.tensor.flop_per_s.get(DType.BF16), lambda s, f: _tensor(s, f),
                      ("chip.peak.", "chip.peak_sparse.", "chip.tensor_engine.rate.")))
    for d in DType:
        k.append(SpecKnob(f"tensor_rate.{d.value}", f"tensor-engine rate and peak for {d.value} only", "flop_rate",
                          (lambda dd: lambda s: s.chip.tensor.flop_per_s.get(dd))(d),
                          (lambda dd: lambda s, f: _tensor(s, f, {dd}))(d),
                          (f"chip.peak.{d.value}", f"chip.peak_sparse.{d.value}", f"chip.tensor_engine.rate.{d.value}")))
    for eng in ("vector", "scalar", "gpsimd"):
        k.append(SpecKnob(
            f"{eng}_rate", f"{eng} engine element rate (elements/s), exp included", "count",
            (lambda e: lambda s: getattr(s.chip, e).elems_per_s if getattr(s.chip, e) else None)(eng),
            (lambda e: lambda s, f: s.replace_chip(**{e: _engine(getattr(s.chip, e), f)}))(eng),
            (f"chip.{eng}_engine.",)))
    k.append(SpecKnob("exp_rate", "exponential (softmax) rate of the vector and scalar engines", "count",
                      lambda s: max(s.chip.vector.exp_elems_per_s, s.chip.scalar.exp_elems_per_s),
                      lambda s, f: s.replace_chip(vector=_engine(s.chip.vector, f, True),
                                                  scalar=_engine(s.chip.scalar, f, True)),
                      ("chip.vector_engine.exp_elements_per_cycle", "chip.scalar_engine.exp_elements_per_cycle")))
    g, s = _chip_field("sram_bytes")
    k.append(SpecKnob("sram", "on-chip SRAM per chip", "capacity", g, s, ("chip.memory.sram",)))
    for name, scopes, desc in (("link_bandwidth", (Scope.NODE, Scope.SCALEUP), "scale-up link bandwidth per chip "
                                "(every node and scale-up tier)"),
                               ("node_link_bandwidth", (Scope.NODE,), "link bandwidth per chip inside a node"),
                               ("scaleup_link_bandwidth", (Scope.SCALEUP,), "link bandwidth per chip between nodes "
                                "of the scale-up domain"),
                               ("scaleout_bandwidth", (Scope.SCALEOUT,), "scale-out (EFA) bandwidth")):
        k.append(SpecKnob(name, desc + "; set: the fastest such tier, the others keep their ratio", "bandwidth",
                          (lambda sc: lambda s: _tier_bw(s, sc))(scopes),
                          (lambda sc: lambda s, f: _tiers(s, f, sc))(scopes), (lambda sc: lambda s: _tier_paths(s, sc))(scopes)))
    g, s = _chip_field("tdp_w")
    k.append(SpecKnob("tdp", "chip power (TDP)", "power", g, s, ("chip.power.tdp",)))
    g, s = _node_field("power_w")
    k.append(SpecKnob("node_power", "node (instance) power", "power", g, s, ("node.power",)))
    g, s = _node_field("price_usd_per_hour")
    k.append(SpecKnob("price", "on-demand price per node (instance)", "price_rate", g, s, ("node.price",)))
    return {x.name: x for x in k}


SPEC_KNOBS: dict[str, SpecKnob] = _knobs()


def knobs_frame(system: System | None = None):
    """Table of spec knobs: name, description, kind, unit (and the system's current value)."""
    import pandas as pd

    rows = []
    for kb in SPEC_KNOBS.values():
        row = {"name": kb.name, "description": kb.description, "kind": kb.kind,
               "unit": units.KINDS[kb.kind].internal_unit}
        if system is not None:
            v = kb.get(system)
            row["value_si"] = float(v) if v else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def spec_value(system: System, name: str) -> float | None:
    return _knob(name).get(system)


def _knob(name: str) -> SpecKnob:
    try:
        return SPEC_KNOBS[name]
    except KeyError:
        raise WhatIfError(f"unknown spec value {name!r} (known: {', '.join(n for n in SPEC_KNOBS if '.' not in n)}, "
                          "tensor_rate.<dtype>)") from None


def _mark(system: System, kb: SpecKnob, text: str, factor: float) -> System:
    prov = dict(system.provenance)
    prefixes = kb.paths_for(system)
    for path, v in system.provenance.items():
        if any(path.startswith(p) for p in prefixes):
            prov[path] = dataclasses.replace(
                v, raw=f"{v.raw} -> what-if {kb.name}={text}", si=v.si * factor, status=Status.ASSUMED,
                note=f"what-if override {kb.name}={text} (was {v.raw}, {v.status.value})")
    return dataclasses.replace(system, provenance=MappingProxyType(prov))


def apply_spec(system: System, overrides: Iterable[tuple[str, str]]) -> System:
    """System copy with each (knob, value text) applied in order."""
    for name, text in overrides:
        kb = _knob(name)
        old = kb.get(system)
        if not old:
            raise WhatIfError(f"{system.name} has no {kb.description} to change ({name})")
        new = _apply(old, parse_change(text), kb.kind, name)
        system = _mark(kb.scale(system, new / old), kb, text, new / old)
    return system


# ---------------------------------------------------------------- calibration and workload


def apply_calibration(cal: Calibration, overrides: Iterable[tuple[str, str]]) -> Calibration:
    """Calibration copy with parameters scaled or set (strings with units as in the files)."""
    values: dict[str, float | str] = {}
    for name, text in overrides:
        if name not in cal.params:
            raise WhatIfError(f"unknown what-if name {name!r}: not a spec value ("
                              f"{', '.join(n for n in SPEC_KNOBS if '.' not in n)}), a calibration parameter "
                              f"({', '.join(sorted(cal.params))}) or a numeric workload field")
        ch = parse_change(text)
        values[name] = cal[name] * ch.factor if ch.op == "scale" else _number_or_text(ch.text)
    try:
        return cal.with_overrides(values) if values else cal
    except (KeyError, ValueError) as exc:
        raise WhatIfError(str(exc).strip("'\"")) from None


_WORKLOAD_TYPES = {f.name: f.type for f in dataclasses.fields(ModelArch)}
WORKLOAD_FIELDS = tuple(n for n, t in _WORKLOAD_TYPES.items() if t in ("int", "bool", "float"))


def apply_workload(arch: ModelArch, overrides: Iterable[tuple[str, str]]) -> ModelArch:
    """ModelArch copy with numeric / boolean fields changed (integers stay whole numbers)."""
    changes: dict[str, object] = {}
    for name, text in overrides:
        if name not in WORKLOAD_FIELDS:
            raise WhatIfError(f"unknown or non-numeric workload field {name!r} (numeric fields: "
                              f"{', '.join(WORKLOAD_FIELDS)})")
        kind = _WORKLOAD_TYPES[name]
        old = changes.get(name, getattr(arch, name))
        if kind == "bool":
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise WhatIfError(f"workload field {name}: write true or false, got {text!r}")
            changes[name] = low in ("true", "1", "yes")
            continue
        ch = parse_change(text)
        try:
            new = old * ch.factor if ch.op == "scale" else float(ch.text)
        except ValueError:
            raise WhatIfError(f"workload field {name}: expected a number, got {text!r}") from None
        if kind == "int":
            if ch.op == "set" and new != int(new):
                raise WhatIfError(f"workload field {name}: must be a whole number, got {text!r}")
            new = int(round(new))
        if new < 0:
            raise WhatIfError(f"workload field {name}: must not be negative, got {text!r}")
        changes[name] = new
    return dataclasses.replace(arch, **changes) if changes else arch


# ---------------------------------------------------------------- the record


@dataclass(frozen=True)
class WhatIf:
    """A set of overrides, hashable (st.cache_data key) and printable.

    Each family is a tuple of (name, value text) pairs in the order given."""

    spec: tuple[tuple[str, str], ...] = ()
    cal: tuple[tuple[str, str], ...] = ()
    workload: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.spec or self.cal or self.workload)

    def items(self) -> list[tuple[str, str, str]]:
        """[(family, name, value text), ...]"""
        return [(fam, n, v) for fam in FAMILIES for n, v in getattr(self, fam)]

    def assignments(self) -> list[str]:
        return [f"{fam}.{n}={v}" for fam, n, v in self.items()]

    def label(self) -> str:
        """Short text for file names and captions, e.g. 'hbm_bandwidth+50%'."""
        return "_".join(f"{n}{v}" for _, n, v in self.items())

    def with_spec(self, name: str, text: str | None) -> "WhatIf":
        """Copy with one spec override set (text None or '' removes it)."""
        rest = tuple((n, v) for n, v in self.spec if n != name)
        return dataclasses.replace(self, spec=rest + (((name, text),) if text else ()))

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.items(), columns=["family", "name", "value"])


def split_assignment(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise WhatIfError(f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name, value = name.strip(), value.strip()
    if not name or not value:
        raise WhatIfError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def family_of(name: str, cal: Calibration | None = None) -> tuple[str, str]:
    """(family, bare name) for an override name; an explicit 'spec.' / 'cal.' / 'workload.' prefix wins.
    Without `cal`, a name that is neither a spec knob nor a workload field is taken as a calibration
    parameter and checked when applied."""
    head, _, tail = name.partition(".")
    if head in FAMILIES and tail:
        return head, tail
    if name in SPEC_KNOBS:
        return "spec", name
    if cal is not None and name in cal.params:
        return "cal", name
    if name in WORKLOAD_FIELDS:
        return "workload", name
    if cal is None:  # checked against the system's calibration when applied (apply_calibration)
        return "cal", name
    known = "spec values (" + ", ".join(n for n in SPEC_KNOBS if "." not in n) + "), calibration parameters"
    if cal is not None:
        known += " (" + ", ".join(sorted(cal.params)) + ")"
    raise WhatIfError(f"unknown what-if name {name!r}; known: {known}, or numeric workload fields")


def parse_assignments(texts: Iterable[str], cal: Calibration | None = None) -> WhatIf:
    """WhatIf from ['hbm_bandwidth=+50%', 'hbm_efficiency=0.8', ...] (CLI --set, app text box)."""
    fams: dict[str, list[tuple[str, str]]] = {f: [] for f in FAMILIES}
    for t in texts:
        if not str(t).strip():
            continue
        name, value = split_assignment(str(t))
        fam, bare = family_of(name, cal)
        parse_change(value)  # fail early on malformed scales
        fams[fam].append((bare, value))
    return WhatIf(**{f: tuple(v) for f, v in fams.items()})


def apply(system: System, arch: ModelArch, cal: Calibration, whatif: WhatIf) -> tuple[System, ModelArch, Calibration]:
    """Apply every override; calibration overrides act on the calibration given (built for the
    original chip: a what-if changes values, never which chip's assumptions apply)."""
    return apply_spec(system, whatif.spec), apply_workload(arch, whatif.workload), apply_calibration(cal, whatif.cal)


# ---------------------------------------------------------------- URL query parameters

_PREFIX = {"spec": "s.", "cal": "c.", "workload": "w."}


def to_query(whatif: WhatIf) -> dict[str, str]:
    """{'s.hbm_bandwidth': '+50%', 'c.hbm_efficiency': '0.8', 'w.num_hidden_layers': '40'}"""
    return {f"{_PREFIX[fam]}{n}": v for fam, n, v in whatif.items()}


def from_query(params: Mapping[str, str]) -> WhatIf:
    """Inverse of to_query; other keys are ignored."""
    fams: dict[str, list[tuple[str, str]]] = {f: [] for f in FAMILIES}
    for key, value in params.items():
        for fam, p in _PREFIX.items():
            if key.startswith(p) and value not in (None, ""):
                fams[fam].append((key[len(p):], str(value)))
    return WhatIf(**{f: tuple(v) for f, v in fams.items()})


# ---------------------------------------------------------------- scenarios from plain options


@dataclass(frozen=True)
class ScenarioOptions:
    """The plain options the CLI and the app expose, hashable. `dtype` picks
    Precision.uniform(dtype); a model that ships smaller routed-expert weights (gpt-oss:
    MXFP4) keeps them when they are smaller than `dtype`. Training uses BF16 activations
    and the optimizer's own state sizes."""

    phase: str = "decode"
    batch: int = 1
    seq_len: int = 2048
    context: int = 0
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    da: int = 1
    dtype: str = "bf16"
    microbatches: int = 1
    zero: int = 0
    recompute: str = "none"
    optimizer: str = "adam-mixed"
    sequence_parallel: bool = False

    def replace(self, **changes) -> "ScenarioOptions":
        return dataclasses.replace(self, **changes)

    def resolved(self) -> "ScenarioOptions":
        """Copy with defaults filled in: decode without a context gets DEFAULT_CONTEXT."""
        if self.phase == "decode" and not self.context:
            return self.replace(context=DEFAULT_CONTEXT["decode"])
        return self


DEFAULT_CONTEXT = {"decode": 4096, "prefill": 0, "train": 0}  # tokens already cached before a decode step


def scenario_of(opts: ScenarioOptions, arch: ModelArch, system: System | None = None) -> Scenario:
    """The Scenario for plain options; decode without a context gets DEFAULT_CONTEXT.

    Routed experts keep the shipped data type (gpt-oss: MXFP4) when it is smaller than the
    compute type and, given a `system`, its tensor engine consumes that type natively;
    otherwise they are stored in the compute type (converted offline, as a deployment on
    hardware without MX support does)."""
    from perfmodel.dtypes import bytes_per_element

    phase = Phase(opts.phase)
    d = DType.parse(opts.dtype)
    prec = Precision.uniform(d)
    ew = arch.expert_weight_dtype
    native = system is None or system.chip.supports(ew) if ew else False
    if ew and arch.is_moe and bytes_per_element(ew) < bytes_per_element(d) and native:
        prec = dataclasses.replace(prec, expert_weights=ew)
    sc = Scenario(phase=phase, batch=int(opts.batch), seq_len=int(opts.seq_len), context=int(opts.resolved().context),
                  parallel=Parallelism(tp=int(opts.tp), pp=int(opts.pp), dp=int(opts.dp), ep=int(opts.ep),
                                       da=int(opts.da), zero=int(opts.zero), microbatches=int(opts.microbatches),
                                       sequence_parallel=bool(opts.sequence_parallel)),
                  precision=prec, recompute=Recompute(opts.recompute), optimizer=Optimizer(opts.optimizer))
    sc.validate()
    return sc


def plan_label(opts: ScenarioOptions) -> str:
    return f"tp{opts.tp} pp{opts.pp} ep{opts.ep} dp{opts.dp}"


__all__ = ["WhatIf", "WhatIfError", "SPEC_KNOBS", "WORKLOAD_FIELDS", "ScenarioOptions", "apply", "apply_spec",
           "apply_calibration", "apply_workload", "parse_assignments", "parse_change", "to_query", "from_query",
           "scenario_of", "knobs_frame", "spec_value"]
