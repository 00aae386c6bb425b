"""What-if overrides: scale or set spec values, calibration parameters and workload fields.

One override is a name and a value text:

    hbm_bandwidth=+50%        scale by 1.5          tensor_rate=x2     scale by 2
    hbm_bandwidth=6 TB/s      set (units as in spec files)            hbm_efficiency=0.7   set
    num_hidden_layers=40      set a workload (ModelArch) field        price=*0.8           scale

Three families, told apart by name (or an explicit prefix `spec.`, `cal.`, `workload.`):
    spec      SPEC_KNOBS (knobs.py: a chip, node or link-tier value of the System)
    cal       any calibration parameter (hardware_specs/calibration/*.toml)
    workload  any numeric or boolean ModelArch field (Hugging Face names)

Everything is copied, never mutated (dataclasses.replace); a spec value that a what-if
changed is recorded in the copy's provenance with status "assumed" and the old value, so
reports and the provenance sheet show it. `WhatIf` is a frozen, hashable record that
round-trips through URL query parameters (app) and `--set NAME=VALUE` (CLI). ScenarioOptions
(scenario_options.py) and the spec knobs are re-exported here: this is the what-if front door.

Does not: evaluate anything, or read files beyond the catalogue loaders it is given.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from perfmodel.catalog.calibration import Calibration
from perfmodel.catalog.files import did_you_mean
from perfmodel.catalog.knobs import SPEC_KNOBS, Change, SpecKnob, WhatIfError, apply_spec, knobs_frame, number_or_text, parse_change, spec_value
from perfmodel.catalog.scenario_options import DEFAULT_CONTEXT, ScenarioOptions, plan_label, scenario_of
from perfmodel.core import limits, units
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.core.workload_checks import ArchError

FAMILIES = ("spec", "cal", "workload")


# ---------------------------------------------------------------- calibration and workload


def apply_calibration(cal: Calibration, overrides: Iterable[tuple[str, str]]) -> Calibration:
    """Calibration copy with parameters scaled or set (strings with units as in the files), each held
    to its parameter's allowed range as the family files are (param_ranges.py)."""
    values: dict[str, float | str] = {}
    for name, text in overrides:
        if name not in cal.params and name in SPEC_KNOBS:
            raise WhatIfError(f"what-if {name!r} is a spec value, which this command does not take: only calibration "
                              f"parameters ({', '.join(sorted(cal.params))})")
        if name not in cal.params:
            raise WhatIfError(f"unknown what-if name {name!r}{_suggest(name, cal)}: not a spec value ("
                              f"{', '.join(n for n in SPEC_KNOBS if '.' not in n)}), a calibration parameter "
                              f"({', '.join(sorted(cal.params))}) or a numeric workload field")
        ch = parse_change(text, f"calibration parameter {name}")
        # a scale acts on the SI value and is handed on with its SI unit ('4e-06 s'), read like a set
        values[name] = _si_text(cal[name] * ch.factor, cal.params[name].kind) if ch.op == "scale" else ch.text
    try:
        return cal.with_overrides(values, check_range=True) if values else cal
    except (KeyError, ValueError) as exc:  # a KeyError's str() quotes its message: take the message itself
        raise WhatIfError(str(exc.args[0]) if exc.args else str(exc)) from None


def _si_text(value: float, kind: str) -> str:
    unit = units.KINDS[kind].internal_unit if kind in units.KINDS else ""
    return f"{value!r} {unit}".strip()


_WORKLOAD_TYPES = {f.name: f.type for f in dataclasses.fields(ModelArch)}
WORKLOAD_FIELDS = tuple(n for n, t in _WORKLOAD_TYPES.items() if t in ("int", "bool", "float"))


def apply_workload(arch: ModelArch, overrides: Iterable[tuple[str, str]]) -> ModelArch:
    """ModelArch copy with numeric / boolean fields changed (integers stay whole numbers), checked by the
    rules workload files meet (ModelArch.validate: counts in range, fields consistent). A model that lists
    its layer types (gpt-oss) keeps its repeating pattern over a changed num_hidden_layers."""
    changes: dict[str, object] = {}
    for name, text in overrides:
        if name not in WORKLOAD_FIELDS:
            raise WhatIfError(f"unknown or non-numeric workload field {name!r}{did_you_mean(name, WORKLOAD_FIELDS)} "
                              f"(numeric fields: {', '.join(WORKLOAD_FIELDS)})")
        kind = _WORKLOAD_TYPES[name]
        old = changes.get(name, getattr(arch, name))
        if kind == "bool":
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise WhatIfError(f"workload field {name}: write true or false, got {text!r}")
            changes[name] = low in ("true", "1", "yes")
            continue
        ch = parse_change(text, f"workload field {name}")
        new = old * ch.factor if ch.op == "scale" else number_or_text(ch.text)
        if isinstance(new, str) or not math.isfinite(new):
            raise WhatIfError(f"workload field {name}: expected a finite number, got {text!r}")
        if kind == "int":
            if ch.op == "set" and new != int(new):
                raise WhatIfError(f"workload field {name}: must be a whole number, got {text!r}")
            new = int(round(new))
        if new < 0:
            raise WhatIfError(f"workload field {name}: must not be negative, got {text!r}")
        changes[name] = new
    if not changes:
        return arch
    L = changes.get("num_hidden_layers", arch.num_hidden_layers)
    if arch.layer_types and "layer_types" not in changes and len(arch.layer_types) != L \
            and 1 <= L <= limits.MAX_LAYERS:  # out of range: validate() says so below
        changes["layer_types"] = tuple(arch.layer_types[i % len(arch.layer_types)] for i in range(L))
    new_arch = dataclasses.replace(arch, **changes)
    try:
        new_arch.validate()
    except ArchError as exc:  # a rule on another field than the one set names the what-if that broke it
        done = ", ".join(f"{n}={v}" for n, v in changes.items() if n != "layer_types")
        after = "" if exc.field in changes else f" (after the what-if {done})"
        raise WhatIfError(f"workload field {exc.field}: {exc.problem}{after}") from None
    return new_arch


# ---------------------------------------------------------------- the record


@dataclass(frozen=True)
class WhatIf:
    """A set of overrides, hashable (st.cache_data key) and printable.

    Each family is a tuple of (name, value text) pairs in the order given."""

    spec: tuple[tuple[str, str], ...] = ()
    cal: tuple[tuple[str, str], ...] = ()
    workload: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.spec or self.cal or self.workload)

    def items(self) -> list[tuple[str, str, str]]:
        """[(family, name, value text), ...]"""
        return [(fam, n, v) for fam in FAMILIES for n, v in getattr(self, fam)]

    def assignments(self) -> list[str]:
        return [f"{fam}.{n}={v}" for fam, n, v in self.items()]

    def label(self) -> str:
        """Short text for file names and captions, e.g. 'hbm_bandwidth+50%'."""
        return "_".join(f"{n}{v}" for _, n, v in self.items())

    def with_spec(self, name: str, text: str | None) -> "WhatIf":
        """Copy with one spec override set (text None or '' removes it)."""
        rest = tuple((n, v) for n, v in self.spec if n != name)
        return dataclasses.replace(self, spec=rest + (((name, text),) if text else ()))

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.items(), columns=["family", "name", "value"])


def split_assignment(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise WhatIfError(f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name, value = name.strip(), value.strip()
    if not name or not value:
        raise WhatIfError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def family_of(name: str, cal: Calibration | None = None) -> tuple[str, str]:
    """(family, bare name) for an override name; an explicit 'spec.' / 'cal.' / 'workload.' prefix wins.
    Without `cal`, a name that is neither a spec knob nor a workload field is taken as a calibration
    parameter and checked when applied."""
    head, _, tail = name.partition(".")
    if head in FAMILIES and tail:
        return head, tail
    if name in SPEC_KNOBS:
        return "spec", name
    if cal is not None and name in cal.params:
        return "cal", name
    if name in WORKLOAD_FIELDS:
        return "workload", name
    if cal is None:  # checked against the system's calibration when applied (apply_calibration)
        return "cal", name
    known = "spec values (" + ", ".join(n for n in SPEC_KNOBS if "." not in n) + "), calibration parameters"
    if cal is not None:
        known += " (" + ", ".join(sorted(cal.params)) + ")"
    raise WhatIfError(f"unknown what-if name {name!r}{_suggest(name, cal)}; known: {known}, or numeric workload "
                      "fields")


def _suggest(name: str, cal: Calibration | None) -> str:
    """Did-you-mean over every what-if name: spec knobs, calibration parameters, workload fields."""
    return did_you_mean(name, [*SPEC_KNOBS, *(cal.params if cal is not None else ()), *WORKLOAD_FIELDS])


def parse_assignments(texts: Iterable[str], cal: Calibration | None = None) -> WhatIf:
    """WhatIf from ['hbm_bandwidth=+50%', 'hbm_efficiency=0.8', ...] (CLI --set, app text box)."""
    fams: dict[str, list[tuple[str, str]]] = {f: [] for f in FAMILIES}
    for t in texts:
        if not str(t).strip():
            continue
        name, value = split_assignment(str(t))
        fam, bare = family_of(name, cal)
        parse_change(value, name)  # fail early on malformed scales
        fams[fam].append((bare, value))
    return WhatIf(**{f: tuple(v) for f, v in fams.items()})


def apply(system: System, arch: ModelArch, cal: Calibration, whatif: WhatIf) -> tuple[System, ModelArch, Calibration]:
    """Apply every override; calibration overrides act on the calibration given (built for the
    original chip: a what-if changes values, never which chip's assumptions apply)."""
    return apply_spec(system, whatif.spec), apply_workload(arch, whatif.workload), apply_calibration(cal, whatif.cal)


# ---------------------------------------------------------------- URL query parameters

_PREFIX = {"spec": "s.", "cal": "c.", "workload": "w."}


def to_query(whatif: WhatIf) -> dict[str, str]:
    """{'s.hbm_bandwidth': '+50%', 'c.hbm_efficiency': '0.8', 'w.num_hidden_layers': '40'}"""
    return {f"{_PREFIX[fam]}{n}": v for fam, n, v in whatif.items()}


def from_query(params: Mapping[str, str]) -> WhatIf:
    """Inverse of to_query; other keys are ignored."""
    fams: dict[str, list[tuple[str, str]]] = {f: [] for f in FAMILIES}
    for key, value in params.items():
        for fam, p in _PREFIX.items():
            if key.startswith(p) and value not in (None, ""):
                fams[fam].append((key[len(p):], str(value)))
    return WhatIf(**{f: tuple(v) for f, v in fams.items()})


# the what-if front door: this module's names, and those of knobs.py and scenario_options.py it puts together
__all__ = ["WhatIf", "WhatIfError", "SPEC_KNOBS", "WORKLOAD_FIELDS", "ScenarioOptions", "DEFAULT_CONTEXT", "Change",
           "SpecKnob", "apply", "apply_spec", "apply_calibration", "apply_workload", "parse_assignments",
           "parse_change", "to_query", "from_query", "scenario_of", "plan_label", "knobs_frame", "spec_value"]
