"""Sweeps: any scenario field over lists or ranges, a Cartesian product evaluated in vectorised
chunks, run in process or on a Dask cluster into a DataFrame, Parquet or CSV.

Front door: SweepSpec, linear, geometric, iter_chunks (engine.py, fields.py), run_sweep and
local_cluster (run.py).
Change here when a field becomes sweepable or a sink or a runner is added.
Must not import: claims, validation, report, cli.
"""

from perfmodel.sweep.engine import DEFAULT_CHUNK, SweepSpec, iter_chunks
from perfmodel.sweep.fields import geometric, linear, parse_values
from perfmodel.sweep.run import local_cluster, run_sweep

__all__ = ["DEFAULT_CHUNK", "SweepSpec", "geometric", "iter_chunks", "linear", "local_cluster", "parse_values",
           "run_sweep"]
