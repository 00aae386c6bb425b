"""CLI: `calibrate` (fit one hardware family's efficiency parameters to measurements, cross-validated).

    perfmodel calibrate --family neuron                         # defaults, the development cases, 5 folds
    perfmodel calibrate --family nvidia --params tensor_efficiency,op_overhead --cases my.csv --out my-set.toml
    perfmodel --calibration my-set.toml validate                 # any command, with the fitted values

Prints the fitted values next to the family-file values and the cross-validation table (held-out
|error| uncalibrated vs calibrated), and writes the calibrated-set file. Thin over calibrate.py.
Does not: compute anything itself, or apply the fitted set (that takes --calibration).
"""

from __future__ import annotations

import argparse
import os
import sys

from perfmodel.cli.common import add_force_option, count, print_result, refuse, same_file
from perfmodel.cli.work_gate import add_yes_option

# the same list as calibrate.DEFAULT_PARAMS (kept literal so that --help imports nothing heavy; a test checks it)
_DEFAULT_HELP = ("tensor_efficiency, hbm_efficiency, element_efficiency, op_overhead, collective_fixed_latency, "
                 "link_efficiency_node, link_efficiency_scaleup, link_efficiency_scaleout")
LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")
MAX_FOLDS = MAX_JOBS = 1024  # more folds than any measurements file has groups; more processes than any host has CPUs
MAX_SEED = 4_294_967_295  # numpy's seed range (32 bits): a wider seed adds nothing but a typo


def _param_list(text: str) -> str:
    """Type for --params: one or more comma-separated names (a name is checked against the family file
    when the fit starts, at once); an empty list is refused here instead of meaning 'the defaults'."""
    names = [n.strip() for n in str(text).split(",")]
    if not any(names) or not all(n.isidentifier() for n in names):
        raise argparse.ArgumentTypeError(f"expected parameter names such as tensor_efficiency,hbm_efficiency, "
                                         f"got {text[:60]!r}")
    return ",".join(names)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="fit a hardware family's efficiency parameters to measurements, with cross-validated error",
        description="Fit named calibration parameters of one hardware family (one value for the whole family, never "
                    "per case) to a measurements file with scipy least squares on log(predicted / measured), "
                    "within bounds by kind (ratios 0.05-1, times >= 0). Parameters the cases cannot fix (no effect, "
                    "or not separable from another) are held at their family-file values and listed. Reports the "
                    "error on held-out cases (K folds over groups of cases of the same model, fitted on the other "
                    "folds) uncalibrated vs calibrated, then the final fit on every case, and writes a "
                    "calibrated-set file with its provenance. The file is used only when asked for: "
                    "'perfmodel --calibration FILE COMMAND'.")
    p.add_argument("--family", required=True, choices=("neuron", "nvidia"),
                   help="calibration family: neuron (Trainium and Inferentia) or nvidia")
    p.add_argument("--params", metavar="A,B,...", type=_param_list,
                   help=f"comma-separated parameters to fit (default: {_DEFAULT_HELP})")
    p.add_argument("--cases", metavar="FILE", help="measurements CSV (default: reference/published_measurements.csv)")
    p.add_argument("--folds", type=count(0, MAX_FOLDS), default=5,
                   help="cross-validation folds over groups of cases (default 5; at most the number of groups; "
                        "below 2: no cross-validation)")
    p.add_argument("--seed", type=count(0, MAX_SEED), default=0, help="seed of the fold assignment (default 0)")
    p.add_argument("--loss", choices=LOSSES, default="linear",
                   help="least-squares loss on the log residuals (default linear; the others damp outliers)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="calibrated-set file to write (default hardware_specs/calibration/fitted/<family>-<date>.toml)")
    add_force_option(p)
    p.add_argument("--no-write", action="store_true", help="fit and report, write no file")
    p.add_argument("--description", default="", help="free text stored in the file")
    p.add_argument("--format", "-f", choices=("table", "md", "csv", "json"), default="table",
                   help="output format of the report (default table; csv gives the parameter table; json all tables)")
    p.add_argument("--jobs", "-j", type=count(0, MAX_JOBS), default=0,
                   help="processes for the fold fits and the final fit (default or 0: one per CPU, at most folds + "
                        "1; 1: in this process); the results do not depend on it")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    add_yes_option(p)
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args) -> int:
    from perfmodel.report import export
    from perfmodel.validation import calibrate

    if args.no_write and args.out:
        raise ValueError("--out and --no-write contradict each other")
    if args.replaced:  # a fit starts from the family file's values, never from another fit's
        applied = ", ".join(s.origin for s in args.replaced.calibrated)
        return refuse("calibrate", f"a calibrated set is applied ({applied}); calibrate fits from the family files' "
                                   "values: run it without --calibration")
    why = None if args.no_write else _output_refusal(args)
    if why:
        return refuse("calibrate", why)
    names = [n.strip() for n in args.params.split(",") if n.strip()] if args.params else None
    say = None if args.quiet else (lambda msg: print(f"calibrate: {msg}", file=sys.stderr, flush=True))
    jobs = args.jobs if args.jobs > 0 else min(os.cpu_count() or 1, max(args.folds, 0) + 1)
    from perfmodel.cli import work_gate

    def confirm(k: int, n: int, p: int) -> None:
        work_gate.gate("calibrate", f"{k} fold fits and the final fit over {n} cases and {p} parameters",
                       work_gate.calibrate_seconds(k, n, p) / max(min(jobs, k + 1), 1), yes=args.yes)

    res = calibrate.fit(args.family, names, args.cases, folds=args.folds, seed=args.seed, loss=args.loss,
                        progress=say, jobs=jobs, confirm=confirm)
    written = None if args.no_write else res.write(args.out, args.description)
    params = res.params_frame()
    shown = params.drop(columns=["initial_si", "fitted_si"])
    cv = res.cv_frame()
    meta = {"family": args.family, "cases_file": args.cases or "reference/published_measurements.csv",
            "cases": len(res.problem.case_ids), "folds": len(res.folds), "seed": args.seed, "loss": args.loss,
            "method": calibrate.METHOD, "seconds": round(res.seconds, 1), "jobs": jobs,
            "model_evaluations": res.problem.evaluations,
            "written": str(written) if written else ""}
    if args.format == "json":
        print_result(export.emit_sheets({"params": params, "cross_validation": cv}, "json", "params", meta=meta))
        return 0
    if args.format == "csv":
        print_result(export.emit(shown, "csv"))
        return 0
    tail = (f"wrote {written}: use it with 'perfmodel --calibration {written} validate' (or any command)"
            if written else "no file written (--no-write)")
    text = "\n\n".join([
        export.emit(shown, args.format, f"{args.family}: fitted parameters ({len(res.problem.case_ids)} cases, "
                                        f"{res.seconds:.0f} s, {res.problem.evaluations} model evaluations)"),
        export.emit(cv.drop(columns=["held_out_groups"]), args.format,
                    "error |predicted / measured - 1|: uncalibrated (family file) vs calibrated; held-out rows are "
                    "fitted without their cases (which groups: -f json)"),
        tail])
    print_result(text)
    return 0


def _output_refusal(args) -> str | None:
    """What parsing cannot check (it sees only the options given): the default --out of today (a dated
    file: a second fit the same day would replace the first) and the default --cases file."""
    import datetime as dt

    from perfmodel.validation import fit_result, harness

    if args.out:
        if args.cases is None and same_file(args.out, harness.CSV):
            return (f"--out {args.out} is the measurements file this command reads (the default --cases); choose "
                    "another output file")
        return None
    target = fit_result.default_path(args.family, dt.date.today().isoformat())
    inputs = [*getattr(args, "calibration", []), *getattr(args, "calibration_cmd", [])]
    if any(same_file(target, f) for f in inputs):
        return f"{target} (the default --out) is a --calibration file this command reads; pass --out another file"
    if target.exists() and not args.force:
        return f"{target} (the default --out) exists; pass --force to replace it, or --out another file"
    return None
