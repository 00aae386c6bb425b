"""Charts drawn in the terminal (plotext), for the commands whose answer is a curve: the serving frontier
(`perfmodel pareto --plot`) and the roofline (`perfmodel roofline --plot`). Plain text, no colour codes, at most
the terminal's width (core/terminal.py), so it reads in a pipe, a log or a CI run as on a screen.

    frontier(df, y, x, color)        one line per system (or plan) on log-log axes, in people's units
    roofline(ops, roofs, ridges)     the roof of each data type and every operator at (intensity, achieved rate)

Does not: compute anything (the frames come from report.frames / serving.search), or draw for the browser
(charts.py does, with Altair).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.core import terminal
from perfmodel.report.export import display_name

HEIGHT = 22  # rows: the chart and its axes fit one screen above the table
PIPED_WIDTH = 100  # columns when the output is not a terminal (a log, a file) and no COLUMNS is set
MARKERS = ("braille", "dot", "x", "+", "o", "*")  # one per series where colour is not shown


def _scaled(col: str) -> tuple[str, float]:
    """(axis title with its unit, divisor) of an SI column (export's display names)."""
    return display_name(col)


def _figure():
    from perfmodel.core import extras

    plt = extras.require("plotext")

    plt.clear_figure()
    plt.theme("clear")
    plt.plotsize(terminal.table_width() or PIPED_WIDTH, HEIGHT)
    plt.xscale("log")
    plt.yscale("log")
    return plt  # the title and the axes' names are lines above the chart (plotext drops a title wider than it)


def _text(plt, title: str, xlabel: str, ylabel: str) -> str:
    lines = [line.rstrip() for line in plt.uncolorize(plt.build()).splitlines()]
    return "\n".join([title, f"y: {ylabel}; x: {xlabel} (log scales)", *lines])


def frontier(df: pd.DataFrame, y: str, x: str = "tokens_per_s_per_user", color: str = "system",
             title: str = "") -> str:
    """The frontier of each `color` group: x and y in people's units, log-log."""
    (xt, xd), (yt, yd) = _scaled(x), _scaled(y)
    title = title or f"{yt} against {xt}"
    plt = _figure()
    ok = df[(df[x] > 0) & (df[y] > 0)]
    for i, (name, grp) in enumerate(ok.groupby(color, sort=False)):
        grp = grp.sort_values(x)
        plt.plot((grp[x] / xd).tolist(), (grp[y] / yd).tolist(), label=str(name), marker=MARKERS[i % len(MARKERS)])
    return _text(plt, title, xt, yt)


def roofline(ops: pd.DataFrame, roofs: pd.DataFrame, ridges: pd.DataFrame, title: str = "") -> str:
    """Each data type's roof (min(peak, intensity x HBM bandwidth)) and the operators at their achieved rate."""
    yt, yd = _scaled("attainable_flop_per_s")
    title, xt, yt = title or "Roofline", "Arithmetic intensity (FLOP/byte)", yt.replace("Attainable",
                                                                                         "Attainable / achieved")
    plt = _figure()
    for i, (dtype, roof) in enumerate(roofs.groupby("dtype", sort=False)):
        plt.plot(roof["intensity_flop_per_byte"].tolist(), (roof["attainable_flop_per_s"] / yd).tolist(),
                 label=f"roof {dtype}", marker=MARKERS[i % len(MARKERS)])
    pts = ops[(ops["flop"] > 0) & (ops["time_s"] > 0) & (ops["intensity_flop_per_byte"] > 0)] if len(ops) else ops
    for bound, grp in pts.groupby("bound", sort=True):
        plt.scatter(grp["intensity_flop_per_byte"].tolist(), (grp["achieved_flop_per_s"] / yd).tolist(),
                    label=f"operators, {bound}-bound", marker="o" if bound == "tensor" else "x")
    return _text(plt, title, xt, yt)
