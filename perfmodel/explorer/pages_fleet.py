"""The explorer's fleet pages: the serving frontier, the capacity planner and one replica under load.

Does not: compute model quantities (cached.py calls perfmodel.report).
"""

from __future__ import annotations

import streamlit as st

from perfmodel import report
from perfmodel.explorer import cached as cc
from perfmodel.explorer.widgets import chart, downloads, shown
from perfmodel.report import charts, page_inputs, verdict


def page_serving(ctx: dict) -> None:
    st.subheader(f"Serving frontier: {ctx['workload_name']}")
    st.caption("Each line is a system's Pareto frontier over serving plans (tensor x attention-data parallel, "
               "expert parallel, data types) and concurrency: interactivity (tokens/s per user) against "
               "throughput, priced as the hardware family's serving engine runs them (vLLM on GPUs, NxD Inference "
               "on Trainium; column envelope: inside what measured deployments of it ran, or extrapolated); the "
               "roofline frontier (no engine) is the hardware's upper bound. Black crosses: the seed claims' "
               "reading points (S1-S3; gpt-oss-120b, 1k/1k).")
    page_inputs.ensure(st.session_state, "Serving")
    c1, c2, c3, c4, c5, c6 = st.columns(6)
    systems = c1.multiselect("Systems", ctx["catalog"]["systems"], key="srv_systems")
    isl = c2.number_input("Input tokens", step=256, key="srv_isl", **page_inputs.bounds("srv_isl"))
    osl = c3.number_input("Output tokens", step=256, key="srv_osl", **page_inputs.bounds("srv_osl"))
    y = c4.selectbox("Throughput", page_inputs.options("srv_y"), key="srv_y", format_func={
        "mw": "per MW (facility)", "chip": "per chip", "usd": "per dollar", "users": "users per UltraServer"}.get)
    grid = c5.selectbox("Plan grid", page_inputs.options("srv_grid"), key="srv_grid",
                        help="quick: tp <= 16, attention-DP <= 32, one stage, concurrency to 1024; "
                             "full: every plan of the scale-up domain (as the claims use; a few seconds per system)")
    frontiers = c6.selectbox("Frontier", page_inputs.options("srv_frontiers"), key="srv_frontiers", format_func={
        "engine": "engine (what engines deliver)", "both": "engine and roofline", "roofline": "roofline (no engine)"}.get)
    if not systems:
        st.info("Choose at least one system.")
        return
    df = cc.frontier(tuple(systems), ctx["workload"], ctx["whatif"], int(isl), int(osl), y, grid, frontiers)
    ycol = report.FRONTIER_Y[y]
    same = (ctx["workload"], int(isl), int(osl)) == tuple(report.CLAIM_SCENARIO.values())
    points = cc.claim_points(ycol) if same and not ctx["whatif"] else None
    chart(charts.frontier(df, points, y=ycol, color="curve"), "frontier", f"frontier_{ctx['workload_name']}_{y}")
    if not same:
        st.caption("The seed claims' points are drawn for gpt-oss-120b at 1024 input / 1024 output tokens.")
    elif not ctx["whatif"] and st.checkbox("S1-S3 by reading: the Trn3 / Trn2 ratios over the whole range "
                                           "(about 20 s the first time)", key="srv_readings"):
        claim_readings()
    st.dataframe(shown(df, ["system", "frontier", "engine", "envelope", "tp", "da", "ep", "pp", "concurrency",
                            "compute_dtype",
                            "expert_weights_dtype", "tokens_per_s_per_user", ycol, "ttft_s"]),
                 hide_index=True, key="srv_table")
    for cav in sorted(set(df.get("power_caveat", []))):
        st.caption(cav)
    downloads({"frontier": df}, f"frontier_{ctx['workload_name']}_{y}", "srv")


def claim_readings() -> None:
    """S1-S3 for every reading (Trn2 recipe, power basis): the table at the claims' point, the ratio curves."""
    from perfmodel.claims.serving import readings as serving_readings

    table, curves = cc.readings()
    st.dataframe(shown(table.drop(columns="reading")), hide_index=True, key="srv_readings_table")
    for metric, quote in serving_readings.CHARTED:
        chart(charts.claims_ratios(curves, metric, quote), f"readings_{metric}", f"claims_{metric.split()[0]}")
    st.caption("Readings: Trn2 at its best recipe, with the shipped MXFP4 experts upcast to BF16 (Trainium2 has "
               "no MX types; what the vLLM Neuron tutorial runs), or converted to FP8; power modelled from "
               "activity or all-in (provisioned at TDP). Dashed: the quoted ratio (S1 5x, AWS's 3x per chip, S3 6x).")
    downloads({"readings": table, "curves": curves}, "claims_readings", "readings")


def page_planner(ctx: dict) -> None:
    st.subheader(f"Capacity planner: {ctx['workload_name']}")
    st.caption("Demand and SLA in; per system the cheapest plan that meets the SLA (or the lowest power where "
               "no price exists), sized for the peak: fleet, facility power and $ per month (planner.py). Each plan "
               "is priced as the hardware family's serving engine runs it, inside what measured deployments of it "
               "ran where any plan meets the SLA (column envelope; 'extrapolated' otherwise, said in the note).")
    page_inputs.ensure(st.session_state, "Capacity planner")
    c1, c2, c3, c4 = st.columns(4)
    rps = c1.number_input("Requests per second", step=10.0, key="plan_rps", **page_inputs.bounds("plan_rps"))
    peak = c1.number_input("Peak / average", step=0.1, key="plan_peak", **page_inputs.bounds("plan_peak"))
    pct = c1.selectbox("Targets at", page_inputs.options("plan_pct"), key="plan_pct",
                       format_func=lambda p: "the steady state" if p == 0 else f"p{p}, verified by simulation")
    isl = c2.number_input("Input tokens", step=256, key="plan_isl", **page_inputs.bounds("plan_isl"))
    osl = c2.number_input("Output tokens", step=256, key="plan_osl", **page_inputs.bounds("plan_osl"))
    tpot = c3.number_input("SLA: TPOT at most (s)", step=0.005, format="%.3f", key="plan_tpot",
                           **page_inputs.bounds("plan_tpot"))
    ttft = c3.number_input("SLA: TTFT at most (s)", step=0.5, key="plan_ttft", **page_inputs.bounds("plan_ttft"))
    systems = c4.multiselect("Systems", ctx["catalog"]["systems"], key="plan_systems")
    grid = c4.selectbox("Plan grid", page_inputs.options("plan_grid"), key="plan_grid")
    modes = c3.multiselect("Serving modes", page_inputs.options("plan_modes"), key="plan_modes",
                           help="aggregated: prefill and decode on the same replicas; chunked: chunked prefill; "
                                "disaggregated: prefill workers apart from decode workers (xPyD); the cheapest wins")
    if not systems or not modes:
        st.info("Choose at least one system and one serving mode.")
        return
    with st.spinner("Planning" + (" and simulating each answer at the peak rate" if pct else "")):
        df = cc.plan(tuple(systems), ctx["workload"], ctx["whatif"], int(isl), int(osl), float(rps), float(tpot),
                     float(ttft), float(peak), grid, float(pct), tuple(modes))
    st.markdown(verdict.plan_recommendation(df, float(rps) * float(peak)))
    chart(charts.plan_costs(df), "plan", f"plan_{ctx['workload_name']}")
    answer = ["system", "feasible", "chips", "usd_per_month", "usd_per_million_output_tokens",
              "facility_power_peak_w", "ttft_s", "tokens_per_s_per_user", "engine", "envelope", "mode", "verified",
              f"sim_ttft_p{pct}_s",
              f"sim_tpot_p{pct}_s", "note"]
    st.dataframe(shown(df, [c for c in answer if c in df]), hide_index=True, key="plan_table")
    with st.expander("Every column of the plan"):
        st.dataframe(shown(df), hide_index=True, key="plan_detail")
    for cav in sorted(set(df.get("power_caveat", []))):
        st.caption(cav)
    downloads({"plan": df}, f"plan_{ctx['workload_name']}", "plan")


def page_under_load(ctx: dict) -> None:
    o = ctx["opts"]
    st.subheader(f"Under load: {ctx['workload_name']} on {ctx['system_name']}")
    st.caption(f"One replica of the scenario's plan (tp {o.tp}, attention-DP {o.da}, ep {o.ep}, pp {o.pp}, {o.dtype}) "
               "simulated request by request (simulation/, SimPy): continuous batching, paged KV, preemption; every "
               "step priced by the steady state's step model. Tail latency and the queue the steady state omits.")
    page_inputs.ensure(st.session_state, "Under load")
    c1, c2, c3, c4 = st.columns(4)
    kind = c1.selectbox("Arrivals", page_inputs.options("ul_kind"), key="ul_kind",
                        format_func={"poisson": "Poisson", "gamma": "bursty (gamma, cv 2)",
                                     "closed": "closed loop of clients"}.get)
    rate = c1.number_input("Requests per second", step=1.0, key="ul_rate", **page_inputs.bounds("ul_rate"))
    clients = c1.number_input("Clients (closed loop)", step=8, key="ul_clients", **page_inputs.bounds("ul_clients"))
    isl = c2.number_input("Input tokens", step=256, key="ul_isl", **page_inputs.bounds("ul_isl"))
    osl = c2.number_input("Output tokens", step=64, key="ul_osl", **page_inputs.bounds("ul_osl"))
    mode = c3.selectbox("Scheduling", page_inputs.options("ul_mode"), key="ul_mode",
                        format_func={"aggregated": "prefill first", "chunked": "chunked prefill"}.get)
    n = c3.number_input("Requests", step=1000, key="ul_n", **page_inputs.bounds("ul_n"))
    ttft = c4.number_input("SLA: TTFT (s)", step=0.5, key="ul_ttft", **page_inputs.bounds("ul_ttft"))
    tpot = c4.number_input("SLA: TPOT (s)", step=0.01, format="%.3f", key="ul_tpot", **page_inputs.bounds("ul_tpot"))
    with st.spinner(f"Simulating {int(n):,} requests"):
        out = report.under_load(ctx["system"], ctx["workload"], o, ctx["whatif"], kind, float(rate), int(clients),
                                int(isl), int(osl), int(n), mode, float(ttft), float(tpot))
    c1, c2 = st.columns([1, 2])
    c1.dataframe(shown(out["summary"]), hide_index=True, key="ul_summary")
    with c2:
        chart(charts.queue_over_time(out["queue"], "Requests waiting and running"), "ul_queue", "under_load_queue")
    downloads({"summary": out["summary"], "queue": out["queue"], "requests": out["requests"]},
              f"under_load_{ctx['workload_name']}", "ul")
