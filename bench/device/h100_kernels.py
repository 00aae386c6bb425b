"""Kernel and training-step timings on one NVIDIA GPU (run on the lent H100; PyTorch only, no perfmodel import).

Writes one CSV row per measurement to $OUT/kernels.csv (or argv[1]) and the machine's description to
machine.txt beside it. Sections:
  gemm      BF16 matmuls through cuBLAS (torch.nn.functional.linear: y = x W^T, as a Linear layer runs them):
            a shape grid (M tokens, N outputs, K reduction) and the forward / data-gradient / weight-gradient
            GEMMs of dense decoder layers (d = 2304 .. 8192, 4d MLP) at the token counts training runs use;
  fp8       the same shapes in FP8 e4m3 with per-tensor scales (torch._scaled_mm, BF16 output);
  attention causal flash attention (scaled_dot_product_attention, flash and cuDNN back ends), forward and
            forward + backward, head dims 64 / 128, sequences 1k-16k;
  memory    a device copy, LayerNorm and GELU forward (bandwidth-bound kernels);
  step      whole training steps (forward, backward, AdamW) of a GPT-style decoder in eager PyTorch with BF16
            autocast over FP32 weights, as a single-GPU stack without communication.
Each time is the median of 5 timed batches of back-to-back calls (CUDA events), after warm-up.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("OUT", "."), "kernels.csv")
DEV = torch.device("cuda")
FIELDS = ["section", "name", "dtype", "M", "N", "K", "batch", "heads", "seq", "head_dim", "variant",
          "time_s", "flop", "bytes", "tflops", "tbps"]


def timed(fn, min_s: float = 0.02, batches: int = 5) -> float:
    """Median seconds per call: warm-up, then `batches` batches sized to last about min_s each."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = int(min(200, max(1, min_s / one)))
    times = sorted(batch_time(fn, reps) for _ in range(batches))
    return times[len(times) // 2]


def batch_time(fn, reps: int) -> float:
    """Seconds per call of `reps` back-to-back calls, timed with CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


class Sink:
    def __init__(self, path: str):
        self.f = open(path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=FIELDS)
        self.w.writeheader()

    def row(self, **kw):
        t, flop, nbytes = kw["time_s"], kw.get("flop", 0), kw.get("bytes", 0)
        kw["tflops"] = round(flop / t / 1e12, 2) if flop else ""
        kw["tbps"] = round(nbytes / t / 1e12, 3) if nbytes else ""
        kw["time_s"] = f"{t:.6e}"
        self.w.writerow(kw)
        self.f.flush()


def gemm_shapes() -> list[tuple[str, int, int, int]]:
    """(name, M, N, K): a grid, then the three GEMMs of each Linear of a dense decoder layer."""
    shapes = []
    for m in (256, 1024, 4096, 16384):
        for n in (1024, 4096, 16384):
            for k in (256, 512, 1024, 2048, 4096, 8192, 16384):
                shapes.append(("grid", m, n, k))
    for s in (2048, 4096, 8192, 16384):
        shapes.append(("square", s, s, s))
    for d in (2304, 3072, 4096, 5120, 7168, 8192):
        for tokens in (4096, 16384):
            for layer, (k, n) in {"qkv": (d, 3 * d), "o": (d, d), "up": (d, 4 * d), "down": (4 * d, d)}.items():
                shapes.append((f"d{d}_{layer}_fwd", tokens, n, k))
                shapes.append((f"d{d}_{layer}_dgrad", tokens, k, n))
                shapes.append((f"d{d}_{layer}_wgrad", n, k, tokens))
    return shapes


def run_gemm(sink: Sink, fp8: bool) -> None:
    torch.manual_seed(0)
    for name, m, n, k in gemm_shapes():
        if fp8 and not name.endswith(("grid", "square", "_fwd")):
            continue
        x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
        if fp8:
            xq, wq = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
            one = torch.tensor(1.0, device=DEV)
            t = timed(lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            nbytes = m * k + n * k + 2 * m * n
        else:
            t = timed(lambda: F.linear(x, w))
            nbytes = 2 * (m * k + n * k + m * n)
        sink.row(section="fp8" if fp8 else "gemm", name=name, dtype="fp8_e4m3" if fp8 else "bf16",
                 M=m, N=n, K=k, time_s=t, flop=2 * m * n * k, bytes=nbytes)


def run_attention(sink: Sink) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION}
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends["cudnn"] = SDPBackend.CUDNN_ATTENTION
    for d in (64, 128):
        heads = 4096 // d
        for s in (1024, 2048, 4096, 8192, 16384):
            b = max(1, 16384 // s)
            q, k, v = (torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            flop_fwd = 4 * b * heads * s * s * d / 2  # causal: half the score matrix
            for label, backend in backends.items():
                try:
                    with sdpa_kernel([backend]):
                        t_f = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                        g = torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16)

                        def fwd_bwd():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            o.backward(g)
                        t_fb = timed(fwd_bwd)
                except RuntimeError as e:  # a back end that does not take this shape
                    print(f"attention {label} d={d} s={s}: {str(e).splitlines()[0]}", flush=True)
                    continue
                common = dict(section="attention", name=f"causal_{label}", dtype="bf16", batch=b, heads=heads,
                              seq=s, head_dim=d)
                sink.row(**common, variant="fwd", time_s=t_f, flop=flop_fwd)
                sink.row(**common, variant="fwd+bwd", time_s=t_fb, flop=3.5 * flop_fwd)


def run_memory(sink: Sink) -> None:
    n_tok, d = 16384, 4096
    x = torch.randn(n_tok, d, device=DEV, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    big = torch.empty(2 ** 30, device=DEV, dtype=torch.uint8)
    big2 = torch.empty_like(big)
    sink.row(section="memory", name="copy_1GiB", dtype="u8", time_s=timed(lambda: big2.copy_(big)), bytes=2 * 2 ** 30)
    w = torch.ones(d, device=DEV, dtype=torch.bfloat16)
    sink.row(section="memory", name="layer_norm_fwd", dtype="bf16", M=n_tok, N=d,
             time_s=timed(lambda: F.layer_norm(x, (d,), w)), bytes=2 * 2 * n_tok * d)
    sink.row(section="memory", name="gelu_fwd", dtype="bf16", M=n_tok, N=d,
             time_s=timed(lambda: F.gelu(x)), bytes=2 * 2 * n_tok * d)
    sink.row(section="memory", name="add", dtype="bf16", M=n_tok, N=d,
             time_s=timed(lambda: torch.add(x, x, out=y)), bytes=3 * 2 * n_tok * d)


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d, bias=False)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.ln2 = torch.nn.LayerNorm(d, bias=False)
        self.up = torch.nn.Linear(d, 4 * d, bias=False)
        self.down = torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(a)
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, d: int, heads: int, layers: int, vocab: int):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.ln(x), self.emb.weight)  # tied head, as MPT


VOCAB = 50432


def training_step(d: int, heads: int, layers: int, mbs: int, seq: int, compiled: bool = False, transform=None):
    """(step function, parameters, FLOPs per step) of the GPT above: forward, backward, fused AdamW, BF16
    autocast over FP32 weights. FLOPs in MosaicML's convention: 6 N per token for the weights plus 6 L d S per
    token for causal attention (12 L d S for the full score matrix, halved), counted once (no recomputation).
    `transform(model)`, when given, changes the model before the optimizer sees it (h100_fp8_steps.py's FP8)."""
    torch.manual_seed(0)
    model = GPT(d, heads, layers, VOCAB).to(DEV)
    if transform is not None:
        model = transform(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, VOCAB, (mbs, seq), device=DEV)
    fwd = torch.compile(model) if compiled else model

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(fwd(idx).float().view(-1, VOCAB), idx.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    n_params = sum(p.numel() for p in model.parameters())
    tokens = mbs * seq
    return step, n_params, 6 * n_params * tokens + 6 * layers * d * seq * tokens


def run_steps(sink: Sink) -> None:
    for d, heads, layers, mbs, seq in ((2048, 16, 8, 8, 2048), (4096, 32, 4, 6, 2048), (4096, 32, 4, 2, 8192),
                                       (5120, 40, 3, 4, 2048)):
        step, n_params, flop = training_step(d, heads, layers, mbs, seq)
        t = timed(step, min_s=0.2, batches=5)
        sink.row(section="step", name=f"gpt_d{d}_L{layers}", dtype="bf16_autocast", M=mbs * seq, N=d, K=n_params,
                 batch=mbs, heads=heads, seq=seq, head_dim=d // heads, variant="eager_adamw_fused",
                 time_s=t, flop=flop)
        torch.cuda.empty_cache()


def describe(path: str) -> None:
    with open(path, "w") as f:
        f.write(f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}\n")
        props = torch.cuda.get_device_properties(0)
        f.write(f"device {torch.cuda.get_device_name()} sms {props.multi_processor_count}\n")
        for q in ("name,power.limit,clocks.max.sm,clocks.sm,memory.total,driver_version",):
            r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True, text=True)
            f.write(r.stdout)


if __name__ == "__main__":
    sink = Sink(OUT)
    describe(os.path.join(os.path.dirname(OUT) or ".", "machine.txt"))
    for section, fn in (("gemm", lambda: run_gemm(sink, False)), ("memory", lambda: run_memory(sink)),
                        ("attention", lambda: run_attention(sink)), ("fp8", lambda: run_gemm(sink, True)),
                        ("step", lambda: run_steps(sink))):
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:  # keep the other sections' rows
            print(f"{section} failed: {type(e).__name__}: {e}", flush=True)
        print(f"{section}: {time.perf_counter() - t0:.1f} s", flush=True)
        torch.cuda.empty_cache()
    describe(os.path.join(os.path.dirname(OUT) or ".", "machine_after.txt"))
