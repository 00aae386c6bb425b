"""Development check: Trn1 / Inf2 TTFT and per-token latency (Neuron benchmark tables).

Rows NRN-TRN1-* and NRN-INF2-* of reference/published_measurements.csv (Transformers
NeuronX, Neuron SDK 2.18). Mapping of each row to a scenario (stated, not tuned):
  - TP over NeuronCores -> chips: TP32 on trn1.32xlarge = 16 chips, TP24 on inf2.48xlarge = 12
    (2 NeuronCores per chip);
  - TTFT = prefill of the whole batch of prompts at input_len; TPOT = one decode step of the
    batch at the mean context of the generation (input + output / 2);
  - weights int8 -> int8 weight-only storage dequantized on VectorE; matmuls in BF16;
    activations and KV cache in BF16;
  - CodeLlama-13b uses the Llama-2-13b architecture (vocab 32,016 vs 32,000);
    Mistral-7B-Instruct-v0.2 is mistral-7b without the sliding window (v0.2 dropped it).

Does not: tune anything to these rows; misses are reported with the error.
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

MODEL_MAP = {"Llama-3-8B": "llama-3-8b", "Llama-2-13b": "llama-2-13b", "CodeLlama-13b-hf": "llama-2-13b",
             "Mistral-7B-Instruct-v0.2": "mistral-7b", "Llama-2-7b": "llama-2-7b", "Llama-3-70B": "llama-3-70b",
             "Llama-2-70b": "llama-2-70b"}
METRICS = {"TTFT P50": Phase.PREFILL, "TPOT P50": Phase.DECODE}


def _system_name(hardware: str) -> str:
    return hardware.split()[0]


def _arch(model: str):
    arch = workload_files.load_workload(MODEL_MAP[model])
    if model == "Mistral-7B-Instruct-v0.2":
        arch = dataclasses.replace(arch, sliding_window=0, layer_types=())
    return arch


def _tp_chips(parallelism: str, system) -> int:
    cores = int(parallelism.split()[0].removeprefix("TP"))
    return cores // system.chip.cores


def predict_latency(rows: pd.DataFrame) -> pd.DataFrame:
    """Predicted TTFT / TPOT for measurement rows (one sweep per system x model x phase x weights)."""
    rows = rows[rows["metric"].isin(METRICS)].copy()
    rows["weights"] = np.where(rows["dtype"].str.contains("weights int8"), "int8", "bf16")
    out = []
    for (hw, model, metric, weights), grp in rows.groupby(["hardware", "model", "metric", "weights"], sort=False):
        system = catalog.load_system(_system_name(hw))
        arch = _arch(model)
        phase = METRICS[metric]
        tp = _tp_chips(grp["parallelism"].iloc[0], system)
        batch = grp["batch"].astype(int).to_numpy()
        inp = grp["input_len"].astype(int).to_numpy()
        outl = grp["output_len"].astype(int).to_numpy()
        if phase == Phase.PREFILL:
            kn = bd.Knobs(phase=phase, batch=batch, seq_len=inp, context=0, tp=tp, weights=DType(weights),
                          compute=DType.BF16)
        else:
            kn = bd.Knobs(phase=phase, batch=batch, seq_len=1, context=inp + outl // 2, tp=tp,
                          weights=DType(weights), compute=DType.BF16)
        res = evaluate_sweep(system, arch, kn)
        g = grp.assign(predicted=res["step_time_s"].to_numpy() * 1e3, system=system.name, tp_chips=tp,
                       bound_share_comm=(res["comm_time_s"] / res["step_time_s"]).to_numpy(),
                       measured=grp["value"].astype(float))
        out.append(g)
    df = pd.concat(out, ignore_index=True)
    df["error_frac"] = (df["predicted"] - df["measured"]) / df["measured"]
    df["note"] = ("TP " + df["tp_chips"].astype(str) + " chips; comm share " +
                  (100 * df["bound_share_comm"]).round(0).astype(int).astype(str) + "%")
    return df[["case_id", "system", "model", "metric", "batch", "input_len", "output_len", "weights", "tp_chips",
               "measured", "predicted", "unit", "error_frac", "note"]]


def latency_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median / mean absolute error per system and metric."""
    g = df.assign(abs_err=df["error_frac"].abs()).groupby(["system", "metric"])
    return g.agg(rows=("case_id", "count"), median_abs_error_frac=("abs_err", "median"),
                 mean_error_frac=("error_frac", "mean"), worst_abs_error_frac=("abs_err", "max")).reset_index()


def _register() -> None:
    from perfmodel.validation import measurements, register_validation

    @register_validation("neuron-latency")
    def neuron_latency() -> pd.DataFrame:
        """Trn1 / Inf2 TTFT and TPOT rows (Transformers NeuronX, SDK 2.18)."""
        rows = measurements(("NRN-TRN1", "NRN-INF2"))
        rows = rows.assign(value=rows["value_num"], batch=rows["batch"].astype(int),
                           input_len=rows["input_len"].astype(int), output_len=rows["output_len"].astype(float))
        df = predict_latency(rows)
        hw = rows.set_index("case_id")["hardware"]
        return pd.DataFrame({"case_id": df["case_id"], "hardware": df["case_id"].map(hw),
                             "metric": df["metric"] + " " + df["model"] + " b" + df["batch"].astype(str) + " in"
                             + df["input_len"].astype(str),
                             "measured": df["measured"], "predicted": df["predicted"], "unit": "ms",
                             "error_frac": df["error_frac"], "note": df["note"]})


_register()
