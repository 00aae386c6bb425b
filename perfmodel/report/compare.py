"""The comparison report: representative cases on every system, its sections, and the claims table.

    comparison(cases, systems)       one row per (case, system): plan, sustained vs peak, bound,
                                     memory, tokens per MW, $ per million tokens, and the status of
                                     the inputs each figure rests on (basis_* columns)
    build_report(...)                Report: sections of DataFrames and Altair charts (no printing;
                                     documents.write_report renders Markdown / HTML)
    claims_frame()                   every seed claim, computed now

Each case picks its parallelism plan with feasibility.min_fit (fewest chips that hold the weights,
the KV cache or training state, and the batch) and its data type as the first of the case's
preferences the chip's tensor engine supports. Tokens per MW and $ per million tokens come
from power.py and cost.py (NaN with a note where a system has no power figure or price).

Does not: print, or write files (export.py does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import spec_tables
from perfmodel.catalog import whatif as wi
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core.hardware import System
from perfmodel.report import provenance_frame
from perfmodel.report.tables import display_table, summary_columns, workbook

# Trn1, Trn2, Trn3, Trn4 (projected), then the GPU peers
SYSTEMS = ("trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver", "trn4-projected", "p5.48xlarge",
           "p5e.48xlarge", "p6-b200.48xlarge", "gb200-nvl72")
SERVING_DTYPES = ("mxfp8", "fp8", "bf16")  # first supported wins (Trn3 "FP8" is MXFP8; Trn1 cFP8)


@dataclass(frozen=True)
class Case:
    """A representative job: a workload, a scenario (plan chosen per system) and data-type preferences."""

    key: str
    title: str
    workload: str
    options: wi.ScenarioOptions
    dtypes: tuple[str, ...] = SERVING_DTYPES


CASES = (
    Case("gpt-oss-120b-decode", "GPT-OSS 120B decode (batch 64, 8k context)", "gpt-oss-120b",
         wi.ScenarioOptions(phase="decode", batch=64, seq_len=1, context=8192)),
    Case("llama-3-70b-prefill", "Llama-3 70B prefill (4 x 4k-token prompts)", "llama-3-70b",
         wi.ScenarioOptions(phase="prefill", batch=4, seq_len=4096)),
    Case("llama-3-70b-decode", "Llama-3 70B decode (batch 64, 4k context)", "llama-3-70b",
         wi.ScenarioOptions(phase="decode", batch=64, seq_len=1, context=4096)),
    Case("deepseek-v3-decode", "DeepSeek-V3 MoE serving, decode (batch 128, 4k context)", "deepseek-v3",
         wi.ScenarioOptions(phase="decode", batch=128, seq_len=1, context=4096)),
    Case("gpt3-175b-train", "GPT-3 175B training (seq 2048, micro-batch 1, 8 micro-batches, ZeRO-1)", "gpt3-175b",
         wi.ScenarioOptions(phase="train", batch=1, seq_len=2048, microbatches=8, zero=1), dtypes=("bf16",)),
)

Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Comparison:
    results: pd.DataFrame  # one row per (case, system)
    per_operator: pd.DataFrame
    provenance: pd.DataFrame
    components: pd.DataFrame
    inputs: pd.DataFrame
    errors: pd.DataFrame  # case, system, error for combinations that could not run

    def sheets(self) -> dict[str, pd.DataFrame]:
        return workbook(self.inputs, self.results, self.per_operator, self.provenance)


def comparison(cases: Iterable[Case] = CASES, systems: Iterable[str] = SYSTEMS, whatif: wi.WhatIf = wi.WhatIf(),
               progress: Progress | None = None, engine: str | None = None,
               replaced: Replacements = NONE) -> Comparison:
    """Every case on every system (plan from min_fit, data type from the case's preferences), serving cases also
    priced as `engine` runs them (None: each system's default engine; "none": the accelerator alone), each engine
    figure with its 80% interval (the intervals file read here, once)."""
    from perfmodel.catalog import interval_files
    from perfmodel.report import engine_priced
    from perfmodel.report.frames import _with_inputs, fit_plan, inputs_frame, load, pick_dtype, run_scenario
    from perfmodel.report.tables import plan_text

    cases, systems, table = list(cases), list(systems), interval_files.load()
    rows, ops, provs, comps, inputs, errors = [], [], [], [], [], []
    n, i = len(cases) * len(systems), 0
    for case in cases:
        for name in systems:
            i += 1
            if progress:
                progress(i, n, f"{case.key} on {name}")
            try:
                ld = load(name, case.workload, whatif, replaced=replaced)
                opts0 = case.options.replace(dtype=pick_dtype(ld.system, case.dtypes))
                opts, _ = fit_plan(ld, opts0)
                run = run_scenario(ld, opts)
            except (ValueError, KeyError) as exc:
                errors.append({"case": case.key, "system": name, "error": str(exc).splitlines()[0]})
                continue
            summ = run.summary()
            summ.insert(0, "case", case.key)
            summ.insert(1, "generation", ld.system.generation)
            summ.insert(3, "plan", plan_text(opts))
            summ["uncertain_inputs"] = "; ".join(provenance_frame.uncertain_inputs(ld.system, run.scenario))
            summ = engine_priced.with_engine(summ, run, engine, table)
            rows.append(summ)
            ops.append(_with_inputs(run.result.ops, summ))
            provs.append(run.provenance.assign(case=case.key))
            comps.append(run.components.assign(case=case.key, label=name))
            inputs.append(inputs_frame(ld, opts).assign(case=case.key, system=name))
    cat = lambda xs: pd.concat(xs, ignore_index=True) if xs else pd.DataFrame()  # noqa: E731
    prov = cat(provs)
    if len(prov):
        prov = prov.drop_duplicates(subset=["system", "group", "field"]).drop(columns="case").reset_index(drop=True)
    return Comparison(cat(rows), cat(ops), prov, cat(comps), cat(inputs),
                      pd.DataFrame(errors, columns=["case", "system", "error"]))

# ---------------------------------------------------------------- report


@dataclass(frozen=True)
class Section:
    """One part of the report: raw SI tables, their display versions (text with markers), charts (each a
    zero-argument function returning the Altair chart: drawn only for .html / .md output, so a text report
    never imports Altair)."""

    title: str
    text: str = ""
    tables: tuple[tuple[str, pd.DataFrame], ...] = ()
    charts: tuple[tuple[str, object], ...] = ()
    display: tuple[tuple[str, pd.DataFrame], ...] = ()


@dataclass(frozen=True)
class Report:
    title: str
    sections: tuple[Section, ...]
    comparison: Comparison
    legend: str = provenance_frame.MARKER_LEGEND


def build_report(cases: Iterable[Case] = CASES, systems: Iterable[str] = SYSTEMS, whatif: wi.WhatIf = wi.WhatIf(),
                 progress: Progress | None = None, with_claims: bool = False, engine: str | None = None,
                 replaced: Replacements = NONE) -> Report:
    """The comparison report as data: an overview, one section per case, claims, provenance notes; serving
    cases priced by the accelerator alone and as `engine` runs them (comparison)."""
    cases, systems = list(cases), list(systems)
    if with_claims and replaced:
        raise ValueError(CLAIMS_AS_SHIPPED)
    n = len(cases) * len(systems) + (1 if with_claims else 0)
    cmp = _stored_comparison(cases, systems, whatif,
                             (lambda i, _, label: progress(i, n, label)) if progress else None, engine, replaced)
    loaded = [wi.apply_spec(catalog.load_system(s, replaced=replaced), whatif.spec) for s in systems]
    overview = spec_tables.systems_frame(loaded)
    ov_cols = ("system", "generation", "chips_per_node", "scaleup_chips", "peak_bf16_per_chip_flop_per_s",
               "hbm_per_chip_bytes", "hbm_bw_per_chip_bytes_per_s", "price_per_node_usd_per_hour", "uncertain_fields")
    secs = [Section("Systems compared", "Per-chip figures from the spec sheets; generation ratios to the first "
                    "system in the chart.", (("systems", overview),),
                    (("Generation ratios (per chip)", _chart("spec_ratios", ratios_frame(loaded))),),
                    (("systems", display_table(overview, ov_cols)),))]
    for case in cases:
        part = cmp.results[cmp.results["case"] == case.key] if len(cmp.results) else cmp.results
        errs = cmp.errors[cmp.errors["case"] == case.key]
        text = (f"Workload {case.workload}, phase {case.options.phase}. Plan per system: the fewest chips that hold "
                f"the scenario (feasibility.min_fit); data type: the first of {', '.join(case.dtypes)} the chip supports. "
                "Sustained / peak = model FLOPs / (step time x peak of that data type). Tokens/s per MW: power.py "
                "(chip power from engine activity, node overhead, PUE); the basis of each system's power figure "
                "is in the last section." + (_ENGINE_TEXT if case.options.phase in ("decode", "prefill") else ""))
        if len(errs):
            text += " Not run: " + "; ".join(f"{r.system} ({r.error})" for r in errs.itertuples())
        chs: list[tuple[str, object]] = []
        disp: tuple = ()
        if len(part):
            chs.append((f"{case.title}: tokens/s per chip",
                        _chart("metric_bars", part, "tokens_per_s_per_chip", facet="none")))
            if part["tokens_per_mw"].notna().any():
                chs.append((f"{case.title}: tokens/s per MW",
                            _chart("metric_bars", part, "tokens_per_mw", facet="none")))
            comp = cmp.components[cmp.components["case"] == case.key]
            tot = part.assign(label=part["system"], total_bytes=part["memory_total_bytes"])
            chs.append((f"{case.title}: memory per chip", _chart("memory_stack", comp, tot)))
            disp = ((case.key, display_table(part, summary_columns(case.options.phase))),)
        secs.append(Section(case.title, text, ((case.key, part),), tuple(chs), disp))
    if with_claims:
        if progress:
            progress(n - 1, n, "seed claims (the serving claims sweep every plan)")
        cl = claims_frame()
        if progress:
            progress(n, n, "done")
        text = (f"{int(cl['within'].sum())} of {len(cl)} seed claims reproduced within tolerance; every miss "
                "carries its reason.") if len(cl) else "No claims registered."
        secs.append(Section("Seed claims", text, (("claims", cl),), (), (("claims", claims_display(cl)),)))
        secs.append(_readings_section())
    econ = {}
    if len(cmp.results):
        for r in cmp.results.itertuples():
            econ.setdefault(r.system, r.economics_note)
    notes = pd.DataFrame([{"system": s.name, "estimated / projected inputs": len(s.uncertain_fields()),
                           "statuses": ", ".join(sorted({v.status.value for v in s.uncertain_fields().values()})),
                           "power and cost basis": econ.get(s.name, "")}
                          for s in loaded])
    secs.append(Section("Inputs that are not published", provenance_frame.MARKER_LEGEND,
                        (("uncertain", notes),), (), (("uncertain", notes),)))
    from perfmodel.report.verdict import verdict_text

    cased = [(sec.title, sec.tables[0][1]) for sec in secs[1:1 + len(cases)] if sec.tables]
    secs.insert(0, Section("Verdict", verdict_text(cased)))
    title = "perfmodel: Trainium generations and GPU peers on representative work"
    if whatif:
        title += f" (what-if: {', '.join(whatif.assignments())})"
    return Report(title, tuple(secs), cmp)


_ENGINE_TEXT = (" Engine columns: the same step priced as today's serving engine runs it (each system's default: "
                "vLLM on GPUs, the NxD Inference stack on Trainium, or --engine): its host time per step joins the "
                "step, a Neuron stack's rules re-price the step itself, and power follows the lower activity "
                "(report/engine_priced.py).")


def _stored_comparison(cases: list[Case], systems: list[str], whatif: wi.WhatIf, progress,
                       engine: str | None = None, replaced: Replacements = NONE) -> Comparison:
    """comparison(), kept on disk per version of the code and catalogue (claims.result_cache): a report run
    again, unchanged, reads its 40 evaluations back."""
    from perfmodel.claims import result_cache

    name = (f"report.comparison {[repr(c) for c in cases]} {systems} {whatif.assignments()} engine={engine}"
            + (f" replaced={replaced.key()!r}" if replaced else ""))
    return result_cache.pickled(name, lambda: comparison(cases, systems, whatif, progress, engine, replaced),
                                Comparison)


def _chart(name: str, *args, **kwargs):
    """charts.<name>(*args, **kwargs), built when called (Section.charts)."""
    def build():
        from perfmodel.report import charts

        return getattr(charts, name)(*args, **kwargs)
    return build


def _readings_section() -> Section:
    """S1-S3 as curves for every reading (claims/serving/readings.py): the table at the claims' point, the ratio
    curves and their charts (S1 tokens/MW, per-chip throughput, S3 interactivity against the quotes)."""
    from perfmodel.claims.serving import readings as sr

    table, curves = sr.table(), sr.curves()
    chs = tuple((f"Trn3 / Trn2: {m}", _chart("claims_ratios", curves, m, q)) for m, q in sr.CHARTED)
    text = ("The serving claims read under every defensible reading: Trn2 at its best recipe, with the shipped "
            "MXFP4 experts upcast to BF16 (no MX types on Trainium2), or converted to FP8; power modelled from "
            "activity or all-in (provisioned at TDP). " + sr.TITLE)
    return Section("Seed claims S1-S3 by reading", text, (("readings", table), ("reading_curves", curves)), chs,
                   (("readings", display_table(table.drop(columns="reading"), list(table.columns.drop("reading")))),))


def claims_display(cl: pd.DataFrame) -> pd.DataFrame:
    """Claims as text: error in %, a check mark, the note."""
    from perfmodel.report import export

    return pd.DataFrame({
        "id": cl["id"], "claim": cl["claim"], "quoted": cl["quoted"].map(export._fmt_cell),
        "modelled": cl["modelled"].map(export._fmt_cell), "unit": cl["unit"],
        "error": cl["error_frac"].map(lambda v: f"{v:+.1%}" if v == v else ""),
        "tolerance": [("≥ " if b == "at_least" else "≤ " if b == "at_most" else "±") + f"{t:.0%}"
                      for t, b in zip(cl["tolerance_frac"], cl["bound"])],
        "within": cl["within"].map(lambda w: "yes" if w else "NO"), "note (reason for a miss)": cl["note"]})


def ratios_frame(systems: list[System], level: str = "chip") -> pd.DataFrame:
    """Long form label, system, ratio (each system / the first) for the spec comparison chart."""
    df = spec_tables.compare_frame(systems, level)
    rcols = [c for c in df.columns if c.startswith("ratio_")]
    long = df.melt(id_vars=["label"], value_vars=rcols, var_name="system", value_name="ratio").dropna()
    long["system"] = long["system"].str.removeprefix("ratio_").str.replace(r"_vs_.*$", "", regex=True)
    return long.reset_index(drop=True)


# ---------------------------------------------------------------- claims


CLAIMS_AS_SHIPPED = ("the seed claims are computed on the catalogue as shipped (its family files' values), not with "
                     "a calibrated set: run them without --calibration")
CLAIM_COLUMNS = ("id", "claim", "seed", "quoted", "modelled", "unit", "error_frac", "tolerance_frac", "bound",
                 "within", "note")


def claims_frame(prefix: str = "") -> pd.DataFrame:
    """Every registered seed claim, computed now: quoted, modelled, error, within, and the note
    (for a miss, the reason)."""
    from perfmodel import claims

    rows = [r.as_dict() for r in claims.all_claims(prefix)]
    df = pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
    df["within"] = df["within"].astype(bool)
    return df


