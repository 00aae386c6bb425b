"""The explorer's computations, cached per input (st.cache_data: each URL variant is an entry): thin calls into
perfmodel.report and the catalogue.

Does not: draw anything.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from perfmodel import catalog, report
from perfmodel.catalog import spec_tables
from perfmodel.catalog import whatif as wi
from perfmodel.catalog.files import catalog_root
from perfmodel.report import url_state as us

CACHE_ENTRIES = 32  # results kept per cached function (each URL variant is an entry: keep memory bounded)


@st.cache_resource
def load_catalog() -> dict:
    """Names in the catalogue (read-only, shared by every session)."""
    return {"systems": catalog.list_systems(), "workloads": catalog.list_workloads()}


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def supported_dtypes(system: str) -> list[str]:
    return us.supported_dtypes(system)


@st.cache_data(show_spinner="Evaluating...", max_entries=CACHE_ENTRIES)
def run(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf) -> dict:
    """One scenario: summary, per-operator, engine, bound, memory, roofline and workbook frames."""
    return report.scenario_page(system, workload, opts, whatif)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def spec_sheet(system: str, whatif: wi.WhatIf):
    s = wi.apply_spec(catalog.load_system(system), whatif.spec)
    return spec_tables.show_frame(s)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def compare(systems: tuple[str, ...], level: str):
    loaded = [catalog.load_system(s) for s in systems]
    return (spec_tables.compare_display(spec_tables.compare_frame(loaded, level), loaded),
            report.ratios_frame(loaded, level))


@st.cache_data(show_spinner="Memory on each system...", max_entries=CACHE_ENTRIES)
def memory_compare(systems: tuple[str, ...], workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf):
    return report.memory_comparison(systems, workload, opts, whatif)


@st.cache_data(show_spinner="Collectives...", max_entries=CACHE_ENTRIES)
def collectives(systems: tuple[str, ...], names: tuple[str, ...], group: int, lo: float, hi: float,
                algorithms: tuple[str, ...], whatif: wi.WhatIf, launch: str = "in-graph"):
    from perfmodel.comm import collectives as co

    return report.collective_frame(systems, names, group, co.size_range(lo, hi), algorithms, whatif, launch)


@st.cache_data(show_spinner="Serving frontier (every plan, vectorised)...", max_entries=CACHE_ENTRIES)
def frontier(systems: tuple[str, ...], workload: str, whatif: wi.WhatIf, isl: int, osl: int, y: str, grid: str,
             frontiers: str = "engine"):
    return report.serving_frontier(systems, workload, whatif, isl, osl, y, grid=grid, frontiers=frontiers)


@st.cache_data(show_spinner="The seed claims' sweeps (Trn2 and Trn3 UltraServers, every plan)...",
               max_entries=CACHE_ENTRIES)
def claim_points(y_col: str):
    return report.claim_points(y_col)


@st.cache_data(show_spinner="Capacity plan (every plan of each system, then the SLA)...",
               max_entries=CACHE_ENTRIES)
def plan(systems: tuple[str, ...], workload: str, whatif: wi.WhatIf, isl: int, osl: int, rps: float, tpot_s: float,
         ttft_s: float, peak: float, grid: str, percentile: float = 0.0, modes: tuple[str, ...] = ("aggregated",)):
    return report.capacity_plan(systems, workload, whatif, isl, osl, rps, tpot_s, ttft_s, peak, grid, percentile,
                                modes)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def formulas(workload: str, phase: str):
    from perfmodel.catalog import workload_refs
    from perfmodel.model import formula_catalog

    arch = workload_refs.load(workload)
    return formula_catalog.op_formula_table(arch, phase), formula_catalog.symbol_table()


@st.cache_data(show_spinner="Sensitivity (two evaluations per input)...", max_entries=CACHE_ENTRIES)
def sensitivity(system: str, workload: str, opts: wi.ScenarioOptions, whatif: wi.WhatIf, column: str):
    return report.sensitivity_frame(report.load(system, workload, whatif), opts, column)


@st.cache_data(show_spinner="S1-S3 for every reading (Trn2 recipe, power basis)...", max_entries=2)
def readings():
    from perfmodel.claims.serving import readings as serving_readings

    return serving_readings.table(), serving_readings.curves()


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def claims():
    return report.claims_frame()


@st.cache_data(show_spinner="Running every case through the model...", max_entries=4)
def validation_sheets(csv_bytes: bytes | None, name: str = "", builtin: str = "") -> dict:
    """Validation sheets for a built-in cases file (None: the published measurements; `builtin`: a file under
    reference/) or an uploaded file's bytes, read from a temporary directory that is gone when this returns.
    A file the harness refuses raises ValueError naming the upload (not the temporary path)."""
    from perfmodel import validation

    if csv_bytes is None:
        return validation.sheets(catalog_root() / "reference" / builtin if builtin else None)
    with tempfile.TemporaryDirectory(prefix="perfmodel-upload-") as tmp:
        path = Path(tmp) / "measurements.csv"
        path.write_bytes(csv_bytes)
        try:
            return validation.sheets(path)
        except (ValueError, KeyError) as exc:
            raise ValueError(us.one_line(exc).replace(f"{path}: ", "").replace(str(path), name)) from None


@st.cache_data(show_spinner="Evaluating the scenarios...", max_entries=CACHE_ENTRIES)
def scenario_comparison(saved: tuple):
    from perfmodel.report import scenario_compare

    return scenario_compare.compare(list(saved))


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES)
def saved_scenario(name: str, data: bytes):
    """An uploaded scenario file, kept (report.uploads) and loaded once per content, not on every rerun."""
    from perfmodel.report import uploads

    return uploads.load_scenario(name, data)
