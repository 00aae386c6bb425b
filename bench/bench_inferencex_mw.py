"""Tokens per all-in MW on InferenceX's definition, like for like: the development rows of GPT-OSS-120B at
1k in / 8k out (aggregated serving, H100 and B200) against perfmodel's prediction of the same rows.

    python bench/bench_inferencex_mw.py

Per row, total tokens/s per GPU = concurrency x (I + O) / (TTFT + (O - 1) TPOT) / GPUs, from the measured and
from the predicted TTFT / TPOT (validation.inferencex.predict); each set's Pareto frontier (interactivity
1/TPOT vs tokens/s per GPU) read at 90 tokens/s/user (left of a frontier: its first point, which is faster);
per all-in MW = x 1000 / all-in kW per GPU: InferenceX's published constant for the measured rows
(reference/inferencex_all_in_power.csv, 2026 registry), perfmodel's build-up (serving/power.py) for the
predicted ones. InferenceX's own published tokens per MW aggregate rows kept aside for independent checks,
so they are not read here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog.calibration import calibration_for
from perfmodel.serving import power, search
from perfmodel.validation.sources.inferencex import predict

X_REF = 90.0  # tokens/s per user
SYSTEMS = {"h100_sxm": "p5.48xlarge", "b200_sxm": "p6-b200.48xlarge"}


def per_gpu(rows: pd.DataFrame, ttft_ms, tpot_ms) -> pd.Series:
    requests_per_s = rows["batch_size"] / ((ttft_ms + (rows["osl"] - 1) * tpot_ms) / 1e3)
    return requests_per_s * (rows["isl"] + rows["osl"]) / (rows["tp_size"] * rows["attention_dp_size"])


def read(x, y, x0: float = X_REF) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    m = search.pareto_mask(x, y)
    order = np.argsort(x[m])
    lx, ly = np.log(x[m][order]), np.log(y[m][order])
    return float(np.exp(np.interp(np.log(x0), lx, ly, left=ly[0], right=np.nan)))


def main() -> None:
    root = catalog.catalog_root() / "reference"
    dev = pd.read_csv(root / "inferencex_serving_dev.csv")
    kw = pd.read_csv(root / "inferencex_all_in_power.csv")
    kw = kw[kw["version"] == "registry 2026"].set_index("system")["all_in_kw_per_gpu"]
    for key, name in SYSTEMS.items():
        rows = dev[(dev["model_path"] == "openai/gpt-oss-120b") & (dev["isl"] == 1024) & (dev["osl"] == 8192)
                   & (dev["mode"] == "agg") & (dev["system"] == key)].reset_index(drop=True)
        pred = predict(rows)
        system = catalog.load_system(name)
        kw_model = power.all_in_w_per_chip(system, calibration_for(system).with_overrides(
            {"power_basis_all_in": 1})) / 1e3
        measured = read(1e3 / rows["silicon_tpot_ms"], per_gpu(rows, rows["silicon_ttft_ms"], rows["silicon_tpot_ms"]))
        modelled = read(1e3 / pred["tpot_ms"], per_gpu(rows, pred["ttft_ms"], pred["tpot_ms"]))
        m_mw, p_mw = measured * 1e3 / kw[name], modelled * 1e3 / kw_model
        print(f"{name}: {len(rows)} rows; at {X_REF:g} tokens/s/user measured {measured:,.0f} tokens/s/GPU -> "
              f"{m_mw:,.0f} per all-in MW ({kw[name]} kW); predicted {modelled:,.0f} -> {p_mw:,.0f} "
              f"({kw_model:.2f} kW); ratio {p_mw / m_mw:.2f} (throughput {modelled / measured:.2f}, "
              f"power {kw[name] / kw_model:.2f})")


if __name__ == "__main__":
    main()
