"""A named scenario kept as a file: the system, the workload, the options and the what-ifs of one evaluation, saved
from the CLI (`--save-scenario`) or the explorer and loaded by either (`--scenario`, `perfmodel compare`).

    schema_version = 1
    kind = "scenario"
    name = "trn2 decode, HBM +50%"
    system = "trn2-ultraserver"          a catalogue key or a system file (relative paths: from this file's folder)
    workload = "llama-3-70b"             a catalogue key, a workload file, a config.json or a cached HF id
    whatif = ["spec.hbm_bandwidth=+50%"] what-if assignments as --set takes them (spec., cal., workload.)

    [options]                            ScenarioOptions' fields; a field not written takes its default
    phase = "decode"
    batch = 64
    context = 4096
    tp = 4

    load(path) -> Saved        validated: a bad field, an unknown system or workload, a what-if that does not
                               parse or apply is one CatalogError line naming the file and the field
    to_toml(saved) -> str      the file's text (load(to_toml(s)) == s)

Does not: evaluate a scenario (report.scenario_compare does).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tomli_w
from pydantic import BaseModel, Field, create_model

from perfmodel.catalog import whatif as wi
from perfmodel.catalog.files import load_system, read_toml
from perfmodel.catalog.scenario_options import ScenarioOptions, scenario_of
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.catalog.workload_refs import load as load_workload

# the [options] table: ScenarioOptions' own fields, types and defaults (a field it lacks is refused); what a value
# may be (a phase, a data type, a count's range) is the Scenario's own check, run by load()
_Options = create_model("_Options", __config__=STRICT,
                        **{f.name: (typing.get_type_hints(ScenarioOptions)[f.name], f.default)
                           for f in dataclasses.fields(ScenarioOptions)})


class ScenarioFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    kind: Literal["scenario"]
    name: str = Field(min_length=1)
    description: str = ""
    system: str = Field(min_length=1)
    workload: str = Field(min_length=1)
    whatif: list[str] = []
    options: _Options = _Options()


@dataclass(frozen=True)
class Saved:
    """One scenario: what the explorer's sidebar and the scenario commands hold."""

    name: str
    system: str
    workload: str
    options: ScenarioOptions
    whatif: wi.WhatIf = wi.WhatIf()
    description: str = ""


def _ref(text: str, folder: Path, path: Path, field: str) -> str:
    """A file reference relative to the scenario's folder; a catalogue key or a Hugging Face id as written. A file
    that is not there is named as the scenario writes it (not where it was looked for)."""
    if not text.endswith((".toml", ".json")):
        return text
    ref = Path(text) if Path(text).is_absolute() else (folder / text).resolve()
    if not ref.is_file():
        raise CatalogError(f"{path}: field {field}: no file {text!r} (a path is read from the scenario's folder)")
    return str(ref)


def _one_line(exc: Exception) -> str:
    return str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).splitlines()[0]


def load(path: str | Path) -> Saved:
    """The scenario in `path`, validated (module doc)."""
    from perfmodel.core.calibration import of as calibration_of

    path = Path(path)
    doc = validate_file(ScenarioFile, read_toml(path), str(path), None)
    system, workload = _ref(doc.system, path.parent, path, "system"), _ref(doc.workload, path.parent, path, "workload")
    loaded = {}
    for field, ref, loader in (("system", system, load_system), ("workload", workload, load_workload)):
        try:
            loaded[field] = loader(ref)
        except CatalogError as exc:
            raise CatalogError(f"{path}: field {field}: {exc}") from None
    options = ScenarioOptions(**doc.options.model_dump())
    try:
        scenario_of(options, loaded["workload"], loaded["system"]).validate()
    except (ValueError, KeyError) as exc:
        raise CatalogError(f"{path}: field options: {_one_line(exc)}") from None
    try:
        whatif = wi.parse_assignments(doc.whatif, calibration_of(loaded["system"]))
        wi.apply(loaded["system"], loaded["workload"], calibration_of(loaded["system"]), whatif)
    except (ValueError, KeyError) as exc:
        raise CatalogError(f"{path}: field whatif: {_one_line(exc)}") from None
    return Saved(name=doc.name, system=system, workload=workload, options=options, whatif=whatif,
                 description=doc.description)


HEADER = "# perfmodel scenario (perfmodel compare A.toml B.toml; perfmodel roofline --scenario FILE)\n"
# written even at their defaults: what a reader looks for first (the phase and batch), and the two whose default
# depends on something else (context: the phase's; dtype: a reader's guess)
ALWAYS_WRITTEN = ("phase", "batch", "context", "dtype")


def to_toml(saved: Saved) -> str:
    """The scenario's file text (module doc): every option that differs from its default, ALWAYS_WRITTEN ones
    whenever set."""
    defaults = ScenarioOptions()
    doc = {"schema_version": 1, "kind": "scenario", "name": saved.name}
    if saved.description:
        doc["description"] = saved.description
    doc.update(system=saved.system, workload=saved.workload, whatif=saved.whatif.assignments())
    doc["options"] = {f.name: v for f in dataclasses.fields(ScenarioOptions)
                      if (v := getattr(saved.options, f.name)) is not None
                      and (f.name in ALWAYS_WRITTEN or v != getattr(defaults, f.name))}
    return HEADER + tomli_w.dumps(doc)
