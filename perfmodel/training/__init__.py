"""Training: one step from the operator graph, the pipeline bubble, communication exposed vs
hidden, and how a step scales with nodes.

Front door: train, step_arrays (step.py), scaling (weak_scaling.py); a whole run's wall clock: the module
training.time_to_train (run_time, for_step).
Change here when a pipeline schedule, an overlap rule or a training output changes.
Must not import: serving, sweep, claims, validation, report, cli.
"""

from perfmodel.training.weak_scaling import scaling
from perfmodel.training.step import (DTYPE_FIELDS, SCHEDULES, TrainResult, bubble_fraction, comm_frame, comm_ops_frame,
                                     step_arrays, timeline_frame, train, with_stack)

__all__ = ["DTYPE_FIELDS", "SCHEDULES", "TrainResult", "bubble_fraction", "comm_frame", "comm_ops_frame", "scaling",
           "step_arrays", "timeline_frame", "train", "with_stack"]
