"""The closed loop around the GPU work (serving/closed_loop.py): who runs, who waits, when the first token
arrives. Physics checked by hand: one client never queues, a burst of c prompts waits for those ahead,
later waves spread out, a capped engine queues the rest for (C - S) / S of a running request's life."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.serving import closed_loop as cl

T_F, TPOT, O = 0.1, 0.01, 900.0  # s, s, tokens


def _wait(clients, waves=10, t_f=T_F, tpot=TPOT, after=0.0, ratio=0.8):
    return cl.prefill_wait(np.atleast_1d(np.asarray(clients, dtype=float)), t_f, after, tpot, O, waves, ratio)


def test_running_is_the_smallest_of_concurrency_cap_and_kv_pages():
    s = cl.running([4, 64, 512, 512], [1024, 1024, 128, 1024], [1e9, 50, 1e9, 200], multiple=[1, 1, 1, 8])
    assert list(s) == [4, 50, 128, 200]
    assert cl.running([3], [1024], [1e9], multiple=[8])[0] == 8  # at least one sequence per rank and stage


def test_one_client_never_waits():
    # its prompt costs t_f x I_j / mean(I); lengths uniform in [0.8 L, L]: the mean over 10 draws is near t_f
    assert _wait(1)[0] == pytest.approx(T_F, rel=0.1)
    assert _wait(1, ratio=1.0)[0] == pytest.approx(T_F)


def test_a_burst_waits_for_the_prompts_ahead():
    # one wave of c simultaneous prompts through one FIFO prefill server: prompt j ends after j prompts
    c = 16
    assert _wait(c, waves=1, ratio=1.0)[0] == pytest.approx(T_F * (c + 1) / 2)


def test_later_waves_spread_out_and_wait_less_than_the_burst():
    burst, ten = _wait(16, waves=1)[0], _wait(16, waves=10)[0]
    assert T_F < ten < burst
    # the spread of output lengths (0.2 O decode steps = 1.8 s) dwarfs 16 prompts of 0.1 s: later waves barely queue
    assert ten < T_F + (burst - T_F) / 10 + 0.5 * T_F


def test_more_clients_per_server_wait_longer():
    w = _wait([1, 4, 16, 64, 256])
    assert np.all(np.diff(w) > 0)


def test_a_rows_wait_does_not_depend_on_the_rows_beside_it():
    alone = _wait([16], t_f=0.05)[0]
    together = cl.prefill_wait(np.array([16.0, 16.0, 4.0]), np.array([0.2, 0.05, 0.1]), 0.0, TPOT, O, 10, 0.8)
    assert together[1] == pytest.approx(alone)


def _queue(clients, first, waves=10, o=O, ratio=0.8, step=0.01):
    c = np.atleast_1d(np.asarray(clients, dtype=float))
    interleaved = step + c * T_F / (o - 1)  # the steady state's TPOT: each cycle's c prompts spread over its steps
    return cl.prefill_queue(c, T_F, 0.0, interleaved, o, waves, ratio, step=step, prefill_first=first)


def test_a_prefill_first_burst_by_hand():
    # one wave of c prompts at once, equal lengths: prompt j's prefill ends at j t_f; nobody decodes until the
    # burst is prefilled (c t_f), so request j waits (c - j) t_f beyond its first token: mean (c - 1) t_f / 2
    c, o, step = 16, 100.0, 0.01
    wait, tpot = _queue(c, True, waves=1, o=o, ratio=1.0, step=step)
    assert wait[0] == pytest.approx(T_F * (c + 1) / 2)
    assert tpot[0] == pytest.approx(step + T_F * (c - 1) / 2 / (o - 1))


def test_one_client_decodes_alike_under_either_engine():
    mixed, first = _queue(1, False), _queue(1, True)
    assert first[0][0] == pytest.approx(mixed[0][0]) and first[1][0] == pytest.approx(0.01)


def test_prefill_first_moves_the_same_work_from_tpot_to_ttft():
    # short outputs: the spread of finishing times (0.2 O steps = 0.2 s) is shorter than a burst of prompts
    # (1.6 s), so a prefill-first engine keeps its clients in step: every wave queues as a burst (long TTFT)
    # and decodes undisturbed (short TPOT); a mixing engine spreads the clients out and carries the prefill
    # in its decode steps. In step, the GPU's work per cycle is c prompts and O - 1 decode steps: requests/s
    # is that bound's.
    c, o, step = 16, 100.0, 0.01
    (w_mix, t_mix), (w_first, t_first) = _queue(c, False, o=o), _queue(c, True, o=o)
    assert w_first[0] > 3 * w_mix[0] and t_first[0] < 0.8 * t_mix[0]
    assert c / (w_first[0] + (o - 1) * t_first[0]) == pytest.approx(c / (c * T_F + (o - 1) * step), rel=0.1)


def test_queue_beyond_the_running_cap_by_hand():
    v = dict(t_d=0.01, tau=0.001, t_f=0.1, L_f=0.1, kappa=5.0, T_p=0.12, TPOT_gpu=0.012, O=900.0)
    first = 5 * 0.011 + 0.011 / 2 + 0.0 + 0.12
    assert cl.evaluate("first_token", **{k: v[k] for k in ("t_d", "tau", "t_f", "L_f", "kappa", "T_p")}) == \
        pytest.approx(first)
    assert cl.evaluate("ttft_agg", C=128, S=128, **v) == pytest.approx(first)
    queued = cl.evaluate("ttft_agg", C=512, S=128, **v)
    assert queued == pytest.approx(first + 3 * (first + 899 * 0.013))
    assert cl.evaluate("tpot", TPOT_gpu=0.012, tau=0.001) == pytest.approx(0.013)


def test_formulas_are_shown_as_latex_with_their_symbols():
    tab, sym = cl.latex_table(), cl.symbol_table()
    assert {"running", "TTFT (agg)", "TTFT (disagg)"} <= set(tab["quantity"])
    assert tab["latex"].str.len().gt(0).all() and sym["unit"].isin(["1", "s", "1/s"]).all()


def test_a_missing_symbol_is_named():
    with pytest.raises(TypeError, match="missing"):
        cl.evaluate("tpot", TPOT_gpu=0.01)
