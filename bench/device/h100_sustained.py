"""Second device run: burst vs sustained GEMM throughput, launch-free K sweeps, and training steps by back end.

Writes $OUT/sustained.csv, with nvidia-smi's SM clock and power sampled every 50 ms to $OUT/smi.csv while it runs:
  burst      a GEMM shape timed as mamf-finder and the KINDS note time it (10 calls after 3 warm-ups, mean),
             after 2 s idle, then the same shape sustained for 3 s (back-to-back calls, median of 30 batches);
  ksweep     BF16 and FP8 GEMMs at M = N = 8192 and M = N = 4096 for K = 256 .. 16384, replayed from a CUDA graph
             of 20 calls so host launch time (about 30 us a call here) does not count;
  step       the training steps of h100_kernels.py again (repeatability), the d = 4096 one with SDPA forced to
             the flash (FlashAttention-2) and to the cuDNN back end, and compiled with torch.compile;
  burst_more (run 3, by name: `h100_sustained.py burst_more`) burst vs sustained for FP8 GEMMs and causal
             attention (cuDNN and flash back ends, forward and forward + backward).
Sections run in the order named on the command line (default: burst ksweep steps).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from h100_kernels import batch_time, timed, training_step  # noqa: E402

OUT = os.environ.get("OUT", ".")
DEV = torch.device("cuda")
FIELDS = ["section", "name", "dtype", "M", "N", "K", "variant", "time_s", "tflops", "t_wall"]


def write(w, **kw):
    kw["t_wall"] = f"{time.time():.3f}"
    w.writerow(kw)


def burst_and_sustained(w):
    for m, n, k in ((8192, 8192, 8192), (2048, 2048, 13312), (4096, 16384, 4096)):
        a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
        flop = 2 * m * n * k
        for variant, x in zip(("burst_10", "sustained_3s"), burst_then_sustained(lambda: torch.matmul(a, b), flop)):
            write(w, section="burst", name="matmul_nn", dtype="bf16", M=m, N=n, K=k, variant=variant,
                  time_s=f"{flop / x / 1e12:.6e}", tflops=round(x, 1))


def burst_then_sustained(fn, flop: float) -> tuple[float, float]:
    """(burst, sustained) TFLOP/s of fn: 10 calls after 3 warm-ups following 2 s idle, then 3 s back to back."""
    torch.cuda.synchronize()
    time.sleep(2.0)
    for _ in range(3):
        fn()
    t_burst = batch_time(fn, 10)
    reps, times, t_end = max(1, int(0.1 / t_burst)), [], time.perf_counter() + 3.0
    while time.perf_counter() < t_end:
        times.append(batch_time(fn, reps))
    times.sort()
    return flop / t_burst / 1e12, flop / times[len(times) // 2] / 1e12


def burst_more(w):
    """Burst vs sustained for FP8 GEMMs and causal attention (cuDNN and flash back ends, forward and
    forward + backward): does every tensor-core kernel slow alike at the power limit?"""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    one = torch.tensor(1.0, device=DEV)
    for mn, k in ((8192, 8192), (4096, 4096)):
        xq = torch.randn(mn, k, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        wq = torch.randn(mn, k, device=DEV, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        b, su = burst_then_sustained(
            lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16), 2 * mn * mn * k)
        for v, x in (("burst_10", b), ("sustained_3s", su)):
            write(w, section="burst", name="scaled_mm", dtype="fp8_e4m3", M=mn, N=mn, K=k, variant=v,
                  time_s=f"{2 * mn * mn * k / x / 1e12:.6e}", tflops=round(x, 1))
    bsz, heads, seq, d = 2, 32, 8192, 128
    q, kk, v = (torch.randn(bsz, heads, seq, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                for _ in range(3))
    g = torch.randn(bsz, heads, seq, d, device=DEV, dtype=torch.bfloat16)
    flop = 4 * bsz * heads * seq * seq * d / 2
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        with sdpa_kernel([backend]):
            def fwd_bwd():
                F.scaled_dot_product_attention(q, kk, v, is_causal=True).backward(g)
            for variant, fn, fl in (("fwd", lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=True), flop),
                                    ("fwd+bwd", fwd_bwd, 3.5 * flop)):
                b, su = burst_then_sustained(fn, fl)
                for tag, x in (("burst_10", b), ("sustained_3s", su)):
                    write(w, section="burst", name=f"attention_{label}_{variant}", dtype="bf16", M=bsz * seq,
                          N=heads, K=d, variant=tag, time_s=f"{fl / x / 1e12:.6e}", tflops=round(x, 1))


def graph_time(fn, calls: int = 20) -> float:
    """Seconds per call, replaying a CUDA graph of `calls` calls (no host launch cost)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return timed(g.replay, min_s=0.05) / calls


def ksweep(w):
    one = torch.tensor(1.0, device=DEV)
    for mn in (4096, 8192):
        for k in (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384):
            x = torch.randn(mn, k, device=DEV, dtype=torch.bfloat16)
            wt = torch.randn(mn, k, device=DEV, dtype=torch.bfloat16)
            flop = 2 * mn * mn * k
            t = graph_time(lambda: F.linear(x, wt))
            write(w, section="ksweep", name="linear_graph", dtype="bf16", M=mn, N=mn, K=k, variant="graph20",
                  time_s=f"{t:.6e}", tflops=round(flop / t / 1e12, 1))
            xq, wq = x.to(torch.float8_e4m3fn), wt.to(torch.float8_e4m3fn)
            t = graph_time(lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            write(w, section="ksweep", name="scaled_mm_graph", dtype="fp8_e4m3", M=mn, N=mn, K=k,
                  variant="graph20", time_s=f"{t:.6e}", tflops=round(flop / t / 1e12, 1))


def steps(w):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    configs = [((2048, 16, 8, 8, 2048), "default"), ((4096, 32, 4, 6, 2048), "default"),
               ((4096, 32, 4, 6, 2048), "flash"), ((4096, 32, 4, 6, 2048), "cudnn"),
               ((4096, 32, 4, 2, 8192), "default"), ((5120, 40, 3, 4, 2048), "default"),
               ((4096, 32, 4, 6, 2048), "compiled")]
    for (d, heads, layers, mbs, seq), how in configs:
        step, n_params, flop = training_step(d, heads, layers, mbs, seq, compiled=how == "compiled")
        backends = {"flash": [SDPBackend.FLASH_ATTENTION], "cudnn": [SDPBackend.CUDNN_ATTENTION]}.get(how)
        try:
            if backends:
                with sdpa_kernel(backends):
                    t = timed(step, min_s=0.2)
            else:
                t = timed(step, min_s=0.2)
        except Exception as e:  # a back end or the compiler failing: keep the rest
            print(f"step d={d} {how}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
            continue
        tokens = mbs * seq
        write(w, section="step", name=f"gpt_d{d}_L{layers}_mbs{mbs}_s{seq}", dtype="bf16_autocast", M=tokens, N=d,
              K=n_params, variant=how, time_s=f"{t:.6e}", tflops=round(flop / t / 1e12, 1))
        print(f"step d={d} {how}: {t * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                            "--format=csv,noheader", "-lms", "50"], stdout=open(os.path.join(OUT, "smi.csv"), "w"))
    with open(os.path.join(OUT, "sustained.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        sections = {"burst": burst_and_sustained, "ksweep": ksweep, "steps": steps, "burst_more": burst_more}
        for name in sys.argv[1:] or ["burst", "ksweep", "steps"]:
            fn = sections[name]
            t0 = time.perf_counter()
            try:
                fn(w)
            except Exception as e:
                print(f"{name} failed: {type(e).__name__}: {e}", flush=True)
            f.flush()
            print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    smi.terminate()
