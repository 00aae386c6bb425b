"""Spec-file schema (strict): what a chip or a system file may say, and one spec value's table.

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

Does not: find or read files (files.py), or build typed hardware (specs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, ValidationInfo, model_validator

from perfmodel.core import limits, units
from perfmodel.core.dtypes import DType
from perfmodel.core.errors import CatalogError  # noqa: F401  (raised here; importers name it from here)
from perfmodel.core.hardware import Family, Scope, Topology
from perfmodel.core.provenance import Alternative, SpecValue, Status

SCHEMA_VERSION = 1
STRICT = ConfigDict(extra="forbid", frozen=True)


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
            if kind == "count":  # cores, chips, ports, stacks: whole, and no more than a machine could hold
                limits.check_count(si, "value")
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
    lnc: Count | None = None  # physical cores per logical NeuronCore by default (Neuron)
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
    # one chip's link to host memory, per direction (PCIe, NVLink-C2C): what activation offloading moves over
    host_link_bandwidth: Q("bandwidth") | None = None
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
    aliases: list[str] = []  # names the system goes by in measured data (catalog/system_names.py resolves them)
    node: _NodeRaw
    scaleup: _ScaleupRaw
    tiers: list[_TierRaw]


# ---------------------------------------------------------------- validation entry points


def check_name(path, data: dict) -> None:
    """A spec file's `name` must be its file's stem (the catalogue key it is found by)."""
    stem = Path(path).stem
    if data.get("name") != stem:
        raise CatalogError(f"{path}: field name: must equal the file name {stem!r}, got {data.get('name')!r}")


def validate_file(model: type[BaseModel], data: dict, path: str, sources: set[str] | None) -> BaseModel:
    """Validate a parsed TOML dict, turning pydantic errors into one CatalogError per file."""
    try:
        return model.model_validate(data, context={"sources": sources})
    except ValidationError as exc:
        raise CatalogError(format_validation_error(path, exc)) from None


def format_validation_error(path: str, exc: ValidationError) -> str:
    """One line: the first problem, and how many more with their fields (an empty file misses many)."""
    return one_line(validation_lines(path, exc))


def one_line(lines: list[str]) -> str:
    if len(lines) <= 1:
        return "".join(lines)
    more = [ln.split(": field ", 1)[-1].split(":", 1)[0] for ln in lines[1:]]
    shown = ", ".join(more[:6]) + (", ..." if len(more) > 6 else "")
    return f"{lines[0]} (and {len(more)} more: {shown})"


def validation_lines(path: str, exc: ValidationError) -> list[str]:
    """One line per pydantic error: the file, the field and the problem."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not in the schema)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{path}: field {loc or '(top level)'}: {msg}")
    return lines
