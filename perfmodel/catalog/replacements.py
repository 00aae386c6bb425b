"""What replaces the catalogue files' values in one run: resolved at the edge, passed as an argument.

    Replacements(calibrated=(set, ...), engines={name: Profile}, stacks={name: Stack})
        calibrated   calibrated parameter sets (perfmodel calibrate's files; one per family), which replace
                     the family file's values in every System load_system resolves
        engines      serving-engine profiles replacing hardware_specs/serving/engines.toml's by name (a fit's
                     trial values, a what-if on an engine's cap)
        stacks       Neuron software stacks replacing hardware_specs/stacks/neuron.toml's by name
    NONE             nothing replaced: every value as the files give it (the default everywhere)
    of_files(paths)  the CLI's --calibration FILE ...: the sets read and checked (calibration.calibrated_sets)
    key()            a hashable token of what is replaced (for caches of results that depend on it)

The CLI builds one from its flags and hands it to each command's front functions (load_system, the
validation harness, the claims, the report); a fit builds one per trial. Nothing is "in force" between
calls: there is no global to switch, so a result's inputs are the arguments of its call.
Does not: read the files it replaces (calibration.py, serving_engines.py, neuron_stacks.py do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from perfmodel.catalog.calibration import CalibratedSet, calibrated_sets
from perfmodel.core.profiles import Profile, Stack


def _values(p: Profile) -> tuple:
    return (p.name, tuple(sorted((k, s.value) for k, s in p.params.items())))


@dataclass(frozen=True)
class Replacements:
    calibrated: tuple[CalibratedSet, ...] = ()
    engines: Mapping[str, Profile] = field(default_factory=lambda: MappingProxyType({}))
    stacks: Mapping[str, Stack] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        object.__setattr__(self, "calibrated", calibrated_sets(*self.calibrated))  # one per family, known families
        object.__setattr__(self, "engines", MappingProxyType(dict(self.engines)))
        object.__setattr__(self, "stacks", MappingProxyType(dict(self.stacks)))

    @classmethod
    def of_files(cls, paths: list[str | Path]) -> "Replacements":
        return cls(calibrated=calibrated_sets(*paths))

    def calibrated_for(self, family: str) -> CalibratedSet | None:
        """The calibrated set of `family` ("neuron", "nvidia", ...), None when none replaces its file."""
        return next((s for s in self.calibrated if s.family == family), None)

    def key(self) -> tuple:
        return (tuple(s.key() for s in self.calibrated), tuple(_values(p) for _, p in sorted(self.engines.items())),
                tuple(_values(p) for _, p in sorted(self.stacks.items())))

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other) -> bool:
        return isinstance(other, Replacements) and self.key() == other.key()

    def __bool__(self) -> bool:
        return bool(self.calibrated or self.engines or self.stacks)


NONE = Replacements()
