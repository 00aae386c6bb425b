"""Speculative-decoding rows of the serving-latency family (the Trainium2 EAGLE3 tutorials' TPOT).

A row whose model reads '<target> + <...> EAGLE3 draft' and whose notes state the draft length
('num_speculative_tokens=K') and the acceptance ('per-position 86.5/72.5/63.5%', else 'mean acceptance length
E') is predicted from that stated acceptance with serving/speculative.py's step, under the same mapping as
the row's plain decode (validation/sources/inference.py: stack, logical-core ranks, heads, decode span):

    verify   the target's graph over K + 1 tokens per sequence at the decode span (prefill of a chunk)
    draft    the draft's decode step (workloads/drafts/: one decoder layer; EAGLE3's feature fusion fc and
             2D-wide q/k/v inputs are not in its graph), K times
    host     the stack's step_host_latency once per step (the NxD Inference fused-speculation model: draft and
             target run as one compiled graph)
    TPOT     = (verify + K draft + host) / E,  E = 1 + sum of per-position acceptance (or the stated mean)

Does not: fit anything; the acceptance is the row's, never the model's.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from perfmodel.catalog import workload_files
from perfmodel.core.scenario import Phase
from perfmodel.model.evaluate import evaluate_sweep
from perfmodel.serving.speculative import Speculation, draft_arch

DRAFTS = {"GPT-OSS-120B": "eagle3-gpt-oss-120b", "Llama-3.1-8B-Instruct": "eagle3-llama-3.1-8b"}


def target_model(model: str) -> str:
    """'GPT-OSS-120B + RedHatAI EAGLE3 draft' -> 'GPT-OSS-120B'."""
    return model.split(" + ")[0].strip()


def speculation(m) -> Speculation | str:
    """The row's speculation (draft, K, acceptance), or why it has none."""
    notes = str(m.get("notes", ""))
    target = target_model(str(m["model"]))
    if "EAGLE3" not in str(m["model"]):
        return "only EAGLE3 drafts are mapped (the model text names no EAGLE3 draft)"
    if target not in DRAFTS:
        return f"no draft workload for the EAGLE3 draft of {target!r} (workloads/drafts/)"
    k = re.search(r"num_speculative_tokens\s*=\s*(\d+)", notes)
    if not k:
        return "the row does not state num_speculative_tokens"
    k = int(k.group(1))
    per = re.search(r"per-position ([\d./]+)%", notes)
    if per and len(per.group(1).split("/")) == k:
        return Speculation(DRAFTS[target], k, acceptance=tuple(float(x) / 100 for x in per.group(1).split("/")),
                           model=workload_files.load_draft(DRAFTS[target]))
    mean = re.search(r"mean accept(?:ance|ed)? length ([\d.]+)", notes)
    if mean:
        return Speculation(DRAFTS[target], k, mean_accepted=float(mean.group(1)),
                           model=workload_files.load_draft(DRAFTS[target]))
    return "the row states no acceptance (per-position rates or mean acceptance length)"


def expressible(m, base) -> str:
    """Why a speculative row cannot be expressed ('' when it can); `base` checks the row as plain decode."""
    if str(m["phase"]) != "decode" or "TPOT" not in str(m["metric"]):
        return "speculative decoding is predicted for TPOT rows (decode); this row's metric is " + repr(m["metric"])
    spec = speculation(m)
    if isinstance(spec, str):
        return spec
    return base(dict(m, model=target_model(str(m["model"])), metric=str(m["metric"]).split(" (")[0]))


def predict(rows: pd.DataFrame, decode_setup) -> pd.DataFrame:
    """Predicted TPOT of speculative rows (module doc); the columns of inference.predict_latency.
    `decode_setup(row)` is the serving-latency family's mapping of the row's plain decode step: (system,
    target arch, knobs, calibration, host time per step, time unit scale, stack name, decode span)."""
    out = []
    for _, m in rows.iterrows():
        spec = speculation(m)
        system, arch, kn, cal, host, scale, stack, span = decode_setup(dict(m, model=target_model(str(m["model"]))))
        verify = evaluate_sweep(system, arch, dataclasses.replace(kn, phase=Phase.PREFILL, seq_len=spec.k + 1), cal)
        draft = evaluate_sweep(system, draft_arch(spec, arch), kn, cal)
        step = float(verify["step_time_s"].iloc[0] + spec.k * draft["step_time_s"].iloc[0]) + host
        out.append({
            "case_id": m["case_id"], "system": system.name, "model": m["model"], "metric": m["metric"],
            "batch": int(float(m["batch"])), "input_len": m["input_len"], "output_len": m["output_len"],
            "weights": "bf16", "tp_chips": int(np.asarray(kn.tp)), "measured": float(m["value"]),
            "predicted": step / spec.tokens_per_step / scale, "unit": m["unit"],
            "note": (f"EAGLE3 speculative decoding as stated: draft {spec.draft}, k={spec.k}, E="
                     f"{spec.tokens_per_step:.2f}; step {step * 1e3:.2f} ms = verify {spec.k + 1} tokens "
                     f"{verify['step_time_s'].iloc[0] * 1e3:.2f} ms + {spec.k} x draft "
                     f"{draft['step_time_s'].iloc[0] * 1e3:.2f} ms + host {host * 1e3:.2f} ms ({stack}); "
                     f"decode span {span}")})
    df = pd.DataFrame(out)
    df["error_frac"] = (df["predicted"] - df["measured"]) / df["measured"]
    return df
