"""Reading a published training result as the model's inputs: hardware, model, plan, batch, data type, metric.

Every training row, however its source wrote it, is read by the same rules (stated once, never per row):

    hardware   a catalogue system named in the text ('trn1.32xlarge', 'p5.48xlarge'), else the accelerator:
               A100 80GB / 40GB -> dgx-a100-80gb / -40gb, H100 -> dgx-h100 (not the 96 GB HBM2e part capped
               at 500 W: a different chip, listed), H200 -> p5e.48xlarge (8 H200,
               3.2 Tb/s EFA), H800 -> hgx-h800, B200 -> p6-b200.48xlarge (8 B200, 8 x 400 Gb/s as a DGX B200),
               B300 -> p6-b300.48xlarge, GB200 / GB300 -> the NVL72 rack; GPUs: the row's num_chips, else
               'N x ...' in the text
    model      a workload file by name after normalising case, spaces and separators ('Llama 3.1 405B',
               'llama3_1_405b', 'Meta-Llama-3.1-405B' -> llama-3.1-405b), aliases for identical
               architectures (the workload files' aliases, catalog/model_names.py; GPT-3 sizes as NeMo and
               Megatron define them), or a GPT from the row's own dimensions ('h=, L=, heads=, V=')
    plan       TP / PP / DP / CP / EP / VP (interleaved stages per rank) / ZeRO or FSDP stage, as 'TP8',
               'TP=8', 'tp 8', 'tensor parallel 8', 'FSDP 64' (ZeRO-3 over 64), 'HSDP' (ZeRO-3 inside a node);
               DP = GPUs / (TP PP CP) when unstated; 'CPU offload 40 layers' (Megatron-Core's
               cpu_offloading_num_layers: activations of that many layers per stage in host memory); 'LoRA
               rank 16' / 'LoRA r=16' / 'lora_dim 16' (fine-tuning: adapters trained, the base weights frozen; a
               LoRA run without its rank is listed); 'recompute 5 layers' / 'recompute_num_layers=5' (full
               recompute of that many layers per stage)
    batch      'GBS 2048', 'global batch 2048', 'mbs 1' / 'micro batch 1' (sequences)
    dtype      FP8 (and its recipe: per-tensor delayed or current scaling, block / MX scaling) or BF16 / FP16
    metric     reference/measured_quantities.toml [training.kinds]: TFLOP/s per GPU (model or hardware FLOPs), tokens/s per GPU or in total, sequences/s,
               MFU (its stated peak), step time, time to train, GPU-hours per trillion tokens

A row a rule cannot read is listed with what is missing (never guessed).
Does not: predict (validation/sources/training.py) or read files (validation/harness.py).
"""

from __future__ import annotations

import re

from perfmodel import catalog
from perfmodel.catalog import model_names, system_names
from perfmodel.core.scenario import Parallelism
from perfmodel.validation.sources import plan_words, quantities

# accelerator words -> catalogue system, most specific first
ACCELERATORS = (
    (r"GB300", "gb300-nvl72"), (r"GB200", "gb200-nvl72"), (r"B300", "p6-b300.48xlarge"), (r"B200", "p6-b200.48xlarge"),
    (r"H200", "p5e.48xlarge"), (r"H800", "hgx-h800"),
    (r"H100[^,;()]*96\s*GB|H100[^;]*500\s*W", ""),  # the 96 GB HBM2e, 500 W H100: not the catalogue's H100 SXM
    (r"H100", "dgx-h100"),
    (r"Jean Zay", "jean-zay-a100"), (r"A100[^,;]*40\s*GB", "dgx-a100-40gb"), (r"A100", "dgx-a100-80gb"),
    (r"Trainium2|Trn2", "trn2.48xlarge"), (r"Trainium|Trn1", "trn1.32xlarge"),
)
# GPT-3 sizes without a workload file, as NeMo defines them (NVIDIA/NeMo-Framework-Launcher@f4761e6,
# launcher_scripts/conf/training/gpt3/<size>.yaml: num_layers, hidden_size, num_attention_heads; FFN 4 h,
# learned positions, GPT-2 BPE vocabulary): the GPT-3 template at these dimensions
GPT3_SIZES = {"5b": "h=4096, L=24, heads=32", "20b": "h=6144, L=44, heads=48"}


def system_of(hardware: str) -> str:
    """The catalogue system a row's hardware text names (module doc), or '': a system key, a name a system file
    lists among its aliases (catalog/system_names.py), else the accelerator words above."""
    text = str(hardware)
    first = text.split()[0] if text.strip() else ""
    if first in catalog.list_systems():
        return first
    named = system_names.lookup(text) if text.strip() else ""
    if named:
        return named
    return next((name for pattern, name in ACCELERATORS if re.search(pattern, text, re.I)), "")


def gpus_of(row) -> int:
    """The run's accelerator count: num_chips, else 'N x' / 'N GPUs' in the hardware text; 0 when unstated."""
    v = str(row.get("num_chips", "")).strip()
    if re.fullmatch(r"\d+(\.0+)?", v):
        return int(float(v))
    hit = re.search(r"(\d+)\s*(?:x\b|GPUs?\b|chips?\b)", str(row.get("hardware", "")), re.I)
    return int(hit.group(1)) if hit else 0


def _key(text: str) -> str:
    """A model name as a workload key: lower case, separators as '-', publisher prefixes and tuning / MoE
    suffixes dropped, version digits joined as the files name them ('llama3_1' -> 'llama-3.1', 'GPT-3' ->
    'gpt3')."""
    t = re.sub(r"[\s_/]+", "-", text.lower().strip())
    t = re.sub(r"^(meta-|nvidia-|mistralai-)", "", t)
    t = re.sub(r"-(instruct|chat|base|hf|moe|dense)\b", "", t)
    t = re.sub(r"^llama-?(\d)(?:-|\.)?(\d)?-", lambda m: f"llama-{m[1]}{'.' + m[2] if m[2] else ''}-", t)
    t = re.sub(r"^gpt-3-", "gpt3-", t)
    return re.sub(r"-+", "-", t).strip("-")


def gpt3_dimensions(model: str) -> str:
    """'h=, L=, heads=' of a GPT-3 size NeMo defines ('GPT-3 5B', 'GPT3-20B'; GPT3_SIZES), or ''."""
    hit = re.search(r"GPT-?3[ -](\d+(?:\.\d+)?[BM])\b", str(model), re.I)
    return GPT3_SIZES.get(hit.group(1).lower(), "") if hit else ""


def workload_of(model: str) -> str:
    """Workload file of a row's model text (module doc), or '' (a GPT with stated dimensions is built by the
    caller from them). A trailing size after a versioned name is dropped when the rest names a file
    ('DeepSeek-V3 671B' -> deepseek-v3)."""
    key = _key(re.split(r"\s*\(", str(model))[0])
    names = model_names.index()  # workload keys, display names and aliases (CodeLlama-13B is Llama-2-13B)
    for cand in (key, re.sub(r"-\d+(\.\d+)?b$", "", key)):
        if cand in names:
            return names[cand]
    return model_names.resolve(model)[0]


def offload_layers_of(text: str) -> int:
    """Layers whose activations the run offloads to host memory ('CPU offload 40 layers', 'offloaded layers: 40',
    'cpu_offloading_num_layers=40', '--cpu-offloading-num-layers 40'); 0 when the text states none (ZeRO-Offload,
    an optimizer or parameter offload, is not activation offloading)."""
    hit = re.search(r"offload(?:ing)?[-_ ]num[-_ ]layers\s*[=:]?\s*(\d+)|offload(?:ing)?\s+(\d+)\s+layers"
                    r"|offloaded\s+layers\s*[=:]?\s*(\d+)", str(text), re.I)
    return int(next(g for g in hit.groups() if g)) if hit else 0


def recompute_layers_of(text: str) -> int:
    """Layers per stage a row's full recompute re-runs ('recompute 5 layers', 'recompute_num_layers=5'); 0 when
    the text states no count."""
    if re.search(r"recompute[-_ ]method\s*[=:]?\s*uniform", str(text), re.I):
        return 0  # the uniform method checkpoints every layer, in groups of recompute_num_layers
    hit = re.search(r"recompute(?:[-_ ]num)?[-_ ]layers\s*[=:]?\s*(\d+)|recompute\s+(\d+)\s+layers", str(text),
                    re.I)
    return int(hit.group(1) or hit.group(2)) if hit else 0


def lora_rank_of(text: str) -> int | None:
    """The LoRA rank a row states ('LoRA rank 16', 'LoRA r=16', 'LoRA rank-16', 'lora_dim=16', 'LoRA (r 8)'); 0
    without LoRA ('no LoRA' included), None for LoRA whose rank is not stated. 'q_lora_rank' / 'kv_lora_rank' (MLA
    dimensions) are not LoRA; QLoRA is LoRA (its 4-bit base weights: training_public lists it)."""
    t = re.sub(r"\b(?:no|without)\s+lora\b", "", str(text), flags=re.I)
    if not re.search(r"(?<![_a-z])q?lora(?![a-z])", t, re.I):
        return 0
    hit = re.search(r"(?<![_a-z])lora[\s_,:(-]*(?:rank|dim|r)(?![a-z])[\s=:(-]*(\d+)", t, re.I)
    return int(hit.group(1)) if hit else None


def plan_of(text: str, gpus: int = 0) -> Parallelism:
    """Parallel plan from the row's text (module doc) as a scenario Parallelism (VP = pp_virtual); DP fills
    the GPUs when unstated."""
    t = str(text)
    vals: dict[str, int] = {}
    for k in plan_words.DEGREES:  # the degrees as frameworks spell them (plan_words.py)
        if n := plan_words.degree(t, k):
            vals[k] = n
    zero = 0
    fsdp = re.search(r"FSDP\s*(?:=|:)?\s*(\d+)?", t, re.I)
    z = re.search(r"ZeRO[- ]?(?:stage\s*)?([0-3])", t, re.I)
    if z:
        zero = int(z.group(1))
    elif fsdp or re.search(r"HSDP|distributed optimi[sz]er", t, re.I):
        zero = 3 if (fsdp or re.search(r"HSDP", t, re.I)) else 1
        if fsdp and fsdp.group(1) and "dp" not in vals:
            vals["dp"] = int(fsdp.group(1))
    tp, pp, cp = vals.get("tp", 1), vals.get("pp", 1), vals.get("cp", 1)
    dp = vals.get("dp", 0) or (gpus // (tp * pp * cp) if gpus and gpus % (tp * pp * cp) == 0 else 1)
    return Parallelism(tp=tp, pp=pp, dp=dp, cp=cp, ep=vals.get("ep", 1), zero=zero, pp_virtual=vals.get("vp", 1))


def batch_of(text: str) -> tuple[int, int]:
    """(global batch, micro batch) in sequences; 0 where the text states none."""
    t = str(text)
    g = re.search(r"(?:GBS|global[ -]batch(?:[ -]size)?)\s*(?:=|:)?\s*(\d+)", t, re.I)
    m = re.search(r"(?:MBS|micro[ -]?batch(?:[ -]size)?)\s*(?:=|:)?\s*(\d+)", t, re.I)
    return (int(g.group(1)) if g else 0), (int(m.group(1)) if m else 0)


def fp8_of(text: str) -> str:
    """'' for 16-bit training, else the FP8 recipe named: 'delayed' (per-tensor delayed scaling, Transformer
    Engine's default), 'current' (per-tensor current scaling), 'block' (block / MX scaling)."""
    t = str(text)
    if not re.search(r"FP8|MXFP8", t, re.I):
        return ""
    if re.search(r"MXFP8|block|blockwise|MX\b|sub-?channel", t, re.I):
        return "block"
    return "current" if re.search(r"current", t, re.I) else "delayed"


def metrics() -> tuple[tuple[str, str], ...]:
    """(pattern, kind) in order: the training kinds of the one vocabulary (validation/sources/quantities.py)."""
    return tuple((pat, kind) for kind, e in quantities.vocabulary()["training"]["kinds"].items() for pat in e["patterns"])


def metric_of(metric: str, unit: str = "") -> str:
    """The metric's kind (metrics(): the first whose pattern matches 'metric unit'), or '' when none matches."""
    text = f"{metric} {unit}"
    return next((kind for pat, kind in metrics() if re.search(pat, text, re.I)), "")
