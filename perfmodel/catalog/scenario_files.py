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
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from perfmodel.catalog import whatif as wi
from perfmodel.catalog.files import load_system, read_toml
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.catalog.workload_refs import load as load_workload

PHASES = Literal["prefill", "decode", "train"]


class _Options(BaseModel):
    model_config = STRICT
    phase: PHASES = "decode"
    batch: int = Field(1, ge=1)
    seq_len: int = Field(2048, ge=1)
    context: int | None = Field(None, ge=0)
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    dp: int = Field(1, ge=1)
    ep: int = Field(1, ge=1)
    da: int = Field(1, ge=1)
    dtype: str = "bf16"
    microbatches: int = Field(1, ge=1)
    zero: Literal[0, 1, 2, 3] = 0
    recompute: Literal["none", "selective", "full", "alternate-layers", "selective-op"] = "none"
    optimizer: Literal["adam-mixed", "adam-bf16-sr", "adam-fp32", "sgd-mixed"] = "adam-mixed"
    sequence_parallel: bool = False


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
    options: wi.ScenarioOptions
    whatif: wi.WhatIf = wi.WhatIf()
    description: str = ""


def _ref(text: str, folder: Path) -> str:
    """A file reference relative to the scenario's folder; a catalogue key or a Hugging Face id as written."""
    if text.endswith((".toml", ".json")) and not Path(text).is_absolute():
        return str((folder / text).resolve())
    return text


def load(path: str | Path) -> Saved:
    """The scenario in `path`, validated (module doc)."""
    path = Path(path)
    doc = validate_file(ScenarioFile, read_toml(path), str(path), None)
    system, workload = _ref(doc.system, path.parent), _ref(doc.workload, path.parent)
    try:
        loaded = load_system(system)
    except CatalogError as exc:
        raise CatalogError(f"{path}: field system: {exc}") from None
    try:
        load_workload(workload)
    except CatalogError as exc:
        raise CatalogError(f"{path}: field workload: {exc}") from None
    try:
        from perfmodel.catalog.calibration import calibration_for

        whatif = wi.parse_assignments(doc.whatif, calibration_for(loaded))
    except (ValueError, KeyError) as exc:
        raise CatalogError(f"{path}: field whatif: {str(exc).splitlines()[0]}") from None
    return Saved(name=doc.name, system=system, workload=workload,
                 options=wi.ScenarioOptions(**doc.options.model_dump()), whatif=whatif, description=doc.description)


def _value(v) -> str:
    """A TOML value: JSON's string escapes are TOML's basic strings; booleans lower case."""
    return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v) if isinstance(v, str) else str(v)


def to_toml(saved: Saved) -> str:
    """The scenario's file text (module doc): every option that differs from its default, context always when set."""
    defaults = wi.ScenarioOptions()
    lines = ["# perfmodel scenario (perfmodel compare A.toml B.toml; perfmodel roofline --scenario FILE)",
             "schema_version = 1", 'kind = "scenario"', f"name = {_value(saved.name)}"]
    if saved.description:
        lines.append(f"description = {_value(saved.description)}")
    lines += [f"system = {_value(saved.system)}", f"workload = {_value(saved.workload)}",
              f"whatif = [{', '.join(_value(a) for a in saved.whatif.assignments())}]", "", "[options]"]
    for f in dataclasses.fields(wi.ScenarioOptions):
        v = getattr(saved.options, f.name)
        if v is not None and (f.name in ("phase", "batch", "context", "dtype") or v != getattr(defaults, f.name)):
            lines.append(f"{f.name} = {_value(v)}")
    return "\n".join(lines) + "\n"
