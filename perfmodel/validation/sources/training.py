"""FLOP counts and model shapes of published training results (the 'training' family's helpers).

    megatron_flop            Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh) per iteration
                             (hardware FLOPs: activation recomputation counted)
    llm_foundry_flop_per_seq llm-foundry's MFU numerator: 3 (2 N s) + 3 (4 L d s^2) per sequence
    fa2_flop_per_seq         the FlashAttention-2 paper's 6 s N + 12 L h s^2 per sequence
    _gpt_arch                a GPT from a row's dimensions (h=, L=, heads=, V=) on the GPT-3 template
    attention_kernel         a calibration whose attention core runs at an older flash-attention generation
    fa2_paper_setup          the run the FlashAttention-2 paper describes in prose (FA-005)

The rows themselves are read and predicted by training_public.py under training_stacks.py's rules.
Does not: register a family, fit anything.
"""

from __future__ import annotations

import dataclasses
import re

from perfmodel.catalog import workload_files
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.core.workload import parameter_count


def attention_kernel(system, generation: str):
    """The system's calibration with the attention core at the tensor efficiency of the named
    flash-attention generation ('flash_attention_1' | 'flash_attention_2'; calibration params)."""
    cal = calibration_of(system)
    return cal.with_overrides({"attention_tensor_efficiency": cal[f"{generation}_tensor_efficiency"],
                               "attention_head_dim_fixed": 0, "attention_keys_fixed": 0})


GPT2_PADDED_VOCAB = 51200  # Megatron-LM pads GPT-2's 50,257-token vocabulary to a multiple of 128 x TP


def _gpt_arch(model: str):
    """GPT architecture from a row's dimensions: 'GPT 1.7B (h=2304, L=24, heads=24, V=51200)' on the GPT-3
    template; V = Megatron's padded GPT-2 vocabulary when the row states none."""
    kv = dict(re.findall(r"\b(h|L|heads|V)=(\d+)", model))
    h, layers, heads = int(kv["h"]), int(kv["L"]), int(kv["heads"])
    vocab = int(kv.get("V", GPT2_PADDED_VOCAB))
    base = workload_files.load_workload("gpt3-6.7b")
    return dataclasses.replace(base, name=f"gpt-h{h}-l{layers}", display_name=model.split("(")[0].strip(),
                               hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                               num_key_value_heads=heads, head_dim=h // heads, intermediate_size=4 * h,
                               vocab_size=vocab, published_parameters=0.0)


def megatron_flop(arch, global_batch: int, seq: int) -> float:
    """Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16 l h) FLOPs per iteration."""
    h, L, V = arch.hidden_size, arch.num_hidden_layers, arch.vocab_size
    return 96.0 * global_batch * seq * L * h * h * (1 + seq / (6.0 * h) + V / (16.0 * L * h))


def llm_foundry_flop_per_seq(arch, seq: int) -> float:
    """llm-foundry's MFU numerator per sequence (benchmarking README): 3 (2 N s) + 3 (4 L d s^2),
    N the parameter count (position table included), attention counted without the causal half."""
    n = parameter_count(arch).total
    return 3 * 2.0 * n * seq + 3 * 4.0 * arch.num_hidden_layers * arch.hidden_size * seq * seq


def gpt3_2p7b():
    """GPT3-2.7B (Brown et al. 2020, Table 2.1: d_model 2560, 32 layers, 32 heads of 80) on the GPT-3 template."""
    return _gpt_arch("GPT3-2.7B (h=2560, L=32, heads=32, V=50257)")


def fa2_flop_per_seq(arch, seq: int) -> float:
    """FLOPs per sequence as the FlashAttention-2 paper counts them: 6 s N + 12 L h s^2."""
    return 6.0 * seq * parameter_count(arch).total + 12.0 * arch.num_hidden_layers * arch.hidden_size * seq * seq


def fa2_paper_setup() -> tuple:
    """FA-005's run as the FlashAttention-2 paper states it in prose (Table 1's best entry; neither the
    micro-batch nor the accumulation is given): (arch, scenario, GPUs) = GPT3-2.7B at 8k tokens, data
    parallel over 8 A100 (ZeRO-1), micro-batch 1 sequence x 16, BF16, no recompute."""
    sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=8192, parallel=Parallelism(dp=8, zero=1, microbatches=16),
                  recompute=Recompute.NONE, precision=Precision.uniform(DType.BF16), optimizer=Optimizer.ADAM_MIXED)
    return gpt3_2p7b(), sc, 8
