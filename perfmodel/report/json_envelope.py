"""Every command's JSON output, one envelope (stable for tooling; documented in the README):

    {"perfmodel": version, "command": name, "inputs": {option: value as given}, "meta": {...},
     "results": {table: [records]}, "provenance": [records]}

Values are SI, columns named with their unit suffix (time_s, hbm_bytes, ...), as in CSV; a command with one table
names it 'table'; the provenance sheet, where a command has one, is the top-level 'provenance'.

Does not: choose what a command reports (its frames and meta are the command's).
"""

from __future__ import annotations

import json

import pandas as pd


def _records(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.to_json(orient="records", double_precision=15, default_handler=str))


def envelope(tables: dict[str, pd.DataFrame], meta: dict | None = None) -> str:
    """Every command's JSON, one shape (stable for tooling; values in SI, columns named with their unit suffix):
        perfmodel   the version that computed it
        command     the command, and inputs: its options as given (core/terminal.COMMAND, set by the CLI)
        meta        what the command states beside its numbers (system, units, caveats, ...)
        results     {table name: [one record per row]}; a command with one table names it 'table'
        provenance  the provenance sheet's records where the command has one (every input value, its unit,
                    status and source), else []"""
    from perfmodel import __version__
    from perfmodel.core import terminal

    command, inputs = terminal.COMMAND.get()
    return json.dumps({"perfmodel": __version__, "command": command, "inputs": inputs, "meta": meta or {},
                       "results": {name: _records(f) for name, f in tables.items() if name != "provenance"},
                       "provenance": _records(tables["provenance"]) if "provenance" in tables else []}, indent=2)
