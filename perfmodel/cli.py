"""`perfmodel` command line: argparse subcommands, thin over the library.

Every command builds a DataFrame with library calls and hands it to export.emit
(--format table|md|csv|json|xlsx, --out FILE). Errors print one line naming what is
wrong; --debug shows the traceback.

Command modules (cli_*.py) each define `register(subparsers)`; this module wires them.
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from perfmodel import export

COMMAND_MODULES = ("perfmodel.cli_catalog", "perfmodel.cli_model", "perfmodel.cli_comm", "perfmodel.cli_serve",
                   "perfmodel.cli_report")


def add_output_options(p: argparse.ArgumentParser, formats=export.FORMATS) -> None:
    p.add_argument("--format", "-f", choices=formats, default="table",
                   help="output format (default: table; json is stable for tooling; xlsx writes a workbook)")
    p.add_argument("--out", "-o", metavar="FILE", help="write the output to FILE instead of the terminal")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfmodel",
        description="Analytic performance, memory, communication, power and cost model for AWS Trainium "
                    "(Trn1, Trn2, Trn3, projected Trn4) and comparable GPUs.",
        epilog="Run 'perfmodel COMMAND --help' for a command's options.")
    parser.add_argument("--catalog", metavar="DIR",
                        help="folder holding hardware_specs/ and workloads/ (default: this checkout, "
                             "or $PERFMODEL_CATALOG)")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
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
    return parser


def print_result(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.catalog:
        os.environ["PERFMODEL_CATALOG"] = str(Path(args.catalog).resolve())
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
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
