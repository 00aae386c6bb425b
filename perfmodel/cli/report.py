"""CLI: `report`, `claims`, `roofline`, `memory`, `knobs` (thin over the report package and whatif.py).

    perfmodel report [--claims]           Trn1-Trn4 and GPU peers on the built-in cases (and the seed claims)
    perfmodel report --out report.html    the same with charts (or report.md, charts as PNG files)
    perfmodel claims [--misses]           every seed claim: quoted, modelled, within, reason
    perfmodel roofline --hardware trn2-ultraserver --workload llama-3-70b --phase decode --tp 4
    perfmodel memory   --hardware trn3-ultraserver --workload deepseek-v3 --phase decode --tp 8 --ep 8
    perfmodel knobs --hardware trn2-ultraserver    what --set can change, with current values

Does not: compute model quantities (the report and model packages do).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from perfmodel.cli import intervals, scenarios
from perfmodel.cli.calibrated_sets import claims_as_shipped
from perfmodel.cli.common import (
    add_engine_option,
    add_output_options,
    count,
    defer,
    dtype_arg,
    print_result,
    progress_bar,
    refuse_or_banner,
    with_banner,
)
from perfmodel.cli.scenarios import add_scenario_file_options
from perfmodel.cli.table_output import write_or_print, write_tables

if TYPE_CHECKING:  # the model (report, whatif, export, pandas) is imported inside the functions: see cli/parser.py

    from perfmodel import report
    from perfmodel.catalog import whatif as wi

SET_HELP = ("what-if override, repeatable: a spec value (hbm_bandwidth, hbm_capacity, tensor_rate, "
            "tensor_rate.<dtype>, vector_rate, exp_rate, link_bandwidth, scaleout_bandwidth, tdp, price, ...), a "
            "calibration parameter (hbm_efficiency, tensor_efficiency, op_overhead, ...) or a numeric workload field "
            "(num_hidden_layers, ...). VALUE sets (units as in the spec files: '6 TB/s', '0.8') or scales "
            "('x1.5', '+50%%', '-20%%'). Prefix spec./cal./workload. to disambiguate. "
            "'perfmodel knobs --hardware NAME' lists them all")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="compare Trn1, Trn2, Trn3, Trn4 (projected) and GPU peers on representative work",
        description="The main report: GPT-OSS 120B decode, Llama-3 70B prefill and decode, DeepSeek-V3 MoE "
                    "serving and GPT-3 175B training on each system, with sustained vs peak, the bounding "
                    "engine, memory per chip and the minimum chips, tokens per MW and $ per million tokens. "
                    "Figures resting on estimated (*), projected (†) or what-if (‡) inputs are marked.",
        epilog="Examples: perfmodel report; perfmodel report --out report.html; perfmodel report --format xlsx "
               "--out report.xlsx; perfmodel report --systems trn2-ultraserver trn3-ultraserver --cases "
               "gpt-oss-120b-decode --set hbm_bandwidth=+50%%",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=cmd_report)
    defer(p, _report_args)

    p = sub.add_parser(
        "claims", help="every seed claim: quoted value, modelled value, within tolerance, reason for a miss",
        description="Computes every claim of seed_claims.md now (claims.all_claims): quoted, modelled, relative "
                    "error, tolerance, within or not, and the note that explains each miss.")
    p.add_argument("--id", default="", metavar="PREFIX", help="only claims whose id starts with PREFIX (e.g. D4, S)")
    p.add_argument("--misses", action="store_true", help="only the claims that are not within tolerance")
    p.add_argument("--claims-chart", action="store_true", help="S1-S3 as curves for every reading (Trn2 recipe, power "
                   "basis, per UltraServer and per chip); table / md: one row per reading, csv / json / xlsx: curves")
    add_output_options(p)
    p.set_defaults(func=cmd_claims)

    p = sub.add_parser(
        "roofline", help="per-operator roofline table of one scenario, plus its summary",
        description="Evaluates one workload on one system: each operator's FLOPs, HBM bytes, intensity, time on "
                    "each engine, time, bound and achieved rate, then the step summary (sustained vs peak, "
                    "tokens/s) and the time by bounding engine.",
        epilog="Example: perfmodel roofline --hardware trn2-ultraserver --workload llama-3-70b --phase decode "
               "--batch 64 --context 4096 --tp 4 --set hbm_bandwidth=+50%%")
    p.set_defaults(func=cmd_roofline)
    defer(p, _roofline_args)

    p = sub.add_parser(
        "memory", help="per-chip memory footprint of one scenario, whether it fits, and the minimum chips",
        description="Footprint per chip by component (weights, gradients, master weights, optimizer state, "
                    "activations, attention scores, KV cache, runtime reserve), the HBM capacity and headroom, "
                    "and feasibility.min_fit: the fewest chips (and instances) and the plan that hold the scenario.",
        epilog="Example: perfmodel memory --hardware trn1.32xlarge --workload gpt3-175b --phase train --seq 2048 "
               "--zero 1 --format xlsx --out gpt3.xlsx")
    p.set_defaults(func=cmd_memory)
    defer(p, _memory_args)

    p = sub.add_parser("knobs", help="list what --set can change: spec values, calibration parameters, "
                                     "workload fields, with current values",
                       description="The names --set NAME=VALUE (CLI) and the app's what-if box accept.")
    p.add_argument("--hardware", required=True, metavar="NAME", help="system key (perfmodel specs list)")
    p.add_argument("--workload", metavar="NAME", help="also list this workload's numeric fields")
    add_output_options(p)
    p.set_defaults(func=cmd_knobs)


def _report_args(p: argparse.ArgumentParser) -> None:
    from perfmodel import report

    p.add_argument("--systems", nargs="+", metavar="NAME", default=list(report.SYSTEMS),
                   help=f"systems to compare (default: {' '.join(report.SYSTEMS)})")
    p.add_argument("--cases", nargs="+", metavar="CASE", choices=[c.key for c in report.CASES],
                   default=[c.key for c in report.CASES],
                   help=f"cases to run (default: all: {', '.join(c.key for c in report.CASES)})")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides", help=SET_HELP)
    p.add_argument("--power-basis", choices=("modelled", "all-in"), default="modelled",
                   help="chips draw by their activity (default) or all-in, provisioned at TDP (InferenceX)")
    p.add_argument("--claims", action="store_true",
                   help="add the seed-claims sections (73 claims and S1-S3 by reading; also `perfmodel claims`)")
    p.add_argument("--no-claims", action="store_false", dest="claims", help=argparse.SUPPRESS)  # the default now
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_engine_option(p)
    add_output_options(p)


def _roofline_args(p: argparse.ArgumentParser) -> None:
    _scenario_args(p)
    p.add_argument("--plot", action="store_true", help="the roofline drawn in the terminal above the tables (each "
                   "data type's roof, every operator at its achieved rate)")
    p.add_argument("--overlap", choices=("pipelined", "serial"), default="pipelined",
                   help="engines overlap (max of engine times, default) or run serially (sum)")
    p.add_argument("--allow-oversubscribed", action="store_true",
                   help="show the numbers of a scenario whose memory per chip exceeds the chip's HBM, under a "
                        "banner (without it such a scenario is refused: it cannot run)")
    intervals.add_interval_option(p)
    add_output_options(p)


def _memory_args(p: argparse.ArgumentParser) -> None:
    _scenario_args(p)
    add_output_options(p)


def _scenario_args(p: argparse.ArgumentParser) -> None:
    from perfmodel.catalog import whatif as wi

    g = p.add_argument_group("scenario")
    g.add_argument("--hardware", metavar="NAME", help="system key, e.g. trn2-ultraserver (perfmodel specs list), "
                   "or a system .toml; required unless --scenario names it")
    g.add_argument("--workload", metavar="NAME", help="workload key, e.g. llama-3-70b (perfmodel workloads list), a "
                   "workload .toml, a config.json or a cached Hugging Face id; required unless --scenario names it")
    g.add_argument("--phase", choices=("prefill", "decode", "train"),
                   help="prefill (prompt), decode (one token per sequence per step) or train (default: decode)")
    g.add_argument("--batch", type=count(1, "MAX_BATCH"), metavar="N",
                   help="sequences per step on one replica (training: per micro-batch; default 1)")
    g.add_argument("--seq", type=count(1, "MAX_SEQ_TOKENS"), metavar="N",
                   help="tokens per sequence this step for prefill / train (default 2048; decode uses 1)")
    g.add_argument("--context", type=count(0, "MAX_SEQ_TOKENS"), metavar="N",
                   help=f"tokens already in the KV cache (decode default {wi.DEFAULT_CONTEXT['decode']})")
    g.add_argument("--tp", type=count(), metavar="N", help="tensor parallel degree (default 1)")
    g.add_argument("--pp", type=count(), metavar="N", help="pipeline stages (default 1)")
    g.add_argument("--ep", type=count(), metavar="N", help="expert parallel degree; divides tp (default 1)")
    g.add_argument("--dp", type=count(), metavar="N", help="data parallel replicas (default 1)")
    g.add_argument("--microbatches", type=count(1, "MAX_BATCH"), metavar="N", help="micro-batches per step "
                   "(default 1)")
    g.add_argument("--zero", type=int, choices=(0, 1, 2, 3), help="ZeRO stage for training (default 0)")
    g.add_argument("--dtype", type=dtype_arg, metavar="TYPE",
                   help="weights and matmul data type: bf16, fp8, mxfp8, mxfp4, fp16, fp32, ... (default bf16); "
                        "the KV cache follows (8-bit for 8-bit types)")
    g.add_argument("--recompute", choices=("none", "selective", "full", "alternate-layers", "selective-op"),
                   help="activation recomputation for training (default none; selective: the "
                   "attention core, alternate-layers: every other layer, selective-op: half the matmuls, element-wise)")
    g.add_argument("--offload-layers", type=count(0, "MAX_LAYERS"), metavar="N", dest="offload_layers",
                   help="training: layers per pipeline stage whose activations are offloaded to host memory "
                        "(Megatron-Core cpu_offloading_num_layers; default 0)")
    g.add_argument("--recompute-layers", type=count(0, "MAX_LAYERS"), metavar="N", dest="recompute_layers",
                   help="with --recompute full: layers per pipeline stage re-run (Megatron-Core recompute_num_layers; "
                        "default 0: every layer)")
    g.add_argument("--lora-rank", type=count(0, "MAX_WIDTH"), metavar="R", dest="lora_rank",
                   help="training: LoRA fine-tuning, rank-R adapters on the attention projections and the base "
                        "weights frozen (default 0: every weight trains)")
    add_scenario_file_options(g)
    g.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides", help=SET_HELP)


def _load(args) -> tuple[report.Loaded, wi.ScenarioOptions]:
    from perfmodel import catalog, report
    from perfmodel.catalog import whatif as wi
    from perfmodel.core.calibration import of as calibration_of

    system, workload, options, texts = scenarios.resolve(args)  # the flags over a --scenario file's values
    whatif = wi.parse_assignments(texts, calibration_of(catalog.load_system(system, replaced=args.replaced)))
    ld = report.load(system, workload, whatif, replaced=args.replaced)
    scenarios.save(args, system, workload, options, whatif)
    return ld, options.resolved()


def _name(kind: str, ld: report.Loaded, opts: wi.ScenarioOptions) -> str:
    from perfmodel import report
    from perfmodel.report import export

    return export.config_name([("", kind), ("", ld.system.name), ("", ld.arch.name), ("", opts.phase),
                               ("b", opts.batch), ("s", opts.seq_len if opts.phase != "decode" else None),
                               ("c", opts.context or None), ("", report.plan_text(opts).replace(" ", "")),
                               ("", opts.dtype), ("", ld.whatif.label() or None)])


def _meta(ld: report.Loaded, opts: wi.ScenarioOptions) -> dict:
    from perfmodel import __version__

    return {"perfmodel_version": __version__, "system": ld.system.name, "workload": ld.arch.name,
            "scenario": opts.__dict__, "whatif": ld.whatif.assignments(), "units": "SI (s, bytes, FLOP/s, W, USD)"}


OP_COLUMNS = ("op", "pass", "count", "flop", "hbm_read_bytes", "hbm_write_bytes", "intensity_flop_per_byte",
              "tensor_s", "vector_s", "scalar_s", "memory_s", "comm_s", "time_s", "total_time_s", "bound",
              "achieved_flop_per_s")


def cmd_roofline(args) -> int:
    from perfmodel import report
    from perfmodel.model import evaluate
    from perfmodel.report import export, provenance_frame

    ld, opts = _load(args)

    run = report.run_scenario(ld, opts, with_fit=False)
    banner = _feasible(run, ld, args.allow_oversubscribed)
    if args.overlap != "pipelined":
        res = evaluate.evaluate(ld.system, ld.arch, run.scenario, ld.cal, overlap=evaluate.Overlap(args.overlap))
        run = report.Run(ld, opts, res, run.components, run.totals, None, "", run.provenance)
    sheets = run.sheets()
    sheets["results"] = intervals.attach_step(sheets["results"], ld.system, ld.arch, args)
    name = _name("roofline", ld, opts)
    if args.format in ("table", "md"):
        summ = sheets["results"]
        ops = run.result.ops[list(OP_COLUMNS)]
        shares = report.bound_shares(run.result.ops)
        cols = report.summary_columns(opts.phase)
        tables = [(f"{ld.system.display_name} / {ld.arch.display_name}: per operator",
                   report.display_table(ops, OP_COLUMNS)),
                  ("Summary", report.display_table(summ.assign(plan=report.plan_text(opts)), cols)),
                  ("Time by bounding engine", shares, "si")]
        plot = ""
        if args.plot:
            from perfmodel.report import terminal_charts

            roofs = report.roofline_frames(ld.system, dict.fromkeys([opts.dtype, "bf16"]))  # its type's roof
            plot = terminal_charts.roofline(run.result.ops, *roofs, title=f"{ld.system.display_name}: roofline")
        return write_tables(tables, args.format, args.out, head=[banner, plot],
                            tail=[intervals.caption(summ), provenance_frame.MARKER_LEGEND])
    with_banner("", banner, args.format, "roofline")
    print_result(export.emit_sheets(sheets, args.format, "per_operator", args.out, _meta(ld, opts), name))
    return 0


def _feasible(run: report.Run, ld: report.Loaded, allow_oversubscribed: bool) -> str:
    """Refuse an invalid plan and, unless allowed, one that does not fit memory (common.refuse_or_banner)."""
    from perfmodel.model import feasibility

    f = run.result.feasibility
    misfit = "" if f["fits"] else feasibility.oversubscribed_line(f, ld.system.chip.display_name)
    return refuse_or_banner(f["reasons"], misfit, allow_oversubscribed, "perfmodel memory shows the fewest chips "
                            "that hold it")


def cmd_memory(args) -> int:
    import pandas as pd

    from perfmodel import report
    from perfmodel.report import export, frames

    ld, opts = _load(args)
    run = report.run_scenario(ld, opts, with_fit=True)
    _feasible(run, ld, allow_oversubscribed=True)  # an invalid plan is refused; a misfit is this command's answer
    sheets = run.sheets()
    comp = frames._with_inputs(run.components.drop(columns="label"), sheets["results"])
    sheets = {"inputs": sheets["inputs"], "results": sheets["results"], "components": comp,
              "per_operator": sheets["per_operator"], "provenance": sheets["provenance"]}
    name = _name("memory", ld, opts)
    if args.format in ("table", "md"):
        t = run.totals.iloc[0]
        shown = run.components[["component", "footprint_bytes"]].assign(
            share_frac=run.components["footprint_bytes"] / t["total_bytes"])
        fit = run.fit
        summary = pd.DataFrame([{"total_bytes": t["total_bytes"], "capacity_bytes": t["capacity_bytes"],
                                 "headroom_bytes": t["headroom_bytes"], "fits": "yes" if t["fits"] else "NO",
                                 "min_chips": fit.chips if fit else None,
                                 "min_instances": fit.instances if fit else None,
                                 "min_node_share": fit.node_share if fit else None,
                                 "min_fit_plan": " ".join(f"{k}{v}" for k, v in fit.plan.items()) if fit else
                                 run.fit_error}])
        if t["host_bytes"] > 0:  # offloaded activations live in host memory, beside the HBM total
            summary.insert(3, "host_bytes", t["host_bytes"])
            summary.insert(4, "host_capacity_bytes", t["host_capacity_bytes"])
        title = f"{ld.system.display_name} / {ld.arch.display_name}, {opts.phase} ({report.plan_text(opts)})"
        note = run.totals.iloc[0]["notes"]
        tables = [(f"Memory per chip: {title}", report.display_table(shown, shown.columns)),
                  ("Fit and minimum chips", report.display_table(summary, summary.columns))]
        return write_tables(tables, args.format, args.out, tail=[note])
    print_result(export.emit_sheets(sheets, args.format, "components", args.out, _meta(ld, opts), name))
    return 0


def cmd_claims(args) -> int:
    from perfmodel import report
    from perfmodel.report import export

    claims_as_shipped(args)
    if args.claims_chart:  # S1-S3 as curves for every reading (claims/serving/readings.py)
        from perfmodel.claims.serving import readings as sr
        df = sr.table().drop(columns="reading") if args.format in ("table", "md") else sr.curves()
        print_result(export.emit(df, args.format, sr.TITLE, args.out, default_name="claims_chart"))
        return 0
    df = report.claims_frame(args.id)
    if args.misses:
        df = df[~df["within"]].reset_index(drop=True)
    if not len(df):
        raise ValueError(f"no claims match id prefix {args.id!r}" + (" among the misses" if args.misses else ""))
    meta = {"claims": len(df), "within": int(df["within"].sum()), "source": "seed_claims.md, computed now"}
    if args.format in ("table", "md"):
        shown = report.claims_display(df)
        summary = f"{meta['within']} of {meta['claims']} within tolerance"
        return write_tables([("Seed claims", shown)], args.format, args.out, tail=[summary])
    print_result(export.emit(df, args.format, "Seed claims", args.out, meta=meta,
                             default_name=export.config_name([("", "claims"), ("", args.id or None),
                                                              ("", "misses" if args.misses else None)])))
    return 0


def cmd_report(args) -> int:
    from perfmodel import report
    from perfmodel.catalog import whatif as wi
    from perfmodel.report import documents, export

    basis = ["cal.power_basis_all_in=1"] if args.power_basis == "all-in" else []
    whatif = wi.parse_assignments(args.overrides + basis)  # calibration names are checked per system
    cases = [c for c in report.CASES if c.key in args.cases]
    with progress_bar("evaluating", not args.no_progress) as progress:
        rep = report.build_report(cases, args.systems, whatif, progress, with_claims=args.claims, engine=args.engine,
                                  replaced=args.replaced)
    cmp = rep.comparison
    if len(cmp.errors) and not len(cmp.results):  # nothing ran: an error, not an empty report
        e = cmp.errors.iloc[0]
        raise ValueError(f"no case ran: {e['case']} on {e['system']}: {e['error']}")
    for e in cmp.errors.itertuples():
        print(f"perfmodel: note: {e.case} on {e.system} not run: {e.error}", file=sys.stderr)
    name = export.config_name([("", "report"), ("", f"{len(args.systems)}systems"), ("", f"{len(cases)}cases"),
                               ("", whatif.label() or None)])
    out = Path(args.out) if args.out else None
    if args.format == "table" and out and out.suffix.lower() in (".md", ".markdown", ".html", ".htm"):
        print_result(f"wrote {documents.write_report(rep, out)}")
        return 0
    if args.format == "table":
        return write_or_print(documents.report_text(rep), args.out)
    if args.format == "md":
        print_result(f"wrote {documents.write_report(rep, out.with_suffix('.md'))}" if out
                     else documents.report_markdown(rep))
        return 0
    meta = {"cases": [c.key for c in cases], "systems": args.systems, "whatif": whatif.assignments(),
            "engine": args.engine or "each system's default (vllm on GPUs, nxd-inference on Trainium)",
            "legend": rep.legend, "units": "SI (s, bytes, FLOP/s, W, USD)"}
    sheets = {**cmp.sheets()}
    if args.claims:
        sheets["claims"] = report.claims_frame()
    print_result(export.emit_sheets(sheets, args.format, "results", args.out, meta, name))
    return 0


def cmd_knobs(args) -> int:
    import pandas as pd

    from perfmodel import catalog
    from perfmodel.catalog import whatif as wi
    from perfmodel.core.calibration import of as calibration_of
    from perfmodel.report import export

    system = catalog.load_system(args.hardware, replaced=args.replaced)
    cal = calibration_of(system)
    spec = wi.knobs_frame(system)
    from perfmodel.core import units

    def shown(v, kind: str) -> str:  # people's units ('2.9 TB/s'); 'current' keeps the SI number for tools
        return units.format_quantity(v, kind, missing="")

    rows = [{"family": "spec", "name": r.name, "value": shown(r.value_si, r.kind), "current": r.value_si,
             "unit": r.unit, "description": r.description} for r in spec.itertuples()]
    rows += [{"family": "cal", "name": p.name, "value": shown(p.value, p.kind), "current": p.value, "unit": p.kind,
              "description": p.reason} for p in cal.params.values()]
    if args.workload:
        from perfmodel.catalog import workload_refs

        arch = workload_refs.load(args.workload)
        rows += [{"family": "workload", "name": f, "value": str(getattr(arch, f)), "current": getattr(arch, f),
                  "unit": "", "description": ""} for f in wi.WORKLOAD_FIELDS]
    df = pd.DataFrame(rows)
    print_result(export.emit(df, args.format, f"What-if names for {system.name}", args.out,
                             default_name=f"knobs_{system.name}"))
    return 0
