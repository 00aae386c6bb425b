"""Collective communication cost: alpha-beta per hop and per link over the system's topology.

One call's time is t = F + latency + bandwidth of the fastest algorithm the runtime offers:
    topology    the spec sheet's tiers as dimensions, a group placed on them (collective_topology)
    algorithms  ring, bidir-ring, 2d-ring, tree, direct, nvls, hierarchical: each a
                (latency_s, bandwidth_s) pair over the placed group (collective_algorithms)
    F           the fixed cost of a call: `collective_fixed_latency` inside a compiled graph (the
                default), `collective_host_launch_latency` for host-launched calls
                (microbenchmarks such as nccom-test and nccl-tests), plus `framework_call_overhead`
                for an eager framework call the device waits for (torch.distributed one call at a time).

Sizes n are bytes per rank as nccl-tests counts them ('size'): all-reduce in = out = n;
all-gather out = n (n/g contributed); reduce-scatter in = n; all-to-all n sent in total
(n/g to each peer); broadcast and send/recv n. Units: n in bytes, t in s.

`collective_cost(..., algorithm="auto")` evaluates every algorithm (vectorised over sizes,
groups and strides) and takes the fastest the runtime offers, as libraries pick by size and
group; the breakdown keeps every algorithm's time. Inside one node a family may offer fewer:
`intranode_direct_max_ranks` caps the one-step 'direct' pattern at that many ranks and
`intranode_multistep_algorithms` = 0 leaves the ring family only (Trn1/Inf2 runtime of Neuron
SDK 2.18: ring, plus the all-to-all all-reduce for 16-rank groups).

Ranks: a group is g chips; with ranks_per_chip r > 1 (the Neuron runtime counts every
NeuronCore as a rank) each chip adds an innermost dimension of r ranks (collective_topology.
core_dim), so a flat ring over the g r ranks has g r - 1 steps; sizes stay per rank.

Does not: model NVLS's ramp to its asymptotic rate at mid sizes (NCCL reaches it only from
~256 MiB on 8 H200s), in-switch reduction for collectives other than all-reduce, per-peer
message costs, congestion between different groups beyond the per-chip NIC share, or choose
parallelism plans (plan.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from perfmodel.comm.algorithms import ALGORITHMS, Collective, algorithm_cost
from perfmodel.comm.topology import GroupDim, core_dim, place, place_group, scope_key, topology_dims
from perfmodel.core import elementwise as ew
from perfmodel.core.calibration import Calibration
from perfmodel.core.hardware import Scope, System

__all__ = ["ALGORITHMS", "BUS_FACTOR", "LAUNCH", "CollectiveCost", "collective_cost", "collective_fields",
           "collective_time", "distinct", "fixed_latency", "place_group", "size_range", "sweep", "topology_dims"]

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


# the tiers a group can span, innermost first (the values of `crosses`)
TIERS = ("none",) + tuple(scope_key(s) for s in Scope)


def _outermost(gds: list[GroupDim], g) -> np.ndarray:
    """The outermost tier each group spans (the groups g: an array, or one Python float and a name back)."""
    out = "none" if ew.one(g) else np.full(np.shape(g), "none", dtype=object)
    for gd in gds:
        out = ew.where(gd.m > 1, scope_key(gd.dim.scope), out)
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


def _inside_node(crosses) -> np.ndarray | bool:
    """Where a group stays inside one node (its outermost dimension crossed is none or the node's)."""
    return crosses in ("none", "node") if isinstance(crosses, str) else (crosses == "none") | (crosses == "node")


def _unavailable(alg: str, ranks: np.ndarray, inside, cal: Calibration) -> np.ndarray:
    """Where the runtime does not offer `alg` for a group inside one node (True = not offered; inside:
    _inside_node of the groups, computed once for every algorithm: comparing names is the costly part).

    `intranode_direct_max_ranks` (0: no limit) caps the one-step all-to-all pattern ('direct') at that
    many ranks; `intranode_multistep_algorithms` = 0 leaves only the ring family (ring, bidir-ring)
    and, up to the cap, direct: no per-dimension rings, recursive halving-doubling or tiered
    schedules inside a node. A family file without these parameters restricts nothing."""
    cap = cal.get("intranode_direct_max_ranks", 0.0)
    if alg == "direct":
        return inside & (cap > 0) & (ranks > cap)
    if alg in ("2d-ring", "tree", "hierarchical"):
        return inside & (cal.get("intranode_multistep_algorithms", 1.0) == 0)
    return False if ew.one(ranks) else np.zeros(np.shape(ranks), dtype=bool)


FLAT_RINGS = ("ring", "bidir-ring")


def collective_cost(system: System, cal: Calibration, collective, nbytes, group, stride=1,
                    algorithm: str = "auto", launch: str = "in-graph", ranks_per_chip: int = 1) -> CollectiveCost:
    """Cost of one collective per configuration (arrays broadcast together); see module doc.

    ranks_per_chip r > 1: every chip of the group runs r ranks (one per NeuronCore, as the Neuron
    runtime counts them), an innermost dimension of r members (core_dim); a flat ring then has
    g r - 1 steps, and the other algorithms share each chip's links among its r ranks. `nbytes` is per rank
    (a TP all-reduce's whole buffer on every rank)."""
    c = Collective(collective)
    n, g, s = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (nbytes, group, stride)))
    return _cost(system, cal, c, n.copy(), g.copy(), s.copy(), algorithm, launch, int(ranks_per_chip))


def _cost(system: System, cal: Calibration, c: Collective, n, g, s, algorithm: str, launch: str,
          r: int) -> CollectiveCost:
    """collective_cost of messages n over groups g at strides s given as arrays of one shape, or as three Python
    floats (one message: every field then a Python number or name, the same numbers; core/elementwise)."""
    gds = place(topology_dims(system, cal), g, s)
    shared = gds
    if r > 1:
        core = [GroupDim(core_dim(system, cal, r), ew.full_like(g, float(r)), ew.ones_like(g))]
        # the r ranks of a chip share its links: where they all send at once (every algorithm but the flat
        # ring, whose steps cross a chip boundary once per chip), each rank gets 1/r of a chip's rate
        shared = core + [GroupDim(replace(gd.dim, rate_bytes_per_s=gd.dim.rate_bytes_per_s / r,
                                          lone_rate_bytes_per_s=gd.dim.lone_rate_bytes_per_s / r), gd.m, gd.h)
                         for gd in gds]
        gds = core + gds
    ranks = g * r
    crosses = _outermost(gds, g)
    inside = _inside_node(crosses) if algorithm == "auto" else False
    p = cal["hierarchical_pipelining"]
    active = (ranks > 1) & (n > 0)
    names = ALGORITHMS if algorithm == "auto" else (algorithm,)
    per: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for alg in names:
        if alg not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {alg!r} (choose from auto, {', '.join(ALGORITHMS)})")
        if not gds:
            cost = (ew.zeros_like(n), ew.zeros_like(n))
        else:
            cost = algorithm_cost(c, alg, gds if alg in FLAT_RINGS else shared, n, p)
        if cost is None:
            inf = ew.full_like(n, np.inf)
            per[alg] = (inf, inf, inf)
            continue
        lat, bw = (ew.where(active, x, 0.0) for x in cost)
        off = _unavailable(alg, ranks, inside, cal) & active if algorithm == "auto" else False
        per[alg] = (ew.where(off, np.inf, lat + bw), lat, bw)
    totals = [per[a][0] for a in names]
    idx = ew.argmin_rows(totals)  # the fastest (ties to the first); a group no algorithm applies to has only inf
    if not np.all(ew.isfinite(ew.choose(idx, totals))):
        raise ValueError(f"algorithm {algorithm!r} does not apply to {c.value}")

    def pick(k: int):
        return ew.choose(idx, [per[a][k] for a in names])

    fixed = ew.where(active, fixed_latency(cal, launch), 0.0)
    alg_names = ew.where(active, names[idx] if isinstance(idx, int) else np.asarray(names, dtype=object)[idx], "none")
    per = {a: (ew.where(active, t + fixed, 0.0), la, bw) for a, (t, la, bw) in per.items()}
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
    key, n_keys, varied = np.zeros(size, dtype=np.int64), 1, 0
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
        varied += 1
    # one array varying: its codes are already the rows' (factorize numbers them in order of first appearance)
    inverse, uniq_keys = (key, range(n_keys)) if varied == 1 else pd.factorize(key)
    if 2 * len(uniq_keys) > size:
        return None
    # factorize numbers rows in order of first appearance: the running maximum steps up there
    first = np.flatnonzero(np.diff(np.maximum.accumulate(inverse), prepend=-1) > 0)
    rows = [np.broadcast_to(a, shape).ravel()[first] if a.size > 1 else np.full(len(first), a.ravel()[0])
            for a in arrs]
    return rows, inverse, shape


_MEMO: OrderedDict = OrderedDict()  # (system, calibration, collective, call, messages) -> fields (read-only)
_MEMO_SIZE = 4096
_MEMO_MAX_MESSAGES = 1024  # calls pricing more distinct messages (a sweep's) are not kept: they seldom repeat
_MEMO_LOCK = threading.Lock()


def _memo_key(system: System, cal: Calibration, collective, launch, ranks_per_chip, fields, n, g, s) -> tuple:
    """A priced call's identity: the System object itself (kept alive by its entry, so its id is never
    reused while the entry lives; a what-if's new System misses), the calibration by value (a new Calibration
    of equal values hits), and the distinct messages' bytes."""
    return (id(system), cal.values_key, Collective(collective), launch, int(ranks_per_chip), fields, n.tobytes(),
            g.tobytes(), s.tobytes())


def collective_fields(system: System, cal: Calibration, collective, nbytes, group, stride=1,
                      fields: tuple[str, ...] = ("time_s",), launch: str = "in-graph",
                      ranks_per_chip: int = 1, cache: dict | None = None) -> dict[str, np.ndarray]:
    """Some fields of collective_cost (by name), the same numbers: the cost is a function of each
    (nbytes, group, stride) entry alone, so a sweep prices each distinct entry once and spreads the
    results back (a sweep repeats few distinct messages). A group of one chip costs 0 s.
    `cache`: see distinct (a caller pricing several collectives over the same groups).
    The distinct entries' prices are memoised in the process (an LRU of _MEMO_SIZE calls of at most
    _MEMO_MAX_MESSAGES messages each): the serving searches, the claims and a loop of single evaluations price
    the same messages again and again."""
    if isinstance(nbytes, (int, float)) and isinstance(group, (int, float)) and isinstance(stride, (int, float)):
        return _one_message(system, cal, collective, float(nbytes), float(group), float(stride), fields, launch,
                            ranks_per_chip)
    g = np.asarray(group, dtype=float)
    if fields == ("time_s",) and g.ndim == 0 and g * ranks_per_chip <= 1:  # no peer: the time is 0.0 everywhere
        return {"time_s": np.zeros(np.broadcast_shapes(np.shape(nbytes), np.shape(stride)))}
    # one group for every message (a sweep whose plan is fixed: only the sizes vary) goes to _cost as Python numbers:
    # its placement, tiers and algorithms' group terms are worked out once, not once per distinct message (half a
    # prefill sweep's collective time), the same numbers (an IEEE operation on a number and on an array of it agree)
    one_group = g.ndim == 0 and np.ndim(stride) == 0
    d = None if one_group and np.ndim(nbytes) == 0 \
        else distinct(nbytes, *(() if one_group else (group, stride)), cache=cache)  # one message: nothing to do
    if d is None:
        n, g, s = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (nbytes, group, stride)))
        inverse, shape = None, n.shape
        n, g, s = n.ravel().copy(), g.ravel(), s.ravel()
    else:
        rows, inverse, shape = d
        n, g, s = (rows[0], g, stride) if one_group else rows
    if one_group:  # the group and stride as Python numbers (the comment above)
        g, s = float(np.ravel(g)[0]), float(np.ravel(s)[0])
    key = None if n.size > _MEMO_MAX_MESSAGES else \
        _memo_key(system, cal, collective, launch, ranks_per_chip, fields, n, np.asarray(g), np.asarray(s))
    hit = None if key is None else _memo_get(key)
    if hit is None:
        cost = _one_group(system, cal, collective, n, g, s, launch, ranks_per_chip) if one_group else \
            collective_cost(system, cal, collective, n, g, s, launch=launch, ranks_per_chip=ranks_per_chip)
        values = {f: np.broadcast_to(_as_array(getattr(cost, f)), n.shape) for f in fields}  # a group's, spread
        hit = (system, values) if key is None else _memo_put(key, system, values)
    out = hit[1]
    if inverse is None:
        return {f: out[f].reshape(shape).copy() for f in fields}
    return {f: out[f][inverse].reshape(shape) for f in fields}


def _one_group(system: System, cal: Calibration, collective, n: np.ndarray, g: float, s: float, launch: str,
               ranks_per_chip: int) -> CollectiveCost:
    """_cost of messages n over one group g at stride s given as Python numbers, or of every entry's arrays where
    Python arithmetic raises what numpy carries as inf (a tier of zero bandwidth)."""
    try:
        return _cost(system, cal, Collective(collective), n, g, s, "auto", launch, int(ranks_per_chip))
    except ArithmeticError:
        return collective_cost(system, cal, collective, n, np.full(n.shape, g), np.full(n.shape, s),
                               launch=launch, ranks_per_chip=ranks_per_chip)


def _as_array(v) -> np.ndarray:
    """A field as the arrays give it: a Python number a float, a name (one tier, one algorithm) an object."""
    return v if isinstance(v, np.ndarray) else np.array(v, dtype=float if isinstance(v, (int, float)) else object)


def _one_message(system: System, cal: Calibration, collective, n: float, g: float, s: float, fields: tuple[str, ...],
                 launch: str, ranks_per_chip: int) -> dict[str, np.ndarray]:
    """collective_fields of one message given as Python numbers (one configuration's), its memo keyed by the
    numbers themselves (no arrays to build, broadcast or serialise): the same 0-d results."""
    if fields == ("time_s",) and g * ranks_per_chip <= 1:
        return {"time_s": np.zeros(())}
    key = (id(system), cal.values_key, Collective(collective), launch, int(ranks_per_chip), fields, n, g, s)
    hit = _memo_get(key)
    if hit is None:
        try:  # Python arithmetic raises where numpy carries inf (a tier of zero bandwidth): numpy's path then
            cost = _cost(system, cal, Collective(collective), n, g, s, "auto", launch, int(ranks_per_chip))
            values = {f: _as_array(getattr(cost, f)) for f in fields}
        except ArithmeticError:
            cost = collective_cost(system, cal, collective, np.array([n]), np.array([g]), np.array([s]),
                                   launch=launch, ranks_per_chip=ranks_per_chip)
            values = {f: np.asarray(getattr(cost, f)).reshape(()) for f in fields}
        hit = _memo_put(key, system, values)
    return {f: v.copy() for f, v in hit[1].items()}


def _memo_get(key: tuple):
    """A priced call's (system, fields) from the memo, or None (the entry becomes the most recent)."""
    with _MEMO_LOCK:  # sweeps price chunks on threads
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
    return hit


def _memo_put(key: tuple, system: System, values: dict) -> tuple:
    """Keep a priced call's fields (read-only: later calls share them), the oldest entry leaving when full."""
    for a in values.values():
        a.setflags(write=False)
    hit = (system, values)
    with _MEMO_LOCK:
        _MEMO[key] = hit
        if len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return hit


def collective_time(system: System, cal: Calibration, collective: Collective, nbytes, group, stride=1,
                    launch: str = "in-graph", ranks_per_chip: int = 1, cache: dict | None = None) -> np.ndarray:
    """Seconds for one collective of `nbytes` per chip over `group` chips `stride` apart (fastest algorithm)."""
    return collective_fields(system, cal, collective, nbytes, group, stride, ("time_s",), launch,
                             ranks_per_chip, cache)["time_s"]


def sweep(system: System, cal: Calibration, collective, sizes, group, stride=1,
          algorithm: str = "auto", launch: str = "in-graph", ranks_per_chip: int = 1) -> pd.DataFrame:
    """One row per (size, group): chosen algorithm, time split, algbw/busbw, regime, every algorithm's time
    (empty where that algorithm cannot run the group).
    With ranks_per_chip > 1 the bus-bandwidth factor counts ranks (nccl-tests / nccom-test convention)."""
    sizes = np.asarray(sizes, dtype=float)
    groups = np.asarray(group, dtype=float)
    n, g = np.meshgrid(sizes, groups, indexing="ij")
    cost = collective_cost(system, cal, collective, n.ravel(), g.ravel(), stride, algorithm, launch, ranks_per_chip)
    t = cost.time_s
    algbw = np.where(t > 0, cost.nbytes / np.where(t > 0, t, 1.0), np.nan)
    df = pd.DataFrame({
        "system": system.name, "collective": cost.collective.value,
        "group": np.broadcast_to(np.asarray(cost.group), t.shape).astype(np.int64),
        "size_bytes": cost.nbytes, "algorithm": cost.algorithm, "time_s": t, "fixed_s": cost.fixed_s,
        "latency_s": cost.latency_s, "bandwidth_s": cost.bandwidth_s,
        "algbw_bytes_per_s": algbw, "busbw_bytes_per_s": algbw * BUS_FACTOR[cost.collective](cost.ranks),
        "regime": np.where(cost.fixed_s + cost.latency_s >= cost.bandwidth_s, "latency", "bandwidth"),
        "crosses": cost.crosses,
    })
    # every algorithm's time where it can run; one that cannot run any row (NVLS beyond an NVLink
    # domain, 2D ring on one tier) has no column, one that cannot run some rows is empty there
    for a, (ta, _, _) in cost.per_algorithm.items():
        ta = np.broadcast_to(np.asarray(ta, dtype=float), t.shape)
        if np.isfinite(ta).any():
            df[f"time_{a.replace('-', '_')}_s"] = np.where(np.isfinite(ta), ta, np.nan)
    return df


def size_range(lo: float, hi: float, per_octave: int = 1) -> np.ndarray:
    """Message sizes from lo to hi bytes, `per_octave` points per doubling (powers of two)."""
    k = np.arange(np.floor(np.log2(lo) * per_octave), np.floor(np.log2(hi) * per_octave) + 1)
    return 2.0 ** (k / per_octave)
