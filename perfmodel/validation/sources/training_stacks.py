"""What each training stack does and how each publisher counts: rules of the 'training' validation family.

A published training result is a model on hardware under a software stack, reported in its publisher's own
FLOP count. The family (training_public.py) reads the row's plan with training_rows.py's rules; this module
states, once per stack or publisher, what the row leaves unsaid:

    Source (static, matched on the row's source and notes; the first that matches):
        megatron-lm-2021   Narayanan et al. 2021 (MEG rows): FP16, full recompute (its Eq. 3 counts it),
                           attention scores through HBM (before FlashAttention), gradients all-reduced after
                           the whole backward (Megatron-LM's local DDP: comm_overlap_frac = 0; a row whose
                           notes say DDP=torch ran PyTorch's DDP, which overlaps it with the backward), pipeline
                           sends split over the TP ranks and all-gathered at the receiver (its sec. 4.1
                           scatter/gather: pp_scatter_gather = 1); TFLOP/s by Eq. 3
        megatron-deepspeed BLOOM's and MT-NLG's Megatron-DeepSpeed (2021-22): attention through HBM
        llm-foundry        MosaicML's MPT benchmarks: the Triton FlashAttention-1 kernel (attn_impl 'triton'),
                           the position table sized to the run's sequence, 'act ckpt' = full recompute; MFU
                           by llm-foundry's formula against the chip's peak of the compute type
        flash-attention-2  the FlashAttention-2 paper's Table 1 (FA-005): the setup it states in prose (GPT3-2.7B
                           at 8k on 8 A100), FlashAttention-2 kernels; TFLOP/s by the paper's 6 s N + 12 L h s^2
    stack_overrides (dynamic, from the plan): Megatron-Core's overlaps (NeMo, Megatron-Bridge), torchtitan's
    eager element-wise kernels, AsyncTP, current-scaling FP8 recipes, a router forced to balance the experts

Does not: read plans (training_rows.py) or price anything (training/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Recompute, Scenario
from perfmodel.validation.sources.training import fa2_flop_per_seq, fa2_paper_setup, llm_foundry_flop_per_seq, megatron_flop

MEGATRON_CORE = r"NeMo|Megatron-Bridge|Megatron-Core"  # NVIDIA's stacks on Megatron-Core (2023-)


@dataclass(frozen=True)
class Source:
    """One publisher's stack and FLOP count (module doc). flop(arch, global batch, seq) -> FLOPs per step in the
    publisher's count (None: 6 N_active + 6 L h s per token); peak 'chip': MFU against the chip's peak of the
    compute type (else the peak the row states)."""

    name: str
    pattern: str
    flash_attention: bool = True
    attention_kernel: str = ""  # an older flash-attention generation (calibration '<kernel>_tensor_efficiency')
    recompute: Recompute | None = None  # the stack's, when the row states none
    precision16: DType | None = None  # the 16-bit type (None: BF16, or what the row's dtype says)
    calibration: dict = field(default_factory=dict)
    flop: Callable | None = None
    peak: str = "stated"
    position_table_is_seq: bool = False
    setup: Callable | None = None  # () -> (arch, scenario, GPUs) for a run stated in prose only


SOURCES = (
    Source("megatron-lm-2021", r"Narayanan et al\. 2021", flash_attention=False, recompute=Recompute.FULL,
           precision16=DType.FP16, calibration={"comm_overlap_frac": 0.0, "pp_scatter_gather": 1},
           flop=megatron_flop),
    Source("megatron-deepspeed", r"Megatron-DeepSpeed|MT-NLG|DeepSpeed and Megatron", flash_attention=False),
    Source("llm-foundry", r"llm-foundry", attention_kernel="flash_attention_1",
           flop=lambda arch, gbs, seq: gbs * llm_foundry_flop_per_seq(arch, seq), peak="chip",
           position_table_is_seq=True),
    Source("flash-attention-2", r"FlashAttention-2", attention_kernel="flash_attention_2",
           flop=lambda arch, gbs, seq: gbs * fa2_flop_per_seq(arch, seq), setup=fa2_paper_setup),
)
DEFAULT = Source("stated", r"")


def is_megatron_core(m) -> bool:
    """A run on one of NVIDIA's Megatron-Core stacks (its source or notes name NeMo, Megatron-Bridge, Megatron-Core)."""
    return bool(re.search(MEGATRON_CORE, f"{m['source']} {m['notes']}"))


def source_of(m) -> Source:
    """The first Source whose pattern the row's source or notes match, else DEFAULT (the row's words only)."""
    text = f"{m['source']} {m['notes']}"
    return next((s for s in SOURCES if re.search(s.pattern, text)), DEFAULT)


# Bytes per element moved by a Llama layer's element-wise ops: eager PyTorch (one kernel per primitive, counted
# from torchtitan's model code) vs one fused kernel each (the graph's pricing), BF16 activations:
#   RMSNorm  x.float(), pow, mean, x * rsqrt, type_as, * weight: reads 20 + writes 16 = 36 B   fused 4 B
#   RoPE     x.float(), complex multiply, type_as: 10 + 10 = 20 B (per q and k element)         fused 4 B
#   SwiGLU   silu, multiply: 10 B per FFN element                                              fused 6 B
#   residual add: 6 B either way
EAGER_BYTES = {"norm": 36.0, "rope": 20.0, "act": 10.0, "residual": 6.0}
FUSED_BYTES = {"norm": 4.0, "rope": 4.0, "act": 6.0, "residual": 6.0}


def eager_traffic_factor(arch) -> float:
    """Eager over fused bytes of one layer's element-wise ops (EAGER_BYTES / FUSED_BYTES weighted by the
    layer's elements: 2 norms and 2 residuals of h, RoPE over the q and k heads, the FFN activation)."""
    heads = (arch.num_attention_heads + arch.num_key_value_heads) * arch.head_dim
    ffn = arch.intermediate_size if arch.gated_mlp else 0.0
    h = float(arch.hidden_size)
    elems = {"norm": 2.0 * h, "rope": float(heads), "act": float(ffn), "residual": 2.0 * h}
    return sum(elems[k] * EAGER_BYTES[k] for k in elems) / sum(elems[k] * FUSED_BYTES[k] for k in elems)


def stack_overrides(m, sc: Scenario, arch) -> dict:
    """Calibration overrides for what the run's stack does (module doc): its Source's (a run stating DDP=torch
    overlaps its gradient all-reduce with the backward), then Megatron-Core's
    distributed optimizer gathers weights under the next forward (f_ag = 1); tensor-parallel collectives
    pipelined with their GEMMs (Transformer Engine userbuffers in Megatron-Core recipes, torch's AsyncTP when
    the row states it) hide all but one of tp chunks (tp_comm_chunked_overlap); Megatron-Core's interleaved schedule
    overlaps pipeline send/recv with the next chunk (f_pp = 1); torchtitan without torch.compile runs each
    element-wise primitive as its own kernel (eager_traffic_factor); an FP8 recipe with current (dynamic)
    scaling reads each tensor once more for its amax; a benchmark that forces its router to balance the tokens
    over the experts (Megatron-Core's --moe-router-force-load-balancing, NeMo's performance tables) has no busiest
    expert (moe_load_imbalance = 1)."""
    p, text = sc.parallel, f"{m['source']} {m['notes']} {m['parallelism']}"
    core = is_megatron_core(m)
    out = dict(source_of(m).calibration)
    if re.search(r"\bDDP\s*=\s*torch\b", text):  # PyTorch DDP all-reduces gradient buckets during the backward
        out["comm_overlap_frac"] = 1.0
    if core or re.search(r"async ?tp", text, re.I):
        out["tp_comm_chunked_overlap"] = 1
    if core and p.pp > 1 and p.pp_virtual > 1:
        out["pp_comm_overlap_frac"] = 1.0
    if core and p.zero in (1, 2):
        out["param_gather_overlap_frac"] = 1.0
    titan = re.search(r"torchtitan", str(m["source"]), re.I)
    if titan and not re.search(r"(?<!no )(?<!no torch\.)\bcompile", text, re.I):  # eager: a kernel per primitive
        out["elementwise_traffic_factor"] = eager_traffic_factor(arch)
    if re.search(r"current scaling|tensorwise|dynamic scal", str(m["dtype"]), re.I):
        out["low_precision_training_amax_reads"] = 1  # the scale needs the tensor's amax before the cast
    if re.search(r"force[- _]?(balanc|load[- _]balanc)", text, re.I):  # the benchmark's router spreads tokens evenly
        out["moe_load_imbalance"] = 1.0
    return out
