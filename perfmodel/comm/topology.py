"""Where a collective's group sits: the system's link tiers as topology dimensions.

The topology is the spec sheet's link tiers, innermost first, turned into *dimensions*:
    torus2d [X, Y] / ring [Z]   one "link" dimension per axis: neighbours joined by point-to-point
                                links; the tier's per-chip bandwidth B is split over 2 ports per
                                axis (one per direction of travel), so one link carries
                                b = B eta / (2 axes) per direction
    switch [k]                  one "switch" dimension: any pair one hop apart; a chip injects
                                b = B eta (its egress into the switch)
    scale-out (EFA)             one unbounded switch dimension; b = B_node eta / chips per node (a
                                chip reaches the NICs attached to it while every other chip of the
                                node runs its own group)
eta is `link_efficiency_{node,scaleup,scaleout}`; figures whose direction the source leaves
unstated are multiplied by `unstated_link_direction_frac` first. alpha_d (s) is the per-hop
latency of the tier (`link_latency_*`).

A group of g chips whose members are `stride` chips apart (groups are placed innermost
first) has m_d members along dimension d (prod m_d = g), h_d physical hops between logical
neighbours (h_d = stride inside the dimension; for a part-filled ring the wrap-around hop).

Ranks: with ranks_per_chip r > 1 (the Neuron runtime counts every NeuronCore as a rank) each
chip adds an innermost dimension of r ranks one hop apart (core_dim: latency
`link_latency_node`, a copy through the chip's HBM, b = B_hbm eta_m / 2).

Units: b in bytes/s (per chip, per direction); alpha in s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.core import elementwise as ew
from perfmodel.core.calibration import Calibration
from perfmodel.core.hardware import Scope, System, Topology


@dataclass(frozen=True)
class Dim:
    """One dimension of the physical topology.

    size: positions along it (np.inf for scale-out); link: True for ring/torus axes, False for
    switches; rate_bytes_per_s: one link, one direction (link) or a chip's egress (switch),
    after efficiency; alpha_s: per-hop latency.
    """

    scope: Scope
    name: str
    size: float
    link: bool
    rate_bytes_per_s: float
    alpha_s: float
    lone_rate_bytes_per_s: float = 0.0  # scale-out: what one chip's flow can use alone (its NICs, >= 1 NIC)
    ports: int = 0  # which tier's ports carry this dimension's traffic (dimensions sharing ports add up)
    reduce_eff: float = 0.0  # in-switch reduction rate / rate_bytes_per_s (0: the switch does not reduce)
    reduce_alpha_s: float = 0.0  # latency of one in-switch-reduction all-reduce


@dataclass(frozen=True)
class GroupDim:
    """A group's extent along one dimension: m members, h physical hops between neighbours."""

    dim: Dim
    m: np.ndarray
    h: np.ndarray


def scope_key(scope: Scope) -> str:
    return {Scope.NODE: "node", Scope.SCALEUP: "scaleup", Scope.SCALEOUT: "scaleout"}[Scope(scope)]


def topology_dims(system: System, cal: Calibration) -> tuple[Dim, ...]:
    """The system's dimensions, innermost first (see module doc for rates)."""
    dims: list[Dim] = []
    for k, tier in enumerate(system.tiers):
        key = scope_key(tier.scope)
        eta = cal[f"link_efficiency_{key}"]
        alpha = cal[f"link_latency_{key}"]
        bw = tier.bandwidth_bytes_per_s * (cal["unstated_link_direction_frac"] if tier.direction == "unstated"
                                           else 1.0)
        if tier.scope == Scope.SCALEOUT:
            chips = system.node.chips
            per_chip = bw / chips if tier.per_node else bw
            nics = system.provenance["node.efa_nics"].si if "node.efa_nics" in system.provenance else chips
            lone = bw / min(nics, chips) if tier.per_node else bw
            dims.append(Dim(tier.scope, tier.name, np.inf, False, per_chip * eta, alpha, lone * eta, 10 * k))
        elif tier.topology in (Topology.TORUS2D, Topology.TORUS3D, Topology.RING):
            axes = [d for d in tier.dims if d > 1]
            for i, d in enumerate(axes):
                dims.append(Dim(tier.scope, f"{tier.name} axis {i}", float(d), True,
                                bw * eta / (2 * len(axes)), alpha, ports=10 * k + i))
        else:  # switch / full mesh: one hop between any pair of the tier's positions
            size = float(np.prod(tier.dims)) if tier.dims else float(system.node.chips)
            if size > 1:
                red = tier.in_switch_reduction
                dims.append(Dim(tier.scope, tier.name, size, False, bw * eta, alpha, ports=_switch_ports(system, k),
                                reduce_eff=cal["in_switch_reduction_efficiency"] if red else 0.0,
                                reduce_alpha_s=cal["in_switch_reduction_latency"] if red else 0.0))
    return tuple(dims)


def _switch_ports(system: System, k: int) -> int:
    """Port group of switched tier k: a switched scale-up tier with the node tier's per-chip
    bandwidth and port count is the same switch fabric through the same ports (GB200 NVL72:
    the spec schema splits one NVLink Switch domain at the node boundary), so their traffic adds."""
    tier = system.tiers[k]
    node = system.tier(Scope.NODE)
    if (tier.scope == Scope.SCALEUP and node is not None and node.topology == Topology.SWITCH
            and node.bandwidth_bytes_per_s == tier.bandwidth_bytes_per_s and node.ports == tier.ports):
        return 10 * system.tiers.index(node)
    return 10 * k


def place_group(dims: tuple[Dim, ...], group, stride=1) -> list[GroupDim]:
    """Members and hop distance of a group along each dimension (arrays; innermost placement)."""
    g, s = np.broadcast_arrays(np.asarray(group, dtype=float), np.asarray(stride, dtype=float))
    return place(dims, g.copy(), s)


def place(dims: tuple[Dim, ...], g, s) -> list[GroupDim]:
    """place_group of a group g and stride s given as arrays of one shape, or as two Python floats (one message:
    GroupDim's m and h are then floats, the same numbers)."""
    rem_g, rem_s = g, ew.maximum(s, 1.0)
    out = []
    for d in dims:
        if np.isinf(d.size):
            out.append(GroupDim(d, rem_g if ew.one(rem_g) else rem_g.copy(), ew.ones_like(g)))
            rem_g = ew.ones_like(g)
            continue
        inside = rem_s < d.size
        span = ew.floor(d.size / rem_s)
        m = ew.where(inside, ew.maximum(ew.minimum(rem_g, span), 1.0), 1.0)
        h = ew.where(inside, rem_s, 1.0)
        if d.link:  # wrap-around hop of a part-filled ring; 2 members use the shorter way
            wrap = d.size - (m - 1) * h
            h = ew.where(m == 2, ew.minimum(h, wrap), ew.maximum(h, wrap))
            h = ew.maximum(h, 1.0)
        out.append(GroupDim(d, m, h))
        rem_s = ew.where(inside, 1.0, rem_s / d.size)
        rem_g = rem_g / m
    if ew.any_true(rem_g > 1 + 1e-9):
        raise ValueError("group larger than the system's topology (no scale-out tier to place the rest)")
    return out


def core_dim(system: System, cal: Calibration, ranks_per_chip: int) -> Dim:
    """The ranks of one chip (NeuronCores) as the innermost dimension: any two one hop apart, a hop
    costing the node tier's per-step latency; a core-to-core copy moves through the chip's HBM (read
    and write): b = B_hbm eta_m / 2."""
    rate = system.chip.hbm_bandwidth_bytes_per_s * cal["hbm_efficiency"] / 2
    return Dim(Scope.NODE, "cores of a chip", float(ranks_per_chip), False, rate, cal["link_latency_node"],
               ports=-1)
