"""CLI: `sweep` (any scenario field over lists or ranges, chunked, in process or on Dask).

    perfmodel sweep --hardware trn2-ultraserver --workload llama-3-70b --phase decode \
        --grid batch=1,2,4,8 --grid context=1024:32768:x2 --fixed tp=8
    perfmodel sweep --hardware trn2-ultraserver trn3-ultraserver --workload llama-3-8b --phase prefill \
        --grid batch=1:64 --grid seq_len=128:32768:128 --out results.parquet
    perfmodel sweep ... --phase train --grid tp=1,2,4,8 --grid dp=1:64 --fixed microbatches=8 --dask-local 2

--grid FIELD=VALUES: '1,2,4,8' (list), 'A:B' / 'A:B:S' (linear, both ends included), 'A:B:xF'
(geometric); data types and names as lists ('bf16,fp8'). --out FILE.parquet / FILE.csv streams
chunk by chunk (bounded memory at any size), --out DIR/ writes a Parquet dataset (one part per
chunk, written by whichever process or Dask worker evaluated it); other outputs go through
export.emit (--format).
Does not: compute anything itself (sweep/engine.py, sweep/run.py).
"""

from __future__ import annotations

import argparse

from perfmodel.cli.common import add_output_options, count, print_result, refuse
from perfmodel.cli.work_gate import add_yes_option, gate, sweep_estimate

SHOW = {"decode": ("time_per_output_token_s", "tokens_per_s_per_user", "tokens_per_s_per_chip", "mfu_frac"),
        "prefill": ("ttft_s", "tokens_per_s_per_chip", "mfu_frac", "tensor_util_frac"),
        "train": ("step_time_s", "tokens_per_s", "mfu_frac", "bubble_frac", "comm_exposed_s")}
FEASIBILITY = ("memory_bytes_per_chip", "fits", "valid", "invalid_reason")  # shown beside every phase's columns
# a sweep printed or written whole (table, md, json, xlsx) is held in memory: about 0.5 KB a row, so
# 8 million rows is ~4 GB; larger sweeps stream to --out FILE.parquet / .csv in bounded memory
MAX_ROWS_IN_MEMORY = 8_000_000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="evaluate a Cartesian product of any scenario fields (chunked; Parquet / CSV; "
                                     "Dask)",
                       description="Every configuration of the product of --grid fields (group fields system, "
                                   "workload, recompute, optimizer, pp_schedule, sequence_parallel, overlap vary "
                                   "slowest, then the --grid fields in order, the last fastest), evaluated in "
                                   "vectorised chunks, in this process or on a Dask cluster.")
    p.add_argument("--hardware", nargs="+", required=True, metavar="NAME", help="system key(s) (perfmodel specs list)")
    p.add_argument("--workload", nargs="+", required=True, metavar="NAME", help="workload key(s)")
    p.add_argument("--phase", choices=("decode", "prefill", "train"), default="decode")
    p.add_argument("--variant", choices=("nominal", "low", "high"), default="nominal",
                   help="projected systems: the low or high end of the stated ranges")
    p.add_argument("--grid", action="append", default=[], metavar="FIELD=VALUES",
                   help="a swept field, repeatable: batch, seq_len, context, tp, da, ep, cp, pp, dp, microbatches, "
                        "zero, pp_virtual, moe_imbalance, weights, compute, activations, kv_cache, expert_weights, "
                        "flash_attention, recompute, optimizer, pp_schedule, sequence_parallel, overlap; VALUES "
                        "'1,2,4' or 'A:B[:S]' or 'A:B:xF'")
    p.add_argument("--fixed", action="append", default=[], metavar="FIELD=VALUE",
                   help="a field held at one value, repeatable (e.g. --fixed tp=8 --fixed compute=fp8)")
    p.add_argument("--chunk", type=count(1, 2**24), default=None, metavar="N",
                   help="configurations per vectorised evaluation (default 65536)")
    p.add_argument("--workers", type=count(1, 1024), default=None, metavar="N",
                   help="threads in this process (default: the CPUs it may use, at most 4)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dask-scheduler", metavar="ADDRESS", help="run the chunks on this dask.distributed scheduler")
    g.add_argument("--dask-local", type=count(1, 1024), metavar="N",
                   help="run the chunks on a local Dask cluster of N processes")
    p.add_argument("--limit", type=count(0, "MAX_BATCH"), default=50, metavar="N",
                   help="table / md output: show the first N rows (default 50; 0: all)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--fits-only", action="store_true",
                   help="keep only configurations with a valid plan that fit memory and have finite results "
                        "(default: every row, marked by the valid, invalid_reason, fits and finite columns)")
    add_yes_option(p)
    add_output_options(p)
    p.set_defaults(func=cmd_sweep)
    p.epilog = ("--out FILE.parquet or FILE.csv streams every configuration to the file chunk by chunk; --out DIR/ "
                "writes a Parquet dataset (part-NNNNNN.parquet per chunk); other --out / --format values hold the "
                "rows in memory first. A streamed file is written as FILE.partial.parquet (DIR.partial/) and renamed "
                "when complete; a sweep that stops leaves its rows there and says so; a second sweep to the same "
                "--out while one runs is refused.")


def _pairs(items: list[str], option: str) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise ValueError(f"{option} expects FIELD=VALUES, got {it!r}")
        k, v = it.split("=", 1)
        k = k.strip().replace("-", "_")
        if k in out:
            raise ValueError(f"{option} {k}: given twice")
        out[k] = v.strip()
    return out


def cmd_sweep(args) -> int:
    from contextlib import ExitStack
    from pathlib import Path

    from perfmodel.report import export
    from perfmodel.sweep.engine import DEFAULT_CHUNK, SweepSpec
    from perfmodel.sweep.run import run_sweep

    from perfmodel import catalog

    systems = tuple(catalog.load_system(h, variant=args.variant, replaced=args.replaced) for h in args.hardware)
    workloads = tuple(catalog.load_workload(w) for w in args.workload)
    spec = SweepSpec(system=systems, workload=workloads, phase=args.phase, grid=_pairs(args.grid, "--grid"),
                     fixed=_pairs(args.fixed, "--fixed"), fits_only=args.fits_only)
    plan = spec.plan()  # checks every field before anything starts
    why = _catalogue_refusal(args.out) if args.out else None
    if why:
        return refuse("sweep", why)
    stream = args.out and (Path(args.out).suffix.lower() in (".parquet", ".pq", ".csv") or args.out.endswith("/")
                            or not Path(args.out).suffix)
    if not stream and plan.size > MAX_ROWS_IN_MEMORY:
        raise ValueError(f"sweep of {plan.size:,} configurations would be held in memory (at most "
                         f"{MAX_ROWS_IN_MEMORY:,}): write it with --out FILE.parquet (streamed in chunks)")
    kind = "parquet" if stream and Path(args.out).suffix.lower() not in (".csv",) else "csv"
    gate("sweep", f"{plan.size:,} configurations", *sweep_estimate(plan.size, kind), yes=args.yes)
    with ExitStack() as stack:
        client = None
        if args.dask_scheduler or args.dask_local:
            from perfmodel.core import extras

            Client = extras.require("dask.distributed").Client

            from perfmodel.sweep.run import local_cluster

            if args.dask_scheduler:
                client = stack.enter_context(Client(args.dask_scheduler))
            else:
                client = stack.enter_context(Client(stack.enter_context(local_cluster(args.dask_local))))
        result = run_sweep(plan, args.out if stream else None, chunk_size=args.chunk or DEFAULT_CHUNK,
                           progress=not args.no_progress, client=client, workers=args.workers)
    if stream:
        print_result(f"wrote {result.rows:,} configurations to {result.path} in {result.seconds:.2f} s "
                     f"({result.configs_per_s:,.0f} configurations/s, {result.chunks:,} chunks)")
        return 0
    df = result
    title = f"sweep: {', '.join(args.workload)} {args.phase} on {', '.join(args.hardware)}, {len(df):,} configurations"
    if len(df) and not args.fits_only:
        bad = int((~(df["valid"] & df["fits"] & df["finite"])).sum())
        title += f" ({bad:,} invalid, not fitting or not finite: see valid / fits / finite; --fits-only drops them)" \
            if bad else ""
    if args.format in ("table", "md"):
        swept = [a.name for a in plan.groups if a.size > 1] + [a.name if a.name in df else f"{a.name}_dtype"
                                                               for a in plan.inner]
        df = df[swept + [c for c in SHOW[args.phase] + FEASIBILITY if c in df and c not in swept]]
        if args.limit and len(df) > args.limit:
            title += f" (first {args.limit}; --limit 0 for all, --out FILE.parquet for the whole sweep)"
            df = df.head(args.limit)
    name = export.safe_filename("_".join(["sweep", args.phase, *args.workload, *args.hardware]))
    print_result(export.emit(df, args.format, title, args.out, meta={"size": plan.size, "phase": args.phase},
                             default_name=name))
    return 0


def _catalogue_refusal(out: str) -> str | None:
    """--out onto a spec, chip, calibration or workload file would replace an input of this and every other
    command (parsing has checked the files named on the command line; these it finds by name)."""
    from pathlib import Path

    from perfmodel.catalog.files import catalog_root

    root, path = catalog_root().resolve(), Path(out).resolve()
    for folder in ("hardware_specs", "workloads"):
        if path.is_file() and path.is_relative_to(root / folder):
            return (f"--out {out} is a catalogue file a sweep reads ({path.relative_to(root)}); choose another "
                    "output file")
    return None
