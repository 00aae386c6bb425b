"""The explorer's pages about one scenario: the hardware's spec sheet, the roofline, memory, collectives and the
formulas with their sensitivity.

Does not: compute model quantities (cached.py calls perfmodel.report).
"""

from __future__ import annotations

import math

import streamlit as st

from perfmodel.core import units
from perfmodel.explorer import cached as cc
from perfmodel.explorer.widgets import RUNNING_ONLY, chart, downloads, feasibility_notice, metrics, shown
from perfmodel.report import charts, export, page_inputs


def page_hardware(ctx: dict) -> None:
    st.subheader(f"Spec sheet: {ctx['system_name']}")
    st.caption("Every value as the source writes it, the SI value, its status (published, derived, estimated, "
               "projected; 'assumed' marks a what-if override) and its source.")
    sheet = cc.spec_sheet(ctx["system"], ctx["whatif"])
    st.dataframe(sheet, hide_index=True, key="spec_table")
    st.subheader("Generation ratios")
    page_inputs.ensure(st.session_state, "Hardware")
    chosen = st.multiselect("Systems (ratios to the first)", ctx["catalog"]["systems"], key="hw_systems")
    level = st.radio("Level", page_inputs.options("hw_level"), horizontal=True, key="hw_level")
    if len(chosen) < 2:
        st.info("Choose two or more systems.")
        return
    table, ratios = cc.compare(tuple(chosen), level)
    st.dataframe(table, hide_index=True, key="ratio_table")
    chart(charts.spec_ratios(ratios, title=f"Ratio to {chosen[0]} per {level}"), "ratios", f"ratios_{level}")
    downloads({"spec_sheet": sheet, "ratios": ratios}, f"specs_{ctx['system_name']}", "hw")


def page_roofline(ctx: dict) -> None:
    res = ctx["result"]()
    st.subheader(f"Roofline: {res['display_name']}, {ctx['workload_name']} {ctx['opts'].phase}")
    f = feasibility_notice(ctx, res, "Times are as if it fit; throughput, tokens per MW and cost are not shown. "
                                     "The Memory page gives the fewest chips that hold it.")
    if not f["valid"]:
        return
    summary = res["summary"]
    metrics(summary, ctx["opts"].phase, hide=() if f["fits"] else RUNNING_ONLY)
    row = summary.iloc[0]
    missing = [export.pretty_name(c)[0] for c in ("tokens_per_mw", "usd_per_million_tokens")
               if not math.isfinite(float(row.get(c, math.nan)))]
    if f["fits"] and missing:
        st.caption(f"{' and '.join(missing)} not shown: {row.get('economics_note') or 'no power or price input'}")
    ridge = shown(res["ridges"], ["dtype", "peak_flop_per_s", "hbm_bandwidth_bytes_per_s",
                                  "ridge_intensity_flop_per_byte"])
    st.caption("Ridge points (FLOP/byte where the data type's peak meets the HBM roof): " + "; ".join(
        f"{r[0]} {r[3]}" for r in ridge.itertuples(index=False)))
    chart(charts.roofline(res["ops"], res["roofs"], res["ridges"]), "roofline", ctx["name"] + "_roofline")
    chart(charts.engine_breakdown(res["engines"]), "engines", ctx["name"] + "_engines")
    st.dataframe(shown(res["bounds"]), hide_index=True, key="bounds_table")
    st.dataframe(shown(res["ops"], ["op", "block", "pass", "count", "flop", "intensity_flop_per_byte",
                                    "tensor_s", "vector_s", "scalar_s", "memory_s", "comm_s", "time_s",
                                    "total_time_s", "bound", "achieved_flop_per_s"]), hide_index=True,
                 key="ops_table")
    downloads(res["sheets"], ctx["name"], "roofline", main="per_operator")


def page_memory(ctx: dict) -> None:
    res = ctx["result"]()
    st.subheader(f"Memory per device: {ctx['workload_name']} {ctx['opts'].phase}")
    if not feasibility_notice(ctx, res, "Min chips below: the fewest chips that hold it.")["valid"]:
        return
    page_inputs.ensure(st.session_state, "Memory")  # the scenario's system is always first (below)
    others = st.multiselect("Compare on", ctx["catalog"]["systems"], key="mem_systems")
    systems = tuple(dict.fromkeys([ctx["system"], *others]))
    comps, totals = cc.memory_compare(systems, ctx["workload"], ctx["opts"], ctx["whatif"])
    chart(charts.memory_stack(comps, totals), "memory", ctx["name"] + "_memory")
    st.dataframe(shown(totals, ["label", "total_bytes", "capacity_bytes", "headroom_bytes", "fits", "min_chips",
                                "min_instances", "min_fit_plan"]), hide_index=True, key="mem_table")
    if res["fit_error"]:
        st.warning(res["fit_error"])
    downloads({"totals": totals, "components": comps, **res["sheets"]}, ctx["name"] + "_memory", "memory")


def page_collectives(ctx: dict) -> None:
    st.subheader("Collective time vs message size")
    page_inputs.ensure(st.session_state, "Collectives")
    c1, c2, c3 = st.columns(3)
    systems = c1.multiselect("Systems (topologies)", ctx["catalog"]["systems"], key="coll_systems")
    names = c2.multiselect("Collectives", page_inputs.options("coll_names"), key="coll_names")
    group = c3.number_input("Group (chips)", key="coll_group", **page_inputs.bounds("coll_group"))
    c4, c5 = st.columns([2, 1])
    algs = c4.multiselect("Algorithms", page_inputs.options("coll_algs"), key="coll_algs",
                          help="auto: the fastest algorithm at each size")
    launch = c5.selectbox("Call", page_inputs.options("coll_launch"), key="coll_launch",
                          help="in-graph: inside a compiled graph (collective_fixed_latency per call); host: "
                               "launched one call at a time like nccl-tests / nccom-test; eager: through "
                               "torch.distributed with the device waiting on each call (+ framework_call_overhead)")
    if not systems or not names or not algs:
        st.info("Choose at least one system, collective and algorithm.")
        return
    df = cc.collectives(tuple(systems), tuple(names), int(group), units.KiB, units.GiB, tuple(algs), ctx["whatif"],
                     launch)
    chart(charts.collective_times(df), "collectives", f"collectives_g{group}")
    st.dataframe(shown(df, ["series", "collective", "size_bytes", "time_s", "chosen_algorithm", "crosses"]),
                 hide_index=True, key="coll_table")
    downloads({"collectives": df}, f"collectives_g{group}", "coll")


def page_formulas(ctx: dict) -> None:
    st.subheader(f"Formulas: {ctx['workload_name']} {ctx['opts'].phase}")
    ops, symbols = cc.formulas(ctx["workload"], ctx["opts"].phase)
    op = st.selectbox("Operator", list(ops["op"]), key="formula_op")
    row = ops[ops["op"] == op].iloc[0]
    for label, col in (("count", "count_latex"), ("FLOPs", "flop_latex"), ("HBM bytes", "hbm_bytes_latex"),
                       ("time", "time_latex")):
        st.markdown(f"**{label}**")
        st.latex(row[col])
    with st.expander("Symbols"):
        st.dataframe(symbols, hide_index=True)
    st.subheader("Sensitivity of the result")
    page_inputs.ensure(st.session_state, "Formulas")
    column = st.selectbox("Result", page_inputs.options("sens_col"), key="sens_col")
    sens = cc.sensitivity(ctx["system"], ctx["workload"], ctx["opts"], ctx["whatif"], column)
    chart(charts.sensitivity(sens.head(15)[["parameter", "elasticity", "status"]]), "sensitivity",
          ctx["name"] + "_sensitivity")
    st.dataframe(sens, hide_index=True, key="sens_table")
    downloads({"sensitivity": sens, "formulas": ops}, ctx["name"] + "_formulas", "formulas")
