"""Frontier fidelity: the model's searched serving frontier against the frontier measured engines deliver.

A planner reads answers off a search (pareto, plan, report), not at measured configurations, so the check that
matters is the frontier. From any measured serving file in the InferenceX format (inferencex.py):

    measured point   x = 1 / TPOT (output tokens/s per user);
                     y = C O / (TTFT + (O - 1) TPOT) / GPUs (output tokens/s per GPU of a closed loop of C clients:
                     each finishes a request of O tokens every TTFT + (O - 1) TPOT; O the protocol's mean length)
                     GPUs: the row's replica (agg) or prefill and decode pools with their worker counts (disagg);
                     a disagg row that gives no worker counts has no GPU count and joins no frontier
    measured frontier the points of a (system, model, input length, output length) group not dominated in (x, y):
                     every backend, mode and precision together (model: the catalogue workload a Hugging Face id
                     maps to, so a checkpoint's re-quantisations and an identical architecture's ids join one
                     group; the id itself where none)
    model frontiers  per group, serving.search over every plan and concurrency in the storage types the group's
                     measured rows ran (weights and routed experts, as inferencex_map reads each row's quant
                     columns: a group measured only in BF16 is compared with the model's BF16 frontier, not
                     with the FP8 one the hardware would also run), aggregated serving, the protocol's mean
                     lengths:
                       roofline  no engine (`engine` ""): the hardware's upper bound
                       engine    each engine the group's rows measured (known profiles; else the system's
                                 default engine, serving_engines.default_for) with its profile, restricted to
                                 that engine's measured envelope (serving/envelope.py), the best of them at
                                 each interactivity: what today's engines deliver, engine for engine as the
                                 measured frontier joins them
                       configs   the model at the measured configurations only: each measured row's plan and
                                 concurrency predicted (inferencex.predict: its engine, the client protocol) and
                                 their frontier; the gap between it and `engine` is what the search finds beyond
                                 the configurations measured, the gap between it and 1 the model's own error
    ratio            at each measured frontier point, the best modelled y at interactivity >= its x, over the
                     measured y (NaN where the model's frontier does not reach that interactivity)

    groups(...)  one row per group: points, frontier points, median ratio of each model frontier
    points(...)  one row per measured frontier point with both ratios
    summary(...) the median over groups of |ratio - 1| and the geometric mean ratio, per frontier

Does not: fit anything (the envelope and the engine are read from the engine profiles' file).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import neuron_stacks, serving_engines, workload_files
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.dtypes import DType
from perfmodel.serving import closed_loop, envelope, search
from perfmodel.serving.steady_state import Mix
from perfmodel.validation import harness
from perfmodel.validation.sources import inferencex, inferencex_engine
from perfmodel.validation.sources.inferencex_map import map_rows

KEYS = ["system", "model", "isl", "osl"]
Y = "output_tokens_per_s_per_chip"
FRONTIERS = ("engine", "roofline", "configs")


def _gpus(m: pd.DataFrame) -> np.ndarray:
    """GPUs of each mapped row: the replica (agg) or both pools x their worker counts (disagg; NaN if not given)."""
    out = np.full(len(m), np.nan)
    for j, (mode, pools, workers, n_pre) in enumerate(zip(m["mode"], m["pools"], m["workers"], m["n_pre"])):
        if mode == "agg" and pools.get("agg") is not None:
            out[j] = pools["agg"].chips
        elif mode == "disagg" and None not in (pools.get("prefill"), pools.get("decode")) \
                and pd.notna(workers) and pd.notna(n_pre):
            out[j] = pools["prefill"].chips * n_pre + pools["decode"].chips * workers
    return out


def closed_loop_y(clients, output_tokens, ttft_s, tpot_s, gpus):
    """Output tokens/s per GPU of a closed loop of C clients: each finishes O tokens every TTFT + (O - 1) TPOT
    (serving/closed_loop.THROUGHPUT)."""
    return closed_loop.evaluate("throughput", C=clients, O=output_tokens, T_1=ttft_s, T_2=tpot_s, G=gpus)


def measured_points(src: pd.DataFrame) -> pd.DataFrame:
    """Every measured row as a frontier point (x, y) with its group and whether it is on its group's frontier."""
    src = src.reset_index(drop=True)
    m = map_rows(src)
    m["n_pre"] = pd.to_numeric(src.get("prefill_num_workers", pd.Series(np.nan, index=src.index)), errors="coerce")
    m.loc[m["mode"].eq("agg"), "n_pre"] = 1.0
    ttft = pd.to_numeric(src["silicon_ttft_ms"], errors="coerce").to_numpy() / 1e3
    tpot = pd.to_numeric(src["silicon_tpot_ms"], errors="coerce").to_numpy() / 1e3
    isl, osl = pd.to_numeric(src["isl"], errors="coerce"), pd.to_numeric(src["osl"], errors="coerce")
    o_mean = np.asarray([inferencex_engine.mean_mix(int(i), int(o)).output_tokens if np.isfinite(i + o) else np.nan
                         for i, o in zip(isl, osl)], dtype=float)
    gpus = _gpus(m)
    total = pd.to_numeric(m["total"], errors="coerce").to_numpy(float)
    pts = pd.DataFrame({"id": src["id"], "system": src["system"].astype(str).str.strip(),
                        "model": m["workload"].where(m["workload"].ne(""), src["model_path"].astype(str).str.strip()),
                        "isl": isl, "osl": osl,
                        "catalog_system": m["system"], "workload": m["workload"], "backend": src["backend"],
                        "mode": m["mode"], "concurrency": total, "gpus": gpus,
                        "types": [f"{DType(w).value}/{DType(e).value}" if isinstance(w, str) and isinstance(e, str) else ""
                                  for w, e in zip(m["weights"], m["experts"])],
                        "output_mean": o_mean, "tokens_per_s_per_user": 1.0 / tpot,
                        "measured_tokens_per_s_per_gpu": closed_loop_y(total, o_mean, ttft, tpot, gpus)})
    ok = np.isfinite(pts["tokens_per_s_per_user"]) & np.isfinite(pts["measured_tokens_per_s_per_gpu"])
    pts["on_frontier"] = False
    for _, idx in pts[ok].groupby(KEYS, sort=False).indices.items():
        sub = pts[ok].index[idx]
        pts.loc[sub, "on_frontier"] = search.pareto_mask(pts.loc[sub, "tokens_per_s_per_user"],
                                                         pts.loc[sub, "measured_tokens_per_s_per_gpu"])
    return pts


def coverage(src: pd.DataFrame, by_chip: bool = False) -> pd.DataFrame:
    """What the measured deployments of each backend (and, by_chip, each backend on each catalogue chip) cover
    (the envelope's values, engines.toml [envelopes]): max_running, the most requests in flight per replica (an
    aggregated replica, or a disaggregated decode worker where the row gives the worker count); max_attention_dp,
    the largest attention-DP degree of an aggregated replica or a decode worker (blank or 0 = 1); rows and
    models. A decode worker runs the engine's decode scheduler on its ranks as an aggregated replica does."""
    src, m = src.reset_index(drop=True), map_rows(src.reset_index(drop=True))
    agg = m["mode"].eq("agg") & m["pools"].map(lambda p: p.get("agg") is not None)
    dec = m["mode"].eq("disagg") & m["pools"].map(lambda p: p.get("decode") is not None)
    use = agg | dec
    pool = np.where(agg, "agg", "decode")
    total = pd.to_numeric(m["concurrency"], errors="coerce")
    workers = pd.to_numeric(m["workers"], errors="coerce").where(dec, 1.0)
    chips = {s: catalog.load_system(s).chip.name for s in set(m.loc[use, "system"]) if s}
    a = pd.DataFrame({"backend": src["backend"].astype(str).str.strip(), "chip": m["system"].map(chips),
                      "da": [p[k].da if u else np.nan for p, k, u in zip(m["pools"], pool, use)],
                      "running": total / workers, "workload": m["workload"]})[use]
    return a.groupby(["backend", "chip"] if by_chip else "backend").agg(
        max_running=("running", "max"), max_attention_dp=("da", "max"), rows=("da", "size"),
        models=("workload", lambda w: ", ".join(sorted(set(w)))))


def model_frontier(system, arch, mix: Mix, engine: str, env=None, types=None, progress=None,
                   replaced: Replacements = NONE) -> pd.DataFrame:
    """The model's per-chip frontier of every aggregated plan (search.frontier_sweep, as `pareto` searches by
    default), with the engine's profile (engine "" = the roofline); where `env` is given, only the points inside
    that measured envelope; where `types` is given ("weights/experts" storage-type names), only plans storing
    those types."""
    dtypes = sorted({t.split("/")[0] for t in types}) if types else None  # NVFP4 is not in the default sweep
    df = search.frontier_sweep(system, arch, mix, software=neuron_stacks.software(engine, system, replaced),
                               progress=progress,
                               dtypes=dtypes)
    keep = envelope.inside(df, env) if env is not None else np.ones(len(df), dtype=bool)
    if types:
        keep &= (df["weights_dtype"] + "/" + df["expert_weights_dtype"]).isin(list(types)).to_numpy()
    return search.frontier(search.mark_frontiers(df[keep].reset_index(drop=True)), "chip")


def configs_frontier(pts: pd.DataFrame, src: pd.DataFrame, replaced: Replacements = NONE) -> pd.DataFrame:
    """The model at the measured configurations only: every row's plan and concurrency predicted (inferencex.predict,
    TTFT and TPOT with its engine and the client protocol) as a point (x, y), on its group's frontier or not."""
    pred = inferencex.predict(src.reset_index(drop=True), replaced)
    tpot, ttft = pred["tpot_ms"].to_numpy(float) / 1e3, pred["ttft_ms"].to_numpy(float) / 1e3
    out = pts[KEYS].assign(**{search.X: 1.0 / tpot, Y: closed_loop_y(pts["concurrency"].to_numpy(float),
                                                                     pts["output_mean"].to_numpy(float), ttft, tpot,
                                                                     pts["gpus"].to_numpy(float))})
    out = out[np.isfinite(out[search.X]) & np.isfinite(out[Y])]
    keep = np.zeros(len(out), dtype=bool)
    for _, idx in out.groupby(KEYS, sort=False).indices.items():
        keep[idx] = search.pareto_mask(out[search.X].iloc[idx], out[Y].iloc[idx])
    return out[keep]


def points(src: pd.DataFrame, progress=None, replaced: Replacements = NONE) -> pd.DataFrame:
    """One row per measured frontier point: measured y, each model frontier's best y at its x, and their ratio."""
    pts = measured_points(src)
    by_group = dict(list(configs_frontier(pts, src, replaced).groupby(KEYS)))
    front = pts[pts["on_frontier"]].copy()
    for f in FRONTIERS:
        front[f"{f}_tokens_per_s_per_gpu"] = np.nan
    front["engine"] = ""
    groups = list(front.groupby(KEYS, sort=False))
    kinds = pts.groupby(KEYS)["types"].agg(set)
    backends = pts.groupby(KEYS)["backend"].agg(lambda b: set(b.astype(str).str.strip()))
    for n, (key, g) in enumerate(groups):
        sysname, wname = g["catalog_system"].iloc[0], g["workload"].iloc[0]
        if sysname and wname:
            system = catalog.load_system(sysname, replaced=replaced)
            arch = workload_files.load_workload(wname)
            mix = inferencex_engine.mean_mix(int(g["isl"].iloc[0]), int(g["osl"].iloc[0]))
            types = kinds[key] - {""}  # every measured row's types, on the frontier or not
            engines = (sorted(backends[key] & set(serving_engines.engines(replaced=replaced)))
                       or [serving_engines.default_for(system)])
            x = g["tokens_per_s_per_user"]
            best = [search.best_at(model_frontier(system, arch, mix, e, serving_engines.envelope(e, system.chip.name),
                                                    types, replaced=replaced), Y, x)
                    for e in engines]
            front.loc[g.index, "engine_tokens_per_s_per_gpu"] = np.fmax.reduce(best)
            roof = model_frontier(system, arch, mix, "", None, types, replaced=replaced)
            front.loc[g.index, "roofline_tokens_per_s_per_gpu"] = search.best_at(roof, Y, x)
        mine = by_group.get(key)
        if mine is not None:
            front.loc[g.index, "configs_tokens_per_s_per_gpu"] = search.best_at(mine, Y, g["tokens_per_s_per_user"])
            front.loc[g.index, "engine"] = "+".join(engines)
        if progress:
            progress(n + 1, len(groups))
    for f in FRONTIERS:
        front[f"{f}_ratio"] = front[f"{f}_tokens_per_s_per_gpu"] / front["measured_tokens_per_s_per_gpu"]
    return front.reset_index(drop=True)


def _gmean(r: pd.Series) -> float:
    r = r.dropna()
    return float(np.exp(np.log(r).mean())) if len(r) else np.nan


def groups(front: pd.DataFrame) -> pd.DataFrame:
    """Per group: its measured frontier points, the engine used and each frontier's median and geometric mean
    ratio over the points it reaches."""
    rows = []
    for key, g in front.groupby(KEYS, sort=True):
        row = dict(zip(KEYS, key), engine=g["engine"].iloc[0], frontier_points=len(g),
                   best_measured_tokens_per_s_per_gpu=g["measured_tokens_per_s_per_gpu"].max())
        for f in FRONTIERS:
            r = g[f"{f}_ratio"]
            row[f"{f}_median_ratio"] = float(r.median()) if r.notna().any() else np.nan
            row[f"{f}_gmean_ratio"] = _gmean(r)
        rows.append(row)
    return pd.DataFrame(rows)


def summary(per_group: pd.DataFrame) -> pd.DataFrame:
    """Over groups, per frontier: groups predicted, median |median ratio - 1|, geometric mean of the groups'
    median ratios, and the share of groups within 20%."""
    rows = []
    for f in FRONTIERS:
        r = per_group[f"{f}_median_ratio"].dropna()
        rows.append({"frontier": f, "groups": len(per_group), "predicted": len(r),
                     "median_abs_ratio_minus_1": float((r - 1).abs().median()) if len(r) else np.nan,
                     "gmean_ratio": _gmean(r), "within_20pct_frac": float(((r - 1).abs() <= 0.2).mean())
                     if len(r) else np.nan})
    return pd.DataFrame(rows)


def rows_of(path) -> pd.DataFrame:
    """The measured serving rows of a measurements file (one per deployment and load); ValueError (one line)
    when the file is not serving rows in the InferenceX format."""
    cases = harness.measurements(path=path)
    if "format" not in cases.columns or not cases["format"].eq(inferencex.FORMAT).any():
        raise ValueError(f"{path or harness.CSV}: --show frontier needs measured serving rows in the InferenceX "
                         f"format (columns {', '.join(inferencex.COLUMNS[:6])}, ...)")
    return cases[cases["format"].eq(inferencex.FORMAT)].drop_duplicates("id").reset_index(drop=True)


def sheets(src: pd.DataFrame, progress=None, replaced: Replacements = NONE) -> dict[str, pd.DataFrame]:
    """What `validate --show frontier` shows: the summary, the per-group table and every measured frontier point."""
    front = points(src, progress, replaced)
    per_group = groups(front)
    cols = KEYS + ["backend", "mode", "concurrency", "gpus", "tokens_per_s_per_user", "measured_tokens_per_s_per_gpu",
                   "engine"] + [f"{f}_{c}" for f in FRONTIERS for c in ("tokens_per_s_per_gpu", "ratio")]
    return {"frontier_summary": summary(per_group), "frontier_groups": per_group, "frontier_points": front[cols]}
