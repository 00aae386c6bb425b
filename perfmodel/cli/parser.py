"""`perfmodel` command line: argparse subcommands, thin over the library.

Every command builds a DataFrame with library calls and hands it to export.emit
(--format table|md|csv|json|xlsx, --out FILE). Errors print one line naming what is
wrong; --debug shows the traceback.

Command modules (cli/<group>.py) each define `register(subparsers)`; this module wires them.
Start-up stays fast (`perfmodel --help` well under half a second): this module and the
command modules import the model (pandas, sympy, pint, ...) only inside command functions,
and a command whose options need model names (choices, defaults) adds them through
`defer`, run only when that command is parsed (or by build_parser(complete=True)).
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path

from perfmodel.cli import calibrated_sets
from perfmodel.cli.common import CALIBRATION_HELP, SubParsers, complete_deferred

COMMAND_MODULES = ("perfmodel.cli.catalog", "perfmodel.cli.comm", "perfmodel.cli.validate", "perfmodel.cli.calibrate",
                   "perfmodel.cli.serve", "perfmodel.cli.plan", "perfmodel.cli.simulate", "perfmodel.cli.report",
                   "perfmodel.cli.sweep", "perfmodel.cli.scenarios")


def build_parser(complete: bool = True) -> argparse.ArgumentParser:
    """The full parser; complete=False leaves each command's deferred options until it is parsed."""
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="Analytic performance, memory, communication, power and cost model for AWS Trainium "
                    "(Trn1, Trn2, Trn3, projected Trn4) and comparable GPUs.",
        epilog="Run 'perfmodel COMMAND --help' for a command's options.")
    parser.add_argument("--catalog", metavar="DIR",
                        help="folder holding hardware_specs/ and workloads/ (default: this checkout, "
                             "or $PERFMODEL_CATALOG)")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    parser.add_argument("--calibration", metavar="FILE", action="append", default=[], help=CALIBRATION_HELP)
    parser.register("action", "parsers", SubParsers)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    for p in dict.fromkeys(sub.choices.values()):  # also accepted after the command: perfmodel validate --calibration F
        p.add_argument("--calibration", metavar="FILE", action="append", dest="calibration_cmd",
                       default=argparse.SUPPRESS, help=CALIBRATION_HELP)
    if complete:
        for p in sub.choices.values():
            complete_deferred(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(complete=False)
    args = parser.parse_args(argv)
    if args.catalog:
        os.environ["PERFMODEL_CATALOG"] = str(Path(args.catalog).resolve())
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from perfmodel.core import terminal

    same = _shared_output(args)
    if same:
        parser.exit(2, f"perfmodel {args.command}: {same}\n")
    wide = terminal.WIDE.set(bool(getattr(args, "wide", False)))
    command = terminal.COMMAND.set((args.command, _inputs(args)))
    try:
        with _outputs_guarded(args):
            # resolved once here and passed down: each command hands args.replaced to what it loads
            args.replaced = calibrated_sets.replacements(list(args.calibration)
                                                         + list(getattr(args, "calibration_cmd", [])))
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line; --debug for the traceback
        if args.debug:
            traceback.print_exc()
        else:
            msg = str(exc).strip() or type(exc).__name__
            first = msg.splitlines()
            print(f"perfmodel: error: {first[0]}" + (f" (+{len(first) - 1} more lines; --debug)" if len(first) > 1
                                                       else ""), file=sys.stderr)
            for extra in first[1:6]:
                print(f"  {extra}", file=sys.stderr)
        return 1
    finally:
        terminal.WIDE.reset(wide)
        terminal.COMMAND.reset(command)


OUTPUT_OPTIONS = ("out", "chart", "requests_out", "timeline_out", "save_scenario")  # options naming a file written


def _shared_output(args) -> str:
    """Why the command may not run when two of its output options name one path (before any work), else ''."""
    seen: dict[str, str] = {}
    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if not value or not isinstance(value, (str, Path)):
            continue
        real = os.path.realpath(value)
        if real in seen:
            return (f"--{seen[real].replace('_', '-')} and --{dest.replace('_', '-')} both name {value}: give each "
                    "output its own path")
        seen[real] = dest
    return ""


def _outputs_guarded(args):
    """The command's outputs never replace its inputs, a catalogue file or each other (core/safe_write.py);
    calibrated sets (`calibrate --out`) are the catalogue's one writable folder, and the intervals file the one
    file `validate --build-intervals` rewrites."""
    from perfmodel.catalog.files import catalog_root
    from perfmodel.core import safe_write

    root = catalog_root()
    allowed = [root / "hardware_specs" / "calibration" / "fitted"]
    if getattr(args, "build_intervals", False):
        allowed.append(root / "hardware_specs" / "calibration" / "intervals.json")
    return safe_write.command_scope(protected=[root / d for d in ("hardware_specs", "workloads", "reference")],
                                    allowed=allowed)


def _inputs(args) -> dict:
    """The command's options as given (a JSON envelope's `inputs`): plain values, paths and others as text."""
    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return str(v)

    return {k: plain(v) for k, v in sorted(vars(args).items()) if k not in ("func", "command", "debug", "replaced")}


if __name__ == "__main__":
    sys.exit(main())
