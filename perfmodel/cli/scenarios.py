"""Scenarios as files on the command line: `--scenario FILE` and `--save-scenario FILE` on the scenario commands
(roofline, memory), and `perfmodel compare A.toml B.toml ...` side by side with the change against the first.

With --scenario the file gives the system, workload, options and what-ifs; a flag given on the command line
replaces the file's value (the scenario flags default to None so a flag given can be told from one left out);
--set adds what-ifs to the file's. Without it --hardware and --workload are required, as before.
Does not: compute anything itself (report.scenario_compare, report.frames).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from perfmodel.cli.common import add_output_options, print_result, refuse_or_banner, with_banner

# the scenario flags (cli/report.py _scenario_args): argparse dest -> ScenarioOptions field (a flag neither given
# nor set by a scenario file takes the field's own default)
FLAGS = {"phase": "phase", "batch": "batch", "seq": "seq_len", "context": "context", "tp": "tp", "pp": "pp", "ep": "ep",
         "dp": "dp", "microbatches": "microbatches", "zero": "zero", "dtype": "dtype", "recompute": "recompute",
         "offload_layers": "offload_layers", "lora_rank": "lora_rank", "recompute_layers": "recompute_layers"}


def add_scenario_file_options(g) -> None:
    g.add_argument("--scenario", metavar="FILE.toml", help="take the system, workload, options and what-ifs from a "
                   "scenario file (flags given here replace its values; --set adds what-ifs)")
    g.add_argument("--save-scenario", metavar="FILE.toml", help="write this scenario to a file (perfmodel compare, "
                   "--scenario and the explorer read it)")
    g.add_argument("--scenario-name", metavar="TEXT", help="the saved scenario's name (default: the file's stem)")


def resolve(args):
    """(system, workload, ScenarioOptions, what-if texts) of the command line and its --scenario file."""
    from perfmodel.catalog import scenario_files
    from perfmodel.catalog import whatif as wi

    base = scenario_files.load(args.scenario) if args.scenario else None
    system = args.hardware or (base.system if base else None)
    workload = args.workload or (base.workload if base else None)
    if not system or not workload:
        missing = " and ".join(f for f, v in (("--hardware", system), ("--workload", workload)) if not v)
        raise ValueError(f"{missing} required (or --scenario FILE.toml naming them)")
    given = {field: getattr(args, dest) for dest, field in FLAGS.items() if getattr(args, dest) is not None}
    options = (base.options if base else wi.ScenarioOptions()).replace(**given)
    texts = [*(base.whatif.assignments() if base else []), *args.overrides]
    return system, workload, options, texts


def save(args, system: str, workload: str, opts, whatif) -> None:
    """--save-scenario: the scenario as run, written atomically; a line on stderr says where."""
    import sys

    from perfmodel.catalog import scenario_files
    from perfmodel.core import safe_write

    if not args.save_scenario:
        return
    path = Path(args.save_scenario)
    if path.suffix != ".toml":
        raise ValueError(f"--save-scenario {path}: a scenario file ends in .toml")
    if path.exists() and not getattr(args, "force", False):
        raise ValueError(f"--save-scenario {path} exists; pass --force to replace it")

    def ref(text: str) -> str:  # a file named from here, written relative to the scenario's folder (load's rule)
        if text.endswith((".toml", ".json")) and Path(text).is_file():
            return os.path.relpath(Path(text).resolve(), path.parent.resolve())
        return text

    saved = scenario_files.Saved(name=args.scenario_name or path.stem, system=ref(system), workload=ref(workload),
                                 options=opts, whatif=whatif)
    safe_write.write_text(path, scenario_files.to_toml(saved))
    print(f"perfmodel: scenario {saved.name!r} saved to {path}", file=sys.stderr)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="two or more scenario files side by side, with each one's change against the "
                       "first", description="Evaluate each scenario file (perfmodel roofline --save-scenario, the "
                       "explorer's 'Save scenario') and put their figures side by side: the plan, the phase's "
                       "latency, tokens/s per chip, MFU, memory, tokens/s per MW and $ per million tokens, each "
                       "scenario after the first with its change against it.")
    p.add_argument("files", nargs="+", metavar="FILE.toml", help="scenario files (two or more; the first is the "
                   "baseline)")
    p.add_argument("--allow-oversubscribed", action="store_true",
                   help="compare a scenario whose memory per chip exceeds the chip's HBM, under a banner (without it "
                        "such a scenario is refused: it cannot run); an invalid plan is always refused")
    add_output_options(p)
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from perfmodel.catalog import scenario_files
    from perfmodel.report import export, scenario_compare

    saved = [scenario_files.load(f) for f in args.files]
    shown, values = scenario_compare.compare(saved, args.replaced)
    banners, files = [], {s.name: f for f, s in zip(args.files, saved)}
    for name, invalid, misfit in scenario_compare.impossible(values):  # as roofline and memory: no such answer
        try:
            banners.append(f"{name}: {refuse_or_banner([invalid] if invalid else [], misfit, args.allow_oversubscribed)}")
        except ValueError as exc:
            raise ValueError(f"{files[name]}: scenario {name!r}: {exc}") from None
    meta = {"scenarios": [s.name for s in saved], "files": list(args.files), "baseline": saved[0].name}
    title = with_banner(f"{len(saved)} scenarios, each against {saved[0].name!r}", " ".join(banners), args.format,
                        "compare")
    text = export.emit_sheets({"comparison": shown, "values": values}, args.format, "comparison", args.out, meta,
                              default_name="compare_" + "_vs_".join(s.name for s in saved), title=title)
    print_result(text)
    return 0
