"""CLI: `plan` (thin over serving/planner, simulation/verify and serving/training_run).

    perfmodel plan --demand workloads/demands/chat-gpt-oss-120b.toml --systems trn2-ultraserver trn3-ultraserver
    perfmodel plan --demand workloads/demands/chat-p99-gpt-oss-120b.toml \
        --systems trn2-ultraserver trn3-ultraserver p5e.48xlarge p6-b200.48xlarge gb200-nvl72
    perfmodel plan --train --workload llama-3-70b --tokens 15e12 --hardware trn2-ultraserver --days 90

A demand with a percentile (or --percentile P) is verified: each system's answer is simulated at the peak rate
and replicas are added until the percentile's TTFT and TPOT hold (simulation/verify.py).
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from perfmodel.cli import intervals
from perfmodel.cli.common import (
    add_chart_option,
    add_engine_option,
    add_output_options,
    count,
    lengths_arg,
    positive,
    progress_bar,
)
from perfmodel.cli.serve import _emit

# the answer first (what it costs, how many chips, whether it meets the SLA), the plan that gives it after:
# a narrow terminal shows the first columns that fit (report/fit_columns.py)
PLAN_COLS = ("system", "feasible", "chips", "usd_per_month", "usd_per_million_output_tokens", "facility_power_peak_w",
             "ttft_s", "time_per_output_token_s", "engine", "envelope", "instances", "scaleups", "mode", "tp", "da",
             "ep", "pp",
             "compute_dtype", "expert_weights_dtype", "concurrency", "capacity_concurrency", "replicas",
             "prefill_workers", "facility_power_peak_at_low_tdp_w", "facility_power_peak_at_high_tdp_w",
             "price_status", "note")
TRAIN_COLS = ("system", "chips", "days", "compute_days", "goodput_frac", "interrupts", "usd_per_run", "energy_mwh",
              "tokens_per_s", "mfu_frac", "step_time_s",
              "tp", "pp", "dp", "ep", "microbatches", "recompute", "bubble_frac", "facility_power_w", "note")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="capacity plan: demand + SLA -> best config, chips, instances, MW, $/month "
                                    "per system; or --train: chips and days to train N tokens",
                       description="Serving: from a demand (requests/s, length distributions, TTFT / TPOT targets, "
                                   "peak-to-average factor) to the best configuration per system. Training (--train): "
                                   "chips and days for N tokens.")
    p.add_argument("--demand", metavar="FILE", help="TOML demand file ([demand] table; see workloads/demands/)")
    p.add_argument("--systems", nargs="+", metavar="NAME", default=["trn2-ultraserver", "trn3-ultraserver"],
                   help="systems to compare side by side")
    p.add_argument("--workload", default="gpt-oss-120b", metavar="NAME")
    p.add_argument("--rps", type=positive(), metavar="R", help="average requests per second")
    p.add_argument("--input", type=lengths_arg, default=1024, metavar="N|L:W,..", help="input tokens (or distribution)")
    p.add_argument("--output", type=lengths_arg, default=1024, metavar="N|L:W,..",
                   help="output tokens (or distribution)")
    p.add_argument("--ttft", type=positive(), default=2.0, metavar="S", help="TTFT target, seconds (default 2)")
    p.add_argument("--tpot", type=positive(), default=0.05, metavar="S",
                   help="time per output token target (default 0.05)")
    p.add_argument("--peak-factor", type=positive(1e3), default=1.5, metavar="F",
                   help="peak-to-average factor (default 1.5)")
    p.add_argument("--objective", choices=("cost", "power", "chips"), default="cost")
    p.add_argument("--whole-ultraserver", action="store_true", help="bill whole UltraServers, not instances")
    p.add_argument("--mode", nargs="+", choices=("aggregated", "chunked", "disaggregated"), default=["aggregated"])
    p.add_argument("--train", action="store_true", help="training plan instead of serving")
    p.add_argument("--tokens", type=positive(), metavar="N", help="training tokens (with --train)")
    p.add_argument("--hardware", metavar="NAME", help="system for --train (default: the first of --systems)")
    p.add_argument("--chips", type=count(), metavar="N", help="training chip count (with --train)")
    p.add_argument("--days", type=positive(), metavar="D", help="training deadline in days (with --train)")
    p.add_argument("--seq", type=count(1, "MAX_SEQ_TOKENS"), default=4096, metavar="N",
                   help="training sequence length (default 4096)")
    p.add_argument("--max-replica-chips", type=count(1, "MAX_CHIPS"), default=0, metavar="N",
                   help="largest replica: replicas up to N chips, spanning whole scale-up domains over the scale-out "
                        "network (default: the larger of the domain and 64)")
    p.add_argument("--max-fleet-chips", type=count(1, "MAX_CHIPS"), default=0, metavar="N",
                   help="a fleet needing more chips is answered 'no fleet' (default 2,000,000: about what one buyer "
                        "could plausibly obtain; planner.FLEET_CHIPS)")
    p.add_argument("--trace", metavar="CSV", help="a request trace (arrival_s, input_tokens, output_tokens) as the "
                   "demand: its rate and length distributions, with --workload, --ttft, --tpot and --percentile")
    p.add_argument("--percentile", type=positive(99.9), metavar="P",
                   help="the targets hold at this percentile of requests (e.g. 99: MLPerf Server's p99), checked by "
                        "simulating each answer at the peak rate and adding replicas until they hold (default: the "
                        "demand file's, else the steady state's values)")
    p.add_argument("--no-verify", action="store_true", help="with a percentile: skip the simulation (analytic only)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_engine_option(p)
    intervals.add_interval_option(p)
    p.add_argument("--confidence", type=intervals.level, default=0, metavar="LEVEL",
                   help="size each fleet so the SLA holds at the pessimistic end of this interval (e.g. 0.9): the "
                        "targets tightened and the demand raised by the answer's interval, the plan run again; the "
                        "fleet at the estimate beside it (column chips_at_estimate)")
    add_output_options(p)
    add_chart_option(p, "$ per month and chips per system (serving plans)")
    p.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    from perfmodel.catalog import system_inputs, workload_refs
    from perfmodel.serving import planner, training_run

    if args.train:
        from perfmodel import catalog

        if not args.tokens:
            raise ValueError("--train needs --tokens N")
        system = catalog.load_system(args.hardware or args.systems[0], replaced=args.replaced)
        arch = workload_refs.load(args.workload)
        per = system.node.chips
        if args.chips and args.chips % per:  # chips are bought by the instance: a fraction of one is no fleet
            raise ValueError(f"--chips {args.chips}: {system.name} comes in instances of {per} chips; give a multiple "
                             f"of {per} ({args.chips // per * per or per} or {(args.chips // per + 1) * per})")
        df = training_run.plan_training(system, arch, args.tokens, chips=args.chips, days=args.days, seq_len=args.seq)
        _emit(df, args, f"Training {arch.name} on {system.display_name}: {args.tokens:.3g} tokens", "plan_train",
              cols=TRAIN_COLS)
        return 0
    if args.demand:
        from perfmodel.catalog import demand_files

        table, name = demand_files.read(args.demand)  # the file read here, at the edge
        demand = planner.Demand.from_dict(table, name=name, where=f"{args.demand}: field demand.")
    elif args.trace:
        from perfmodel.catalog import trace_files
        from perfmodel.simulation import traffic

        positions = workload_refs.load(args.workload).max_position_embeddings if args.workload else None
        reqs = traffic.requests_of(trace_files.read(args.trace, positions))  # the file read here, at the edge
        demand = traffic.demand_from_trace(reqs, Path(args.trace).stem, args.workload, args.ttft, args.tpot,
                                           args.percentile or 99.0, args.peak_factor, where=f"{args.trace}: ")
    else:
        if args.rps is None:
            raise ValueError("give --demand FILE or --rps R (with --input/--output/--ttft/--tpot)")
        demand = planner.Demand.from_dict({"workload": args.workload, "requests_per_s": args.rps,
                                           "input_tokens": args.input, "output_tokens": args.output,
                                           "ttft_s": args.ttft, "tpot_s": args.tpot,
                                           "peak_to_average": args.peak_factor})
    if args.percentile:
        demand = dataclasses.replace(demand, percentile=float(args.percentile))
        demand.validate("--percentile: demand field ")
    opts = planner.PlanOptions(modes=tuple(args.mode), objective=args.objective,
                               whole_scaleup=args.whole_ultraserver, max_replica_chips=args.max_replica_chips,
                               max_fleet_chips=args.max_fleet_chips)
    # every input of the answer resolved here, once: the model, each system with its calibration and engine
    arch = workload_refs.load(demand.workload)
    systems = [system_inputs.resolve(name, args.engine, replaced=args.replaced) for name in args.systems]
    with progress_bar(f"planning {len(args.systems)} systems", not args.no_progress) as cb:
        df = planner.plan_serving(demand, arch, systems, opts, progress=cb)
    cols, at, sized = PLAN_COLS, "", ""
    if args.confidence:
        df, sized = _confident(df, demand, arch, systems, opts, args.confidence)
        cols = cols[:3] + ("chips_at_estimate",) + cols[3:]
    if demand.percentile and not args.no_verify:
        from perfmodel.simulation import verify

        with progress_bar(f"simulating {len(args.systems)} answers at the peak rate", not args.no_progress) as cb:
            df = verify.verify_plan(df, demand, arch, systems, opts, progress=cb)
        p = f"p{demand.percentile:g}"
        cols, at = cols[:-1] + ("verified", "analytic_replicas", f"sim_ttft_{p}_s", f"sim_tpot_{p}_s",
                                "verify_note", "note"), f" at {p}, verified by simulation"
    if args.interval and len(df):  # each system's answer with its error bars, from that system's regime
        import pandas as pd

        by = {s.name: s.system for s in systems}
        df = pd.concat([intervals.attach(df.iloc[[i]], by[name], arch, args) for i, name in enumerate(df["system"])],
                       ignore_index=True)
    from perfmodel.report import charts, verdict

    words = verdict.plan_recommendation(df, demand.requests_per_s * demand.peak_to_average).replace("**", "") \
        + sized + "\n" if args.format in ("table", "md") else ""
    _emit(df, args, f"{words}Capacity plan: {demand.name} ({demand.workload}, {demand.requests_per_s:g} req/s, "
                    f"TTFT <= {demand.ttft_s:g} s, TPOT <= {demand.tpot_s * 1e3:g} ms{at})", f"plan_{demand.name}",
          {"demand": demand.as_dict()}, cols=cols, chart=lambda: charts.plan_costs(df))
    return 0


def _confident(df, demand, arch, systems, opts, level: float):
    """Each feasible answer planned again for the SLA to hold at the pessimistic end of its `level` interval
    (serving/confidence.py), with the fleet at the estimate beside it; and the sentence that says both."""
    import math

    import pandas as pd

    from perfmodel.catalog import interval_files
    from perfmodel.serving import confidence, error_bars, planner

    table, by, rows, said = interval_files.load(), {s.name: s for s in systems}, [], []
    for _, r in df.iterrows():
        if not bool(r.get("feasible", False)):
            rows.append({**r.to_dict(), "chips_at_estimate": math.nan})
            continue
        inp = by[r["system"]]
        est = error_bars.attach(pd.DataFrame([r]), inp.system, arch, table, level).iloc[0]
        k = confidence.factors(est)
        new = planner.plan_serving(confidence.tightened(demand, est), arch, [inp], opts).iloc[0].to_dict()
        new.update(chips_at_estimate=r["chips"], sized_for=(
            f"the SLA at the {level:.0%} interval's pessimistic end: TTFT x{k['ttft']:.2f}, TPOT x{k['tpot']:.2f}, "
            f"throughput / {k['throughput']:.2f}"))
        rows.append(new)
        said.append(f"{r['system']} {int(new['chips']):,} chips ({int(r['chips']):,} at the estimate)"
                    if new.get("feasible") else f"{r['system']}: no plan meets it ({int(r['chips']):,} chips at "
                                                f"the estimate)")
    return pd.DataFrame(rows), (f"\nFor the SLA to hold at the pessimistic end of the {level:.0%} interval: "
                                + "; ".join(said) + "." if said else "")
