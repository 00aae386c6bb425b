"""What every command module shares: output options, deferred options, printing a result.

A command whose options need model names (choices, defaults) adds them through `defer`:
they are added only when that command is parsed (or by build_parser(complete=True)), so
building the parser imports no model code.
"""

from __future__ import annotations

import argparse
import sys

# export.FORMATS, written out so that building the parser does not import export (pandas);
# tests/test_cli_startup.py checks that the two agree
FORMATS = ("table", "md", "csv", "json", "xlsx")
_DEFERRED = "_perfmodel_deferred"


def defer(p: argparse.ArgumentParser, add_arguments) -> None:
    """Run add_arguments(p) only when p's command is parsed: its options may then import the model."""
    setattr(p, _DEFERRED, add_arguments)


def complete_deferred(p: argparse.ArgumentParser | None) -> None:
    add_arguments = getattr(p, _DEFERRED, None)
    if add_arguments is not None:
        setattr(p, _DEFERRED, None)
        add_arguments(p)


class SubParsers(argparse._SubParsersAction):
    """Subcommands whose deferred options are added when the command is chosen."""

    def __call__(self, parser, namespace, values, option_string=None):
        complete_deferred(self._name_parser_map.get(values[0]))
        super().__call__(parser, namespace, values, option_string)


def add_output_options(p: argparse.ArgumentParser, formats=FORMATS) -> None:
    p.add_argument("--format", "-f", choices=formats, default="table",
                   help="output format (default: table; json is stable for tooling; xlsx writes a workbook)")
    p.add_argument("--out", "-o", metavar="FILE", help="write the output to FILE instead of the terminal")


def print_result(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


CALIBRATION_HELP = ("apply a calibrated parameter set written by 'perfmodel calibrate' to this command (repeatable: "
                     "one file per family); without it every command uses the family files' values")
