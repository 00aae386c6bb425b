"""Validation families for training: Megatron-LM 2021, MosaicML llm-foundry MPT, FlashAttention-2 GPT.

Families (cases with phase 'train'; each states its mapping once, never per row; nothing is fitted):

    megatron  MEG-*: metric 'achieved TFLOP/s per GPU', parallelism 'TPx PPy DPz', model
              'GPT ... (h=, L=, heads=, V=)'. GPT architecture from the row on the GPT-3 template
              (learned positions, 4h MLP, LayerNorm, biases); Selene = dgx-a100-80gb; FP16 mixed
              precision; full activation recomputation (the paper's Eq. 3 counts it); micro-batch 1;
              1F1B schedule (the paper interleaves large models with an unstated chunk count: the
              bubble here is an upper bound); no ZeRO. Attention is the pre-FlashAttention path
              (Scenario.flash_attention = False: T x T scores through HBM, attention dropout 0.1 as
              Megatron-LM's default; see formulas.attention). Data-parallel gradients are all-reduced
              after the whole backward (Megatron-LM's local DDP, train_step): comm_overlap_frac = 0.
              Predicted = Eq. 3 FLOPs 96 B s l h^2 (1 + s/6h + V/16lh) / (modelled step x GPUs), the
              paper's own count.
    mosaicml  MOSAIC-*: metric 'MFU', parallelism FSDP. Model 'MPT-<n>B' = workloads/mpt-<n>b.toml,
              the llm-foundry pretraining yaml of that name (learned positions, biases, vocab 50368:
              the benchmark table's NumParams equal these files' counts exactly), with the position
              table sized to the run's sequence length as the benchmark script sets max_seq_len.
              FSDP FULL_SHARD = ZeRO-3 over all GPUs, tp = pp = 1; mbs / grad accum from the batch
              field; 'act ckpt' in the notes = full recomputation, 'no act ckpt' = none; H100 rows on
              dgx-h100, A100 rows on dgx-a100-80gb / -40gb (the 40GB in the hardware text). Attention:
              the benchmark script's default attn_impl 'triton' = the Triton port of FlashAttention v1,
              so the attention core runs at flash_attention_1_tensor_efficiency (calibration) instead
              of attention_tensor_efficiency. BF16 rows compute in BF16; 'FP8 (amp_fp8, TE)' rows run
              the linear layers in FP8 with BF16 weights and activations, the attention core in BF16 (as
              every training graph does: graph._attention_in_bf16). Predicted = llm-foundry's MFU formula
              (benchmarking README: 3 (2 N s) + 3 (4 L d s^2) FLOPs per sequence, N the parameter
              count, attention counted without the causal half) x modelled sequences/s / (GPUs x peak
              of the compute type), so both sides use one FLOP count.
    flash-attention-2  FA-005: 'end-to-end training TFLOPS per GPU' of GPT-style models with
              FlashAttention-2 on 8 x A100 80GB. The 225 TFLOPS the row quotes is the best entry of
              the paper's Table 1 (Dao 2023, arXiv:2307.08691): GPT3-2.7B (h 2560, L 32, 32 heads,
              GPT-2 vocabulary 50257) at 8k context; the paper counts 6 s N + 12 L h s^2 FLOPs per
              sequence (Megatron-LM's formula, attention without the causal half). Mapped as
              dgx-a100-80gb, BF16, data parallel over the 8 GPUs (ZeRO-1), micro-batch 1 sequence,
              16 micro-batches per step (the paper gives neither), no recomputation, attention at
              flash_attention_2_tensor_efficiency.

Does not: tune anything to these rows; every miss is reported with its error.
"""

from __future__ import annotations

import dataclasses
import re

import pandas as pd

from perfmodel import catalog, training
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core import units
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.core.workload import parameter_count
from perfmodel.validation.harness import frame, register_validation, row, unexpressed


def attention_kernel(system, generation: str):
    """The system's calibration with the attention core at the tensor efficiency of the named
    flash-attention generation ('flash_attention_1' | 'flash_attention_2'; calibration params)."""
    cal = calibration_for(system)
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


def _plan(text: str) -> dict:
    return {k.lower(): int(v) for k, v in re.findall(r"(TP|PP|DP)(\d+)", text)}


def megatron_flop(arch, global_batch: int, seq: int) -> float:
    """Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16 l h) FLOPs per iteration."""
    h, L, V = arch.hidden_size, arch.num_hidden_layers, arch.vocab_size
    return 96.0 * global_batch * seq * L * h * h * (1 + seq / (6.0 * h) + V / (16.0 * L * h))


def _is_megatron(r: pd.DataFrame) -> pd.Series:
    return (r["phase"].eq("train") & r["metric"].str.contains("TFLOP/s per GPU", regex=False)
            & r["parallelism"].str.contains(r"TP\d+ PP\d+ DP\d+") & r["model"].str.contains(r"h=\d+")
            & r["model"].str.match(r"GPT\b"))


@register_validation("megatron", selects=_is_megatron)
def megatron(rows: pd.DataFrame) -> pd.DataFrame:
    """MEG rows: achieved TFLOP/s per GPU on Selene (dgx-a100-80gb), paper Eq. 3 FLOPs; attention
    materialised (the paper's fused softmax kernel, before FlashAttention)."""
    system = catalog.load_system("dgx-a100-80gb")
    # Megatron-LM's local DDP all-reduces the gradients after the whole forward-backward pass
    # (megatron/training.py train_step: forward_backward_func, then allreduce_gradients): none hides
    cal = calibration_for(system).with_overrides({"comm_overlap_frac": 0.0})
    out = []
    for _, m in rows.iterrows():
        if "A100" not in m["hardware"]:
            out.append(unexpressed(m, "Megatron rows are modelled on Selene (dgx-a100-80gb) only"))
            continue
        arch = _gpt_arch(m["model"])
        p = _plan(m["parallelism"])
        gbs = int(re.search(r"\d+", m["batch"]).group(0))
        seq = int(m["input_len"])
        par = Parallelism(tp=p["tp"], pp=p["pp"], dp=p["dp"], microbatches=gbs // p["dp"])
        # Megatron-LM (2021) predates FlashAttention (2022): scores and probabilities go through HBM
        sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=seq, parallel=par, recompute=Recompute.FULL,
                      precision=Precision(weights=DType.FP16, compute=DType.FP16, activations=DType.FP16,
                                          kv_cache=DType.FP16), optimizer=Optimizer.ADAM_MIXED,
                      flash_attention=False)
        gpus = p["tp"] * p["pp"] * p["dp"]
        r = training.train(system, arch, sc, nodes=gpus // system.node.chips, cal=cal)
        pred = megatron_flop(arch, gbs, seq) / (r["step_time_s"] * gpus) / units.TFLOPS
        out.append(row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), pred, "TFLOP/s",
                       f"{arch.display_name} TP{p['tp']} PP{p['pp']} DP{p['dp']}, GBS {gbs}: "
                       f"step {r['step_time_s']:.2f} s, bubble {100 * r['bubble_frac']:.0f}%, "
                       f"exposed comm {100 * r['comm_exposed_s'] / r['step_time_s']:.0f}%"
                       f" of the step, MFU {100 * r['mfu_frac']:.0f}%{'' if r['fits'] else ', does NOT fit memory'}",
                       system=system.name))
    return frame(out)


def _mosaic_system(hw: str) -> str:
    if hw.startswith("H100"):
        return "dgx-h100"
    return "dgx-a100-40gb" if "40GB" in hw else "dgx-a100-80gb"


def llm_foundry_flop_per_seq(arch, seq: int) -> float:
    """llm-foundry's MFU numerator per sequence (benchmarking README): 3 (2 N s) + 3 (4 L d s^2),
    N the parameter count (position table included), attention counted without the causal half."""
    n = parameter_count(arch).total
    return 3 * 2.0 * n * seq + 3 * 4.0 * arch.num_hidden_layers * arch.hidden_size * seq * seq


def _is_mosaic(r: pd.DataFrame) -> pd.Series:
    return (r["phase"].eq("train") & r["metric"].eq("MFU") & r["parallelism"].str.contains("FSDP")
            & r["model"].str.contains("MPT", regex=False))


@register_validation("mosaicml", selects=_is_mosaic)
def mosaicml(rows: pd.DataFrame) -> pd.DataFrame:
    """MOSAIC rows: MPT training MFU with FSDP (ZeRO-3) on DGX-class nodes, llm-foundry's MFU formula."""
    out = []
    for _, m in rows.iterrows():
        measured = float(m["value_num"])
        size = re.fullmatch(r"MPT-(\d+B)", m["model"].strip())
        name = f"mpt-{size.group(1).lower()}" if size else ""
        if name not in workload_files.list_workloads():
            out.append(unexpressed(m, f"{m['model']}: no llm-foundry configuration of that name in workloads/"))
            continue
        system = catalog.load_system(_mosaic_system(m["hardware"]))
        seq = int(m["input_len"])
        # the benchmark sets max_seq_len to the run's sequence length: the position table has seq rows
        arch = dataclasses.replace(workload_files.load_workload(name), max_position_embeddings=seq)
        gpus = int(m["num_chips"])
        mbs = int(re.search(r"mbs (\d+)", m["batch"]).group(1))
        accum = int(re.search(r"grad accum (\d+)", m["batch"]).group(1))
        fp8 = "FP8" in m["dtype"]
        # amp_fp8 (Transformer Engine): the linear layers run in FP8; weights, activations and the
        # attention stay BF16 (the training graph issues the attention core at the BF16 rate)
        prec = Precision(weights=DType.BF16, compute=DType.FP8 if fp8 else DType.BF16, activations=DType.BF16,
                         kv_cache=DType.BF16)
        rc = Recompute.NONE if "no act ckpt" in m["notes"] else Recompute.FULL
        par = Parallelism(tp=1, pp=1, dp=gpus, zero=3, microbatches=accum)
        sc = Scenario(phase=Phase.TRAIN, batch=mbs, seq_len=seq, parallel=par, recompute=rc,
                      precision=prec, optimizer=Optimizer.ADAM_MIXED)
        r = training.train(system, arch, sc, nodes=max(1, gpus // system.node.chips),
                           cal=attention_kernel(system, "flash_attention_1"))
        seq_per_s_per_gpu = r["sequences_per_s"] / gpus
        peak = system.chip.peak_flop_per_s.get(prec.compute) or system.chip.tensor.rate(prec.compute)
        mfu = llm_foundry_flop_per_seq(arch, seq) * seq_per_s_per_gpu / peak
        out.append(row(m["case_id"], m["hardware"], m["metric"], measured, 100 * mfu, "%",
                       f"{system.name}, {name} (llm-foundry yaml), FSDP over {gpus} GPUs, mbs {mbs} x {accum}, "
                       f"{rc.value} recompute, Triton (FA1) attention: step {r['step_time_s']:.2f} s, ZeRO-3 comm {r['dp_comm_s']:.2f} s "
                       f"({100 * r['dp_comm_exposed_s'] / r['step_time_s']:.0f}% exposed), "
                       f"{r['tokens_per_s_per_chip']:.0f} tokens/s/GPU (measured: see notes)"
                       f"{'' if r['fits'] else ', does NOT fit memory'}", system=system.name))
    return frame(out)


def _is_fa2_training(r: pd.DataFrame) -> pd.Series:
    return (r["phase"].eq("train") & r["metric"].str.contains("training TFLOPS per GPU", regex=False)
            & r["model"].str.contains("FlashAttention-2", regex=False))


def gpt3_2p7b():
    """GPT3-2.7B (Brown et al. 2020, Table 2.1: d_model 2560, 32 layers, 32 heads of 80) on the GPT-3 template."""
    return _gpt_arch("GPT3-2.7B (h=2560, L=32, heads=32, V=50257)")


def fa2_flop_per_seq(arch, seq: int) -> float:
    """FLOPs per sequence as the FlashAttention-2 paper counts them: 6 s N + 12 L h s^2."""
    return 6.0 * seq * parameter_count(arch).total + 12.0 * arch.num_hidden_layers * arch.hidden_size * seq * seq


@register_validation("flash-attention-2", selects=_is_fa2_training)
def flash_attention_2(rows: pd.DataFrame) -> pd.DataFrame:
    """FA-005: GPT3-2.7B at 8k context with FlashAttention-2 on 8 x A100 80GB, TFLOPS per GPU."""
    out = []
    for _, m in rows.iterrows():
        if "A100" not in m["hardware"]:
            out.append(unexpressed(m, "FlashAttention-2 training rows are mapped on A100 80GB (the paper's setup) only"))
            continue
        system = catalog.load_system("dgx-a100-80gb")
        arch = gpt3_2p7b()
        seq, gpus, mbs, accum = 8192, 8, 1, 16
        sc = Scenario(phase=Phase.TRAIN, batch=mbs, seq_len=seq,
                      parallel=Parallelism(dp=gpus, zero=1, microbatches=accum), recompute=Recompute.NONE,
                      precision=Precision.uniform(DType.BF16), optimizer=Optimizer.ADAM_MIXED)
        r = training.train(system, arch, sc, nodes=1, cal=attention_kernel(system, "flash_attention_2"))
        pred = fa2_flop_per_seq(arch, seq) * r["sequences_per_s"] / gpus / units.TFLOPS
        out.append(row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), pred, "TFLOP/s",
                       f"GPT3-2.7B at {seq} tokens (the paper's best Table 1 entry), DP {gpus}, mbs {mbs} x {accum}, "
                       f"FA2 attention: step {r['step_time_s']:.2f} s, MFU {100 * r['mfu_frac']:.0f}% (model FLOP "
                       f"count){'' if r['fits'] else ', does NOT fit memory'}", system=system.name))
    return frame(out)
