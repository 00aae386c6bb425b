"""Altair chart builders. Each takes tidy DataFrames (SI columns) and returns an alt.Chart.

    roofline(ops, roofs, ridges)        operators as points on a chip's roofline, ridge point per data type
    engine_breakdown(engines)           per-block time on each engine (stacked bars)
    memory_stack(components, totals)    per-device footprint stacked by component, capacity as the fit line
    collective_times(df)                collective time vs message size, one line per topology / algorithm
    frontier(df, points)                interactivity vs throughput per MW (or per chip), one line per system
    spec_ratios(df)                     generation ratios per spec metric
    metric_bars(df, column)             one result column per system, faceted by case
    sensitivity(df)                     ranking of inputs by elasticity
    validation_scatter(cases)           predicted vs measured per case (log-log, +-40% lines)
    to_svg(chart), to_png(chart)        static images (vl-convert), for reports and downloads

Values stay SI in the data; axes show display units through `export.display_name` (the
scaling happens in a Vega-Lite calculate transform, not in Python). Encodings on the app's
hot path (roofline, engine_breakdown) are channel objects (alt.X("f:Q"), alt.Tooltip("f:N")),
not shorthand strings: altair turns each string through from_dict, ~8 ms a channel; the
Vega-Lite spec is the same.

Does not: compute model quantities.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.core import extras, units
from perfmodel.report import export

alt = extras.Lazy("altair")  # the 'charts' extra: imported when a chart is drawn, not when tables are made
WIDTH = 560
HEIGHT = 340


def _scaled(col: str) -> tuple[str, str, float]:
    """(new field name, axis title, divisor) for an SI column."""
    title, div = export.pretty_name(col)
    return f"{col}__disp", title, div


def _with_display(chart: alt.Chart, *cols: str) -> tuple[alt.Chart, dict[str, tuple[str, str]]]:
    out = {}
    for c in cols:
        name, title, div = _scaled(c)
        chart = chart.transform_calculate(**{name: f"datum['{c}'] / {div!r}"})
        out[c] = (name, title)
    return chart, out


def _title(text: str, default: str):
    """A chart's title: a text of several lines (a command's banner above its title) as Vega's list of lines (a
    newline inside one string is not a line break there)."""
    text = text or default
    return text.split("\n") if "\n" in text else text


def roofline(ops: pd.DataFrame, roofs: pd.DataFrame, ridges: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """ops: op, block, bound, intensity_flop_per_byte, achieved_flop_per_s, total_time_s;
    roofs: dtype, intensity_flop_per_byte, attainable_flop_per_s;
    ridges: dtype, ridge_intensity_flop_per_byte, peak_flop_per_s."""
    xs = alt.Scale(type="log")
    ys = alt.Scale(type="log")
    x_title = "Arithmetic intensity (FLOP/byte)"
    line, m = _with_display(alt.Chart(roofs), "attainable_flop_per_s")
    y_name, y_title = m["attainable_flop_per_s"]
    line = line.mark_line(strokeWidth=2).encode(
        x=alt.X("intensity_flop_per_byte:Q", scale=xs, title=x_title),
        y=alt.Y(f"{y_name}:Q", scale=ys, title=y_title.replace("Attainable", "Attainable / achieved")),
        color=alt.Color("dtype:N", title="roof (data type)"),
        tooltip=[alt.Tooltip("dtype:N"), alt.Tooltip(f"{y_name}:Q", title=y_title, format=".4g")])
    ridge, m = _with_display(alt.Chart(ridges), "peak_flop_per_s")
    p_name, p_title = m["peak_flop_per_s"]
    ridge = ridge.mark_point(shape="diamond", size=90, filled=True).encode(
        x=alt.X("ridge_intensity_flop_per_byte:Q"), y=alt.Y(f"{p_name}:Q"), color=alt.Color("dtype:N"),
        tooltip=[alt.Tooltip("dtype:N"),
                 alt.Tooltip("ridge_intensity_flop_per_byte:Q", title="ridge (FLOP/byte)", format=".4g"),
                 alt.Tooltip(f"{p_name}:Q", title=p_title, format=".4g")])
    pts = ops[(ops["flop"] > 0) & (ops["time_s"] > 0)].copy() if len(ops) else ops
    dots, m = _with_display(alt.Chart(pts), "achieved_flop_per_s", "total_time_s")
    a_name, a_title = m["achieved_flop_per_s"]
    t_name, t_title = m["total_time_s"]
    dots = dots.mark_circle(opacity=0.8).encode(
        x=alt.X("intensity_flop_per_byte:Q"), y=alt.Y(f"{a_name}:Q"),
        shape=alt.Shape("bound:N", title="bound by"), size=alt.Size(f"{t_name}:Q", title=t_title, legend=None),
        tooltip=[alt.Tooltip("op:N"), alt.Tooltip("block:N"), alt.Tooltip("bound:N"),
                 alt.Tooltip("intensity_flop_per_byte:Q", title="intensity (FLOP/byte)", format=".4g"),
                 alt.Tooltip(f"{a_name}:Q", title=a_title, format=".4g"),
                 alt.Tooltip(f"{t_name}:Q", title=t_title, format=".4g")])
    return alt.layer(line, ridge, dots).properties(width=WIDTH, height=HEIGHT, title=_title(title, "Roofline"))


def engine_breakdown(engines: pd.DataFrame, title: str = "") -> alt.Chart:
    """engines: block, engine, busy_s (count x per-engine time summed over the block's operators)."""
    ch, m = _with_display(alt.Chart(engines), "busy_s")
    name, t = m["busy_s"]
    return ch.mark_bar().encode(
        y=alt.Y("block:N", title="block", sort="-x"), x=alt.X(f"sum({name}):Q", title=t, stack="zero"),
        color=alt.Color("engine:N", title="engine"),
        tooltip=[alt.Tooltip("block:N"), alt.Tooltip("engine:N"),
                 alt.Tooltip(f"sum({name}):Q", title=t, format=".4g")],
    ).properties(width=WIDTH, height=alt.Step(28), title=_title(title, "Time per engine (busy time; engines overlap)"))


def memory_stack(components: pd.DataFrame, totals: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """components: label, component, footprint_bytes; totals: label, capacity_bytes, total_bytes, fits."""
    bars, m = _with_display(alt.Chart(components[components["footprint_bytes"] > 0]), "footprint_bytes")
    b_name, b_title = m["footprint_bytes"]
    bars = bars.mark_bar().encode(
        x=alt.X("label:N", title=None, sort=None, axis=alt.Axis(labelAngle=-30, labelLimit=220)),
        y=alt.Y(f"sum({b_name}):Q", title=b_title.replace("Footprint", "Memory per device")),
        color=alt.Color("component:N", title="component"),
        tooltip=["label:N", "component:N", alt.Tooltip(f"sum({b_name}):Q", title=b_title, format=".4g")])
    cap, m = _with_display(alt.Chart(totals), "capacity_bytes")
    c_name, c_title = m["capacity_bytes"]
    fit = cap.mark_tick(color="black", thickness=3, size=40).encode(
        x=alt.X("label:N", sort=None), y=f"{c_name}:Q",
        tooltip=["label:N", alt.Tooltip(f"{c_name}:Q", title="HBM capacity (GiB)", format=".4g"), "fits:N"])
    return alt.layer(bars, fit).properties(width=WIDTH, height=HEIGHT,
                                           title=_title(title, "Memory per device (black tick: HBM capacity)"))


def collective_times(df: pd.DataFrame, title: str = "") -> alt.Chart:
    """df: size_bytes, time_s, series (topology / algorithm label), collective."""
    ch, m = _with_display(alt.Chart(df), "time_s")
    t_name, t_title = m["time_s"]
    s_name, s_title = "size_kib", "Message size per chip (KiB)"
    ch = ch.transform_calculate(size_kib=f"datum['size_bytes'] / {units.KiB!r}")
    base = ch.mark_line(point=True).encode(
        x=alt.X(f"{s_name}:Q", scale=alt.Scale(type="log"), title=s_title),
        y=alt.Y(f"{t_name}:Q", scale=alt.Scale(type="log"), title=t_title),
        color=alt.Color("series:N", title="system (topology): algorithm", legend=alt.Legend(labelLimit=400)),
        tooltip=["series:N", "collective:N", alt.Tooltip(f"{s_name}:Q", title=s_title, format=".4g"),
                 alt.Tooltip(f"{t_name}:Q", title=t_title, format=".4g")])
    if "collective" in df and df["collective"].nunique() > 1:
        return base.properties(width=WIDTH // 2, height=HEIGHT // 1.3).facet(
            facet=alt.Facet("collective:N", title=None), columns=2).properties(title=_title(title, "Collective time"))
    return base.properties(width=WIDTH, height=HEIGHT, title=_title(title, "Collective time vs message size"))


def frontier(df: pd.DataFrame, points: pd.DataFrame | None = None, y: str = "tokens_per_mw",
             x: str = "tokens_per_s_per_user", color: str = "system", title: str = "") -> alt.LayerChart:
    """df: one row per configuration with x, y, color and batch; points: claim marks with x, y, label."""
    ch, m = _with_display(alt.Chart(df), x, y)
    x_name, x_title = m[x]
    y_name, y_title = m[y]
    line = ch.mark_line(point=True).encode(
        x=alt.X(f"{x_name}:Q", title=x_title, scale=alt.Scale(type="log")),
        y=alt.Y(f"{y_name}:Q", title=y_title, scale=alt.Scale(type="log")),
        color=alt.Color(f"{color}:N", title=color), order=f"{x}:Q",
        tooltip=[f"{color}:N", "batch:Q", alt.Tooltip(f"{x_name}:Q", title=x_title, format=".4g"),
                 alt.Tooltip(f"{y_name}:Q", title=y_title, format=".4g")])
    layers = [line]
    if points is not None and len(points):
        pch, pm = _with_display(alt.Chart(points), x, y)
        layers.append(pch.mark_point(shape="cross", size=160, color="black", strokeWidth=2).encode(
            x=f"{pm[x][0]}:Q", y=f"{pm[y][0]}:Q",
            tooltip=[alt.Tooltip("label:N", title="seed claim"), alt.Tooltip(f"{pm[x][0]}:Q", title=pm[x][1],
                                                                               format=".4g"),
                     alt.Tooltip(f"{pm[y][0]}:Q", title=pm[y][1], format=".4g")]))
        layers.append(pch.mark_text(dx=8, dy=-8, align="left").encode(x=f"{pm[x][0]}:Q", y=f"{pm[y][0]}:Q",
                                                                         text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT,
                                         title=_title(title, "Interactivity vs throughput"))


def claims_ratios(curves: pd.DataFrame, metric: str, quote: float, title: str = "") -> alt.LayerChart:
    """S1-S3 as curves (claims/serving/readings.py: curves): the Trn3 / Trn2 ratio of `metric` against its x, one
    line per reading (Trn2 recipe / power basis), the quoted ratio as a rule."""
    df = curves[curves["metric"] == metric].assign(
        reading=lambda d: d["trn2_recipe"] + " / " + d["power_basis"])
    df = df[np.isfinite(df["ratio"])]
    x_title = "concurrent users per UltraServer" if df["x_is"].iloc[0] != "tokens_per_s_per_user" else \
        "interactivity (tokens/s per user)"
    line = alt.Chart(df).mark_line().encode(
        x=alt.X("x:Q", title=x_title, scale=alt.Scale(type="log")),
        y=alt.Y("ratio:Q", title=f"Trn3 / Trn2 ({metric})", scale=alt.Scale(type="log")),
        color=alt.Color("reading:N", title="Trn2 recipe / power basis"),
        tooltip=["reading:N", alt.Tooltip("x:Q", format=".4g"), alt.Tooltip("ratio:Q", format=".3g")])
    rule = alt.Chart(pd.DataFrame({"quote": [quote]})).mark_rule(strokeDash=[4, 4], color="black").encode(y="quote:Q")
    return alt.layer(line, rule).properties(width=WIDTH, height=HEIGHT,
                                            title=_title(title, f"{metric}: quoted {quote:g}x"))


def spec_ratios(df: pd.DataFrame, title: str = "") -> alt.Chart:
    """df: label (metric), system, ratio."""
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("label:N", title=None), x=alt.X("ratio:Q", title="ratio to the first system"),
        color=alt.Color("system:N"), yOffset="system:N",
        tooltip=["label:N", "system:N", alt.Tooltip("ratio:Q", format=".3g")],
    ).properties(width=WIDTH, height={"step": 9, "for": "offset"}, title=_title(title, "Generation ratios"))


def metric_bars(df: pd.DataFrame, column: str, title: str = "", facet: str = "case") -> alt.Chart:
    """df: system, `facet`, `column` (SI), status marker column optional."""
    ch, m = _with_display(alt.Chart(df), column)
    name, t = m[column]
    base = ch.mark_bar().encode(
        x=alt.X(f"{name}:Q", title=t), y=alt.Y("system:N", title=None, sort=None), color=alt.Color("system:N",
                                                                                                   legend=None),
        tooltip=["system:N", alt.Tooltip(f"{name}:Q", title=t, format=".4g")])
    if facet in df:
        return base.properties(width=WIDTH // 2, height=alt.Step(20)).facet(
            row=alt.Row(f"{facet}:N", title=None)).properties(title=title or t)
    return base.properties(width=WIDTH, height=alt.Step(22), title=title or t)


def plan_costs(plan: pd.DataFrame, title: str = "") -> alt.HConcatChart:
    """The capacity plan per system: $ per month (facility kW where no system has a price) beside chips; systems
    that cannot meet the SLA are left out (the plan's table says why)."""
    ok = plan[plan["feasible"].astype(bool)] if "feasible" in plan else plan.iloc[0:0]
    cost = "usd_per_month" if "usd_per_month" in ok and ok["usd_per_month"].notna().any() else "facility_power_peak_w"
    frame = ok[["system", cost, "chips"]].dropna()
    bars = [metric_bars(frame, column, facet="") for column in (cost, "chips")]
    return alt.hconcat(*[b.properties(width=WIDTH // 2) for b in bars]).properties(
        title=_title(title, "Capacity plan per system (systems that meet the SLA)"))


def scenario_changes(values: pd.DataFrame, title: str = "") -> alt.Chart:
    """Each scenario's change against the first, per figure with a number (values: scenario_compare's)."""
    df = values[values["change_frac"].notna() & values["value"].notna() & ~values["setup"].astype(bool)
                & (values["figure"] != "fits") & (values["scenario"] != values["scenario"].iloc[0])]
    df = df.assign(change_pct=100 * df["change_frac"].astype(float))
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("label:N", title=None, sort=None), x=alt.X("change_pct:Q", title="change against the first (%)"),
        color=alt.Color("scenario:N"), yOffset="scenario:N",
        tooltip=["scenario:N", "label:N", alt.Tooltip("change_pct:Q", title="change (%)", format="+.1f")],
    ).properties(width=WIDTH, height={"step": 14, "for": "offset"},
                 title=_title(title, f"Change against {values['scenario'].iloc[0]}"))


def sensitivity(df: pd.DataFrame, value: str = "elasticity", title: str = "") -> alt.Chart:
    """df: parameter, `value` (d ln result / d ln input)."""
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("parameter:N", sort="-x", title=None), x=alt.X(f"{value}:Q", title=value.replace("_", " ")),
        tooltip=list(df.columns)).properties(width=WIDTH, height=alt.Step(20), title=_title(title, "Sensitivity"))


def ttft_vs_load(df: pd.DataFrame, title: str = "") -> alt.Chart:
    """TTFT against load: the analytic line and the simulation's p50 and p99 (Altair, log y)."""
    long = pd.concat([
        pd.DataFrame({"load": df["load"], "ttft_ms": df[c] * 1e3, "series": name})
        for c, name in (("analytic_ttft_s", "analytic (steady state)"), ("sim_ttft_p50_s", "simulated p50"),
                        ("sim_ttft_p99_s", "simulated p99"))], ignore_index=True)
    return alt.Chart(long, title=title).mark_line(point=True).encode(
        x=alt.X("load:Q", title="offered load (share of the replica's capacity)", axis=alt.Axis(format="%")),
        y=alt.Y("ttft_ms:Q", title="TTFT (ms)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None), tooltip=["load", "series", alt.Tooltip("ttft_ms", format=".1f")],
    ).properties(width=460, height=280)


def queue_over_time(df: pd.DataFrame, title: str = "") -> alt.Chart:
    """Requests waiting and running across the deployment against time (simulation/metrics.queue_over_time)."""
    long = df.melt(id_vars=["time_s"], value_vars=["waiting", "running"], var_name="requests", value_name="count")
    return alt.Chart(long, title=title).mark_line().encode(
        x=alt.X("time_s:Q", title="simulated time (s)"), y=alt.Y("count:Q", title="requests"),
        color=alt.Color("requests:N", title=None), tooltip=["time_s", "requests", alt.Tooltip("count", format=".1f")],
    ).properties(width=460, height=240)


def to_svg(chart: alt.TopLevelMixin) -> str:
    vlc = extras.require("vl_convert")
    return vlc.vegalite_to_svg(chart.to_dict())


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    vlc = extras.require("vl_convert")
    return vlc.vegalite_to_png(chart.to_dict(), scale=scale)


def _diagonal(lo: float, hi: float) -> alt.Chart:
    """predicted = measured (solid) and +-40% (dashed), on log axes, from lo to hi."""
    diag = pd.DataFrame({"measured": [lo, hi] * 3, "predicted": [lo, hi, 1.4 * lo, 1.4 * hi, 0.6 * lo, 0.6 * hi],
                         "line": ["exact", "exact", "+40%", "+40%", "-40%", "-40%"]})
    axis = dict(scale=alt.Scale(type="log"))
    return alt.Chart(diag).mark_line(color="gray").encode(
        x=alt.X("measured:Q", **axis), y=alt.Y("predicted:Q", **axis), detail="line:N",
        strokeDash=alt.condition(alt.datum.line == "exact", alt.value([1, 0]), alt.value([4, 4])))


def validation_scatter(cases: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Predicted vs measured, one point per case (log-log: cases of every unit on one chart, so
    distance from the diagonal is the error ratio); dashed lines at +-40%, the p90 target."""
    df = cases.dropna(subset=["predicted"])
    lo, hi = float(min(df["measured"].min(), df["predicted"].min())), float(
        max(df["measured"].max(), df["predicted"].max()))
    axis = dict(scale=alt.Scale(type="log"))
    lines = _diagonal(lo, hi)
    pts = alt.Chart(df).mark_point(filled=True, size=45, opacity=0.75).encode(
        x=alt.X("measured:Q", title="measured (case's unit)", **axis),
        y=alt.Y("predicted:Q", title="predicted (same unit)", **axis),
        color=alt.Color("phase:N", title="phase"), shape=alt.Shape("hardware_family:N", title="hardware family"),
        tooltip=["case_id:N", "phase:N", "system:N", "metric:N", "unit:N", alt.Tooltip("measured:Q", format=".4g"),
                 alt.Tooltip("predicted:Q", format=".4g"), alt.Tooltip("error_frac:Q", format="+.1%"), "note:N"])
    return (lines + pts).properties(width=WIDTH, height=HEIGHT, title=_title(title, "Predicted vs measured"))


def fidelity_scatter(cases: pd.DataFrame, metric: str) -> alt.LayerChart:
    """Predicted vs measured serving cases of one metric (one unit per chart), log-log, by backend and
    mode; dashed lines at +-40%."""
    df = cases[cases["metric"].eq(metric)].dropna(subset=["predicted"])
    unit = str(df["unit"].iloc[0]) if len(df) else ""
    lo, hi = (float(min(df["measured"].min(), df["predicted"].min())),
              float(max(df["measured"].max(), df["predicted"].max()))) if len(df) else (1.0, 10.0)
    axis = dict(scale=alt.Scale(type="log"))
    lines = _diagonal(lo, hi)
    pts = alt.Chart(df).mark_point(filled=True, size=35, opacity=0.6).encode(
        x=alt.X("measured:Q", title=f"measured {metric} ({unit})", **axis),
        y=alt.Y("predicted:Q", title=f"predicted {metric} ({unit})", **axis),
        color=alt.Color("backend:N", title="backend"), shape=alt.Shape("mode:N", title="mode"),
        tooltip=["case_id:N", "system:N", "backend:N", "workload:N", "mode:N",
                 alt.Tooltip("measured:Q", format=".4g"), alt.Tooltip("predicted:Q", format=".4g"),
                 alt.Tooltip("error_frac:Q", format="+.1%")])
    return (lines + pts).properties(width=WIDTH, height=HEIGHT, title=f"{metric}: predicted vs measured")
