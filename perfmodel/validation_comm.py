"""Development checks of the collective and training models against published measurements.

Families (rows of reference/published_measurements.csv):
    neuron-collectives  NRN-CC-*  nccom-test examples (bus bandwidth, latency)
    nccl                NCCL-*    nccl-tests / torch all-reduce bus-bandwidth curves and latency
    megatron            MEG-*     Megatron-LM weak scaling on Selene (TFLOP/s per GPU, paper Eq. 3)
    mosaicml            MOSAIC-*  llm-foundry MPT training MFU (FSDP)

Mapping of rows to the model (stated once per family, never per row, nothing fitted):
    - nccom-test ranks are NeuronCores; the model works per chip: ranks / 2 Trainium1 chips of a
      trn1.32xlarge (the examples do not state the instance), at least 2 (2 ranks may be the two
      cores of one chip, which do not use NeuronLink); 'collective permute' = send/recv between pairs.
    - p4de.24xlarge rows use p4d.24xlarge: the same NVSwitch and 4 x 100 Gbps EFA (only HBM differs).
    - 8x H200 rows use p5e.48xlarge. GCP a3-mega (TCPXO) is not in the catalogue: not predicted.
    - The fastest algorithm is taken ('auto'); NCCL's NVLS (in-switch reduction) is not modelled.
    - Megatron: GPT architecture from the row (h, L, heads, V) on the GPT-3 template (learned
      positions, 4h MLP, LayerNorm, biases), Selene = dgx-a100-80gb, FP16 mixed precision, full
      activation recomputation (the paper's Eq. 3 counts it), micro-batch 1, 1F1B schedule (the
      paper interleaves large models with an unstated chunk count: the bubble here is an upper
      bound), no ZeRO; predicted = Eq. 3 FLOPs 96 B s l h^2 (1 + s/6h + V/16lh) / (step x GPUs).
    - MosaicML: FSDP FULL_SHARD = ZeRO-3 over all GPUs, tp = pp = 1; 'act ckpt' = full
      recomputation; H100 rows on dgx-h100 (8 x 400 Gb/s), A100 rows on dgx-a100-80gb / -40gb
      (8 x 200 Gb/s = 1600 Gb/s). MPT architectures are not in workloads/: MPT-7B/13B/70B use the
      Llama-2 model of the same width and depth (FLOPs per token within 2% for 7B/13B, +20% MLP
      for 70B); MPT-3B and MPT-30B have no counterpart and are not predicted. MFU compares directly
      (both count forward + backward model FLOPs, attention included).

Does not: tune anything to these rows; every miss is reported with its error.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from perfmodel import catalog, collectives as co, training, units, workload_files
from perfmodel.calibration import calibration_for
from perfmodel.dtypes import DType
from perfmodel.graph import Collective
from perfmodel.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.validation import frame, measurements, parse_points, parse_size, register_validation, row

_OPS = {"all-reduce": Collective.ALL_REDUCE, "all_reduce": Collective.ALL_REDUCE, "all-gather": Collective.ALL_GATHER,
        "collective permute": Collective.SEND_RECV}


def _collective(text: str) -> Collective:
    for key, c in _OPS.items():
        if key in text:
            return c
    raise ValueError(f"no collective named in {text!r}")


def _predict(system_name: str, coll: Collective, size: float, chips: int, metric: str) -> tuple[float, str]:
    """(predicted value in the row's unit, algorithm) for one point: busbw GB/s or latency us."""
    s = catalog.load_system(system_name)
    group = 2 if coll == Collective.SEND_RECV else chips
    # microbenchmarks (nccom-test, nccl-tests) launch every call from the host
    df = co.sweep(s, calibration_for(s), coll, [size], [group], launch="host")
    r = df.iloc[0]
    if "latency" in metric:
        return float(r["time_s"] / units.US), r["algorithm"]
    return float(r["busbw_bytes_per_s"] / units.GB), r["algorithm"]


def _points(rows: pd.DataFrame, system_of, chips_of, note_of) -> pd.DataFrame:
    out = []
    for _, m in rows.iterrows():
        system = system_of(m)
        coll = _collective(m["model"])
        chips = chips_of(m)
        pts = [(parse_size(m["model"]), float(m["value_num"]), m["metric"], m["case_id"])]
        for size, val, unit in parse_points(m["notes"]):
            metric = "latency" if unit == "us" else "bus bandwidth"
            pts.append((size, val, metric, f"{m['case_id']}@{_fmt_size(size)}"))
        for size, val, metric, cid in pts:
            unit = "us" if "latency" in metric else "GB/s"
            if system is None:
                out.append(row(cid, m["hardware"], f"{metric} {_fmt_size(size)}", val, np.nan, unit,
                               "system not in the catalogue: not predicted"))
                continue
            pred, alg = _predict(system, coll, size, chips, metric)
            out.append(row(cid, m["hardware"], f"{metric} {_fmt_size(size)}", val, pred, unit,
                           f"{system}, {chips} chips, {coll.value}, chosen {alg}. {note_of(m)}".strip()))
    return frame(out)


def _fmt_size(n: float) -> str:
    for name, div in (("GiB", units.GiB), ("MiB", units.MiB), ("KiB", units.KiB)):
        if n >= div:
            return f"{n / div:g} {name}"
    return f"{n:g} B"


def _ranks(text: str) -> int:
    return int(re.match(r"\d+", text.strip()).group(0))


@register_validation("neuron-collectives")
def neuron_collectives() -> pd.DataFrame:
    """NRN-CC rows: nccom-test examples, modelled on trn1.32xlarge with ranks / 2 chips."""
    def note(m):
        return ("nccom ranks are NeuronCores: modelled as chips = ranks / 2 (at least 2). "
                + ("Measured with a 31-step ring over 32 ranks; the model's fastest algorithm on 16 chips is fewer "
                   "steps." if m["case_id"] == "NRN-CC-004" else ""))
    return _points(measurements("NRN-CC"), lambda m: "trn1.32xlarge", lambda m: max(2, _ranks(m["num_chips"]) // 2),
                   note)


_NCCL_SYSTEMS = {"p5.48xlarge": "p5.48xlarge", "p4de": "p4d.24xlarge", "H200": "p5e.48xlarge"}


@register_validation("nccl")
def nccl() -> pd.DataFrame:
    """NCCL rows: all-reduce bus bandwidth curves and small-message latency."""
    def system_of(m):
        for key, name in _NCCL_SYSTEMS.items():
            if key in m["hardware"]:
                return name
        return None

    def note(m):
        extra = []
        if "p4de" in m["hardware"]:
            extra.append("p4de modelled as p4d (same NVSwitch and EFA)")
        if "NVLS" in m["parallelism"] or "NVLS" in m["notes"]:
            if "disabled" not in m["model"]:
                extra.append("measured with NVLS in-switch reduction, not in the model")
        return "; ".join(extra)
    return _points(measurements("NCCL"), system_of, lambda m: _ranks(m["num_chips"]), note)


# ---------------------------------------------------------------- training families


def _gpt_arch(model: str):
    """GPT architecture from a MEG row: 'GPT 1.7B (h=2304, L=24, heads=24, V=51200)' on the GPT-3 template."""
    kv = dict(re.findall(r"(h|L|heads|V)=(\d+)", model))
    h, layers, heads, vocab = int(kv["h"]), int(kv["L"]), int(kv["heads"]), int(kv["V"])
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


@register_validation("megatron")
def megatron() -> pd.DataFrame:
    """MEG rows: achieved TFLOP/s per GPU on Selene (dgx-a100-80gb), paper Eq. 3 FLOPs; attention
    materialised (the paper's fused softmax kernel, before FlashAttention)."""
    system = catalog.load_system("dgx-a100-80gb")
    out = []
    for _, m in measurements("MEG-").iterrows():
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
        r = training.train(system, arch, sc, nodes=gpus // system.node.chips)
        pred = megatron_flop(arch, gbs, seq) / (r["step_time_s"] * gpus) / units.TFLOPS
        out.append(row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), pred, "TFLOP/s",
                       f"{arch.display_name} TP{p['tp']} PP{p['pp']} DP{p['dp']}, GBS {gbs}: "
                       f"step {r['step_time_s']:.2f} s, bubble {100 * r['bubble_frac']:.0f}%, "
                       f"exposed comm {100 * r['comm_exposed_s'] / r['step_time_s']:.0f}%"
                       f" of the step, MFU {100 * r['mfu_frac']:.0f}%{'' if r['fits'] else ', does NOT fit memory'}"))
    return frame(out)


_MPT = {"MPT-7B": "llama-2-7b", "MPT-13B": "llama-2-13b", "MPT-70B": "llama-2-70b"}


def _mosaic_system(hw: str) -> str:
    if hw.startswith("H100"):
        return "dgx-h100"
    return "dgx-a100-40gb" if "40GB" in hw else "dgx-a100-80gb"


@register_validation("mosaicml")
def mosaicml() -> pd.DataFrame:
    """MOSAIC rows: MPT training MFU with FSDP (ZeRO-3) on DGX-class nodes."""
    out = []
    for _, m in measurements("MOSAIC-").iterrows():
        measured = float(m["value_num"])
        if m["model"] not in _MPT:
            out.append(row(m["case_id"], m["hardware"], f"{m['model']} {m['metric']}", measured, np.nan, "%",
                           f"{m['model']}: no workload of that shape in workloads/; not predicted"))
            continue
        system = catalog.load_system(_mosaic_system(m["hardware"]))
        arch = workload_files.load_workload(_MPT[m["model"]])
        gpus = int(m["num_chips"])
        mbs = int(re.search(r"mbs (\d+)", m["batch"]).group(1))
        accum = int(re.search(r"grad accum (\d+)", m["batch"]).group(1))
        fp8 = "FP8" in m["dtype"]
        prec = Precision.uniform(DType.FP8 if fp8 else DType.BF16)
        rc = Recompute.NONE if "no act ckpt" in m["notes"] else Recompute.FULL
        par = Parallelism(tp=1, pp=1, dp=gpus, zero=3, microbatches=accum)
        sc = Scenario(phase=Phase.TRAIN, batch=mbs, seq_len=int(m["input_len"]), parallel=par, recompute=rc,
                      precision=prec, optimizer=Optimizer.ADAM_MIXED)
        r = training.train(system, arch, sc, nodes=max(1, gpus // system.node.chips))
        out.append(row(m["case_id"], m["hardware"], f"{m['model']} {m['metric']}", measured, 100 * r["mfu_frac"], "%",
                       f"{system.name}, {arch.name} for {m['model']}, FSDP over {gpus} GPUs, mbs {mbs} x {accum}, "
                       f"{rc.value} recompute: step {r['step_time_s']:.2f} s, ZeRO-3 comm {r['dp_comm_s']:.2f} s "
                       f"({100 * r['dp_comm_exposed_s'] / r['step_time_s']:.0f}% exposed), "
                       f"{r['tokens_per_s_per_chip']:.0f} tokens/s/GPU (measured: see notes)"
                       f"{'' if r['fits'] else ', does NOT fit memory'}"))
    return frame(out)
