"""Third device run: compiled training steps in BF16 and in FP8 (per-tensor current scaling), by model width.

The model's training pricing is checked against eager and one compiled step (h100_sustained.py); this run asks
two things of a fused stack, the condition the graph prices (one kernel per fused operator):
  width  the GPT steps of h100_kernels.py compiled with torch.compile at d = 2048 and 4096 (seq 2k and 8k),
         so a miss that grows as the model narrows shows up without eager PyTorch's unfused element-wise kernels;
  fp8    the same steps with every Linear of the blocks in FP8 the way Transformer Engine's and torchao's
         per-tensor current scaling run them: each step's amax of the activation, weight and output gradient,
         E4M3 forward operands and E5M2 gradients cast with that scale, the forward GEMM x W^T, the data-gradient
         GEMM dY W and the weight-gradient GEMM dY^T x all through torch._scaled_mm (cuBLASLt FP8, both operands
         K-major: the transposed FP8 copies the backward needs are made by copy kernels), the tied LM head in
         BF16 (as NeMo and torchtitan keep it). Compiled, so the amax, scaling, cast and transposed copy fuse as
         those stacks' cast-transpose kernels do.

    python3 bench/device/h100_fp8_steps.py            # writes $OUT/fp8_steps.csv and $OUT/smi_fp8.csv (~3 min)
    python3 bench/device/h100_fp8_steps.py 5120,40,3,4,2048 8192,64,2,2,2048     # other shapes: d,heads,L,mbs,seq

PyTorch only (no perfmodel import); rows as h100_kernels.py's (section 'step', variant 'compiled' or
'compiled_fp8'), FLOPs in its MosaicML convention.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from h100_kernels import FIELDS, timed, training_step  # noqa: E402

OUT = os.environ.get("OUT", ".")
DEV = torch.device("cuda")
E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


def to_fp8(t: torch.Tensor, dtype: torch.dtype):
    """(t in `dtype` scaled so its largest magnitude is the type's largest, the inverse scale): current scaling."""
    fmax = torch.finfo(dtype).max
    amax = t.detach().abs().amax().float().clamp(min=1e-12)
    scale = fmax / amax
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal()


class FP8Matmul(torch.autograd.Function):
    """y = x W^T with E4M3 operands; backward dX = dY W and dW = dY^T x with an E5M2 dY (module doc)."""

    @staticmethod
    def forward(ctx, x, w):
        xf, sx = to_fp8(x, E4)
        wf, sw = to_fp8(w, E4)
        ctx.save_for_backward(xf, sx, wf, sw)
        return torch._scaled_mm(xf, wf.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)

    @staticmethod
    def backward(ctx, g):
        xf, sx, wf, sw = ctx.saved_tensors
        gf, sg = to_fp8(g, E5)
        dx = torch._scaled_mm(gf, wf.t().contiguous().t(), scale_a=sg, scale_b=sw, out_dtype=torch.bfloat16)
        dw = torch._scaled_mm(gf.t().contiguous(), xf.t().contiguous().t(), scale_a=sg, scale_b=sx,
                              out_dtype=torch.float32)
        return dx, dw


class FP8Linear(torch.nn.Linear):
    def forward(self, x):
        shape = x.shape
        y = FP8Matmul.apply(x.reshape(-1, shape[-1]), self.weight)
        return y.reshape(*shape[:-1], self.out_features)


def fp8_blocks(model: torch.nn.Module) -> torch.nn.Module:
    """Every Linear of the blocks as an FP8Linear (same weights); the tied head stays BF16."""
    for blk in model.blocks:
        for name in ("qkv", "o", "up", "down"):
            old = getattr(blk, name)
            new = FP8Linear(old.in_features, old.out_features, bias=False, device=DEV)
            new.weight = old.weight
            setattr(blk, name, new)
    return model


def compiled_step(d: int, heads: int, layers: int, mbs: int, seq: int, fp8: bool):
    """h100_kernels.training_step compiled, its blocks' linear layers in FP8 when `fp8`."""
    return training_step(d, heads, layers, mbs, seq, compiled=True, transform=fp8_blocks if fp8 else None)


CONFIGS = [(2048, 16, 8, 8, 2048), (4096, 32, 4, 6, 2048), (4096, 32, 4, 2, 8192)]


def main() -> None:
    configs = [tuple(int(v) for v in a.split(",")) for a in sys.argv[1:]] or CONFIGS  # d,heads,layers,mbs,seq
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                            "--format=csv,noheader", "-lms", "100"], stdout=open(os.path.join(OUT, "smi_fp8.csv"), "w"))
    with open(os.path.join(OUT, "fp8_steps.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS + ["run"])
        w.writeheader()
        for fp8 in (False, True):
            for d, heads, layers, mbs, seq in configs:
                t0 = time.perf_counter()
                try:
                    step, n_params, flop = compiled_step(d, heads, layers, mbs, seq, fp8)
                    t = timed(step, min_s=0.3)
                except Exception as e:  # a compile or a kernel failing: keep the other rows
                    print(f"d={d} s={seq} fp8={fp8}: {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
                    torch.cuda.empty_cache()
                    continue
                w.writerow(dict(section="step", name=f"gpt_d{d}_L{layers}_mbs{mbs}_s{seq}",
                                dtype="fp8_current_scaling" if fp8 else "bf16_autocast", M=mbs * seq, N=d,
                                K=n_params, batch=mbs, heads=heads, seq=seq, head_dim=d // heads,
                                variant="compiled_fp8" if fp8 else "compiled", time_s=f"{t:.6e}", flop=flop,
                                tflops=round(flop / t / 1e12, 1)))
                f.flush()
                print(f"d={d} s={seq} fp8={fp8}: {t * 1e3:.1f} ms ({time.perf_counter() - t0:.0f} s with compile)",
                      flush=True)
                del step
                torch._dynamo.reset()
                torch.cuda.empty_cache()
    smi.terminate()


if __name__ == "__main__":
    main()
