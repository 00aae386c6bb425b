"""Aggregated TPOT counts the other sequences' prefills, not the request's own (issue 45): a request's own
prefill is in its TTFT; while it decodes its O tokens the other C - 1 sequences' prefills interleave:

    TPOT  = p t_d + ((C - 1) / O) o_f          cycle = p t_d + (C / O) o_f        throughput = C / cycle

At one user with a long prompt the old (C / O) made TPOT 64% high against the simulation."""

import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.serving.steady_state import Mix, ServingOptions, serve_one
from perfmodel.simulation import deployment, metrics, traffic


@pytest.fixture(scope="module")
def llama_h100():
    return catalog.load_system("p5.48xlarge"), workload_files.load_workload("llama-3.1-8b")


def test_one_user_with_a_long_prompt_agrees_with_the_simulation(llama_h100):
    s, a = llama_h100
    mix = Mix(32768, 256)
    ss = serve_one(s, a, tp=1, concurrency=1, mix=mix)
    shapes = traffic.Shapes(((mix.input_tokens, 1.0),), ((mix.output_tokens, 1.0),))
    run = deployment.simulate(s, a, deployment.one_plan(tp=1), traffic.Traffic("closed", clients=1), shapes,
                              n_requests=12)
    sim = metrics.summarize(run)
    assert ss["time_per_output_token_s"] == pytest.approx(sim["tpot_mean_s"], rel=0.05)
    assert ss["ttft_s"] == pytest.approx(sim["ttft_mean_s"], rel=0.05)
    # C = 1: no other sequence prefills while this one decodes; the old rule added t_f / O (here +60% or more)
    assert ss["time_per_output_token_s"] == pytest.approx(ss["decode_step_s"], rel=1e-12)
    assert ss["prefill_step_s"] / mix.output_tokens > 0.5 * ss["decode_step_s"]


@pytest.mark.parametrize("mode", ["aggregated", "chunked"])
def test_tpot_has_the_others_prefills_and_throughput_all_of_them(llama_h100, mode):
    """From the frame's own step times, by the letters: TPOT = t_d + ((C-1)/O) n t_f; per replica C / (t_d + (C/O) n t_f)
    (p = 1, d_a = 1, no engine; chunked: n chunks of k tokens, t_f one chunk's step)."""
    s, a = llama_h100
    C, I, O, k = 64, 4096, 512, 512
    r = serve_one(s, a, tp=2, concurrency=C, mix=Mix(I, O), options=ServingOptions(mode=mode, chunk_tokens=k))
    n = I / k if mode == "chunked" else 1.0
    t_d, t_f = r["decode_step_s"], r["prefill_step_s"]
    assert r["time_per_output_token_s"] == pytest.approx(t_d + (C - 1) / O * n * t_f, rel=1e-12)
    assert r["output_tokens_per_s_per_replica"] == pytest.approx(C / (t_d + C / O * n * t_f), rel=1e-12)
    assert r["tokens_per_s_per_user"] == pytest.approx(1 / r["time_per_output_token_s"], rel=1e-12)
