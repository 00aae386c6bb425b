"""Serving plans in every framework's spelling (validation/sources/plan_words.py) read to (t, d_a, e, p)."""

from __future__ import annotations

import pytest

from perfmodel.validation.sources.plan_words import plan_of


@pytest.mark.parametrize("text, tp, da, ep, pp", [
    ("TP8", 8, 1, 1, 1), ("tp=4", 4, 1, 1, 1), ("TP 2", 2, 1, 1, 1), ("tensor parallel 8", 8, 1, 1, 1),
    ("--tensor-parallel-size 8", 8, 1, 1, 1), ("vllm serve -tp 8", 8, 1, 1, 1), ("--tp-size 8", 8, 1, 1, 1),
    ("tp_size: 4", 4, 1, 1, 1), ("TP4 PP2", 4, 1, 1, 2), ("--pipeline-parallel-size 2 -tp 4", 4, 1, 1, 2),
    ("--pp-size 2 --tp 4", 4, 1, 1, 2), ("TP8 EP8", 8, 1, 8, 1), ("--ep-size 8 --tp 8", 8, 1, 8, 1),
    ("tp_size: 8, moe_expert_parallel_size: 8", 8, 1, 8, 1),
    # SGLang: --enable-dp-attention makes dp_size (default tp_size) attention ranks among tp_size GPUs
    ("TP8 + DP attention (--tp 8 --enable-dp-attention)", 1, 8, 1, 1),
    ("--tp 8 --dp 4 --enable-dp-attention", 2, 4, 1, 1), ("--dp-size 4 --tp-size 8 --enable-dp-attention", 2, 4, 1, 1),
    # TensorRT-LLM: attention data parallel over the TP ranks
    ("tp_size: 8 enable_attention_dp: true", 1, 8, 1, 1),
    # vLLM: data-parallel engines with experts over TP x DP
    ("--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel", 1, 8, 8, 1),
    ("--tensor-parallel-size 2 --enable-expert-parallel", 2, 1, 2, 1),
    # InferenceMAX's shorthands
    ("DEP8", 1, 8, 8, 1), ("TEP8", 8, 1, 8, 1),
])
def test_each_spelling_reads_to_its_plan(text, tp, da, ep, pp):
    p = plan_of(text)
    assert (p.tp, p.da, p.ep, p.pp) == (tp, da, ep, pp) and p.gpus == tp * da * pp


def test_an_attention_dp_that_does_not_divide_tp_is_one_clear_line():
    with pytest.raises(ValueError, match="attention-DP 3 does not divide TP 8"):
        plan_of("--tp 8 --dp 3 --enable-dp-attention")


@pytest.mark.parametrize("text, tp, pp, dp, cp, ep, vp", [
    ("TP8 PP4 DP16", 8, 4, 16, 1, 1, 1),
    ("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4", 8, 4, 4, 1, 1, 1),  # Megatron flags
    ("tensor_model_parallel_size: 4, pipeline_model_parallel_size: 2, context_parallel_size: 2", 4, 2, 8, 2, 1, 1),
    ("--parallelism.tensor_parallel_degree 8 --parallelism.data_parallel_shard_degree 16", 8, 1, 16, 1, 1, 1),
    ("pipeline_parallel_size=4 ZeRO-1", 1, 4, 32, 1, 1, 1),  # DeepSpeed
    ("virtual_pipeline_model_parallel_size: 5 TP4 PP8", 4, 8, 4, 1, 1, 5),  # NeMo: VP is not PP
    ("expert_model_parallel_size 8 TP1", 1, 1, 128, 1, 8, 1),
    ("TP=4, PP=8, interleaved 2", 4, 8, 4, 1, 1, 2),
])
def test_training_plans_in_framework_spellings(text, tp, pp, dp, cp, ep, vp):
    """validation/sources/training_rows.plan_of over 128 GPUs: DP fills the GPUs where unstated."""
    from perfmodel.validation.sources.training_rows import plan_of

    p = plan_of(text, 128)
    assert (p.tp, p.pp, p.dp, p.cp, p.ep, p.pp_virtual) == (tp, pp, dp, cp, ep, vp)
