"""Decode-step timings of a Llama-2-7B-shaped model on one NVIDIA GPU (run on the lent H100; PyTorch only, no
perfmodel import), to check the model's decode roofline against a real GPU.

Usage: python3 bench/device/h100_decode.py OUT.csv [--smoke]   (OUT.csv defaults to $OUT/decode.csv)

Writes one CSV row per (batch, context, variant) in the columns of reference/device_gpu_kernels.csv (run 6,
section "decode", name "llama2_7b"), flushed row by row so a failure keeps what was measured:
  model    Llama-2-7B shapes in plain torch ops, BF16 random weights (randn x 0.02; RMSNorm weights 1 + that):
           32 layers, hidden 4096, 32 heads (MHA) of 128, fused QKV [4096 -> 12288], RoPE, SwiGLU with fused
           gate/up [4096 -> 22016] and down [11008 -> 4096], RMSNorm (eps 1e-5), vocab 32000, untied LM head;
  step     one decode step for `batch` sequences: embed the tokens; per layer write the new k, v into a
           preallocated KV cache [layers][batch, 32, context + 1, 128] at position `context` (a static slice)
           and attend the single query over the context + 1 positions (scaled_dot_product_attention); logits;
  graph    the step captured in a CUDA graph (side-stream warm-up, as the PyTorch docs show), 5 warm-up
           replays, then the median of 20 replays each timed with CUDA events (no host launch cost);
  eager    the step launched from Python after the warm-up, median of 10 (batch 1 at context 2048, batch 64 at
           context 512: 64 x 2048 does not fit), a host-bound reference.
Grid: batch 1 .. 256 x context 128, 512, 2048, 8192 where batch x (context + 1) <= 110,000 cached tokens (KV:
512 KiB a token), smallest cache first. seq = context (tokens cached before the step). flop = 2 x matmul
parameters (6.61 G, LM head included, embedding not) x batch + 4 x batch x heads x head_dim x context x layers;
tbps = (matmul weight bytes + the context's K and V bytes) / time. At batch 2, context 128 the graph's logits
are compared with the eager step's (relative norm difference, expected < 1e-2). `--smoke`: tiny shapes (2 layers,
hidden 256) that also run on CPU, eager only, timed with perf_counter. About 1 min on an H100.
"""

from __future__ import annotations

import csv
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

FIELDS = ["run", "device", "section", "name", "dtype", "M", "N", "K", "batch", "heads", "seq", "head_dim",
          "variant", "time_s", "flop", "tflops", "tbps"]
RUN, EPS, MAX_TOKENS = 6, 1e-5, 110_000
SMOKE = "--smoke" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
OUT = ARGS[0] if ARGS else os.path.join(os.environ.get("OUT", "."), "decode.csv")
CUDA = torch.cuda.is_available()
DEV = torch.device("cuda" if CUDA else "cpu")
if SMOKE:
    C = dict(layers=2, hidden=256, heads=4, head_dim=64, ffn=688, vocab=1000)
    GRID = [(b, s) for s in (16, 32) for b in (1, 2)]
    EAGER, CHECK = {(1, 32), (2, 32)}, (2, 16)
else:
    C = dict(layers=32, hidden=4096, heads=32, head_dim=128, ffn=11008, vocab=32000)
    GRID = sorted(((b, s) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) for s in (128, 512, 2048, 8192)
                   if b * (s + 1) <= MAX_TOKENS), key=lambda bs: (bs[0] * (bs[1] + 1), bs[0]))
    EAGER, CHECK = {(1, 2048), (64, 512)}, (2, 128)


def rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEV, dtype=torch.bfloat16).mul_(0.02)


def build_weights() -> dict:
    h, q, f, v = C["hidden"], C["heads"] * C["head_dim"], C["ffn"], C["vocab"]
    layers = [dict(ln1=1 + rand(h), qkv=rand(3 * q, h), o=rand(h, q), ln2=1 + rand(h), gu=rand(2 * f, h),
                   down=rand(h, f)) for _ in range(C["layers"])]
    return dict(emb=rand(v, h), layers=layers, ln=1 + rand(h), head=rand(v, h))


def matmul_params(w: dict) -> int:
    return sum(L[n].numel() for L in w["layers"] for n in ("qkv", "o", "gu", "down")) + w["head"].numel()


def rope_tables(pos: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [head_dim] at position `pos` (Llama's rotate-half convention, base 10000)."""
    d = C["head_dim"]
    inv = 1.0 / 10000.0 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d)
    ang = torch.cat([pos * inv, pos * inv])
    return ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


def step(w: dict, cache: torch.Tensor, tok: torch.Tensor, ctx: int, cos, sin) -> torch.Tensor:
    """One decode step: logits [b, vocab]; writes k, v at cache position ctx (a Python int: static in a graph)."""
    b, nh, d, h = tok.shape[0], C["heads"], C["head_dim"], C["hidden"]
    x = F.embedding(tok, w["emb"])
    for i, L in enumerate(w["layers"]):
        qkv = F.linear(F.rms_norm(x, (h,), L["ln1"], EPS), L["qkv"]).view(b, 3, nh, 1, d)
        q = rope(qkv[:, 0], cos, sin)
        kc, vc = cache[i, 0], cache[i, 1]  # [b, heads, ctx + 1, head_dim]
        kc[:, :, ctx:ctx + 1] = rope(qkv[:, 1], cos, sin)
        vc[:, :, ctx:ctx + 1] = qkv[:, 2]
        a = F.scaled_dot_product_attention(q, kc, vc).reshape(b, nh * d)
        x = x + F.linear(a, L["o"])
        g, u = F.linear(F.rms_norm(x, (h,), L["ln2"], EPS), L["gu"]).chunk(2, -1)
        x = x + F.linear(F.silu(g) * u, L["down"])
    return F.linear(F.rms_norm(x, (h,), w["ln"], EPS), w["head"])


def median_time(fn, n: int) -> float:
    """Median seconds of n calls, each bracketed by CUDA events (perf_counter on CPU)."""
    ts = []
    if CUDA:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(n):
        if CUDA:
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def sdpa_backend(b: int, ctx: int) -> str:
    """The back end SDPA picks for these shapes (its host-side choice; no kernel runs)."""
    try:
        from torch.nn.attention import SDPBackend

        q = torch.empty(b, C["heads"], 1, C["head_dim"], device=DEV, dtype=torch.bfloat16)
        k = torch.empty(b, C["heads"], ctx + 1, C["head_dim"], device=DEV, dtype=torch.bfloat16)
        names = {int(m): n.lower() for n, m in SDPBackend.__members__.items()}
        return names.get(int(torch._fused_sdp_choice(q, k, k)), "?")
    except Exception as e:
        return f"? ({type(e).__name__})"


def measure(w: dict, b: int, ctx: int, emit) -> None:
    """Time one (batch, context); emit(variant, seconds) as each time is known."""
    shape = (C["layers"], 2, b, C["heads"], ctx + 1, C["head_dim"])
    need = 2 * torch.Size(shape).numel()
    if CUDA and need > torch.cuda.mem_get_info()[0] - 2 * 2 ** 30:
        raise RuntimeError(f"KV cache {need / 1e9:.1f} GB does not fit")
    cache = torch.randn(shape, device=DEV, dtype=torch.bfloat16)
    tok = torch.randint(0, C["vocab"], (b,), device=DEV)
    cos, sin = rope_tables(ctx)

    def fn():
        return step(w, cache, tok, ctx, cos, sin)
    if not CUDA:
        for _ in range(3):
            ref = fn()
        emit("eager", median_time(fn, 10))
        if (b, ctx) == CHECK:
            out = fn()
            print(f"check b={b} ctx={ctx}: eager step repeated, rel diff {rel_diff(out, ref):.2e} "
                  "(no CUDA graph on CPU)", flush=True)
        return
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            ref = fn()
    torch.cuda.current_stream().wait_stream(s)
    if (b, ctx) in EAGER:  # before the capture, so a failing capture keeps it
        fn()
        emit("eager", median_time(fn, 10))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    for _ in range(5):
        g.replay()
    emit("graph", median_time(g.replay, 20))
    if (b, ctx) == CHECK:
        torch.cuda.synchronize()
        d = rel_diff(out, ref)
        print(f"check b={b} ctx={ctx}: graph vs eager logits rel diff {d:.2e} ({'ok' if d < 1e-2 else 'FAIL'})",
              flush=True)


def rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def main() -> None:
    t_start = time.perf_counter()
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ") if CUDA else "cpu"
    print(f"torch {torch.__version__} cuda {torch.version.cuda} device {device} smoke={SMOKE} "
          f"{len(GRID)} configurations -> {OUT}", flush=True)
    os.makedirs(os.path.dirname(OUT) or ".", exist_ok=True)
    f = open(OUT, "w", newline="")
    writer = csv.DictWriter(f, fieldnames=FIELDS)
    writer.writeheader()
    f.flush()
    table = []
    nh, d, nl = C["heads"], C["head_dim"], C["layers"]
    try:
        torch.manual_seed(0)
        with torch.inference_mode():
            w = build_weights()
            params = matmul_params(w)
            print(f"weights: {params / 1e9:.3f} G matmul parameters, {2 * params / 1e9:.2f} GB", flush=True)
            for b, ctx in GRID:
                flop = 2 * params * b + 4 * b * nh * d * ctx * nl
                nbytes = 2 * params + 2 * 2 * nl * b * ctx * nh * d

                def emit(variant: str, t: float, b=b, ctx=ctx, flop=flop, nbytes=nbytes) -> None:
                    writer.writerow(dict(run=RUN, device=device, section="decode", name="llama2_7b", dtype="bf16",
                                         batch=b, heads=nh, seq=ctx, head_dim=d, variant=variant,
                                         time_s=f"{t:.6e}", flop=flop, tflops=round(flop / t / 1e12, 2),
                                         tbps=round(nbytes / t / 1e12, 3)))
                    f.flush()
                    table.append((b, ctx, variant, t * 1e3, nbytes / t / 1e12))
                    print(f"b={b} ctx={ctx} {variant}: {t * 1e3:.3f} ms, {nbytes / t / 1e12:.3f} TB/s", flush=True)
                t0 = time.perf_counter()
                try:
                    print(f"b={b} ctx={ctx}: sdpa {sdpa_backend(b, ctx)}", flush=True)
                    measure(w, b, ctx, emit)
                except Exception as e:  # keep the other configurations' rows
                    print(f"b={b} ctx={ctx} failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
                if CUDA:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                print(f"b={b} ctx={ctx}: {time.perf_counter() - t0:.1f} s", flush=True)
    except Exception as e:
        print(f"decode failed: {type(e).__name__}: {e}", flush=True)
    finally:
        f.close()
        print(f"\n{'batch':>5} {'ctx':>5} {'variant':>7} {'ms/step':>9} {'TB/s':>6}")
        for b, ctx, variant, ms, tbps in table:
            print(f"{b:>5} {ctx:>5} {variant:>7} {ms:>9.3f} {tbps:>6.3f}")
        print(f"total {time.perf_counter() - t_start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
