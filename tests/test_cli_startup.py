"""CLI start-up stays light: building the parser (what `perfmodel --help` does) imports no model module.

No timing here (bench/bench_startup.py measures it); only what gets imported.
"""

import json
import subprocess
import sys

from perfmodel import cli
from perfmodel.cli import common
from perfmodel.report import export

HEAVY = ("pandas", "numpy", "sympy", "scipy", "pint", "pydantic", "streamlit", "altair", "rich")


def _imported_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_cli_formats_match_export():
    assert common.FORMATS == export.FORMATS


def test_top_level_help_imports_no_model_module():
    mods = _imported_after("import contextlib, io\nfrom perfmodel import cli\n"
                           "with contextlib.redirect_stdout(io.StringIO()):\n"
                           "    try:\n        cli.main(['--help'])\n    except SystemExit:\n        pass")
    heavy = sorted(m for m in mods if m.split(".")[0] in HEAVY)
    model = sorted(m for m in mods if m.startswith("perfmodel.") and not m.startswith("perfmodel.cli"))
    assert not heavy and not model, f"perfmodel --help imports {heavy + model}"


def test_deferred_options_are_added_when_the_command_runs(capsys):
    parser = cli.build_parser(complete=False)
    sub = next(a for a in parser._actions if a.dest == "command")
    assert not any(a.dest == "systems" for a in sub.choices["report"]._actions)  # not built yet
    args = parser.parse_args(["report", "--no-claims"])
    assert args.func.__name__ == "cmd_report" and "trn2-ultraserver" in args.systems
    full = cli.build_parser()
    sub = next(a for a in full._actions if a.dest == "command")
    assert any(a.dest == "op" for a in sub.choices["collective"]._actions)
