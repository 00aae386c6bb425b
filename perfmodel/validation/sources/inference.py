"""Validation family: TTFT and per-token latency of served models (Neuron benchmark tables and tutorials).

Cases with phase 'prefill' / 'decode' and a TTFT / TPOT metric (METRICS) on an instance of the catalogue
(hardware text starts with its name, e.g. 'trn1.32xlarge (...)'). The development cases are Transformers
NeuronX 0.10 (Neuron SDK 2.18, April 2024) on trn1.32xlarge (TP32) and inf2.48xlarge (TP24); the
Trainium2 rows (reference/neuron_trn2_vllm.csv) are the vLLM Neuron plugin on trn2.48xlarge.
Each row maps to a scenario by the rules of its software stack, a profile of
hardware_specs/stacks/neuron.toml named in the row's text (catalog/neuron_stacks.py), stated once and
never per row (nothing is fitted to the rows):

  stack     the profile the row's notes or source name ('Transformers NeuronX', 'vLLM Neuron plugin',
            'NxDI', ...); a Neuron row naming none takes today's serving stack (nxd-inference), as a
            scenario does, and its note says so.
  ranks     TP counts logical NeuronCores, each a runtime rank: chips = TP / (cores / LNC), LNC as the
            row states it ('LNC=2') else the chip's default (Trainium1 / Inferentia2 1, Trainium2 / 3
            2): TP32 on trn1 = 16 chips, TP24 on inf2 = 12, TP16 on trn2 = 4. TP collectives run over
            the ranks (Knobs.ranks_per_chip = cores / LNC; collectives.collective_cost) with the
            stack's in-node algorithms (SDK 2.18's runtime ran the ring above 16 ranks: a TP32
            all-reduce is a 62-step ring; today's offers Mesh and RDH).
  heads     attention heads are sharded whole over the TP ranks (utils.get_qkv_padding):
            query heads zero-padded to a multiple of the rank count (Llama-2-13b's 40 -> 64 on
            TP32, 48 on TP24; 32 -> 48 on TP24), GQA KV heads replicated to the rank count
            (8 -> 32 on TP32, 24 on TP24; GQA.REPLICATED_HEADS, the fallback whenever
            KV % TP != 0), MHA KV heads padded like the query heads (bindings.sharded_heads).
  buckets   a model is compiled for n_positions = the row's 'compiled max seq len' or 'max-model-len'
            (else input + output); token-generation buckets are powers of two from 128 up to
            n_positions, plus n_positions itself (bucket.token_sizes). Context-encoding buckets are
            the token buckets x the stack's context_bucket_ratio (Transformers NeuronX: half); the
            prompt is padded to the smallest one that holds it and the whole bucket is computed.
            Decode attention spans the bucket holding the P50 token's position input + output/2
            (Transformers NeuronX), or the whole compiled length where the stack's decode graph
            reads it (decode_spans_compiled_length: the vLLM Neuron plugin's block table).
  attention the stack's flash_attention: Transformers NeuronX 0.10 computes attention as plain HLO
            (scores materialised over the whole padded context; the mask select and hlo.softmax's
            max / subtract / sum / divide are materialised_softmax_vector_passes = 5 VectorE passes
            and one exp over every element); NxD Inference runs NKI flash attention.
  host      the stack's step_host_latency joins every graph execution (TTFT and TPOT).
  dtypes    'weights int8' -> int8 weight storage (cast to BF16 by the DMA engines,
            int8_weight_dequantize_passes); otherwise BF16 weights (GPT-OSS's MXFP4 experts
            dequantized to BF16 at load, as the Trainium2 rows state); matmuls in BF16; KV cache BF16.
  models    CodeLlama-13b uses the Llama-2-13b architecture (vocab 32,016 vs 32,000);
            Mistral-7B-Instruct-v0.2 is mistral-7b without the sliding window (v0.2 dropped it);
            the -Instruct tunings are their base architectures.
  TTFT = the context-encoding step of the whole batch; TPOT = one decode step of the batch.
  speculative  EAGLE3 rows: TPOT from the row's stated draft length and acceptance (speculative_rows.py).
  Not expressed: prompts whose length the row does not state.

Published tables' words (synchronous loads, emulated lengths, ITL and means, e2e rates, smaller instances) are
read into these plain rows first (neuron_words.py); the shapes a compiled graph runs at (buckets, and the compiled
context length and batch a stack pads to) are neuron_shapes.py's.

Rows on other hardware (GPUs) keep the generic mapping: TP over chips, heads as the model
defines them, flash attention, decode at the mean context input + output/2.

Known gaps (the model's remaining misses on these rows, not tuned away):
  prefill   1. Two efficiency regimes the rows do not explain: the SDK 2.18.1 Llama-3 rows reach
               ~12-17% of the BF16 peak in context encoding, as do inf2 B=1 Llama-2-13b /
               CodeLlama / Mistral-8192; the SDK 2.18.0 Llama-2-13b, CodeLlama and Mistral rows
               at 4k-8k prompts (all trn1 rows, inf2 B>1 rows, inf2 Mistral-4096) reach 5-7%
               with the same architecture, instance and software line. A configuration detail
               the table does not give (compiler flags: the 2.18-era CodeLlama/Llama-2 sample
               notebooks compile with NEURON_CC_FLAGS=-O1, which the transformers-neuronx 0.7
               notes say costs ~50% latency; context_length_estimate lists) is the likely cause.
               Evidence that would close it: the benchmark's compile flags and bucket lists.
            2. A per-layer fixed cost of a short context encoding: TTFT(128 tokens) exceeds one
               decode step by ~0.2-0.35 ms per layer on trn1 and ~0.4-0.6 ms per layer on inf2
               (all models, incl. 70B), far above the step's FLOPs, bytes and collectives.
               Evidence: a profile of a 128-token context-encoding NEFF.
            3. Batch at short prompts: going from B=1 to B=8 at 128 tokens costs 1.7-2.4x the
               model's time per added token on inf2 (Llama-3-8B 45 vs 26 us, Llama-2-7b 56 vs 25,
               Mistral 56 vs 25, Llama-2-13b 93 vs 39), while a longer prompt costs what the model
               says (term a below): the batched graph does more than B prompts' work.
            Ruled out: TTFT as context encoding plus one token-generation step (adding the
            modelled decode step leaves the inf2 B=1 128-token rows of the 7-8B models 34-44% low).
            Where the miss sits (TTFT = c + a S + b S^2 through each fast-regime inf2 B=1 series,
            measured vs model): the per-token term a is right (Llama-3-8B 33 vs 26 us/token,
            Llama-2-13b 34 vs 40, Llama-3-70B 167 vs 159), so the matmuls and TP all-reduces are
            not the gap; the fixed term c is 12-36 ms above the model (0.3-0.46 ms per layer, gap
            2), and the attention term b is 1.3x the model's for Llama-3-8B, 3.3x for Llama-2-13b
            and 8.7x for Llama-3-70B (2, 2 and 3 query heads per rank: not the heads alone).
  decode    The growth of TPOT with the bucket is under-predicted by ~2x at B=1: reading the
            KV cache of one more position costs ~6-11 ns per layer whatever the heads per rank,
            the signature of DMA descriptor-rate limits on 256 B-1 KiB rows of the SBH cache
            layout (NKI DMA guide: payloads >= 4 KiB per transfer are needed to reach HBM
            bandwidth), not of bytes. Evidence: the cache layout and DMA profile of a decode step.

Does not: tune anything to these rows; misses are reported with the error.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import model_names, neuron_stacks, workload_files
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import evaluate_sweep
from perfmodel.validation.sources import neuron_words, speculative_rows
from perfmodel.validation.sources.neuron_shapes import (context_buckets, decode_bucket, decode_graph_batch,
                                                        n_positions, prefill_bucket)

VARIANTS = {"Mistral-7B-Instruct-v0.2": "mistral-7b"}  # another config of a catalogue architecture (arch_of)
METRICS = neuron_words.PLAIN_METRICS
SPECULATIVE = r"(?i)EAGLE|speculative|draft"  # speculative-decoding rows: speculative_rows.py
TIME_UNITS = neuron_words.TIME_UNITS
TNX_GAPS = {  # the short form of 'Known gaps' above (Transformers NeuronX rows)
    "prefill": "context encoding reaches 5-17% of peak in these SDK 2.18 runs, with two regimes on the same "
               "instance and software line; the table omits the compile flags (-O1 in that era's samples) and "
               "bucket lists that would explain them, and a 128-token prompt costs 0.2-0.6 ms per layer beyond "
               "its FLOPs, bytes and collectives (unprofiled fixed cost); fitted per series, the per-token term "
               "matches the model and the attention (S^2) term is 1.3-8.7x the model's",
    "decode": "KV-cache reads of the SBH layout cost per position (DMA descriptors on 256 B-1 KiB rows), "
              "not only per byte",
}
GAPS = {  # shown in reports when a phase misses, per stack
    "prefill": f"Transformers NeuronX (SDK 2.18): {TNX_GAPS['prefill']}; vLLM Neuron plugin (Trainium2): context "
               "encoding 2x the model's for Llama-3.1-8B and 8x for GPT-OSS-120B's MoE (252 ms for 512 tokens), "
               "unprofiled",
    "decode": f"Transformers NeuronX (SDK 2.18): {TNX_GAPS['decode']}; vLLM Neuron plugin (Trainium2): a per-step "
              "cost its two illustrative rows cannot place (per operator, per layer or on the host); its EAGLE3 rows "
              "show it again per draft step: TPOT x mean acceptance length minus the plain step leaves 2-3 ms per "
              "draft step measured against 0.2-0.3 ms modelled for one decoder layer (a fixed cost per graph "
              "execution, not the draft's FLOPs or bytes)",
}


def selects(rows: pd.DataFrame) -> pd.Series:
    """The family's rows: a TTFT / TPOT metric, speculative-decoding variants included (listed, not predicted);
    on Neuron hardware also the published tables' words (neuron_words.KINDS: means, ITL, rates, e2e figures)."""
    plain = pd.Series([neuron_words.plain_metric(m, p) for m, p in zip(rows["metric"], rows["phase"])], rows.index)
    published = pd.Series([neuron_words.published(m) for _, m in rows.iterrows()], rows.index, dtype=bool)
    return plain | published


def system_name(hardware: str) -> str:
    """Catalogue system named by the hardware text ('trn1.32xlarge (16x ...)' -> 'trn1.32xlarge'), or ''."""
    name = hardware.split()[0] if hardware.strip() else ""
    return name if name in catalog.list_systems() else ""


def workload_name(model: str) -> str:
    """Workload file for a model name (catalog/model_names.py: publisher, purpose and checkpoint words dropped,
    aliases), else ''."""
    return VARIANTS.get(model) or model_names.resolve(model)[0]


def arch_of(model: str):
    arch = workload_files.load_workload(workload_name(model))
    if model == "Mistral-7B-Instruct-v0.2":  # v0.2 dropped v0.1's sliding window
        arch = dataclasses.replace(arch, sliding_window=0, layer_types=())
    return arch


def tp_degree(parallelism: str) -> int:
    m = re.match(r"\s*TP(\d+)", parallelism)
    if not m:
        raise ValueError(f"parallelism {parallelism!r} does not start with TP<n>")
    return int(m.group(1))


def neuron_stack(system) -> bool:
    """Neuron hardware: rows map by the rules of the software stack they name (module doc)."""
    return bool(system.chip.family.is_neuron)


def stack_of(m, system, replaced: Replacements = NONE) -> neuron_stacks.Stack | None:
    """The row's Neuron software stack: the one its text names, else today's serving stack (the scenario's
    default, said in the row's note), as `replaced` may replace it; None on other hardware."""
    if not neuron_stack(system):
        return None
    return neuron_stacks.stack(neuron_words.stack_named(m, replaced) or neuron_stacks.SERVING_DEFAULT, replaced)


def stack_names(rows: pd.DataFrame, replaced: Replacements = NONE) -> list[str]:
    """Each row's stack name ('' off Neuron): the key rows are grouped by before one sweep per group."""
    return [(lambda st: st.name if st else "")(stack_of(m, catalog.load_system(system_name(m["hardware"])), replaced))
            for _, m in rows.iterrows()]


def ranks_per_chip(parallelism: str, system) -> int:
    """Runtime ranks per chip of the TP group: on Neuron one per logical core (cores / LNC, LNC as the row
    states it, else the chip's default); elsewhere 1."""
    if not neuron_stack(system):
        return 1
    hit = re.search(r"LNC\s*=\s*(\d+)", parallelism)
    lnc = int(hit.group(1)) if hit else system.chip.lnc
    return max(1, system.chip.cores // lnc)


def tp_chips(parallelism: str, system) -> int:
    """TP32 on a 2-core chip -> 16 chips; TP16 on Trainium2 at LNC=2 (4 logical cores) -> 4; 'TP8' on a GPU -> 8."""
    return max(1, tp_degree(parallelism) // ranks_per_chip(parallelism, system))


def knobs(system, m, phase: Phase, batch, seq_len, context, weights: str, stack=None) -> bd.Knobs:
    """Scenario of one row group: the stack's mapping on Neuron hardware, the generic one elsewhere."""
    par = m["parallelism"]
    common = {"batch": batch, "tp": tp_chips(par, system), "weights": DType(weights), "compute": DType.BF16,
              "kv_cache": DType.BF16}
    if stack is not None:
        rpc = ranks_per_chip(par, system)
        common.update(flash_attention=bool(stack["flash_attention"]), ranks_per_chip=rpc,
                      head_shards=tp_chips(par, system) * rpc, pad_heads=True,
                      moe_kernel_block=stack["moe_kernel_block"])
    return bd.Knobs(phase=phase, seq_len=seq_len, context=context, **common)


def calibration(system, stack=None):
    """The chip's calibration with the stack's runtime rules (collective algorithms) in place."""
    cal = calibration_of(system)
    return stack.calibration(cal) if stack is not None else cal


def host_latency(stack) -> float:
    """Host time per graph execution (s): the stack's step_host_latency, 0 off Neuron."""
    return stack["step_host_latency"] if stack is not None else 0.0


def weight_type(dtype_text: str) -> str:
    return "int8" if "weights int8" in dtype_text else "bf16"


def speculative(m) -> bool:
    return bool(re.search(SPECULATIVE, f"{m['metric']} {m['model']}"))


def expressible(m, units: tuple[str, ...] = tuple(TIME_UNITS), replaced: Replacements = NONE) -> str:
    """Why a serving case cannot be expressed ('' when it can); speculative rows by speculative_rows.py."""
    if speculative(m):
        return speculative_rows.expressible(m, lambda plain: expressible(plain, units, replaced))
    if not system_name(m["hardware"]):
        return f"hardware {m['hardware']!r} does not start with a catalogue system name"
    if not workload_name(m["model"]):
        return f"model {m['model']!r} has no workload file"
    if m["unit"] not in units:
        return f"unit {m['unit']!r} is not one of {', '.join(units)}"
    if not re.match(r"\s*TP\d+", m["parallelism"]):
        return f"parallelism {m['parallelism']!r} is not 'TP<n>'"
    bad = [f"{col} {m[col]!r} is not a whole number" for col in ("batch", "input_len", "output_len")
           if not neuron_words.PLAIN_COUNT.fullmatch(m[col])]
    if bad:
        return "; ".join(bad)
    system = catalog.load_system(system_name(m["hardware"]))
    if not neuron_stack(system):
        return ""
    stack = stack_of(m, system, replaced)
    rpc = ranks_per_chip(m["parallelism"], system)
    if tp_degree(m["parallelism"]) % rpc:
        return f"{m['parallelism']}: not a whole number of chips at {rpc} logical cores per chip"
    largest = max(context_buckets(n_positions(m), stack["context_bucket_ratio"]))
    if int(float(m["input_len"])) > largest:
        return (f"prompt of {m['input_len']} tokens is longer than the largest context-encoding bucket "
                f"({largest}): the rest would be encoded token by token, not modelled")
    return ""


def decode_setup(m, replaced: Replacements = NONE):
    """A row's plain decode step as this family maps it: (system, arch, knobs, calibration, host time per step,
    the unit's scale, the stack's name, the decode span)."""
    system = catalog.load_system(system_name(m["hardware"]), replaced=replaced)
    stack = stack_of(m, system, replaced)
    span = decode_bucket(m, stack) if stack else int(float(m["input_len"])) + int(float(m["output_len"])) // 2
    kn = knobs(system, m, Phase.DECODE, int(float(m["batch"])), 1, span, weight_type(str(m["dtype"])), stack)
    return (system, arch_of(m["model"]), kn, calibration(system, stack), host_latency(stack), TIME_UNITS[m["unit"]],
            stack.name if stack else "no stack", span)


def predict_latency(rows: pd.DataFrame, replaced: Replacements = NONE) -> pd.DataFrame:
    """Predicted TTFT / TPOT for measurement rows (one sweep per system x model x phase x weights x stack), with
    what `replaced` holds in place of the catalogue's calibration and stacks."""
    rows = rows.assign(weights=rows["dtype"].map(weight_type),
                       phase_of=rows["metric"].str.replace(" without prefix caching", "").map(METRICS))
    rows["stack"] = stack_names(rows, replaced)
    out = []
    for (hw, model, phase, weights, _), grp in rows.groupby(["hardware", "model", "phase_of", "weights", "stack"],
                                                           sort=False):
        system = catalog.load_system(system_name(hw), replaced=replaced)
        arch = arch_of(model)
        first = grp.iloc[0]
        stack = stack_of(first, system, replaced)
        batch = grp["batch"].astype(float).astype(int).to_numpy()
        inp = grp["input_len"].astype(float).astype(int).to_numpy()
        outl = grp["output_len"].astype(float).astype(int).to_numpy()
        if phase == Phase.PREFILL:
            seq = np.array([prefill_bucket(m, stack) for _, m in grp.iterrows()]) if stack else inp
            kn = knobs(system, first, phase, batch, seq, 0, weights, stack)
            span = seq
        else:
            ctx = np.array([decode_bucket(m, stack) for _, m in grp.iterrows()]) if stack else inp + outl // 2
            lines = np.array([decode_graph_batch(m, stack) for _, m in grp.iterrows()])  # what the graph computes
            kn = knobs(system, first, phase, lines, 1, ctx, weights, stack)
            span = ctx
        res = evaluate_sweep(system, arch, kn, calibration(system, stack))
        scale = grp["unit"].map(TIME_UNITS).to_numpy()
        heads = bd.sharded_heads(arch.num_attention_heads, arch.num_key_value_heads, kn.head_shards)
        step = res["step_time_s"].to_numpy() + host_latency(stack)
        g = grp.assign(predicted=step / scale, system=system.name, tp_chips=kn.tp,
                       ranks=kn.tp * kn.ranks_per_chip, heads=int(heads[0]), kv_heads=int(heads[1]), span=span,
                       neuron=stack is not None, stack_name=[
                           (stack.name if neuron_words.stack_named(m, replaced)
                            else f"{stack.name} (no stack named in the row: today's default)") if stack else ""
                           for _, m in grp.iterrows()],
                       spans_all=bool(stack["decode_spans_compiled_length"]) if stack else False,
                       flash=bool(stack["flash_attention"]) if stack else True,
                       bound_share_comm=res["comm_time_s"].to_numpy() / step, measured=grp["value"].astype(float),
                       lines=kn.batch)
        out.append(g)
    df = pd.concat(out, ignore_index=True)
    df["error_frac"] = (df["predicted"] - df["measured"]) / df["measured"]
    prefill = df["phase_of"].eq(Phase.PREFILL)
    what = np.where(prefill, "context bucket ", np.where(df["spans_all"], "decode over the compiled length ",
                                                          "decode over bucket "))
    df["note"] = np.where(
        df["neuron"],
        df["stack_name"] + ": TP " + df["ranks"].astype(str) + " logical NeuronCores on " + df["tp_chips"].astype(str)
        + " chips, heads " + df["heads"].astype(str) + " (KV " + df["kv_heads"].astype(str) + ") after sharding, "
        + what + df["span"].astype(str) + np.where(df["flash"], ", flash attention", ", no flash attention")
        + "; comm share " + (100 * df["bound_share_comm"]).round(0).astype(int).astype(str) + "%"
        + np.where(df["lines"].astype(float) > df["batch"].astype(float), "; the graph computes its compiled batch of "
                   + df["lines"].astype(float).astype(int).astype(str) + " lines", "")
        + np.where(df["stack_name"].str.startswith("transformers-neuronx"),
                   "; known gap (module doc): " + np.where(prefill, TNX_GAPS["prefill"], TNX_GAPS["decode"]), ""),
        "TP " + df["tp_chips"].astype(str) + " chips; comm share "
        + (100 * df["bound_share_comm"]).round(0).astype(int).astype(str) + "%")
    return df[["case_id", "system", "model", "metric", "batch", "input_len", "output_len", "weights", "tp_chips",
               "measured", "predicted", "unit", "error_frac", "note"]]


def _register() -> None:
    from perfmodel.validation.harness import register_validation, unexpressed

    @register_validation("neuron-latency", selects=selects, gaps=GAPS)
    def neuron_latency(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
        """TTFT / TPOT cases: one vectorised sweep per system x model x phase x weight type; published rows read
        as plain ones first (neuron_words.py) and folded back."""
        plain, ok, listed = neuron_words.split(rows, lambda m: expressible(m, replaced=replaced), unexpressed)
        spec = ok.apply(speculative, axis=1).astype(bool) if len(ok) else pd.Series(dtype=bool)
        parts = [listed]
        if len(ok):
            df = pd.concat([d for d in (predict_latency(ok[~spec], replaced) if (~spec).any() else None,
                                        speculative_rows.predict(ok[spec], lambda m: decode_setup(m, replaced))
                                        if spec.any() else None)
                            if d is not None], ignore_index=True)
            df = neuron_words.fold(df, plain, rows)
            parts.append(pd.DataFrame({
                "case_id": df["case_id"], "metric": df["metric"], "measured": df["measured"],
                "predicted": df["predicted"], "unit": df["unit"], "system": df["system"],
                "note": (df["model"] + " b" + df["batch"].astype(str) + " in" + df["input_len"].astype(str)
                         + ", " + df["weights"] + " weights: " + df["note"]),
                "reason": np.where(np.isfinite(df["predicted"].astype(float)), "", df["note"])}))  # why not, said
        return pd.concat([p for p in parts if len(p)], ignore_index=True)


_register()
