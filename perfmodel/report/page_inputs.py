"""The explorer's page inputs (hardware, memory, collectives, serving, under load, planner, formulas) as plain
values: their defaults and ranges, read from URL query parameters as the widgets would take them, and written
back, so a shared link restores the page.

    PAGE_INPUTS                          page -> its inputs (URL key = widget key, kind, default, range / options)
    read(qp, page, systems)              URL parameters -> (every page input's value, notices)
    query(page, values)                  the page's widget values -> URL parameters (what read() reads)
    defaults()                           every page input's default value
    ensure(state, page)                  a page's defaults where the session (st.session_state) has none
    options(key)                         a choice's or multi's options (the widget offers exactly these)
    bounds(key)                          a number's range (the widget takes exactly these)

A value a widget would not take (an unknown system, a number out of range, not a number, an option not offered)
gets a notice naming the parameter, the value and what is allowed, and that input keeps its default; like the
sidebar's (url_state.read_query). Only the shown page's inputs are written to the URL.

Does not: call Streamlit, or compute model quantities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

SERVING_SYSTEMS = ("trn2-ultraserver", "trn3-ultraserver")
MODES = ("aggregated", "chunked", "disaggregated")
PERCENTILES = (0, 50, 90, 99)


def _frontier_y() -> list[str]:
    from perfmodel.report.pages import FRONTIER_Y  # the model's imports, only when a page reads them

    return list(FRONTIER_Y)


def _grids() -> list[str]:
    from perfmodel.report.pages import GRIDS

    return list(GRIDS)


def _collectives() -> list[str]:
    from perfmodel.comm.algorithms import Collective

    return [c.value for c in Collective]


def _algorithms() -> list[str]:
    from perfmodel.comm.algorithms import ALGORITHMS

    return ["auto", *ALGORITHMS]


def _launches() -> list[str]:
    from perfmodel.comm.collectives import LAUNCH

    return list(LAUNCH)


def _fixed(*options) -> Callable[[], list]:
    return lambda: list(options)


@dataclass(frozen=True)
class Input:
    """One page input: `key` is the widget's key and the URL parameter; kind int | float | choice | systems | multi
    (a list, comma-separated in the URL: systems of the catalogue, multi of `options`); low / high the widget's
    range; options a callable for a choice or a multi."""

    key: str
    kind: str
    default: object
    low: float = -math.inf
    high: float = math.inf
    options: Callable[[], list] | None = None


TOKENS = 1_048_576  # the longest input or output a page takes (url_state.INT_RANGES' sequence bound)

# Ranges are the widgets' (a link may hold no value its widget refuses): the lower ends are the widgets' own
# minimums; the upper ends bound what a number field takes, not the physics: token counts to 2^20 (url_state's
# INT_RANGES), request rates to 10^7 per second, a peak-to-average of 100, SLAs to 10 s per token and 10 min to
# the first token, simulations to 50,000 requests, groups to 65,536 chips
PAGE_INPUTS: dict[str, tuple[Input, ...]] = {
    "Serving": (
        Input("srv_systems", "systems", list(SERVING_SYSTEMS)),
        Input("srv_isl", "int", 1024, 1, TOKENS), Input("srv_osl", "int", 1024, 1, TOKENS),
        Input("srv_y", "choice", "mw", options=_frontier_y), Input("srv_grid", "choice", "quick", options=_grids),
        Input("srv_frontiers", "choice", "engine", options=_fixed("engine", "both", "roofline")),
    ),
    "Capacity planner": (
        Input("plan_rps", "float", 100.0, 0.001, 1e7), Input("plan_peak", "float", 1.5, 1.0, 100.0),
        Input("plan_isl", "int", 1024, 1, TOKENS), Input("plan_osl", "int", 1024, 1, TOKENS),
        Input("plan_tpot", "float", 0.02, 0.001, 10.0), Input("plan_ttft", "float", 2.0, 0.01, 600.0),
        Input("plan_systems", "systems", list(SERVING_SYSTEMS)), Input("plan_grid", "choice", "quick", options=_grids),
        Input("plan_pct", "choice", 0, options=lambda: list(PERCENTILES)),
        Input("plan_modes", "multi", ["aggregated"], options=_fixed(*MODES)),
    ),
    "Hardware": (
        Input("hw_systems", "systems", ["trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver", "trn4-projected"]),
        Input("hw_level", "choice", "chip", options=_fixed("chip", "node", "scaleup")),
    ),
    "Memory": (Input("mem_systems", "systems", ["trn3-ultraserver", "p5.48xlarge"]),),
    "Collectives": (
        Input("coll_systems", "systems", list(SERVING_SYSTEMS)),
        Input("coll_names", "multi", ["all-reduce"], options=_collectives),
        Input("coll_group", "int", 64, 2, 65536),
        Input("coll_algs", "multi", ["auto", "ring", "2d-ring", "direct"], options=_algorithms),
        Input("coll_launch", "choice", "in-graph", options=_launches),
    ),
    "Under load": (
        Input("ul_kind", "choice", "poisson", options=_fixed("poisson", "gamma", "closed")),
        Input("ul_rate", "float", 5.0, 0.01, 1e6), Input("ul_clients", "int", 16, 1, 1_000_000),
        Input("ul_isl", "int", 1024, 1, TOKENS), Input("ul_osl", "int", 256, 1, TOKENS),
        Input("ul_mode", "choice", "aggregated", options=_fixed("aggregated", "chunked")),
        Input("ul_n", "int", 3000, 100, 50_000),
        Input("ul_ttft", "float", 2.0, 0.001, 600.0), Input("ul_tpot", "float", 0.05, 0.001, 10.0),
    ),
    "Formulas": (Input("sens_col", "choice", "step_time_s", options=_fixed("step_time_s", "tokens_per_s_per_chip")),),
}


def defaults() -> dict:
    """Every page input's default (lists copied: a widget may keep them)."""
    return {i.key: list(i.default) if isinstance(i.default, list) else i.default
            for inputs in PAGE_INPUTS.values() for i in inputs}


def _input(key: str) -> Input:
    return next(i for inputs in PAGE_INPUTS.values() for i in inputs if i.key == key)


def options(key: str) -> list:
    """The options of a choice or multi input: what its widget offers and what a link may hold."""
    return _input(key).options()


def bounds(key: str) -> dict:
    """A number input's range as its widget takes it (min_value, max_value, in the input's own type): the range a
    link is read with, so the widget accepts no value a shared link would refuse."""
    i = _input(key)
    cast = int if i.kind == "int" else float
    return {"min_value": cast(i.low), "max_value": cast(i.high)}


def ensure(state, page: str) -> None:
    """Give the page's inputs their defaults where the session has none (a widget not drawn on the last run
    loses its value; the widgets take theirs from the session, none is passed a default)."""
    for i in PAGE_INPUTS.get(page, ()):
        if i.key not in state:
            state[i.key] = list(i.default) if isinstance(i.default, list) else i.default


def _number(text: str, kind: str) -> float | int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or (kind == "int" and not value.is_integer()):
        return None
    return int(value) if kind == "int" else value


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"


def _one(i: Input, text: str, systems: Iterable[str]) -> tuple[object, str | None]:
    """(value, None) when the widget would take `text`, else (the default, why not)."""
    if i.kind in ("int", "float"):
        value = _number(text, i.kind)
        if value is not None and i.low <= value <= i.high:
            return value, None
        what = "whole numbers" if i.kind == "int" else "numbers"
        why = "out of range" if value is not None else f"not {'a whole number' if i.kind == 'int' else 'a number'}"
        return i.default, f"{why}; allowed: {what} {_num(i.low)} to {_num(i.high)}"
    if i.kind == "choice":
        options = i.options()
        match = next((o for o in options if str(o) == text), None)
        return (match, None) if match is not None else \
            (i.default, f"not an option; allowed: {', '.join(map(str, options))}")
    allowed = list(systems) if i.kind == "systems" else i.options()
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        return list(i.default), (f"unknown {'system' if i.kind == 'systems' else 'option'} "
                                 f"{', '.join(map(repr, bad))}" if bad else "empty") + \
            f"; allowed: comma-separated {', '.join(allowed[:12])}{', ...' if len(allowed) > 12 else ''}"
    return list(dict.fromkeys(names)), None


def read(qp: Mapping[str, str], systems: Iterable[str]) -> tuple[dict, list[str]]:
    """(every page input's value, notices) from URL query parameters; `systems`: the names a system list may hold."""
    values, notices, systems = defaults(), [], list(systems)
    for inputs in PAGE_INPUTS.values():
        for i in inputs:
            if i.key not in qp:
                continue
            text = str(qp[i.key]).strip()
            values[i.key], why = _one(i, text, systems)
            if why:
                shown = text if len(text) <= 60 else text[:60] + "..."
                notices.append(f"URL parameter {i.key}={shown!r}: {why}; using {values[i.key]}.")
    return values, notices


def keys() -> set[str]:
    """Every page input's URL key."""
    return {i.key for inputs in PAGE_INPUTS.values() for i in inputs}


def query(page: str, values: Mapping) -> dict[str, str]:
    """The shown page's inputs as URL parameters (lists comma-joined); other pages' are left out."""
    out = {}
    for i in PAGE_INPUTS.get(page, ()):
        if i.key not in values:
            continue
        v = values[i.key]
        out[i.key] = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else f"{v:g}" if isinstance(v, float) \
            else str(v)
    return out
