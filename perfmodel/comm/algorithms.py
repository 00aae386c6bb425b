"""Collective algorithms: (latency_s, bandwidth_s) of each algorithm over a placed group.

Sizes n are bytes per rank as nccl-tests counts them ('size'); n_d = n / prod_{e<d} m_e is the
data a dimension's phase works on when dimensions are visited inner to outer (m_d members and
h_d hops along dimension d, b_d its rate, alpha_d its per-hop latency: collective_topology).
Units: n, n_d in bytes; b, b2 in bytes/s (per chip, per direction); alpha, t in s.

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
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from perfmodel.comm.topology import GroupDim
from perfmodel.core import elementwise as ew
from perfmodel.core.hardware import Scope


class Collective(str, Enum):
    """The collectives a graph places and this package prices."""

    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    SEND_RECV = "send-recv"


ALGORITHMS = ("ring", "bidir-ring", "2d-ring", "tree", "direct", "nvls", "hierarchical")  # ties go to the first
_MAX_TREE_STEPS = 24  # log2 of the largest group a tree dimension is evaluated for (16M members)


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
    return gd.dim.rate_bytes_per_s * ew.where(gd.m > 2, 2.0, 1.0)


def _ring_phase(gd: GroupDim, n_d, bidir: bool = True):
    m = gd.m
    lat = (m - 1) * gd.dim.alpha_s * gd.h
    bw = (m - 1) / m * n_d / (_bi(gd) if bidir else _uni(gd))
    return lat, bw


def _pairwise(gd: GroupDim, data_j):
    """Steps j = 0.. while 2^j < m: exchange data_j(j) bytes with the member delta = 2^j away
    (delta h hops on a link dimension, congestion max(1, delta h / 2) on its links)."""
    lat = ew.zeros_like(gd.m)
    bw = ew.zeros_like(gd.m)
    for j in range(_MAX_TREE_STEPS):
        delta = 2.0 ** j
        on = delta < gd.m
        if not ew.any_true(on):
            break
        hops = delta * gd.h if gd.dim.link else ew.ones_like(gd.m)
        cong = ew.maximum(1.0, hops / 2.0) if gd.dim.link else 1.0
        lat = lat + ew.where(on, gd.dim.alpha_s * hops, 0.0)
        bw = bw + ew.where(on, data_j(j) * cong / _uni(gd), 0.0)
    return lat, bw


def _tree_phase(gd: GroupDim, n_d):
    """Recursive halving along one dimension: step j moves n_d / 2^(j+1)."""
    return _pairwise(gd, lambda j: n_d / 2.0 ** (j + 1))


def _avg_hops(m):
    """Mean shortest distance to the other members of a bidirectional ring of m: floor(m^2/4)/(m-1)."""
    return ew.where(m > 1, ew.floor(m * m / 4.0) / ew.maximum(m - 1, 1.0), 0.0)


def _direct_phase(gds: list[GroupDim], n):
    """One-step exchange of n/g with every peer (reduce-scatter, all-gather or all-to-all)."""
    g = ew.prod_rows([gd.m for gd in gds]) if gds else ew.ones_like(n)
    lat_link = ew.zeros_like(g)
    lat_sw = ew.zeros_like(g)
    per_ports: dict[int, np.ndarray] = {}
    inner = ew.ones_like(g)
    for gd in gds:
        m, d = gd.m, gd.dim
        if _alone(gd):  # no peer along d: no latency, a 0.0 term on its ports' bytes, inner x 1
            per_ports.setdefault(d.ports, ew.zeros_like(n))
            continue
        used = m > 1
        if d.link:
            moving = n * (m - 1) / m  # bytes whose coordinate along d differs
            t = moving * _avg_hops(m) * gd.h / _bi(gd)
            lat_link = lat_link + ew.where(used, d.alpha_s * ew.floor(m / 2.0) * gd.h, 0.0)
        else:
            t = n * (m - 1) * inner / g / d.rate_bytes_per_s
            lat_sw = ew.maximum(lat_sw, ew.where(used, d.alpha_s, 0.0))
        per_ports[d.ports] = per_ports.get(d.ports, 0.0) + ew.where(used, t, 0.0)
        inner = inner * m
    bw = ew.max_rows(list(per_ports.values()), np.broadcast_shapes(np.shape(g), np.shape(n)))  # one group: g a number
    return lat_link + lat_sw, bw


def _levels(gds: list[GroupDim]) -> list[list[GroupDim]]:
    out: dict[Scope, list[GroupDim]] = {}
    for gd in gds:
        out.setdefault(gd.dim.scope, []).append(gd)
    return list(out.values())


def _alone(gd: GroupDim) -> bool:
    """A dimension the group spans with one member in every configuration: its phase does nothing (each
    algorithm masks it out, `used = m > 1`), so it is not priced at all."""
    m = gd.m
    return m == 1 if isinstance(m, (int, float)) else not np.any(m != 1)  # one message's: a Python number


def _seq(gds: list[GroupDim], n, phase):
    """Apply a per-dimension phase inner to outer on shrinking data; sum latency and bandwidth."""
    lat = ew.zeros_like(n)
    bw = ew.zeros_like(n)
    n_d = n
    for gd in gds:
        if _alone(gd):  # adds 0.0 to each sum and divides the data by 1: the same numbers without its phase
            continue
        a, b = phase(gd, n_d)
        used = gd.m > 1
        lat = lat + ew.where(used, a, 0.0)
        bw = bw + ew.where(used, b, 0.0)
        n_d = n_d / gd.m
    return lat, bw


def _best(*pairs):
    i = ew.argmin_rows([a + b for a, b in pairs])
    return ew.choose(i, [a for a, _ in pairs]), ew.choose(i, [b for _, b in pairs])


def _ring_rates(gds, bidir: bool) -> np.ndarray:
    """Slowest hop of a flat ring. Its scale-out hop leaves each node at one chip, so the group
    gets the node's NIC share of its m_in members there, up to what one chip reaches alone."""
    m_in = ew.ones_like(gds[0].m)
    rate = ew.full_like(gds[0].m, np.inf)
    for gd in gds:
        if _alone(gd):  # m_in x 1, the rate kept where m = 1
            continue
        r = _bi(gd) if bidir else _uni(gd)
        if np.isinf(gd.dim.size):
            r = ew.minimum(gd.dim.rate_bytes_per_s * m_in, max(gd.dim.lone_rate_bytes_per_s, gd.dim.rate_bytes_per_s))
        else:
            m_in = m_in * gd.m
        rate = ew.where(gd.m > 1, ew.minimum(rate, r), rate)
    return ew.where(ew.isfinite(rate), rate, 1.0)


def _flat_ring(gds, n, bidir: bool):
    g = ew.prod_rows([gd.m for gd in gds])
    used = [gd.m > 1 for gd in gds]
    # a dimension of one member adds a 0.0 term to the maximum of non-negative latencies: left out
    a = ew.max_rows([ew.where(u, gd.dim.alpha_s * gd.h, 0.0) for gd, u in zip(gds, used) if not _alone(gd)]
                    or [ew.zeros_like(g)])
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
    g = ew.prod_rows([gd.m for gd in gds])
    ok = True if ew.one(g) else np.ones_like(g, dtype=bool)
    rate = ew.full_like(g, np.inf)
    alpha = ew.zeros_like(g)
    for gd in gds:
        if _alone(gd):  # not on: ok, rate and alpha as they are
            continue
        on = gd.m > 1
        d = gd.dim
        reduces = bool((not d.link) and d.reduce_eff > 0 and np.isfinite(d.size))
        ok = ok & (ew.logical_not(on) | reduces)
        rate = ew.where(on, ew.minimum(rate, d.rate_bytes_per_s * d.reduce_eff), rate)
        alpha = ew.where(on, ew.maximum(alpha, d.reduce_alpha_s), alpha)
    ok = ok & (g > 1)
    safe = ew.where(ok & ew.isfinite(rate) & (rate > 0), rate, 1.0)
    lat = ew.where(ok, alpha, np.inf)
    bw = ew.where(ok, n * (1 + 1 / ew.maximum(g, 1.0)) / safe, np.inf)
    return lat, bw


def _level_allreduce(lvl, n_l):
    """One tier of a hierarchical all-reduce: its reduce-scatter and all-gather, or NVLS."""
    a, b = _level_rs(lvl, n_l)
    return _best((2 * a, 2 * b), _nvls_pair(lvl, n_l))


def _hier(gds, n, p, level_cost, shrink: bool = True, factor: float = 1.0):
    """Tiers in turn; bandwidth = (1-p) sum + p max over tiers (tiers on the same ports add)."""
    lat = ew.zeros_like(n)
    per_ports: dict[frozenset, np.ndarray] = {}
    n_l = n
    for lvl in _levels(gds):
        if all(_alone(gd) for gd in lvl):  # a tier of one member costs (0, 0) at every level_cost: it would add
            continue  # 0.0 to the latency and a 0.0 bandwidth term (test_collectives holds both)
        a, b = level_cost(lvl, n_l)
        lat = lat + factor * a
        key = frozenset(gd.dim.ports // 10 for gd in lvl)
        per_ports[key] = per_ports.get(key, 0.0) + factor * b
        if shrink:
            n_l = n_l / ew.prod_rows([gd.m for gd in lvl])
    bws = list(per_ports.values()) or [ew.zeros_like(n)]
    bw = (1 - p) * ew.sum_rows(bws, np.shape(n)) + p * ew.max_rows(bws, np.shape(n))
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
    lat = ew.zeros_like(n)
    bw = ew.zeros_like(n)
    for gd in gds:
        if _alone(gd):  # as in _seq
            continue
        a, b = phase(gd, n)
        used = gd.m > 1
        lat = lat + ew.where(used, a, 0.0)
        bw = bw + ew.where(used, b, 0.0)
    return lat, bw


def algorithm_cost(c: Collective, alg: str, gds, n, p: float):
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
        lat = ew.zeros_like(n)
        rate = ew.full_like(n, np.inf)
        for gd in gds:
            used = gd.m > 1
            lat = lat + ew.where(used, gd.dim.alpha_s * gd.h, 0.0)
            rate = ew.where(used, ew.minimum(rate, _bi(gd)), rate)
        return lat, n / ew.where(ew.isfinite(rate), rate, 1.0)
    raise ValueError(f"unknown collective {c!r}")
