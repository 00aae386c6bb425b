"""What `--calibration FILE` means for a command: the run's Replacements, built once and passed down.

    replacements(files)      the calibrated sets read and checked (catalog/replacements.py), each announced on
                             stderr with the values it brings; none: NONE (the family files' values). cli/parser.py
                             sets it as args.replaced, and every command hands args.replaced to what it loads.
    claims_as_shipped(args)  the seed claims are computed on the catalogue as shipped: asked for with a calibrated
                             set (claims, report --claims, pareto --claims-chart, sensitivity --claim), one line.

Does not: read a calibrated set itself (catalog/calibration.py does) or compute anything.
"""

from __future__ import annotations

import sys


def replacements(files: list[str]):
    from perfmodel.catalog import calibration
    from perfmodel.catalog.replacements import NONE, Replacements

    if not files:
        return NONE
    replaced = Replacements.of_files(files)
    for s in replaced.calibrated:
        print(f"perfmodel: calibrated set {s.origin} applied ({s.family}: "
              f"{', '.join(f'{k} = {calibration.as_written(v, _kind(s, k))}' for k, v in s.values.items())})",
              file=sys.stderr)
    return replaced


def _kind(s, name: str) -> str:
    return s.file.params[name].kind if s.file else "ratio"


def claims_as_shipped(args) -> None:
    if args.replaced:
        from perfmodel.report.compare import CLAIMS_AS_SHIPPED

        raise ValueError(CLAIMS_AS_SHIPPED)
