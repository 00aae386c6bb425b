"""The graph evaluations a serving step is made of: one vectorised sweep of the operator graph, and the
pipeline send/recv between stages.

Shared by the steady state (steady_state.py), speculative decoding (speculative.py) and the simulation's step
table (simulation/step_table.py): one step model.
Does not: combine steps into serving metrics (steady_state.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.comm import collectives
from perfmodel.comm.algorithms import Collective
from perfmodel.core.calibration import Calibration
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import run_rows, summarize_rows


def sweep(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration) -> pd.DataFrame:
    """evaluate_sweep's summary columns (pipelined overlap); one vectorised evaluation of all
    configurations in `kn`."""
    summ = summarize_rows(system, arch, kn, run_rows(system, arch, kn, cal))
    shape = np.broadcast_shapes(*[np.shape(v) for v in summ.values()])
    return pd.DataFrame({key: np.broadcast_to(np.asarray(v, dtype=float), shape).ravel() for key, v in summ.items()})


def p2p_s(system: System, cal: Calibration, grid, tokens_per_device, hidden: int) -> np.ndarray:
    """Pipeline send/recv of one micro-batch's hidden states (BF16) between stages, per stage (a grid's
    plans: steady_state.Grid; 0 without pipeline stages)."""
    nbytes = np.asarray(tokens_per_device, dtype=float) * hidden * bytes_per_element(DType.BF16)
    if not np.any(grid.pp > 1):  # no stage boundary anywhere: nothing to send (a one-rank "group" costs 0)
        return np.zeros(np.broadcast_shapes(nbytes.shape, np.shape(grid.pp)))
    t = collectives.collective_time(system, cal, Collective.SEND_RECV, nbytes, np.where(grid.pp > 1, 2.0, 1.0),
                                    grid.tp * grid.da)
    return np.asarray(t, dtype=float)
