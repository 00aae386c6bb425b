"""Request-level simulation: it agrees with the steady state where both apply, and shows what the steady state
cannot (queueing, bursts, preemption, prefix hits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog import system_inputs, trace_files, workload_files, workload_refs
from perfmodel.serving.steady_state import Mix, ServingOptions, serve_one
from perfmodel.simulation import compare, deployment, metrics, step_table, traffic
from perfmodel.validation import closed_loop_sim

SHAPE = traffic.Shapes(input_tokens=((1024, 1.0),), output_tokens=((256, 1.0),))


@pytest.fixture(scope="module")
def h100():
    return catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3.1-8b"), deployment.one_plan(tp=1)


def _run(h100, traf, n=1500, shapes=SHAPE, options=ServingOptions(), layout=deployment.Layout(), **kw):
    s, a, plan = h100
    return deployment.simulate(s, a, plan, traf, shapes, n, options, layout, **kw)


@pytest.mark.parametrize("mode", ["aggregated", "chunked"])
def test_low_load_matches_the_steady_state(h100, mode):
    """At 30% of the replica's capacity the simulated p50 TTFT is within 10% of the steady state's at the
    concurrency Little's law gives, and TPOT within 3%; at 90% queueing opens a gap."""
    s, a, plan = h100
    df = compare.load_sweep(s, a, plan, Mix(1024, 256), ServingOptions(mode=mode), loads=(0.3, 0.9),
                            n_requests=1500)
    low, high = df.iloc[0], df.iloc[1]
    assert abs(low["ttft_p50_gap"]) < 0.10
    assert abs(low["tpot_p50_gap"]) < 0.03
    assert abs(low["sim_mean_running"] / low["analytic_concurrency"] - 1) < 0.10  # Little's law both sides
    assert high["ttft_p50_gap"] > low["ttft_p50_gap"] + 0.05
    assert high["sim_ttft_p99_s"] > 1.5 * low["sim_ttft_p99_s"]


@pytest.mark.parametrize("clients", [1, 16, 256])
def test_closed_loop_matches_the_closed_loop_formulas(h100, clients):
    """The InferenceX protocol (C clients, 10 waves, lengths in [0.8 L, L]) under vLLM's profile: the steady
    state's closed-loop TTFT and TPOT (serving/closed_loop.py) against the simulation's means."""
    s, a, plan = h100
    r = closed_loop_sim.closed_loop_check(s, a, plan, clients, 1024, 1024, engine="vllm")
    assert abs(r["sim_tpot_mean_s"] / r["analytic_tpot_s"] - 1) < 0.05
    assert abs(r["sim_ttft_mean_s"] / r["analytic_ttft_s"] - 1) < 0.15


def test_littles_law_and_conservation(h100):
    run = _run(h100, traffic.Traffic("poisson", rate=10.0), n=2000)
    frame = metrics.requests_frame(run)
    assert frame["e2e_s"].notna().all() and (frame["ttft_s"] > 0).all()
    assert (frame["e2e_s"] >= frame["ttft_s"]).all()
    sm = metrics.summarize(run)
    m = metrics.measured(frame, closed=False)
    assert sm["mean_running_per_worker"] + sm["mean_waiting_per_worker"] == pytest.approx(
        10.0 * m["e2e_s"].mean(), rel=0.08)


def test_same_seed_same_run(h100):
    a = metrics.requests_frame(_run(h100, traffic.Traffic("poisson", rate=8.0), n=300, seed=3))
    b = metrics.requests_frame(_run(h100, traffic.Traffic("poisson", rate=8.0), n=300, seed=3))
    pd.testing.assert_frame_equal(a, b)


def test_bursty_arrivals_lengthen_the_tail(h100):
    rate = 15.0
    p = metrics.summarize(_run(h100, traffic.Traffic("poisson", rate=rate), n=2000))
    g = metrics.summarize(_run(h100, traffic.Traffic("gamma", rate=rate, cv=4.0), n=2000))
    assert g["ttft_p99_s"] > 1.5 * p["ttft_p99_s"]


def test_gamma_gaps_keep_the_rate_and_set_the_burstiness():
    r = traffic.draw(traffic.Traffic("gamma", rate=5.0, cv=3.0), SHAPE, 40_000, seed=1)
    gaps = np.diff(np.concatenate([[0.0], r.arrival_s]))
    assert gaps.mean() == pytest.approx(0.2, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)


def test_a_small_kv_pool_preempts_and_still_finishes(h100):
    """200 clients of 1280 tokens fit an H100's pool; in 2,500 blocks (40,000 tokens) sequences are preempted
    (recomputed when readmitted) and every request still finishes."""
    closed = traffic.Traffic("closed", clients=200)
    big = metrics.summarize(_run(h100, closed, n=600, layout=deployment.Layout(max_running=200)))
    assert big["preempted_share"] == 0.0
    run = _run(h100, closed, n=600, layout=deployment.Layout(max_running=200, kv_blocks=2500))
    small = metrics.summarize(run)
    assert np.isfinite(run.sim.finished).all()
    assert small["preempted_share"] > 0.05
    assert small["mean_running_per_worker"] < 40_000 / 1024  # the pool, not the cap, limits the batch
    assert small["tpot_p50_s"] < big["tpot_p50_s"]  # smaller batches step faster


def test_prefix_cache_skips_shared_prefill(h100):
    shared = traffic.Shapes(input_tokens=((2048, 1.0),), output_tokens=((64, 1.0),), prefix_share=1.0,
                            prefix_tokens=1792, prefixes=4)
    plain = traffic.Shapes(input_tokens=((2048, 1.0),), output_tokens=((64, 1.0),))
    hit = metrics.summarize(_run(h100, traffic.Traffic("poisson", rate=20.0), n=1000, shapes=shared))
    miss = metrics.summarize(_run(h100, traffic.Traffic("poisson", rate=20.0), n=1000, shapes=plain))
    assert hit["prefix_hit_tokens_share"] == pytest.approx(1792 / 2048, rel=0.02)  # all but the first 4 hit
    assert hit["ttft_p50_s"] < 0.5 * miss["ttft_p50_s"]
    assert miss["prefix_hit_tokens_share"] == 0.0


def test_disaggregated_hands_off_and_decodes_at_the_steady_state(h100):
    run = _run(h100, traffic.Traffic("poisson", rate=12.0), n=1500, options=ServingOptions(mode="disaggregated"),
               layout=deployment.Layout(prefill=1, decode=2))
    sm = metrics.summarize(run)
    s, a, _ = h100
    c = int(round(sm["mean_running_per_worker"]))
    an = serve_one(s, a, concurrency=c, mix=Mix(1024, 256), options=ServingOptions(mode="disaggregated"))
    assert sm["tpot_p50_s"] == pytest.approx(an["time_per_output_token_s"], rel=0.05)
    assert sm["ttft_p50_s"] >= an["ttft_s"] * 0.95  # prefill + hand-off, plus any queue
    assert set(metrics.requests_frame(run)["worker"]) == {0}  # one prefill worker took every prompt


def test_replicas_share_the_load(h100):
    run = _run(h100, traffic.Traffic("poisson", rate=30.0), n=1500, layout=deployment.Layout(replicas=3))
    counts = metrics.requests_frame(run)["worker"].value_counts()
    assert len(counts) == 3 and counts.min() > 0.25 * len(run.sim.arrival)


def test_trace_file_round_trip_and_errors(h100, tmp_path):
    p = tmp_path / "trace.csv"
    pd.DataFrame({"arrival_s": [0.0, 0.1, 0.2], "input_tokens": [100, 200, 300], "output_tokens": [10, 20, 30],
                  "prefix_id": [0, 0, -1], "prefix_tokens": [64, 64, 0]}).to_csv(p, index=False)
    reqs = traffic.requests_of(trace_files.read(p))  # read where inputs are read, as the CLI does
    run = _run(h100, traffic.Traffic("trace", path=str(p)), reqs=reqs)
    frame = metrics.requests_frame(run)
    assert list(frame["output_tokens"]) == [10, 20, 30] and frame["e2e_s"].notna().all()
    assert frame["cached_tokens"].tolist() == [0, 64, 0]
    pd.DataFrame({"arrival_s": [0.0, 0.1], "input_tokens": [100, -5], "output_tokens": [10, 20]}).to_csv(
        p, index=False)
    with pytest.raises(ValueError, match=r"trace.csv: row 3, column input_tokens: -5"):
        trace_files.read(p)
    pd.DataFrame({"arrival_s": [0.0], "tokens": [1]}).to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"trace column 'input_tokens' missing"):
        trace_files.read(p)
    with pytest.raises(ValueError, match=r"its requests are read where inputs are read"):
        _run(h100, traffic.Traffic("trace", path=str(p)))  # the simulation reads no file


def test_bad_traffic_is_one_clear_line():
    with pytest.raises(ValueError, match="traffic rate"):
        traffic.Traffic("poisson", rate=0.0).validate()
    with pytest.raises(ValueError, match="traffic kind"):
        traffic.Traffic("uniform").validate()
    with pytest.raises(ValueError, match="deployment replicas"):
        deployment.Layout(replicas=0).validate()


def test_step_table_is_the_steady_state_step(h100):
    """The table's decode step at a grid point is steady_state's decode step (no second cost model)."""
    s, a, plan = h100
    tb = step_table.build(s, a, plan, ServingOptions(), max_running=64, token_budget=8192, max_context=2048,
                          mean_context=1152)
    r = serve_one(s, a, concurrency=32, mix=Mix(1024, 256))
    b = 32.0
    assert b in tb.batches
    assert tb.decode(b, 1024 + 128) == pytest.approx(r["decode_step_s"], rel=0.02)  # context interpolated


# ---------------------------------------------------------------- the planner's answer, verified


def test_planner_answer_is_verified_at_the_percentile():
    """A p99 demand: each answer is simulated at the peak rate; the verified deployment meets both p99 targets
    and is never smaller than the steady state's; chips and power follow the verified replica count."""
    from perfmodel.serving import planner
    from perfmodel.simulation import verify

    d = planner.Demand.from_dict({"workload": "llama-3.1-8b", "requests_per_s": 40, "input_tokens": {"512": 0.7,
                                  "4096": 0.3}, "output_tokens": 256, "ttft_s": 0.5, "tpot_s": 0.012,
                                  "peak_to_average": 1.0, "percentile": 99})
    opts = planner.PlanOptions(grid_kw={"tp": [1], "da": [1], "pp": [1], "dtypes": ["fp8"]})
    arch, systems = workload_refs.load(d.workload), [system_inputs.resolve("p5.48xlarge")]
    df = planner.plan_serving(d, arch, systems, opts)
    v = verify.verify_plan(df, d, arch, systems, opts).iloc[0]
    assert bool(v["verified"]) and bool(v["feasible"])
    assert v["sim_ttft_p99_s"] <= 0.5 and v["sim_tpot_p99_s"] <= 0.012
    assert v["replicas"] >= v["analytic_replicas"] >= 1
    assert v["chips"] == v["replicas"] * v["replica_chips"]
    if v["replicas"] > v["analytic_replicas"]:  # more replicas draw more power
        assert v["facility_power_peak_w"] > df.iloc[0]["facility_power_peak_w"]


def test_a_percentile_outside_the_allowed_range_is_one_line():
    from perfmodel.serving import planner

    with pytest.raises(ValueError, match=r"percentile: 0 .* \[50, 99.9\]"):
        planner.Demand.from_dict({"workload": "llama-3.1-8b", "requests_per_s": 1, "input_tokens": 10,
                                  "output_tokens": 10, "ttft_s": 1, "tpot_s": 0.1, "percentile": 120})


def test_prefix_caching_in_the_steady_state_matches_the_simulation(h100):
    """Every prompt opens with one cached 1,536-token prefix: the steady state with prefix_tokens = 1536 prefills
    512 tokens at prior context 1536, holds KV for the rest only, and agrees with the simulation at low load."""
    s, a, plan = h100
    mix = Mix(2048, 128)
    plain = serve_one(s, a, concurrency=8, mix=mix)
    cached = serve_one(s, a, concurrency=8, mix=mix, options=ServingOptions(prefix_tokens=1536))
    assert cached["ttft_s"] < 0.5 * plain["ttft_s"]
    assert cached["max_concurrency_kv"] > 1.5 * plain["max_concurrency_kv"]
    shapes = traffic.Shapes(input_tokens=((2048, 1.0),), output_tokens=((128, 1.0),), prefix_share=1.0,
                            prefix_tokens=1536, prefixes=1)
    sm = metrics.summarize(_run(h100, traffic.Traffic("poisson", rate=4.0), n=800, shapes=shapes))
    assert sm["ttft_p50_s"] == pytest.approx(cached["ttft_s"], rel=0.10)
    with pytest.raises(ValueError, match="prefix_tokens"):
        serve_one(s, a, concurrency=8, mix=mix, options=ServingOptions(prefix_tokens=2048))


def test_a_demand_with_a_cached_prefix_needs_less_and_is_verified_with_it():
    """Agentic traffic re-sending a 3,072-token prefix of 4,096: the steady state prefills 1,024 tokens per request
    (fewer replicas or a shorter TTFT), and the simulation that verifies it draws those prefixes."""
    from perfmodel.serving import planner
    from perfmodel.simulation import verify

    base = {"workload": "llama-3.1-8b", "requests_per_s": 30, "input_tokens": 4096, "output_tokens": 128,
            "ttft_s": 0.4, "tpot_s": 0.02, "percentile": 99}
    opts = planner.PlanOptions(grid_kw={"tp": [1], "da": [1], "pp": [1], "dtypes": ["fp8"]})
    plain = planner.Demand.from_dict(base)
    cached = planner.Demand.from_dict({**base, "prefix_share": 1.0, "prefix_tokens": 3072, "prefixes": 2})
    assert cached.cached_tokens == 3072
    arch, systems = workload_refs.load(plain.workload), [system_inputs.resolve("p5.48xlarge")]
    a = planner.plan_serving(plain, arch, systems, opts).iloc[0]
    b = planner.plan_serving(cached, arch, systems, opts).iloc[0]
    assert (b["replicas"], b["ttft_s"]) < (a["replicas"], a["ttft_s"])
    v = verify.verify_plan(pd.DataFrame([b]), cached, arch, systems, opts).iloc[0]
    assert bool(v["verified"]) and v["sim_ttft_p99_s"] <= 0.4
    with pytest.raises(ValueError, match="prefix_tokens"):
        planner.Demand.from_dict({**base, "prefix_share": 1.0, "prefix_tokens": 4096})
