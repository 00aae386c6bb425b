"""What every command module shares: output options, deferred options, printing a result.

A command whose options need model names (choices, defaults) adds them through `defer`:
they are added only when that command is parsed (or by build_parser(complete=True)), so
building the parser imports no model code.
--out and the other output files (--chart, --timeline-out, --requests-out) are checked as soon as the command line
is parsed (output_refusal): never a file the command reads, and an existing file only with --force. The writers
(core/safe_write.py) write a temporary file and rename it into place when complete.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager

# export.FORMATS, written out so that building the parser does not import export (pandas);
# tests/test_cli_startup.py checks that the two agree
FORMATS = ("table", "md", "csv", "json", "xlsx")
_DEFERRED = "_perfmodel_deferred"


def defer(p: argparse.ArgumentParser, add_arguments) -> None:
    """Run add_arguments(p) only when p's command is parsed: its options may then import the model."""
    setattr(p, _DEFERRED, add_arguments)


def complete_deferred(p: argparse.ArgumentParser | None) -> None:
    add_arguments = getattr(p, _DEFERRED, None)
    if add_arguments is not None:
        setattr(p, _DEFERRED, None)
        add_arguments(p)


class SubParsers(argparse._SubParsersAction):
    """Subcommands whose deferred options are added when the command is chosen, and whose --out is
    checked once the command's options are parsed."""

    def __call__(self, parser, namespace, values, option_string=None):
        complete_deferred(self._name_parser_map.get(values[0]))
        super().__call__(parser, namespace, values, option_string)
        # before the command runs (a sweep or a fit may take minutes), not when it writes
        why = output_refusal(namespace, self._name_parser_map[values[0]])
        if why:
            command = " ".join([values[0], *(v for k, v in vars(namespace).items()
                                             if k.endswith("_command") and isinstance(v, str))])
            parser.exit(2, f"perfmodel {command}: {why}\n")


def add_output_options(p: argparse.ArgumentParser, formats=FORMATS) -> None:
    p.add_argument("--format", "-f", choices=formats, default="table",
                   help="output format (default: table; json is stable for tooling; xlsx writes a workbook)")
    p.add_argument("--out", "-o", metavar="FILE", help="write the output to FILE instead of the terminal")
    p.add_argument("--wide", action="store_true", help="tables: every column at any terminal width (default: "
                   "the columns that fit, the rest named under the table)")
    add_force_option(p)


def add_force_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace --out FILE if it exists (never an input of the same command)")


def _option_names(p: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> the option a user typed for it (--cases), through nested subcommands."""
    names = {"calibration": "--calibration", "calibration_cmd": "--calibration"}
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                names.update(_option_names(sub))
        elif a.dest not in names:
            names[a.dest] = max(a.option_strings, key=len) if a.option_strings else a.dest.upper()
    return names


def same_file(a, b) -> bool:
    """Whether paths a and b name one existing file (links and relative paths resolved)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


OUTPUTS = ("out", "chart", "timeline_out", "requests_out")  # the options a command writes files through


def output_refusal(namespace: argparse.Namespace, p: argparse.ArgumentParser) -> str | None:
    """Why an output file (--out, --chart, --timeline-out, --requests-out) may not be written: it is a file this
    command reads (whatever option names it), or it exists and --force was not given. None when every one may be
    written. A folder is left to its command (a sweep's Parquet dataset refuses a folder holding part files)."""
    names = None
    for dest in OUTPUTS:
        out = getattr(namespace, dest, None)
        if not isinstance(out, str) or not os.path.exists(out) or os.path.isdir(out):
            continue
        names = names or _option_names(p)
        for other, value in vars(namespace).items():
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if other not in OUTPUTS and isinstance(v, str) and os.path.isfile(v) and same_file(v, out):
                    return (f"{names.get(dest, dest)} {out} is the {names.get(other, other)} file this command "
                            "reads; choose another output file")
        if not getattr(namespace, "force", False):
            return f"{names.get(dest, dest)} {out} exists; pass --force to replace it"
    return None


def refuse(command: str, why: str) -> int:
    """A refusal found once the command runs (a default input or output): one line, exit status 2 as above."""
    print(f"perfmodel {command}: {why}", file=sys.stderr)
    return 2


def write_text(out: str, text: str) -> None:
    """Write a command's text output to --out whole (temporary file, renamed when complete)."""
    from perfmodel.core import safe_write  # here: building the parser imports no model module

    safe_write.write_text(out, text)


BOX = set("│┃┏┓┗┛┡┩└┘┌┐─━╇┼╸╺")  # a rich table's lines: fitted already, never re-wrapped


def fit_lines(text: str, width: int | None) -> str:
    """Prose lines longer than `width` wrapped at spaces (indent kept); table lines left as drawn."""
    if width is None:
        return text
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= width or BOX & set(line):
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line.strip(), width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_long_words=False, break_on_hyphens=False) or [line]
    return "\n".join(out)


def print_result(text: str) -> None:
    """Print a command's output, its prose fitted to the terminal (core/terminal.py)."""
    from perfmodel.core import terminal

    text = fit_lines(text, terminal.table_width())
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


CALIBRATION_HELP = ("apply a calibrated parameter set written by 'perfmodel calibrate' to this command (repeatable: "
                     "one file per family); without it every command uses the family files' values")


# ---------------------------------------------------------------- option types: counts and sizes, checked when parsed
# Each returns an argparse `type=` function: a bad value is one line naming the option (argparse adds
# "argument --chips:"), the value and the allowed range, before the command runs. A ceiling is named by its
# core/limits.py constant and looked up only when a value is parsed (the parser imports no model module).


def count(lo: int = 1, hi: int | str = "MAX_CHIPS", auto: bool = False):
    """Type for a whole-number option in [lo, hi] (hi: a number or a limits.py name): '0', '-4', '1.5',
    '1e3' refused; with `auto`, 'auto' gives 0 (the caller's default: 0 itself is refused, never a default)."""
    def parse(text: str) -> int:
        from perfmodel.core import limits

        top, s, alt = getattr(limits, hi) if isinstance(hi, str) else hi, str(text).strip(), " (or auto)" * auto
        if auto and s.lower() == "auto":
            return 0
        if not s.lstrip("+-").isdigit() or len(s) > 20:  # digits only: no float, no expression, no 10**9 digits
            raise argparse.ArgumentTypeError(f"expected a whole number between {lo} and {top:,}{alt}, got {text!r}")
        v = int(s)
        if not lo <= v <= top:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {top:,}{alt}, got {v:,}")
        return v

    parse.__name__ = "count"
    return parse


def count_list(lo: int = 1, hi: int | str = "MAX_CHIPS"):
    """Type for 'N[,N...]': each a whole number in [lo, hi]; returns the text as given (the command splits it)."""
    one = count(lo, hi)

    def parse(text: str) -> str:
        items = [t.strip() for t in str(text).split(",")]
        for t in items:
            one(t)
        return ",".join(items)

    parse.__name__ = "count list"
    return parse


def positive(hi: float | None = None, lo_open: bool = True):
    """Type for a real-valued option > 0 (>= 0 when lo_open=False), finite, at most `hi`."""
    import math

    def parse(text: str) -> float:
        try:
            v = float(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        ok = math.isfinite(v) and (v > 0 if lo_open else v >= 0) and (hi is None or v <= hi)
        if not ok:
            span = f"{'>' if lo_open else '>='} 0" + (f" and <= {hi:g}" if hi is not None else "") + ", finite"
            raise argparse.ArgumentTypeError(f"must be {span}, got {text!r}")
        return v

    parse.__name__ = "number"
    return parse


def dtype_arg(text: str) -> str:
    """A data type's canonical name ('bf16', 'mxfp4', ...); an unknown one is argparse's one-line error."""
    from perfmodel.core.dtypes import DType

    try:
        return DType.parse(text).value
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def lengths_arg(text: str):
    """'1024' or '512:0.5,4096:0.5' (length:weight pairs); lengths whole numbers in [1, MAX_SEQ_TOKENS],
    weights positive and finite."""
    length, weight = count(1, "MAX_SEQ_TOKENS"), positive()
    try:
        if ":" not in text:
            return length(text)
        return [(length(a), weight(b)) for a, b in (p.split(":") for p in text.split(","))]
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise argparse.ArgumentTypeError(f"lengths: a whole number or LENGTH:WEIGHT,... pairs, got {text!r}"
                                         + (f" ({exc})" if isinstance(exc, argparse.ArgumentTypeError) else "")) \
            from None


def size(text: str) -> str:
    """Type for a message size with its unit ('1MiB', '4 GiB'), at least 1 byte; returns the text."""
    from perfmodel.core import units

    try:
        v = units.parse(text, "capacity")
    except units.UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return text


def size_range(text: str) -> str:
    """Type for 'LO:HI' message sizes ('1KiB:4GiB'), 1 B <= LO <= HI; returns the text."""
    from perfmodel.core import units

    parts = str(text).split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected LO:HI such as 1KiB:4GiB, got {text!r}")
    lo, hi = (size(p.strip()) for p in parts)
    if units.parse(lo, "capacity") > units.parse(hi, "capacity"):
        raise argparse.ArgumentTypeError(f"LO {lo} is larger than HI {hi}: write LO:HI with LO <= HI, e.g. {hi}:{lo}")
    return text


def refuse_or_banner(invalid: list[str] | tuple[str, ...], misfit: str, allow_oversubscribed: bool,
                     hint: str = "") -> str:
    """An invalid plan is refused (one line naming the rules it breaks); a plan that does not fit
    memory (`misfit`: why, "" when it fits) is refused unless --allow-oversubscribed, then shown
    under the banner this returns ("" for a plan that is valid and fits)."""
    if invalid:
        raise ValueError(f"invalid plan: {'; '.join(invalid)}")
    if not misfit:
        return ""
    if not allow_oversubscribed:
        raise ValueError(f"{misfit}: this scenario cannot run ({hint + '; ' if hint else ''}--allow-oversubscribed "
                         f"shows its numbers anyway)")
    return f"NOT A VALID ANSWER: {misfit}. The numbers below are what it would take if it fitted."


def with_banner(title: str, banner: str, fmt: str, command: str) -> str:
    """The title under a banner; machine formats (csv, json, xlsx) drop titles, so there the
    banner goes to stderr as well: an oversubscribed answer is never shown without it."""
    if banner and fmt not in ("table", "md"):
        print(f"perfmodel {command}: {banner}", file=sys.stderr)
    return f"{banner}\n{title}" if banner else title


PROGRESS_PERIOD_S = 5.0  # a CI log or a pipe: often enough to show work goes on, rarely enough to stay readable


@contextmanager
def progress_bar(label: str, enabled: bool = True, period: float = PROGRESS_PERIOD_S):
    """Progress on stderr; yields a callback(done, total, label=None) (a label renames the task). On a terminal
    a rich bar; otherwise (a pipe, a CI log) a line every `period` seconds while the work runs, and one when it
    ends if it took that long: 'perfmodel: evaluating: 3/8, 12 s'."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        yield from _progress_lines(label, period)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=None)

        def cb(done: int, total: int, label: str | None = None) -> None:
            prog.update(task, completed=done, total=total, **({"description": label} if label else {}))

        yield cb


def _progress_lines(label: str, period: float):
    """progress_bar off a terminal: a heartbeat thread prints the state every `period` seconds."""
    import threading
    import time

    state = {"label": label, "done": None, "total": None}
    t0, stop = time.monotonic(), threading.Event()

    def line(word: str = "") -> str:
        count = f": {state['done']}/{state['total']}" if state["total"] else ""
        return f"perfmodel: {state['label']}{count}, {time.monotonic() - t0:.0f} s{word}"

    def beat() -> None:
        while not stop.wait(period):
            print(line(), file=sys.stderr, flush=True)

    def cb(done: int, total: int, label: str | None = None) -> None:
        state.update(done=done, total=total, **({"label": label} if label else {}))

    worker = threading.Thread(target=beat, daemon=True)
    worker.start()
    try:
        yield cb
    finally:
        stop.set()
        worker.join()
        if time.monotonic() - t0 >= period:
            print(line(" (done)"), file=sys.stderr, flush=True)


CHART_SUFFIXES = ("svg", "png", "html")


def chart_file(text: str) -> str:
    """--chart's value, checked before any work: a .svg, .png or .html file name."""
    if text.rsplit(".", 1)[-1].lower() not in CHART_SUFFIXES:
        raise argparse.ArgumentTypeError(f"{text!r}: a chart is written as .svg, .png or .html")
    return text


def add_chart_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--chart", metavar="FILE", type=chart_file, help=f"{what}, as .svg, .png or .html (a table to "
                   "--out FILE.html carries it too)")


def write_extra(path: str, data: str | bytes, force: bool) -> None:
    """An extra output file (chart, per-request CSV): written whole, an existing one only with --force."""
    import os

    from perfmodel.core import safe_write

    if os.path.exists(path) and not force:
        raise ValueError(f"{path} exists; pass --force to replace it")
    (safe_write.write_bytes if isinstance(data, bytes) else safe_write.write_text)(path, data)


def chart_svg(chart):
    """export.emit's chart_svg for a chart builder (chart(): an Altair chart), drawn only when a page asks."""
    def svg() -> str:
        from perfmodel.report import charts

        return charts.to_svg(chart())

    return svg


def write_chart(chart, path: str | None, force: bool) -> None:
    """--chart FILE: the command's chart (chart(): an Altair chart, built only when asked) as SVG, PNG or HTML."""
    if not path:
        return
    from perfmodel.report import charts

    kind = path.rsplit(".", 1)[-1].lower()
    if kind not in CHART_SUFFIXES:
        raise ValueError(f"--chart {path}: a chart is written as .svg, .png or .html")
    ch = chart()
    data = {"svg": lambda: charts.to_svg(ch), "png": lambda: charts.to_png(ch), "html": lambda: ch.to_html()}[kind]()
    write_extra(path, data, force)


def add_engine_option(p) -> None:
    """--engine for the commands that price serving (serve, pareto, sensitivity, simulate, plan)."""
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="serving engine: vllm, trtllm, sglang (hardware_specs/serving/engines.toml: host time per "
                        "step, steps to the first token, KV allotment, running cap); on Neuron a software stack, "
                        "nxd-inference or transformers-neuronx-2.18 (hardware_specs/stacks/neuron.toml); 'none': the "
                        "accelerator alone (the roofline); default: the hardware family's (vllm on GPUs, nxd-inference "
                        "on Trainium), each answer saying whether it lies inside that engine's measured envelope "
                        "(column envelope)")
