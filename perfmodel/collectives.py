"""Collective communication cost: alpha-beta per hop and per link over the system's topology.

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
latency of the tier (`link_latency_*`); every call adds a fixed cost F: `collective_fixed_latency`
inside a compiled graph (the default), `collective_host_launch_latency` for host-launched calls
(microbenchmarks such as nccom-test and nccl-tests), plus `framework_call_overhead` for an eager
framework call the device waits for (torch.distributed one call at a time).

A group of g chips whose members are `stride` chips apart (groups are placed innermost
first) has m_d members along dimension d (prod m_d = g), h_d physical hops between logical
neighbours (h_d = stride inside the dimension; for a part-filled ring the wrap-around hop).

Sizes n are bytes per chip as nccl-tests counts them ('size'): all-reduce in = out = n;
all-gather out = n (n/g contributed); reduce-scatter in = n; all-to-all n sent in total
(n/g to each peer); broadcast and send/recv n. n_d = n / prod_{e<d} m_e is the data a
dimension's phase works on when dimensions are visited inner to outer.

Units throughout: n, n_d in bytes; b, b2 in bytes/s (per chip, per direction); alpha, t in s.

Reduce-scatter (all-gather is the mirror image, all-reduce = reduce-scatter + all-gather):
    ring          one unidirectional ring through all g members (the 'flat ring'); it leaves
                  each node at one chip, whose EFA hop gets min(m_node b_efa, one chip's NICs)
                  t = (g-1) max_d(alpha_d h_d) + (g-1)/g n / min_d b_d
    bidir-ring    two counter-rotating rings on n/2 each: link dims give b2_d = 2 b_d (b_d for
                  2 members), switches b2_d = b_d
                  t = (g-1) max_d(alpha_d h_d) + (g-1)/g n / min_d b2_d
    2d-ring       a bidirectional ring per dimension in turn (2D on a 2D torus, + Z, + EFA)
                  t = sum_d [(m_d-1) alpha_d h_d + (m_d-1)/m_d n_d / b2_d]
    tree          recursive halving (Rabenseifner); step j of a dimension pairs members
                  delta = 2^j apart (delta h_d hops on a link dim, congestion max(1, delta h_d/2))
                  t = sum_d sum_j [alpha_d hops_j + n_d/2^(j+1) congestion_j / b_d]
    direct        every chip sends n/g straight to every peer in one step; the bytes whose
                  outermost differing dimension is d use d's ports (switch: b_d; link dims route
                  dimension-ordered, avg floor(m^2/4)/(m-1) h hops over 2 ports)
                  t = sum_link alpha_d floor(m_d/2) h_d + max_switch alpha_d + max_d bytes_d / rate_d
    hierarchical  per tier (node, scale-up, scale-out) the fastest of 2d-ring / tree / direct
                  on that tier's dimensions, tiers in turn on shrinking data; with
                  p = `hierarchical_pipelining` the tiers' bandwidth terms overlap:
                  t = sum_l lat_l + (1-p) sum_l bw_l + p max_l bw_l
                  (tiers reached through the same ports, as NVL72's node and rack levels of
                  one NVLink Switch domain, add up instead of overlapping)
    nvls          (all-reduce only) in-switch reduction on a switch that reduces (NVLink SHARP,
                  NCCL's NVLS): each member loads its 1/g shard reduced by the switch (sending
                  its whole n once) and stores it to a multicast address the switch copies to
                  all (receiving n), so each port carries n (1 + 1/g) per direction:
                  t = alpha_r + n (1 + 1/g) / (b eta_r)   eta_r = `in_switch_reduction_efficiency`,
                                                          alpha_r = `in_switch_reduction_latency`
                  Applies when every dimension the group spans is such a switch (GB200's node
                  and NVL72 tiers together); as a level of 'hierarchical' it is NCCL's NVLS-tree.
All-to-all: direct, tree (Bruck: log2 g steps of n/2), hierarchical (an all-to-all per tier
on the full n). Broadcast: ring / bidir-ring (pipelined chain: (g-1) alpha + n/b), 2d-ring
(a chain per dimension), tree (binomial: log2 g (alpha + n/b)), direct (scatter + all-gather),
hierarchical. Send/recv: direct, alpha h + n/b2.

`collective_cost(..., algorithm="auto")` evaluates every algorithm (vectorised over sizes,
groups and strides) and takes the fastest the runtime offers, as libraries pick by size and
group; the breakdown keeps every algorithm's time. Inside one node a family may offer fewer:
`intranode_direct_max_ranks` caps the one-step 'direct' pattern at that many ranks and
`intranode_multistep_algorithms` = 0 leaves the ring family only (Trn1/Inf2 runtime of Neuron
SDK 2.18: ring, plus the all-to-all all-reduce for 16-rank groups).

Ranks: a group is g chips; with ranks_per_chip r > 1 (the Neuron runtime counts every
NeuronCore as a rank) each chip adds an innermost dimension of r ranks one hop apart (latency
`link_latency_node`, a copy through the chip's HBM: b = B_hbm eta_m / 2), so a flat ring over
the g r ranks has g r - 1 steps; sizes stay per rank.

Does not: model NVLS's ramp to its asymptotic rate at mid sizes (NCCL reaches it only from
~256 MiB on 8 H200s), in-switch reduction for collectives other than all-reduce, per-peer
message costs, congestion between different groups beyond the per-chip NIC share, or choose
parallelism plans (plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfmodel.calibration import Calibration
from perfmodel.graph import Collective
from perfmodel.hardware import Scope, System, Topology

ALGORITHMS = ("ring", "bidir-ring", "2d-ring", "tree", "direct", "nvls", "hierarchical")  # ties go to the first
_MAX_TREE_STEPS = 24  # log2 of the largest group a tree dimension is evaluated for (16M members)

# bus-bandwidth factor (nccl-tests): busbw = algbw x factor
BUS_FACTOR = {
    Collective.ALL_REDUCE: lambda g: 2 * (g - 1) / g,
    Collective.ALL_GATHER: lambda g: (g - 1) / g,
    Collective.REDUCE_SCATTER: lambda g: (g - 1) / g,
    Collective.ALL_TO_ALL: lambda g: (g - 1) / g,
    Collective.BROADCAST: lambda g: np.ones_like(g),
    Collective.SEND_RECV: lambda g: np.ones_like(g),
}


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


def _scope_key(scope: Scope) -> str:
    return {Scope.NODE: "node", Scope.SCALEUP: "scaleup", Scope.SCALEOUT: "scaleout"}[Scope(scope)]


def topology_dims(system: System, cal: Calibration) -> tuple[Dim, ...]:
    """The system's dimensions, innermost first (see module doc for rates)."""
    dims: list[Dim] = []
    for k, tier in enumerate(system.tiers):
        key = _scope_key(tier.scope)
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
    rem_g, rem_s = g.copy(), np.maximum(s, 1.0)
    out = []
    for d in dims:
        if np.isinf(d.size):
            out.append(GroupDim(d, rem_g.copy(), np.ones_like(g)))
            rem_g = np.ones_like(g)
            continue
        inside = rem_s < d.size
        span = np.floor(d.size / rem_s)
        m = np.where(inside, np.clip(np.minimum(rem_g, span), 1.0, None), 1.0)
        h = np.where(inside, rem_s, 1.0)
        if d.link:  # wrap-around hop of a part-filled ring; 2 members use the shorter way
            wrap = d.size - (m - 1) * h
            h = np.where(m == 2, np.minimum(h, wrap), np.maximum(h, wrap))
            h = np.maximum(h, 1.0)
        out.append(GroupDim(d, m, h))
        rem_s = np.where(inside, 1.0, rem_s / d.size)
        rem_g = rem_g / m
    if np.any(rem_g > 1 + 1e-9):
        raise ValueError("group larger than the system's topology (no scale-out tier to place the rest)")
    return out


# ---------------------------------------------------------------- per-dimension phase costs
# each returns (latency_s, bandwidth_s) for one reduce-scatter-like phase on data n_d


def _uni(gd: GroupDim) -> float:
    return gd.dim.rate_bytes_per_s


def _bi(gd: GroupDim):
    """Bidirectional rate: both directions of a ring axis (2 links); a switch port's egress.
    Two members on a ring axis use the one link between them (the other way round passes
    through other groups' chips)."""
    if not gd.dim.link:
        return gd.dim.rate_bytes_per_s
    return gd.dim.rate_bytes_per_s * np.where(gd.m > 2, 2.0, 1.0)


def _ring_phase(gd: GroupDim, n_d, bidir: bool = True):
    m = gd.m
    lat = (m - 1) * gd.dim.alpha_s * gd.h
    bw = (m - 1) / m * n_d / (_bi(gd) if bidir else _uni(gd))
    return lat, bw


def _pairwise(gd: GroupDim, data_j):
    """Steps j = 0.. while 2^j < m: exchange data_j(j) bytes with the member delta = 2^j away
    (delta h hops on a link dimension, congestion max(1, delta h / 2) on its links)."""
    lat = np.zeros_like(gd.m)
    bw = np.zeros_like(gd.m)
    for j in range(_MAX_TREE_STEPS):
        delta = 2.0 ** j
        on = delta < gd.m
        if not np.any(on):
            break
        hops = delta * gd.h if gd.dim.link else np.ones_like(gd.m)
        cong = np.maximum(1.0, hops / 2.0) if gd.dim.link else 1.0
        lat = lat + np.where(on, gd.dim.alpha_s * hops, 0.0)
        bw = bw + np.where(on, data_j(j) * cong / _uni(gd), 0.0)
    return lat, bw


def _tree_phase(gd: GroupDim, n_d):
    """Recursive halving along one dimension: step j moves n_d / 2^(j+1)."""
    return _pairwise(gd, lambda j: n_d / 2.0 ** (j + 1))


def _avg_hops(m):
    """Mean shortest distance to the other members of a bidirectional ring of m: floor(m^2/4)/(m-1)."""
    return np.where(m > 1, np.floor(m * m / 4.0) / np.maximum(m - 1, 1.0), 0.0)


def _direct_phase(gds: list[GroupDim], n):
    """One-step exchange of n/g with every peer (reduce-scatter, all-gather or all-to-all)."""
    g = np.prod([gd.m for gd in gds], axis=0) if gds else np.ones_like(n)
    lat_link = np.zeros_like(g)
    lat_sw = np.zeros_like(g)
    per_ports: dict[int, np.ndarray] = {}
    inner = np.ones_like(g)
    for gd in gds:
        m, d = gd.m, gd.dim
        used = m > 1
        if d.link:
            moving = n * (m - 1) / m  # bytes whose coordinate along d differs
            t = moving * _avg_hops(m) * gd.h / _bi(gd)
            lat_link = lat_link + np.where(used, d.alpha_s * np.floor(m / 2.0) * gd.h, 0.0)
        else:
            t = n * (m - 1) * inner / g / d.rate_bytes_per_s
            lat_sw = np.maximum(lat_sw, np.where(used, d.alpha_s, 0.0))
        per_ports[d.ports] = per_ports.get(d.ports, 0.0) + np.where(used, t, 0.0)
        inner = inner * m
    bw = np.max(np.stack([np.broadcast_to(v, np.shape(g)) for v in per_ports.values()]), axis=0)
    return lat_link + lat_sw, bw


def _levels(gds: list[GroupDim]) -> list[list[GroupDim]]:
    out: dict[Scope, list[GroupDim]] = {}
    for gd in gds:
        out.setdefault(gd.dim.scope, []).append(gd)
    return list(out.values())


def _seq(gds: list[GroupDim], n, phase):
    """Apply a per-dimension phase inner to outer on shrinking data; sum latency and bandwidth."""
    lat = np.zeros_like(n)
    bw = np.zeros_like(n)
    n_d = n
    for gd in gds:
        a, b = phase(gd, n_d)
        used = gd.m > 1
        lat = lat + np.where(used, a, 0.0)
        bw = bw + np.where(used, b, 0.0)
        n_d = n_d / gd.m
    return lat, bw


def _best(*pairs):
    tot = np.stack([a + b for a, b in pairs])
    i = np.argmin(tot, axis=0)
    lat = np.choose(i, [a for a, _ in pairs])
    bw = np.choose(i, [b for _, b in pairs])
    return lat, bw


def _ring_rates(gds, bidir: bool) -> np.ndarray:
    """Slowest hop of a flat ring. Its scale-out hop leaves each node at one chip, so the group
    gets the node's NIC share of its m_in members there, up to what one chip reaches alone."""
    m_in = np.ones_like(gds[0].m)
    rate = np.full_like(gds[0].m, np.inf)
    for gd in gds:
        r = _bi(gd) if bidir else _uni(gd)
        if np.isinf(gd.dim.size):
            r = np.minimum(gd.dim.rate_bytes_per_s * m_in, max(gd.dim.lone_rate_bytes_per_s, gd.dim.rate_bytes_per_s))
        else:
            m_in = m_in * gd.m
        rate = np.where(gd.m > 1, np.minimum(rate, r), rate)
    return np.where(np.isfinite(rate), rate, 1.0)


def _flat_ring(gds, n, bidir: bool):
    g = np.prod([gd.m for gd in gds], axis=0)
    used = [gd.m > 1 for gd in gds]
    a = np.max([np.where(u, gd.dim.alpha_s * gd.h, 0.0) for gd, u in zip(gds, used)], axis=0)
    return (g - 1) * a, (g - 1) / g * n / _ring_rates(gds, bidir)


# ---------------------------------------------------------------- reduce-scatter-like (RS / AG)


def _rs(alg: str, gds, n, p: float):
    if alg == "ring":
        return _flat_ring(gds, n, bidir=False)
    if alg == "bidir-ring":
        return _flat_ring(gds, n, bidir=True)
    if alg == "2d-ring":
        return _seq(gds, n, _ring_phase)
    if alg == "tree":
        return _seq(gds, n, _tree_phase)
    if alg == "direct":
        return _direct_phase(gds, n)
    if alg == "hierarchical":
        return _hier(gds, n, p, _level_rs)
    raise ValueError(f"unknown algorithm {alg!r} (choose from auto, {', '.join(ALGORITHMS)})")


def _level_rs(lvl, n_l):
    return _best(_seq(lvl, n_l, _ring_phase), _seq(lvl, n_l, _tree_phase), _direct_phase(lvl, n_l))


def _nvls_pair(gds, n):
    """All-reduce (reduce-scatter + all-gather pair) by in-switch reduction over the dimensions the
    group spans: alpha_r + n (1 + 1/g) / (b eta_r); inf where one of them is not a reducing switch."""
    g = np.prod([gd.m for gd in gds], axis=0)
    ok = np.ones_like(g, dtype=bool)
    rate = np.full_like(g, np.inf)
    alpha = np.zeros_like(g)
    for gd in gds:
        on = gd.m > 1
        d = gd.dim
        reduces = (not d.link) and d.reduce_eff > 0 and np.isfinite(d.size)
        ok &= ~on | reduces
        rate = np.where(on, np.minimum(rate, d.rate_bytes_per_s * d.reduce_eff), rate)
        alpha = np.where(on, np.maximum(alpha, d.reduce_alpha_s), alpha)
    ok &= g > 1
    safe = np.where(ok & np.isfinite(rate) & (rate > 0), rate, 1.0)
    lat = np.where(ok, alpha, np.inf)
    bw = np.where(ok, n * (1 + 1 / np.maximum(g, 1.0)) / safe, np.inf)
    return lat, bw


def _level_allreduce(lvl, n_l):
    """One tier of a hierarchical all-reduce: its reduce-scatter and all-gather, or NVLS."""
    a, b = _level_rs(lvl, n_l)
    return _best((2 * a, 2 * b), _nvls_pair(lvl, n_l))


def _hier(gds, n, p, level_cost, shrink: bool = True, factor: float = 1.0):
    """Tiers in turn; bandwidth = (1-p) sum + p max over tiers (tiers on the same ports add)."""
    lat = np.zeros_like(n)
    per_ports: dict[frozenset, np.ndarray] = {}
    n_l = n
    for lvl in _levels(gds):
        a, b = level_cost(lvl, n_l)
        lat = lat + factor * a
        key = frozenset(gd.dim.ports // 10 for gd in lvl)
        per_ports[key] = per_ports.get(key, 0.0) + factor * b
        if shrink:
            n_l = n_l / np.prod([gd.m for gd in lvl], axis=0)
    bws = np.stack([np.broadcast_to(v, np.shape(n)) for v in per_ports.values()]) if per_ports \
        else np.zeros((1,) + np.shape(n))
    bw = (1 - p) * bws.sum(axis=0) + p * bws.max(axis=0)
    return lat, bw


# ---------------------------------------------------------------- per collective


def _a2a_level(lvl, n_l):
    return _best(_direct_phase(lvl, n_l), _bruck(lvl, n_l))


def _bruck(gds, n):
    """Bruck all-to-all: per dimension log2 m steps, each moving n/2 (latency-optimal, more bytes)."""
    return _seq_full(gds, n, lambda gd, x: _pairwise(gd, lambda j: x / 2.0))


def _broadcast_level(lvl, n):
    return _best(_bcast("2d-ring", lvl, n, 0.0), _bcast("tree", lvl, n, 0.0), _bcast("direct", lvl, n, 0.0))


def _bcast(alg: str, gds, n, p: float):
    if alg in ("ring", "bidir-ring"):
        lat, _ = _flat_ring(gds, n, bidir=alg == "bidir-ring")
        return lat, n / _ring_rates(gds, alg == "bidir-ring")
    if alg == "2d-ring":
        return _seq_full(gds, n, lambda gd, x: ((gd.m - 1) * gd.dim.alpha_s * gd.h, x / _bi(gd)))
    if alg == "tree":
        return _seq_full(gds, n, lambda gd, x: _pairwise(gd, lambda j: x))
    if alg == "direct":
        a, b = _direct_phase(gds, n)
        return 2 * a, 2 * b
    if alg == "hierarchical":
        return _hier(gds, n, p, _broadcast_level, shrink=False)
    raise ValueError(f"unknown algorithm {alg!r}")


def _seq_full(gds, n, phase):
    lat = np.zeros_like(n)
    bw = np.zeros_like(n)
    for gd in gds:
        a, b = phase(gd, n)
        used = gd.m > 1
        lat = lat + np.where(used, a, 0.0)
        bw = bw + np.where(used, b, 0.0)
    return lat, bw


def _algorithm_cost(c: Collective, alg: str, gds, n, p: float):
    """(latency_s, bandwidth_s) of one algorithm, or None where it does not apply."""
    if alg == "nvls" and c != Collective.ALL_REDUCE:
        return None
    if c in (Collective.REDUCE_SCATTER, Collective.ALL_GATHER):
        return _rs(alg, gds, n, p)
    if c == Collective.ALL_REDUCE:
        if alg == "hierarchical":
            return _hier(gds, n, p, _level_allreduce)
        if alg == "nvls":
            return _nvls_pair(gds, n)
        a, b = _rs(alg, gds, n, p)
        return 2 * a, 2 * b
    if c == Collective.ALL_TO_ALL:
        if alg == "direct":
            return _direct_phase(gds, n)
        if alg == "tree":
            return _bruck(gds, n)
        if alg == "hierarchical":
            return _hier(gds, n, p, _a2a_level, shrink=False)
        return None
    if c == Collective.BROADCAST:
        return _bcast(alg, gds, n, p)
    if c == Collective.SEND_RECV:
        if alg != "direct":
            return None
        lat = np.zeros_like(n)
        rate = np.full_like(n, np.inf)
        for gd in gds:
            used = gd.m > 1
            lat = lat + np.where(used, gd.dim.alpha_s * gd.h, 0.0)
            rate = np.where(used, np.minimum(rate, _bi(gd)), rate)
        return lat, n / np.where(np.isfinite(rate), rate, 1.0)
    raise ValueError(f"unknown collective {c!r}")


@dataclass(frozen=True)
class CollectiveCost:
    """Chosen algorithm and time per configuration, with every algorithm's breakdown.

    time_s = fixed_s + latency_s + bandwidth_s of the chosen algorithm; `per_algorithm[name]`
    holds (time_s, latency_s, bandwidth_s) arrays (inf where the algorithm does not apply).
    """

    collective: Collective
    time_s: np.ndarray
    algorithm: np.ndarray
    latency_s: np.ndarray
    bandwidth_s: np.ndarray
    fixed_s: np.ndarray
    group: np.ndarray
    nbytes: np.ndarray
    crosses: np.ndarray  # outermost tier the group spans: "none" | "node" | "scaleup" | "scaleout"
    per_algorithm: dict = field(default_factory=dict)
    ranks: np.ndarray | None = None  # software ranks in the group (group x ranks_per_chip)


def _outermost(gds: list[GroupDim], shape) -> np.ndarray:
    out = np.full(shape, "none", dtype=object)
    for gd in gds:
        out = np.where(gd.m > 1, _scope_key(gd.dim.scope), out)
    return out


LAUNCH = ("in-graph", "host", "eager")


def fixed_latency(cal: Calibration, launch: str = "in-graph") -> float:
    """Fixed cost of one collective call: in a compiled graph (the compute engines trigger the
    collective engines / a captured graph launches the kernel), launched from the host one call
    at a time, as microbenchmarks such as nccom-test and nccl-tests do, or called eagerly through a
    framework whose per-call host work the device waits for (F = host launch + framework overhead)."""
    if launch not in LAUNCH:
        raise ValueError(f"launch must be one of {', '.join(LAUNCH)}, got {launch!r}")
    if launch == "in-graph":
        return cal["collective_fixed_latency"]
    eager = cal["framework_call_overhead"] if launch == "eager" else 0.0
    return cal["collective_host_launch_latency"] + eager


def core_dim(system: System, cal: Calibration, ranks_per_chip: int) -> Dim:
    """The ranks of one chip (NeuronCores) as the innermost dimension: any two one hop apart, a hop
    costing the node tier's per-step latency; a core-to-core copy moves through the chip's HBM (read
    and write): b = B_hbm eta_m / 2."""
    rate = system.chip.hbm_bandwidth_bytes_per_s * cal["hbm_efficiency"] / 2
    return Dim(Scope.NODE, "cores of a chip", float(ranks_per_chip), False, rate, cal["link_latency_node"],
               ports=-1)


def _unavailable(alg: str, ranks: np.ndarray, crosses: np.ndarray, cal: Calibration) -> np.ndarray:
    """Where the runtime does not offer `alg` for a group inside one node (True = not offered).

    `intranode_direct_max_ranks` (0: no limit) caps the one-step all-to-all pattern ('direct') at that
    many ranks; `intranode_multistep_algorithms` = 0 leaves only the ring family (ring, bidir-ring)
    and, up to the cap, direct: no per-dimension rings, recursive halving-doubling or tiered
    schedules inside a node. A family file without these parameters restricts nothing."""
    inside = np.isin(crosses, ("none", "node"))
    cap = cal.get("intranode_direct_max_ranks", 0.0)
    if alg == "direct":
        return inside & (cap > 0) & (ranks > cap)
    if alg in ("2d-ring", "tree", "hierarchical"):
        return inside & (cal.get("intranode_multistep_algorithms", 1.0) == 0)
    return np.zeros(np.shape(ranks), dtype=bool)


def collective_cost(system: System, cal: Calibration, collective, nbytes, group, stride=1,
                    algorithm: str = "auto", launch: str = "in-graph", ranks_per_chip: int = 1) -> CollectiveCost:
    """Cost of one collective per configuration (arrays broadcast together); see module doc.

    ranks_per_chip r > 1: every chip of the group runs r ranks (one per NeuronCore, as the Neuron
    runtime counts them), an innermost dimension of r members (core_dim); a flat ring then has
    g r - 1 steps. `nbytes` is per rank (a TP all-reduce's whole buffer on every rank)."""
    c = Collective(collective)
    n, g, s = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (nbytes, group, stride)))
    n, g, s = n.copy(), g.copy(), s.copy()
    r = int(ranks_per_chip)
    gds = place_group(topology_dims(system, cal), g, s)
    if r > 1:
        gds = [GroupDim(core_dim(system, cal, r), np.full_like(g, float(r)), np.ones_like(g))] + gds
    ranks = g * r
    crosses = _outermost(gds, g.shape) if gds else np.full(g.shape, "none", dtype=object)
    p = cal["hierarchical_pipelining"]
    active = (ranks > 1) & (n > 0)
    names = ALGORITHMS if algorithm == "auto" else (algorithm,)
    per: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for alg in names:
        if alg not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {alg!r} (choose from auto, {', '.join(ALGORITHMS)})")
        if not gds:
            cost = (np.zeros_like(n), np.zeros_like(n))
        else:
            cost = _algorithm_cost(c, alg, gds, n, p)
        if cost is None:
            inf = np.full_like(n, np.inf)
            per[alg] = (inf, inf, inf)
            continue
        lat, bw = (np.where(active, x, 0.0) for x in cost)
        off = _unavailable(alg, ranks, crosses, cal) & active if algorithm == "auto" else False
        per[alg] = (np.where(off, np.inf, lat + bw), lat, bw)
    stack = np.stack([per[a][0] for a in names])
    if not np.all(np.isfinite(stack.min(axis=0))):
        raise ValueError(f"algorithm {algorithm!r} does not apply to {c.value}")
    idx = np.argmin(stack, axis=0)
    pick = lambda k: np.choose(idx, [per[a][k] for a in names])  # noqa: E731
    fixed = np.where(active, fixed_latency(cal, launch), 0.0)
    alg_names = np.where(active, np.asarray(names, dtype=object)[idx], "none")
    per = {a: (np.where(active, t + fixed, 0.0), la, bw) for a, (t, la, bw) in per.items()}
    return CollectiveCost(collective=c, time_s=pick(1) + pick(2) + fixed, algorithm=alg_names, latency_s=pick(1),
                          bandwidth_s=pick(2), fixed_s=fixed, group=g, nbytes=n, crosses=crosses,
                          per_algorithm=per, ranks=ranks)


def distinct(*arrays, min_size: int = 64, cache: dict | None = None):
    """(distinct rows, inverse, shape) of arrays broadcast together: the rows (one array per input,
    1-D) such that input k = rows[k][inverse].reshape(shape); None when there are fewer than
    `min_size` entries or when most entries are distinct (nothing to save). Hash-based, O(N).
    `cache` (a dict the caller keeps) holds each array's codes, for arrays passed again."""
    arrs = [np.asarray(a, dtype=float) for a in arrays]
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    size = int(np.prod(shape))
    if size < min_size:
        return None
    key, n_keys = np.zeros(size, dtype=np.int64), 1
    for a in arrs:
        if a.size == 1:
            continue
        hit = cache.get((id(a), shape)) if cache is not None else None
        if hit is not None and hit[0] is a:
            codes, uniq = hit[1], hit[2]
        else:
            codes, uniq = pd.factorize(np.broadcast_to(a, shape).ravel(), use_na_sentinel=False)
            if cache is not None:
                cache[(id(a), shape)] = (a, codes, uniq)
        if n_keys * len(uniq) > 2 ** 62:
            return None
        key = key * len(uniq) + codes
        n_keys *= len(uniq)
    inverse, uniq_keys = pd.factorize(key)
    if 2 * len(uniq_keys) > size:
        return None
    # factorize numbers rows in order of first appearance: the running maximum steps up there
    first = np.flatnonzero(np.diff(np.maximum.accumulate(inverse), prepend=-1) > 0)
    rows = [np.broadcast_to(a, shape).ravel()[first] if a.size > 1 else np.full(len(first), a.ravel()[0])
            for a in arrs]
    return rows, inverse, shape


def collective_fields(system: System, cal: Calibration, collective, nbytes, group, stride=1,
                      fields: tuple[str, ...] = ("time_s",), launch: str = "in-graph",
                      ranks_per_chip: int = 1, cache: dict | None = None) -> dict[str, np.ndarray]:
    """Some fields of collective_cost (by name), the same numbers: the cost is a function of each
    (nbytes, group, stride) entry alone, so a sweep prices each distinct entry once and spreads the
    results back (a sweep repeats few distinct messages). A group of one chip costs 0 s.
    `cache`: see distinct (a caller pricing several collectives over the same groups)."""
    g = np.asarray(group, dtype=float)
    if fields == ("time_s",) and g.ndim == 0 and g * ranks_per_chip <= 1:  # no peer: collective_cost's time is 0.0 everywhere
        return {"time_s": np.zeros(np.broadcast_shapes(np.shape(nbytes), np.shape(stride)))}
    d = distinct(nbytes, group, stride, cache=cache)
    if d is None:
        cost = collective_cost(system, cal, collective, nbytes, group, stride, launch=launch,
                               ranks_per_chip=ranks_per_chip)
        return {f: getattr(cost, f) for f in fields}
    (n, g, s), inverse, shape = d
    cost = collective_cost(system, cal, collective, n, g, s, launch=launch, ranks_per_chip=ranks_per_chip)
    return {f: getattr(cost, f)[inverse].reshape(shape) for f in fields}


def collective_time(system: System, cal: Calibration, collective: Collective, nbytes, group, stride=1,
                    launch: str = "in-graph", ranks_per_chip: int = 1, cache: dict | None = None) -> np.ndarray:
    """Seconds for one collective of `nbytes` per chip over `group` chips `stride` apart (fastest algorithm)."""
    return collective_fields(system, cal, collective, nbytes, group, stride, ("time_s",), launch,
                             ranks_per_chip, cache)["time_s"]


def sweep(system: System, cal: Calibration, collective, sizes, group, stride=1,
          algorithm: str = "auto", launch: str = "in-graph", ranks_per_chip: int = 1) -> pd.DataFrame:
    """One row per (size, group): chosen algorithm, time split, algbw/busbw, regime, every algorithm's time.
    With ranks_per_chip > 1 the bus-bandwidth factor counts ranks (nccl-tests / nccom-test convention)."""
    sizes = np.asarray(sizes, dtype=float)
    groups = np.asarray(group, dtype=float)
    n, g = np.meshgrid(sizes, groups, indexing="ij")
    cost = collective_cost(system, cal, collective, n.ravel(), g.ravel(), stride, algorithm, launch, ranks_per_chip)
    t = cost.time_s
    algbw = np.where(t > 0, cost.nbytes / np.where(t > 0, t, 1.0), np.nan)
    df = pd.DataFrame({
        "system": system.name, "collective": cost.collective.value, "group": cost.group,
        "size_bytes": cost.nbytes, "algorithm": cost.algorithm, "time_s": t, "fixed_s": cost.fixed_s,
        "latency_s": cost.latency_s, "bandwidth_s": cost.bandwidth_s,
        "algbw_bytes_per_s": algbw, "busbw_bytes_per_s": algbw * BUS_FACTOR[cost.collective](cost.ranks),
        "regime": np.where(cost.fixed_s + cost.latency_s >= cost.bandwidth_s, "latency", "bandwidth"),
        "crosses": cost.crosses,
    })
    for a, (ta, _, _) in cost.per_algorithm.items():
        df[f"time_{a.replace('-', '_')}_s"] = ta
    return df


def size_range(lo: float, hi: float, per_octave: int = 1) -> np.ndarray:
    """Message sizes from lo to hi bytes, `per_octave` points per doubling (powers of two)."""
    k = np.arange(np.floor(np.log2(lo) * per_octave), np.floor(np.log2(hi) * per_octave) + 1)
    return 2.0 ** (k / per_octave)


def placement_frame(system: System, cal: Calibration, group, stride=1) -> pd.DataFrame:
    """Members of a group along each topology dimension (one row per dimension)."""
    gds = place_group(topology_dims(system, cal), group, stride)
    return pd.DataFrame([{"dimension": gd.dim.name, "scope": gd.dim.scope.value, "kind": "link" if gd.dim.link
                          else "switch", "members": float(np.ravel(gd.m)[0]), "hops": float(np.ravel(gd.h)[0]),
                          "rate_bytes_per_s": gd.dim.rate_bytes_per_s, "alpha_s": gd.dim.alpha_s} for gd in gds])
