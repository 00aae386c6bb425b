"""Page data for the app and the report: one tidy frame per page.

Thin over memory, collectives, search, planner, sensitivity and the serving claims' curves; frames.py holds
the one-scenario runner and its chart data.

    headline(summary, phase)              the figures a page leads with
    memory_comparison(systems, ...)       footprint of one scenario on several systems
    collective_frame(systems, ...)        time and bus bandwidth per collective, algorithm, size
    algorithm_rows(sweep, algorithms)     one collectives.sweep frame, one row per algorithm and size (the CLI's chart)
    sensitivity_frame(loaded, options)    tornado: each input moved by a factor
    serving_frontier(systems, ...)        the serving Pareto frontiers
    claim_points(y)                       the seed claims' points on those frontiers
    capacity_plan(systems, ...)           chips, MW and $ for a demand
    under_load(system, workload, opts)    one replica simulated request by request (summary, queue, requests)

Does not: print, or write files (export.py does).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import whatif as wi
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import units
from perfmodel.model import evaluate, feasibility
from perfmodel.report import provenance_frame
from perfmodel.report.frames import Loaded, display_table, load, memory_frames, short_error

# ---------------------------------------------------------------- collectives and serving frames


def algorithm_rows(sw: pd.DataFrame, algorithms: Iterable[str]) -> pd.DataFrame:
    """One collectives.sweep frame in long form, one row per (algorithm, size) with a time: 'auto' as the fastest
    (with the algorithm chosen and its bus bandwidth), each other algorithm where it applies."""
    rows = []
    for a in algorithms:
        col = "time_s" if a == "auto" else f"time_{a.replace('-', '_')}_s"
        if col not in sw:
            continue
        t = sw[col].to_numpy(dtype=float)
        keep = np.isfinite(t) & (t > 0)
        if keep.any():
            rows.append(pd.DataFrame({
                "collective": sw["collective"][keep], "algorithm": "fastest" if a == "auto" else a,
                "group": sw["group"][keep], "size_bytes": sw["size_bytes"][keep], "time_s": t[keep],
                "chosen_algorithm": sw["algorithm"][keep] if a == "auto" else a, "crosses": sw["crosses"][keep],
                "busbw_bytes_per_s": sw["busbw_bytes_per_s"][keep] if a == "auto" else np.nan}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def collective_frame(systems: Iterable[str], collectives: Iterable[str], group: int, sizes_bytes: Iterable[float],
                     algorithms: Iterable[str] | None = None, whatif: wi.WhatIf = wi.WhatIf(),
                     launch: str = "in-graph", replaced: Replacements = NONE) -> pd.DataFrame:
    """Time of each collective vs message size on each system, one row per (system, collective,
    algorithm, size): the fastest algorithm ('auto') and each algorithm of collectives.ALGORITHMS
    that applies. `series` names the system's topology and the algorithm; `launch` is how each call
    is made (collectives.LAUNCH: in a compiled graph, from the host, eagerly through a framework)."""
    from perfmodel.comm import collectives as co

    sizes = np.asarray(list(sizes_bytes), dtype=float)
    algs = list(algorithms) if algorithms is not None else ["auto", *co.ALGORITHMS]
    rows = []
    for name in systems:
        s = wi.apply_spec(catalog.load_system(name, replaced=replaced), whatif.spec)
        cal = wi.apply_calibration(calibration_of(s), whatif.cal)
        topo = " + ".join(f"{t.topology.value}" for t in s.tiers if t.scope.value != "scaleout") or "scale-out only"
        for c in collectives:
            rows.append(algorithm_rows(co.sweep(s, cal, c, sizes, float(group), launch=launch), algs).assign(
                system=name, topology=topo))
    rows = [r for r in rows if len(r)]
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
                      whatif: wi.WhatIf = wi.WhatIf(), replaced: Replacements = NONE
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(components, totals) of the same scenario on several systems; totals add the minimum fit
    (min_chips, min_instances, min_fit_plan) or the reason none exists."""
    comps, tots = [], []
    for name in systems:
        ld = load(name, workload, whatif, replaced=replaced)
        sc = wi.scenario_of(opts, ld.arch, ld.system)
        c, t = memory_frames(ld, sc, name)
        try:
            fit = feasibility.min_fit(ld.system, ld.arch, sc, ld.cal)
            t = t.assign(min_chips=fit.chips, min_instances=fit.instances, min_node_share=fit.node_share,
                         min_fit_plan=" ".join(f"{k}{v}" for k, v in fit.plan.items()))
        except ValueError as exc:
            t = t.assign(min_chips=np.nan, min_instances=np.nan, min_node_share=np.nan, min_fit_plan=short_error(exc))
        t["basis_memory"] = provenance_frame.figure_status(ld.system, sc, "memory_total_bytes")
        comps.append(c)
        tots.append(t)
    return pd.concat(comps, ignore_index=True), pd.concat(tots, ignore_index=True)


def sensitivity_frame(ld: Loaded, opts: wi.ScenarioOptions, column: str = "step_time_s",
                      rel_step: float = 0.05) -> pd.DataFrame:
    """Elasticity of one summary column to every spec value and assumption (sensitivity.py), ranked."""
    from perfmodel.serving import sensitivity as se

    sc = wi.scenario_of(opts, ld.arch, ld.system)

    def fn(inputs) -> float:
        s, c = inputs[ld.system.name]
        return evaluate.evaluate(s, ld.arch, sc, c)[column]

    return se.elasticities(fn, {ld.system.name: (ld.system, ld.cal)}, rel_step=rel_step, ranges=True)


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


FRONTIERS = {"engine": ("engine",), "both": ("engine", "roofline"), "roofline": ("roofline",)}


def serving_frontier(systems: Iterable[str], workload: str, whatif: wi.WhatIf = wi.WhatIf(),
                     input_tokens: int = 1024, output_tokens: int = 1024, y: str = "mw",
                     max_ttft_s: float | None = None, grid: str = "quick", frontiers: str = "engine",
                     replaced: Replacements = NONE) -> pd.DataFrame:
    """The interactivity vs throughput frontier of each system: search.frontier_sweep over the plan
    grid (GRIDS), then the Pareto points for `y` (FRONTIER_Y key: mw | chip | usd | users). `frontiers`
    (FRONTIERS key): the engine frontier (the hardware family's serving engine, each point labelled inside or
    outside its measured envelope), the roofline (no engine), or both, never mixed: column `frontier`, and
    `curve` (the system, marked when it is the roofline beside an engine frontier) to draw them apart. Each point
    carries its 80% interval (serving/error_bars.py)."""
    from perfmodel import serving
    from perfmodel.catalog import interval_files
    from perfmodel.serving import error_bars
    from perfmodel.catalog import neuron_stacks, serving_engines
    from perfmodel.serving import search

    if y not in FRONTIER_Y:
        raise ValueError(f"frontier y {y!r}: choose one of {', '.join(FRONTIER_Y)}")
    if frontiers not in FRONTIERS:
        raise ValueError(f"frontiers {frontiers!r}: choose one of {', '.join(FRONTIERS)}")
    parts = []
    for name in systems:
        ld = load(name, workload, whatif, replaced=replaced)
        for kind in FRONTIERS[frontiers]:
            eng, env = serving_engines.resolve(None if kind == "engine" else "none", ld.system)
            df = search.frontier_sweep(ld.system, ld.arch, serving.Mix(input_tokens, output_tokens), cal=ld.cal,
                                       max_ttft_s=max_ttft_s, software=neuron_stacks.software(eng, ld.system, replaced),
                                       envelope_profile=env,
                                       **_grid_kw(ld, grid))
            f = search.frontier(df, y if y in search.Y_COLS else FRONTIER_Y[y])
            f = error_bars.attach(f, ld.system, ld.arch, interval_files.load()) if len(f) else f
            mark = " (roofline)" if kind == "roofline" and frontiers == "both" else ""
            parts.append(f.assign(generation=ld.system.generation, frontier=kind, curve=name + mark))
    out = pd.concat(parts, ignore_index=True)
    out["batch"] = out["concurrency"]
    return out


CLAIM_SCENARIO = {"workload": "gpt-oss-120b", "input_tokens": 1024, "output_tokens": 1024}


def claim_points(y_col: str) -> pd.DataFrame:
    """The seed claims' reading points (S1-S3, claims_serving.chart_frame: gpt-oss-120b, 1k/1k,
    Trn3 vs Trn2 UltraServer) as x = tokens/s per user, y = `y_col`, label."""
    from perfmodel.claims.serving import curves

    cf = curves.chart_frame()
    if y_col not in cf:
        return pd.DataFrame(columns=["system", curves.X, y_col, "label"])
    curve = "concurrency" if y_col == curves.CONC else "tokens_per_mw"
    pts = cf[cf["reading"].str.contains("reading") & (cf["curve"] == curve)]
    label = pts["reading"].str.replace(r" reading \(([a-z0-9]+).*\)", r" \1", regex=True)
    return pd.DataFrame({"system": pts["system"], curves.X: pts[curves.X], y_col: pts[y_col], "label": label,
                         "reading": pts["reading"]}).reset_index(drop=True)


def capacity_plan(systems: Iterable[str], workload: str, whatif: wi.WhatIf = wi.WhatIf(),
                  input_tokens: int = 1024, output_tokens: int = 1024, requests_per_s: float = 100.0,
                  tpot_s: float = 0.02, ttft_s: float = 2.0, peak_to_average: float = 1.0,
                  grid: str = "quick", percentile: float = 0.0,
                  modes: Iterable[str] = ("aggregated",), replaced: Replacements = NONE) -> pd.DataFrame:
    """planner.plan_serving for one demand: fleet (chips, instances, UltraServers), facility MW and
    $ per month per system; with a percentile (e.g. 99) each answer is verified by simulation at the peak
    rate (simulation/verify.py). Every what-if applies: each system is planned as loaded with them (its spec,
    calibration and model overrides) and the family's default serving engine."""
    from perfmodel.catalog import interval_files, neuron_stacks, serving_engines
    from perfmodel.core.inputs import SystemInputs
    from perfmodel.serving import error_bars
    from perfmodel.serving import planner

    systems = list(systems)
    demand = planner.Demand(workload=workload, requests_per_s=float(requests_per_s),
                            input_tokens=planner.Lengths.of(input_tokens),
                            output_tokens=planner.Lengths.of(output_tokens), ttft_s=float(ttft_s),
                            tpot_s=float(tpot_s), peak_to_average=float(peak_to_average),
                            percentile=float(percentile))
    demand.validate()
    loaded = [load(name, workload, whatif, replaced=replaced) for name in systems]
    inputs = []
    for ld in loaded:  # each system as loaded with the what-ifs, its calibration with it
        eng, env = serving_engines.resolve(None, ld.system)
        inputs.append(SystemInputs(ld.system, eng, neuron_stacks.software(eng, ld.system, replaced), env))
    kw = _grid_kw(loaded[0], grid) if grid == "quick" else {}
    opts = planner.PlanOptions(modes=tuple(planner.Mode(m) for m in modes), grid_kw=kw)
    df = planner.plan_serving(demand, loaded[0].arch, inputs, opts)
    if percentile:
        from perfmodel.simulation import verify

        df = verify.verify_plan(df, demand, loaded[0].arch, inputs, opts)
    table = interval_files.load()  # each system's answer with its 80% interval, from that system's regime
    df = pd.concat([error_bars.attach(df.iloc[[i]], inp.system, loaded[0].arch, table) for i, inp in
                    enumerate(inputs)], ignore_index=True) if len(df) == len(inputs) else df
    if "facility_power_peak_w" in df:
        df["facility_power_peak_mw"] = df["facility_power_peak_w"] / units.MW
    return df


def under_load(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf = wi.WhatIf(),
               kind: str = "poisson", rate: float = 5.0, clients: int = 16, input_tokens: int = 1024,
               output_tokens: int = 256, requests: int = 4000, mode: str = "aggregated", ttft_s: float = 2.0,
               tpot_s: float = 0.05, replaced: Replacements = NONE) -> dict[str, pd.DataFrame]:
    """One deployment (the scenario's plan, one replica) simulated request by request: the run's summary
    (quantity, value), the queue over time, and every request (simulation/). What-ifs apply to the system,
    workload and calibration."""
    from perfmodel.serving.options import ServingOptions
    from perfmodel.simulation import deployment, metrics, traffic

    ld = load(system, workload, whatif, replaced=replaced)
    ew = ld.arch.expert_weight_dtype.value if ld.arch.expert_weight_dtype else None
    plan = deployment.one_plan(tp=opts.tp, da=opts.da, ep=opts.ep, pp=opts.pp, compute=opts.dtype, expert_weights=ew)
    shapes = traffic.Shapes(input_tokens=((int(input_tokens), 1.0),), output_tokens=((int(output_tokens), 1.0),))
    run = deployment.simulate(ld.system, ld.arch, plan, traffic.Traffic(kind, rate=float(rate), cv=2.0,
                                                                        clients=int(clients)),
                              shapes, int(requests), ServingOptions(mode=mode), cal=ld.cal)
    s = metrics.summarize(run, (float(ttft_s), float(tpot_s)))
    rows = [(k.replace("_", " "), s[k]) for k in s.index]
    return {"summary": pd.DataFrame(rows, columns=["quantity", "value"]), "queue": metrics.queue_over_time(run),
            "requests": metrics.requests_frame(run)}
