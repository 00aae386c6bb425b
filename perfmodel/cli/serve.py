"""CLI: `serve`, `pareto`, `sensitivity` (thin over serving / search / sensitivity; `plan` is cli/plan.py).

    perfmodel serve --hardware trn3-ultraserver --workload gpt-oss-120b --tp 1 --da 16 --ep 8 \
        --concurrency 256 1024 --dtype mxfp4
    perfmodel pareto --hardware trn2-ultraserver trn3-ultraserver --workload gpt-oss-120b --y mw
    perfmodel pareto --claims-chart                        the S4 chart data (claims_serving)
    perfmodel sensitivity --hardware trn3-ultraserver --workload gpt-oss-120b --da 16 --ep 8 \
        --concurrency 1024 --dtype mxfp4 --metric output_tokens_per_s_per_mw
    perfmodel sensitivity --claim S1

Every command prints a DataFrame through export.emit (--format table|md|csv|json|xlsx); power
outputs carry the chip-power caveat and cost outputs the price status in their rows and captions.
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from perfmodel.cli import intervals
from perfmodel.cli.calibrated_sets import claims_as_shipped
from perfmodel.cli.common import (
    add_chart_option,
    add_engine_option,
    add_output_options,
    chart_svg,
    count,
    dtype_arg,
    positive,
    print_result,
    progress_bar,
    write_chart,
    refuse_or_banner,
    with_banner,
)
from perfmodel.cli.speculation_args import speculation

if TYPE_CHECKING:  # pandas and the model are imported inside the functions (start-up time: see cli/parser.py)
    import pandas as pd

SET_HELP = ("what-if override, repeatable: a spec value (hbm_bandwidth, tensor_rate, link_bandwidth, tdp, price, "
            "...) or a calibration parameter (hbm_efficiency, power_idle_frac, pue, node_other_power, ...); VALUE "
            "sets ('6 TB/s', '0.8', '690 W') or scales ('x1.5', '+50%%'). 'perfmodel knobs --hardware NAME' lists them")
SUMMARY_COLS = ("system", "frontier", "mode", "engine", "envelope", "tp", "da", "ep", "pp", "concurrency", "compute_dtype",
                "expert_weights_dtype",
                "tokens_per_s_per_user", "ttft_s", "time_per_output_token_s", "e2e_latency_s",
                "output_tokens_per_s_per_chip", "output_tokens_per_s_per_scaleup", "concurrency_per_scaleup",
                "chip_power_w", "output_tokens_per_s_per_mw", "output_tokens_per_s_per_mw_at_low_power",
                "output_tokens_per_s_per_mw_at_high_power", "usd_per_million_output_tokens", "price_status", "kv_fits")



def _common(p: argparse.ArgumentParser, hardware_many: bool = False) -> None:
    g = p.add_argument_group("system and workload")
    if hardware_many:
        g.add_argument("--hardware", nargs="+", metavar="NAME", default=["trn2-ultraserver", "trn3-ultraserver"],
                       help="system keys (default: trn2-ultraserver trn3-ultraserver)")
    else:
        g.add_argument("--hardware", metavar="NAME", default="trn3-ultraserver",
                       help="system key (default trn3-ultraserver; perfmodel specs list)")
    g.add_argument("--workload", metavar="NAME", default="gpt-oss-120b", help="workload key (default gpt-oss-120b)")
    g.add_argument("--input", type=count(1, "MAX_SEQ_TOKENS"), default=1024, metavar="N",
                   help="input tokens per request (default 1024)")
    g.add_argument("--output", type=count(1, "MAX_SEQ_TOKENS"), default=1024, metavar="N",
                   help="output tokens per request (default 1024)")
    g.add_argument("--variant", choices=("nominal", "low", "high"), default="nominal",
                   help="projected systems (trn4-projected): the low or high end of the stated ranges")
    # ceilings catch a unit slip (kW as W, cents as dollars): no chip draws 1 MW, no instance costs $1M an hour
    g.add_argument("--tdp", type=positive(1e6), metavar="W",
                   help="chip power override in W (Trainium power is not published)")
    g.add_argument("--price", type=positive(1e6), metavar="USD",
                   help="node (instance) price per hour: reserved / negotiated")
    g.add_argument("--power-basis", choices=("modelled", "all-in"), default="modelled",
                   help="power of every chip: modelled from its engine activity (default) or all-in, provisioned at "
                        "TDP with the node and switch shares and PUE (InferenceX's tokens per all-in MW)")
    g.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides", help=SET_HELP)
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _plan_args(p: argparse.ArgumentParser, many: bool) -> None:
    g = p.add_argument_group("serving configuration")
    nargs = "+" if many else None
    g.add_argument("--tp", type=count(), default=1 if not many else None, nargs=nargs, metavar="N",
                   help="tensor parallel")
    g.add_argument("--da", type=count(), default=1 if not many else None, nargs=nargs, metavar="N",
                   help="attention data parallel inside the replica")
    g.add_argument("--ep", type=count(), default=1 if not many else None, nargs=nargs, metavar="N",
                   help="expert parallel (divides tp x da)")
    g.add_argument("--pp", type=count(), default=1 if not many else None, nargs=nargs, metavar="N",
                   help="pipeline stages")
    g.add_argument("--cp", type=count(), default=1 if not many else None, nargs=nargs, metavar="N",
                   help="context parallel: a long prompt's prefill and every sequence's KV cache split over N groups "
                        "of the plan's chips")
    g.add_argument("--concurrency", type=count(1, "MAX_BATCH"), nargs="+",
                   default=None if many else [1, 16, 64, 256], metavar="N", help="sequences in flight per replica")
    g.add_argument("--mode", choices=("aggregated", "chunked", "disaggregated"), default="aggregated",
                   nargs="+" if many else None, help="serving mode(s)")
    g.add_argument("--chunk", type=count(1, "MAX_SEQ_TOKENS"), default=512, metavar="N",
                   help="prefill chunk tokens (chunked mode)")
    g.add_argument("--prefix-cached", type=count(0, "MAX_SEQ_TOKENS"), default=0, metavar="N",
                   help="mean prompt tokens served from the prefix cache (hit rate x shared prefix length): "
                        "prefilled once, their KV blocks shared")
    add_engine_option(g)
    g.add_argument("--draft", metavar="NAME", help="speculative decoding: a draft (workloads/drafts/) or 'mtp'")
    g.add_argument("--draft-tokens", type=count(1, 16), default=1, metavar="K", help="draft tokens per step")
    g.add_argument("--acceptance", type=positive(), nargs="+", metavar="A",
                   help="per-position acceptance rates (K values in [0, 1]), or one mean acceptance length E >= 1")
    if many:
        g.add_argument("--dtypes", nargs="+", type=dtype_arg, metavar="TYPE",
                       help="compute types to sweep (default: bf16 fp8 mxfp8 mxfp4 where supported)")
    else:
        g.add_argument("--dtype", type=dtype_arg, metavar="TYPE",
                       help="compute / weight type (default: what the system runs natively: mxfp8 on Trainium3 "
                            "and Blackwell, fp8 on Trainium1-2 and Hopper, bf16 elsewhere)")
        g.add_argument("--expert-dtype", type=dtype_arg, metavar="TYPE",
                       help="routed-expert weight type (default: the workload's shipped type, e.g. mxfp4)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serving metrics of given plans: TTFT, TPOT, tokens/s per user / chip / MW, $",
                       description="Steady-state continuous-batching serving of one plan at one or more concurrencies "
                                   "(serving/steady_state.py): TTFT, time per output token, interactivity, throughput per chip / "
                                   "node / UltraServer, end-to-end latency, KV fit, power and cost.")
    _common(p)
    _plan_args(p, many=False)
    p.add_argument("--allow-oversubscribed", action="store_true",
                   help="show a plan whose KV cache and weights exceed HBM, under a banner (refused without it)")
    intervals.add_interval_option(p)
    add_output_options(p)
    add_chart_option(p, "the plans' interactivity against output tokens/s per chip")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("pareto", help="frontier of interactivity vs throughput per chip / MW / $ over all plans",
                       description="Sweeps every plan (tp, da, ep, pp), data type and concurrency inside the scale-up "
                                   "domain in a few vectorised evaluations and keeps the Pareto frontier.")
    _common(p, hardware_many=True)
    _plan_args(p, many=True)
    p.add_argument("--y", choices=("mw", "chip", "usd", "concurrency"), default="mw",
                   help="frontier axis: tokens/s per MW (default), per chip, per $, or concurrent users")
    p.add_argument("--max-ttft", type=positive(), metavar="S", help="only configurations with TTFT <= S seconds")
    p.add_argument("--all", action="store_true", help="every configuration, not only the frontier")
    p.add_argument("--with-roofline", action="store_true",
                   help="also the roofline frontier (no serving engine: the hardware's upper bound) beside the engine "
                        "frontier, each row labelled in column frontier (engine | roofline), drawn as separate curves")
    p.add_argument("--max-replica-chips", type=count(1, "MAX_CHIPS"), metavar="N",
                   help="replicas up to N chips, spanning whole scale-up domains over the scale-out network "
                        "(default: one scale-up domain)")
    p.add_argument("--claims-chart", action="store_true",
                   help="the S4 chart data: Trn3 vs Trn2 UltraServer gpt-oss-120b frontiers with the S1-S3 readings")
    intervals.add_interval_option(p)
    add_output_options(p)
    add_chart_option(p, "the frontier per system")
    p.add_argument("--plot", action="store_true", help="the frontier drawn in the terminal above the table")
    p.set_defaults(func=cmd_pareto)

    p = sub.add_parser("sensitivity", help="elasticity of a serving result to every spec and assumption, ranked",
                       description="d ln(result) / d ln(parameter) by central finite differences for every spec "
                                   "field and calibration parameter, ranked by |elasticity|.")
    _common(p)
    _plan_args(p, many=False)
    p.add_argument("--metric", default="output_tokens_per_s_per_mw",
                   help="result column (default output_tokens_per_s_per_mw; e.g. tokens_per_s_per_user, "
                        "output_tokens_per_s_per_chip, usd_per_million_output_tokens, ttft_s)")
    p.add_argument("--claim", choices=("S1", "S2", "S3"), help="the Trn3/Trn2 ratio of a serving claim instead")
    p.add_argument("--rel-step", type=positive(0.5), default=0.05, metavar="H", help="relative step (default 0.05)")
    p.add_argument("--top", type=count(0), default=0, metavar="N", help="only the N largest")
    add_output_options(p)
    p.set_defaults(func=cmd_sensitivity)


# ---------------------------------------------------------------- helpers


def _overrides(args) -> list[str]:
    """--set assignments, plus the power basis (calibration switch power_basis_all_in) when all-in is asked."""
    return list(args.overrides) + (["power_basis_all_in=1"] if args.power_basis == "all-in" else [])


def _load(name: str, workload: str, overrides: list[str], variant: str, replaced):
    """(system, arch, calibration): the system with the run's calibrated sets (`replaced`), then --set what-ifs."""
    from perfmodel import catalog
    from perfmodel.catalog import whatif as wi
    from perfmodel.catalog import workload_refs
    from perfmodel.core.calibration import of as calibration_of

    system = catalog.load_system(name, variant=variant, replaced=replaced)
    cal = calibration_of(system)
    arch = workload_refs.load(workload)
    if overrides:
        system, arch, cal = wi.apply(system, arch, cal, wi.parse_assignments(overrides, cal))
    return system, arch, cal


def _caption(df: pd.DataFrame) -> str:
    parts = []
    if "power_caveat" in df:
        basis = ", ".join(df["power_basis"].dropna().unique()) if "power_basis" in df else "modelled"
        parts += [f"POWER ({basis} basis): {c}" for c in df["power_caveat"].dropna().unique()]
    if "price_note" in df:
        parts += [f"PRICE: {c}" for c in df["price_note"].dropna().unique()]
    return "\n".join(parts + [intervals.caption(df)]).strip()


def _emit(df: pd.DataFrame, args, title: str, name: str, meta: dict | None = None, full: pd.DataFrame | None = None,
          cols: tuple[str, ...] = SUMMARY_COLS, chart=None):
    """Tables and Markdown show `cols` (and reading / curve / note); csv, json and xlsx every column."""
    from perfmodel.report import export

    cap = _caption(full if full is not None else df)
    meta = {**(meta or {}), "caveats": cap.splitlines(), "units": "SI (s, bytes, W, USD); tokens/s per MW of facility "
            "power"}
    shown = df
    if args.format in ("table", "md") and set(cols) & set(df.columns):
        keep = [c for c in cols if c in df.columns]
        keep += [f"{c}_{e}" for c in keep for e in ("low", "high") if f"{c}_{e}" in df.columns]  # one cell each
        shown = df[keep + [c for c in ("reading", "curve", "note") if c in df.columns and c not in cols]]
    if chart is not None:  # --chart FILE, and the page a table to --out FILE.html writes
        write_chart(chart, getattr(args, "chart", None), args.force)
    print_result(export.emit(shown, args.format, title, args.out, meta=meta, default_name=name, caption=cap,
                             chart_svg=chart_svg(chart) if chart is not None else None))


# ---------------------------------------------------------------- commands


def cmd_serve(args) -> int:
    from perfmodel.catalog import neuron_stacks, serving_engines
    from perfmodel.report import charts, export
    from perfmodel.serving import cost, search
    from perfmodel.serving.steady_state import Grid, Mix

    system, arch, cal = _load(args.hardware, args.workload, _overrides(args), args.variant, args.replaced)
    ew = args.expert_dtype or (arch.expert_weight_dtype.value if arch.expert_weight_dtype else None)
    args.dtype = args.dtype or search.native_dtype(system).value
    grid = Grid.of(tp=args.tp, da=args.da, ep=args.ep, pp=args.pp, cp=args.cp, concurrency=args.concurrency,
                   compute=args.dtype,
                   expert_weights=ew)
    price = cost.price_for(system, cal, args.price)
    engine, env = serving_engines.resolve(args.engine, system)
    df = search.frontier_sweep(system, arch, Mix(args.input, args.output), [args.mode], grid=grid, cal=cal,
                               price=price, tdp_w=args.tdp, chunk_tokens=args.chunk,
                               software=neuron_stacks.software(engine, system, args.replaced),
                               prefix_tokens=args.prefix_cached, speculative=speculation(args), envelope_profile=env)
    df = intervals.attach(df, system, arch, args)
    title = f"{system.display_name}: {arch.name} serving ({args.mode}, {args.input}/{args.output} tokens)"
    misfit = ""
    if not df["kv_fits"].all():
        from perfmodel.model import feasibility

        used = {"memory_bytes": float(df["hbm_used_bytes"].max()), "capacity_bytes": system.chip.hbm_capacity_bytes}
        misfit = (feasibility.oversubscribed_line(used, system.chip.display_name) + f" at concurrency "
                  f"{_listed(args.concurrency)}")
    banner = refuse_or_banner(sorted(set(df.loc[~df["valid"], "invalid_reason"])), misfit, args.allow_oversubscribed,
                              f"max concurrency that fits: {int(df['max_concurrency_kv'].min()):,}")
    title = with_banner(title, banner, args.format, "serve")
    name = export.config_name([("", "serve"), ("", system.name), ("", arch.name), ("tp", args.tp), ("da", args.da),
                               ("ep", args.ep), ("pp", args.pp), ("", args.dtype), ("", args.mode)])
    _emit(df, args, title, name, {"system": system.name, "workload": arch.name},
          chart=lambda: charts.frontier(df.assign(plan=df["tp"].map("tp{}".format)), y="output_tokens_per_s_per_chip",
                                        color="plan", title=title))
    return 0


def _frontier_or_why(name: str, grp, max_ttft) -> None:
    """A system whose every configuration is invalid, does not fit or misses --max-ttft has no
    frontier: refused with the reason, never an empty table with exit status 0."""
    if grp["eligible"].any():
        return
    if not grp["valid"].any():
        raise ValueError(f"{name}: no valid plan in the grid: {sorted(set(grp['invalid_reason']))[0]}")
    if not (grp["valid"] & grp["kv_fits"]).any():
        raise ValueError(f"{name}: no plan in the grid fits memory (weights and KV cache exceed HBM)")
    raise ValueError(f"{name}: no configuration meets --max-ttft {max_ttft:g} s (the fastest TTFT is "
                     f"{grp.loc[grp['valid'] & grp['kv_fits'], 'ttft_s'].min():.3g} s)")


def _listed(v) -> str:
    return ", ".join(f"{x:g}" for x in v) if isinstance(v, (list, tuple)) else f"{v:g}"


def cmd_pareto(args) -> int:
    import pandas as pd

    from perfmodel.catalog import neuron_stacks, serving_engines
    from perfmodel.report import charts, export
    from perfmodel.serving import cost, search

    if args.claims_chart:
        from perfmodel.claims.serving import curves as serving_curves

        claims_as_shipped(args)
        with progress_bar("Trn3 vs Trn2 frontier sweeps", not args.no_progress):
            df = serving_curves.chart_frame()
        _emit(df, args, "S4: gpt-oss-120b, Trn3 vs Trn2 UltraServer frontiers (tokens/MW and concurrency)",
              "pareto_claims_chart", {"x_ref_tokens_per_s_per_user": serving_curves.X_REF,
                                      "mix": serving_curves.MIX.label})
        return 0
    from perfmodel.serving.steady_state import Mix

    frames = []
    grid_kw = {k: v for k, v in dict(tp=args.tp, da=args.da, pp=args.pp, cp=args.cp, concurrency=args.concurrency,
                                     dtypes=args.dtypes, max_chips=args.max_replica_chips).items() if v}
    modes = args.mode if isinstance(args.mode, list) else [args.mode]
    for name in args.hardware:
        system, arch, cal = _load(name, args.workload, _overrides(args), args.variant, args.replaced)
        price = cost.price_for(system, cal, args.price)
        grid = search.plan_grid(system, arch, **grid_kw)
        if args.ep:
            grid = grid.take(np.isin(grid.ep, args.ep))
        engine, env = serving_engines.resolve(args.engine, system)
        runs = [(engine, env)] + ([("", None)] if args.with_roofline and engine else [])
        for eng, en in runs:  # the engine frontier, then (asked) the roofline: never mixed, one frame each
            with progress_bar(f"{name}{'' if eng else ' (roofline)'}: {len(grid) * len(modes):,} configurations",
                              not args.no_progress) as cb:
                f = search.frontier_sweep(system, arch, Mix(args.input, args.output), modes, grid=grid, cal=cal,
                                          price=price, tdp_w=args.tdp, max_ttft_s=args.max_ttft,
                                          chunk_tokens=args.chunk, progress=cb,
                                          software=neuron_stacks.software(eng, system, args.replaced),
                                          prefix_tokens=args.prefix_cached, speculative=speculation(args),
                                          envelope_profile=en)
            frames.append(intervals.attach(f, system, arch, args).assign(frontier="engine" if eng else "roofline"))
    df = pd.concat(frames, ignore_index=True)
    ycol = {"concurrency": "concurrency_per_scaleup"}.get(args.y, search.Y_COLS.get(args.y))
    for name, grp in df.groupby("system"):
        if grp[ycol].isna().all():
            why = grp["power_caveat"].iloc[0] if args.y == "mw" else grp["price_note"].iloc[0]
            raise ValueError(f"{name}: no {args.y} frontier: {why}")
        _frontier_or_why(name, grp, args.max_ttft)
    if not args.all:
        df = search.frontier(df, "concurrency_per_scaleup" if args.y == "concurrency" else args.y)
    curves = df["system"] + df["frontier"].map({"roofline": " (roofline)" if args.with_roofline else ""}).fillna("")
    chart_title = f"{args.workload}: interactivity vs {args.y} frontier ({args.input}/{args.output} tokens)"
    title = chart_title
    if args.format in ("table", "md"):  # the verdict in words first (report/verdict.py); a chart keeps its title
        from perfmodel.report import verdict

        words = verdict.frontier_verdict(df[df["frontier"].eq(df["frontier"].iloc[0])], ycol)  # one kind
        title = "\n".join(t for t in (words, chart_title) if t)
    if args.plot and args.format == "table" and not args.out:
        from perfmodel.report import terminal_charts

        print_result(terminal_charts.frontier(df.assign(curve=curves), ycol, color="curve", title=chart_title))
    _emit(df, args, title,
          export.config_name([("", "pareto"), ("", args.workload), ("", args.y)] + [("", h) for h in args.hardware]),
          {"systems": args.hardware, "workload": args.workload, "y": args.y}, full=df,
          chart=lambda: charts.frontier(df.assign(curve=curves), y=ycol, color="curve", title=chart_title))
    return 0


def cmd_sensitivity(args) -> int:
    from perfmodel.catalog import neuron_stacks, serving_engines
    from perfmodel.report import export
    from perfmodel.serving import cost, search, sensitivity
    from perfmodel.serving.steady_state import Grid, Mix

    if args.claim:
        from perfmodel.claims.serving import verdicts as serving_claims

        claims_as_shipped(args)
        with progress_bar(f"{args.claim}: perturbing every parameter", not args.no_progress):
            df = serving_claims.claim_sensitivity()
        df = df[df["result_name"] == args.claim.lower()].drop(columns=["result_name"])
        title = f"Sensitivity of claim {args.claim} (Trn3 / Trn2 ratio)"
        name = f"sensitivity_{args.claim}"
    else:
        system, arch, cal = _load(args.hardware, args.workload, _overrides(args), args.variant, args.replaced)
        ew = args.expert_dtype or (arch.expert_weight_dtype.value if arch.expert_weight_dtype else None)
        grid = Grid.of(tp=args.tp, da=args.da, ep=args.ep, pp=args.pp, cp=args.cp, concurrency=args.concurrency[0],
                       compute=args.dtype or search.native_dtype(system).value, expert_weights=ew)
        mix = Mix(args.input, args.output)

        def fn(inputs) -> float:
            s, c = inputs["system"]
            df = search.frontier_sweep(s, arch, mix, [args.mode], grid=grid, cal=c,
                                       price=cost.price_for(s, c, args.price), tdp_w=args.tdp,
                                       chunk_tokens=args.chunk,
                                       software=neuron_stacks.software(serving_engines.resolve(args.engine, s)[0], s,
                                                                       args.replaced),
                                       prefix_tokens=args.prefix_cached, speculative=speculation(args))
            if args.metric not in df:
                raise ValueError(f"unknown metric {args.metric!r}; choose a numeric column such as "
                                 "tokens_per_s_per_user, output_tokens_per_s_per_chip, output_tokens_per_s_per_mw")
            return float(df[args.metric].iloc[0])

        with progress_bar("perturbing every parameter", not args.no_progress) as cb:
            df = sensitivity.elasticities(fn, {"system": (system, cal)}, rel_step=args.rel_step, progress=cb,
                                          ranges=True)
        title = f"Sensitivity of {args.metric}: {system.name}, {arch.name}"
        name = export.config_name([("", "sensitivity"), ("", system.name), ("", args.metric)])
    if args.top:
        df = df.head(args.top)
    if args.format in ("table", "md"):  # people's units ('2.9 TB/s', '2 us', '500 W'); csv / json keep SI
        from perfmodel.core import units

        df = df.assign(**{c: [units.format_value(v, u) for v, u in zip(df[c], df["unit"])]
                          for c in ("value", "range_low", "range_high") if c in df}).drop(columns="unit")
    _emit(df, args, title, name)
    return 0

