"""Demand files (`plan --demand FILE`, workloads/demands/*.toml): read and checked here, where files are read,
so the planner's Demand record (serving/demand.py) is built from plain values.

    read(path) -> (table, name)   the [demand] table as a dict and the file's stem (the demand's default name);
                                  one line naming the file on bad text, bad TOML, a missing [demand] table, or a
                                  workload the catalogue does not hold (with did-you-mean)

Field values are checked by Demand.from_dict, whose errors start with the file's name and the field.

Does not: build the Demand record (serving/demand.py, at the edge: cli/plan.py).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from perfmodel.catalog import files, workload_files
from perfmodel.core import input_files


def read(path: str | Path) -> tuple[dict, str]:
    path = Path(path)
    try:
        data = tomllib.loads(input_files.read_text(path, "demand file"))
    except RecursionError:
        raise ValueError(f"{path}: malformed TOML: nested too deeply to parse") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: malformed TOML in demand file: {exc}") from None
    if "demand" not in data:
        raise ValueError(f"{path}: no [demand] table")
    table = data["demand"]
    if not isinstance(table, dict):
        raise ValueError(f"{path}: field demand: expected a [demand] table, got {table!r}")
    workload = table.get("workload")
    known = workload_files.list_workloads()
    if isinstance(workload, str) and workload and workload not in known:
        raise ValueError(f"{path}: field demand.workload: no such workload {workload!r}"
                         f"{files.did_you_mean(workload, known)} (perfmodel workloads list)")
    return table, path.stem
