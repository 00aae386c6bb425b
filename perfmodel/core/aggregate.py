"""System aggregates: chip figures multiplied out to a node and a scale-up domain.

    peak_X(level)   = chips(level) x chip peak_X          [FLOP/s]
    hbm(level)      = chips(level) x chip HBM capacity     [B]
    hbm_bw(level)   = chips(level) x chip HBM bandwidth    [B/s]

These are the numbers spec-sheet claims (D1-D7) and `perfmodel specs compare` use; the
published totals in each system file are kept beside them for cross-checking.

Does not: apply any efficiency; these are peaks.
"""

from __future__ import annotations

from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Scope, System

LEVELS = ("chip", "node", "scaleup")


def chips_at(system: System, level: str) -> int:
    return {"chip": 1, "node": system.node.chips, "scaleup": system.scaleup_chips}[level]


def totals(system: System, level: str = "scaleup") -> dict[str, float]:
    """Peak figures of one chip, one node or the whole scale-up domain, SI units.

    Keys: peak_<dtype>_flop_per_s, peak_sparse_<dtype>_flop_per_s, hbm_capacity_bytes,
    hbm_bandwidth_bytes_per_s, sram_bytes, link_bandwidth_per_chip_bytes_per_s (fastest
    tier inside the scale-up domain), efa_bandwidth_bytes_per_s (whole level), chips.
    """
    n = chips_at(system, level)
    c = system.chip
    out: dict[str, float] = {"chips": float(n)}
    for d, v in c.peak_flop_per_s.items():
        out[f"peak_{d.value}_flop_per_s"] = n * v
    for d, v in c.peak_sparse_flop_per_s.items():
        out[f"peak_sparse_{d.value}_flop_per_s"] = n * v
    out["hbm_capacity_bytes"] = n * c.hbm_capacity_bytes
    out["hbm_bandwidth_bytes_per_s"] = n * c.hbm_bandwidth_bytes_per_s
    if c.sram_bytes:
        out["sram_bytes"] = n * c.sram_bytes
    inner = [t for t in system.tiers if t.scope in (Scope.NODE, Scope.SCALEUP) and not t.per_node]
    if c.link_bandwidth_bytes_per_s:
        out["link_bandwidth_per_chip_bytes_per_s"] = c.link_bandwidth_bytes_per_s
    elif inner:
        out["link_bandwidth_per_chip_bytes_per_s"] = sum(t.bandwidth_bytes_per_s for t in inner)
    if system.node.efa_bandwidth_bytes_per_s and level != "chip":
        nodes = 1 if level == "node" else system.scaleup_nodes
        out["efa_bandwidth_bytes_per_s"] = nodes * system.node.efa_bandwidth_bytes_per_s
    if system.node.price_usd_per_hour and level != "chip":
        nodes = 1 if level == "node" else system.scaleup_nodes
        out["price_usd_per_hour"] = nodes * system.node.price_usd_per_hour
    return out


def peak(system: System, dtype: DType, level: str = "chip") -> float:
    return chips_at(system, level) * system.chip.peak(dtype)
