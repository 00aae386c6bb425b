"""Where a decode step's time goes on one NVIDIA GPU: the kernels of h100_decode.py's Llama-2-7B step by kind, and
its matrix products alone at decode shapes (run on the lent H100; PyTorch only, no perfmodel import).

Usage: python3 bench/device/h100_decode_profile.py OUT.csv   (OUT.csv defaults to $OUT/decode_profile.csv)

Rows in the columns of reference/device_gpu_kernels.csv (run 7):
  decode_kernels  torch.profiler over 3 eager steps of h100_decode.step (after 3 warm-ups) at a few (batch,
                  context): GPU time per step of each kind of kernel, name = gemm (cuBLAS / CUTLASS / nvjet),
                  attention (SDPA's kernels), other (norms, RoPE, copies into the cache, SiLU x up, adds),
                  all; M = kernels of that kind per step; variant "eager_kernels" (kernel time only: the host's
                  launch gaps are not in it, as they are not in a graph replay)
  gemv            each of the step's matrix products alone, x @ W^T with x [M, K] and W [N, K] in BF16, over
                  four copies of W (so that no call finds its weight in the 50 MB L2), 40 calls captured in a
                  CUDA graph; time_s per call (median of 10 replays / 40); tbps = (N K + M K + M N) x 2 bytes
                  over it
  gemv_fp8        the same at FP8 (E4M3 operands, per-tensor scales, torch._scaled_mm; BF16 out): bytes N K + M K +
                  2 M N
  read            a sum over a 4 GiB BF16 tensor (a read stream, the HBM ceiling a weight-streaming kernel faces):
                  tbps = bytes / time, median of 10
The full kernel tables go to OUT's folder as decode_kernels_b{batch}_c{context}.txt. About 30 s on an H100.
"""

from __future__ import annotations

import csv
import os
import re
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h100_decode as dec  # noqa: E402  (the step and weights measured in run 6)

FIELDS = dec.FIELDS
RUN = 7
OUT = next((a for a in sys.argv[1:] if not a.startswith("--")), os.path.join(os.environ.get("OUT", "."),
                                                                           "decode_profile.csv"))
PROFILED = [(1, 2048), (64, 512), (32, 2048), (256, 128)]
SHAPES = [(12288, 4096), (4096, 4096), (22016, 4096), (4096, 11008), (32000, 4096)]  # qkv, o, gate_up, down, head
MS = (1, 8, 32, 64, 128, 256)
KINDS = (("gemm", re.compile(r"gemm|gemv|nvjet|cutlass|xmma|splitk|cublas", re.I)),
         ("attention", re.compile(r"cudnn|fmha|flash|attention|sdpa|softmax", re.I)))


def kind(name: str) -> str:
    return next((k for k, rx in KINDS if rx.search(name)), "other")


def profile_step(w: dict, b: int, ctx: int, folder: str) -> dict:
    """{kind: (seconds per step, kernels per step)} of 3 profiled eager steps."""
    from torch.profiler import ProfilerActivity, profile

    shape = (dec.C["layers"], 2, b, dec.C["heads"], ctx + 1, dec.C["head_dim"])
    cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    tok = torch.randint(0, dec.C["vocab"], (b,), device="cuda")
    cos, sin = dec.rope_tables(ctx)
    for _ in range(3):
        dec.step(w, cache, tok, ctx, cos, sin)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            dec.step(w, cache, tok, ctx, cos, sin)
        torch.cuda.synchronize()
    out: dict[str, list[float]] = {}
    lines = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        t = e.cuda_time_total if t is None else t
        if not t or e.count == 0:
            continue
        k = kind(e.key)
        acc = out.setdefault(k, [0.0, 0.0])
        acc[0] += t * 1e-6 / 3
        acc[1] += e.count / 3
        lines.append(f"{t / 3:10.1f} us {e.count / 3:7.1f} x  {k:9s} {e.key[:150]}")
    with open(os.path.join(folder, f"decode_kernels_b{b}_c{ctx}.txt"), "w") as f:
        f.write("\n".join(sorted(lines, reverse=True)) + "\n")
    out["all"] = [sum(v[0] for v in out.values()), sum(v[1] for v in out.values())]
    del cache
    return {k: tuple(v) for k, v in out.items()}


def time_gemv(m: int, n: int, k: int, fp8: bool = False) -> float:
    """Seconds per x @ W^T call, 40 calls over four weight copies captured in a CUDA graph."""
    ws = [dec.rand(n, k) for _ in range(4)]
    x = dec.rand(m, k)
    if fp8:
        f8, one = torch.float8_e4m3fn, torch.ones((), device="cuda")
        ws, x = [w.to(f8) for w in ws], x.to(f8)

        def mm(wt):
            return torch._scaled_mm(x, wt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        def mm(wt):
            return F.linear(x, wt)
    for _ in range(3):
        for wt in ws:
            mm(wt)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for wt in ws:
            mm(wt)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(10):
            for wt in ws:
                mm(wt)
    for _ in range(3):
        g.replay()
    return dec.median_time(g.replay, 10) / 40


def main() -> None:
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ")
    folder = os.path.dirname(OUT) or "."
    os.makedirs(folder, exist_ok=True)
    print(f"torch {torch.__version__} device {device} -> {OUT}", flush=True)
    f = open(OUT, "w", newline="")
    writer = csv.DictWriter(f, fieldnames=FIELDS)
    writer.writeheader()
    table = []
    try:
        torch.manual_seed(0)
        with torch.inference_mode():
            w = dec.build_weights()
            for b, ctx in PROFILED:
                try:
                    got = profile_step(w, b, ctx, folder)
                except Exception as e:
                    print(f"profile b={b} ctx={ctx} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                for k, (t, n) in sorted(got.items()):
                    writer.writerow(dict(run=RUN, device=device, section="decode_kernels", name=k, dtype="bf16",
                                         M=round(n, 1), batch=b, heads=dec.C["heads"], seq=ctx,
                                         head_dim=dec.C["head_dim"], variant="eager_kernels", time_s=f"{t:.6e}"))
                    table.append(f"b={b:<4} ctx={ctx:<5} {k:9s} {t * 1e3:8.3f} ms {n:7.1f} kernels")
                f.flush()
                torch.cuda.empty_cache()
            del w
            torch.cuda.empty_cache()
            for n, k in SHAPES:
                for m in MS:
                    try:
                        t = time_gemv(m, n, k)
                    except Exception as e:
                        print(f"gemv {m}x{n}x{k} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                        continue
                    nbytes = 2 * (n * k + m * k + m * n)
                    writer.writerow(dict(run=RUN, device=device, section="gemv", name="linear", dtype="bf16", M=m,
                                         N=n, K=k, variant="graph", time_s=f"{t:.6e}", flop=2 * m * n * k,
                                         tflops=round(2 * m * n * k / t / 1e12, 2), tbps=round(nbytes / t / 1e12, 3)))
                    table.append(f"gemv M={m:<4} N={n:<6} K={k:<6} {t * 1e6:8.1f} us {nbytes / t / 1e12:6.3f} TB/s")
                f.flush()
                torch.cuda.empty_cache()
            for n, k in SHAPES:
                for m in MS:
                    try:
                        t = time_gemv(m, n, k, fp8=True)
                    except Exception as e:
                        print(f"gemv_fp8 {m}x{n}x{k} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                        continue
                    nbytes = n * k + m * k + 2 * m * n
                    writer.writerow(dict(run=RUN, device=device, section="gemv_fp8", name="scaled_mm", dtype="fp8",
                                         M=m, N=n, K=k, variant="graph", time_s=f"{t:.6e}", flop=2 * m * n * k,
                                         tflops=round(2 * m * n * k / t / 1e12, 2), tbps=round(nbytes / t / 1e12, 3)))
                    table.append(f"fp8  M={m:<4} N={n:<6} K={k:<6} {t * 1e6:8.1f} us {nbytes / t / 1e12:6.3f} TB/s")
                f.flush()
                torch.cuda.empty_cache()
            big = dec.rand(2 ** 31)  # 4 GiB
            big.sum()
            t = dec.median_time(big.sum, 10)
            writer.writerow(dict(run=RUN, device=device, section="read", name="sum", dtype="bf16", N=2 ** 31,
                                 variant="eager", time_s=f"{t:.6e}", tbps=round(2 ** 32 / t / 1e12, 3)))
            table.append(f"read 4 GiB sum {t * 1e3:.3f} ms {2 ** 32 / t / 1e12:.3f} TB/s")
    finally:
        f.close()
        print("\n".join(table), flush=True)
        m1 = [float(x.split()[-2]) for x in table if "M=1 " in x]
        print(f"median gemv TB/s at M=1: {statistics.median(m1 or [0.0]):.3f}")


if __name__ == "__main__":
    main()
