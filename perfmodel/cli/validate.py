"""CLI: `validate` (predicted vs measured on a measurements file, error statistics).

    perfmodel validate                                  # the vendored development cases
    perfmodel validate --cases my_measurements.csv      # any file with the same columns
    perfmodel validate --cases reference/inferencex_serving_dev.csv   # a recognised format, by its columns
    perfmodel validate nccl training --show summary -f json

Every command builds DataFrames with library calls and hands them to export.
Does not: compute anything itself.
"""

from __future__ import annotations

import argparse

from perfmodel.cli import intervals
from perfmodel.cli.common import add_output_options, print_result, refuse, same_file

SHOW = ("all", "cases", "summary", "not-expressed", "fidelity", "frontier", "intervals")
TITLES = {"cases": "validation cases (error = (predicted - measured) / measured)",
          "by_phase": "by phase (target: median |error| <= 15%, p90 <= 40%)",
          "by_hardware_family": "by hardware family", "by_metric": "by metric", "by_family": "by family",
          "not_expressed": "cases the model cannot express yet",
          "coverage": "interval coverage: the share of measurements inside their predicted interval (predicted_low "
                      "- predicted_high), by family and metric",
          "interval_coverage": "interval coverage, leave one model out (every interval built without the model "
                               "it is checked on): by quantity and level",
          "fidelity_overall": "fidelity by metric, backend and plan (as written, or pools sized by rule) (target: "
                              "TPOT median <= 15%, p90 <= 40%; TTFT 25%, 60%)",
          "fidelity": "fidelity by system x backend x model x mode (gap: what the model lacks where it misses)",
          "fidelity_cases": "serving cases by backend, model and mode",
          "frontier_summary": "frontier fidelity over (system, model, lengths) groups: the model's searched frontier "
                              "at each measured frontier point, predicted / measured output tokens/s per GPU "
                              "(target for the engine frontier: median |ratio - 1| <= 20%)",
          "frontier_groups": "frontier fidelity per group (engine: the best of the group's measured engines, each "
                             "inside its measured envelope; roofline: no engine, every plan; both in the group's "
                             "measured data types; configs: the model at the measured configurations only)",
          "frontier_points": "measured frontier points with the model frontiers' best at their interactivity"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="predicted vs measured on a measurements file, with error statistics",
                       description="Run every case of a measurements file (columns of "
                                   "reference/published_measurements.csv, or a recognised format such as the "
                                   "InferenceX serving corpus, known by its columns) through the model: predicted vs "
                                   "measured, signed error per case, median and 90th-percentile |error| by phase, "
                                   "hardware family and metric. Cases the model cannot express are listed with "
                                   "the reason. Nothing is fitted here (serving-engine parameters fitted by engine_fit come from "
                                   "their profile file).")
    p.add_argument("families", nargs="*", metavar="FAMILY", help="families to run (default: all)")
    p.add_argument("--cases", metavar="FILE", help="measurements CSV (default: reference/published_measurements.csv; "
                                                   "also reference/inferencex_serving_dev.csv's format)")
    p.add_argument("--show", choices=SHOW, default="all",
                   help="cases, summary (by phase, hardware family, metric), not-expressed, fidelity (serving "
                        "cases by system x backend x model x mode, with the gap each weak cell names), frontier "
                        "(the searched serving frontier against the measured one per system, model and lengths: "
                        "engine, roofline and configs frontiers), or all (default; without frontier)")
    p.add_argument("--summary-only", action="store_true", help="same as --show summary")
    p.add_argument("--interval", type=intervals.level, default=intervals.DEFAULT, metavar="LEVEL",
                   help="each case's predicted_low / predicted_high at this level and the coverage of the measured "
                        "values (default 0.8; 0: none)")
    p.add_argument("--build-intervals", action="store_true",
                   help="rebuild hardware_specs/calibration/intervals.json from the development measurements (the "
                        "residuals every answer's interval comes from) and show its leave-one-model-out coverage")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (--show frontier)")
    p.add_argument("--strict", action="store_true",
                   help="a row that cannot be read or predicted is an error (default: it is listed under "
                        "not-expressed with its reason and every other row is predicted)")
    add_output_options(p)
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    from perfmodel import validation
    from perfmodel.core import safe_write
    from perfmodel.report import export
    from perfmodel.validation import harness

    if args.out and args.cases is None and same_file(args.out, harness.CSV):  # --cases given: checked at parsing
        return refuse("validate", f"--out {args.out} is the measurements file this command reads (the default "
                                  "--cases); choose another output file")
    show = "summary" if args.summary_only else args.show
    if args.build_intervals or show == "intervals":
        if args.replaced:  # the shipped file is the family files' residuals; a calibrated set's would be another's
            return refuse("validate", "--build-intervals and --show intervals use the family files' values (the "
                                      "shipped intervals file); run them without --calibration")
        return _intervals(args)
    if show == "frontier":
        from perfmodel.cli.common import progress_bar
        from perfmodel.validation import frontier

        src = frontier.rows_of(args.cases)
        with progress_bar("frontier search per (system, model, lengths) group", not args.no_progress) as cb:
            sheets = frontier.sheets(src, cb, args.replaced)
    else:
        bounds = None
        if args.interval:  # the intervals file read here, at the edge
            from perfmodel.catalog import interval_files
            from perfmodel.validation import intervals as case_intervals

            bounds = case_intervals.case_bounds(interval_files.load(), args.interval, args.cases)
        sheets = validation.sheets(args.cases, args.families or None, strict=args.strict, bounds=bounds,
                                   replaced=args.replaced)
    pick = {"cases": ["cases"], "summary": ["by_phase", "by_hardware_family", "by_metric", "by_family"]
            + (["coverage"] if "coverage" in sheets else []),
            "not-expressed": ["not_expressed"], "fidelity": ["fidelity_overall", "fidelity"],
            "frontier": ["frontier_summary", "frontier_groups", "frontier_points"],
            "all": list(sheets)}[show]
    if not pick or any(k not in sheets for k in pick):
        return refuse("validate", "--show fidelity needs serving cases with backend and mode (e.g. --cases "
                                  "reference/inferencex_serving_dev.csv)")
    chosen = {k: sheets[k] for k in pick}
    if args.format in ("json", "xlsx"):
        print_result(export.emit_sheets(chosen, args.format, pick[0], args.out, default_name="validation",
                                        meta={"cases_file": args.cases or "reference/published_measurements.csv",
                                              "calibrated_sets": ", ".join(
                                                  s.origin for s in args.replaced.calibrated) or "none"}))
        return 0
    if args.format == "csv":
        print_result(export.emit(chosen[pick[0]], "csv", out=args.out))
        return 0
    # people read the verdict first: the summaries, then what was not expressed, then every case
    lead = ["by_phase", "by_family", "by_hardware_family", "by_metric", "coverage", "fidelity_overall", "not_expressed",
            "frontier_summary", "frontier_groups"]
    order = [k for k in lead if k in chosen] + [k for k in chosen if k not in lead]
    text = "\n\n".join(export.emit(chosen[k], args.format, TITLES[k]) for k in order if len(chosen[k]))
    if args.out:
        safe_write.write_text(args.out, text)
        text = f"wrote {args.out}"
    print_result(text)
    return 0


def _intervals(args) -> int:
    """--build-intervals (rewrite the file, then its coverage) or --show intervals (the shipped file's coverage)."""
    import pandas as pd

    from perfmodel.catalog import interval_files
    from perfmodel.cli.common import progress_bar
    from perfmodel.report import export
    from perfmodel.validation import intervals as builder

    if args.build_intervals:
        with progress_bar("every development measurement through the model", not args.no_progress):
            path, doc = builder.write()
        lead = f"wrote {path} ({sum(s['residuals'] for s in doc['sources']):,} residuals, commit {doc['commit']})"
    else:
        doc, lead = None, f"{interval_files.path_of()} (built by {builder.COMMAND})"
    rows = pd.DataFrame(builder.read_rows(doc))
    with progress_bar("leave-one-model-out coverage", not args.no_progress):
        cov = builder.coverage(rows)
    print_result(f"{lead}\n" + export.emit(cov, args.format, TITLES["interval_coverage"], args.out))
    return 0
