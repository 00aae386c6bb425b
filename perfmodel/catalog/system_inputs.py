"""A system's inputs resolved once at the edge (core/inputs.SystemInputs): the System with its calibration and the
user's calibration overrides, and the serving engine a command runs on it (named, or the hardware family's default),
its record and its measured envelope.

    resolve(name, engine=None, cal_overrides=None, replaced=None) -> SystemInputs
        engine None: the family's default (serving_engines.default_for); "none": the accelerator alone
        cal_overrides: calibration values by parameter name; those the chip's calibration does not define are
        left out (a what-if names parameters of every family)
        replaced: the run's Replacements (catalog/replacements.py: calibrated sets, engine profiles, stacks)

Does not: compute anything.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from perfmodel.catalog import neuron_stacks, serving_engines
from perfmodel.catalog.files import load_system
from perfmodel.catalog.replacements import Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core.inputs import SystemInputs


def resolve(name: str, engine: str | None = None, cal_overrides: Mapping | None = None,
            replaced: Replacements | None = None) -> SystemInputs:
    system = load_system(name, replaced=replaced)
    if cal_overrides:
        cal = calibration_of(system)
        cal = cal.with_overrides({k: v for k, v in cal_overrides.items() if k in cal.params})
        system = dataclasses.replace(system, calibration=cal)
    eng, env = serving_engines.resolve(engine, system)
    return SystemInputs(system, eng, neuron_stacks.software(eng, system, replaced), env)
