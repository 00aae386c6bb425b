"""Time to train: a step's throughput carried to a whole run, with what keeps the run from making progress.

A run of N tokens at a modelled rate computes for T_run = N / (tokens/s). The wall clock adds (seconds):

    e       = n_ev t_ev / (I_ev t_step)      evaluation: n_ev forward-only iterations every I_ev steps
                                             (`eval_iterations`, `eval_interval_steps`: Megatron-LM's defaults
                                             100 and 1000); t_ev = the step's forward passes with their bubble
    T_s     = T_run (1 + e)                  the work to be done between interrupts
    BW_st   = min(n_nodes BW_node, BW_fs)    storage rate: every node writes its share
                                             (`checkpoint_write_bandwidth_per_node`) up to the file system's
                                             aggregate (`checkpoint_storage_bandwidth`)
    delta   = S / BW_st                      pause per checkpoint, synchronous save (the stacks' default): the
                                             whole state S written at once
            = S / (n_chips BW_host)          asynchronous save (`checkpoint_async`): each chip's share copied
                                             to host memory over its host link; the write runs in the
                                             background and must end before the next: tau >= S / BW_st
    S       = P (b_w + b_master + b_opt)     weights, master weights and optimizer states (no gradients)
    M       = MTTI_chip / n_chips            job mean time to interrupt (`chip_mean_time_to_interrupt`): one
                                             chip's interrupt (GPU, HBM, link, host, software) stops the job
    R       = R_0 + S / BW_st                resume: reschedule and initialise (`restart_time`), read the state
    tau     = sqrt(2 delta M) (1 + sqrt(delta / 2M) / 3 + delta / 18M) - delta      (delta < 2M; else M)
                                             Daly's optimum checkpoint interval (Daly 2006, higher-order
                                             Young 1974), unless an interval is given; at least one step
                                             (a checkpoint is taken between steps)
    T_wall  = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau
                                             expected wall time under exponentially distributed interrupts
                                             (Daly 2006): checkpoint pauses, the work lost since the last
                                             checkpoint and the restart at every interrupt
    pauses  = T_s delta / tau                checkpoint pauses over the run (T_s / tau checkpoints)
    goodput = T_run / T_wall

The formulas are sympy expressions (shown by `formula_table`), lambdified once and evaluated over arrays.
Does not: model interrupts that stop only part of the job (elastic or in-memory recovery), spare-node
pools, interrupts while restarting, or data-loading stalls (token ids are 4 B per token: 16 MB for a 4M-token
step, read ahead by the loader's workers).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import sympy as sp

from perfmodel.core import symbols as sy
from perfmodel.core.calibration import Calibration
from perfmodel.core.hardware import System
from perfmodel.core.scenario import Optimizer
from perfmodel.core.workload import ModelArch, parameter_count

EVAL_SHARE = sy.n_ev * sy.t_ev / (sy.I_ev * sy.t_st)
SOLVE = sy.T_run * (1 + EVAL_SHARE)
DALY_INTERVAL = sp.Piecewise(
    (sp.sqrt(2 * sy.d_ck * sy.M_job) * (1 + sp.sqrt(sy.d_ck / (2 * sy.M_job)) / 3 + sy.d_ck / (18 * sy.M_job))
     - sy.d_ck, sy.d_ck < 2 * sy.M_job), (sy.M_job, True))
WALL = sy.M_job * sp.exp(sy.R_rs / sy.M_job) * (sp.exp((sy.tau_ck + sy.d_ck) / sy.M_job) - 1) * SOLVE / sy.tau_ck
PAUSES = SOLVE * sy.d_ck / sy.tau_ck  # one pause per tau of the work: T_s / tau checkpoints
FORMULAS = {"evaluation share e": EVAL_SHARE, "work between interrupts T_s": SOLVE,
            "checkpoint interval tau (Daly)": DALY_INTERVAL, "wall time T_wall": WALL,
            "checkpoint pauses T_s delta / tau": PAUSES}
_ARGS = (sy.T_run, sy.n_ev, sy.I_ev, sy.t_ev, sy.t_st, sy.d_ck, sy.tau_ck, sy.M_job, sy.R_rs)


@lru_cache(maxsize=None)
def _compiled(name: str):
    return sp.lambdify(_ARGS, FORMULAS[name], "numpy")


def formula_table() -> pd.DataFrame:
    """The run formulas as LaTeX (their symbols' meanings and units: core/symbols.py's table)."""
    rows = [{"quantity": k, "latex": sy.latex(v)} for k, v in FORMULAS.items()]
    return pd.DataFrame(rows)


def checkpoint_bytes(arch: ModelArch, optimizer: Optimizer) -> float:
    """S = P (b_w + b_master + b_opt): what a checkpoint holds to resume training (gradients are rebuilt)."""
    b = Optimizer(optimizer).bytes_per_param
    return parameter_count(arch).total * (b["weights"] + b["master"] + b["optimizer"])


def run_time(system: System, cal: Calibration, tokens, tokens_per_s, step_s, eval_iteration_s, chips,
             state_bytes, checkpoint_interval_s=None) -> dict[str, np.ndarray]:
    """Every term of the module doc over arrays (a plan sweep at once). checkpoint_interval_s: compute seconds
    between checkpoints (None: Daly's optimum). Raises ValueError (one line) for an asynchronous save on a system
    whose spec has no host link."""
    def f(x):
        return np.asarray(x, dtype=float)

    chips, state = f(chips), f(state_bytes)
    nodes = np.ceil(chips / system.node.chips)
    rate = np.minimum(nodes * cal["checkpoint_write_bandwidth_per_node"], cal["checkpoint_storage_bandwidth"])
    write = state / rate
    if cal["checkpoint_async"]:
        link = system.node.host_link_bytes_per_s
        if link is None:
            raise ValueError(f"{system.display_name}: no node.host_link_bandwidth in its spec; an asynchronous "
                             f"checkpoint (checkpoint_async = 1) cannot be priced, set checkpoint_async=0")
        pause = state / chips / link
    else:
        pause = write
    mtti = cal["chip_mean_time_to_interrupt"] / chips
    resume = cal["restart_time"] + write
    args = dict(T_run=f(tokens) / f(tokens_per_s), n_ev=cal["eval_iterations"], I_ev=cal["eval_interval_steps"],
                t_ev=f(eval_iteration_s), t_st=f(step_s), d_ck=pause, M_job=mtti, R_rs=resume)
    if checkpoint_interval_s is None:
        tau = _compiled("checkpoint interval tau (Daly)")(**{**args, "tau_ck": 1.0})
    else:
        tau = f(checkpoint_interval_s) * np.ones_like(pause)
    tau = np.maximum(tau, args["t_st"])  # a checkpoint is taken between steps
    if cal["checkpoint_async"]:  # the background write must end before the next checkpoint starts
        tau = np.maximum(tau, write)
    args["tau_ck"] = tau
    share = _compiled("evaluation share e")(**args)
    solve = _compiled("work between interrupts T_s")(**args)
    wall = _compiled("wall time T_wall")(**args)
    pauses = _compiled("checkpoint pauses T_s delta / tau")(**args)
    compute = args["T_run"]
    return {"compute_s": compute * np.ones_like(wall), "eval_s": compute * share, "checkpoint_pause_s": pauses,
            "lost_and_restart_s": wall - solve - pauses, "wall_s": wall, "goodput_frac": compute / wall,
            "checkpoint_interval_s": tau, "checkpoint_pause_each_s": pause, "checkpoint_bytes": state,
            "job_mtti_s": mtti, "resume_s": resume, "interrupts": wall / mtti}


def eval_iteration_s(forward_s, bubble_frac):
    """One forward-only evaluation iteration of a global batch: the step's forward passes with the pipeline bubble."""
    return np.asarray(forward_s, dtype=float) * (1 + np.asarray(bubble_frac, dtype=float))


def for_step(system: System, arch: ModelArch, optimizer: Optimizer, cal: Calibration, tokens, step: dict,
             checkpoint_interval_s=None) -> dict[str, np.ndarray]:
    """run_time for the configurations of a training step (step_arrays' dict or a TrainResult summary's columns:
    tokens_per_s, step_time_s, forward_s, bubble_frac, chips)."""
    return run_time(system, cal, tokens, step["tokens_per_s"], step["step_time_s"],
                    eval_iteration_s(step["forward_s"], step["bubble_frac"]), step["chips"],
                    checkpoint_bytes(arch, optimizer), checkpoint_interval_s)
