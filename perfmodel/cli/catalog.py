"""CLI: `specs list|show|compare`, `workloads list|show|import`, `check`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfmodel.cli.common import add_output_options, print_result

# the catalogue and the writers (pandas) are imported inside the command functions: see cli/parser.py


def register(sub: argparse._SubParsersAction) -> None:
    specs = sub.add_parser("specs", help="hardware spec sheets: list, show, compare",
                           description="Hardware spec sheets (hardware_specs/*.toml).")
    ssub = specs.add_subparsers(dest="specs_command", metavar="ACTION", required=True)
    p = ssub.add_parser("list", help="list the systems in the catalogue")
    add_output_options(p)
    p.set_defaults(func=cmd_specs_list)
    p = ssub.add_parser("show", help="every field of one system: file string, SI value, status, source")
    p.add_argument("name", help="system key, e.g. trn2-ultraserver")
    p.add_argument("--variant", choices=("nominal", "low", "high"), default="nominal",
                   help="for projected systems: the low or high end of the stated ranges")
    add_output_options(p)
    p.set_defaults(func=cmd_specs_show)
    p = ssub.add_parser("compare", help="side-by-side table with ratios to the first system")
    p.add_argument("names", nargs="+", metavar="NAME", help="two or more system keys")
    p.add_argument("--level", choices=("chip", "node", "scaleup"), default="scaleup",
                   help="compare per chip, per node (instance) or per scale-up domain (default)")
    add_output_options(p)
    p.set_defaults(func=cmd_specs_compare)

    wl = sub.add_parser("workloads", help="model architectures: list, show, import",
                        description="Workload catalogue (workloads/*.toml, Hugging Face field names).")
    wsub = wl.add_subparsers(dest="workloads_command", metavar="ACTION", required=True)
    p = wsub.add_parser("list", help="list the workloads with parameter counts")
    add_output_options(p)
    p.set_defaults(func=cmd_workloads_list)
    p = wsub.add_parser("show", help="one workload's fields and parameter breakdown")
    p.add_argument("name")
    add_output_options(p)
    p.set_defaults(func=cmd_workloads_show)
    p = wsub.add_parser("import", help="turn a Hugging Face config.json (a path, or a model id already in the "
                        "local Hugging Face cache) into a workload file (no network)")
    p.add_argument("path", help="path to config.json, or a Hugging Face model id such as Qwen/Qwen3-32B")
    p.add_argument("--name", help="key for the new workload (default: the id's model name lower-cased, or the "
                   "config.json's folder name)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--write", action="store_true", help="write workloads/NAME.toml into the catalogue")
    where.add_argument("--out", "-o", metavar="FILE", help="write the workload to FILE (NAME.toml anywhere; any "
                       "command then takes --workload FILE)")
    p.add_argument("--force", action="store_true", help="replace --out FILE if it exists")
    p.set_defaults(func=cmd_workloads_import)

    p = sub.add_parser("check", help="validate every catalogue file; exit non-zero on any problem",
                       description="Validate spec, workload and calibration files: unknown keys, units, "
                                   "dimensions, values, sources. Published totals that differ from chips x chip "
                                   "figures are reported as warnings.")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors")
    p.set_defaults(func=cmd_check)


def _systems(names: list[str], replaced):
    from perfmodel import catalog

    return [catalog.load_system(n, replaced=replaced) for n in names]


def cmd_specs_list(args) -> int:
    from perfmodel import catalog
    from perfmodel.catalog import spec_tables
    from perfmodel.report import export

    df = spec_tables.systems_frame(_systems(catalog.list_systems(), args.replaced))
    print_result(export.emit(df, args.format, "Systems in the catalogue", args.out, default_name="specs_list"))
    return 0


def cmd_specs_show(args) -> int:
    from perfmodel import catalog
    from perfmodel.catalog import spec_tables
    from perfmodel.report import export

    system = catalog.load_system(args.name, variant=args.variant, replaced=args.replaced)
    df = spec_tables.show_frame(system)
    meta = {"system": system.name, "display_name": system.display_name, "chip": system.chip.name,
            "variant": args.variant}
    if args.format in ("table", "md"):
        df = df.drop(columns=["si_value"]).assign(si=[
            f"{v:.6g} {u}".strip() for v, u in zip(spec_tables.show_frame(system)["si_value"], df["si_unit"])])
        df = df[["field", "value_as_written", "si", "status", "source", "alternatives", "note"]]
    print_result(export.emit(df, args.format, f"{system.display_name}: spec sheet", args.out, meta=meta,
                             default_name=f"specs_{system.name}"))
    return 0


def cmd_specs_compare(args) -> int:
    from perfmodel.catalog import spec_tables
    from perfmodel.report import export

    if len(args.names) < 2:
        raise ValueError("compare needs at least two systems")
    systems = _systems(args.names, args.replaced)
    df = spec_tables.compare_frame(systems, args.level)
    meta = {"systems": args.names, "level": args.level, "values": "SI units (see unit column)",
            "ratios": f"each system / {args.names[0]}"}
    shown = spec_tables.compare_display(df, systems) if args.format in ("table", "md") else df
    caption = _uncertain_caption(systems)
    print_result(export.emit(shown, args.format, f"Compare per {args.level}", args.out, meta=meta,
                             default_name=export.config_name([("compare", "_".join(args.names)), ("", args.level)]),
                             caption=caption))
    return 0


def _uncertain_caption(systems) -> str:
    flagged = []
    for s in systems:
        fields = s.uncertain_fields()
        if fields:
            kinds = sorted({v.status.value for v in fields.values()})
            flagged.append(f"{s.name}: {len(fields)} {'/'.join(kinds)} field(s)")
    return ("Figures resting on estimated or projected inputs: " + "; ".join(flagged)) if flagged else ""


def cmd_workloads_list(args) -> int:
    from perfmodel.catalog import workload_tables
    from perfmodel.report import export

    df = workload_tables.workloads_frame()
    print_result(export.emit(df, args.format, "Workloads in the catalogue", args.out, default_name="workloads_list"))
    return 0


def cmd_workloads_show(args) -> int:
    from perfmodel.catalog import workload_tables
    from perfmodel.report import export

    df = workload_tables.workload_show_frame(args.name)
    print_result(export.emit(df, args.format, f"Workload {args.name}", args.out, default_name=f"workload_{args.name}"))
    return 0


def cmd_workloads_import(args) -> int:
    from perfmodel import catalog
    from perfmodel.catalog import workload_files, workload_refs
    from perfmodel.catalog.spec_schema import CatalogError

    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        out = out / f"{args.name or workload_refs.default_name(args.path)}.toml"
    # a workload file is named by its key: --out FILE.toml names it unless --name does
    name = args.name or (out.stem if out is not None else workload_refs.default_name(args.path))
    text = workload_refs.config_text(args.path, name)
    if args.write or out is not None:
        dest = out if out is not None else catalog.catalog_root() / "workloads" / f"{name}.toml"
        if dest.exists() and not (out is not None and args.force):
            raise CatalogError(f"{dest}: already exists ({'--force replaces it' if out else 'remove it first'})")
        workload_files.write_workload(text, dest, overwrite=True)
        print_result(f"wrote {dest}")
    else:
        print_result(text)
    return 0


def cmd_check(args) -> int:
    import pandas as pd

    from perfmodel import catalog
    from perfmodel.catalog.check import check_catalog

    findings = check_catalog()
    errors = [f for f in findings if f.level == "error"]
    warnings = [f for f in findings if f.level == "warning"]
    for f in errors:
        print(f"ERROR {f.message}", file=sys.stderr)
    for f in warnings:
        print(f"warning {f.message}", file=sys.stderr)
    root = catalog.catalog_root()
    counts = pd.Series({"systems": len(catalog.list_systems(root)), "chips": len(catalog.list_chips(root)),
                        "workloads": len(list((root / "workloads").glob("*.toml")))})
    status = "FAILED" if errors or (args.strict and warnings) else "ok"
    print_result(f"perfmodel check: {status}: {counts['systems']} systems, {counts['chips']} chips, "
                 f"{counts['workloads']} workloads; {len(errors)} errors, {len(warnings)} warnings")
    return 1 if status == "FAILED" else 0
