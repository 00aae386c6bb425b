"""Serving-engine profiles and benchmark load patterns: hardware_specs/serving/engines.toml.

    [engines.<name>.params.<param>]      value, kind, status, reason, source (+ fit for "fitted")
    [protocols.<name>.params.<param>]    the same fields

An engine profile holds what a serving engine adds to the GPU's work (serving/closed_loop.py uses
it): token_budget (tokens one step schedules), max_running (sequences decoding at once),
kv_memory_fraction (share of each GPU's memory for weights + KV), prefill_first (1: prefill batches run
alone and before decoding, SGLang's scheduler; 0: prefill chunks ride in decode steps), step_cost and
step_cost_per_sequence (host time per step beyond the GPU's, s: tau_0 + tau_1 x sequences per attention-DP
rank) and first_token_steps (engine steps between a prompt's prefill and its first
token reaching the client; _disagg: through a disaggregated deployment's router and KV hand-off).
A protocol holds a benchmark client's load pattern: waves (requests /
concurrency) and length_range_ratio (lengths drawn from [ratio x L, L]).
An envelope ([envelopes.<engine>]) holds what measured serving covers for an engine (serving/envelope.py):
max_running (the most sequences per replica of a measured aggregated deployment) and max_attention_dp (the
largest attention-DP degree measured); outside it an answer is extrapolated. [envelopes.<engine>.chips.<chip>]
holds the same for the engine's rows on one chip, which is what a plan on that chip is read against (an engine
measured at 4,300 sequences on GB200 says nothing about its scheduler at 512 on an H200 it was measured on at
64); a chip the file does not list falls back to the engine's rows on every chip. [defaults] names the engine a
search assumes per hardware family (`default_for`): the GPU engine the measured corpus supports best, and
the Neuron serving stack on Trainium.

Every parameter carries status and source: "assumed" (an engine's documented default) or "fitted"
(to measured serving, with the fit's data and its cross-validation grouped by model in `fit`).
Values are parsed and range-checked as calibration parameters are (calibration.parameter_value,
param_ranges.py). Users override any value: `engine(name).with_overrides({...})`, in force where it is
passed: `engines(replaced=Replacements(engines={name: profile}))` (catalog/replacements.py).

Does not: compute anything.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Mapping

from pydantic import BaseModel

from perfmodel.catalog.root import catalog_root, read_toml
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core.calibration import parameter_value
from perfmodel.core.errors import did_you_mean
from perfmodel.core.profiles import Profile, Setting

if TYPE_CHECKING:
    from perfmodel.catalog.replacements import Replacements

ENGINE_PARAMS = ("token_budget", "max_running", "kv_memory_fraction", "prefill_first", "step_cost",
                 "step_cost_per_sequence", "first_token_steps", "first_token_steps_disagg")
PROTOCOL_PARAMS = ("waves", "length_range_ratio", "prefill_utilization")
ENVELOPE_PARAMS = ("max_running", "max_attention_dp")


class _Param(BaseModel):
    model_config = STRICT
    value: str | int | float
    kind: str
    status: Literal["assumed", "measured", "fitted"]
    reason: str
    source: str
    fit: str = ""


class _Table(BaseModel):
    model_config = STRICT
    description: str = ""
    params: dict[str, _Param]


class _EnvelopeTable(_Table):
    chips: dict[str, _Table] = {}  # what the engine's rows cover on one chip (catalogue chip names)


class _Defaults(BaseModel):
    model_config = STRICT
    gpu: str
    neuron: str
    reason: str


class _File(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    defaults: _Defaults
    engines: dict[str, _Table]
    protocols: dict[str, _Table] = {}
    envelopes: dict[str, _EnvelopeTable] = {}


def _profile(path: str, scope: str, name: str, table: _Table, required: tuple[str, ...]) -> Profile:
    missing = [p for p in required if p not in table.params]
    extra = [p for p in table.params if p not in required]
    if missing or extra:
        what = (f"missing {', '.join(missing)}" if missing else "") + ("; " if missing and extra else "") + (
            f"unknown {', '.join(extra)}" if extra else "")
        raise CatalogError(f"{path}: {scope}.{name}.params: {what} (allowed: {', '.join(required)})")
    out = {}
    for key, p in table.params.items():
        where = f"{path}: {scope}.{name}.params.{key}"
        if p.status == "fitted" and not p.fit:
            raise CatalogError(f"{where}: a fitted value needs 'fit' (data, cross-validation, command)")
        out[key] = Setting(key, parameter_value(p.value, p.kind, where, key), str(p.value), p.kind, p.status, p.reason,
                           p.source, p.fit)
    return Profile(name, table.description, MappingProxyType(out))


@lru_cache(maxsize=4)
def _load(root: str) -> tuple[dict[str, Profile], dict[str, Profile], dict[tuple[str, str], Profile], _Defaults]:
    path = root or str(catalog_root() / "hardware_specs" / "serving" / "engines.toml")
    f = validate_file(_File, read_toml(Path(path)), path, None)
    engines = {n: _profile(path, "engines", n, t, ENGINE_PARAMS) for n, t in f.engines.items()}
    protocols = {n: _profile(path, "protocols", n, t, PROTOCOL_PARAMS) for n, t in f.protocols.items()}
    envelopes = {(n, ""): _profile(path, "envelopes", n, t, ENVELOPE_PARAMS) for n, t in f.envelopes.items()}
    envelopes |= {(n, c): _profile(path, f"envelopes.{n}.chips", c, ct, ENVELOPE_PARAMS)
                  for n, t in f.envelopes.items() for c, ct in t.chips.items()}
    return engines, protocols, envelopes, f.defaults


def engines(path: str = "", replaced: Replacements | None = None) -> dict[str, Profile]:
    """Every engine profile of the file (`path`, default the catalogue's), with those `replaced` holds."""
    return {**_load(path)[0], **(replaced.engines if replaced else {})}


def protocols(path: str = "") -> dict[str, Profile]:
    return dict(_load(path)[1])


def _named(known: Mapping[str, Profile], name: str, what: str) -> Profile:
    if name not in known:
        raise CatalogError(f"{what} {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")
    return known[name]


def engine(name: str, path: str = "", replaced: Replacements | None = None) -> Profile:
    return _named(engines(path, replaced), name, "unknown serving engine")


def protocol(name: str, path: str = "") -> Profile:
    return _named(_load(path)[1], name, "unknown benchmark protocol")


def envelope(name: str, chip: str = "", path: str = "") -> Profile:
    """What measured serving covers for engine (or Neuron stack) `name` (ENVELOPE_PARAMS) on catalogue chip `chip`:
    the engine's rows on that chip where the file lists them ([envelopes.<name>.chips.<chip>]), else what its
    rows on every chip cover."""
    known = _load(path)[2]
    if (name, chip) in known:
        return known[(name, chip)]
    return _named({n: p for (n, c), p in known.items() if not c}, name, "no measured envelope for serving engine")


def check_envelope_chips(known_chips, path: str = "") -> None:
    """CatalogError (one line) where an envelope names a chip the catalogue does not hold (it would never apply)."""
    for name, chip in _load(path)[2]:
        if chip and chip not in known_chips:
            raise CatalogError(f"{path or 'hardware_specs/serving/engines.toml'}: envelopes.{name}.chips.{chip}: no "
                               f"catalogue chip {chip!r}{did_you_mean(chip, known_chips)} (known: "
                               f"{', '.join(sorted(known_chips))})")


def default_for(system, path: str = "") -> str:
    """The serving engine a search assumes on `system` when none is named: [defaults] by hardware family."""
    d = _load(path)[3]
    return d.neuron if system.chip.family.is_neuron else d.gpu


def default_reason(path: str = "") -> str:
    return _load(path)[3].reason


def resolve(name: str | None, system) -> tuple[str, Profile | None]:
    """(engine, its measured envelope) a command runs on `system`: the engine named, "none" for the accelerator
    alone ("", no envelope: the roofline), or None for the hardware family's default (default_for)."""
    if name is None:
        name = default_for(system)
    if name == "none":
        return "", None
    known = _load("")[2]
    return name, known.get((name, system.chip.name), known.get((name, "")))
