"""Spec-file schema (strict) and its conversion to typed hardware.

A spec value in a TOML file is a table:

    [memory.hbm_bandwidth]
    value = "2.9 TB/s"            # as the source prints it, unit included
    source = "S7"                 # key(s) in hardware_specs/sources.toml
    status = "published"          # published | derived | estimated | projected
    note = "..."                  # optional
    derivation = "16 x 2.9 TB/s"  # required when status = "derived"
    [[memory.hbm_bandwidth.alternatives]]   # other sources' values (conflicts)
    value = "3 TB/s"
    source = "S10"

A projected chip (`base = "trainium3"`) may state `ratio = 4.0` and `range = [3.5, 4.0]`
instead of `value`: the field is ratio x the base chip's same field. Fields a projected
chip does not state are taken from the base and marked projected.

Unknown keys, missing units, wrong dimensions, non-positive values, unknown source keys
and a missing `derivation` are rejected with the file, the field and the reason.

Does not: find or read files (catalog.py does).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, ValidationInfo, model_validator

from perfmodel import units
from perfmodel.dtypes import DType
from perfmodel.hardware import Chip, ElementEngine, Family, LinkTier, Node, Scope, System, TensorEngine, Topology
from perfmodel.provenance import Alternative, SpecValue, Status

SCHEMA_VERSION = 1
STRICT = ConfigDict(extra="forbid", frozen=True)


class CatalogError(ValueError):
    """A catalogue file is malformed. The message names the file, the field and the problem."""


# ---------------------------------------------------------------- one spec value

class _RawAlternative(BaseModel):
    model_config = STRICT
    value: str | int | float
    source: str
    note: str = ""
    label: str = ""
    status: Status | None = None
    derivation: str = ""


class _RawValue(BaseModel):
    model_config = STRICT
    value: str | int | float | None = None
    ratio: float | None = None
    range: tuple[float, float] | None = None
    source: str
    status: Status
    note: str = ""
    derivation: str = ""
    as_of: str = ""
    alternatives: list[_RawAlternative] = []

    @model_validator(mode="after")
    def _check(self) -> "_RawValue":
        if (self.value is None) == (self.ratio is None):
            raise ValueError("give exactly one of 'value' or 'ratio'")
        if self.status == Status.ASSUMED:
            raise ValueError("status 'assumed' belongs in calibration files, not spec sheets")
        if self.status == Status.DERIVED and not self.derivation.strip():
            raise ValueError("a derived value needs 'derivation' (the arithmetic and its inputs)")
        if self.ratio is not None:
            if self.status != Status.PROJECTED:
                raise ValueError("a value stated as a ratio must have status 'projected'")
            if self.ratio <= 0:
                raise ValueError(f"ratio must be positive, got {self.ratio}")
            if self.range is not None and not (0 < self.range[0] <= self.ratio <= self.range[1]):
                raise ValueError(f"range {list(self.range)} must be positive and contain the ratio {self.ratio}")
        if not self.source.strip():
            raise ValueError("source must not be empty")
        return self


def _parse_value(kind: str):
    def parse(v: Any, info: ValidationInfo) -> SpecValue:
        if isinstance(v, SpecValue):
            return v
        if not isinstance(v, dict):
            raise ValueError(
                f"expected a table with value, source and status (e.g. value = \"...\", "
                f"source = \"S1\", status = \"published\"), got {v!r}")
        raw = _RawValue.model_validate(v)
        ctx = info.context or {}
        known = ctx.get("sources")
        keys = [s.strip() for s in raw.source.replace(";", ",").split(",") if s.strip()]
        for src in keys + [s.strip() for a in raw.alternatives for s in a.source.replace(";", ",").split(",")]:
            if known is not None and src and src not in known:
                raise ValueError(f"source {src!r} is not in hardware_specs/sources.toml")
        si = float("nan")
        if raw.value is not None:
            si = units.parse(raw.value, kind)
            _check_positive(si, raw.value)
        alts = []
        for a in raw.alternatives:
            a_si = units.parse(a.value, kind)
            _check_positive(a_si, a.value, "alternative ")
            alts.append(Alternative(str(a.value), a_si, a.source, a.note, a.label))
        return SpecValue(
            path=".".join(str(p) for p in (info.field_name,) if p), raw=str(raw.value if raw.value is not None else ""),
            si=si, kind=kind, source=raw.source, status=raw.status, note=raw.note, derivation=raw.derivation,
            as_of=raw.as_of, alternatives=tuple(alts), ratio=raw.ratio,
            ratio_range=tuple(raw.range) if raw.range else None)
    return PlainValidator(parse)


def _check_positive(si: float, raw: Any, what: str = "") -> None:
    if not si > 0:
        raise ValueError(f"{what}value must be positive, got {raw!r}")


def Q(kind: str):
    """Type of a spec field holding a quantity of `kind` (see units.KINDS)."""
    return Annotated[SpecValue, _parse_value(kind)]


Count = Q("count")
DTypeName = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "mxfp8", "mxfp6", "mxfp4", "fp4", "int8", "int4"]

# ---------------------------------------------------------------- chip file


class _TensorEngineRaw(BaseModel):
    model_config = STRICT
    per: Literal["core", "chip"]
    rows: Count | None = None
    cols: Count | None = None
    clock: Q("frequency") | None = None
    rate: dict[DTypeName, Q("flop_rate")] = {}
    note: str = ""


class _ElementEngineRaw(BaseModel):
    model_config = STRICT
    per: Literal["core", "chip"]
    clock: Q("frequency") | None = None
    elements_per_cycle: Q("elements_per_cycle") | None = None
    exp_elements_per_cycle: Q("elements_per_cycle") | None = None
    flops_fp32: Q("flop_rate") | None = None
    processors: Count | None = None
    note: str = ""


class _MemoryRaw(BaseModel):
    model_config = STRICT
    hbm_capacity: Q("capacity") | None = None
    hbm_bandwidth: Q("bandwidth") | None = None
    hbm_stacks: Count | None = None
    hbm_type: str = ""
    sram_per_core: Q("capacity") | None = None
    sram_total: Q("capacity") | None = None
    psum_per_core: Q("capacity") | None = None
    dma_bandwidth: Q("bandwidth") | None = None


class _InterconnectRaw(BaseModel):
    model_config = STRICT
    name: str = ""
    ports: Count | None = None
    bandwidth: Q("bandwidth") | None = None
    direction: Literal["per-direction", "bidirectional", "unstated"] = "unstated"
    collective_engines: Count | None = None


class _PowerRaw(BaseModel):
    model_config = STRICT
    tdp: Q("power") | None = None
    note: str = ""


class ChipFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    kind: Literal["chip"]
    name: str
    display_name: str
    vendor: str
    family: Family
    generation: str
    core_name: str = ""
    description: str = ""
    base: str | None = None
    cores: Count | None = None
    peak: dict[DTypeName, Q("flop_rate")] = {}
    peak_sparse: dict[DTypeName, Q("flop_rate")] = {}
    tensor_engine: _TensorEngineRaw | None = None
    vector_engine: _ElementEngineRaw | None = None
    scalar_engine: _ElementEngineRaw | None = None
    gpsimd_engine: _ElementEngineRaw | None = None
    memory: _MemoryRaw | None = None
    interconnect: _InterconnectRaw | None = None
    power: _PowerRaw | None = None


# ---------------------------------------------------------------- system file

_TOTAL_KINDS = {**{d: "flop_rate" for d in DType.__members__.values() for d in [d.value]},
                "hbm_capacity": "capacity", "hbm_bandwidth": "bandwidth", "efa_bandwidth": "bandwidth",
                "link_bandwidth_per_chip": "bandwidth", "host_memory": "capacity"}
_TOTAL_KINDS.update({f"sparse_{d.value}": "flop_rate" for d in DType})


def _parse_totals(v: Any, info: ValidationInfo) -> dict[str, SpecValue]:
    if not isinstance(v, dict):
        raise ValueError("totals must be a table of published aggregate values")
    out = {}
    for key, raw in v.items():
        if key not in _TOTAL_KINDS:
            raise ValueError(f"unknown total {key!r}; known: {', '.join(sorted(_TOTAL_KINDS))}")
        out[key] = _parse_value(_TOTAL_KINDS[key]).func(raw, info)
    return out


Totals = Annotated[dict[str, SpecValue], PlainValidator(_parse_totals)]


class _NodeRaw(BaseModel):
    model_config = STRICT
    name: str
    chips: Count
    vcpus: Count | None = None
    host_memory: Q("capacity") | None = None
    price: Q("price_rate") | None = None
    power: Q("power") | None = None
    efa_bandwidth: Q("bandwidth") | None = None
    efa_nics: Count | None = None
    totals: Totals = {}
    note: str = ""


class _ScaleupRaw(BaseModel):
    model_config = STRICT
    name: str
    nodes: Count
    power: Q("power") | None = None
    totals: Totals = {}
    note: str = ""


class _TierRaw(BaseModel):
    model_config = STRICT
    name: Annotated[str, Field(pattern=r"^[^.]+$")]  # no dots: names become provenance path parts
    scope: Scope
    topology: Topology
    dims: list[Annotated[int, Field(gt=0)]]
    bandwidth: Q("bandwidth")
    bandwidth_per: Literal["chip", "node"] = "chip"
    direction: Literal["per-direction", "bidirectional", "unstated"]
    latency: Q("time") | None = None
    ports: Count | None = None
    in_switch_reduction: Count | None = None  # 1: the switch reduces in-network (NVLink SHARP), 0: it does not
    note: str = ""


class SystemFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    kind: Literal["system"]
    name: str
    display_name: str
    generation: str
    chip: str
    description: str = ""
    node: _NodeRaw
    scaleup: _ScaleupRaw
    tiers: list[_TierRaw]


# ---------------------------------------------------------------- validation entry points


def validate_file(model: type[BaseModel], data: dict, path: str, sources: set[str] | None) -> BaseModel:
    """Validate a parsed TOML dict, turning pydantic errors into one CatalogError per file."""
    try:
        return model.model_validate(data, context={"sources": sources})
    except ValidationError as exc:
        raise CatalogError(format_validation_error(path, exc)) from None


def format_validation_error(path: str, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not in the schema)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{path}: field {loc or '(top level)'}: {msg}")
    return "\n".join(lines)


# ---------------------------------------------------------------- build typed objects


def _walk_values(obj: Any, prefix: str):
    """Yield (dotted path, SpecValue) for every spec value in a validated raw model."""
    if isinstance(obj, SpecValue):
        yield prefix, obj
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from _walk_values(getattr(obj, name), f"{prefix}.{name}" if prefix else name)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_values(v, f"{prefix}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            name = getattr(v, "name", i)
            yield from _walk_values(v, f"{prefix}.{name}")


def chip_values(chip: ChipFile, base: dict[str, SpecValue] | None, path: str) -> dict[str, SpecValue]:
    """Flat {field path: SpecValue} for a chip, resolving ratios and inheritance from `base`."""
    own = {p: _with_path(v, p) for p, v in _walk_values(chip, "")}
    if chip.base is None:
        for p, v in own.items():
            if v.ratio is not None:
                raise CatalogError(f"{path}: field {p}: a ratio needs a base chip ('base = ...')")
        return own
    assert base is not None
    out = {}
    for p, b in base.items():
        if p not in own:
            out[p] = SpecValue(path=p, raw=b.raw, si=b.si, kind=b.kind, source=b.source, status=Status.PROJECTED,
                               note=f"not stated for {chip.name}; assumed equal to {chip.base}", base_path=p)
    for p, v in own.items():
        if v.ratio is not None:
            if p not in base:
                raise CatalogError(f"{path}: field {p}: ratio given but base chip {chip.base!r} has no such field")
            b = base[p]
            v = SpecValue(path=p, raw=f"{v.ratio:g} x {b.raw}", si=v.ratio * b.si, kind=v.kind, source=v.source,
                          status=v.status, note=v.note, derivation=f"{v.ratio:g} x {chip.base} {p} ({b.raw})",
                          alternatives=v.alternatives, ratio=v.ratio, ratio_range=v.ratio_range, base_path=p)
        out[p] = v
    return out


def _with_path(v: SpecValue, p: str) -> SpecValue:
    return SpecValue(**{**v.__dict__, "path": p})


def _si(vals: dict[str, SpecValue], key: str, path: str, required: bool = True) -> float | None:
    if key in vals:
        return vals[key].si
    if required:
        raise CatalogError(f"{path}: field {key}: required field is missing")
    return None


def build_chip(chip: ChipFile, vals: dict[str, SpecValue], path: str, variant: str = "nominal",
               base_file: ChipFile | None = None) -> Chip:
    """Typed Chip from validated values. variant 'low'/'high' takes the ends of projected ranges."""
    pick = {"nominal": lambda v: v.si, "low": lambda v: v.low_si, "high": lambda v: v.high_si}[variant]

    def get(key: str, required: bool = True) -> float | None:
        if key in vals:
            return pick(vals[key])
        if required:
            raise CatalogError(f"{path}: field {key}: required field is missing")
        return None

    cores = int(get("cores"))
    per_unit = {}
    for eng in ("tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine"):
        section = getattr(chip, eng) or (getattr(base_file, eng) if base_file else None)
        per = section.per if section is not None else "chip"
        per_unit[eng] = cores if per == "core" else 1

    tensor_rates = {DType(k.split(".")[-1]): pick(v) * per_unit["tensor_engine"]
                    for k, v in vals.items() if k.startswith("tensor_engine.rate.")}
    if not tensor_rates:
        raise CatalogError(f"{path}: field tensor_engine.rate: at least one data type rate is required")

    def element_engine(eng: str, required: bool) -> ElementEngine | None:
        clock = get(f"{eng}.clock", False)
        epc = get(f"{eng}.elements_per_cycle", False)
        if clock is None or epc is None:
            if required:
                missing = "clock" if clock is None else "elements_per_cycle"
                raise CatalogError(f"{path}: field {eng}.{missing}: required field is missing")
            return None
        # Transcendentals (exp) run on the scalar engine at its element rate unless stated; the
        # vector and GpSimd engines have no exp instruction unless the spec states one (Trn3).
        exp_epc = get(f"{eng}.exp_elements_per_cycle", False)
        if exp_epc is None:
            exp_epc = epc if eng == "scalar_engine" else 0.0
        n = per_unit[eng]
        flops = get(f"{eng}.flops_fp32", False)
        return ElementEngine(elems_per_s=clock * epc * n, exp_elems_per_s=clock * exp_epc * n, clock_hz=clock,
                             fp32_flop_per_s=flops * n if flops else None)

    sram_per_core = get("memory.sram_per_core", False)
    sram_total = get("memory.sram_total", False) or (sram_per_core * cores if sram_per_core else None)
    return Chip(
        name=chip.name, display_name=chip.display_name, vendor=chip.vendor, family=chip.family,
        generation=chip.generation, cores=cores,
        peak_flop_per_s=MappingProxyType({DType(k.split(".")[-1]): pick(v) for k, v in vals.items()
                                          if k.startswith("peak.")}),
        peak_sparse_flop_per_s=MappingProxyType({DType(k.split(".")[-1]): pick(v) for k, v in vals.items()
                                                 if k.startswith("peak_sparse.")}),
        tensor=TensorEngine(flop_per_s=MappingProxyType(tensor_rates),
                            array_rows=_int(get("tensor_engine.rows", False)),
                            array_cols=_int(get("tensor_engine.cols", False)),
                            clock_hz=get("tensor_engine.clock", False)),
        vector=element_engine("vector_engine", True),
        scalar=element_engine("scalar_engine", True),
        gpsimd=element_engine("gpsimd_engine", False),
        hbm_capacity_bytes=get("memory.hbm_capacity"),
        hbm_bandwidth_bytes_per_s=get("memory.hbm_bandwidth"),
        sram_bytes=sram_total, sram_per_core_bytes=sram_per_core,
        dma_bandwidth_bytes_per_s=get("memory.dma_bandwidth", False),
        link_bandwidth_bytes_per_s=_per_direction(get("interconnect.bandwidth", False), chip, base_file),
        link_ports=_int(get("interconnect.ports", False)),
        collective_engines=_int(get("interconnect.collective_engines", False)),
        tdp_w=get("power.tdp", False),
        projected=chip.base is not None,
    )


def _per_direction(bw: float | None, chip: ChipFile, base_file: ChipFile | None) -> float | None:
    """Chip link budget per direction: halve figures the source states as bidirectional."""
    ic = chip.interconnect or (base_file.interconnect if base_file else None)
    if bw is None or ic is None:
        return bw
    return bw / 2 if ic.direction == "bidirectional" else bw


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def build_system(sysfile: SystemFile, chip: Chip, chip_vals: dict[str, SpecValue], path: str) -> System:
    own = {p: _with_path(v, p) for p, v in _walk_values(sysfile, "")}
    node_chips = int(own["node.chips"].si)
    nodes = int(own["scaleup.nodes"].si)
    if node_chips < 1 or nodes < 1 or own["node.chips"].si != node_chips or own["scaleup.nodes"].si != nodes:
        raise CatalogError(f"{path}: field node.chips / scaleup.nodes: must be positive whole numbers")
    tiers = []
    dims_in = {Scope.NODE: 1, Scope.SCALEUP: 1}
    for t in sysfile.tiers:
        factor = 0.5 if t.direction == "bidirectional" else 1.0
        tiers.append(LinkTier(
            name=t.name, scope=t.scope, topology=t.topology, dims=tuple(t.dims),
            bandwidth_bytes_per_s=t.bandwidth.si * factor, direction=t.direction,
            per_node=t.bandwidth_per == "node", latency_s=t.latency.si if t.latency else None,
            ports=_int(t.ports.si) if t.ports else None,
            in_switch_reduction=bool(t.in_switch_reduction and t.in_switch_reduction.si)))
        if t.in_switch_reduction is not None and (t.topology != Topology.SWITCH
                                                  or t.in_switch_reduction.si not in (0.0, 1.0)):
            raise CatalogError(f"{path}: field tiers.{t.name}.in_switch_reduction: must be 0 or 1 on a switch tier")
        if t.scope in dims_in:
            if not t.dims:
                raise CatalogError(f"{path}: field tiers.{t.name}.dims: a {t.scope.value} tier needs its dimensions")
            for d in t.dims:
                dims_in[t.scope] *= d
    # Each tier lists only the dimensions it adds: node tiers span the node, scale-up tiers
    # multiply that up to the scale-up domain (e.g. 4x4 torus in a node, x4 ring across nodes).
    if any(t.scope == Scope.NODE for t in sysfile.tiers) and dims_in[Scope.NODE] != node_chips:
        raise CatalogError(f"{path}: field tiers.dims: node tiers span {dims_in[Scope.NODE]} chips, "
                           f"node.chips is {node_chips}")
    if any(t.scope == Scope.SCALEUP for t in sysfile.tiers) and dims_in[Scope.SCALEUP] != nodes:
        raise CatalogError(f"{path}: field tiers.dims: scale-up tiers span {dims_in[Scope.SCALEUP]} nodes, "
                           f"scaleup.nodes is {nodes}")
    if nodes > 1 and not any(t.scope == Scope.SCALEUP for t in sysfile.tiers):
        raise CatalogError(f"{path}: field tiers: a scale-up domain of {nodes} nodes needs a scale-up tier")
    n = sysfile.node
    node = Node(
        name=n.name, chips=node_chips, vcpus=_int(n.vcpus.si) if n.vcpus else None,
        host_memory_bytes=n.host_memory.si if n.host_memory else None,
        price_usd_per_hour=n.price.si if n.price else None, price_as_of=n.price.as_of if n.price else "",
        power_w=n.power.si if n.power else None,
        efa_bandwidth_bytes_per_s=n.efa_bandwidth.si if n.efa_bandwidth else None)
    if n.price is not None and not n.price.as_of:
        raise CatalogError(f"{path}: field node.price.as_of: a price needs the date it was captured")
    prov = {f"chip.{k}": v for k, v in chip_vals.items()}
    prov.update(own)
    return System(
        name=sysfile.name, display_name=sysfile.display_name, generation=sysfile.generation, chip=chip, node=node,
        scaleup_name=sysfile.scaleup.name, scaleup_nodes=nodes, tiers=tuple(tiers),
        scaleup_power_w=sysfile.scaleup.power.si if sysfile.scaleup.power else None,
        provenance=MappingProxyType(prov),
        projected=chip.projected or any(v.status == Status.PROJECTED for v in own.values()))

