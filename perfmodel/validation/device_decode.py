"""perfmodel's own decode measurements on a lent H100 (reference/device_gpu_kernels.csv, runs 6 and 7) against the
model: where a decode step's time goes, and how close to the HBM roofline its matrix products run.

Run 6 (bench/device/h100_decode.py) times one decode step of a Llama-2-7B-shaped model in plain PyTorch (BF16,
cuBLAS linears, SDPA on cuDNN, every norm, RoPE piece, cache write and SiLU x up its own kernel) over batch 1-256
x context 128-8192, replayed from a CUDA graph (no host time). Run 7 (h100_decode_profile.py) splits four of those
steps into kernel kinds with torch.profiler, times the step's matrix products alone at decode shapes (BF16 and
FP8) and a 4 GiB read stream.

    step        measured graph replay vs point() on dgx-h100 (the same model, tp 1, decode, BF16): the model's
                fused step against an unfused PyTorch one, so the model is expected fast, by the kernels it fuses
    kernels     per profiled step: matrix products, attention and the rest, measured vs the model's operators
                of each kind (evaluate's per-operator frame: kind matmul, attention, the others)
    gemv        each decode-shape matmul alone: achieved HBM bandwidth over the H100's peak (3.35 TB/s) beside the
                read stream's, the fraction hbm_efficiency states for every memory-bound kernel

    python -m perfmodel.validation.device_decode      the three tables

Does not: fit anything. What the rows show (measured 2026-11-27) is reported, not tuned away: the read stream runs
at 0.90 of peak (hbm_efficiency 0.9 holds for it), the decode-shape GEMMs at 0.54-0.81 (BF16) and 0.51-0.78 (FP8);
see the module's tables and tests/test_device_decode.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import system_names, workload_refs
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import units
from perfmodel.core.scenario import Parallelism, Phase, Scenario
from perfmodel.model import evaluate
from perfmodel.validation.device_runs import load

WORKLOAD = "llama-2-7b"  # the script's shapes: 32 layers, d 4096, MHA 32 x 128, SwiGLU 11008, vocab 32000
KINDS = {"gemm": ("matmul",), "attention": ("attention",)}  # measured kernel kind -> the model's operator kinds


def _scenario(batch: int, context: int) -> Scenario:
    return Scenario(Phase.DECODE, batch=int(batch), context=int(context), parallel=Parallelism(tp=1))


def _setup(device: str):
    system = catalog.load_system(system_names.resolve(device))
    return system, workload_refs.load(WORKLOAD)


def step_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Decode steps replayed from CUDA graphs (run 6): measured vs predicted seconds per step."""
    s = df[df["section"].eq("decode") & df["variant"].eq("graph")].copy()
    pred = []
    for device, b, c in s[["device", "batch", "seq"]].itertuples(index=False):
        system, arch = _setup(device)
        pred.append(evaluate.point(system, arch, _scenario(b, c))["step_time_s"])
    s["predicted_s"] = pred
    s["error_frac"] = s["predicted_s"] / s["time_s"] - 1
    return s[["device", "batch", "seq", "time_s", "predicted_s", "error_frac"]].reset_index(drop=True)


def kernel_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Profiled steps (run 7): GPU seconds per step of each kernel kind, measured vs the model's operators of
    that kind (their count x time; 'other' is every remaining operator, 'all' the step)."""
    k = df[df["section"].eq("decode_kernels")]
    rows = []
    for (device, b, c), g in k.groupby(["device", "batch", "seq"]):
        system, arch = _setup(device)
        ops = evaluate.evaluate(system, arch, _scenario(b, c)).ops
        kind_time = ops.groupby("kind")["total_time_s"].sum()
        model = {name: float(kind_time.reindex(list(kinds)).fillna(0.0).sum()) for name, kinds in KINDS.items()}
        model["all"] = float(kind_time.sum())
        model["other"] = model["all"] - model["gemm"] - model["attention"]
        for r in g.itertuples(index=False):
            rows.append({"device": device, "batch": b, "seq": c, "kind": r.name, "kernels": r.M,
                         "time_s": r.time_s, "predicted_s": model[r.name]})
    out = pd.DataFrame(rows)
    out["error_frac"] = out["predicted_s"] / out["time_s"] - 1
    return out


def gemv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Decode-shape matmuls alone (run 7, BF16 and FP8) and the read stream: achieved bytes per second over the
    chip's HBM peak, beside the calibration's hbm_efficiency."""
    g = df[df["section"].isin(["gemv", "gemv_fp8", "read"])].copy()
    peak, eff = {}, {}
    for device in g["device"].unique():
        system = catalog.load_system(system_names.resolve(device))
        peak[device] = system.chip.hbm_bandwidth_bytes_per_s
        eff[device] = calibration_of(system)["hbm_efficiency"]
    g["hbm_frac"] = g["tbps"] * units.TB / g["device"].map(peak)
    g["hbm_efficiency"] = g["device"].map(eff)
    return g[["device", "section", "dtype", "M", "N", "K", "time_s", "tbps", "hbm_frac", "hbm_efficiency"]]


def weight_stream_frac(df: pd.DataFrame, section: str = "gemv", batch_max: int = 64) -> float:
    """The decode-shape GEMMs' achieved fraction of HBM peak at up to `batch_max` rows, weighted as a step reads
    them: a Llama-2-7B layer's four weights (the LM head, N = vocab, left out), their bytes over their total time,
    i.e. each shape's fraction weighted by its time."""
    g = gemv_frame(df)
    g = g[g["section"].eq(section) & (g["M"] <= batch_max) & (g["N"] != workload_refs.load(WORKLOAD).vocab_size)]
    return float((g["hbm_frac"] * g["time_s"]).sum() / g["time_s"].sum())


def main() -> None:
    df = load()
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        s = step_frame(df)
        print(s.to_string(index=False))
        print(f"decode steps: {len(s)}, median error {s['error_frac'].median():+.1%} "
              f"(range {s['error_frac'].min():+.1%} .. {s['error_frac'].max():+.1%})")
        print(kernel_frame(df).to_string(index=False))
        g = gemv_frame(df)
        print(g.to_string(index=False))
        for sec in ("gemv", "gemv_fp8"):
            x = g[g["section"].eq(sec)]["hbm_frac"]
            print(f"{sec}: HBM fraction {x.min():.2f} .. {x.max():.2f}, median {np.median(x):.2f}; "
                  f"a layer's weights at batch <= 64: {weight_stream_frac(df, sec):.2f}")


if __name__ == "__main__":
    main()
