"""A serving deployment's plan as frameworks and publishers spell it, to (t, d_a, e, p) per replica.

    spellings        'TP8', 'tp=8', 'TP 8', 'tensor parallel 8', vLLM '--tensor-parallel-size 8' / '-tp 8',
                     SGLang '--tp-size 8' / '--tp 8', TensorRT-LLM 'tp_size: 8'; the same for DP
                     (--data-parallel-size, --dp-size, dp_size), EP (--expert-parallel-size, --ep-size,
                     moe_expert_parallel_size) and PP (--pipeline-parallel-size, --pp-size, pp_size);
                     InferenceMAX-style 'DEP8' (attention data parallel and experts over 8 GPUs) and
                     'TEP8' (tensor parallel attention, experts over 8 GPUs)
    attention DP     'DP attention', 'attention DP', SGLang '--enable-dp-attention' (its dp_size defaults to
                     tp_size, and tp_size then counts every GPU: d_a = DP or TP, t = TP / d_a), TensorRT-LLM
                     'enable_attention_dp: true' (d_a = TP, t = 1), vLLM '--data-parallel-size N' with
                     '--enable-expert-parallel' (d_a = N, experts over TP x N)
    experts          vLLM '--enable-expert-parallel': e = t d_a; else the EP stated, else 1
    replica          t d_a p GPUs; a deployment of more GPUs is that many replicas (data parallel)

    plan_of(text)    Plan(tp, da, ep, pp) and the words it read, or a ValueError naming what it cannot read

Does not: check a plan against a model (model/feasibility.py) or a system.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# each degree as frameworks spell it, for serving and training rows alike (training_rows.plan_of reads its
# degrees here too): 'TP8', 'tp=8', 'tp: 8', 'tensor parallel 8'; vLLM '--tensor-parallel-size 8', SGLang
# '--tp-size 8', TensorRT-LLM 'tp_size: 8' / 'moe_expert_parallel_size'; Megatron / NeMo
# '--tensor-model-parallel-size 8'; torchtitan 'tensor_parallel_degree' / 'data_parallel_shard_degree'; DeepSpeed
# 'pipeline_parallel_size'; each followed by '=', ':' or a space and the number
_SEP = r"[ _-]"
_TAIL = rf"(?:ism|{_SEP}size|{_SEP}degree)?"
DEGREES = {
    "tp": rf"tp(?:{_SEP}size)?|tensor{_SEP}(?:model{_SEP})?parallel{_TAIL}",
    "pp": rf"pp(?:{_SEP}size)?|pipeline{_SEP}(?:model{_SEP})?parallel{_TAIL}",
    "dp": rf"dp(?:{_SEP}size)?|data{_SEP}parallel(?:ism|{_SEP}size|{_SEP}(?:shard{_SEP})?degree)?",
    "cp": rf"cp(?:{_SEP}size)?|context{_SEP}parallel{_TAIL}",
    "ep": rf"ep(?:{_SEP}size)?|(?:moe{_SEP})?expert{_SEP}(?:model{_SEP})?parallel{_TAIL}",
    "vp": rf"vpp|vp|virtual{_SEP}pipeline(?:{_SEP}model{_SEP}parallel{_SEP}size)?|interleav\w*",
}


def degree(text: str, key: str) -> int:
    """The `key` degree ('tp', 'pp', 'dp', 'cp', 'ep', 'vp') written in `text`, or 0."""
    hit = re.search(rf"(?<![a-z_])(?:{DEGREES[key]})\s*(?:=|:)?\s*(\d+)", str(text), re.I)
    return int(hit.group(1)) if hit else 0
ATTENTION_DP = r"dp[-_ ]attention|attention[-_ ]dp|enable[-_]dp[-_]attention|enable_attention_dp\s*[:=]\s*true"
EXPERT_FLAG = r"enable[-_]expert[-_]parallel"


@dataclass(frozen=True)
class Plan:
    tp: int
    da: int
    ep: int
    pp: int
    read: str  # the plan as read, for a note

    @property
    def gpus(self) -> int:
        return self.tp * self.da * self.pp


def plan_of(text) -> Plan:
    t = str(text)
    dep = re.search(r"(?<![a-z])(dep|tep)(\d+)", t, re.I)  # InferenceMAX's DEP8 / TEP8
    if dep:
        n = int(dep.group(2))
        tp, da = (1, n) if dep.group(1).lower() == "dep" else (n, 1)
        return Plan(tp, da, n, max(1, degree(t, "pp")), f"{dep.group(0).upper()}: t={tp} d_a={da} e={n}")
    tp, dp, ep, pp = (degree(t, k) for k in ("tp", "dp", "ep", "pp"))
    tp, pp = tp or 1, pp or 1
    da = 1
    if re.search(ATTENTION_DP, t, re.I):
        if re.search(r"enable_attention_dp", t, re.I):  # TensorRT-LLM: attention data parallel over the TP ranks
            tp, da = 1, tp
        else:  # SGLang: dp_size (default tp_size) attention ranks among tp_size GPUs
            da = dp or tp
            if tp % da:
                raise ValueError(f"attention-DP {da} does not divide TP {tp} (SGLang's tp_size counts every GPU)")
            tp //= da
    elif dp and re.search(EXPERT_FLAG, t, re.I):  # vLLM: DP engines sharing experts over TP x DP
        da = dp
    if re.search(EXPERT_FLAG, t, re.I) and not ep:
        ep = tp * da
    ep = ep or 1
    return Plan(tp, da, ep, pp, f"t={tp} d_a={da} e={ep} p={pp}")
