"""The allowed range of every calibration parameter, by what it means (an efficiency, a fraction,
a tile size, a pass count, a latency, ...).

Family files, calibrated sets, `perfmodel check` and calibration what-ifs (`--set
hbm_efficiency=0.9`, `--set op_overhead=x2`) all hold a value to its parameter's range, so a
value the model cannot use (an efficiency of 0 divides by zero, a tile of 0 gives NaN, an
efficiency of 1.7 is faster than peak) is refused in one line naming the parameter, the value
and the range. A parameter is matched by name first, then by its name's ending (`*_efficiency`,
`*_frac`, `*_passes`, `tile_*`), then by its kind, so a new parameter gets a sensible range
until it is listed here.

Does not: read files or parse units (calibration.py does both and calls `check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel.core import limits, units


@dataclass(frozen=True)
class Range:
    """lo <= value <= hi (lo < value when lo_open, value < hi when hi_open); whole: integers only."""

    lo: float
    hi: float
    why: str
    lo_open: bool = False
    hi_open: bool = False
    whole: bool = False

    def contains(self, v: float) -> bool:
        if not math.isfinite(v) or (self.whole and not float(v).is_integer()):
            return False
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def text(self, kind: str) -> str:
        """'(0, 1]', 'a whole number in [1, 65,536]', '[0, 1 s]' (dimensional kinds with their unit)."""
        def fmt(x: float) -> str:
            if units.KINDS.get(kind) and units.KINDS[kind].dimensionality and x:
                return units.format_quantity(x, kind)
            return f"{x:,.0f}" if float(x).is_integer() and 1000 <= abs(x) < 1e10 else f"{x:g}"
        span = f"{'(' if self.lo_open else '['}{fmt(self.lo)}, {fmt(self.hi)}{')' if self.hi_open else ']'}"
        return f"a whole number in {span}" if self.whole else span


EFFICIENCY = Range(0.0, 1.0, "a sustained fraction of a peak rate; 0 would divide by zero, above 1 is faster than "
                   "peak", lo_open=True)
FRACTION = Range(0.0, 1.0, "a fraction: 0 is none, 1 is all")
TILE = Range(1, 2**16, "a tile or block size in elements", whole=True)
PASSES = Range(0.0, 64.0, "passes over each element per operation; 0 when the hardware does it for free")
SWITCH = Range(0, 1, "an on/off switch: 0 or 1", whole=True)
LATENCY = Range(0.0, 1.0, "a fixed time per operator, call or hop; measured ones are 1-100 us, a second is a typo")
CAPACITY = Range(0.0, float(2**50), "memory per chip, far above any chip's")
POWER = Range(0.0, units.MW, "a chip's or a node's power; the densest racks draw ~130 kW")
PRICE = Range(0.0, 1e4, "a price per chip-hour; real ones are ~1-100 USD/h")
ANY_RATIO = Range(0.0, limits.MAX_QUANTITY_SI, "a non-negative ratio")
ANY_COUNT = Range(0.0, limits.MAX_QUANTITY_SI, "a non-negative count")

BY_NAME: dict[str, Range] = {
    "unstated_link_direction_frac": Range(0.0, 1.0, "the share of a bidirectional figure one direction gets; 0 "
                                          "would leave no bandwidth", lo_open=True),
    "in_switch_reduction_efficiency": Range(0.0, 1.0, "in-switch reduction rate over link rate; 0: the switch does "
                                            "not reduce"),
    "tdp_estimate_band": Range(0.0, 1.0, "the relative half-width of an estimated power (nominal x (1 -/+ band)); "
                               "1 would allow 0 W", hi_open=True),
    "hierarchical_pipelining": Range(0.0, 1.0, "how much of a hierarchical collective's phases overlap: 0 none, "
                                     "1 fully"),
    "attention_query_block": TILE,
    "attention_transpose_on_tensor": SWITCH,
    "moe_dispatch_fp8": SWITCH,
    "power_basis_all_in": SWITCH,
    "intranode_multistep_algorithms": SWITCH,
    "intranode_direct_max_ranks": Range(0, limits.MAX_CHIPS, "ranks of the direct all-to-all algorithm; 0: none",
                                        whole=True),
    "moe_load_imbalance": Range(1.0, float(limits.MAX_EXPERTS), "busiest expert's tokens over the mean: 1 is even, "
                                "at most E/k"),
    # Neuron software-stack profiles (catalog/neuron_stacks.py)
    "flash_attention": SWITCH,
    "decode_spans_compiled_length": SWITCH,
    "context_spans_compiled_length": SWITCH,
    "decode_runs_compiled_batch": SWITCH,
    "context_bucket_ratio": Range(1.0 / 64, 1.0, "context buckets as a share of the token buckets: at most all of them"),
    # serving-engine profiles and benchmark protocols (catalog/serving_engines.py)
    "token_budget": Range(1, limits.MAX_SEQ_TOKENS, "tokens one engine step may schedule", whole=True),
    "max_running": Range(1, limits.MAX_BATCH, "sequences an engine runs at once", whole=True),
    "prefill_first": SWITCH,
    "kv_memory_fraction": Range(0.0, 1.0, "the share of a GPU's memory an engine takes; 0 would hold nothing",
                                lo_open=True),
    "waves": Range(1, 1e6, "a benchmark's requests over its concurrency: at least the first burst", whole=True),
    "length_range_ratio": Range(0.0, 1.0, "the shortest drawn length over the nominal one"),
    "prefill_utilization": Range(0.0, 1.0, "a prefill pool's busy share at its request rate; 0 would need "
                                 "infinitely many workers", lo_open=True),
    # a training run's interrupts, checkpoints and evaluations (training/time_to_train.py)
    "chip_mean_time_to_interrupt": Range(0.0, limits.MAX_QUANTITY_SI, "one chip's mean time between job "
                                         "interrupts; 0 would stop every job at once", lo_open=True),
    "restart_time": Range(0.0, 7 * units.SECONDS_PER_DAY, "from an interrupt to training again; a week is a typo"),
    "checkpoint_write_bandwidth_per_node": Range(0.0, limits.MAX_QUANTITY_SI, "one node's storage write rate; 0 "
                                                 "would never save", lo_open=True),
    "checkpoint_storage_bandwidth": Range(0.0, limits.MAX_QUANTITY_SI, "a file system's aggregate write rate; 0 "
                                          "would never save", lo_open=True),
    "checkpoint_async": SWITCH,
    "pp_scatter_gather": SWITCH,
    "materialised_attention_bandwidth_ratio": Range(0.0, 1.0, "materialised score kernels' bandwidth over streaming "
                                                    "kernels'; 0 would divide by zero", lo_open=True),
    "eval_interval_steps": Range(1, limits.MAX_QUANTITY_SI, "training steps between evaluations", whole=True),
    "eval_iterations": Range(0, limits.MAX_QUANTITY_SI, "forward-only iterations per evaluation; 0: no evaluation",
                             whole=True),
    "pue": Range(1.0, 10.0, "facility power over IT power: 1 by definition at least, ~1.1-2.5 in practice"),
}
BY_SUFFIX = (("_efficiency", EFFICIENCY), ("_frac", FRACTION), ("_passes", PASSES))
BY_PREFIX = (("tile_", TILE), ("power_weight_", FRACTION), ("link_efficiency_", EFFICIENCY))
BY_KIND = {"time": LATENCY, "capacity": CAPACITY, "power": POWER, "price_rate": PRICE, "ratio": ANY_RATIO,
           "count": ANY_COUNT, "flag": SWITCH}


def range_for(name: str, kind: str) -> Range:
    """The allowed range of calibration parameter `name` of `kind` (module docstring: name, ending, kind)."""
    if name in BY_NAME:
        return BY_NAME[name]
    for suffix, r in BY_SUFFIX:
        if name.endswith(suffix):
            return r
    for prefix, r in BY_PREFIX:
        if name.startswith(prefix):
            return r
    return BY_KIND.get(kind, ANY_COUNT)


def check(name: str, kind: str, value: float, written) -> None:
    """ValueError 'must be in <range> (<why>), got <written>' when `value` (SI) is out of its range."""
    r = range_for(name, kind)
    if not r.contains(value):
        raise ValueError(f"must be {'' if r.whole else 'in '}{r.text(kind)} ({r.why}), got {written!r}")
