"""CLI: `collective` (cost and algorithm per message size), `train` (training step).

    perfmodel collective --hardware trn1.32xlarge --op all-reduce --chips 512 --size 1GiB
    perfmodel collective --hardware trn2-ultraserver --op all-gather --chips 64 --size-range 1B:4GiB
    perfmodel train --hardware trn1.32xlarge --nodes 16 --workload gpt3-6.7b --seq 2048 \
        --global-batch 1024 --micro-batch 1 --tp 4 --pp 1 [--dp 64] [--zero 1] [--show comm]

Every command builds a DataFrame with library calls and hands it to export.emit.
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from perfmodel.cli import intervals
from perfmodel.cli.common import (add_chart_option, add_output_options, chart_svg, count, count_list, defer,
                                  positive, print_result, refuse_or_banner, size, size_range, with_banner,
                                  write_chart)

if TYPE_CHECKING:  # the model is imported inside the functions (start-up time: see cli/parser.py)
    from perfmodel.core.scenario import Scenario

_SET_HELP = ("override a calibration parameter, e.g. --set collective_fixed_latency='10 us' or --set "
             "link_efficiency_node=x0.9 (repeatable)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collective", help="collective time, chosen algorithm and every algorithm's time vs size",
                       description="Alpha-beta cost of one collective over the system's topology, for one size or "
                                   "a size sweep; the fastest algorithm is chosen per size unless --algorithm.")
    p.set_defaults(func=cmd_collective)
    defer(p, _collective_args)

    p = sub.add_parser("train", help="training step: time, tokens/s, MFU, exposed vs hidden communication",
                       description="One training step of a parallelism plan (per chip: forward, backward, "
                                   "optimizer, pipeline bubble, communication exposed and hidden).")
    p.set_defaults(func=cmd_train)
    defer(p, _train_args)


def _collective_args(p: argparse.ArgumentParser) -> None:
    from perfmodel.comm import collectives as co
    from perfmodel.comm.algorithms import Collective

    p.add_argument("--hardware", required=True, metavar="NAME", help="system key (perfmodel specs list)")
    p.add_argument("--op", required=True, choices=[c.value for c in Collective], help="collective")
    p.add_argument("--chips", required=True, type=count_list(1, "MAX_CHIPS"), metavar="N[,N...]",
                   help="group size(s) in chips")
    p.add_argument("--stride", type=count(1, "MAX_CHIPS"), default=1, metavar="S",
                   help="chips between group members (default 1)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--size", type=size, metavar="SIZE", help="bytes per chip, e.g. 1MiB (nccl-tests 'size')")
    g.add_argument("--size-range", type=size_range, metavar="LO:HI",
                   help="sweep powers of two from LO to HI, e.g. 1KiB:4GiB")
    p.add_argument("--per-octave", type=count(1, 64), default=1, metavar="K",  # 64 per doubling: finer than any plot
                   help="sizes per doubling in a sweep")
    p.add_argument("--algorithm", default="auto", choices=("auto",) + co.ALGORITHMS)
    p.add_argument("--launch", default="in-graph", choices=co.LAUNCH,
                   help="per-call cost inside a compiled graph (default), host-launched like nccom-test/nccl-tests, "
                        "or eager through torch.distributed with the device waiting on each call")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides", help=_SET_HELP)
    add_output_options(p)
    add_chart_option(p, "time against message size, per algorithm")


def _train_args(p: argparse.ArgumentParser) -> None:
    from perfmodel import training
    from perfmodel.core.scenario import Optimizer, Recompute

    chips, batch = count(1, "MAX_CHIPS"), count(1, "MAX_BATCH")
    p.add_argument("--hardware", required=True, metavar="NAME")
    p.add_argument("--nodes", required=True, type=chips, metavar="N", help="instances")
    p.add_argument("--workload", required=True, metavar="NAME")
    p.add_argument("--seq", required=True, type=count(1, "MAX_SEQ_TOKENS"), metavar="N", help="sequence length")
    p.add_argument("--global-batch", required=True, type=batch, metavar="N", help="sequences per optimizer step")
    p.add_argument("--micro-batch", required=True, type=batch, metavar="N",
                   help="sequences per micro-batch per replica")
    p.add_argument("--tp", type=chips, default=1, metavar="N")
    p.add_argument("--pp", type=chips, default=1, metavar="N")
    p.add_argument("--dp", type=chips, metavar="N", help="data parallel (default: the chips left over)")
    p.add_argument("--cp", type=chips, default=1, metavar="N", help="context parallel")
    p.add_argument("--ep", type=chips, default=1, metavar="N", help="expert parallel")
    p.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=0, help="ZeRO stage (3 = FSDP)")
    p.add_argument("--dtype", default="bf16", metavar="TYPE", help="weights / matmul data type (default bf16)")
    p.add_argument("--optimizer", default=Optimizer.ADAM_MIXED.value, choices=[o.value for o in Optimizer])
    p.add_argument("--recompute", default="none", choices=[r.value for r in Recompute])
    p.add_argument("--schedule", default="1f1b", choices=training.SCHEDULES, help="pipeline schedule")
    p.add_argument("--virtual", type=count(1, "MAX_LAYERS"), default=1, metavar="V",
                   help="virtual stages (interleaved)")
    p.add_argument("--sequence-parallel", action="store_true")
    p.add_argument("--offload-layers", type=count(0, "MAX_LAYERS"), default=0, metavar="N",
                   help="layers per pipeline stage whose activations are offloaded to host memory over the chip's "
                        "host link (Megatron-Core cpu_offloading_num_layers)")
    p.add_argument("--recompute-layers", type=count(0, "MAX_LAYERS"), default=0, metavar="N",
                   help="with --recompute full: layers per pipeline stage re-run (Megatron-Core recompute_num_layers; "
                        "0: every layer)")
    p.add_argument("--lora-rank", type=count(0, "MAX_WIDTH"), default=0, metavar="R",
                   help="LoRA fine-tuning: rank-R adapters on the attention projections, the base weights frozen")
    p.add_argument("--stack", default="", metavar="NAME",
                   help="Neuron training stack (hardware_specs/stacks/neuron.toml: nxd-training, torch-neuronx-2022): "
                        "its attention kernels, collective rules and graph cost per operator; default: the family "
                        "file's values")
    p.add_argument("--tokens", type=positive(), metavar="N",
                   help="a run of N training tokens: its wall-clock days with evaluation, checkpoint pauses and the "
                        "work and restarts lost to interrupts (training/time_to_train.py; --show run for the parts)")
    p.add_argument("--checkpoint-every", type=_duration, metavar="TIME",
                   help="with --tokens: compute time between checkpoints, e.g. '30 min' (default: Daly's optimum for "
                        "the run's interrupt rate)")
    p.add_argument("--show", default="summary",
                   choices=("summary", "comm", "comm-ops", "timeline", "placement", "scaling", "run"),
                   help="what to print (scaling: 1..nodes in powers of two at this per-node plan, with --tokens the "
                        "run's days at each; run: where a --tokens run's wall-clock time goes)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides", help=_SET_HELP)
    p.add_argument("--allow-oversubscribed", action="store_true",
                   help="show a plan that does not fit memory, under a banner (refused without it)")
    intervals.add_interval_option(p)
    add_output_options(p)


def _calibration(system, items: list[str]):
    """The system's calibration with --set overrides applied by the what-if layer (scales such as x2,
    each value held to its parameter's range, did-you-mean for an unknown name)."""
    from perfmodel.catalog import whatif as wi
    from perfmodel.core.calibration import of as calibration_of

    return wi.apply_calibration(calibration_of(system), [wi.split_assignment(t) for t in items])


def _duration(text: str) -> float:
    """A time with its unit ('30 min', '2 h'), in seconds, > 0 (argparse type: one line on bad input)."""
    from perfmodel.core import units

    try:
        v = units.parse(text, "time")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be a time > 0 such as '30 min', got {text!r}")
    return v


def _size(text: str) -> float:
    from perfmodel.core import units

    return units.parse(text, "capacity")


def cmd_collective(args) -> int:
    from perfmodel import catalog
    from perfmodel.comm import collectives as co
    from perfmodel.core import limits
    from perfmodel.report import export

    s = catalog.load_system(args.hardware, replaced=args.replaced)
    cal = _calibration(s, args.overrides)
    chips = [int(c) for c in str(args.chips).split(",")]
    reach = (max(chips) - 1) * args.stride + 1  # chips the group's members are spread over
    if reach > limits.MAX_CHIPS:
        raise ValueError(f"argument --stride: {max(chips):,} chips at stride {args.stride:,} span {reach:,} chips, "
                         f"more than {limits.MAX_CHIPS:,}")
    if args.size_range:
        lo, hi = args.size_range.split(":")
        sizes = co.size_range(_size(lo), _size(hi), args.per_octave)
    else:
        sizes = [_size(args.size or "1MiB")]
    df = co.sweep(s, cal, args.op, sizes, chips, args.stride, args.algorithm, args.launch)
    title = f"{s.display_name}: {args.op} over {args.chips} chips (stride {args.stride})"
    full, chart_title = df, title

    def chart():  # every algorithm's time against size, per group size (the app's collective chart); one algorithm
        from perfmodel.report import charts, pages  # asked for: its own rows only

        long = pages.algorithm_rows(full, ["auto", *co.ALGORITHMS] if args.algorithm == "auto" else [args.algorithm])
        long["series"] = long["group"].map("{:g} chips".format) + ": " + long["algorithm"]
        return charts.collective_times(long, chart_title)

    write_chart(chart, args.chart, args.force)
    span = ""
    if max(chips) * args.stride > s.scaleup_chips:  # a group beyond one system spans several over scale-out
        span = (f"{max(chips) * args.stride:,} chips span {-(-max(chips) * args.stride // s.scaleup_chips):,} "
                f"of these systems over the scale-out network")
        title += f"; {span}"
    if args.format in ("table", "md"):
        keep = ["group", "size_bytes", "algorithm", "time_s", "latency_s", "bandwidth_s", "busbw_bytes_per_s",
                "regime", "crosses"] + [c for c in df.columns if c.startswith("time_") and c != "time_s"]
        df = df[keep].assign(size=[_human(n) for n in df["size_bytes"]]).drop(columns=["size_bytes"])
        df = df[["group", "size"] + [c for c in df.columns if c not in ("group", "size")]]
    meta = {"system": s.name, "collective": args.op, "stride": args.stride, "algorithm": args.algorithm,
            "launch": args.launch, **({"note": span} if span else {})}
    print_result(export.emit(df, args.format, title, args.out, meta=meta,
                             default_name=f"collective_{s.name}_{args.op}", chart_svg=chart_svg(chart)))
    return 0


def _human(n: float) -> str:
    from perfmodel.core import units

    for name, div in (("GiB", units.GiB), ("MiB", units.MiB), ("KiB", units.KiB)):
        if n >= div:
            return f"{n / div:g} {name}"
    return f"{n:g} B"


def _train_scenario(args, s) -> Scenario:
    from perfmodel.core.dtypes import DType
    from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario

    chips = args.nodes * s.node.chips
    dp = args.dp or chips // (args.tp * args.pp * args.cp)
    if args.global_batch % (args.micro_batch * dp):
        raise ValueError(f"global batch {args.global_batch} is not a multiple of micro-batch {args.micro_batch} x "
                         f"dp {dp}")
    d = DType.parse(args.dtype)
    par = Parallelism(tp=args.tp, pp=args.pp, dp=dp, cp=args.cp, ep=args.ep, zero=args.zero,
                      sequence_parallel=args.sequence_parallel,
                      microbatches=args.global_batch // (args.micro_batch * dp), pp_schedule=args.schedule,
                      pp_virtual=args.virtual)
    return Scenario(phase=Phase.TRAIN, batch=args.micro_batch, seq_len=args.seq, parallel=par,
                    precision=Precision.uniform(d), recompute=Recompute(args.recompute),
                    optimizer=Optimizer(args.optimizer), offload_layers=args.offload_layers,
                    lora_rank=args.lora_rank, recompute_layers=args.recompute_layers)


def cmd_train(args) -> int:
    import pandas as pd

    from perfmodel import catalog, training
    from perfmodel.catalog import neuron_stacks, workload_refs
    from perfmodel.report import export

    s = catalog.load_system(args.hardware, replaced=args.replaced)
    arch = workload_refs.load(args.workload)
    cal = _calibration(s, args.overrides)
    sc = _train_scenario(args, s)
    title = f"{s.display_name}: {arch.display_name} training, {args.nodes} nodes"
    if (args.show == "run" or args.checkpoint_every) and not args.tokens:
        raise ValueError("--show run and --checkpoint-every need --tokens N (the run's training tokens)")
    if args.show == "scaling" and args.checkpoint_every:
        raise ValueError("--checkpoint-every applies to one run, not to --show scaling (Daly's interval at each "
                         "node count)")
    stack = neuron_stacks.for_system(args.stack, "training", s, args.replaced) if args.stack else None  # here, once
    if args.show == "scaling":
        per_node = sc.replace(parallel=dataclasses.replace(sc.parallel, dp=sc.parallel.dp // args.nodes))
        nodes = [2 ** k for k in range(args.nodes.bit_length()) if 2 ** k <= args.nodes]
        df = training.scaling(s, arch, per_node, nodes, cal, stack, args.tokens)
    else:
        r = training.train(s, arch, sc, args.nodes, cal, stack)
        if args.interval:  # the step's interval from the training regime (the intervals file read here, at the edge)
            from perfmodel.catalog import interval_files
            from perfmodel.serving import error_bars

            r = dataclasses.replace(r, summary=error_bars.attach_training(r.summary, s, arch, interval_files.load(),
                                                                           args.interval))
        banner = refuse_or_banner(r.check.rule_errors, r.check.fit_error, args.allow_oversubscribed)
        title = with_banner(title, banner, args.format, "train")
        if args.tokens:  # the run: its wall clock beside the step (training/time_to_train.py)
            from perfmodel.training import time_to_train

            run = time_to_train.for_step(s, arch, sc.optimizer, cal, args.tokens, r.summary.iloc[0],
                                         args.checkpoint_every)
            r = dataclasses.replace(r, summary=r.summary.assign(tokens=args.tokens, **{
                f"run_{k}": float(v.ravel()[0]) for k, v in run.items()}))
        df = {"summary": r.summary, "comm": r.comm, "comm-ops": r.comm_ops, "timeline": r.timeline,
              "placement": r.check.placement}.get(args.show)
        if args.show == "run":
            from perfmodel.report import train_view

            title += "\n" + train_view.run_answer(r.summary.iloc[0])
            df = train_view.run_breakdown(r.summary.iloc[0])
        if args.show == "summary" and args.format in ("table", "md"):
            row = r.summary.iloc[0]
            if args.wide:  # every field of the step model
                df = pd.DataFrame({"quantity": list(row.index), "value": [_cell(v) for v in row.values]})
            else:  # the answer, then where the step's time goes (report/train_view.py)
                from perfmodel.report import train_view

                title += "\n" + train_view.answer(row) + (f"\n{train_view.run_answer(row)}" if args.tokens else "")
                df = train_view.breakdown(r.timeline, float(row["step_time_s"]))
        for w in r.check.warnings + r.check.errors:
            title += f"\n  note: {w}"
    print_result(export.emit(df, args.format, title, args.out, meta={"system": s.name, "workload": arch.name},
                             default_name=f"train_{s.name}_{arch.name}"))
    return 0


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
