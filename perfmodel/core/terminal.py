"""How wide a terminal table may be: the terminal's columns, or every column (`--wide`, or output that is not a
terminal: a pipe, a file, a CI log keep all of them).

    table_width()   COLUMNS when set (>= 40), else the terminal's width when stdout is one, else None (no limit)
    WIDE            set by the CLI for `--wide`: None whatever the terminal
    COMMAND         set by the CLI for the command running: (name, its options as given), what a JSON
                    envelope's `command` and `inputs` say (report/export.py)

Does not: render anything (report/fit_columns.py chooses the columns, report/export.py draws them).
"""

from __future__ import annotations

import os
import shutil
import sys
from contextvars import ContextVar

WIDE: ContextVar[bool] = ContextVar("perfmodel_wide_tables", default=False)
COMMAND: ContextVar[tuple[str, dict]] = ContextVar("perfmodel_command", default=("", {}))
MIN_COLUMNS = 40  # narrower than this is not a terminal a table can be read in: ignore such a COLUMNS


def table_width() -> int | None:
    """Columns a table may take, or None for every column at its natural width."""
    if WIDE.get():
        return None
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) >= MIN_COLUMNS:
        return int(env)
    if sys.stdout.isatty():
        return max(MIN_COLUMNS, shutil.get_terminal_size().columns)
    return None
