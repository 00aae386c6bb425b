"""The report's verdict in words: for each case, which system leads per chip, per MW and per dollar, by how much,
and which of those figures rest on inputs that are not published.

    per chip        the most tokens/s per chip, and its lead over the next system (a serving case: as each
                    system's serving engine runs it, report/engine_priced.py, where the report priced it so)
    per MW          the most tokens/s per MW of modelled power
    per dollar      the fewest USD per million tokens (systems with a price)
    exists          when a projected system leads per chip, the leader among the systems that exist
    markers         the report's: * estimated, † projected, § assumed input behind that figure

plan_recommendation(plan, peak rps): the capacity plan in words (the cheapest system within the SLA, what it takes,
the next one, the systems that cannot).

Does not: compute anything new: it reads the frames the report and the planner already hold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.report.provenance_frame import MARKERS

HEADER = ("Who leads each case per chip, per MW of modelled power and per dollar (* estimated, † projected, "
          "§ assumed input behind the figure; the sections below have every system's numbers).")


def _mark(row, column: str) -> str:
    return MARKERS.get(str(row.get(column, "") or ""), "")


def _lead(part: pd.DataFrame, metric: str, fewest: bool = False):
    """(leader, runner-up) rows by `metric` among rows with a positive value, or (None, None)."""
    if metric not in part:
        return None, None
    ok = part[part[metric].notna() & (part[metric] > 0)]
    if ok.empty:
        return None, None
    ranked = ok.sort_values(metric, ascending=fewest, kind="stable")
    return ranked.iloc[0], (ranked.iloc[1] if len(ranked) > 1 else None)


def _metrics(part: pd.DataFrame) -> tuple[str, str, str, str]:
    """(per chip, per MW, per dollar, engines): a serving case's engine-priced columns where the report has them
    (report/engine_priced.py: as today's engine runs it, the default answer) and the engines named, else the
    accelerator's and ""."""
    eng = part["engine"].fillna("").ne("") & part["engine"].ne("none") if "engine" in part else pd.Series(False)
    if eng.any() and part.loc[eng, "engine_tokens_per_s_per_chip"].notna().any():
        names = ", ".join(sorted(set(part.loc[eng, "engine"])))
        return "engine_tokens_per_s_per_chip", "engine_tokens_per_mw", "engine_usd_per_million_tokens", names
    return "tokens_per_s_per_chip", "tokens_per_mw", "usd_per_million_tokens", ""


def case_line(title: str, part: pd.DataFrame) -> str:
    """One sentence for a case (module doc), or why there is none."""
    short = title.split(" (")[0]
    per_chip, per_mw, per_usd, _ = _metrics(part)
    best, nxt = _lead(part, per_chip)
    if best is None:
        return f"- {short}: no system ran it." if part.empty else f"- {short}: no throughput modelled."
    bar = (f" ({best[f'{per_chip}_low']:,.0f}-{best[f'{per_chip}_high']:,.0f} at "
           f"{best['interval_level']:.0%})") if pd.notna(best.get(f"{per_chip}_low", np.nan)) else ""
    chip = f"{best[per_chip]:,.0f} tokens/s{bar}" + (
        f", {best[per_chip] / nxt[per_chip]:.2f}x {nxt['system']}" if nxt is not None else "")
    mw, _ = _lead(part, per_mw)
    usd, _ = _lead(part, per_usd, fewest=True)
    price = f"${usd[per_usd]:.2f}/M tokens{_mark(usd, 'basis_usd_per_mtok')}" if usd is not None else ""
    lead = f"{best['system']}{_mark(best, 'basis_performance')} leads per chip ({chip})"
    if mw is not None and usd is not None and mw["system"] == usd["system"] == best["system"]:
        words = [f"{lead}, per MW{_mark(mw, 'basis_tokens_per_mw')} and per dollar ({price})"]
    else:
        words = [lead]
        if mw is not None:
            words.append(f"per MW {mw['system']}{_mark(mw, 'basis_tokens_per_mw')}")
        if usd is not None:
            words.append(f"per dollar {usd['system']} ({price})")
    if best.get("basis_performance") == "projected":  # a planner buying now wants the best that exists
        now, _ = _lead(part[part["basis_performance"] != "projected"], per_chip)
        if now is not None:
            words.append(f"of systems that exist, {now['system']}{_mark(now, 'basis_performance')} "
                         f"({now[per_chip]:,.0f} tokens/s)")
    return f"- {short}: " + "; ".join(words) + "."


def verdict_text(cases: list[tuple[str, pd.DataFrame]]) -> str:
    """The verdict section's text: the header (saying which engines serve the serving cases), then one line per
    (title, case frame)."""
    engines = sorted({e for _, part in cases for e in _metrics(part)[3].split(", ") if e})
    how = (f" Serving cases as {' and '.join(engines)} serve them (report/engine_priced.py; --engine none: the "
           "accelerator alone)." if engines else "")
    return "\n".join([HEADER + how] + [case_line(title, part) for title, part in cases])


def _money(usd: float) -> str:
    return f"${usd:,.0f}"


def plan_recommendation(df: pd.DataFrame, peak_rps: float) -> str:
    """The capacity plan in words: the cheapest system that meets the SLA at the peak (the lowest facility power
    where no system has a price), what it takes, how it compares with the next, and the systems that cannot."""
    ok = df[df["feasible"].astype(bool)] if "feasible" in df else df.iloc[0:0]
    cannot = [f"{r['system']} ({str(r.get('note', '')).split(';')[0]})" for _, r in df.iterrows()
              if not bool(r.get("feasible", False))]
    tail = f" No plan of {', '.join(cannot)} meets it." if cannot else ""
    if ok.empty:
        return f"No system meets the SLA at {peak_rps:,.3g} requests/s.{tail}"
    priced = ok[ok["usd_per_month"].notna() & (ok["usd_per_month"] > 0)] if "usd_per_month" in ok else ok.iloc[0:0]
    by, pool = ("usd_per_month", priced) if len(priced) else ("facility_power_peak_w", ok)
    ranked = pool.sort_values([by, "chips"], kind="stable")
    best = ranked.iloc[0]
    cost = f"{_money(best['usd_per_month'])} per month{_mark(best, 'price_status')}, " if by == "usd_per_month" else ""
    words = (f"**{best['system']}** is the {'cheapest' if by == 'usd_per_month' else 'lowest-power'} way to serve "
             f"{peak_rps:,.3g} requests/s at the peak within the SLA: {int(best['chips']):,} "
             f"chip{'s' if int(best['chips']) != 1 else ''} "
             f"({best.get('mode', '')}), {cost}{units.format_quantity(best['facility_power_peak_w'], 'power')} at the facility")
    if len(ranked) > 1:
        nxt = ranked.iloc[1]
        ratio = nxt[by] / best[by] if best[by] > 0 else float("nan")
        what = _money(nxt["usd_per_month"]) + " per month" if by == "usd_per_month" else \
            units.format_quantity(nxt["facility_power_peak_w"], "power")
        words += f"; next {nxt['system']} at {what} ({ratio:.2f}x)"
    return words + "." + tail + " (* estimated, † projected, § assumed price or input.)"


def _amount(v: float) -> str:
    """A figure for a sentence: '27.5 million', '4,568', '3.7'."""
    return f"{v / units.MILLION:,.3g} million" if v >= units.MILLION else f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def frontier_verdict(df: pd.DataFrame, y: str, x: str = "tokens_per_s_per_user") -> str:
    """The serving frontiers in words: which system reaches the most of `y`, by how much over the next, and which
    leads at an interactivity every system reaches (the slowest system's fastest point)."""
    from perfmodel.report.export import display_name

    ok = df[(df[y] > 0) & (df[x] > 0)] if y in df and x in df else df.iloc[0:0]
    if ok.empty or ok["system"].nunique() < 2:
        return ""
    (yt, yd), (xt, xd) = display_name(y), display_name(x)
    best = ok.groupby("system")[y].max().sort_values(ascending=False)
    words = (f"{best.index[0]} reaches the most {yt} ({_amount(best.iloc[0] / yd)}, "
             f"{best.iloc[0] / best.iloc[1]:.2f}x {best.index[1]}'s {_amount(best.iloc[1] / yd)})")
    common = ok.groupby("system")[x].max().min()  # every system has a point at least this interactive
    at = ok[ok[x] >= common].groupby("system")[y].max().sort_values(ascending=False)
    if len(at) > 1:
        words += (f"; at {_amount(common / xd)} {xt}, which every system reaches, {at.index[0]} leads with "
                  f"{_amount(at.iloc[0] / yd)} ({at.iloc[0] / at.iloc[1]:.2f}x {at.index[1]})")
    caveat = " Power and price rest on the inputs the caveats below name." if "power_caveat" in ok or \
        "price_note" in ok else ""
    return words + "." + caveat
