"""The residuals the error bars are built from: every development measurement through the model, by regime.

    build()      every predicted row of SOURCES (run through harness.run_cases, nothing fitted here) as one
                 residual r = ln(predicted / measured) with its regime keys (core/intervals.KEYS) and its model;
                 a serving corpus row pair (TTFT, TPOT of one deployment and load) also gives a throughput
                 residual, the closed loop's output tokens/s (frontier.closed_loop_y: C, O and the GPUs cancel):
                     r_y = ln((TTFT_m + (O - 1) TPOT_m) / (TTFT_p + (O - 1) TPOT_p))
                 a rate metric of a time quantity (single-batch decode tokens/s: 1 / TPOT) enters with its sign
                 turned (a rate's over-prediction is the time's under-prediction), a training time likewise
    regimes()    every key prefix holding MIN_ROWS residuals or more: centre c and scale h (core/intervals.py)
    scores()     each point scored against its regime built without its own model: |r - c| / h
    document()   the JSON written to hardware_specs/calibration/intervals.json: sources with their sha256 and
                 residual counts, the commit that built it, the regimes, the scores and the residual rows
    coverage()   leave one model out twice over: for each model, its points' intervals from the regimes and the
                 factor lambda both built without it; the share inside, per quantity and level (every model
                 weighing once, and by points), and the median width (high / low)

Which rows count (quantity by the metric's words and unit):
    ttft        TTFT / time to first token
    tpot        TPOT / ITL / inter-token / per-token latency; single-batch or per-user decode tokens/s (turned)
    throughput  serving output throughput (tokens/s of an instance, a GPU or a deployment)
    training    training tokens/s, TFLOP/s per GPU, MFU (rates); a step or run time (turned)
Other rows (collectives, kernels, end-to-end latency) carry no answer's error bar and are left out.

Does not: fit anything (the residuals are of the model as it stands; validate --build-intervals rewrites them).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.catalog import model_names, workload_files
from perfmodel.core import intervals as iv
from perfmodel.core import input_files, safe_write
from perfmodel.validation import harness
from perfmodel.validation.sources import inferencex_engine

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("reference/inferencex_serving_dev.csv", "reference/published_measurements.csv",
           "reference/neuron_trn2_vllm.csv", "reference/public_serving_dev.csv", "reference/training_public_dev.csv",
           "reference/neuron_public_dev.csv")
COMMAND = "perfmodel validate --build-intervals"
FILE = "hardware_specs/calibration/intervals.json"
SERVING_FAMILIES = ("inferencex", "serving-words", "neuron-latency", "serving-throughput")
TIME_UNITS = {"s", "ms", "us", "min", "h", "hours", "days"}
ENGINES = ("vllm", "trtllm", "sglang")


def _quantity(family: str, metric: str, unit: str) -> tuple[str, float]:
    """(quantity, sign) of a row: the residual enters as sign x ln(predicted / measured); '' for rows left out."""
    m, timed = metric.lower(), unit.strip() in TIME_UNITS
    if family in SERVING_FAMILIES:
        if "ttft" in m or "first token" in m:
            return ("ttft", 1.0) if timed else ("", 0.0)
        if re.search(r"tpot|itl|inter-token|per-token|per token", m):
            return ("tpot", 1.0) if timed else ("tpot", -1.0)
        if re.search(r"single-batch|per user|per-user", m) and not timed:
            return "tpot", -1.0
        if "throughput" in m and not timed:
            return "throughput", 1.0
        return "", 0.0
    if family == "training":
        return "training", (-1.0 if timed else 1.0)
    return "", 0.0


def _engine(family: str, hw: str, backend: str, note: str) -> str:
    if family == "training":
        return "training"
    if hw in ("trainium", "inferentia"):
        return "neuron"
    word = str(backend or "").strip().lower() or str(note).split(",")[0].strip().lower()
    return word if word in ENGINES else "other"


def _families_of(names: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(workload, model family) of each model name: the catalogue workload it means, or the name itself and
    'other' where none."""
    cache: dict[str, tuple[str, str]] = {}
    for n in set(names):
        w = model_names.resolve(n)[0] if n else ""
        cache[n] = (w, iv.model_family(workload_files.load_workload(w))) if w else (str(n), "other")
    return names.map(lambda n: cache[n][0]), names.map(lambda n: cache[n][1])


def keyed(df: pd.DataFrame, cases: pd.DataFrame) -> pd.DataFrame:
    """run_cases rows with finite positive predictions and measurements, each with its regime keys (KEYS),
    model, sign and residual (quantity '' for rows no answer's error bar rests on); `cases` the file's
    measurements indexed by case_id."""
    df = df[np.isfinite(df["predicted"]) & np.isfinite(df["measured"]) & (df["predicted"] > 0)
            & (df["measured"] > 0)].copy()
    q = [_quantity(f, str(m), str(u)) for f, m, u in zip(df["family"], df["metric"], df["unit"])]
    df["quantity"], df["sign"] = [a for a, _ in q], [b for _, b in q]
    df["residual"] = df["sign"] * np.log(df["predicted"] / df["measured"])
    base = df["case_id"].str.split("@").str[0]
    backend = df["backend"] if "backend" in df else pd.Series("", index=df.index)
    df["engine"] = [_engine(f, h, b, n) for f, h, b, n in zip(df["family"], df["hardware_family"],
                                                                backend.fillna(""), df["note"])]
    df["mode"] = df["mode"].fillna("agg").replace({"": "agg"}) if "mode" in df else "agg"
    names = df["workload"].fillna("") if "workload" in df else pd.Series("", index=df.index)
    names = names.where(names.ne(""), base.map(cases["model"]).fillna("").astype(str).str.split(":").str[0])
    df["model"], df["model_family"] = _families_of(names)
    conc = pd.to_numeric(df["concurrency"], errors="coerce") if "concurrency" in df else \
        pd.Series(np.nan, index=df.index)
    batch = pd.to_numeric(base.map(cases["batch"]) if "batch" in cases else np.nan, errors="coerce")
    conc = conc.fillna(batch).fillna(1.0)
    df["load"] = np.where(df["quantity"].eq("training"), "-", iv.load_bucket(conc))
    return df


def _rows(path: str) -> pd.DataFrame:
    """The residual rows of one measurements file (KEYS, model, residual)."""
    df = keyed(harness.run_cases(ROOT / path),
               harness.measurements(path=ROOT / path).drop_duplicates("case_id").set_index("case_id"))
    out = df[df["quantity"].ne("")]
    if "backend" in df:  # the serving corpus: each deployment's throughput from its TTFT and TPOT pair
        out = pd.concat([out, _throughput(df)], ignore_index=True)
    return out[list(iv.KEYS) + ["model", "residual"]]


def case_bounds(table: iv.IntervalTable, level: float, path=None):
    """A function of a run_cases frame (harness.sheets' `bounds`): predicted_low and predicted_high of each case
    at `level` from its regime in `table` (NaN where no answer's error bar covers its metric), in its unit."""
    def bounds(df: pd.DataFrame) -> pd.DataFrame:
        cases = harness.measurements(path=path).drop_duplicates("case_id").set_index("case_id")
        k = keyed(df, cases)
        k = k[k["quantity"].ne("")]
        lo = pd.Series(np.nan, index=df.index)
        hi = lo.copy()
        for q, g in k.groupby("quantity"):
            scores = table.scores.get(q)
            if scores is None:
                continue
            lam = scores.factor(level)
            for key, gg in g.groupby(list(iv.KEYS), sort=False):
                hit = table.regime(key)[1]
                if hit is None:
                    continue
                half = lam * hit[1] * gg["sign"].to_numpy()  # a turned metric's interval turns with it
                a = gg["predicted"] * np.exp(-(hit[0] * gg["sign"] + np.abs(half)))
                b = gg["predicted"] * np.exp(-(hit[0] * gg["sign"] - np.abs(half)))
                lo[gg.index], hi[gg.index] = a, b
        return pd.DataFrame({"predicted_low": lo, "predicted_high": hi})
    return bounds


def _throughput(df: pd.DataFrame) -> pd.DataFrame:
    key = df["case_id"].str.rsplit(":", n=1).str[0]
    t = df[df["quantity"].eq("ttft")].set_index(key[df["quantity"].eq("ttft")])
    p = df[df["quantity"].eq("tpot")].set_index(key[df["quantity"].eq("tpot")])
    both = t.index.intersection(p.index)
    t, p = t.loc[both], p.loc[both]
    o = np.array([inferencex_engine.mean_mix(int(i), int(n)).output_tokens for i, n in zip(p["isl"], p["osl"])],
                 dtype=float)
    r = np.log((t["measured"].to_numpy() + (o - 1) * p["measured"].to_numpy())
               / (t["predicted"].to_numpy() + (o - 1) * p["predicted"].to_numpy()))
    return p.reset_index(drop=True).assign(quantity="throughput", residual=r)


def _sha(path: str) -> str:
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()


def build(sources=SOURCES) -> tuple[pd.DataFrame, list[dict]]:
    """(residual rows sorted, per source: file, sha256, residuals)."""
    parts, meta = [], []
    for s in sources:
        r = _rows(s)
        parts.append(r)
        meta.append({"file": s, "sha256": _sha(s), "residuals": int(len(r))})
    rows = pd.concat(parts, ignore_index=True)
    rows["residual"] = rows["residual"].round(5)
    return rows.sort_values(list(iv.KEYS) + ["model", "residual"]).reset_index(drop=True), meta


def _commit() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def regimes(rows: pd.DataFrame) -> dict[tuple, tuple[float, float, int, int]]:
    """Every key prefix holding MIN_ROWS residuals or more: (c, h, rows, models)."""
    out = {}
    for depth in range(1, len(iv.KEYS) + 1):
        for key, g in rows.groupby(list(iv.KEYS[:depth]), sort=True):
            if len(g) >= iv.MIN_ROWS:
                c, h = iv.centre_scale(g["residual"].to_numpy())
                out[key if isinstance(key, tuple) else (key,)] = (c, h, int(len(g)), int(g["model"].nunique()))
    return out


def scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Every point's leave-one-model-out score (module doc): quantity, model, score, and the half-width h of the
    regime it was scored against (each model's regimes built once, without it)."""
    parts = []
    for m in sorted(rows["model"].unique()):
        t = iv.IntervalTable(regimes(rows[rows["model"].ne(m)]))
        for key, g in rows[rows["model"].eq(m)].groupby(list(iv.KEYS), sort=False):
            _, hit = t.regime(key)
            if hit is not None:
                c, h = hit[0], hit[1]
                parts.append(pd.DataFrame({"quantity": key[0], "model": m, "half": h,
                                           "score": np.abs(g["residual"].to_numpy() - c) / h}))
    return pd.concat(parts, ignore_index=True)


def document(rows: pd.DataFrame, meta: list[dict]) -> dict:
    """The intervals file's content (catalog/interval_files.py reads it)."""
    s = scores(rows).round({"score": 5})  # (half stays out of the file: the regimes give it)
    return {"schema_version": 1, "built_by": COMMAND, "commit": _commit(), "min_rows": iv.MIN_ROWS,
            "keys": list(iv.KEYS), "sources": meta,
            "regimes": [{"key": list(k), "centre": round(c, 5), "half": round(h, 5), "rows": n, "models": m}
                        for k, (c, h, n, m) in regimes(rows).items()],
            "scores": {c: s[c].tolist() for c in ("quantity", "model", "score")},
            "rows": {c: rows[c].tolist() for c in list(iv.KEYS) + ["model", "residual"]}}


def coverage(rows: pd.DataFrame, levels=(0.8, 0.9)) -> pd.DataFrame:
    """Leave one model out (module doc): per quantity and level, points, coverage (every model weighing once: the
    model is the exchangeable unit; and by points, where the models with most rows weigh most) and the median
    width high / low, exp(2 lambda h). A point lies inside its interval where its score <= lambda, lambda from
    the other models' scores."""
    s = scores(rows)
    out = []
    for level in levels:
        for q, sq in s.groupby("quantity", sort=True):
            hits, weights, widths = [], [], []
            for m, mine in sq.groupby("model", sort=True):
                others = sq[sq["model"].ne(m)]
                lam = iv.Scores(others["score"].to_numpy(float), others["model"].to_numpy(object)).factor(level)
                hits.append(mine["score"].to_numpy() <= lam)
                weights.append(np.full(len(mine), 1.0 / len(mine)))
                widths.append(np.exp(2 * lam * mine["half"].to_numpy()))
            h, w = np.concatenate(hits).astype(float), np.concatenate(weights)
            out.append({"quantity": q, "level": level, "points": len(h), "models": int(sq["model"].nunique()),
                        "coverage": float((h * w).sum() / w.sum()), "coverage_by_points": float(h.mean()),
                        "median_width_high_over_low": float(np.median(np.concatenate(widths)))})
    return pd.DataFrame(out)


def dumps(doc: dict) -> str:
    """The document as JSON a reader can scan: one line per field, per regime and per column of scores and rows."""
    def one(v) -> str:
        return json.dumps(v, separators=(", ", ": "), ensure_ascii=False)

    lines = []
    for k, v in doc.items():
        if k == "regimes":
            inner = ",\n".join(f"  {one(r)}" for r in v)
            lines.append(f' "{k}": [\n{inner}\n ]')
        elif isinstance(v, dict):
            inner = ",\n".join(f'  "{c}": {one(col)}' for c, col in v.items())
            lines.append(f' "{k}": {{\n{inner}\n }}')
        else:
            lines.append(f' "{k}": {one(v)}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write(path: Path | str | None = None) -> tuple[Path, dict]:
    """Build the residuals and write the intervals file (default FILE); (path, document)."""
    rows, meta = build()
    doc = document(rows, meta)
    out = Path(path) if path else ROOT / FILE
    safe_write.write_text(out, dumps(doc))
    return out, doc


def read_rows(doc: dict | None = None) -> dict:
    """The residual rows of a document, or of the shipped intervals file."""
    if doc is None:
        doc = json.loads(input_files.read_text(ROOT / FILE, "intervals file"))
    return doc["rows"]
