"""Benchmark: perfmodel vs NVIDIA's aiconfigurator on the measured serving rows of the development split.

    python bench/bench_aiconfigurator.py [--limit N] [--reinstall]

The rows: reference/inferencex_serving_dev.csv (measured mean TTFT and TPOT of LLM serving
deployments on H100 / H200 / B200 / GB200, trtllm / vllm / sglang, agg and disagg; the columns
are described in ../shared/reference/measured/README.md). --limit N runs a fixed random sample of
N rows (seed 0) for a quick look. perfmodel predicts every row through its validation harness
(perfmodel.validation.harness.run_cases). aiconfigurator (PyPI `aiconfigurator`, pinned in PEERS)
is installed with pip into its own throwaway virtual environment, bench/.peers/aiconfigurator/
(git-ignored; never a perfmodel dependency), and runs bench/aiconfigurator_worker.py there, which
feeds each row to aiconfigurator's single-point estimate (`cli_estimate`, what `aiconfigurator cli
estimate` runs): agg rows with the row's plan and per-rank batch size, disagg rows with the row's
prefill / decode plans, batch sizes and worker counts. If aiconfigurator fails to install or run,
the reason is printed and the benchmark still ends with exit status 0.

Prints, for each tool: the rows it predicts, the TTFT and TPOT median and 90th-percentile
|relative error| against the measured silicon_ttft_ms / silicon_tpot_ms (and the median signed
error), and the time per point (wall seconds of the whole prediction run / rows given to it);
first on the rows both tools predict, then each on every row it predicts; then the same errors
broken down by backend and mode, and by system, on the rows both predict; and the rows
aiconfigurator could not express, grouped by reason, with the first few row ids. All figures are
measured in this run; timing lives here, never in unit tests.

Data rule: the rows come from aiconfigurator's repository (its silicon_sample.csv); the rest of that
file is held out. This benchmark never opens a silicon_sample* file nor any other measured data
shipped with aiconfigurator (the worker's audit hook refuses such opens); aiconfigurator predicts
from its kernel perf databases only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from peer_venv import ensure_peer  # bench/ is on the path of a bench script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CSV = ROOT / "reference" / "inferencex_serving_dev.csv"
WORKER = HERE / "aiconfigurator_worker.py"
TOOL = "aiconfigurator"
# PyPI name -> pinned version (the version this benchmark was written against)
PEERS = {TOOL: "aiconfigurator==0.12.0"}
METRICS = {"ttft": "silicon_ttft_ms", "tpot": "silicon_tpot_ms"}
SHOW_IDS = 3  # row ids shown per unexpressed reason


def machine_load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def load_rows(limit: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(typed rows, the same rows as text, as the file has them), all or a fixed sample of `limit`."""
    typed = pd.read_csv(CSV)
    text = pd.read_csv(CSV, dtype=str, keep_default_na=False)
    if limit is not None and limit < len(typed):
        keep = np.sort(np.random.default_rng(0).choice(len(typed), size=limit, replace=False))
        typed, text = typed.iloc[keep], text.iloc[keep]
    return typed.reset_index(drop=True), text.reset_index(drop=True)


# ---------------------------------------------------------------- perfmodel


def perfmodel_predict(text: pd.DataFrame, full: bool) -> dict:
    """perfmodel's TTFT / TPOT (ms) per row id (NaN: not expressed), the wall and CPU seconds of run_cases."""
    from perfmodel.validation.harness import run_cases

    with tempfile.TemporaryDirectory() as tmp:
        path = CSV
        if not full:  # the sampled rows, byte-for-byte as text
            path = Path(tmp) / CSV.name
            text.to_csv(path, index=False)
        t0, c0 = time.perf_counter(), time.process_time()
        df = run_cases(str(path))
        seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    parts = df["case_id"].str.split("@").str[0].str.rsplit(":", n=1)
    df = df.assign(row_id=parts.str[0], metric_key=parts.str[1])
    pred = {}
    for m in METRICS:
        sub = df[df["metric_key"] == m]
        pred[m] = pd.Series(sub["predicted"].to_numpy(dtype=float), index=sub["row_id"]).groupby(level=0).first()
    return {"pred": pred, "seconds": seconds, "cpu_s": cpu_s}


# ---------------------------------------------------------------- aiconfigurator (own venv, subprocess)


def run_peer(py: Path, typed: pd.DataFrame, timeout_s: float) -> tuple[dict | None, str]:
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job.write_text(json.dumps({"rows": json.loads(typed.to_json(orient="records"))}))
        t0 = time.perf_counter()
        try:
            r = subprocess.run([str(py), str(WORKER), str(job), str(out)], capture_output=True, text=True,
                               check=False, timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            return None, f"worker timed out after {timeout_s:.0f} s"
        if r.returncode or not out.exists():
            tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()][-1:]
            return None, f"worker failed (exit {r.returncode}): {' '.join(tail)}"
        res = json.loads(out.read_text())
        res["process_s"] = time.perf_counter() - t0
        return res, ""


# ---------------------------------------------------------------- statistics and report


def rel_err(pred: pd.Series, meas: pd.Series) -> pd.Series:
    return (pred - meas) / meas


def stats(err: pd.Series) -> tuple[int, float, float, float]:
    e = err.dropna()
    if e.empty:
        return 0, np.nan, np.nan, np.nan
    a = e.abs()
    return len(e), float(a.median()), float(np.percentile(a, 90)), float(e.median())


def _pct(v: float) -> str:
    return "-" if not np.isfinite(v) else f"{100 * v:.0f}%"


def _stat_cells(err: pd.Series) -> str:
    n, med, p90, bias = stats(err)
    return f"{n:>6} {_pct(med):>7} {_pct(p90):>7} {_pct(bias):>7}"


STAT_HEAD = f"{'n':>6} {'med|e|':>7} {'p90|e|':>7} {'med e':>7}"


def summary_table(title: str, errs: dict[str, dict[str, pd.Series]], rows_pred: dict[str, int],
                  per_point: dict[str, float]) -> None:
    print(f"\n{title}")
    print(f"{'tool':16} {'rows':>5}   TTFT {STAT_HEAD}   TPOT {STAT_HEAD}   {'ms/point':>9}")
    for tool, e in errs.items():
        print(f"{tool:16} {rows_pred[tool]:>5}   {'':4} {_stat_cells(e['ttft'])}   {'':4} {_stat_cells(e['tpot'])}"
              f"   {1e3 * per_point[tool]:>9.2f}")


def breakdown(title: str, keys: pd.DataFrame, errs: dict[str, dict[str, pd.Series]]) -> None:
    """Median / p90 |error| of each tool per group of rows (keys: one column or several, index = row ids)."""
    print(f"\n{title}")
    tools = list(errs)
    head = f"{'group':24} {'rows':>5}"
    for m in METRICS:
        for t in tools:
            head += f"  {m.upper() + ' ' + t[:14]:>22}"
    print(head + "\n" + f"{'':30}" + "".join(f"  {'med / p90 |e|':>22}" for _ in range(len(METRICS) * len(tools))))
    cols = list(keys.columns)
    for grp, idx in keys.groupby(cols if len(cols) > 1 else cols[0]).groups.items():
        label = " ".join(map(str, grp)) if isinstance(grp, tuple) else str(grp)
        line = f"{label:24} {len(idx):>5}"
        for m in METRICS:
            for t in tools:
                _, med, p90, _ = stats(errs[t][m].reindex(idx))
                line += f"  {_pct(med) + ' / ' + _pct(p90):>22}"
        print(line)


def unexpressed_report(res: dict, typed: pd.DataFrame) -> None:
    failed = [r for r in res["rows"] if r["error"]]
    print(f"\naiconfigurator could not express {len(failed)} of {len(typed)} rows, by reason "
          f"(numbers shown as N to group; first {SHOW_IDS} row ids):")
    groups: dict[str, list] = {}
    for r in failed:
        groups.setdefault(re.sub(r"(?<![A-Za-z\d.])\d+(?:\.\d+)?", "N", r["error"])[:200], []).append(r)
    by_id = typed.set_index("id")
    for key, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        cells = by_id.loc[[r["id"] for r in rs], ["system", "backend", "mode"]]
        where = ", ".join(f"{k[0]}/{k[1]}/{k[2]} {v}" for k, v in cells.value_counts().sort_index().items())
        print(f"{len(rs):>5}  {key}\n       [{where}]\n       e.g. {', '.join(r['id'] for r in rs[:SHOW_IDS])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="run a fixed random sample of N rows (seed 0)")
    ap.add_argument("--reinstall", action="store_true", help="recreate aiconfigurator's virtual environment")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds the aiconfigurator worker may run")
    args = ap.parse_args()

    typed, text = load_rows(args.limit)
    full = args.limit is None or args.limit >= len(pd.read_csv(CSV, usecols=["id"]))
    counts = typed.groupby(["backend", "mode"]).size()
    print(f"rows: {len(typed)} of {CSV.relative_to(ROOT)}{'' if full else ' (fixed sample, seed 0)'}: "
          + ", ".join(f"{b} {m} {n}" for (b, m), n in counts.items()), flush=True)
    meas = {m: pd.Series(typed[c].to_numpy(dtype=float), index=typed["id"]) for m, c in METRICS.items()}
    ids = pd.Index(typed["id"])

    pm = perfmodel_predict(text, full)
    errs = {"perfmodel": {m: rel_err(pm["pred"][m].reindex(ids), meas[m]) for m in METRICS}}
    per_point = {"perfmodel": pm["seconds"] / len(typed)}
    print(f"perfmodel: perfmodel.validation.harness.run_cases: {pm['seconds']:.1f} s wall, {pm['cpu_s']:.1f} s CPU "
          f"for {len(typed)} rows", flush=True)

    res = None
    py, note = ensure_peer(TOOL, PEERS[TOOL], args.reinstall)
    if py is None:
        print(f"{TOOL}: not run: {note}", flush=True)
    else:
        res, err = run_peer(py, typed, args.timeout)
        if res is None:
            print(f"{TOOL}: not run: {err}", flush=True)
    if res is not None:
        got = pd.DataFrame(res["rows"]).set_index("id")
        errs[TOOL] = {m: rel_err(got[f"{m}_ms"].astype(float).reindex(ids), meas[m]) for m in METRICS}
        per_point[TOOL] = res["seconds"] / len(typed)
        print(f"{TOOL} {res['version']} ({note}): {res['api']}")
        print(f"  {res['seconds']:.1f} s wall, {res['cpu_s']:.1f} s CPU for {len(typed)} rows (import "
              f"{res['import_s']:.1f} s and process start not counted; whole worker process {res['process_s']:.1f} s)")
        print("  perf databases used (its current slot per system/backend; 0.12.0 accepts no engine version "
              "outside its current/previous/next slots, so the rows' own engine versions are not used): "
              + ", ".join(f"{k} {v}" for k, v in sorted(res["db_versions"].items())))
        if res["aliases"]:
            print("  model configs used for ids it does not bundle (same architecture): "
                  + ", ".join(f"{k} -> {v}" for k, v in sorted(res["aliases"].items())))
        kv = sum(1 for r in res["rows"] if r["kv_warning"])
        if kv:
            print(f"  {kv} predicted row(s) carry its warning that the batch exceeds its KV-cache capacity")

    print(f"\n{machine_load()}")
    print("errors: e = (predicted - measured) / measured; med|e| and p90|e| = median and 90th percentile of |e|; "
          "med e = median signed e;\nms/point = wall time of the tool's whole prediction run / rows given to it"
          + ("" if full else " (with --limit, each tool's fixed start-up cost dominates it)"))
    predicted = {t: pd.Series(True, index=ids).where(e["ttft"].notna() | e["tpot"].notna(), False)
                 for t, e in errs.items()}
    if TOOL in errs:
        both = {m: errs["perfmodel"][m].notna() & errs[TOOL][m].notna() for m in METRICS}
        both_rows = both["ttft"] | both["tpot"]
        summary_table("on the rows both tools predict (per metric: where both predict it)",
                      {t: {m: e[m].where(both[m]) for m in METRICS} for t, e in errs.items()},
                      {t: int(both_rows.sum()) for t in errs}, per_point)
    summary_table("each tool on every row it predicts", errs, {t: int(p.sum()) for t, p in predicted.items()},
                  per_point)
    if TOOL in errs:
        shared = {t: {m: e[m].where(both[m]) for m in METRICS} for t, e in errs.items()}
        keys = typed.set_index("id")
        sub = keys.loc[both_rows[both_rows].index]
        breakdown("by backend and mode, rows both predict", sub[["backend", "mode"]], shared)
        breakdown("by system, rows both predict", sub[["system"]], shared)
        cover = pd.DataFrame({t: p for t, p in predicted.items()}).join(keys[["backend", "mode"]])
        print("\nrows predicted per backend and mode (of the rows given):")
        for (b, m), g in cover.groupby(["backend", "mode"]):
            print(f"  {b:7} {m:7} {len(g):>5} rows: perfmodel {int(g['perfmodel'].sum()):>5}, "
                  f"{TOOL} {int(g[TOOL].sum()):>5}, both {int((g['perfmodel'] & g[TOOL]).sum()):>5}")
        unexpressed_report(res, typed)


if __name__ == "__main__":
    main()
