"""The deployment's service capacity (simulation/capacity.py): the formula against the steady state's own
definitions, the workers that hold a load, and `perfmodel simulate`'s warning when the load exceeds it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perfmodel import cli
from perfmodel.catalog import load_system
from perfmodel.catalog.workload_files import load_workload
from perfmodel.serving.steady_state import Mix, ServingOptions, serve
from perfmodel.simulation import capacity, deployment, traffic

BASE = ["simulate", "--hardware", "p5.48xlarge", "--workload", "llama-3.1-8b", "--input", "512", "--output", "128",
        "--no-progress"]
I, O = 512, 128


@pytest.fixture(scope="module")
def h100_llama():
    return load_system("p5.48xlarge"), load_workload("llama-3.1-8b")


def _reqs(kind="poisson", rate=10.0, n=50):
    t = traffic.Traffic(kind, rate=rate, clients=4)
    return t, traffic.draw(t, traffic.Shapes(input_tokens=((I, 1.0),), output_tokens=((O, 1.0),)), n)


def test_capacity_is_the_work_per_request_at_the_running_cap(h100_llama):
    """r = C / (O cycle), the most over C <= C_max = min(S_max, KV-held sequences), the cycle rebuilt by hand
    from the steady state's decode step t_d and prefill step t_f (aggregated, p = d_a = 1, no host time):
    cycle = t_d + (C / O) t_f, the replica's time per decode step with the prefills it must interleave."""
    system, arch = h100_llama
    plan = deployment.one_plan()
    t, reqs = _reqs(rate=120.0)
    cap = capacity.assess(system, arch, plan, t, reqs)
    one = serve(system, arch, deployment.one_plan(), Mix(I, O)).iloc[0]
    c_max = min(deployment.BARE_MAX_RUNNING, int(one["max_concurrency_kv"]))
    assert cap.running_cap == c_max and 1 <= cap.concurrency <= c_max
    assert cap.roles == ("replica",) and cap.workers == (1,)

    def by_hand(c: int) -> float:
        row = serve(system, arch, deployment.Grid.of(concurrency=c), Mix(I, O)).iloc[0]
        cycle = float(row["decode_step_s"]) + (c / O) * float(row["prefill_step_s"])
        assert row["output_tokens_per_s_per_replica"] == pytest.approx(c / cycle, rel=1e-9)
        little = c / float(row["e2e_latency_s"])  # Little's law on the running set: the same within 2%
        assert abs(little * O * cycle / c - 1) < 0.02
        return c / (O * cycle)

    r = by_hand(cap.concurrency)
    assert cap.per_worker_per_s[0] == pytest.approx(r, rel=1e-9) and cap.requests_per_s == pytest.approx(r)
    assert all(by_hand(c) <= r * (1 + 1e-9) for c in (c_max, c_max // 2, c_max // 4, 1))
    assert cap.utilisation == pytest.approx(120.0 / r)
    assert cap.to_hold() == (math.ceil(120.0 / (capacity.MAX_UTILISATION * r)),)
    two = capacity.assess(system, arch, plan, t, reqs, layout=deployment.Layout(replicas=2))
    assert two.requests_per_s == pytest.approx(2 * r, rel=1e-9) and two.to_hold() == cap.to_hold()


def test_disaggregated_capacity_is_the_slower_pool(h100_llama):
    system, arch = h100_llama
    t, reqs = _reqs(rate=40.0)
    opts = ServingOptions(mode="disaggregated")
    cap = capacity.assess(system, arch, deployment.one_plan(), t, reqs, opts, deployment.Layout(prefill=1, decode=2))
    row = serve(system, arch, deployment.Grid.of(concurrency=cap.concurrency), Mix(I, O), opts).iloc[0]
    r_p = 1.0 / float(row["prefill_step_s"])
    r_d = cap.concurrency / (O * float(row["decode_step_s"]))  # TPOT = t_d: the decode pool does no prefill
    assert cap.roles == ("prefill", "decode")
    assert cap.per_worker_per_s == pytest.approx((r_p, r_d), rel=1e-9)
    assert cap.requests_per_s == pytest.approx(min(r_p, 2 * r_d), rel=1e-9)


def test_workers_to_hold_and_running_cap():
    assert capacity.workers_to_hold(10, 8.09) == 2  # 10 / (0.9 x 8.09) = 1.37
    assert capacity.workers_to_hold(7.2, 8.0) == 1  # exactly 90% busy holds
    assert capacity.workers_to_hold(7.3, 8.0) == 2
    assert capacity.workers_to_hold(0.5, 8.0) == 1
    assert capacity.workers_to_hold(10, 8.0, max_utilisation=1.0) == 2
    with pytest.raises(ValueError, match="max utilisation"):
        capacity.workers_to_hold(10, 8.0, max_utilisation=1.5)
    assert capacity.running_cap(1024, 252.0, 1) == 252
    assert capacity.running_cap(64, 252.0, 1) == 64
    assert capacity.running_cap(1024, float("inf"), 4) == 1024
    assert capacity.running_cap(1024, 252.0, 1, kv_blocks=2000, context=2048) == 15  # 2000 // 128 blocks
    assert capacity.running_cap(1024, 252.0, 4, kv_blocks=2000, context=2048) == 12
    assert capacity.worker_rate(8192.0, 1024) == pytest.approx(8.0)
    assert capacity.prefill_rate(2, 0.05) == pytest.approx(40.0)


def test_offered_rate_by_traffic():
    t, reqs = _reqs("gamma", rate=3.5)
    assert capacity.offered_rate(t, reqs) == 3.5
    t, reqs = _reqs("closed")
    assert capacity.offered_rate(t, reqs) is None
    arrivals = np.array([0.0, 0.5, 1.0, 2.0])
    trace = traffic.Requests(arrivals, np.full(4, 10), np.full(4, 5), np.full(4, -1), np.zeros(4, dtype=int))
    assert capacity.offered_rate(traffic.Traffic("trace", path="x.csv"), trace) == pytest.approx(1.5)


def test_warning_names_offered_served_and_the_workers_that_hold_it():
    agg = capacity.Capacity(("replica",), (6.2,), (1,), 256, 10.0)
    msg = agg.warning()
    assert msg.startswith("10 requests/s offered, 6.2 requests/s served by 1 replica:") and "\n" not in msg
    assert "utilisation 161%" in msg and "2 replicas would hold it" in msg
    xpyd = capacity.Capacity(("prefill", "decode"), (39.6, 10.2), (1, 1), 252, 25.0)
    assert "by 1 prefill + 1 decode workers (prefill 39.6/s each, decode 10.2/s each)" in xpyd.warning()
    assert "1 prefill + 3 decode workers would hold it" in xpyd.warning()
    assert capacity.Capacity(("replica",), (6.2,), (2,), 256, 10.0).warning() is None
    closed = capacity.Capacity(("replica",), (6.2,), (1,), 256, None)
    assert closed.warning() is None and closed.utilisation is None and closed.meta()["utilisation"] is None


def _run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_simulate_warns_when_overloaded(capsys):
    code, out, err = _run([*BASE, "--rate", "120", "--requests", "300", "--format", "json"], capsys)
    doc = json.loads(out)
    meta, row = doc["meta"]["capacity"], doc["results"]["table"][0]
    per = meta["capacity_per_replica_requests_per_s"]
    n = math.ceil(120 / (capacity.MAX_UTILISATION * per))
    assert code == 0 and meta["overloaded"] and meta["utilisation"] == pytest.approx(120 / per) and 120 > per
    assert meta["replicas_to_hold"] == n >= 2  # bf16 on one H100: about 50 requests/s of 512/128 tokens, n = 3
    lines = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(lines) == 1 and "120 requests/s offered" in lines[0] and "served by 1 replica" in lines[0]
    assert f"the queue grows without bound; {n} replicas would hold it" in lines[0]
    assert row["utilisation"] == pytest.approx(meta["utilisation"]) and row["capacity_requests_per_s"] == per
    assert row["replicas_to_hold"] == n
    code, out, err = _run([*BASE, "--rate", "120", "--replicas", str(n), "--requests", "300"], capsys)
    assert code == 0 and "warning" not in err and "utilisation (offered / capacity)" in out


def test_simulate_inside_capacity_does_not_warn(capsys):
    code, out, err = _run([*BASE, "--rate", "5", "--requests", "200", "--format", "json"], capsys)
    meta = json.loads(out)["meta"]["capacity"]
    assert code == 0 and "warning" not in err and 0 < meta["utilisation"] < 1 and not meta["overloaded"]
    assert meta["replicas_to_hold"] == 1
    code, out, err = _run([*BASE, "--traffic", "closed", "--clients", "8", "--requests", "100", "--format", "json"],
                          capsys)
    meta = json.loads(out)["meta"]["capacity"]
    assert code == 0 and "warning" not in err and meta["utilisation"] is None and meta["capacity_requests_per_s"] > 0
