"""Serving plans in every framework's spelling (validation/plan_words.py) read to (t, d_a, e, p)."""

from __future__ import annotations

import pytest

from perfmodel.validation.plan_words import plan_of


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
