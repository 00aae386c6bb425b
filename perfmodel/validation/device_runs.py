"""perfmodel's own GPU measurements (reference/device_gpu_kernels.csv) against the model, and the Hopper
parameters read from them.

The file holds runs of bench/device/h100_kernels.py and h100_sustained.py on lent GPUs (a `device` column): runs
1-3 on an H100 80GB HBM3 SXM, run 4 on an H200 (both 700 W, PyTorch 2.11, CUDA 13.0; reference/README.md), run 5 on an
H200 (h100_fp8_steps.py: compiled steps in BF16 and FP8 by model width). What
it fixes, and how this module recomputes it:

    sustained_tensor_ratio   burst rows: the same matmul timed as mamf-finder does (10 calls after 3 warm-ups, after
                             2 s idle) and back to back for 3 s; ratio = sustained / burst TFLOP/s, the mean over
                             the GEMM pairs (sustained_ratios; BF16 in runs 2 and 3, FP8 in run 3); the attention
                             pairs of run 3 are reported beside them (burst_pairs), not averaged in
    gemm_tile_fixed_k        ksweep rows: GEMMs at M = N = 4096 and 8192 over K = 256 .. 16384 replayed from CUDA
                             graphs; least squares of A K / (K + k0) (k_fit), FP8 k0 halved into BF16 K steps

and what it checks (predictions at sustained clocks, the calibration as shipped):

    gemm     every GEMM of the decoder-layer and K sweeps long enough to be kernel-bound (>= 100 us: a call from
             Python costs about 30 us of host time on that machine), predicted as one matmul (formulas.matmul)
    step     whole single-GPU training steps of a GPT-style decoder (forward, backward, fused AdamW); the
             torch.compile'd step is the fused kernels the graph prices; the eager ones run each element-wise
             primitive as its own kernel in FP32 under autocast (the residual stream is FP32: the embedding is),
             which the model's fused pricing does not include, so they measure slower than predicted; the
             compiled FP8 ones (run 5) check the low-precision recipe's casts and FP8's speed-up over BF16
             (fp8_speedups)

    python -m perfmodel.validation.device_runs        the parameters recomputed, then both tables

Does not: fit anything into the calibration (the values are copied into nvidia.toml with this file as source).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import system_names, workload_files
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import input_files, units
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Precision, Recompute, Scenario
from perfmodel.model import kernels

PATH = "reference/device_gpu_kernels.csv"
H100, H200 = "H100 80GB HBM3", "H200"
KERNEL_BOUND_S = 100 * units.US  # shorter calls are host-bound on that machine (about 30 us per call from Python)
VOCAB = 50432  # the script's GPT: GPT-NeoX tokenizer padded, tied head


def load(path: str = PATH) -> pd.DataFrame:
    return input_files.read_csv(path, "device measurements")


def burst_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Burst-section kernels: burst and sustained TFLOP/s and their ratio, one row per run and kernel."""
    b = df[df["section"].eq("burst")]
    p = b.pivot_table(index=["device", "run", "name", "dtype", "M", "N", "K"], columns="variant",
                      values="tflops").reset_index()
    return p.assign(ratio=p["sustained_3s"] / p["burst_10"])


def sustained_ratios(df: pd.DataFrame, device: str = H100) -> pd.Series:
    """Sustained over burst TFLOP/s of every GEMM pair (BF16 matmuls and FP8 scaled matmuls) on `device`."""
    p = burst_pairs(df[df["device"].eq(device)])
    return p[p["name"].isin(["matmul_nn", "scaled_mm"])]["ratio"]


def k_fit(df: pd.DataFrame, dtype: str, device: str = H100) -> tuple[float, float]:
    """(A, k0) of eta = A K / (K + k0) over the ksweep rows of `dtype` on `device` (k0 in that type's K
    elements): least squares, k0 on a grid (the model is linear in A for a fixed k0)."""
    s = df[df["section"].eq("ksweep") & df["dtype"].eq(dtype) & df["device"].eq(device)]
    k = s["K"].to_numpy(float)
    peak = catalog.load_system(system_names.resolve(device)).chip.tensor.rate(DType.FP8 if dtype.startswith("fp8") else DType.BF16)
    eta = s["tflops"].to_numpy(float) * units.TFLOPS / peak
    k0 = np.arange(0.0, 2000.0, 1.0)[:, None]  # one row per candidate k0: the fit is linear in A for each
    x = k / (k + k0)
    a = (x @ eta) / (x * x).sum(axis=1)
    sse = ((a[:, None] * x - eta) ** 2).sum(axis=1)
    best = int(np.argmin(sse))
    return float(a[best]), float(k0[best, 0])


def predicted_tflops(system, cal, m, n, k, dtype: str) -> np.ndarray:
    """Modelled TFLOP/s of M x N x K matmuls at `dtype` (kernels.matmul_times: operands already in it)."""
    d = DType.FP8 if dtype.startswith("fp8") else DType.BF16
    flop = 2.0 * np.asarray(m, float) * np.asarray(n, float) * np.asarray(k, float)  # formulas.matmul's flop
    return flop / kernels.matmul_times(system, cal, m, n, k, d) / units.TFLOPS


def gemm_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Kernel-bound GEMM rows: measured vs predicted TFLOP/s at sustained clocks."""
    g = df[df["section"].isin(["gemm", "fp8", "ksweep"]) & (df["time_s"] >= KERNEL_BOUND_S)].copy()
    g["predicted_tflops"] = np.nan
    for (device, dtype), rows in g.groupby(["device", "dtype"]):  # one evaluation per GPU and type, shapes at once
        system = catalog.load_system(system_names.resolve(device))
        g.loc[rows.index, "predicted_tflops"] = predicted_tflops(system, calibration_of(system), rows["M"], rows["N"],
                                                                 rows["K"], dtype)
    g["error_frac"] = g["predicted_tflops"] / g["tflops"] - 1
    return g[["run", "device", "section", "name", "dtype", "M", "N", "K", "time_s", "tflops", "predicted_tflops",
              "error_frac"]]


def step_arch(d: int, layers: int, seq: int):
    """The script's GPT (h100_kernels.GPT): LayerNorm without bias, plain 4d GELU MLP, no biases, tied head;
    it has no position encoding, taken here as a learned table of the run's length (d x seq parameters, one add)."""
    base = workload_files.load_workload("mpt-7b")
    return dataclasses.replace(base, name=f"device-gpt-d{d}-l{layers}", display_name=f"GPT d={d} L={layers}",
                               hidden_size=d, num_hidden_layers=layers, num_attention_heads=d // 128,
                               num_key_value_heads=d // 128, head_dim=128, intermediate_size=4 * d,
                               vocab_size=VOCAB, max_position_embeddings=seq, attention_bias=False,
                               mlp_bias=False, hidden_act="gelu_pytorch_tanh", published_parameters=0.0)


def step_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Training-step rows: measured vs predicted step time (one GPU, no communication, AdamW), each on its device's
    catalogue system. Variants: eager back ends (default, flash, cudnn), 'compiled' (BF16) and 'compiled_fp8'
    (h100_fp8_steps.py: the blocks' linear layers in FP8 under per-tensor current scaling, so one amax read per
    quantized tensor, low_precision_training_amax_reads = 1; the tied head in BF16)."""
    from perfmodel.training.step import train

    s = df[df["section"].eq("step")].copy()
    pred = []
    for device, name, mbs, seq, variant in s[["device", "name", "batch", "seq", "variant"]].itertuples(index=False):
        system = catalog.load_system(system_names.resolve(device))
        cal = calibration_of(system)
        d, layers = (int(x) for x in re.match(r"gpt_d(\d+)_L(\d+)", name).groups())
        fp8 = variant == "compiled_fp8"
        prec = Precision(weights=DType.BF16, compute=DType.FP8 if fp8 else DType.BF16, activations=DType.BF16,
                         kv_cache=DType.BF16)
        sc = Scenario(phase=Phase.TRAIN, batch=int(mbs), seq_len=int(seq), parallel=Parallelism(dp=1, microbatches=1),
                      recompute=Recompute.NONE, precision=prec, optimizer=Optimizer.ADAM_MIXED)
        # SDPA forced to its flash back end runs FlashAttention-2 kernels; the default and cuDNN ones a Hopper kernel
        c = (cal.with_overrides({"attention_tensor_efficiency": cal["flash_attention_2_tensor_efficiency"]})
             if variant == "flash" else cal.with_overrides({"low_precision_training_amax_reads": 1}) if fp8 else cal)
        r = train(system, step_arch(d, layers, int(seq)), sc, cal=c).summary.iloc[0]
        pred.append(float(r["step_time_s"]))
    s["predicted_s"] = pred
    s["error_frac"] = s["predicted_s"] / s["time_s"] - 1
    return s[["run", "device", "name", "variant", "time_s", "predicted_s", "error_frac"]]


def fp8_speedups(steps: pd.DataFrame) -> pd.DataFrame:
    """Measured and predicted FP8 over BF16 speed of the same compiled step (step_frame rows of one run)."""
    c = steps[steps["variant"].isin(["compiled", "compiled_fp8"])]
    w = c.pivot_table(index=["run", "device", "name"], columns="variant", values=["time_s", "predicted_s"])
    w = w.dropna()
    out = pd.DataFrame({"measured": w[("time_s", "compiled")] / w[("time_s", "compiled_fp8")],
                        "predicted": w[("predicted_s", "compiled")] / w[("predicted_s", "compiled_fp8")]})
    return out.reset_index()


def main() -> None:
    df = load()
    for device in df["device"].drop_duplicates():
        system = system_names.resolve(device)
        cal = calibration_of(catalog.load_system(system))
        r = sustained_ratios(df, device)
        print(f"{device} GEMMs sustained / burst: {', '.join(f'{x:.3f}' for x in r)}; mean {r.mean():.3f} "
              f"(nvidia.toml, {system}: {cal['sustained_tensor_ratio']})")
        a, k0 = k_fit(df, "bf16", device)
        a8, k08 = k_fit(df, "fp8_e4m3", device)
        print(f"{device} K sweeps: BF16 A = {a:.3f}, k0 = {k0:.0f}; FP8 A = {a8:.3f}, k0 = {k08:.0f} FP8 = "
              f"{k08 / 2:.0f} BF16 steps (gemm_tile_fixed_k: {cal['gemm_tile_fixed_k']:.0f})")
    print(burst_pairs(df).round(3).to_string(index=False))
    with pd.option_context("display.width", 160, "display.max_rows", 400):
        g = gemm_frame(df)
        print(g.to_string(index=False))
        print(f"GEMMs: {len(g)} rows, median |error| {g['error_frac'].abs().median():.1%}, "
              f"median {g['error_frac'].median():+.1%}")
        steps = step_frame(df)
        print(steps.to_string(index=False))
        print(fp8_speedups(steps).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
