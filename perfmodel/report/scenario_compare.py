"""Two or more saved scenarios side by side, with each one's change against the first (the baseline).

    compare(saved) -> (shown, values)
        shown   one row per figure: its name, then per scenario its value for people (units, estimate markers)
                and, after the first, its change against the first ('+12.3%', 'same', or the text's parts that
                differ)
        values  one row per scenario and figure: scenario, figure, label (its name for people), setup (True for
                what was run: system ... what-ifs), value (SI, NaN for text), text (the figure's text where it is
                not a number), change_frac (against the first; NaN for text that differs)

Figures: the scenario as run (system, workload, phase, batch, plan, data type, what-ifs), then the phase's headline figures (TPOT and tokens/s per user for decode, TTFT for
prefill, step time for training), tokens/s per chip, MFU, what bounds it, memory per chip and whether it fits,
tokens/s per MW and $ per million tokens, with the provenance markers the other tables use. A scenario that does
not fit or is not a valid plan is evaluated all the same, its 'fits' / reason row saying so; impossible(values)
says which, and the CLI and the app refuse an invalid plan and show a misfit only under a banner.

Does not: read scenario files (catalog.scenario_files) or draw anything.
"""

from __future__ import annotations

import math

import pandas as pd

from perfmodel.catalog.scenario_files import Saved
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.report.frames import display_table, load, plan_text, run_scenario
from perfmodel.report.pages import HEADLINE

FIGURES = ("time_per_output_token_s", "tokens_per_s_per_user", "ttft_s", "step_time_s", "tokens_per_s_per_chip",
           "mfu_frac", "bound", "memory_total_bytes", "fits", "invalid_reason", "tokens_per_mw",
           "usd_per_million_tokens")


def _summary(s: Saved, replaced: Replacements) -> pd.DataFrame:
    ld = load(s.system, s.workload, s.whatif, replaced=replaced)
    opts = s.options.resolved()
    results = run_scenario(ld, opts, with_fit=False).sheets()["results"]
    return results.assign(**{"system ": ld.system.name, "workload ": ld.arch.name, "phase ": opts.phase,
                             "batch ": str(opts.batch), "plan": plan_text(opts), "data type": opts.dtype,
                             "what-if": ", ".join(s.whatif.assignments()) or "none"})


SETUP = ("system ", "workload ", "phase ", "batch ", "plan", "data type", "what-if")  # as run (display names
# carry a trailing space: the summary's own 'system' / 'phase' columns are its inputs, shown by display_table)


SAME = 5e-4  # a change under half the last digit shown (+0.1%) reads 'same', not '+0.0%'


def _number(value) -> float:
    """A figure as a float (True / False as 1 / 0), NaN for text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _change(base, new) -> tuple[str, float]:
    """('+12.3%', 0.123) for numbers; ('same', 0) or (the new text, nan) otherwise."""
    try:
        a, b = float(base), float(new)
    except (TypeError, ValueError):  # text: the parts of the new that the base lacks ('trn3-ultraserver, tp8')
        was = str(base).split(", ")
        changed = [part for part in str(new).split(", ") if part not in was]
        return ("same", 0.0) if not changed else (", ".join(changed), math.nan)
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0:
        return ("same", 0.0) if a == b else ("", math.nan)
    frac = b / a - 1
    return ("same" if abs(frac) < SAME else f"{frac:+.1%}"), frac


def compare(saved: list[Saved], replaced: Replacements = NONE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(shown, values): module doc, each scenario with the calibrated sets `replaced` holds. Needs two scenarios or
    more, with distinct names."""
    names = [s.name for s in saved]
    if len(saved) < 2:
        raise ValueError(f"compare needs two scenarios or more, got {len(saved)}")
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must differ to be compared side by side: {', '.join(names)}")
    summaries = [_summary(s, replaced) for s in saved]
    phases = {s.options.phase for s in saved}
    wanted = [c for c in FIGURES if c in summaries[0] and (c not in sum(HEADLINE.values(), ()) or
                                                           any(c in HEADLINE[p] for p in phases))]
    texts = [display_table(sm, wanted).iloc[0] for sm in summaries]  # each figure in people's units, by label
    rows = [(k, k.strip(), [str(sm.iloc[0][k]) for sm in summaries]) for k in SETUP]  # (raw column, label, cells)
    rows += [(raw, label, [str(t[label]) for t in texts]) for raw, label in zip(wanted, texts[0].index)]
    rows = [r for r in rows if any(c.strip() for c in r[2])]  # a figure no scenario has (no invalid plan) is left out
    values, table = [], []
    for raw, label, cells in rows:
        row = {"figure": label}
        for i, (name, cell) in enumerate(zip(names, cells)):
            row[name] = cell
            value = summaries[i].iloc[0][raw]
            text, frac = _change(summaries[0].iloc[0][raw], value)
            if i:
                row[f"{name} vs {names[0]}"] = text
            number = _number(value)
            values.append({"scenario": name, "figure": raw.strip(), "label": label, "setup": raw in SETUP,
                           "value": number,
                           "text": "" if math.isfinite(number) else str(value), "change_frac": frac if i else 0.0})
        table.append(row)
    return pd.DataFrame(table), pd.DataFrame(values)


def impossible(values: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(scenario, why its plan is invalid, why it does not fit) for each scenario that is no valid answer."""
    out = []
    for name, mine in values.groupby("scenario", sort=False):
        mine = mine.set_index("figure")
        invalid = str(mine["text"].get("invalid_reason", "") or "").strip()
        misfit = "" if mine["value"].get("fits", 1.0) == 1.0 else "its memory per chip exceeds the chip's HBM"
        if invalid or misfit:
            out.append((str(name), invalid, misfit))
    return out
