"""Tidy frames behind the CLI, the app and notebooks: one scenario with what-ifs and its chart data.

    load(system, workload, whatif)   System, workload and calibration with what-if overrides
    run_scenario(loaded, options)    one scenario on one system: Result, footprint, minimum fit,
                                     and the four workbook sheets (inputs, results, per_operator,
                                     provenance)
    scenario_page(system, workload, options, whatif)
                                     everything the app's roofline and memory pages show
    roofline_frames / engine_frame / memory_frames / bound_shares
                                     the data of each chart and table
    display_table(df, columns)       human-scaled text with the marker of the weakest input
The app's other pages (memory comparison, collectives, serving frontier, capacity plan,
sensitivity) take their data from pages.py.

Does not: print, or write files (export.py does); the comparison report is compare.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import whatif as wi
from perfmodel.catalog import workload_refs
from perfmodel.catalog.calibration import Calibration
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.calibration import of as calibration_of
from perfmodel.core import units
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.model import attribution, evaluate, feasibility, memory
from perfmodel.model.roofline import ENGINES
from perfmodel.report import provenance_frame
from perfmodel.report.tables import (FIGURE_BASIS, SUMMARY_COLUMNS, display_table, plan_text,  # noqa: F401
                                     summary_columns, workbook)  # (re-exported: the page frames and notebooks)

Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------- loading with what-ifs


@dataclass(frozen=True)
class Loaded:
    system: System
    arch: ModelArch
    cal: Calibration
    whatif: wi.WhatIf = wi.WhatIf()


def load(system: str, workload: str, whatif: wi.WhatIf = wi.WhatIf(), variant: str = "nominal",
         replaced: Replacements = NONE) -> Loaded:
    """System, workload and calibration from the catalogue (with the calibrated sets `replaced` holds), what-if
    overrides applied."""
    s = catalog.load_system(system, variant=variant, replaced=replaced)
    a = workload_refs.load(workload)
    cal = s.calibration
    s2, a2, c2 = wi.apply(s, a, cal, whatif)
    return Loaded(dataclasses.replace(s2, calibration=c2), a2, c2, whatif)  # the system carries the what-if's values


def pick_dtype(system: System, prefs: Iterable[str]) -> str:
    """The first data type in `prefs` the chip's tensor engine supports."""
    prefs = tuple(prefs)
    for d in prefs:
        if system.chip.supports(DType.parse(d)):
            return DType.parse(d).value
    raise ValueError(f"{system.name}: the tensor engine supports none of {', '.join(prefs)}")


def fit_plan(ld: Loaded, opts: wi.ScenarioOptions) -> tuple[wi.ScenarioOptions, feasibility.FitResult]:
    """Options with the plan of feasibility.min_fit (fewest chips that hold this scenario)."""
    fit = feasibility.min_fit(ld.system, ld.arch, wi.scenario_of(opts, ld.arch, ld.system), ld.cal)
    p = fit.plan
    new = opts.replace(tp=p["tp"], pp=p["pp"], dp=p["dp"], ep=p["ep"],
                       microbatches=max(p["pp"], opts.microbatches) if opts.phase == "train" else opts.microbatches)
    return new, fit


# ---------------------------------------------------------------- frames for charts and tables


def bound_shares(ops: pd.DataFrame) -> pd.DataFrame:
    """Step time by what bounds it (bound, time_s, share_frac): engines, comm, comm latency and
    fixed overhead, summing to the step time (model.attribution)."""
    return attribution.bound_shares(ops)


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
                         "fits": bool(np.asarray(fp.fits).ravel()[0]), "notes": "; ".join(fp.notes),
                         "host_bytes": float(np.asarray(fp.host_bytes).ravel()[0]),
                         "host_capacity_bytes": fp.host_capacity_bytes}])
    return comp, tot


def economics(system: System, summary: pd.Series, cal: Calibration | None = None) -> dict:
    """Power per chip, tokens per MW, price per chip-hour and $ per million tokens of a summary row.

    Power: power.power_model at engine activity a_e = busy_e / step time (comm: comm time /
    step time), the replica's chips active, its share of node overhead, then PUE (power.py).
    Tokens are those of the phase (decode: output tokens; prefill: prompt tokens; train:
    training tokens). Money: cost.price_for / cost.usd_per_million_tokens. Missing inputs (no TDP,
    no price) give NaN and a note that says which.
    """
    from perfmodel.serving import power

    cal = cal or calibration_of(system)
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
        notes.append(f"power: {short_error(exc)}")
    try:
        notes.extend(_cost(system, summary, cal, out))
    except (ValueError, KeyError) as exc:
        notes.append(f"cost: {short_error(exc)}")
    out["economics_note"] = "; ".join(n for n in notes if n)
    return out


def short_error(exc: Exception) -> str:
    """First line of an error, without the list of known names."""
    return str(exc).strip("'\"").splitlines()[0].split(" (known:")[0]


def _cost(system: System, summary: pd.Series, cal: Calibration, out: dict) -> list[str]:
    """Fill price_per_chip_usd_per_hour and usd_per_million_tokens from cost.py (tokens of the phase)."""
    from perfmodel.serving import cost

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
    fit: feasibility.FitResult | None
    fit_error: str = ""
    provenance: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def scenario(self):
        return self.result.scenario

    def summary(self) -> pd.DataFrame:
        """The result row with memory, fit and figure statuses beside it (inputs, then outputs)."""
        row = self.result.summary.iloc[0].to_dict()
        for same in ("memory_bytes_per_chip", "memory_capacity_bytes"):  # = memory_total_bytes, capacity_bytes
            row.pop(same, None)
        t = self.totals.iloc[0]
        row.update({"whatif": self.loaded.whatif.label(), "memory_total_bytes": t["total_bytes"],
                    "capacity_bytes": t["capacity_bytes"], "fits": bool(t["fits"]),
                    "min_chips": self.fit.chips if self.fit else np.nan,
                    "min_instances": self.fit.instances if self.fit else np.nan,
                    "min_node_share": self.fit.node_share if self.fit else np.nan,
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
            fit = feasibility.min_fit(ld.system, ld.arch, sc, ld.cal)
        except ValueError as exc:
            err = str(exc)
    prov = provenance_frame.provenance_frame(ld.system, sc, ld.cal)
    return Run(ld, opts, res, comp, tot, fit, err, prov)


def scenario_page(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf = wi.WhatIf(),
                  replaced: Replacements = NONE) -> dict:
    """The data of the app's roofline and memory pages for one scenario (what app.run caches):
    summary, sheets (workbook), ops, engines, bounds, components, totals, roofs, ridges, fit_error,
    display_name. bench/bench_app.py times it."""
    ld = load(system, workload, whatif, replaced=replaced)
    r = run_scenario(ld, opts)
    sheets = r.sheets()
    roofs, ridges = roofline_frames(ld.system)
    return {"summary": sheets["results"], "sheets": sheets, "ops": r.result.ops,
            "engines": engine_frame(r.result.ops), "bounds": bound_shares(r.result.ops),
            "components": r.components, "totals": r.totals, "roofs": roofs, "ridges": ridges,
            "fit_error": r.fit_error, "display_name": ld.system.display_name,
            "feasibility": r.result.feasibility}


_INPUT_COLS = ("case", "system", "workload", "phase", "batch", "seq_len", "context", "tp", "pp", "dp", "ep", "da",
               "compute_dtype", "weights_dtype", "whatif")


def _with_inputs(ops: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    s = summary.iloc[0]
    front = {c: s[c] for c in _INPUT_COLS if c in summary}
    return pd.concat([pd.DataFrame([front] * len(ops), index=ops.index), ops], axis=1)


def inputs_frame(ld: Loaded, opts: wi.ScenarioOptions) -> pd.DataFrame:
    """Long form: section, name, value (scenario options, what-ifs, workload fields)."""
    def typed(v):  # numbers stay numbers (a spreadsheet sums them), everything else is its text
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)

    rows = [{"section": "scenario", "name": k, "value": typed(v)} for k, v in dataclasses.asdict(opts).items()]
    rows += [{"section": "system", "name": "system", "value": ld.system.name},
             {"section": "system", "name": "display_name", "value": ld.system.display_name}]
    rows += [{"section": f"what-if ({fam})", "name": n, "value": v} for fam, n, v in ld.whatif.items()]
    for f in dataclasses.fields(ld.arch):
        v = getattr(ld.arch, f.name)
        if isinstance(v, (int, float, str, bool)) and f.name not in ("notes",):
            rows.append({"section": "workload", "name": f.name, "value": typed(v)})
    return pd.DataFrame(rows)





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
