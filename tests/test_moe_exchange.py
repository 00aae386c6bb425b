"""The MoE exchange is priced for every plan (issue 45): attention-DP ranks whose experts are split over
expert-TP (d_a > 1, e < t d_a) gather the replica's tokens and reduce-scatter the partial outputs over the
d_a group; with e = t d_a the tokens move by all-to-all; with d_a = 1 nothing moves but the TP all-reduce.
Expected values are computed here from the letters: N_r = B T / c tokens, D hidden, b bytes per element."""

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.comm import collectives
from perfmodel.comm.algorithms import Collective
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate as ev

FP8_WITH_SCALES = 1 + 4 / 128  # one FP32 scale per 128 FP8 elements (the dispatch layout)


@pytest.fixture(scope="module")
def gptoss_h100():
    return catalog.load_system("p5.48xlarge"), workload_files.load_workload("gpt-oss-120b")


def _ops(system, arch, **plan):
    kn = bd.Knobs(phase=Phase.DECODE, batch=64, context=4096, weights=DType.FP8, compute=DType.FP8,
                  expert_weights=DType.MXFP4, **plan)
    ops, q, comm, _ = ev.run(system, arch, kn)
    names = [o.name for o in ops]

    def get(name):
        i = names.index(name)
        return (float(np.asarray(q["comm_bytes"][i]).max()), float(np.asarray(comm[i]).max()))
    return get


def test_attention_dp_with_expert_tp_gathers_and_reduce_scatters_over_the_dp_group(gptoss_h100):
    """tp 1, d_a 8, e 1 (every GPT-OSS frontier point on H100 / B200 before the fix): each rank needs all 64
    tokens' hidden states (all-gather of N_r D b_dp bytes over the 8 ranks) and returns the partial sums
    (reduce-scatter of N_r D b_a); not the zero-byte all-to-all over an ep group of one."""
    s, a = gptoss_h100
    cal = calibration_for(s)
    get = _ops(s, a, tp=1, da=8, ep=1)
    n_rep, d = 64 * 1 / 1, a.hidden_size  # decode: B tokens of T = 1 in the replica, cp = 1
    gather, t_gather = get("moe.gather")
    scatter, t_scatter = get("moe.reduce_scatter")
    assert gather == pytest.approx(n_rep * d * FP8_WITH_SCALES, rel=1e-12)
    assert scatter == pytest.approx(n_rep * d * 2.0, rel=1e-12)  # BF16 partial outputs
    assert t_gather == pytest.approx(float(collectives.collective_time(s, cal, Collective.ALL_GATHER, gather, 8.0, 1.0)),
                                     rel=1e-12)
    assert t_scatter == pytest.approx(float(collectives.collective_time(s, cal, Collective.REDUCE_SCATTER, scatter,
                                                                        8.0, 1.0)), rel=1e-12)
    assert t_gather > 0 and t_scatter > 0
    assert get("moe.dispatch")[0] == 0.0 and get("moe.combine")[0] == 0.0


def test_full_expert_parallelism_uses_the_all_to_all_and_no_gather(gptoss_h100):
    """tp 1, d_a 8, e 8: each token's k copies go to their experts' ranks (N_dev k D b_dp), nothing is gathered."""
    s, a = gptoss_h100
    get = _ops(s, a, tp=1, da=8, ep=8)
    n_dev = 64 / 8
    assert get("moe.dispatch")[0] == pytest.approx(n_dev * a.num_experts_per_tok * a.hidden_size * FP8_WITH_SCALES,
                                                   rel=1e-12)
    assert get("moe.gather")[0] == 0.0 and get("moe.reduce_scatter")[0] == 0.0


def test_attention_tensor_parallel_moves_no_tokens_and_all_reduces(gptoss_h100):
    """d_a = 1: every TP rank already holds the tokens; the experts' partial outputs are all-reduced over t."""
    s, a = gptoss_h100
    get = _ops(s, a, tp=8, da=1, ep=8)
    assert get("moe.dispatch")[0] == get("moe.gather")[0] == get("moe.reduce_scatter")[0] == 0.0
    assert get("moe.tp_all_reduce")[0] == pytest.approx(64 * a.hidden_size * 2.0, rel=1e-12)


def test_mixed_plan_gathers_over_dp_then_all_reduces_over_tp(gptoss_h100):
    """tp 2, d_a 4, e 2 (expert-TP of 4 spans both): gather over the 4 DP ranks at stride 2, then the TP
    all-reduce of the DP rank's own N_dev tokens."""
    s, a = gptoss_h100
    cal = calibration_for(s)
    get = _ops(s, a, tp=2, da=4, ep=2)
    gather, t_gather = get("moe.gather")
    assert gather == pytest.approx(64 * a.hidden_size * FP8_WITH_SCALES, rel=1e-12)
    assert t_gather == pytest.approx(float(collectives.collective_time(s, cal, Collective.ALL_GATHER, gather, 4.0,
                                                                       2.0)), rel=1e-12)
    assert get("moe.tp_all_reduce")[0] == pytest.approx(64 / 4 * a.hidden_size * 2.0, rel=1e-12)

