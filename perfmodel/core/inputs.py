"""What one system's answer depends on beyond the question asked, as one record resolved at the edge.

    SystemInputs   system    the System, carrying its chip's Calibration (user overrides in place)
                   engine    the serving engine's name ("" = the accelerator alone, the roofline)
                   software  its record (core/profiles: a GPU engine Profile or a Neuron serving Stack; None with
                             no engine): what ServingOptions.software takes
                   envelope  the engine's measured envelope on this chip (a Profile; None: none measured, or no
                             engine)

Built by catalog/system_inputs.py at the edge (CLI, app, report pages) and passed down, so the planner and the
simulation that verifies it look nothing up by name.

Does not: read files or compute anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel.core.calibration import Calibration, of
from perfmodel.core.hardware import System
from perfmodel.core.profiles import Profile


@dataclass(frozen=True)
class SystemInputs:
    system: System
    engine: str = ""
    software: Profile | None = None
    envelope: Profile | None = None

    @property
    def cal(self) -> Calibration:
        return of(self.system)

    @property
    def name(self) -> str:
        return self.system.name
