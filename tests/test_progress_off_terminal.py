"""Progress off a terminal (issue 22): a pipe or a CI log gets a line every period while long work runs and one when
it ends, so a run is never silent; a short run prints nothing; --no-progress prints nothing at all."""

from __future__ import annotations

import re
import time

from perfmodel.cli.common import progress_bar


def test_a_long_run_off_a_terminal_prints_periodic_lines(capsys):
    with progress_bar("evaluating", True, period=0.05) as cb:
        cb(1, 4)
        time.sleep(0.2)
        cb(3, 4, "trn3-ultraserver")
        time.sleep(0.12)
    err = capsys.readouterr().err.splitlines()
    assert len(err) >= 3 and all(re.fullmatch(r"perfmodel: .+, \d+ s( \(done\))?", line) for line in err)
    assert err[0].startswith("perfmodel: evaluating: 1/4") and err[-1].endswith("(done)")
    assert any("trn3-ultraserver: 3/4" in line for line in err)


def test_a_short_run_and_no_progress_print_nothing(capsys):
    with progress_bar("quick", True, period=5.0) as cb:
        cb(1, 1)
    with progress_bar("off", False) as cb:
        assert cb is None
    assert capsys.readouterr().err == ""


def test_an_error_inside_still_stops_the_heartbeat(capsys):
    try:
        with progress_bar("failing", True, period=0.02):
            time.sleep(0.05)
            raise ValueError("boom")
    except ValueError:
        pass
    time.sleep(0.06)
    n = len(capsys.readouterr().err.splitlines())
    time.sleep(0.06)
    assert capsys.readouterr().err == "" and n >= 1  # nothing more after the block ended
