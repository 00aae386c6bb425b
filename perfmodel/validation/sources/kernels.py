"""Validation families for single kernels: GEMM and attention throughput, achieved HBM bandwidth.

Every row is one kernel on one GPU, priced with perfmodel.kernels (the same formulas and
roofline as the operator graphs, per-operator overhead included) on the system its hardware text
names. Families (each states its mapping once; nothing is fitted to these rows):

    gemm       phase 'gemm':
               GEMM-*  'dense matmul MxNxK=...': one C[M,N] = A[M,K] B[K,N] (formulas.matmul) at the
                       row's type (BF16, 'FP8 e4m3' = FP8 with both operands already FP8: the benchmark
                       casts before timing, so no quantize pass); predicted = 2 M N K / modelled time.
               FA-001..003  FlashAttention-3 forward (formulas.attention at attention_tensor_efficiency):
                       sequence length from input_len ('16K' = 16384), head dimension from the row's
                       text, the FA papers' benchmark layout (batch x seqlen = 16k tokens, hidden 2048:
                       heads = 2048 / d_head), causal only when the row says causal, type from dtype;
                       predicted = 4 B s^2 h d (halved when causal) / time, the papers' FLOP count.
               FA-004  FlashAttention-2 forward 'utilization' on H100: the same layout at d_head 128,
                       16k tokens, non-causal, attention at flash_attention_2_tensor_efficiency
                       (the row gives no shape); predicted = achieved / peak in %.
               BW-002  FlashMLA dense MLA decode, compute-bound: DeepSeek-V3's absorbed MLA shape
                       (128 query heads over one latent KV head, d_qk 576 = 512 + 64, d_v 512; the
                       graph's decode core), 2 query tokens per sequence (multi-token prediction),
                       batch 128, 4096 keys (the row gives no shape; any compute-bound configuration
                       gives the same rate), attention_tensor_efficiency (a Hopper-native kernel);
                       predicted = 2 s_q s_k h_q (d_qk + d_v) B / time, FlashMLA's count.
    bandwidth  phase 'bandwidth': BW-001 FlashMLA memory-bound configuration: the same MLA shape with
               16 query heads, one query token, batch 128, 4096 keys; predicted = HBM bytes (latent
               KV cache + q + o) / time.
    attention  phase 'attention': ATT-*  standard (materialised) attention's forward or backward time in ms
               (FlashAttention's Appendix E.6 baselines): batch, sequence length and 'N heads of dimension D'
               from the row, non-causal, dropout when the model text names it without 'no'
               (formulas.attention / attention_backward at i_mat = 1); predicted = modelled time.

Hardware text -> catalogue system: 'A100' -> dgx-a100-80gb (-40gb when the text says 40GB), 'H100'
-> dgx-h100, 'H200' -> p5e.48xlarge, 'B200' -> p6-b200.48xlarge, 'GB200' -> gb200-nvl72, 'H800'
-> hgx-h800 (H800 SXM5: H100 SXM5 compute and 3.35 TB/s HBM3, NVLink cut to 400 GB/s). A chip
not in the catalogue is listed with the reason unless the row says it is the same as one that is
(GH200 is not: its 900 W module clocks differently).

Every row is a micro-benchmark that times a kernel for milliseconds (mamf-finder, the FlashAttention and
FlashMLA benchmarks), shorter than a GPU takes to reach its power limit: rows are priced at burst clocks
(`burst`: sustained_tensor_ratio = 1), the condition their efficiencies were read at. Sustained work (training
steps, serving) runs at the ratio (nvidia.toml: an H100 at its 700 W limit holds 0.88 of its burst rate).

Consistency checks, not independent validations (the parameter was read from the row): GEMM-*
for tensor_efficiency (the mean of the table), FA-001 for attention_tensor_efficiency, FA-004 for
flash_attention_2_tensor_efficiency on Hopper, BW-001 for hbm_efficiency, ATT-* for
materialised_attention_bandwidth_ratio (the median of the twelve).

Does not: model communication, or kernels on Trainium (no such rows).
"""

from __future__ import annotations

import re

import pandas as pd
import sympy as sp

from perfmodel import catalog
from perfmodel.catalog.replacements import Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import symbols as S
from perfmodel.core import units
from perfmodel.core.dtypes import DType
from perfmodel.model import formulas as fm
from perfmodel.model import kernels
from perfmodel.validation.harness import frame, register_validation, row, unexpressed
from perfmodel.validation.sources.training import attention_kernel

FA_TOKENS = 16384  # FlashAttention papers' benchmarks: batch x seqlen = 16k tokens
FA_HIDDEN = 2048  # ... and hidden dimension 2048 (heads = 2048 / d_head)
MLA = {"heads": 128, "d_qk": 576, "d_v": 512}  # DeepSeek-V3 absorbed MLA: kv_lora_rank 512 + rope 64
# the rows give no shape: configurations stated in the module doc (BW-002, BW-001)
MLA_COMPUTE = {"batch": 128, "s_q": 2, "s_k": 4096, "heads": 128}
MLA_MEMORY = {"batch": 128, "s_q": 1, "s_k": 4096, "heads": 16}


_CHIPS = {"GB200": "gb200-nvl72", "B200": "p6-b200.48xlarge", "H800": "hgx-h800", "H200": "p5e.48xlarge",
          "H100": "dgx-h100", "A100": "dgx-a100-80gb"}


def system_for(hardware: str) -> tuple[str, str]:
    """(catalogue system, '') for a row's hardware text, or ('', reason) when it has none. The
    first chip the text names counts ('H100 SXM (H200 same)' is an H100)."""
    m = re.search(r"\b(GH200|GB200|B200|H800|H200|H100|A100)\b", hardware.upper())
    if not m:
        return "", f"no catalogue chip matches {hardware!r}"
    chip = m.group(1)
    if chip == "GH200":
        return "", ("GH200 is not in the catalogue, and the row does not say it equals a chip that is "
                    "(its 900 W module sustains other clocks than H100/H200 SXM at 700 W)")
    if chip == "A100" and "40GB" in hardware.upper():
        return "dgx-a100-40gb", ""
    return _CHIPS[chip], ""


def _dtype(text: str) -> DType:
    t = text.upper()
    if "FP8" in t:
        return DType.FP8
    if "BF16" in t:
        return DType.BF16
    return DType.FP16 if "FP16" in t else DType.BF16


def _seqlen(text: str) -> int | None:
    m = re.search(r"(\d+(?:\.\d+)?)\s*([kK])?", text or "")
    if not m:
        return None
    return int(float(m.group(1)) * (1024 if m.group(2) else 1))


def burst(cal):
    """`cal` for a kernel timed for milliseconds: no power-limited clock (sustained_tensor_ratio = 1)."""
    return cal.with_overrides({"sustained_tensor_ratio": 1.0})


def _cost(system, work: fm.Work, dtype: DType, cal, materialised: bool = False) -> pd.Series:
    return kernels.kernel_costs(system, {"kernel": work}, compute=dtype, activations=dtype, cal=cal,
                                include_overhead=True, materialised=materialised).iloc[0]


def gemm_cost(system, m: int, n: int, k: int, dtype: DType) -> pd.Series:
    """One M x N x K matmul at `dtype`, operands already in that type (no quantize pass)."""
    cal = burst(calibration_of(system)).with_overrides({"fp8_activation_quantize_passes": 0})
    return _cost(system, fm.matmul(m, k, n), dtype, cal)


def flash_attention_cost(system, seqlen: int, head_dim: int, dtype: DType, causal: bool,
                         generation: str = "attention") -> pd.Series:
    """FlashAttention forward in the papers' benchmark layout; `generation` names the calibration
    parameter '<generation>_tensor_efficiency' the attention core runs at."""
    cal = burst(calibration_of(system) if generation == "attention" else attention_kernel(system, generation))
    batch = max(1, FA_TOKENS // seqlen)
    heads = FA_HIDDEN // head_dim
    tokens = batch * seqlen
    s_avg = fm.causal_mean_keys(sp.Integer(seqlen), sp.Integer(0)) if causal else seqlen
    hp, sp_ = fm.kv_passes(seqlen, 1, head_dim, head_dim, S.ba)
    work = fm.attention(tokens, heads, heads, s_avg, tokens, head_dim, head_dim, hbm_passes=hp, sram_passes=sp_)
    return _cost(system, work, dtype, cal)


def materialised_attention_cost(system, batch: int, seqlen: int, heads: int, head_dim: int, dtype: DType,
                                backward: bool, dropout: bool) -> pd.Series:
    """Standard (materialised, non-causal) attention's forward or backward over `batch` sequences: the score matrix
    written to HBM between its kernels (formulas.attention / attention_backward at i_mat = 1)."""
    tokens = batch * seqlen
    kernel = fm.attention_backward if backward else fm.attention
    work = kernel(tokens, heads, heads, seqlen, tokens, head_dim, head_dim, s_full=seqlen, dropout=int(dropout))
    return _cost(system, work, dtype, burst(calibration_of(system)), materialised=True)


def mla_decode_cost(system, batch: int, s_q: int, s_k: int, heads: int) -> pd.Series:
    """Absorbed MLA decode (the graph's decode core): `heads` query heads over one latent KV head."""
    d_qk, d_v = MLA["d_qk"], MLA["d_v"]
    hp, sp_ = fm.kv_passes(s_q, heads, d_qk, d_v, S.ba)
    work = fm.attention(batch * s_q, heads, 1, s_k, batch * s_k, d_qk, d_v, kv_width=d_qk, hbm_passes=hp,
                        sram_passes=sp_)
    return _cost(system, work, DType.BF16, burst(calibration_of(system)))


def _peak(system, dtype: DType) -> float:
    chip = system.chip
    return chip.peak_flop_per_s.get(dtype) or chip.tensor.rate(dtype)


def _gemm_row(m, system) -> dict:
    dims = re.search(r"MxNxK\s*=\s*(\d+)x(\d+)x(\d+)", m["model"])
    if not dims:
        return unexpressed(m, f"no 'MxNxK=' shape in {m['model']!r}")
    mm, nn, kk = (int(x) for x in dims.groups())
    dtype = _dtype(m["dtype"])
    c = gemm_cost(system, mm, nn, kk, dtype)
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), c["achieved_flop_per_s"] / units.TFLOPS,
               "TFLOP/s", f"{mm}x{nn}x{kk} {dtype.value}: {c['time_s'] * 1e6:.0f} us, bound {c['bound']}, "
               f"{100 * c['achieved_flop_per_s'] / _peak(system, dtype):.1f}% of peak", system=system.name)


def _flash_row(m, system) -> dict:
    text = f"{m['model']} {m['notes']}"
    dtype = _dtype(m["dtype"])
    if "FlashAttention-2" in m["model"]:  # FA-004: utilisation, no shape given
        seqlen, head_dim, causal, generation = FA_TOKENS, 128, False, "flash_attention_2"
    else:
        seqlen = _seqlen(m["input_len"])
        hd = re.search(r"head dim(?:ension)?\s*(\d+)", text)
        if seqlen is None or not hd:
            return unexpressed(m, "FlashAttention row without a sequence length and head dimension")
        head_dim, generation = int(hd.group(1)), "attention"
        causal = bool(re.search(r"(?<!non-)causal", text))
    c = flash_attention_cost(system, seqlen, head_dim, dtype, causal, generation)
    rate = c["achieved_flop_per_s"]
    note = (f"seqlen {seqlen}, d_head {head_dim}, {FA_HIDDEN // head_dim} heads, {'causal' if causal else 'non-causal'}, "
            f"{dtype.value}, {generation.replace('_', ' ')} efficiency: bound {c['bound']}")
    if m["unit"].strip() == "%":
        return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), 100 * rate / _peak(system, dtype),
                   "%", note, system=system.name)
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), rate / units.TFLOPS, "TFLOP/s", note,
               system=system.name)


def _mla_row(m, system) -> dict:
    cfg = MLA_COMPUTE
    c = mla_decode_cost(system, **cfg)
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), c["achieved_flop_per_s"] / units.TFLOPS,
               "TFLOP/s", f"MLA decode, {cfg['heads']} heads, s_q {cfg['s_q']}, batch {cfg['batch']}, {cfg['s_k']} keys: "
               f"bound {c['bound']}", system=system.name)


def _materialised_row(m, system) -> dict:
    shape = re.search(r"(\d+) heads of dimension (\d+)", m["notes"])
    seqlen, batch = _seqlen(m["input_len"]), pd.to_numeric(m["batch"], errors="coerce")
    passes = re.findall(r"\b(forward|backward)\b", m["model"])
    if not shape or seqlen is None or not batch > 0 or len(passes) != 1 or m["unit"].strip() != "ms":
        return unexpressed(m, "standard attention row without 'N heads of dimension D', a sequence length, a batch, "
                              "one pass (forward or backward) and a time in ms")
    heads, head_dim = int(shape.group(1)), int(shape.group(2))
    dropout = bool(re.search(r"(?<!no )dropout", m["model"]))
    c = materialised_attention_cost(system, int(batch), seqlen, heads, head_dim, _dtype(m["dtype"]),
                                    passes[0] == "backward", dropout)
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), c["time_s"] / units.MS, "ms",
               f"batch {int(batch)}, seqlen {seqlen}, {heads} x d {head_dim}, "
               f"{'dropout' if dropout else 'no dropout'}: {c['hbm_bytes'] / units.GB:.2f} GB, "
               f"{c['achieved_bytes_per_s'] / units.GB:.0f} GB/s, bound {c['bound']}",
               system=system.name)


def _each(rows: pd.DataFrame, predict_one, replaced: Replacements) -> pd.DataFrame:
    """predict_one(m, system) per case whose hardware maps to a catalogue system; the others listed."""
    out = []
    for _, m in rows.iterrows():
        name, reason = system_for(m["hardware"])
        out.append(predict_one(m, catalog.load_system(name, replaced=replaced)) if name else unexpressed(m, reason))
    return frame(out)


def _kernel_row(m, system) -> dict:
    if "MxNxK" in m["model"]:
        return _gemm_row(m, system)
    if "FlashAttention" in m["model"]:
        return _flash_row(m, system)
    if "MLA" in m["model"]:
        return _mla_row(m, system)
    return unexpressed(m, f"no kernel model for {m['model']!r}")


def _bandwidth_row(m, system) -> dict:
    if "MLA" not in m["model"]:
        return unexpressed(m, f"no memory-bound kernel model for {m['model']!r}")
    cfg = MLA_MEMORY
    c = mla_decode_cost(system, **cfg)
    return row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), c["achieved_bytes_per_s"] / units.GB,
               "GB/s", f"MLA decode, {cfg['heads']} heads, s_q {cfg['s_q']}, batch {cfg['batch']}, {cfg['s_k']} keys: "
               f"{c['hbm_bytes'] / units.MB:.0f} MB in {c['time_s'] * 1e6:.0f} us, bound {c['bound']}",
               system=system.name)


@register_validation("gemm", selects=lambda r: r["phase"].eq("gemm"))
def gemm(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """GEMM-*, FA-001..004, BW-002: single-kernel TFLOPS (or utilisation) on one GPU."""
    return _each(rows, _kernel_row, replaced)


@register_validation("bandwidth", selects=lambda r: r["phase"].eq("bandwidth"))
def bandwidth(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """BW-001: achieved HBM bandwidth of a memory-bound kernel (FlashMLA decode) on one GPU."""
    return _each(rows, _bandwidth_row, replaced)


@register_validation("attention", selects=lambda r: r["phase"].eq("attention"))
def attention(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """ATT-*: forward or backward time of standard (materialised) attention on one GPU."""
    return _each(rows, _materialised_row, replaced)
