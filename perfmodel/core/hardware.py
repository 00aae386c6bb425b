"""Typed hardware: Chip -> Node -> scale-up domain -> link tiers, all in SI floats.

Built once from spec files by specs.py; the cost model reads only these objects.
Rates are whole-chip totals (per-core figures are multiplied out at load). Link
bandwidths are per chip (or per node for NICs), one direction, as the spec file's
`direction` field allows (see `LinkTier.direction`).

Engines (roofline "engines" in one vocabulary for every vendor):
    tensor  - Trainium TensorE (128x128 systolic array) / GPU tensor cores
    vector  - Trainium VectorE / GPU CUDA-core FP32 pipes
    scalar  - Trainium ScalarE (activations, exp) / GPU special-function units (MUFU)
    gpsimd  - Trainium GpSimdE (general SIMD); absent on GPUs
    dma     - HBM traffic (memory time), modelled as bytes over bandwidth

Does not: read files, or hold any efficiency assumption (core/calibration.py does; a System carries its chip's
Calibration, resolved at the edge).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from perfmodel.core.calibration import Calibration
from perfmodel.core.dtypes import DType
from perfmodel.core.provenance import SpecValue


class Engine(str, Enum):
    TENSOR = "tensor"
    VECTOR = "vector"
    SCALAR = "scalar"
    GPSIMD = "gpsimd"
    DMA = "dma"


class Topology(str, Enum):
    RING = "ring"
    TORUS2D = "torus2d"
    TORUS3D = "torus3d"
    SWITCH = "switch"  # one hop through a switch between any pair (NeuronSwitch, NVSwitch, EFA fabric)
    FULLMESH = "fullmesh"  # direct point-to-point link between every pair


class Scope(str, Enum):
    NODE = "node"
    SCALEUP = "scaleup"
    SCALEOUT = "scaleout"


class Family(str, Enum):
    TRAINIUM = "trainium"
    INFERENTIA = "inferentia"
    NVIDIA = "nvidia"

    @property
    def is_neuron(self) -> bool:
        return self in (Family.TRAINIUM, Family.INFERENTIA)


@dataclass(frozen=True)
class TensorEngine:
    """Matrix engine. `flop_per_s[d]` is the dense matmul rate for data type d (whole chip)."""

    flop_per_s: Mapping[DType, float]
    array_rows: int | None = None  # systolic array partitions (Trainium: 128)
    array_cols: int | None = None
    clock_hz: float | None = None

    def rate(self, dtype: DType) -> float:
        try:
            return self.flop_per_s[DType(dtype)]
        except KeyError:
            have = ", ".join(d.value for d in self.flop_per_s)
            raise KeyError(f"tensor engine has no {DType(dtype).value} rate (has: {have})") from None


@dataclass(frozen=True)
class ElementEngine:
    """Vector / scalar / GpSimd engine as element throughput (whole chip).

    elems_per_s      = clock x elements per cycle x units  (units = cores on Trainium)
    exp_elems_per_s  = the same for transcendental functions (exp in softmax)
    """

    elems_per_s: float
    exp_elems_per_s: float
    clock_hz: float | None = None
    fp32_flop_per_s: float | None = None


@dataclass(frozen=True)
class Chip:
    name: str
    display_name: str
    vendor: str
    family: Family
    generation: str
    cores: int
    peak_flop_per_s: Mapping[DType, float]
    peak_sparse_flop_per_s: Mapping[DType, float]
    tensor: TensorEngine
    vector: ElementEngine
    scalar: ElementEngine
    gpsimd: ElementEngine | None
    hbm_capacity_bytes: float
    hbm_bandwidth_bytes_per_s: float
    sram_bytes: float | None = None  # on-chip SRAM total (Trainium SBUF; GPU L2 + shared memory)
    sram_per_core_bytes: float | None = None
    dma_bandwidth_bytes_per_s: float | None = None
    link_bandwidth_bytes_per_s: float | None = None  # chip's scale-up link budget as published
    link_ports: int | None = None
    collective_engines: int | None = None
    tdp_w: float | None = None
    projected: bool = False
    lnc: int = 1  # physical cores per logical core by default (Neuron Logical NeuronCore configuration)

    @property
    def logical_cores(self) -> int:
        """Cores the runtime schedules on (one rank each): physical cores / LNC."""
        return max(1, self.cores // max(1, self.lnc))

    def supports(self, dtype: DType) -> bool:
        return DType(dtype) in self.tensor.flop_per_s

    def peak(self, dtype: DType) -> float:
        try:
            return self.peak_flop_per_s[DType(dtype)]
        except KeyError:
            have = ", ".join(d.value for d in self.peak_flop_per_s)
            raise KeyError(f"{self.name} publishes no {DType(dtype).value} peak (has: {have})") from None

    def engine_rate(self, engine: Engine) -> ElementEngine | TensorEngine | None:
        return {Engine.TENSOR: self.tensor, Engine.VECTOR: self.vector,
                Engine.SCALAR: self.scalar, Engine.GPSIMD: self.gpsimd}.get(engine)


@dataclass(frozen=True)
class LinkTier:
    """One level of the interconnect, innermost first.

    bandwidth_bytes_per_s is per chip (or per node where `per_node`), per direction after
    applying the spec file's direction statement; `direction` keeps that statement
    ("per-direction", "bidirectional" or "unstated") so the collective model can apply
    its documented assumption for unstated figures.
    """

    name: str
    scope: Scope
    topology: Topology
    dims: tuple[int, ...]
    bandwidth_bytes_per_s: float
    direction: str
    per_node: bool = False
    latency_s: float | None = None
    ports: int | None = None
    in_switch_reduction: bool = False  # the switch reduces data in flight (NVLink SHARP: NCCL's NVLS)

    @property
    def group_size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n


@dataclass(frozen=True)
class Node:
    name: str
    chips: int
    vcpus: int | None = None
    host_memory_bytes: float | None = None
    host_link_bytes_per_s: float | None = None  # one chip to host memory, per direction
    price_usd_per_hour: float | None = None
    price_as_of: str = ""
    power_w: float | None = None
    efa_bandwidth_bytes_per_s: float | None = None


@dataclass(frozen=True)
class System:
    """A purchasable system: chips in nodes in a scale-up domain, with its link tiers."""

    name: str
    display_name: str
    generation: str
    chip: Chip
    node: Node
    scaleup_name: str
    scaleup_nodes: int
    tiers: tuple[LinkTier, ...]
    scaleup_power_w: float | None = None
    provenance: Mapping[str, SpecValue] = field(default_factory=lambda: MappingProxyType({}))
    projected: bool = False
    # the chip's modelling assumptions (core/calibration.py), resolved with the system at the edge
    # (catalog.load_system) so a computation reads them from its argument; not part of the system's identity
    calibration: Calibration | None = field(default=None, compare=False, repr=False)

    @property
    def scaleup_chips(self) -> int:
        return self.node.chips * self.scaleup_nodes

    def tier(self, scope: Scope) -> LinkTier | None:
        for t in self.tiers:
            if t.scope == Scope(scope):
                return t
        return None

    def uncertain_fields(self) -> dict[str, SpecValue]:
        """Fields whose status is estimated or projected (reports flag results using them)."""
        return {k: v for k, v in self.provenance.items() if v.status.is_uncertain}

    def replace_chip(self, **changes) -> "System":
        """A copy with chip fields changed (what-if), e.g. hbm_bandwidth_bytes_per_s=4e12."""
        return dataclasses.replace(self, chip=dataclasses.replace(self.chip, **changes))
