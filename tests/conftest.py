"""Test session set-up: compiled graphs and computed claims shared on disk by the test workers of one checkout
(graph_cache, claims/result_cache), in the checkout's .pytest_cache (a fresh clone starts empty), unless
PERFMODEL_CACHE_DIR says otherwise; tables unfitted unless a test sets COLUMNS."""

import os
from pathlib import Path

os.environ.setdefault("PERFMODEL_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "perfmodel"))
# tables keep every column unless a test sets the terminal's width (tests/test_terminal_width.py): a COLUMNS
# inherited from the shell or the CI runner would otherwise change what every table test reads
os.environ.pop("COLUMNS", None)
