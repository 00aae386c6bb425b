"""The explorer's view as plain values: URL query parameters read as the sidebar reads its widgets,
the scenario defaults of each phase, and the query parameters a view writes back.

    read_query(qp, cat, pages, dtypes_of)   query parameters -> (widget values, notices)
    defaults(phase)                         a phase's default widget values (SCENARIO_DEFAULTS: decode's)
    options_of(values)                      widget values -> ScenarioOptions
    phase_switch(values, old, new)          the fields that follow a phase change (still at old's defaults)
    query_of(page, system, workload, opts, whatif, page_values)   the view -> query parameters (read_query's)
    one_line(exc)                           an error as one line for the page

Every value is checked as its widget would check it: one the sidebar would not take (an unknown
name, a number out of range or not whole, a what-if that does not parse or apply to the system
and workload) gets a notice naming the parameter, the value and what is allowed, and that field
alone keeps its default. A bad value is a notice, never an exception. The defaults of each phase
are a valid plan that fits memory on the default system (tests/test_app.py checks them).

Does not: call Streamlit (app.py draws the widgets and the notices), or compute model quantities
(a what-if is checked by loading it, report.frames.load).
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from typing import Callable, Iterable, Mapping

from perfmodel import catalog
from perfmodel.catalog import whatif as wi
from perfmodel.report import page_inputs, uploads

PHASES = ("prefill", "decode", "train")
PAGE_KEY, DEFAULT_PAGE = "page", "Roofline"
# the whole-number fields of each phase's default scenario (llama-3-70b on trn2-ultraserver, bf16), each a valid
# plan that fits: decode with 4096 tokens cached; prefill and train from an empty context (context + sequence
# within the model's 8192 positions); train on one UltraServer, tp 16 x pp 4 = 64 chips, one sequence per
# microbatch (about 67 of 96 GiB per chip; the decode plan, batch 64 at tp 4, would need about 1.4 TiB per chip)
PHASE_DEFAULTS = {
    "decode": {"batch": 64, "seq": 2048, "context": 4096, "tp": 4, "pp": 1, "ep": 1},
    "prefill": {"batch": 64, "seq": 2048, "context": 0, "tp": 4, "pp": 1, "ep": 1},
    "train": {"batch": 4, "seq": 2048, "context": 0, "tp": 16, "pp": 4, "ep": 1},
}
SCENARIO_DEFAULTS = {"system": "trn2-ultraserver", "workload": "llama-3-70b", "phase": "decode",
                     **PHASE_DEFAULTS["decode"], "dtype": "bf16"}
# whole-number inputs: URL key -> (lowest, highest), the sidebar widgets' own ranges
INT_RANGES = {"batch": (1, 65536), "seq": (1, 1_048_576), "context": (0, 4_194_304), "tp": (1, 1024),
              "pp": (1, 256), "ep": (1, 1024)}
# sliders for the common what-ifs: spec knob -> label (value: percent change, within SLIDER_RANGE)
QUICK_WHATIF = {"hbm_bandwidth": "HBM bandwidth change (%)", "tensor_rate": "Tensor-engine rate change (%)",
                "hbm_capacity": "HBM capacity change (%)", "link_bandwidth": "Link bandwidth change (%)"}
SLIDER_RANGE = (-90.0, 1000.0)
# what-if URL keys (wi.to_query writes the short prefixes; the long ones are read too), longest first
WHATIF_PREFIXES = {"workload.": "workload", "spec.": "spec", "cal.": "cal", "s.": "spec", "c.": "cal",
                   "w.": "workload"}
WHATIF_WORDS = {"spec": "spec value", "cal": "calibration parameter", "workload": "numeric workload field"}
# what a what-if that cannot be applied raises (the loaders' checks); anything else is a bug, logged
LOAD_ERRORS = (ValueError, KeyError, TypeError, ArithmeticError)
LOG = logging.getLogger(__name__)


def defaults(phase: str) -> dict:
    """The default widget values of a phase (the decode defaults for a phase not known)."""
    return {**SCENARIO_DEFAULTS, "phase": phase, **PHASE_DEFAULTS.get(phase, PHASE_DEFAULTS["decode"])}


def one_line(exc: BaseException) -> str:
    """An error as one line for the page: its first line without a list of known names (KeyError:
    its key); the type's name where it says nothing."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = str(text).strip().split("\n")[0].split(" (known:")[0]
    if isinstance(exc, ValueError):  # WhatIfError, CatalogError, CasesError: written for people
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def supported_dtypes(system: str) -> list[str]:
    """The data types the sidebar offers on a system (its tensor engine's rates)."""
    return [d.value for d in catalog.load_system(system).chip.tensor.flop_per_s]


def calibration_of(system: str):
    """The system's calibration (what a `c.NAME` what-if overrides)."""
    return catalog.load_system(system).calibration


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _did_you_mean(text: str, options, prefer: str | None = None) -> str:
    """' (did you mean 'x'?)': the closest option; failing that, of the options that begin as `text`
    does (3 characters or more: 'trn9' -> the trn systems), `prefer` (the fallback shown) or the closest."""
    names, text = [str(o) for o in options], text[:200]
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    if not close:
        lead = {n: len(os.path.commonprefix([text.lower(), n.lower()])) for n in names}
        most = max(lead.values(), default=0)
        same = [n for n in names if lead[n] == most] if most >= 3 else []
        close = [prefer] if prefer in same else difflib.get_close_matches(text, same, n=1, cutoff=0.0)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed(options, most: int = 20) -> str:
    names = [str(o) for o in options]
    return ", ".join(names) if len(names) <= most else ", ".join(names[:most]) + f", ... ({len(names)} in all)"


def _whole(text: str) -> int | None:
    """'64' or '64.0' or '1e3' -> the whole number; None for text that is not one (2.5, inf, nan, abc)."""
    try:
        return int(text.strip())
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def whatif_problem(system: str, workload: str, fam: str, name: str, text: str) -> str | None:
    """Why one URL what-if cannot be used (None when it can): an unknown name, or a value that does
    not parse or apply to this system and workload (the sidebar's checks, report.load's)."""
    names = {"spec": wi.SPEC_KNOBS, "workload": wi.WORKLOAD_FIELDS}.get(fam) or sorted(calibration_of(system).params)
    if name not in names:
        return f"not a {WHATIF_WORDS[fam]}{_did_you_mean(name, names)}; allowed: {_allowed(names)}"
    if not text.strip():
        return "empty value; allowed: a value with its unit, x1.5, +50% or -20%"
    # the model's imports, only when a URL holds a what-if
    from perfmodel.report import frames

    try:
        frames.load(system, workload, wi.WhatIf(**{fam: ((name, text),)}))
    except LOAD_ERRORS as exc:
        return one_line(exc)
    except Exception as exc:  # a bug behind this value: a notice still, and the traceback in the server log
        LOG.error("URL what-if %s.%s=%r could not be checked", fam, name, text, exc_info=True)
        return f"could not be checked ({type(exc).__name__}; the server log has it)"
    return None


def percent(text: str) -> float | None:
    """'+50%' -> 50.0 when a quick slider can hold it, else None (the text box takes it)."""
    if not text.endswith("%") or wi.parse_change(text).op != "scale":
        return None
    try:
        v = float(text[:-1])
    except ValueError:
        return None
    return v if SLIDER_RANGE[0] <= v <= SLIDER_RANGE[1] else None


def read_query(qp: Mapping[str, str], cat: dict | None = None, pages: Iterable[str] = (DEFAULT_PAGE,),
               dtypes_of: Callable[[str], list[str]] = supported_dtypes) -> tuple[dict, list[str]]:
    """(widget values, notices) from the URL query parameters: each value is checked as the sidebar
    would check it; one that fails gets a notice and its field keeps the default (of the phase
    read). `cat`: {'systems': [...], 'workloads': [...]} (the catalogue's when None); `pages`: the
    page names; `dtypes_of(system)`: the data types the sidebar offers on that system."""
    cat = cat or {"systems": catalog.list_systems(), "workloads": catalog.list_workloads()}
    qp = {str(k): str(v) for k, v in qp.items()}
    notices: list[str] = []

    def note(key: str, text: str, why: str, fallback: str) -> None:
        notices.append(f"URL parameter {key}={_shown(text)}: {why}; {fallback}.")

    def choice(key: str, options, default: str, what: str) -> str:
        default = default if default in options else next(iter(options))
        text = qp.get(key, default)
        if text in options:
            return text
        note(key, text, f"not a known {what}{_did_you_mean(text, options, default)}; allowed: {_allowed(options)}",
             f"showing {default}")
        return default

    state = {PAGE_KEY: choice(PAGE_KEY, list(pages), DEFAULT_PAGE, "page")}
    for key, what in (("system", "system"), ("workload", "workload")):  # a catalogue name, or a file kept by uploads
        kept = [qp[key]] if key in qp and uploads.is_upload(qp[key]) else []
        state[key] = choice(key, [*cat[f"{key}s"], *kept], SCENARIO_DEFAULTS[key], what)
    state["phase"] = choice("phase", PHASES, SCENARIO_DEFAULTS["phase"], "phase")
    start = defaults(state["phase"])
    for key, (lo, hi) in INT_RANGES.items():
        default = start[key]
        text, state[key] = qp.get(key), default
        if text is None:
            continue
        value = _whole(text)
        if value is not None and lo <= value <= hi:
            state[key] = value
        else:
            note(key, text, f"{'out of range' if value is not None else 'not a whole number'}; allowed: whole "
                 f"numbers {lo:,} to {hi:,}", f"using {default}")
    dtypes = dtypes_of(state["system"])
    state["dtype"] = choice("dtype", dtypes, "bf16" if "bf16" in dtypes else dtypes[0],
                            f"data type of {state['system']}")
    state.update({f"wi_{n}": 0.0 for n in QUICK_WHATIF})
    state["wi_power_basis"] = "modelled"
    extra = []
    known = [PAGE_KEY, *SCENARIO_DEFAULTS]
    values, page_notices = page_inputs.read(qp, cat["systems"])  # the serving and planner pages' inputs
    state.update(values)
    notices += page_notices
    for key, text in qp.items():
        prefix = next((p for p in WHATIF_PREFIXES if key.startswith(p)), None)
        if prefix is None:
            if key not in known and key not in values:
                note(key, text, f"not a parameter of this app{_did_you_mean(key, known)}; allowed: "
                     f"{', '.join(known)}, s.SPEC, c.CALIBRATION, w.WORKLOAD_FIELD, the pages' srv_* and plan_* inputs",
                     "ignored")
            continue
        fam, name = WHATIF_PREFIXES[prefix], key[len(prefix):]
        why = whatif_problem(state["system"], state["workload"], fam, name, text)
        if why:
            note(key, text, why, "ignored")
        elif fam == "spec" and name in QUICK_WHATIF and percent(text) is not None:
            state[f"wi_{name}"] = percent(text)
        elif fam == "cal" and name == "power_basis_all_in":  # the sidebar's power-basis switch
            state["wi_power_basis"] = "all-in" if float(text) else "modelled"
        else:
            extra.append(f"{name}={text}" if fam == "spec" else f"{fam}.{name}={text}")
    state["wi_text"] = "\n".join(extra)
    return state, notices


def options_of(values: Mapping) -> wi.ScenarioOptions:
    """The scenario of the sidebar's values (phase, batch, seq, context, tp, pp, ep, dtype); training
    shards its optimizer state (ZeRO-1) and runs one microbatch per pipeline stage."""
    train = values["phase"] == "train"
    return wi.ScenarioOptions(phase=values["phase"], batch=int(values["batch"]), seq_len=int(values["seq"]),
                              context=int(values["context"]), tp=int(values["tp"]), pp=int(values["pp"]),
                              ep=int(values["ep"]), dtype=values["dtype"], zero=1 if train else 0,
                              microbatches=max(1, int(values["pp"])) if train else 1)


def phase_switch(values: Mapping, old: str, new: str) -> dict:
    """The whole-number fields that take `new`'s default on a change of phase: those that still hold
    `old`'s default (a value the user set stays)."""
    if old == new or old not in PHASE_DEFAULTS or new not in PHASE_DEFAULTS:
        return {}
    return {k: v for k, v in PHASE_DEFAULTS[new].items() if values.get(k) == PHASE_DEFAULTS[old][k]}


def quick_assignments(sliders: Mapping[str, float]) -> list[str]:
    """The quick sliders' what-ifs: {'hbm_bandwidth': 50.0} -> ['spec.hbm_bandwidth=+50%'] (zero: none)."""
    return [f"spec.{name}={v:+g}%" for name, v in sliders.items() if v]


def query_of(page: str, system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf,
             page_values: Mapping = {}) -> dict[str, str]:
    """The view as URL query parameters (read back by read_query): the scenario, the what-ifs and the shown page's
    inputs (page_values: widget key -> value, page_inputs.PAGE_INPUTS)."""
    params = {PAGE_KEY: page, "system": system, "workload": workload, "phase": opts.phase, "batch": opts.batch,
              "seq": opts.seq_len, "context": opts.context, "tp": opts.tp, "pp": opts.pp, "ep": opts.ep,
              "dtype": opts.dtype, **wi.to_query(whatif), **page_inputs.query(page, page_values)}
    return {k: str(v) for k, v in params.items()}
