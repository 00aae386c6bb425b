"""Development check: Inf2 / Trn1 output-token throughput (whole instance), predicted vs measured.

Rows NRN-TRN1-* and NRN-INF2-* of reference/published_measurements.csv with metric 'output
token throughput (whole instance)' (Transformers NeuronX, Neuron SDK 2.18, static batches).
Mapping of each row to the model (stated once, nothing fitted; the same mapping as
validation_inference):
  - TP over NeuronCores -> chips: TP32 on trn1.32xlarge = 16 chips, TP24 on inf2.48xlarge = 12
    chips (2 NeuronCores per chip); one model replica over the whole instance;
  - a static batch of B sequences: prefill all B prompts of I tokens, then O decode steps at the
    mean context I + O/2: throughput = B O / (t_prefill(B, I) + O t_decode(B, I + O/2)) tokens/s;
  - 'weights int8' -> int8 weight-only storage dequantized on VectorE, matmuls in BF16;
    activations and KV cache in BF16;
  - CodeLlama-13b uses the Llama-2-13b architecture; Mistral-7B-Instruct-v0.2 is mistral-7b
    without the sliding window (v0.2 dropped it).
The rows say 'as reported (not always equal to batch/TPOT)': the benchmark's own definition
of throughput may include host overheads the model does not have.

Does not: tune anything to these rows; every miss is reported with its error.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from perfmodel import bindings as bd
from perfmodel import catalog, workload_files
from perfmodel.dtypes import DType
from perfmodel.evaluate import evaluate_sweep
from perfmodel.scenario import Phase
from perfmodel.validation import frame, measurements, register_validation, row

METRIC = "output token throughput (whole instance)"
PREFIXES = ("NRN-TRN1-", "NRN-INF2-")
MODEL_MAP = {"Llama-3-8B": "llama-3-8b", "Llama-2-13b": "llama-2-13b", "CodeLlama-13b-hf": "llama-2-13b",
             "Mistral-7B-Instruct-v0.2": "mistral-7b", "Llama-2-7b": "llama-2-7b", "Llama-3-70B": "llama-3-70b",
             "Llama-2-70b": "llama-2-70b"}


def _arch(model: str):
    arch = workload_files.load_workload(MODEL_MAP[model])
    if model == "Mistral-7B-Instruct-v0.2":
        arch = dataclasses.replace(arch, sliding_window=0, layer_types=())
    return arch


def predict_throughput(rows: pd.DataFrame) -> pd.DataFrame:
    """Predicted whole-instance output tokens/s for throughput rows: two sweeps (prefill, decode)
    per system x model x weight type, vectorised over the rows."""
    out = []
    rows = rows.assign(weights=np.where(rows["dtype"].str.contains("weights int8"), "int8", "bf16"))
    for (hw, model, weights), grp in rows.groupby(["hardware", "model", "weights"], sort=False):
        system = catalog.load_system(hw.split()[0])
        arch = _arch(model)
        tp = int(grp["parallelism"].iloc[0].split()[0].removeprefix("TP")) // system.chip.cores
        B = grp["batch"].astype(int).to_numpy()
        I = grp["input_len"].astype(int).to_numpy()
        O = grp["output_len"].astype(int).to_numpy()
        common = dict(batch=B, tp=tp, weights=DType(weights), compute=DType.BF16, kv_cache=DType.BF16)
        pre = evaluate_sweep(system, arch, bd.Knobs(phase=Phase.PREFILL, seq_len=I, context=0, **common))
        dec = evaluate_sweep(system, arch, bd.Knobs(phase=Phase.DECODE, seq_len=1, context=I + O // 2, **common))
        t_pre, t_dec = pre["step_time_s"].to_numpy(), dec["step_time_s"].to_numpy()
        pred = B * O / (t_pre + O * t_dec)
        out.append(grp.assign(system=system.name, tp_chips=tp, predicted=pred, prefill_s=t_pre, decode_step_s=t_dec,
                              decode_share=O * t_dec / (t_pre + O * t_dec),
                              comm_share=(dec["comm_time_s"] / dec["step_time_s"]).to_numpy()))
    return pd.concat(out, ignore_index=True)


@register_validation("serving-throughput")
def throughput_validation() -> pd.DataFrame:
    """Inf2 / Trn1 whole-instance output-token throughput rows: measured vs predicted (tidy COLUMNS + extras)."""
    m = measurements(PREFIXES)
    m = m[m["metric"] == METRIC]
    if not len(m):
        raise ValueError(f"no '{METRIC}' rows with case ids {PREFIXES} in the measurements file")
    p = predict_throughput(m)
    rows = []
    for r in p.itertuples():
        note = (f"{r.model}, B={r.batch} I={r.input_len} O={r.output_len}, {r.weights} weights, TP {r.tp_chips} chips; "
                f"decode {100 * r.decode_share:.0f}% of the time, comm {100 * r.comm_share:.0f}% of a decode step")
        rows.append({**row(r.case_id, r.system, METRIC, r.value_num, r.predicted, "tokens/s", note),
                     "model": r.model, "batch": int(r.batch), "input_len": int(r.input_len),
                     "output_len": int(r.output_len), "weights": r.weights, "tp_chips": r.tp_chips})
    df = pd.DataFrame(rows)
    return df[list(frame([]).columns) + [c for c in df.columns if c not in frame([]).columns]]


def throughput_summary(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Error statistics per system (rows, median / mean / worst |error|, share within 25%)."""
    df = throughput_validation() if df is None else df
    g = df.assign(abs_err=df["error_frac"].abs()).groupby("hardware")
    return g.agg(rows=("case_id", "count"), median_abs_error_frac=("abs_err", "median"),
                 mean_error_frac=("error_frac", "mean"), worst_abs_error_frac=("abs_err", "max"),
                 within_25pct_frac=("abs_err", lambda a: float((a <= 0.25).mean()))).reset_index()
