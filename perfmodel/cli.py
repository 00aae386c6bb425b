"""`perfmodel` command line: argparse subcommands, thin over the library.

Every command builds a DataFrame with library calls and hands it to export.emit
(--format table|md|csv|json|xlsx, --out FILE). Errors print one line naming what is
wrong; --debug shows the traceback.

Command modules (cli_*.py) each define `register(subparsers)`; this module wires them.
Start-up stays fast (`perfmodel --help` well under half a second): this module and the
cli_* modules import the model (pandas, sympy, pint, ...) only inside command functions,
and a command whose options need model names (choices, defaults) adds them through
`defer`, run only when that command is parsed (or by build_parser(complete=True)).
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

COMMAND_MODULES = ("perfmodel.cli_catalog", "perfmodel.cli_model", "perfmodel.cli_comm", "perfmodel.cli_validate",
                   "perfmodel.cli_calibrate", "perfmodel.cli_serve", "perfmodel.cli_report",
                   "perfmodel.cli_sweep")

# export.FORMATS, written out so that building the parser does not import export (pandas);
# tests/test_cli_startup.py checks that the two agree
FORMATS = ("table", "md", "csv", "json", "xlsx")
_DEFERRED = "_perfmodel_deferred"


def defer(p: argparse.ArgumentParser, add_arguments) -> None:
    """Run add_arguments(p) only when p's command is parsed: its options may then import the model."""
    setattr(p, _DEFERRED, add_arguments)


def _complete(p: argparse.ArgumentParser | None) -> None:
    add_arguments = getattr(p, _DEFERRED, None)
    if add_arguments is not None:
        setattr(p, _DEFERRED, None)
        add_arguments(p)


class _SubParsers(argparse._SubParsersAction):
    """Subcommands whose deferred options are added when the command is chosen."""

    def __call__(self, parser, namespace, values, option_string=None):
        _complete(self._name_parser_map.get(values[0]))
        super().__call__(parser, namespace, values, option_string)


def add_output_options(p: argparse.ArgumentParser, formats=FORMATS) -> None:
    p.add_argument("--format", "-f", choices=formats, default="table",
                   help="output format (default: table; json is stable for tooling; xlsx writes a workbook)")
    p.add_argument("--out", "-o", metavar="FILE", help="write the output to FILE instead of the terminal")


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
    parser.add_argument("--calibration", metavar="FILE", action="append", default=[], help=_CALIBRATION_HELP)
    parser.register("action", "parsers", _SubParsers)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import importlib

    for mod in COMMAND_MODULES:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:  # a command family not built yet
                continue
            raise
        module.register(sub)
    for p in dict.fromkeys(sub.choices.values()):  # also accepted after the command: perfmodel validate --calibration F
        p.add_argument("--calibration", metavar="FILE", action="append", dest="calibration_cmd",
                       default=argparse.SUPPRESS, help=_CALIBRATION_HELP)
    if complete:
        for p in sub.choices.values():
            _complete(p)
    return parser


_CALIBRATION_HELP = ("apply a calibrated parameter set written by 'perfmodel calibrate' to this command (repeatable: "
                     "one file per family); without it every command uses the family files' values")


def _calibrated(files: list[str]):
    """Context in which the calibrated sets of `files` replace their family-file values (none: no change)."""
    import contextlib

    if not files:
        return contextlib.nullcontext()
    from perfmodel import calibration

    sets = [calibration.load_calibrated_set(f) for f in files]
    for s in sets:
        print(f"perfmodel: calibrated set {s.origin} applied ({s.family}: "
              f"{', '.join(f'{k} = {calibration._as_written(v, _kind(s, k))}' for k, v in s.values.items())})",
              file=sys.stderr)
    return calibration.applied(*sets)


def _kind(s, name: str) -> str:
    return s.file.params[name].kind if s.file else "ratio"


def print_result(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(complete=False)
    args = parser.parse_args(argv)
    if args.catalog:
        os.environ["PERFMODEL_CATALOG"] = str(Path(args.catalog).resolve())
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with _calibrated(list(args.calibration) + list(getattr(args, "calibration_cmd", []))):
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


if __name__ == "__main__":
    sys.exit(main())
