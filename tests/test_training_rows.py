"""Reading published training rows: hardware, model names and aliases, plans, batches, FP8 recipes, metrics."""

from __future__ import annotations

import pytest

from perfmodel.core.scenario import Parallelism
from perfmodel.validation.sources import training_rows as tr


@pytest.mark.parametrize("text,system", [
    ("H100-SXM5-80GB (DGX H100)", "dgx-h100"), ("A100-SXM-80GB (Selene, DGX A100)", "dgx-a100-80gb"),
    ("8 x A100 40GB", "dgx-a100-40gb"), ("GB200 NVL72", "gb200-nvl72"), ("B200 (DGX B200)", "p6-b200.48xlarge"),
    ("H200 SXM 141GB", "p5e.48xlarge"), ("trn1.32xlarge (16x Trainium)", "trn1.32xlarge"), ("TPU v5p", ""),
    ("H100 96GB HBM2e SXM (Meta Grand Teton, 500 W power limit)", ""),
])
def test_hardware_text_names_a_system(text, system):
    assert tr.system_of(text) == system


def test_gpu_count_from_the_column_or_the_text():
    assert tr.gpus_of({"num_chips": "1024", "hardware": "H100"}) == 1024
    assert tr.gpus_of({"num_chips": "", "hardware": "64 x H100-SXM5-80GB"}) == 64
    assert tr.gpus_of({"num_chips": "", "hardware": "H100"}) == 0


@pytest.mark.parametrize("text,workload", [
    ("Llama 3.1 405B", "llama-3.1-405b"), ("llama3_1_405b", "llama-3.1-405b"), ("Meta-Llama-3.1-70B-Instruct",
     "llama-3.1-70b"), ("Llama3 8B", "llama-3-8b"), ("Llama 2 70B", "llama-2-70b"), ("GPT-3 175B", "gpt3-175b"),
    ("Mixtral 8x7B", "mixtral-8x7b"), ("DeepSeek-V3 671B", "deepseek-v3"), ("Nemotron-4 340B", ""),
])
def test_model_names_and_aliases(text, workload):
    assert tr.workload_of(text) == workload


def test_plans_as_sources_write_them():
    assert tr.plan_of("TP8 PP8 CP2 VP8 DP4") == Parallelism(tp=8, pp=8, dp=4, cp=2, pp_virtual=8)
    assert tr.plan_of("TP1 PP8 VPP4 EP32 CP1", gpus=256).pp_virtual == 4  # Megatron's name for it
    assert tr.plan_of("TP=4, PP=1, CP=1, EP=8", gpus=128) == Parallelism(tp=4, dp=32, ep=8)
    assert tr.plan_of("FSDP 64 TP8 (2D)") == Parallelism(tp=8, dp=64, zero=3)
    assert tr.plan_of("tensor parallel 8, pipeline parallel 35", gpus=2240) == Parallelism(tp=8, pp=35, dp=8)
    assert tr.plan_of("TP4 PP12, distributed optimizer", gpus=384).zero == 1
    assert tr.plan_of("ZeRO-1, DP 384").dp == 384


def test_batches_recipes_and_metrics():
    assert tr.batch_of("GBS 2048 (mbs 1)") == (2048, 1)
    assert tr.batch_of("global batch size 1536, micro batch 2") == (1536, 2)
    assert tr.batch_of("seq 4096") == (0, 0)
    assert [tr.fp8_of(t) for t in ("BF16", "FP8 (delayed scaling)", "FP8 current scaling", "MXFP8")] == \
        ["", "delayed", "current", "block"]
    assert tr.metric_of("model TFLOP/s per GPU") == "tflops_per_gpu"
    assert tr.metric_of("tokens/sec/GPU") == "tokens_per_s_per_gpu"
    assert tr.metric_of("throughput", "tokens/s") == "tokens_per_s"
    assert tr.metric_of("MFU", "%") == "mfu" and tr.metric_of("time per iteration", "s") == "step_time"
    assert tr.metric_of("accuracy") == ""


def test_gpt3_sizes_follow_nemos_definitions():
    # NeMo-Framework-Launcher conf/training/gpt3/5b.yaml and 20b.yaml: layers, hidden size, heads
    assert tr.gpt3_dimensions("GPT-3 5B (GPT3-5B)") == "h=4096, L=24, heads=32"
    assert tr.gpt3_dimensions("GPT3-20B") == "h=6144, L=44, heads=48"
    assert tr.gpt3_dimensions("GPT-3 175B") == "" and tr.gpt3_dimensions("Llama 3 8B") == ""
