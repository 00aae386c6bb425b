"""Spec files to typed hardware: every spec value of a chip resolved (ratios of a base chip,
inheritance of a projected chip), then the Chip and the System in SI floats.

Does not: find or read files (files.py), or say what a file may hold (spec_schema.py).
"""


from __future__ import annotations

from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from perfmodel.catalog.spec_schema import CatalogError, ChipFile, SystemFile
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Chip, ElementEngine, LinkTier, Node, Scope, System, TensorEngine, Topology
from perfmodel.core.provenance import SpecValue, Status

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
        generation=chip.generation, cores=cores, lnc=int(get("lnc", False) or 1),
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
        host_link_bytes_per_s=n.host_link_bandwidth.si if n.host_link_bandwidth else None,
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

