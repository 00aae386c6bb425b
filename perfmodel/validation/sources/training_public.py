"""Validation family 'training': every published training row, read by training_rows.py's rules under the
stack and publisher rules of training_stacks.py.

Any row with phase 'train': Megatron-LM's 2021 scaling table, MosaicML's MPT benchmarks and the
FlashAttention-2 paper (reference/published_measurements.csv), NeMo / Megatron-Bridge performance tables,
torchtitan benchmarks, the Megatron-LM README and its DeepSeek-V3 write-up, BigScience's BLOOM logs, MT-NLG
(reference/training_public_dev.csv). One run may be published as several rows (-a / -b: tokens/s and TFLOP/s
of the same run); each is one case.

Per run (stated once, nothing fitted):
    source       the publisher's stack and FLOP count (training_stacks.source_of; a run its source states in
                 prose only, FA-005, takes the source's setup)
    model        the workload file training_rows.workload_of names (its position table sized to the run's
                 sequence where the stack does so: llm-foundry), else a GPT from the row's dimensions (h=, L=,
                 heads=, V=; GPT-3 template; V = 51,200 when unstated: Megatron's padded GPT-2 vocabulary) or
                 from a GPT-3 size as NeMo defines it (training_rows.GPT3_SIZES); a run with none is listed
    plan         training_rows.plan_of; micro-batches per step = GBS / (DP x MBS); the interleaved schedule
                 when VP > 1; a 'local bs' (torchtitan: one data-parallel rank's batch) makes GBS = local x DP
                 and, with pipeline stages, micro-batches of 1 (torchtitan's default); Megatron-Core stacks
                 add sequence parallelism with TP and the distributed optimizer (ZeRO-1); experts over more
                 ranks than TP (EP carved out of DP) make those DP ranks the replica's da, each with its own
                 micro-batch; a row whose plan is not stated is listed with that reason
    precision    FP8 recipes run the matmuls in FP8 (weights and activations 16-bit); else the source's 16-bit
                 type (BF16 unless stated: Megatron-LM 2021 is FP16); current / dynamic (tensorwise) scaling
                 reads each quantized tensor once more (its amax)
    recompute    what the row states ('full recompute', 'activation checkpointing', 'act ckpt', a FLOP count
                 'with recompute': full; 'checkpointing: none', 'no act ckpt': none; torchtitan's 'selective
                 layer': every other layer, 'selective op' and a torchtitan row's bare 'selective': op-level;
                 'selective' elsewhere: Megatron's), else the source's (Megatron-LM 2021: full), else none
    attention    flash attention at the source's kernel generation (llm-foundry: FlashAttention-1's Triton
                 port; the FA2 paper: FA2); Megatron-LM 2021, Megatron-DeepSpeed and MT-NLG (2021-22, before
                 FlashAttention): scores through HBM
    overlap      what the stack hides (training_stacks.stack_overrides): Megatron-Core stacks (NeMo,
                 Megatron-Bridge) gather the distributed optimizer's weights under the next forward, pipeline
                 TP collectives with their GEMMs (userbuffers; torch's AsyncTP when stated) and overlap
                 send/recv in the interleaved schedule; Megatron-LM 2021 all-reduces gradients after the
                 whole backward; torchtitan without torch.compile runs element-wise ops unfused
    metric       tokens/s per GPU and time per iteration are the modelled ones; time to train = the stated
                 tokens / modelled tokens/s of the run; GPU-hours = stated tokens (else 10^12) / tokens/s per
                 GPU; TFLOP/s per GPU and MFU use the source's own FLOP count: when the run also states
                 tokens/s (or time per iteration), predicted = measured x modelled rate / measured rate (the
                 source's FLOPs per token cancel); else the source's count (Megatron's Eq. 3, llm-foundry's
                 MFU against the chip's peak, the FA2 paper's 6 s N + 12 L h s^2); else 'hardware FLOPs with
                 recompute' is Eq. 3 and 'model FLOPs' 6 N_active + 6 L h s per token (causal attention), an
                 MFU over the peak the row states

Does not: fit anything; every miss is reported with its error.
"""

from __future__ import annotations

import dataclasses
import re

import pandas as pd

from perfmodel import catalog, training
from perfmodel.catalog import workload_files
from perfmodel.catalog.replacements import Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import units
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Optimizer, Phase, Precision, Recompute, Scenario
from perfmodel.core.workload import parameter_count
from perfmodel.validation.sources import training_rows as tr
from perfmodel.validation.harness import frame, register_validation, row, unexpressed
from perfmodel.validation.sources.training import _gpt_arch, attention_kernel, megatron_flop
from perfmodel.validation.sources.training_stacks import Source, is_megatron_core, source_of, stack_overrides

RATE_KINDS = ("tokens_per_s_per_gpu", "step_time")


def _selects(r: pd.DataFrame) -> pd.Series:
    return r["phase"].eq("train")


def run_key(case_id: str) -> str:
    return re.sub(r"-[a-z]$", "", str(case_id))


def arch_of(model: str, seq: int = 0, src: Source | None = None):
    """The run's architecture (module doc), or None; a stack that sizes the position table to the run's sequence
    (llm-foundry's benchmark sets max_seq_len) gets a table of `seq` rows."""
    name = tr.workload_of(model)
    if name:
        arch = workload_files.load_workload(name)
        return dataclasses.replace(arch, max_position_embeddings=seq) if src and src.position_table_is_seq else arch
    if {"h", "L", "heads"} <= set(re.findall(r"\b(h|L|heads)=\d+", str(model))):
        return _gpt_arch(model)
    dims = tr.gpt3_dimensions(model)  # a GPT-3 size as NeMo defines it
    return _gpt_arch(f"{str(model).split('(')[0].strip()} ({dims})") if dims else None


# What a row says of recompute, first match wins (over its notes and its metrics' names); None: 'selective'
# alone, torchtitan's op-level policy in a torchtitan row, Megatron's (the attention core) elsewhere
RECOMPUTE_RULES = (
    (r"(?:checkpointing|recompute)\s*:\s*full\b", Recompute.FULL),
    (r"(?:checkpointing|recompute)\s*:\s*(?:none|no|off)\b|\bno (?:activation )?checkpointing"
     r"|\bno act(?:ivation)? ckpt", Recompute.NONE),
    (r"selective\s*(?:\(?\s*)layer", Recompute.ALTERNATE_LAYERS),  # torchtitan's default k: every other layer
    (r"selective\s*op", Recompute.SELECTIVE_OP),
    (r"selective", None),
    # a metric counted 'with (activation) recompute' (Megatron's hardware FLOPs) states that the run recomputed
    (r"full (?:activation )?recompute|activation checkpointing|recompute(?:-| )(?:granularity )?full"
     r"|with (?:activation )?recompute|\bact(?:ivation)? ckpt", Recompute.FULL),
)


def _recompute(m) -> Recompute:
    """The recompute policy the row states (RECOMPUTE_RULES), else its source's, else none."""
    text = f"{m['notes']} {m['metric']}"
    for pattern, policy in RECOMPUTE_RULES:
        if re.search(pattern, text, re.I):
            titan = re.search(r"torchtitan", str(m["source"]), re.I)
            return policy or (Recompute.SELECTIVE_OP if titan else Recompute.SELECTIVE)
    return source_of(m).recompute or Recompute.NONE


def scenario_of(m, arch, gpus: int) -> Scenario | str:
    """The run's training scenario, or why it has none."""
    if re.search(r"not stated", str(m["parallelism"]), re.I):
        return "the parallel plan is not stated"
    if re.search(r"(?<![_a-z])qlora\b", f"{m['parallelism']} {m['notes']} {m['dtype']}", re.I):
        return "QLoRA (frozen weights in 4-bit NF4, dequantized per GEMM) is not modelled"
    lora = tr.lora_rank_of(f"{m['parallelism']} {m['notes']}")
    layers = tr.recompute_layers_of(m["parallelism"])  # full recompute of that many layers per stage
    if lora is None:
        return "a LoRA fine-tune whose adapter rank is not stated"
    plan = tr.plan_of(m["parallelism"], gpus)
    if plan.chips != gpus:
        return f"the plan ({plan.tp} x {plan.pp} x {plan.cp} x DP {plan.dp}) does not cover the {gpus} GPUs"
    gbs, mbs = tr.batch_of(m["batch"])
    local = re.search(r"local (?:bs|batch(?: size)?) (\d+)", str(m["batch"]), re.I)
    if local:  # torchtitan: the batch of one data-parallel rank; pipelined in micro-batches of 1 (its default)
        gbs = gbs or int(local.group(1)) * plan.dp
        mbs = 1 if plan.pp > 1 else int(local.group(1))
    mbs = mbs or 1
    if not gbs:
        return "the global batch is not stated"
    if gbs % (plan.dp * mbs):
        return f"GBS {gbs} is not a whole number of micro-batches of {mbs} over DP {plan.dp}"
    micro = gbs // (plan.dp * mbs)
    if plan.ep > plan.tp * plan.da:  # experts over data-parallel ranks (Megatron-Core's expert data parallelism)
        share = plan.ep // (plan.tp * plan.da)
        if plan.ep % (plan.tp * plan.da) or plan.dp % share:
            return f"EP {plan.ep} is not a whole number of TP x DP groups (TP {plan.tp}, DP {plan.dp})"
        # the model's MoE replica is tp x da ranks that share their experts (serving's attention-DP + EP): the
        # share DP ranks an expert group spans become da, each with its own micro-batch
        plan, mbs = dataclasses.replace(plan, da=plan.da * share, dp=plan.dp // share), mbs * share
    fp8, src = tr.fp8_of(m["dtype"]), source_of(m)
    b16 = src.precision16 or DType.BF16
    prec = Precision(weights=b16, compute=DType.FP8 if fp8 else b16, activations=b16, kv_cache=b16)
    # Megatron-Core recipes shard activations over TP (sequence parallelism) and run the distributed optimizer,
    # whose dense states span every data-parallel rank, the expert-parallel ones included (dp x da after the
    # remap above: an EP-only plan has dp = 1 but still shards its attention states over da)
    core = is_megatron_core(m)
    par = dataclasses.replace(plan, microbatches=micro,
                              pp_schedule="interleaved" if plan.pp_virtual > 1 else "1f1b",
                              sequence_parallel=plan.sequence_parallel or bool(core and plan.tp > 1),
                              zero=1 if core and plan.zero == 0 and plan.dp * plan.da * plan.cp > 1 else plan.zero)
    return Scenario(phase=Phase.TRAIN, batch=mbs, seq_len=int(float(m["input_len"])), parallel=par,
                    recompute=Recompute.FULL if layers else _recompute(m), recompute_layers=layers,
                    precision=prec, optimizer=Optimizer.ADAM_MIXED,
                    offload_layers=tr.offload_layers_of(m["parallelism"]), lora_rank=lora,
                    flash_attention=src.flash_attention)


TRILLION = units.MILLION * units.MILLION
TIME_UNITS = {"s": 1.0, "min": 60.0, "h": units.SECONDS_PER_HOUR, "hours": units.SECONDS_PER_HOUR,
              "days": units.SECONDS_PER_DAY, "d": units.SECONDS_PER_DAY}


def _time_unit(unit: str) -> float:
    return TIME_UNITS.get(str(unit).strip().lower(), 1.0)


def trained_tokens(text: str) -> float:
    """Tokens a time-to-train or GPU-hours figure is for ('10T tokens', '1.5 trillion tokens', '300B tokens')."""
    hit = re.search(r"(\d+(?:\.\d+)?)\s*(T|B|trillion|billion)\s*tokens", str(text), re.I)
    if not hit:
        return 0.0
    scale = TRILLION if hit.group(2).lower() in ("t", "trillion") else units.BILLION
    return float(hit.group(1)) * scale


def _model_flop_per_token(arch, seq: int) -> float:
    """6 N_active + 6 L h s: matmuls fwd + bwd and causal attention (half of 12 L h s)."""
    return 6.0 * parameter_count(arch).active_per_token + 6.0 * arch.num_hidden_layers * arch.hidden_size * seq


def _predict(m, kind: str, r, sc: Scenario, arch, gpus: int, measured_rate: dict) -> float:
    """Predicted value of one row (module doc)."""
    seq = sc.seq_len
    gbs = sc.batch * sc.parallel.dp * sc.parallel.microbatches
    tok = float(r["tokens_per_s_per_chip"])
    if kind == "tokens_per_s_per_gpu":
        return tok
    if kind == "step_time":
        return float(r["step_time_s"]) / _time_unit(m["unit"])
    if kind in ("time_to_train", "gpu_hours"):
        tokens = trained_tokens(f"{m['metric']} {m['notes']}")
        if kind == "gpu_hours":  # GPU-hours for the stated tokens (per trillion when the metric says so)
            return (tokens or TRILLION) / tok / units.SECONDS_PER_HOUR
        return tokens / (tok * gpus) / _time_unit(m["unit"]) if tokens else float("nan")
    if measured_rate:  # the source's own FLOPs per token: they cancel in the ratio
        (rk, mv), = measured_rate.items()
        modelled = tok if rk == "tokens_per_s_per_gpu" else 1.0 / float(r["step_time_s"])
        measured = mv if rk == "tokens_per_s_per_gpu" else 1.0 / mv
        return float(m["value_num"]) * modelled / measured
    src = source_of(m)
    if src.flop is not None and kind in ("tflops_per_gpu", "mfu"):  # the publisher's own FLOP count
        per_gpu = src.flop(arch, gbs, seq) / (float(r["step_time_s"]) * gpus)
        if kind == "tflops_per_gpu":
            return per_gpu / units.TFLOPS
        if src.peak == "chip":
            return 100 * per_gpu / float(r["peak_flop_per_s"])
    if kind == "tflops_per_gpu" and re.search(r"hardware|recompute", str(m["metric"]), re.I):
        return megatron_flop(arch, gbs, seq) / (float(r["step_time_s"]) * gpus) / units.TFLOPS
    flop = _model_flop_per_token(arch, seq) * tok
    if kind == "tflops_per_gpu":
        return flop / units.TFLOPS
    peak = re.search(r"peak\s*(?:of\s*)?(\d+(?:\.\d+)?)\s*TFLOP", str(m["notes"]), re.I)
    return 100 * flop / (float(peak.group(1)) * units.TFLOPS) if peak else float("nan")


def _plan_remark(r) -> str:
    """What the plan check says of a predicted run: its first error (the footprint is not computed then), or that
    the footprint does not fit, or nothing."""
    if r.check.errors:
        return f", plan check: {r.check.errors[0]}"
    return "" if r["fits"] else ", does NOT fit memory"


@register_validation("training", selects=_selects)
def training_public(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """Published training rows of any source (module doc)."""
    out = []
    rows = rows.assign(run=rows["case_id"].map(run_key), kind=[tr.metric_of(a, b) for a, b in
                                                               zip(rows["metric"], rows["unit"])])
    for _, grp in rows.groupby("run", sort=False):
        first = grp.iloc[0].copy()  # the run: its first row, with every row's metric text (what it counted)
        first["metric"] = "; ".join(grp["metric"].astype(str))
        src = source_of(first)
        seq = int(float(first["input_len"])) if re.fullmatch(r"\s*\d+(\.0*)?\s*", str(first["input_len"])) else 0
        system_name, gpus, arch = tr.system_of(first["hardware"]), tr.gpus_of(first), arch_of(first["model"], seq, src)
        if src.setup is not None:  # a run its source states in prose: the source's setup
            arch, sc, gpus = src.setup()
        why = ("" if system_name else f"hardware {first['hardware']!r} names no catalogue system") or \
              ("" if gpus else "the GPU count is not stated") or \
              ("" if arch is not None else f"model {first['model']!r}: no workload file and no stated dimensions")
        if src.setup is None:
            sc = scenario_of(first, arch, gpus) if not why else None
        why = why or (sc if isinstance(sc, str) else "")
        if why:
            out += [unexpressed(m, why) for _, m in grp.iterrows()]
            continue
        system = catalog.load_system(system_name, replaced=replaced)
        cal = attention_kernel(system, src.attention_kernel) if src.attention_kernel else calibration_of(system)
        cal = cal.with_overrides(stack_overrides(first, sc, arch))
        try:
            r = training.train(system, arch, sc, nodes=max(1, gpus // system.node.chips), cal=cal)
        except ValueError as exc:
            out += [unexpressed(m, f"the plan cannot run: {exc}") for _, m in grp.iterrows()]
            continue
        rates = {k: float(v) for k, v in zip(grp["kind"], grp["value_num"]) if k in RATE_KINDS}
        rate = dict(list(rates.items())[:1])
        for _, m in grp.iterrows():
            if not m["kind"]:
                out.append(unexpressed(m, f"metric {m['metric']!r} is not one the family reads"))
                continue
            pred = _predict(m, m["kind"], r, sc, arch, gpus, rate if m["kind"] not in RATE_KINDS else {})
            p = sc.parallel
            out.append(row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), pred, m["unit"],
                           f"{arch.name}, {system.name} x {gpus}: TP{p.tp} PP{p.pp}"
                           f"{f' VP{p.pp_virtual}' if p.pp_virtual > 1 else ''} CP{p.cp} EP{p.ep} DP{p.dp}"
                           f" ZeRO-{p.zero}, mbs {sc.batch} x {p.microbatches}, {sc.precision.compute.value}, "
                           f"{sc.recompute.value} recompute, {'flash' if sc.flash_attention else 'materialised'} "
                           f"attention: step {r['step_time_s']:.2f} s, MFU {100 * r['mfu_frac']:.0f}%"
                           f"{_plan_remark(r)}", system=system.name))
    return frame(out)
