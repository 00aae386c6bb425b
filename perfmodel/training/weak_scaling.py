"""Weak scaling of a training step over nodes: the plan is per node, data parallelism grows with
the node count, and scaling efficiency = tokens/s(N) / (N x tokens/s(1 node)).

Does not: price a step itself (step.py does, vectorised over the node counts).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System
from perfmodel.core.profiles import Stack
from perfmodel.core.scenario import Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import plan as pl
from perfmodel.training import time_to_train
from perfmodel.training.step import step_arrays, with_stack


def scaling(system: System, arch: ModelArch, scenario: Scenario, nodes, cal: Calibration | None = None,
            stack: Stack | None = None, tokens: float | None = None) -> pd.DataFrame:
    """Weak scaling: the scenario's plan is per node; dp grows with the node count (vectorised), under the Neuron
    training stack `stack` when one is named (step.with_stack).

    Returns one row per node count with tokens/s, sequences/s, step time, exposed comm, the wait for the
    slowest rank (straggler_s) and scaling_efficiency = tokens/s(N) / (N tokens/s(1 node)); with `tokens`, a run
    of that many tokens at each node count (time_to_train.py, one call over the counts): compute_days, days on the
    wall clock and goodput_frac, which falls as interrupts grow with the chips.
    """
    scenario, cal = with_stack(system, scenario, cal or calibration_of(system), stack)
    p = scenario.parallel
    n = np.asarray(nodes, dtype=float)
    base = pl.knobs_for(scenario)
    chips_node = p.chips
    if chips_node != system.node.chips:
        raise ValueError(f"scaling(): the scenario's plan must fill one node ({system.node.chips} chips), "
                         f"it uses {chips_node}")
    allnodes = np.concatenate([[1.0], n])
    kn = dataclasses.replace(base, dp=p.dp * allnodes)
    s = step_arrays(system, arch, kn, cal, scenario.recompute, p.pp_schedule, p.pp_virtual, p.sequence_parallel)
    tps = s["tokens_per_s"]
    df = pd.DataFrame({"system": system.name, "workload": arch.name, "stack": stack.name if stack else "", "nodes": n,
                       "chips": s["chips"][1:],
                       "dp": p.dp * n, "global_batch": s["global_batch"][1:], "step_time_s": s["step_time_s"][1:],
                       "tokens_per_s": tps[1:], "sequences_per_s": s["sequences_per_s"][1:],
                       "dp_comm_s": s["dp_comm_s"][1:], "dp_comm_exposed_s": s["dp_comm_exposed_s"][1:],
                       "dp_algorithm": s["dp_algorithm"][1:], "straggler_s": s["straggler_s"][1:],
                       "mfu_frac": s["mfu_frac"][1:],
                       "scaling_efficiency_frac": tps[1:] / (n * tps[0])})
    if tokens is not None:
        run = time_to_train.for_step(system, arch, scenario.optimizer, cal, tokens,
                                     {k: s[k][1:] for k in ("tokens_per_s", "step_time_s", "forward_s", "bubble_frac",
                                                            "chips")})
        df = df.assign(compute_days=run["compute_s"] / units.SECONDS_PER_DAY,
                       days=run["wall_s"] / units.SECONDS_PER_DAY, goodput_frac=run["goodput_frac"])
    return df
