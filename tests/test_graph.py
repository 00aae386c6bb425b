"""Operator graphs: two independent derivations agree (parameters; training FLOPs vs 6ND)."""

import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.core.workload import parameter_count
from perfmodel.model import bindings as bd
from perfmodel.model import memory
from perfmodel.model.evaluate import evaluate
from perfmodel.model.graph.build import graph_for
from perfmodel.model.ops import GraphKey, Pass

ALL = workload_files.list_workloads()


@pytest.mark.parametrize("name", ALL)
def test_graph_parameters_equal_closed_form(name):
    arch = workload_files.load_workload(name)
    graph = float(memory.params_per_device(arch, bd.Knobs(phase=Phase.PREFILL)))
    assert graph == parameter_count(arch).total


@pytest.mark.parametrize("name,tp", [("llama-3-70b", 8), ("mixtral-8x7b", 4), ("deepseek-v3", 8)])
def test_tensor_parallel_shards_parameters(name, tp):
    arch = workload_files.load_workload(name)
    one = float(memory.params_per_device(arch, bd.Knobs(phase=Phase.PREFILL)))
    sharded = float(memory.params_per_device(arch, bd.Knobs(phase=Phase.PREFILL, tp=tp, ep=tp)))
    assert one / tp <= sharded < one / tp * 1.15  # replicated norms / latent projections only


def test_models_of_one_shape_share_a_graph():
    a, b = workload_files.load_workload("llama-3-8b"), workload_files.load_workload("llama-3-70b")
    assert GraphKey.of(a) == GraphKey.of(b)
    assert graph_for(a, Phase.DECODE) is graph_for(b, Phase.DECODE)


@pytest.mark.parametrize("name", ["llama-3-8b", "gpt3-6.7b", "mistral-7b", "mixtral-8x7b"])
def test_training_flops_match_6nd_plus_attention(name):
    """Model FLOPs summed over the graph vs 6 N D + 12 L T S_avg H d_h B (independent derivation)."""
    arch = workload_files.load_workload(name)
    s = catalog.load_system("trn2.48xlarge")
    B, T = 4, 2048
    r = evaluate(s, arch, Scenario(Phase.TRAIN, batch=B, seq_len=T))
    pc = parameter_count(arch)
    # the input embedding lookup does no FLOPs (a tied table is used once, by the LM head)
    n_flop = pc.total - (0 if arch.tie_word_embeddings else pc.embedding) - pc.position_embedding
    if arch.is_moe:
        n_flop = pc.active_per_token - (0 if arch.tie_word_embeddings else pc.embedding)
    attn = 12 * arch.num_hidden_layers * B * T * (T + 1) / 2 * arch.num_attention_heads * arch.head_dim
    expected = 6 * n_flop * B * T + attn
    assert r["model_flop"] == pytest.approx(expected, rel=0.05)


def test_recompute_adds_hardware_flops_not_model_flops():
    arch = workload_files.load_workload("llama-3-8b")
    s = catalog.load_system("trn2.48xlarge")
    from perfmodel.core.scenario import Recompute
    base = evaluate(s, arch, Scenario(Phase.TRAIN, batch=1, seq_len=2048))
    full = evaluate(s, arch, Scenario(Phase.TRAIN, batch=1, seq_len=2048, recompute=Recompute.FULL))
    assert full["model_flop"] == pytest.approx(base["model_flop"])
    assert full["hardware_flop"] > base["hardware_flop"] * 1.25


def test_phase_totals_equal_sum_of_rows():
    arch = workload_files.load_workload("gpt-oss-120b")
    s = catalog.load_system("trn3-ultraserver")
    r = evaluate(s, arch, Scenario(Phase.DECODE, batch=16, context=4096, parallel=Parallelism(tp=4, ep=4)))
    ops = r.ops
    assert r["step_time_s"] == pytest.approx((ops["count"] * ops["time_s"]).sum(), rel=1e-9)
    assert r["hardware_flop"] == pytest.approx((ops["count"] * ops["flop"]).sum(), rel=1e-9)
    assert r["hbm_bytes"] == pytest.approx((ops["count"] * (ops["hbm_read_bytes"] + ops["hbm_write_bytes"])).sum())


def test_train_graph_has_backward_and_optimizer():
    arch = workload_files.load_workload("llama-3-8b")
    ops = graph_for(arch, Phase.TRAIN)
    passes = {o.pass_ for o in ops}
    assert {Pass.FORWARD, Pass.BACKWARD, Pass.OPTIMIZER} <= passes
