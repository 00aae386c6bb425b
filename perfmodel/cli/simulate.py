"""CLI: `simulate` (thin over perfmodel/simulation): a deployment under traffic, request by request.

    perfmodel simulate --hardware p5.48xlarge --workload llama-3.1-8b --rate 10 --replicas 2 --requests 20000
    perfmodel simulate --hardware trn2.48xlarge --workload gpt-oss-120b --tp 4 --traffic gamma --cv 3 --rate 2
    perfmodel simulate ... --traffic closed --clients 64 --engine vllm
    perfmodel simulate ... --mode disaggregated --prefill-workers 2 --decode-workers 3
    perfmodel simulate ... --load-sweep --chart ttft_vs_load.svg     analytic vs simulated from 10% to 90% load
    perfmodel simulate ... --draft eagle3-llama-3.1-8b --draft-tokens 3 --acceptance 0.865 0.725 0.635

Prints the run's summary (p50 / p90 / p99 TTFT, TPOT, e2e, throughput, goodput under --ttft / --tpot, queue,
preemption and prefix-cache figures, the simulation's own speed) and the deployment's service capacity
(simulation/capacity.py) with the utilisation offered / capacity; an offered rate above the capacity (the
queue grows without bound) is a one-line warning on stderr naming the replicas that would hold it.
--requests-out FILE writes one row per request (CSV). Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import sys

from perfmodel.cli import intervals
from perfmodel.cli.common import (
    add_output_options,
    chart_file,
    count,
    positive,
    print_result,
    progress_bar,
    write_chart,
    write_extra,
)
from perfmodel.cli.work_gate import add_yes_option, gate, simulate_seconds

SUMMARY = ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "e2e_p50_s",
           "e2e_p99_s", "request_rate_per_s", "output_tokens_per_s", "sla_met_share", "goodput_requests_per_s",
           "mean_running_per_worker", "mean_waiting_per_worker", "max_waiting_per_worker", "preempted_share",
           "prefix_hit_tokens_share", "requests", "measured_requests", "sim_wall_s", "sim_requests_per_min")
CAPACITY = ("offered_requests_per_s", "capacity_requests_per_s", "capacity_per_replica_requests_per_s",
            "capacity_per_prefill_requests_per_s", "capacity_per_decode_requests_per_s", "utilisation",
            "replicas_to_hold", "prefill_workers_to_hold", "decode_workers_to_hold")


def register(sub: argparse._SubParsersAction) -> None:
    from perfmodel.cli.serve import _common, _plan_args

    p = sub.add_parser("simulate", help="request-level simulation of a deployment under traffic: p50/p99 TTFT, TPOT, "
                                        "goodput, queues",
                       description="Discrete-event simulation (SimPy) of one serving deployment: continuous batching "
                                   "with a token budget, paged KV with preemption, prefix caching, replicas or xPyD "
                                   "workers; step times from the steady state's step model.")
    _common(p)
    _plan_args(p, many=False)
    g = p.add_argument_group("traffic")
    g.add_argument("--traffic", choices=("poisson", "gamma", "closed", "trace"), default=None,
                   help="arrival process (default: trace with --trace, else poisson)")
    g.add_argument("--rate", type=positive(1e7), default=1.0, metavar="R", help="requests/s (poisson, gamma)")
    g.add_argument("--cv", type=positive(20), default=2.0, metavar="CV",
                   help="gamma: coefficient of variation of the gaps (1 = Poisson; default 2)")
    g.add_argument("--clients", type=count(1, 10 ** 6), default=16, metavar="C", help="closed loop: clients")
    g.add_argument("--think", type=positive(1e6, lo_open=False), default=0.0, metavar="S",
                   help="closed loop: seconds between a response and the client's next request")
    g.add_argument("--trace", metavar="CSV", help="trace file: arrival_s, input_tokens, output_tokens[, prefix_id, "
                                                  "prefix_tokens]")
    g.add_argument("--requests", type=count(1, 10 ** 8), default=10_000, metavar="N", help="requests (default 10000)")
    g.add_argument("--length-ratio", type=positive(1), default=1.0, metavar="R",
                   help="lengths uniform in [R L, L] (default 1: exactly --input / --output)")
    g.add_argument("--prefix-share", type=positive(1, lo_open=False), default=0.0, metavar="F",
                   help="share of requests opening with a shared prefix (prefix caching)")
    g.add_argument("--prefix-tokens", type=count(0, "MAX_SEQ_TOKENS"), default=0, metavar="N")
    g.add_argument("--prefixes", type=count(1, 10 ** 6), default=1, metavar="G", help="distinct shared prefixes")
    g.add_argument("--seed", type=count(0, 2 ** 31), default=0, metavar="N")
    d = p.add_argument_group("deployment")
    d.add_argument("--replicas", type=count(1, 100_000), default=1, metavar="R", help="aggregated replicas")
    d.add_argument("--prefill-workers", type=count(1, 100_000), default=1, metavar="X", help="disaggregated: prefill")
    d.add_argument("--decode-workers", type=count(1, 100_000), default=1, metavar="Y", help="disaggregated: decode")
    d.add_argument("--max-running", type=count(1, "MAX_BATCH", auto=True), default="auto", metavar="S|auto",
                   help="running-sequence cap (auto, the default: the engine's, else 1024)")
    d.add_argument("--token-budget", type=count(1, "MAX_SEQ_TOKENS", auto=True), default="auto", metavar="B|auto",
                   help="tokens per step (auto, the default: the engine's, else 8192)")
    d.add_argument("--kv-blocks", type=count(1, 2 ** 31, auto=True), default="auto", metavar="N|auto",
                   help="KV pool per worker in 16-token blocks (auto, the default: what HBM leaves)")
    s = p.add_argument_group("results")
    s.add_argument("--ttft", type=positive(), default=2.0, metavar="S", help="SLA: TTFT target (goodput)")
    s.add_argument("--tpot", type=positive(), default=0.05, metavar="S", help="SLA: TPOT target (goodput)")
    s.add_argument("--load-sweep", action="store_true",
                   help="analytic (steady state) vs simulated TTFT and TPOT from 10%% to 90%% of a replica's capacity")
    s.add_argument("--chart", metavar="FILE", type=chart_file,
                   help="the run's queue over time, or with --load-sweep TTFT against load (.svg, .png or .html)")
    s.add_argument("--timeline-out", metavar="CSV", help="waiting and running requests over time (200 bins)")
    s.add_argument("--requests-out", metavar="CSV", help="one row per simulated request")
    add_yes_option(p)
    intervals.add_interval_option(p)
    add_output_options(p)
    p.set_defaults(func=cmd_simulate)


def _long(summary, bars=None):
    """The summary as (quantity, value) rows with units written out: times in ms, shares in %; a quantity with an
    interval in `bars` (the frame's <key>_low / <key>_high) shows it beside the value."""
    import pandas as pd

    from perfmodel.core import units

    rows = []
    for k in SUMMARY + CAPACITY:
        if k not in summary or (k in CAPACITY and summary[k] != summary[k]):  # NaN: not defined for this traffic
            continue
        v = float(summary[k])
        if k == "utilisation":
            text, name = f"{100 * v:.1f}%", "utilisation (offered / capacity)"
        elif k.endswith("_per_s") or k.endswith("_per_min"):
            text, name = f"{v:,.2f}", k.replace("_", " ")
        elif k.endswith("_s"):
            text, name = f"{v / units.MS:,.1f} ms", k[:-2].replace("_", " ")
            if bars is not None and f"{k}_low" in bars:
                text += f" ({bars[f'{k}_low'] / units.MS:,.1f}-{bars[f'{k}_high'] / units.MS:,.1f})"
        elif k.endswith("_share"):
            text, name = f"{100 * v:.1f}%", k[:-6].replace("_", " ") + " (share)"
        else:
            text, name = f"{v:,.1f}" if v != int(v) else f"{int(v):,}", k.replace("_", " ")
        rows.append({"quantity": name, "value": text})
    return pd.DataFrame(rows)


def cmd_simulate(args) -> int:
    import pandas as pd

    from perfmodel.cli.serve import _load, _overrides
    from perfmodel.cli.speculation_args import speculation
    from perfmodel.report import charts, export
    from perfmodel.serving.steady_state import Mix, ServingOptions
    from perfmodel.simulation import capacity, compare, deployment, metrics, traffic

    from perfmodel.catalog import neuron_stacks, serving_engines
    from perfmodel.serving import search

    args.traffic = args.traffic or ("trace" if args.trace else "poisson")
    if args.trace and args.traffic != "trace":  # a file given and silently not read would answer another question
        raise ValueError(f"--trace {args.trace} is read only with --traffic trace (given --traffic {args.traffic})")
    if args.trace and args.load_sweep:
        raise ValueError(f"--trace {args.trace}: --load-sweep draws its own Poisson loads; run the trace without it")
    system, arch, cal = _load(args.hardware, args.workload, _overrides(args), args.variant, args.replaced)
    args.dtype = args.dtype or search.native_dtype(system).value
    engine = serving_engines.resolve(args.engine, system)[0]
    ew = args.expert_dtype or (arch.expert_weight_dtype.value if arch.expert_weight_dtype else None)
    plan = deployment.one_plan(tp=args.tp, da=args.da, ep=args.ep, pp=args.pp, cp=args.cp, compute=args.dtype,
                               expert_weights=ew)
    if args.prefix_cached:
        raise ValueError("--prefix-cached is the steady state's; a simulation draws its prefixes: --prefix-share F "
                         "--prefix-tokens N --prefixes G")
    options = ServingOptions(mode=args.mode, chunk_tokens=args.chunk,
                             software=neuron_stacks.software(engine, system, args.replaced),
                             speculative=speculation(args))
    label = f"{system.display_name}: {arch.name}, tp{args.tp} da{args.da} ep{args.ep} pp{args.pp} {args.dtype}"
    if args.load_sweep:
        with progress_bar("simulating 7 loads", not args.no_progress) as cb:
            df = compare.load_sweep(system, arch, plan, Mix(args.input, args.output), options,
                                    n_requests=min(args.requests, 5000), cal=cal, progress=cb)
        if args.chart:
            write_chart(lambda: charts.ttft_vs_load(df, f"{label} ({args.mode}, {args.input}/{args.output} tokens)"),
                        args.chart, args.force)
        print_result(export.emit(df, args.format, f"{label}: analytic vs simulated by load", args.out,
                                 default_name="simulate_load_sweep"))
        return 0
    shapes = traffic.Shapes(input_tokens=((args.input, 1.0),), output_tokens=((args.output, 1.0),),
                            ratio=args.length_ratio, prefix_share=args.prefix_share,
                            prefix_tokens=args.prefix_tokens, prefixes=args.prefixes)
    traf = traffic.Traffic(args.traffic, rate=args.rate, cv=args.cv, clients=args.clients, think_s=args.think,
                           path=args.trace or "")
    layout = deployment.Layout(replicas=args.replicas, prefill=args.prefill_workers, decode=args.decode_workers,
                               max_running=args.max_running, token_budget=args.token_budget, kv_blocks=args.kv_blocks)
    trace = None
    if args.traffic == "trace" and args.trace:  # the file read here, at the edge
        from perfmodel.catalog import trace_files

        trace = traffic.requests_of(trace_files.read(args.trace, arch.max_position_embeddings))
    reqs = traffic.draw(traf, shapes, args.requests, args.seed, trace)
    workers = args.prefill_workers + args.decode_workers if args.mode == "disaggregated" else args.replicas
    gate("simulate", f"{len(reqs):,} requests over {workers:,} worker{'s' * (workers != 1)}",
         simulate_seconds(len(reqs), workers),
         yes=args.yes)
    cap = capacity.assess(system, arch, plan, traf, reqs, options, layout, cal)
    if cap.warning():
        print(f"perfmodel simulate: warning: {cap.warning()}", file=sys.stderr, flush=True)
    with progress_bar(f"simulating {len(reqs):,} requests", not args.no_progress):
        run = deployment.simulate(system, arch, plan, traf, shapes, args.requests, options, layout, seed=args.seed,
                                  cal=cal, reqs=reqs)
    summary = {**metrics.summarize(run, (args.ttft, args.tpot)), **cap.columns()}
    if args.requests_out:
        write_extra(args.requests_out, export.to_csv(metrics.requests_frame(run)), args.force)
    if args.timeline_out or args.chart:
        queue = metrics.queue_over_time(run)
        if args.timeline_out:
            write_extra(args.timeline_out, export.to_csv(queue), args.force)
        if args.chart:
            write_chart(lambda: charts.queue_over_time(queue, f"{label}: queue over time ({args.traffic}, {run.mode})"),
                        args.chart, args.force)
    df = pd.DataFrame([{"system": system.name, "workload": arch.name, "mode": run.mode, "traffic": args.traffic,
                        **{k: summary[k] for k in SUMMARY + CAPACITY if k in summary}}])
    caption = ""
    if args.interval:  # the step model's error bars on the simulated latencies (the intervals file read here)
        from perfmodel.catalog import interval_files
        from perfmodel.serving import error_bars

        df = error_bars.attach_simulated(df, system, arch, interval_files.load(), args.interval, engine)
    if args.format in ("table", "md"):  # one run: a column of quantities reads better than a 25-column row
        caption = f"INTERVALS: {df['interval_basis'].iloc[0]}" if args.interval else ""
        df = _long(summary, df.iloc[0] if args.interval else None)
    print_result(export.emit(df, args.format, f"{label}: simulated {args.traffic} traffic ({run.mode})", args.out,
                             meta={"capacity": cap.meta()}, default_name="simulate",
                             caption=caption if args.format in ("table", "md") else ""))
    return 0
