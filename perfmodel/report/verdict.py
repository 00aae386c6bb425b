"""The report's verdict in words: for each case, which system leads per chip, per MW and per dollar, by how much,
and which of those figures rest on inputs that are not published.

    per chip        the most tokens/s per chip, and its lead over the next system
    per MW          the most tokens/s per MW of modelled power
    per dollar      the fewest USD per million tokens (systems with a price)
    exists          when a projected system leads per chip, the leader among the systems that exist
    markers         the report's: * estimated, † projected, § assumed input behind that figure

Does not: compute anything new: it reads the case frames the report already holds.
"""

from __future__ import annotations

import pandas as pd

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


def case_line(title: str, part: pd.DataFrame) -> str:
    """One sentence for a case (module doc), or why there is none."""
    short = title.split(" (")[0]
    best, nxt = _lead(part, "tokens_per_s_per_chip")
    if best is None:
        return f"- {short}: no system ran it." if part.empty else f"- {short}: no throughput modelled."
    chip = f"{best['tokens_per_s_per_chip']:,.0f} tokens/s" + (
        f", {best['tokens_per_s_per_chip'] / nxt['tokens_per_s_per_chip']:.2f}x {nxt['system']}" if nxt is not None
        else "")
    mw, _ = _lead(part, "tokens_per_mw")
    usd, _ = _lead(part, "usd_per_million_tokens", fewest=True)
    price = f"${usd['usd_per_million_tokens']:.2f}/M tokens{_mark(usd, 'basis_usd_per_mtok')}" if usd is not None \
        else ""
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
        now, _ = _lead(part[part["basis_performance"] != "projected"], "tokens_per_s_per_chip")
        if now is not None:
            words.append(f"of systems that exist, {now['system']}{_mark(now, 'basis_performance')} "
                         f"({now['tokens_per_s_per_chip']:,.0f} tokens/s)")
    return f"- {short}: " + "; ".join(words) + "."


def verdict_text(cases: list[tuple[str, pd.DataFrame]]) -> str:
    """The verdict section's text: the header, then one line per (title, case frame)."""
    return "\n".join([HEADER] + [case_line(title, part) for title, part in cases])
