"""Tidy frames behind the CLI, the app and notebooks: one scenario with what-ifs, chart data, page data.

    load(system, workload, whatif)   System, workload and calibration with what-if overrides
    run_scenario(loaded, options)    one scenario on one system: Result, footprint, minimum fit,
                                     and the four workbook sheets (inputs, results, per_operator,
                                     provenance)
    scenario_page(system, workload, options, whatif)
                                     everything the app's roofline and memory pages show
    roofline_frames / engine_frame / memory_frames / bound_shares
                                     the data of each chart and table
    display_table(df, columns)       human-scaled text with the marker of the weakest input
    headline / memory_comparison / collective_frame / serving_frontier / claim_points /
    capacity_plan / sensitivity_frame
                                     the app's pages (thin over memory, collectives, search,
                                     planner, sensitivity, claims_serving)

Does not: print, or write files (export.py does); the comparison report is report.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from perfmodel import catalog, evaluate, memory, provenance_frame, units, workload_files
from perfmodel import whatif as wi
from perfmodel.calibration import Calibration, calibration_for
from perfmodel.dtypes import DType
from perfmodel.hardware import System
from perfmodel.roofline import ENGINES
from perfmodel.workload import ModelArch


Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------- loading with what-ifs


@dataclass(frozen=True)
class Loaded:
    system: System
    arch: ModelArch
    cal: Calibration
    whatif: wi.WhatIf = wi.WhatIf()


def load(system: str, workload: str, whatif: wi.WhatIf = wi.WhatIf(), variant: str = "nominal") -> Loaded:
    """System, workload and calibration from the catalogue, with what-if overrides applied."""
    s = catalog.load_system(system, variant=variant)
    a = workload_files.load_workload(workload)
    cal = calibration_for(s)
    s2, a2, c2 = wi.apply(s, a, cal, whatif)
    return Loaded(s2, a2, c2, whatif)


def pick_dtype(system: System, prefs: Iterable[str]) -> str:
    """The first data type in `prefs` the chip's tensor engine supports."""
    prefs = tuple(prefs)
    for d in prefs:
        if system.chip.supports(DType.parse(d)):
            return DType.parse(d).value
    raise ValueError(f"{system.name}: the tensor engine supports none of {', '.join(prefs)}")


def fit_plan(ld: Loaded, opts: wi.ScenarioOptions) -> tuple[wi.ScenarioOptions, memory.FitResult]:
    """Options with the plan of memory.min_fit (fewest chips that hold this scenario)."""
    fit = memory.min_fit(ld.system, ld.arch, wi.scenario_of(opts, ld.arch, ld.system), ld.cal)
    p = fit.plan
    new = opts.replace(tp=p["tp"], pp=p["pp"], dp=p["dp"], ep=p["ep"],
                       microbatches=max(p["pp"], opts.microbatches) if opts.phase == "train" else opts.microbatches)
    return new, fit


# ---------------------------------------------------------------- frames for charts and tables


def bound_shares(ops: pd.DataFrame) -> pd.DataFrame:
    """Step time by the engine that bounds each operator: bound, time_s, share_frac."""
    t = ops.groupby("bound", sort=False)["total_time_s"].sum()
    total = t.sum()
    out = pd.DataFrame({"bound": t.index, "time_s": t.to_numpy(),
                        "share_frac": t.to_numpy() / total if total else np.nan})
    return out.sort_values("time_s", ascending=False, ignore_index=True)


def engine_frame(ops: pd.DataFrame) -> pd.DataFrame:
    """Long form busy time per block and engine (count x engine time; comm as its own engine)."""
    cols = [f"{e}_s" for e in ENGINES] + ["comm_s"]
    busy = ops[cols].mul(ops["count"], axis=0)
    busy["block"] = ops["block"]
    long = busy.groupby("block", sort=False).sum().reset_index().melt(id_vars="block", var_name="engine",
                                                                       value_name="busy_s")
    long["engine"] = long["engine"].str.removesuffix("_s")
    return long[long["busy_s"] > 0].reset_index(drop=True)


def roofline_frames(system: System, dtypes: Iterable[str] | None = None,
                    intensity=(0.1, 1e5), points: int = 64) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(roofs, ridges) of the chip: attainable = min(peak_d, I x HBM bandwidth) per data type d;
    ridge intensity = peak_d / HBM bandwidth (FLOP per byte)."""
    chip = system.chip
    ds = [DType.parse(d) for d in dtypes] if dtypes else sorted(chip.peak_flop_per_s, key=chip.peak_flop_per_s.get)
    ds = [d for d in ds if d in chip.peak_flop_per_s]
    grid = np.logspace(np.log10(intensity[0]), np.log10(intensity[1]), points)
    bw = chip.hbm_bandwidth_bytes_per_s
    roofs, ridges = [], []
    for d in ds:
        peak = chip.peak_flop_per_s[d]
        roofs.append(pd.DataFrame({"dtype": d.value, "intensity_flop_per_byte": grid,
                                   "attainable_flop_per_s": np.minimum(peak, grid * bw)}))
        ridges.append({"dtype": d.value, "peak_flop_per_s": peak, "hbm_bandwidth_bytes_per_s": bw,
                       "ridge_intensity_flop_per_byte": peak / bw})
    return pd.concat(roofs, ignore_index=True), pd.DataFrame(ridges)


def memory_frames(ld: Loaded, scenario, label: str = "") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(components, totals) per device: components long form (label, component, footprint_bytes);
    totals: label, total_bytes, capacity_bytes, headroom_bytes, fits."""
    fp = memory.footprint_for(ld.system, ld.arch, scenario, ld.cal)
    label = label or ld.system.name
    comp = pd.DataFrame([{"label": label, "component": k, "footprint_bytes": float(np.asarray(v).ravel()[0])}
                         for k, v in fp.components.items()])
    tot = pd.DataFrame([{"label": label, "total_bytes": float(np.asarray(fp.total_bytes).ravel()[0]),
                         "capacity_bytes": fp.capacity_bytes,
                         "headroom_bytes": float(np.asarray(fp.headroom_bytes).ravel()[0]),
                         "fits": bool(np.asarray(fp.fits).ravel()[0]), "notes": "; ".join(fp.notes)}])
    return comp, tot


def economics(system: System, summary: pd.Series, cal: Calibration | None = None) -> dict:
    """Power per chip, tokens per MW, price per chip-hour and $ per million tokens of a summary row.

    Power: power.power_model at engine activity a_e = busy_e / step time (comm: comm time /
    step time), the replica's chips active, its share of node overhead, then PUE (power.py).
    Tokens are those of the phase (decode: output tokens; prefill: prompt tokens; train:
    training tokens). Money: cost.price_for / cost.usd_per_million_tokens. Missing inputs (no TDP,
    no price) give NaN and a note that says which.
    """
    from perfmodel import power

    cal = cal or calibration_for(system)
    out = {"power_per_chip_w": np.nan, "facility_power_per_chip_w": np.nan, "tokens_per_mw": np.nan,
           "tdp_status": "", "price_per_chip_usd_per_hour": np.nan, "usd_per_million_tokens": np.nan,
           "price_status": "", "economics_note": ""}
    notes = []
    step = float(summary["step_time_s"])
    act = {e: float(summary[f"{e}_busy_s"]) / step for e in ENGINES}
    act["comm"] = float(summary["comm_time_s"]) / step
    chips = float(summary["replica_chips"])
    try:
        pm = power.power_model(system, cal)
        chip_w = float(pm.chip_w(act))
        fac = float(pm.facility_w(pm.it_w(chip_w, chips, chips, chips / system.node.chips)))
        out.update(power_per_chip_w=chip_w, facility_power_per_chip_w=fac / chips, tdp_status=pm.tdp_status,
                   tokens_per_mw=float(summary["tokens_per_s_per_replica"]) / (fac / units.MW))
        notes.append(pm.notes[0] if pm.notes else "")
    except (ValueError, KeyError) as exc:
        notes.append(f"power: {_short(exc)}")
    try:
        notes.extend(_cost(system, summary, cal, out))
    except (ValueError, KeyError) as exc:
        notes.append(f"cost: {_short(exc)}")
    out["economics_note"] = "; ".join(n for n in notes if n)
    return out


def _short(exc: Exception) -> str:
    """First line of an error, without the list of known names."""
    return str(exc).strip("'\"").splitlines()[0].split(" (known:")[0]


def _cost(system: System, summary: pd.Series, cal: Calibration, out: dict) -> list[str]:
    """Fill price_per_chip_usd_per_hour and usd_per_million_tokens from cost.py (tokens of the phase)."""
    from perfmodel import cost

    price = cost.price_for(system, cal)
    out["price_status"] = price.status
    if not price.available:
        return [f"cost: {price.label} ({price.note})"]
    out["price_per_chip_usd_per_hour"] = price.usd_per_chip_hour
    out["usd_per_million_tokens"] = float(cost.usd_per_million_tokens(float(summary["tokens_per_s_per_chip"]), price))
    return [f"price: {price.label}"] if price.status not in ("published", "derived") else []


# ---------------------------------------------------------------- one scenario (roofline / memory commands, app)


@dataclass(frozen=True)
class Run:
    """One scenario on one system: inputs, Result, footprint frames, minimum fit, provenance."""

    loaded: Loaded
    options: wi.ScenarioOptions
    result: evaluate.Result
    components: pd.DataFrame
    totals: pd.DataFrame
    fit: memory.FitResult | None
    fit_error: str = ""
    provenance: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def scenario(self):
        return self.result.scenario

    def summary(self) -> pd.DataFrame:
        """The result row with memory, fit and figure statuses beside it (inputs, then outputs)."""
        row = self.result.summary.iloc[0].to_dict()
        t = self.totals.iloc[0]
        row.update({"whatif": self.loaded.whatif.label(), "memory_total_bytes": t["total_bytes"],
                    "capacity_bytes": t["capacity_bytes"], "fits": bool(t["fits"]),
                    "min_chips": self.fit.chips if self.fit else np.nan,
                    "min_instances": self.fit.instances if self.fit else np.nan,
                    "bound": bound_shares(self.result.ops).iloc[0]["bound"]})
        row.update(economics(self.loaded.system, pd.Series(row), self.loaded.cal))
        row.update(_basis(self.loaded.system, self.result.scenario, row))
        return pd.DataFrame([row])

    def sheets(self) -> dict[str, pd.DataFrame]:
        """inputs / results / per_operator / provenance, each row holding its inputs."""
        summ = self.summary()
        return workbook(inputs_frame(self.loaded, self.options), summ, _with_inputs(self.result.ops, summ),
                        self.provenance)


def run_scenario(ld: Loaded, opts: wi.ScenarioOptions, with_fit: bool = True) -> Run:
    sc = wi.scenario_of(opts, ld.arch, ld.system)
    res = evaluate.evaluate(ld.system, ld.arch, sc, ld.cal)
    comp, tot = memory_frames(ld, sc)
    fit, err = None, ""
    if with_fit:
        try:
            fit = memory.min_fit(ld.system, ld.arch, sc, ld.cal)
        except ValueError as exc:
            err = str(exc)
    prov = provenance_frame.provenance_frame(ld.system, sc, ld.cal)
    return Run(ld, opts, res, comp, tot, fit, err, prov)


def scenario_page(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf = wi.WhatIf()) -> dict:
    """The data of the app's roofline and memory pages for one scenario (what app.run caches):
    summary, sheets (workbook), ops, engines, bounds, components, totals, roofs, ridges, fit_error,
    display_name. bench/bench_app.py times it."""
    ld = load(system, workload, whatif)
    r = run_scenario(ld, opts)
    sheets = r.sheets()
    roofs, ridges = roofline_frames(ld.system)
    return {"summary": sheets["results"], "sheets": sheets, "ops": r.result.ops,
            "engines": engine_frame(r.result.ops), "bounds": bound_shares(r.result.ops),
            "components": r.components, "totals": r.totals, "roofs": roofs, "ridges": ridges,
            "fit_error": r.fit_error, "display_name": ld.system.display_name}


_INPUT_COLS = ("case", "system", "workload", "phase", "batch", "seq_len", "context", "tp", "pp", "dp", "ep", "da",
               "compute_dtype", "weights_dtype", "whatif")


def _with_inputs(ops: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    s = summary.iloc[0]
    front = {c: s[c] for c in _INPUT_COLS if c in summary}
    return pd.concat([pd.DataFrame([front] * len(ops), index=ops.index), ops], axis=1)


def inputs_frame(ld: Loaded, opts: wi.ScenarioOptions) -> pd.DataFrame:
    """Long form: section, name, value (scenario options, what-ifs, workload fields)."""
    rows = [{"section": "scenario", "name": k, "value": str(v)} for k, v in dataclasses.asdict(opts).items()]
    rows += [{"section": "system", "name": "system", "value": ld.system.name},
             {"section": "system", "name": "display_name", "value": ld.system.display_name}]
    rows += [{"section": f"what-if ({fam})", "name": n, "value": v} for fam, n, v in ld.whatif.items()]
    for f in dataclasses.fields(ld.arch):
        v = getattr(ld.arch, f.name)
        if isinstance(v, (int, float, str, bool)) and f.name not in ("notes",):
            rows.append({"section": "workload", "name": f.name, "value": str(v)})
    return pd.DataFrame(rows)


def workbook(inputs: pd.DataFrame, results: pd.DataFrame, per_operator: pd.DataFrame,
             provenance: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"inputs": inputs, "results": results, "per_operator": per_operator, "provenance": provenance}


def _basis(system: System, scenario, row: dict) -> dict[str, str]:
    """basis_* columns: the weakest input status of each figure, including the power model's
    TDP status and the cost model's price status (economics)."""
    st = provenance_frame.figure_statuses(system, scenario, BASIS_COLUMNS.values())
    out = {b: st[c] for b, c in BASIS_COLUMNS.items()}
    out["basis_tokens_per_mw"] = provenance_frame.weakest([out["basis_tokens_per_mw"], row.get("tdp_status", "")])
    out["basis_usd_per_mtok"] = provenance_frame.weakest([out["basis_usd_per_mtok"], row.get("price_status", "")])
    return out


# basis column -> the result column whose inputs it describes
BASIS_COLUMNS = {"basis_peak": "peak_flop_per_s", "basis_performance": "step_time_s",
                 "basis_memory": "memory_total_bytes", "basis_tokens_per_mw": "tokens_per_mw",
                 "basis_usd_per_mtok": "usd_per_million_tokens"}
# displayed column -> basis column that marks it
FIGURE_BASIS = {"peak_flop_per_s": "basis_peak", **{c: "basis_performance" for c in (
    "step_time_s", "ttft_s", "time_per_output_token_s", "tokens_per_s_per_user", "tokens_per_s_per_chip",
    "achieved_flop_per_s", "mfu_frac", "bound")}, "memory_total_bytes": "basis_memory", "min_chips": "basis_memory",
    "capacity_bytes": "basis_memory",
    "tokens_per_mw": "basis_tokens_per_mw", "usd_per_million_tokens": "basis_usd_per_mtok"}



_LATENCY = {"decode": ("time_per_output_token_s", "tokens_per_s_per_user"), "prefill": ("ttft_s",),
            "train": ("step_time_s",)}


def summary_columns(phase: str) -> tuple[str, ...]:
    """The columns the report shows for a phase (the frames keep every column)."""
    return ("system", "compute_dtype", "plan", "replica_chips", *_LATENCY.get(phase, ("step_time_s",)),
            "tokens_per_s_per_chip", "peak_flop_per_s", "achieved_flop_per_s", "mfu_frac", "bound",
            "memory_total_bytes", "capacity_bytes", "min_chips", "tokens_per_mw", "usd_per_million_tokens")


SUMMARY_COLUMNS = summary_columns("decode")


def plan_text(opts: wi.ScenarioOptions) -> str:
    """'tp4 ep4' style: the parallel degrees above 1 (or 'single chip')."""
    parts = [f"{k}{getattr(opts, k)}" for k in ("tp", "pp", "ep", "dp", "da") if getattr(opts, k) > 1]
    return " ".join(parts) or "1 chip"


def display_table(df: pd.DataFrame, columns: Iterable[str] = SUMMARY_COLUMNS) -> pd.DataFrame:
    """Human-scaled text table; each figure carries the marker of the weakest input it rests on."""
    from perfmodel import export

    cols = [c for c in columns if c in df and not df[c].isna().all()]
    # the row values as DataFrame.iterrows gives them (one common-dtype array: ints read as floats in an
    # all-numeric frame), read by position instead of building a Series per row (the app's hot path)
    values = df.values
    pos = {c: i for i, c in enumerate(df.columns)}
    out = {}
    for c in cols:
        name, div = export.pretty_name(c)
        basis = pos.get(FIGURE_BASIS.get(c)) if c in FIGURE_BASIS else None
        vals = []
        for row in values:
            v = row[pos[c]]
            num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
            text = export._fmt_cell(float(v) / div if num and div != 1.0 else v)
            if text and basis is not None:
                text += provenance_frame.marker(row[basis])
            vals.append(text)
        out[name] = vals
    return pd.DataFrame(out)


# ---------------------------------------------------------------- collectives and serving frames


def collective_frame(systems: Iterable[str], collectives: Iterable[str], group: int, sizes_bytes: Iterable[float],
                     algorithms: Iterable[str] | None = None, whatif: wi.WhatIf = wi.WhatIf(),
                     launch: str = "in-graph") -> pd.DataFrame:
    """Time of each collective vs message size on each system, one row per (system, collective,
    algorithm, size): the fastest algorithm ('auto') and each algorithm of collectives.ALGORITHMS
    that applies. `series` names the system's topology and the algorithm; `launch` is how each call
    is made (collectives.LAUNCH: in a compiled graph, from the host, eagerly through a framework)."""
    from perfmodel import collectives as co

    sizes = np.asarray(list(sizes_bytes), dtype=float)
    algs = list(algorithms) if algorithms is not None else ["auto", *co.ALGORITHMS]
    rows = []
    for name in systems:
        s = wi.apply_spec(catalog.load_system(name), whatif.spec)
        cal = wi.apply_calibration(calibration_for(s), whatif.cal)
        topo = " + ".join(f"{t.topology.value}" for t in s.tiers if t.scope.value != "scaleout") or "scale-out only"
        for c in collectives:
            sw = co.sweep(s, cal, c, sizes, float(group), launch=launch)
            for a in algs:
                col = "time_s" if a == "auto" else f"time_{a.replace('-', '_')}_s"
                if col not in sw:
                    continue
                t = sw[col].to_numpy(dtype=float)
                keep = np.isfinite(t) & (t > 0)
                if not keep.any():
                    continue
                rows.append(pd.DataFrame({
                    "system": name, "topology": topo, "collective": sw["collective"][keep],
                    "algorithm": "fastest" if a == "auto" else a, "group": sw["group"][keep],
                    "size_bytes": sw["size_bytes"][keep], "time_s": t[keep],
                    "chosen_algorithm": sw["algorithm"][keep] if a == "auto" else a, "crosses": sw["crosses"][keep],
                    "busbw_bytes_per_s": sw["busbw_bytes_per_s"][keep] if a == "auto" else np.nan}))
    if not rows:
        raise ValueError("no collective time to show (group of 1 chip, or no algorithm applies)")
    df = pd.concat(rows, ignore_index=True)
    df["series"] = df["system"] + " (" + df["topology"] + "): " + df["algorithm"]
    return df


# ---------------------------------------------------------------- app helpers (tidy frames for pages)

HEADLINE = {"decode": ("time_per_output_token_s", "tokens_per_s_per_user"), "prefill": ("ttft_s",),
            "train": ("step_time_s",)}


def headline(summary: pd.DataFrame, phase: str) -> list[tuple[str, str]]:
    """(label, text with marker) for the few figures a page shows as metrics."""
    cols = (*HEADLINE.get(phase, ("step_time_s",)), "tokens_per_s_per_chip", "mfu_frac", "bound",
            "memory_total_bytes", "tokens_per_mw", "usd_per_million_tokens")
    shown = display_table(summary, cols)
    return [(c, str(shown.iloc[0][c])) for c in shown.columns]


def memory_comparison(systems: Iterable[str], workload: str, opts: wi.ScenarioOptions,
                      whatif: wi.WhatIf = wi.WhatIf()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(components, totals) of the same scenario on several systems; totals add the minimum fit
    (min_chips, min_instances, min_fit_plan) or the reason none exists."""
    comps, tots = [], []
    for name in systems:
        ld = load(name, workload, whatif)
        sc = wi.scenario_of(opts, ld.arch, ld.system)
        c, t = memory_frames(ld, sc, name)
        try:
            fit = memory.min_fit(ld.system, ld.arch, sc, ld.cal)
            t = t.assign(min_chips=fit.chips, min_instances=fit.instances,
                         min_fit_plan=" ".join(f"{k}{v}" for k, v in fit.plan.items()))
        except ValueError as exc:
            t = t.assign(min_chips=np.nan, min_instances=np.nan, min_fit_plan=_short(exc))
        t["basis_memory"] = provenance_frame.figure_status(ld.system, sc, "memory_total_bytes")
        comps.append(c)
        tots.append(t)
    return pd.concat(comps, ignore_index=True), pd.concat(tots, ignore_index=True)


def sensitivity_frame(ld: Loaded, opts: wi.ScenarioOptions, column: str = "step_time_s",
                      rel_step: float = 0.05) -> pd.DataFrame:
    """Elasticity of one summary column to every spec value and assumption (sensitivity.py), ranked."""
    from perfmodel import sensitivity as se

    sc = wi.scenario_of(opts, ld.arch, ld.system)

    def fn(inputs) -> float:
        s, c = inputs[ld.system.name]
        return evaluate.evaluate(s, ld.arch, sc, c)[column]

    return se.elasticities(fn, {ld.system.name: (ld.system, ld.cal)}, rel_step=rel_step)


FRONTIER_Y = {"mw": "output_tokens_per_s_per_mw", "chip": "output_tokens_per_s_per_chip",
              "usd": "output_tokens_per_usd", "users": "concurrency_per_scaleup"}
# plan grids for serving_frontier / capacity_plan: "quick" (interactive) or "full" (search.plan_grid defaults,
# as the seed claims use)
GRIDS = {"quick": dict(tp=(1, 2, 4, 8, 16), da=(1, 2, 4, 8, 16, 32, 64, 128), pp=(1,),
                       concurrency=tuple(2 ** k for k in range(14))),
         "full": {}}


def _grid_kw(ld: Loaded, grid: str) -> dict:
    if grid not in GRIDS:
        raise ValueError(f"plan grid {grid!r}: choose one of {', '.join(GRIDS)}")
    kw = {k: list(v) for k, v in GRIDS[grid].items()}
    if "tp" in kw:
        kw["tp"] = [t for t in kw["tp"] if t <= min(ld.arch.num_attention_heads, ld.system.scaleup_chips)]
        kw["da"] = [d for d in kw["da"] if d <= ld.system.scaleup_chips]
    return kw


def serving_frontier(systems: Iterable[str], workload: str, whatif: wi.WhatIf = wi.WhatIf(),
                     input_tokens: int = 1024, output_tokens: int = 1024, y: str = "mw",
                     max_ttft_s: float | None = None, grid: str = "quick") -> pd.DataFrame:
    """The interactivity vs throughput frontier of each system: search.frontier_sweep over the plan
    grid (GRIDS), then the Pareto points for `y` (FRONTIER_Y key: mw | chip | usd | users)."""
    from perfmodel import search, serving

    if y not in FRONTIER_Y:
        raise ValueError(f"frontier y {y!r}: choose one of {', '.join(FRONTIER_Y)}")
    parts = []
    for name in systems:
        ld = load(name, workload, whatif)
        df = search.frontier_sweep(ld.system, ld.arch, serving.Mix(input_tokens, output_tokens), cal=ld.cal,
                                   max_ttft_s=max_ttft_s, **_grid_kw(ld, grid))
        f = search.frontier(df, y if y in search.Y_COLS else FRONTIER_Y[y])
        f["generation"] = ld.system.generation
        parts.append(f)
    out = pd.concat(parts, ignore_index=True)
    out["batch"] = out["concurrency"]
    return out


CLAIM_SCENARIO = {"workload": "gpt-oss-120b", "input_tokens": 1024, "output_tokens": 1024}


def claim_points(y_col: str) -> pd.DataFrame:
    """The seed claims' reading points (S1-S3, claims_serving.chart_frame: gpt-oss-120b, 1k/1k,
    Trn3 vs Trn2 UltraServer) as x = tokens/s per user, y = `y_col`, label."""
    from perfmodel import claims_serving as cs

    cf = cs.chart_frame()
    if y_col not in cf:
        return pd.DataFrame(columns=["system", cs.X, y_col, "label"])
    curve = "concurrency" if y_col == cs.CONC else "tokens_per_mw"
    pts = cf[cf["reading"].str.contains("reading") & (cf["curve"] == curve)]
    label = pts["reading"].str.replace(r" reading \(([a-z0-9]+).*\)", r" \1", regex=True)
    return pd.DataFrame({"system": pts["system"], cs.X: pts[cs.X], y_col: pts[y_col], "label": label,
                         "reading": pts["reading"]}).reset_index(drop=True)


def capacity_plan(systems: Iterable[str], workload: str, whatif: wi.WhatIf = wi.WhatIf(),
                  input_tokens: int = 1024, output_tokens: int = 1024, requests_per_s: float = 100.0,
                  tpot_s: float = 0.02, ttft_s: float = 2.0, peak_to_average: float = 1.0,
                  grid: str = "quick") -> pd.DataFrame:
    """planner.plan_serving for one demand: fleet (chips, instances, UltraServers), facility MW and
    $ per month per system. Calibration what-ifs apply; spec what-ifs are not supported by the
    planner (it loads systems by name) and raise."""
    from perfmodel import planner

    if whatif.spec or whatif.workload:
        raise ValueError("the capacity planner applies calibration what-ifs only (planner.plan_serving loads "
                         "systems and workloads by name); clear the spec / workload overrides for this page")
    systems = list(systems)
    demand = planner.Demand(workload=workload, requests_per_s=float(requests_per_s),
                            input_tokens=planner.Lengths.of(input_tokens),
                            output_tokens=planner.Lengths.of(output_tokens), ttft_s=float(ttft_s),
                            tpot_s=float(tpot_s), peak_to_average=float(peak_to_average))
    kw = _grid_kw(load(systems[0], workload), grid) if grid == "quick" else {}
    cal_over = {n: v for n, v in whatif.cal}
    df = planner.plan_serving(demand, systems, planner.PlanOptions(grid_kw=kw), cal_overrides=cal_over or None)
    if "facility_power_peak_w" in df:
        df["facility_power_peak_mw"] = df["facility_power_peak_w"] / units.MW
    return df
