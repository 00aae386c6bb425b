"""Software profiles as records: a serving engine's profile, a benchmark protocol, a measured envelope and a Neuron
software stack, each a named set of Settings (SI value and provenance).

    Setting   one parameter: value (SI), as written, kind, status, reason, source, fit
    Profile   a named set of Settings; profile[name] is the value; with_overrides copies with user values
    Stack     a Neuron software stack's Profile, with the words that name it and its role (serving | training);
              stack.calibration(cal) puts its runtime rules in place of the family file's

They are read from hardware_specs/serving/engines.toml and hardware_specs/stacks/neuron.toml at the edge
(catalog/serving_engines.py, catalog/neuron_stacks.py) and travel to the step model inside ServingOptions.software
or a training call's `stack`, so no computation looks one up by name.

Does not: read files or compute anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from perfmodel.core.calibration import Calibration, parameter_value
from perfmodel.core.errors import did_you_mean

# the stack parameters that replace the calibration parameters of the same names while the stack is in use
STACK_CALIBRATION_PARAMS = ("intranode_direct_max_ranks", "intranode_multistep_algorithms", "op_overhead")


@dataclass(frozen=True)
class Setting:
    """One parameter: SI value and its provenance."""

    name: str
    value: float
    raw: str
    kind: str
    status: str
    reason: str
    source: str
    fit: str = ""


@dataclass(frozen=True)
class Profile:
    """A named set of Settings (an engine profile, a benchmark protocol or a measured envelope)."""

    name: str
    description: str
    params: Mapping[str, Setting]

    def __getitem__(self, name: str) -> float:
        return self.params[name].value

    def with_overrides(self, overrides: Mapping[str, float | str]) -> "Profile":
        """Copy with user-set values (numbers, or strings with units for step_cost), range-checked."""
        new = dict(self.params)
        for key, v in overrides.items():
            if key not in new:
                raise KeyError(f"{self.name}: unknown parameter {key!r}{did_you_mean(key, new)} "
                               f"(known: {', '.join(new)})")
            val = parameter_value(v, new[key].kind, f"{self.name} override {key}", key)
            new[key] = dataclasses.replace(new[key], value=val, raw=str(v), status="assumed",
                                           reason=f"user override (was {new[key].raw})", source="user override")
        return dataclasses.replace(self, params=MappingProxyType(new))

    def frame_rows(self) -> list[dict]:
        return [{"profile": self.name, "parameter": s.name, "value": s.value, "as_written": s.raw, "status": s.status,
                 "reason": s.reason, "source": s.source, "fit": s.fit} for s in self.params.values()]


@dataclass(frozen=True)
class Stack(Profile):
    """One Neuron software stack: its rules as Settings (a Profile: values, overrides), and the words that name
    it."""

    names: tuple[str, ...] = ()
    role: str = "serving"

    def calibration(self, cal: Calibration) -> Calibration:
        """`cal` with this stack's runtime rules in place of the family file's (provenance: the stack); a user's
        override (--set) stays: what the user states wins over the stack, as over the file."""
        new = dict(cal.params)
        for key in STACK_CALIBRATION_PARAMS:
            if new[key].origin == "user override":
                continue
            s = self.params[key]
            new[key] = dataclasses.replace(new[key], value=s.value, raw=s.raw, status=s.status, reason=s.reason,
                                           source=s.source, origin=f"stack {self.name}")
        return dataclasses.replace(cal, params=MappingProxyType(new))
