"""Serving and what it costs: continuous batching in steady state, power, cost, the frontier
search over plans, the capacity planner (serving and training runs) and sensitivity.

Front door: serve, serve_one, Grid, Mix, ServingOptions (from steady_state.py).
Change here when a serving mode, a power or price rule, a planner step or a sensitivity
parameter changes.
Must not import: simulation, sweep, claims, validation, report, cli.
"""

from perfmodel.serving.kv_capacity import kv_bytes_per_sequence, kv_fit
from perfmodel.serving.steady_state import ACTIVITY_ENGINES, Grid, Mix, Mode, ServingOptions, serve, serve_one, sweep

__all__ = ["ACTIVITY_ENGINES", "Grid", "Mix", "Mode", "ServingOptions", "kv_bytes_per_sequence", "kv_fit", "serve",
           "serve_one", "sweep"]
