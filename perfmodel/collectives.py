"""Collective communication cost (alpha-beta) over a system's link tiers.

    ring all-reduce     t = 2 (g-1) alpha + 2 (g-1)/g  n / beta
    all-gather / reduce-scatter / all-to-all   t = (g-1) alpha + (g-1)/g n / beta
    send/recv           t = alpha + n / beta
    n: buffer bytes per device (nccl-tests 'size'); beta: per-chip bandwidth of the
    slowest tier the group crosses (per node NIC bandwidth / chips per node over EFA);
    alpha: per-step latency of that tier plus a fixed per-call cost.

Groups are placed innermost-first: a group of g chips whose members are `stride` chips
apart spans g x stride consecutive chips.

Does not: choose parallelism plans.
"""

from __future__ import annotations

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.graph import Collective
from perfmodel.hardware import Scope, System


def _tier_for_extent(system: System, extent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per-chip bandwidth B/s, tier index 0 node / 1 scale-up / 2 scale-out) for a span of chips."""
    node = system.tier(Scope.NODE)
    up = system.tier(Scope.SCALEUP)
    out = system.tier(Scope.SCALEOUT)
    node_bw = node.bandwidth_bytes_per_s if node else (out.bandwidth_bytes_per_s if out else 1.0)
    up_bw = up.bandwidth_bytes_per_s if up else node_bw
    if out is None:
        out_bw = up_bw
    else:
        out_bw = out.bandwidth_bytes_per_s / system.node.chips if out.per_node else out.bandwidth_bytes_per_s
    extent = np.asarray(extent, dtype=float)
    tier = np.where(extent <= system.node.chips, 0, np.where(extent <= system.scaleup_chips, 1, 2))
    bw = np.choose(tier, [node_bw, up_bw, out_bw])
    return bw, tier


def collective_time(system: System, cal: Calibration, collective: Collective, nbytes, group, stride=1) -> np.ndarray:
    """Seconds for one collective of `nbytes` per device over a group of `group` chips."""
    n = np.asarray(nbytes, dtype=float)
    g = np.asarray(group, dtype=float)
    bw, tier = _tier_for_extent(system, g * np.asarray(stride, dtype=float))
    alpha = np.choose(tier, [cal["link_latency_node"], cal["link_latency_scaleup"], cal["link_latency_scaleout"]])
    fixed = cal["collective_fixed_latency"]
    steps = np.maximum(g - 1, 0)
    frac = np.where(g > 1, (g - 1) / np.maximum(g, 1), 0.0)
    c = Collective(collective)
    if c == Collective.ALL_REDUCE:
        t = 2 * steps * alpha + 2 * frac * n / bw
    elif c == Collective.SEND_RECV:
        t = np.where(g > 1, alpha + n / bw, 0.0)
    else:
        t = steps * alpha + frac * n / bw
    return np.where((g > 1) & (n > 0), t + fixed, 0.0)
