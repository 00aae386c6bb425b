"""`perfmodel check`: validate every catalogue file and cross-check published totals.

Errors (exit non-zero): anything a loader rejects (syntax, unknown keys, units, dimensions,
non-positive values, sources, derivations, topology sizes, counts above core/limits.py's
ceilings, calibration values outside their parameter's range: param_ranges.py).
Warnings (reported, exit zero): a published node / scale-up total that differs from
chips x chip figure by more than 10%, which usually means a source conflict worth a note.

Does not: fix anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfmodel.catalog import files
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.core import aggregate

TOTAL_TO_AGGREGATE = {
    "hbm_capacity": "hbm_capacity_bytes", "hbm_bandwidth": "hbm_bandwidth_bytes_per_s",
    "efa_bandwidth": "efa_bandwidth_bytes_per_s",
}
WARN_FRAC = 0.10


@dataclass(frozen=True)
class Finding:
    level: str  # "error" | "warning"
    file: str
    message: str


def _loaders(root: Path):
    """(kind, name, file, load-function) for every catalogue file, in a stable order."""
    from perfmodel.catalog import (calibration, interval_files, model_names, quant_modes, serving_engines,
                                   system_names, workload_files)

    for name in files.list_chips(root):
        yield "chip", name, root / "hardware_specs" / "chips" / f"{name}.toml", lambda n=name: files._chip(n, root)
    for name in files.list_systems(root):
        yield "system", name, root / "hardware_specs" / f"{name}.toml", lambda n=name: files.system_spec(n, root=root)
    for name in workload_files.list_workloads(root):
        yield "workload", name, root / "workloads" / f"{name}.toml", lambda n=name: workload_files.load_workload(n, root)
    for name in workload_files.list_drafts(root):
        yield ("draft", name, root / "workloads" / "drafts" / f"{name}.toml",
               lambda n=name: workload_files.load_draft(n, root))
    for path in sorted((root / "hardware_specs" / "calibration").glob("*.toml")):
        yield "calibration", path.stem, path, lambda p=path: calibration.load_calibration_file(p)
    for path in sorted((root / "hardware_specs" / "calibration" / "fitted").glob("*.toml")):  # perfmodel calibrate
        yield "calibrated set", path.stem, path, lambda p=path: calibration.load_calibrated_set(p, root)
    intervals = root / "hardware_specs" / "calibration" / "intervals.json"
    if intervals.exists():  # the residuals every answer's interval comes from (validate --build-intervals)
        yield "intervals", intervals.stem, intervals, lambda: interval_files.load(intervals)
    names = root / "hardware_specs"  # every system's names in measured data, one meaning each (system_names)
    yield "system names", "aliases", names, lambda: system_names.index(root)
    yield "model names", "aliases", root / "workloads", lambda: model_names.index(root)
    quant = root / "hardware_specs" / "serving" / "quant_modes.toml"
    if quant.exists():  # quantisation-mode words of measured files
        yield "quantisation modes", quant.stem, quant, lambda: quant_modes.modes(root)
    engines = root / "hardware_specs" / "serving" / "engines.toml"
    if engines.exists():  # serving-engine profiles and benchmark protocols
        yield "serving engines", engines.stem, engines, lambda p=engines: (
            serving_engines.engines(str(p)), serving_engines.check_envelope_chips(files.list_chips(root), str(p)))


def check_catalog(root: Path | None = None) -> list[Finding]:
    root = Path(root) if root else files.catalog_root()
    from perfmodel.catalog import calibration, model_names, system_names, workload_files

    files.clear_caches()
    system_names.clear_cache()
    model_names.clear_cache()
    workload_files.clear_cache()
    calibration.clear_cache()
    findings: list[Finding] = []
    try:
        files.load_sources(root)
    except CatalogError as exc:
        return [Finding("error", str(root / "hardware_specs" / "sources.toml"), str(exc))]
    for kind, name, path, load in _loaders(root):
        try:
            obj = load()
        except CatalogError as exc:
            findings.append(Finding("error", str(path), str(exc)))
            continue
        except Exception as exc:  # a loader bug must still name the file
            findings.append(Finding("error", str(path), f"{path}: {type(exc).__name__}: {exc}"))
            continue
        if kind == "system":
            findings.extend(_cross_check(obj, path))
    return findings


def _cross_check(system, path: Path) -> list[Finding]:
    out = []
    for level, prefix in (("node", "node.totals."), ("scaleup", "scaleup.totals.")):
        computed = aggregate.totals(system, level)
        for key, v in system.provenance.items():
            if not key.startswith(prefix):
                continue
            name = key[len(prefix):]
            agg_key = TOTAL_TO_AGGREGATE.get(name, f"peak_{name.replace('sparse_', 'sparse_')}_flop_per_s")
            if agg_key not in computed:
                continue
            c = computed[agg_key]
            if abs(c - v.si) / v.si > WARN_FRAC:
                out.append(Finding("warning", str(path),
                                   f"{path}: field {key}: published {v.raw} differs from {level} chips x chip "
                                   f"figure ({c:.4g} SI) by {100 * (c - v.si) / v.si:+.1f}%"))
    return out
