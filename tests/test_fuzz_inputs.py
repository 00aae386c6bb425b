"""Fuzz: over 500 malformed inputs across every kind of input perfmodel reads (issue 15, deliverable 6).

Kinds: the options of every command; what-ifs (--set); sweep grids (--grid / --fixed); every file the
project reads (system and chip spec sheets, workload files, calibration family files, calibrated sets,
measurement files for validate / calibrate, demand files for plan, Hugging Face config.json for
workloads import); and the app's URL query parameters (report/url_state.py, read without Streamlit).

Every command-line case runs the CLI in process and must be refused: exit status not 0, exactly one
error line on stderr naming the input (option, file or knob) and the field, no traceback, no nan / inf
on stdout, within FAST seconds. argparse prints its usage block before its one error line; the block is
argparse's own and is not counted. A URL value is never an error: it gets exactly one notice naming the
parameter and its field keeps the default.

A case that fails on a known defect is marked xfail(strict=True) naming the module and the defect
(`case(..., defect=...)`): when the defect is fixed, its mark must go. None is marked today.
"""

from __future__ import annotations

import csv
import json
import os
import re
import time
from pathlib import Path

import pytest

from perfmodel.catalog import calibration, files, workload_files
from perfmodel.cli.parser import main
from perfmodel.report import url_state

ROOT = Path(__file__).resolve().parent.parent
FAST = 2.0  # seconds: a refusal comes at once
NAN_INF = re.compile(r"(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])", re.IGNORECASE)
HUGE = "123456789012345678901234567890"  # a count no argument parser should turn into a number
RF = ["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b"]
MEM = ["memory", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b"]
TRAIN = ["train", "--hardware", "trn1.32xlarge", "--nodes", "2", "--workload", "gpt3-6.7b", "--seq", "2048",
         "--global-batch", "128", "--micro-batch", "1"]
COLL = ["collective", "--hardware", "trn2-ultraserver", "--op", "all-gather", "--chips", "16"]
SERVE = ["serve", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--no-progress"]
PARETO = ["pareto", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--no-progress"]
PLAN = ["plan", "--systems", "trn2-ultraserver", "--workload", "llama-3-8b", "--no-progress"]
SENS = ["sensitivity", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--no-progress"]
SWEEP = ["sweep", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--no-progress"]
CAL = ["calibrate", "--family", "neuron", "--no-write", "-q"]


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


def case(id_: str, *args, defect: str | None = None):
    """A parametrized case; `defect`: why it fails today in a module this file does not own."""
    return pytest.param(*args, id=id_, marks=[xfail(defect)] if defect else [])


def run(argv: list[str], capsys) -> tuple[object, str, str, float]:
    t0 = time.perf_counter()
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: a bad option value
        rc = exc.code
    took = time.perf_counter() - t0
    out, err = capsys.readouterr()
    return rc, out, err, took


def error_lines(err: str) -> list[str]:
    """stderr's lines without argparse's usage block (printed before its one error line)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if lines and lines[0].startswith("usage: perfmodel"):
        lines = lines[1:]
        while lines and lines[0].startswith(" "):
            lines = lines[1:]
    return lines


def refused(capsys, argv: list[str], must: tuple[str, ...] = (), fast: float = FAST) -> str:
    """Run the CLI expecting a refusal; returns its one error line after checking every rule."""
    rc, out, err, took = run(argv, capsys)
    assert rc not in (0, None), f"exit status {rc} for {argv}: {out[:300]}"
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert len(lines) == 1, err
    line = lines[0]
    assert line.strip() and "error" in line, line
    for m in must:  # '!text': text must not be in the line
        assert (m[1:] not in line) if m.startswith("!") else (m in line), f"{m!r} vs {line!r}"
    assert not NAN_INF.search(out), out[:300]
    assert took < fast, f"took {took:.2f} s"
    return line


@pytest.fixture(autouse=True)
def own_catalogue_setting():
    """--catalog sets $PERFMODEL_CATALOG for the process: whatever a case sets is undone after it."""
    before = os.environ.get("PERFMODEL_CATALOG")
    yield
    if before is None:
        os.environ.pop("PERFMODEL_CATALOG", None)
    else:
        os.environ["PERFMODEL_CATALOG"] = before


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Import the model and build the operator graphs the refusals below meet (decode and prefill of
    llama-3-8b, its serving search, gpt3-6.7b training) once, untimed: a case is timed on its refusal, not
    on start-up (some refusals, a training data type the chip lacks, come after the graph is built)."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main([*RF, "-f", "json"])
        main([*SERVE, "--concurrency", "1", "-f", "json"])
        main([*TRAIN, "-f", "json"])
        for argv in (["validate", "--cases", str(ROOT / "tests" / "fixtures" / "no-such.csv")], ["plan"],
                     ["report", "--systems", "nosuch", "--no-claims", "--no-progress"]):  # their modules imported
            main(argv)
    yield


# ================================================================ 1. command-line options
# argparse types (count / positive / sizes / choices): each option x bad values, named by the option

COUNT_OPTS = ["--batch", "--seq", "--context", "--tp", "--pp", "--ep", "--dp", "--microbatches"]
BAD_COUNTS = ["-4", "1.5", "nan", "inf", "1e400", HUGE, "10**9", "0x10", "1_000", "", "four"]


def _count_cases():
    out = []
    for i, opt in enumerate(COUNT_OPTS):  # roofline: three values each, cycling through BAD_COUNTS
        for v in (BAD_COUNTS[i % 11], BAD_COUNTS[(i + 4) % 11], BAD_COUNTS[(i + 8) % 11]):
            out.append(case(f"roofline{opt}={v or 'empty'}", [*RF, opt, v], (f"argument {opt}",)))
    for opt in COUNT_OPTS:  # memory: 0 (context: -1) and a count past its ceiling
        low = "-1" if opt == "--context" else "0"
        out.append(case(f"memory{opt}={low}", [*MEM, opt, low], (f"argument {opt}", "between")))
        out.append(case(f"memory{opt}=huge", [*MEM, opt, "999999999999"], (f"argument {opt}", "999,999,999,999")))
    train = ["--nodes", "--global-batch", "--micro-batch", "--seq", "--tp", "--pp", "--dp", "--cp", "--ep", "--virtual"]
    for i, opt in enumerate(train):
        v = ["0", "-4", "1.5", "nan", "1e400", HUGE][i % 6]
        out.append(case(f"train{opt}={v}", [*TRAIN, opt, v], (f"argument {opt}",)))
    return out


OPTION_CASES = _count_cases() + [
    # collective: stride, sizes, ranges
    case("collective--stride=0", [*COLL, "--size", "1MiB", "--stride", "0"], ("argument --stride",)),
    case("collective--stride=1.5", [*COLL, "--size", "1MiB", "--stride", "1.5"], ("argument --stride",)),
    case("collective--per-octave=0", [*COLL, "--size-range", "1KiB:4GiB", "--per-octave", "0"], ("--per-octave",)),
    case("collective--per-octave=huge", [*COLL, "--size-range", "1KiB:4GiB", "--per-octave", "1000000"],
         ("--per-octave", "1,000,000")),
    case("collective--size=bare", [*COLL, "--size", "1.5"], ("argument --size", "'1.5'")),
    case("collective--size=negative", [*COLL, "--size", "-1 MiB"], ("argument --size", "-1 MiB")),
    case("collective--size=nanMiB", [*COLL, "--size", "nanMiB"], ("argument --size", "nanMiB")),
    case("collective--size=half-byte", [*COLL, "--size", "0.5 B"], ("argument --size", "1 byte")),
    case("collective--size=1e400", [*COLL, "--size", "1e400 B"], ("argument --size", "1e400")),
    case("collective--size=arith", [*COLL, "--size", "2**30 B"], ("argument --size", "2**30")),
    case("collective--size-range=reversed-GiB", [*COLL, "--size-range", "4GiB:1KiB"],
         ("argument --size-range", "4GiB", "1KiB")),
    case("collective--size-range=reversed-close", [*COLL, "--size-range", "1MiB:1023KiB"],
         ("argument --size-range", "1MiB", "1023KiB")),
    case("collective--size-range=one-end", [*COLL, "--size-range", "1KiB"], ("argument --size-range", "LO:HI")),
    case("collective--size-range=three-parts", [*COLL, "--size-range", "1KiB:2KiB:4KiB"], ("argument --size-range",)),
    case("collective--size-range=empty-lo", [*COLL, "--size-range", ":4GiB"], ("argument --size-range",)),
    case("collective--size-range=inf-hi", [*COLL, "--size-range", "1KiB:inf GiB"], ("argument --size-range", "inf")),
    case("collective--chips=trailing-comma", [*COLL[:-2], "--chips", "16,", "--size", "1MiB"], ("argument --chips",)),
    case("collective--op=scatter", [*COLL[:3], "--op", "scatter", "--chips", "16", "--size", "1MiB"],
         ("argument --op", "scatter")),
    case("collective--algorithm=bogus", [*COLL, "--size", "1MiB", "--algorithm", "butterfly"], ("--algorithm",)),
    case("collective--launch=jit", [*COLL, "--size", "1MiB", "--launch", "jit"], ("argument --launch", "jit")),
    # serve / pareto / sensitivity
    case("serve--concurrency=-1", [*SERVE, "--concurrency", "-1"], ("argument --concurrency",)),
    case("serve--concurrency=16,1.5", [*SERVE, "--concurrency", "16", "1.5"], ("argument --concurrency", "1.5")),
    case("serve--input=0", [*SERVE, "--input", "0"], ("argument --input",)),
    case("serve--output=1e400", [*SERVE, "--output", "1e400"], ("argument --output", "1e400")),
    case("serve--tdp=0", [*SERVE, "--tdp", "0"], ("argument --tdp", "> 0")),
    case("serve--tdp=-100", [*SERVE, "--tdp", "-100"], ("argument --tdp",)),
    case("serve--tdp=1e400", [*SERVE, "--tdp", "1e400"], ("argument --tdp", "finite")),
    case("serve--price=nan", [*SERVE, "--price", "nan"], ("argument --price", "finite")),
    case("serve--price=abc", [*SERVE, "--price", "abc"], ("argument --price", "abc")),
    case("serve--price=huge", [*SERVE, "--price", "1e12"], ("argument --price", "1e+06")),
    case("serve--chunk=0", [*SERVE, "--chunk", "0"], ("argument --chunk",)),
    case("serve--da=0", [*SERVE, "--da", "0"], ("argument --da",)),
    case("serve--dtype=fp9", [*SERVE, "--dtype", "fp9"], ("argument --dtype", "fp9")),
    case("serve--expert-dtype=int3", [*SERVE, "--expert-dtype", "int3"], ("argument --expert-dtype", "int3")),
    case("serve--mode=batched", [*SERVE, "--mode", "batched"], ("argument --mode", "batched")),
    case("serve--variant=mid", [*SERVE, "--variant", "mid"], ("argument --variant", "mid")),
    case("pareto--tp=0", [*PARETO, "--tp", "0"], ("argument --tp",)),
    case("pareto--pp=1.5", [*PARETO, "--pp", "2", "1.5"], ("argument --pp", "1.5")),
    case("pareto--concurrency=nan", [*PARETO, "--concurrency", "nan"], ("argument --concurrency", "nan")),
    case("pareto--max-ttft=0", [*PARETO, "--max-ttft", "0"], ("argument --max-ttft",)),
    case("pareto--max-ttft=-1", [*PARETO, "--max-ttft", "-1"], ("argument --max-ttft",)),
    case("pareto--max-ttft=inf", [*PARETO, "--max-ttft", "inf"], ("argument --max-ttft", "finite")),
    case("pareto--y=tokens", [*PARETO, "--y", "tokens"], ("argument --y", "tokens")),
    case("pareto--dtypes=fp9", [*PARETO, "--dtypes", "bf16", "fp9"], ("argument --dtypes", "fp9")),
    case("pareto--mode=bogus", [*PARETO, "--mode", "aggregated", "bogus"], ("argument --mode", "bogus")),
    case("sensitivity--rel-step=0", [*SENS, "--rel-step", "0"], ("argument --rel-step",)),
    case("sensitivity--rel-step=nan", [*SENS, "--rel-step", "nan"], ("argument --rel-step",)),
    case("sensitivity--top=-1", [*SENS, "--top", "-1"], ("argument --top",)),
    case("sensitivity--claim=S9", [*SENS, "--claim", "S9"], ("argument --claim", "S9")),
    case("sensitivity--concurrency=0", [*SENS, "--concurrency", "0"], ("argument --concurrency",)),
    # plan: demand options and the training plan
    case("plan--rps=0", [*PLAN, "--rps", "0"], ("argument --rps",)),
    case("plan--rps=nan", [*PLAN, "--rps", "nan"], ("argument --rps", "nan")),
    case("plan--rps=-1", [*PLAN, "--rps", "-1"], ("argument --rps",)),
    case("plan--rps=inf", [*PLAN, "--rps", "inf"], ("argument --rps", "finite")),
    case("plan--ttft=0", [*PLAN, "--rps", "10", "--ttft", "0"], ("argument --ttft",)),
    case("plan--tpot=inf", [*PLAN, "--rps", "10", "--tpot", "inf"], ("argument --tpot",)),
    case("plan--peak-factor=1e9", [*PLAN, "--rps", "10", "--peak-factor", "1e9"], ("argument --peak-factor",)),
    case("plan--peak-factor=0.5", [*PLAN, "--rps", "10", "--peak-factor", "0.5"], ("peak_to_average", "0.5")),
    case("plan--input=abc-length", [*PLAN, "--rps", "10", "--input", "512:0.5,abc:0.5"], ("argument --input", "abc")),
    case("plan--input=negative-weight", [*PLAN, "--rps", "10", "--input", "512:-1"], ("argument --input", "-1")),
    case("plan--input=zero-length", [*PLAN, "--rps", "10", "--input", "0:1"], ("argument --input",)),
    case("plan--input=nan-weight", [*PLAN, "--rps", "10", "--input", "512:nan"], ("argument --input", "nan")),
    case("plan--input=fraction", [*PLAN, "--rps", "10", "--input", "1.5"], ("argument --input", "1.5")),
    case("plan--output=empty", [*PLAN, "--rps", "10", "--output", ""], ("argument --output",)),
    case("plan--output=three-parts", [*PLAN, "--rps", "10", "--output", "512:0.5:3"], ("argument --output",)),
    case("plan--objective=speed", [*PLAN, "--rps", "10", "--objective", "speed"], ("argument --objective",)),
    case("plan--train--tokens=0", ["plan", "--train", "--tokens", "0"], ("argument --tokens",)),
    case("plan--train--tokens=1e400", ["plan", "--train", "--tokens", "1e400"], ("argument --tokens",)),
    case("plan--train--days=0", ["plan", "--train", "--tokens", "1e12", "--days", "0"], ("argument --days",)),
    case("plan--train--days=-3", ["plan", "--train", "--tokens", "1e12", "--days", "-3"], ("argument --days",)),
    case("plan--train--chips=1.5", ["plan", "--train", "--tokens", "1e12", "--chips", "1.5"], ("argument --chips",)),
    case("plan--train--seq=0", ["plan", "--train", "--tokens", "1e12", "--seq", "0"], ("argument --seq",)),
    case("plan--demand=missing-file", ["plan", "--demand", "/nonexistent/demand.toml"],
         ("/nonexistent/demand.toml", "No such file")),
    # sweep options
    case("sweep--chunk=0", [*SWEEP, "--chunk", "0"], ("argument --chunk",)),
    case("sweep--chunk=huge", [*SWEEP, "--chunk", "999999999"], ("argument --chunk",)),
    case("sweep--workers=-1", [*SWEEP, "--workers", "-1"], ("argument --workers",)),
    case("sweep--limit=-1", [*SWEEP, "--limit", "-1"], ("argument --limit",)),
    case("sweep--dask-local=0", [*SWEEP, "--dask-local", "0"], ("argument --dask-local",)),
    case("sweep--phase=serve", [*SWEEP, "--phase", "serve"], ("argument --phase", "serve")),
    # calibrate: counts and lists (none of these may start a fit)
    case("calibrate--folds=-4", [*CAL, "--folds", "-4"], ("argument --folds",)),
    case("calibrate--folds=1.5", [*CAL, "--folds", "1.5"], ("argument --folds", "1.5")),
    case("calibrate--folds=5000", [*CAL, "--folds", "5000"], ("argument --folds", "5,000")),
    case("calibrate--folds=nan", [*CAL, "--folds", "nan"], ("argument --folds",)),
    case("calibrate--jobs=-1", [*CAL, "--jobs", "-1"], ("argument --jobs",)),
    case("calibrate--jobs=1e3", [*CAL, "--jobs", "1e3"], ("argument --jobs", "1e3")),
    case("calibrate--jobs=100000", [*CAL, "--jobs", "100000"], ("argument --jobs", "100,000")),
    case("calibrate--seed=-1", [*CAL, "--seed", "-1"], ("argument --seed",)),
    case("calibrate--seed=abc", [*CAL, "--seed", "abc"], ("argument --seed", "abc")),
    case("calibrate--seed=huge", [*CAL, "--seed", HUGE], ("argument --seed",)),
    case("calibrate--params=comma", [*CAL, "--params", ","], ("argument --params",)),
    case("calibrate--params=space", [*CAL, "--params", "hbm efficiency"], ("argument --params", "hbm efficiency")),
    case("calibrate--params=unknown", [*CAL, "--params", "hbm_efficiency,bogus"], ("'bogus'", "neuron.toml")),
    case("calibrate--params=twice", [*CAL, "--params", "hbm_efficiency,hbm_efficiency"], ("hbm_efficiency", "twice")),
    case("calibrate--family=amd", ["calibrate", "--family", "amd"], ("argument --family", "amd")),
    case("calibrate--loss=l3", [*CAL, "--loss", "l3"], ("argument --loss", "l3")),
    case("calibrate--out-and-no-write", [*CAL, "--out", "x.toml"], ("--out", "--no-write")),
    # choices of the other commands, and the global options
    case("roofline--phase=finetune", [*RF, "--phase", "finetune"], ("argument --phase", "finetune")),
    case("roofline--zero=4", [*RF, "--zero", "4"], ("argument --zero",)),
    case("roofline--recompute=half", [*RF, "--recompute", "half"], ("argument --recompute", "half")),
    case("roofline--overlap=parallel", [*RF, "--overlap", "parallel"], ("argument --overlap", "parallel")),
    case("roofline--format=pdf", [*RF, "--format", "pdf"], ("argument --format", "pdf")),
    case("memory--dtype=int3", [*MEM, "--dtype", "int3"], ("argument --dtype", "int3")),
    case("memory--zero=-1", [*MEM, "--zero", "-1"], ("argument --zero",)),
    case("train--optimizer=lion", [*TRAIN, "--optimizer", "lion"], ("argument --optimizer", "lion")),
    case("train--schedule=zb", [*TRAIN, "--schedule", "zb"], ("argument --schedule", "zb")),
    case("train--show=all", [*TRAIN, "--show", "all"], ("argument --show", "all")),
    case("validate--show=bogus", ["validate", "--show", "bogus"], ("argument --show", "bogus")),
    case("validate--cases=missing", ["validate", "--cases", "/nonexistent/m.csv"], ("/nonexistent/m.csv",)),
    case("specs-show--variant=mid", ["specs", "show", "trn2-ultraserver", "--variant", "mid"], ("argument --variant",)),
    case("specs-compare--level=rack", ["specs", "compare", "trn2-ultraserver", "trn3-ultraserver", "--level", "rack"],
         ("argument --level", "rack")),
    case("report--cases=unknown", ["report", "--cases", "bogus-case", "--no-claims"], ("argument --cases", "bogus")),
    case("claims--format=pdf", ["claims", "--format", "pdf"], ("argument --format", "pdf")),
    case("knobs-no-hardware", ["knobs"], ("--hardware",)),
    case("check--bogus", ["check", "--bogus"], ("--bogus",)),
    case("command=bogus", ["bogus-command"], ("bogus-command",)),
    case("--catalog=missing", ["--catalog", "/nonexistent", "specs", "list"], ("/nonexistent", "hardware_specs")),
    case("--calibration=missing", ["--calibration", "/nonexistent/set.toml", "specs", "list"],
         ("/nonexistent/set.toml",)),
]


# values accepted by the parser, refused when the command runs (names, plans, data types)
RUNTIME_CASES = [
    *[case(f"{argv[0]}-unknown-{what}", argv, must) for what, argv, must in [
        ("system", ["roofline", "--hardware", "trn2-ultraservr", "--workload", "llama-3-8b"], ("'trn2-ultraservr'",)),
        ("workload", [*MEM[:3], "--workload", "llama-3-70"], ("'llama-3-70'", "did you mean")),
        ("system", [*TRAIN[:1], "--hardware", "trn9", *TRAIN[3:]], ("'trn9'",)),
        ("workload", [*TRAIN[:5], "--workload", "gpt3-6.7c", *TRAIN[7:]], ("'gpt3-6.7c'", "did you mean")),
        ("system", ["collective", "--hardware", "p5.96xlarge", "--op", "all-reduce", "--chips", "8", "--size", "1MiB"],
         ("'p5.96xlarge'",)),
        ("system", ["serve", "--hardware", "trn3-ultraservr", "--no-progress"], ("'trn3-ultraservr'",)),
        ("workload", [*SERVE[:3], "--workload", "llama3-8b", "--no-progress"], ("'llama3-8b'",)),
        ("system", ["pareto", "--hardware", "trn2-ultraserver", "nosuch", "--workload", "llama-3-8b", "--no-progress"],
         ("'nosuch'",)),
        ("system", ["plan", "--rps", "10", "--systems", "nosuch", "--no-progress"], ("'nosuch'",)),
        ("workload", ["plan", "--rps", "10", "--workload", "gpt-oss-121b", "--no-progress"], ("'gpt-oss-121b'",)),
        ("train-system", ["plan", "--train", "--tokens", "1e12", "--hardware", "trn5"], ("'trn5'",)),
        ("system", ["sensitivity", "--hardware", "nosuch", "--no-progress"], ("'nosuch'",)),
        ("system", ["knobs", "--hardware", "h100"], ("'h100'",)),
        ("workload", ["knobs", "--hardware", "trn2-ultraserver", "--workload", "nosuch"], ("'nosuch'",)),
        ("system", ["specs", "show", "nosuch"], ("'nosuch'",)),
        ("system", ["specs", "compare", "trn2-ultraserver", "nosuch"], ("'nosuch'",)),
        ("workload", ["workloads", "show", "../workloads/llama-3-8b"], ("'../workloads/llama-3-8b'",)),
        ("system", ["report", "--systems", "nosuch", "--no-claims", "--no-progress"], ("'nosuch'",)),
        ("system", [*SWEEP[:1], "--hardware", "nosuch", *SWEEP[3:]], ("'nosuch'",)),
        ("workload", [*SWEEP[:3], "--workload", "nosuch", "--no-progress"], ("'nosuch'",)),
    ]],
    case("roofline-tp-not-dividing-heads", [*RF, "--tp", "3"], ("tp=3", "32 attention heads")),
    case("roofline-mxfp4-on-trn2", [*RF, "--dtype", "mxfp4"], ("mxfp4", "Trainium2")),
    case("roofline-chips-past-ceiling", [*RF, "--tp", "1024", "--dp", "2048"], ("2,097,152 chips",)),
    case("memory-ep-not-dividing-tp", [*MEM, "--ep", "3"], ("ep", "3")),
    case("train-global-batch-not-multiple", [*TRAIN[:-4], "--global-batch", "127", "--micro-batch", "1"],
         ("global batch 127",)),
    case("train-dp-not-dividing", [*TRAIN, "--dp", "7"], ("dp 7",)),
    case("train-mxfp4-on-trn1", [*TRAIN, "--dtype", "mxfp4"], ("mxfp4",)),
    case("collective-nvls-on-trn2", [*COLL, "--size", "1MiB", "--algorithm", "nvls"], ("nvls",)),
    case("serve-tp-not-dividing-heads", [*SERVE, "--tp", "3"], ("tp", "32 attention heads")),
    case("serve-tp-past-heads", [*SERVE, "--tp", "128"], ("tp", "32 attention heads")),
    case("serve-ep-not-dividing", [*SERVE, "--ep", "3"], ("ep",)),
    case("serve-concurrency-not-multiple-of-pp", [*SERVE, "--pp", "7"], ("concurrency", "pp")),
    case("serve-mxfp4-on-trn2", [*SERVE, "--dtype", "mxfp4"], ("mxfp4",)),
    case("serve-concurrency-oversubscribed", [*SERVE, "--concurrency", "16777216"], ("does not fit",)),
    case("serve-input-past-positions", [*SERVE, "--input", "100000"], ("max_position_embeddings",)),
    case("pareto-mxfp4-on-trn2", [*PARETO, "--dtypes", "mxfp4"], ("mxfp4",)),
    case("sensitivity-metric-unknown", [*SENS, "--metric", "bogus", "--concurrency", "1"], ("'bogus'",)),
    case("plan-no-demand", ["plan", "--no-progress"], ("--demand", "--rps")),
    case("plan-train-no-tokens", ["plan", "--train"], ("--train", "--tokens")),
    case("specs-compare-one-system", ["specs", "compare", "trn2-ultraserver"], ("two",)),
    case("workloads-import-missing", ["workloads", "import", "/nonexistent/config.json"], ("/nonexistent/config.json",)),
    case("pareto-tp-no-valid-plan", [*PARETO, "--tp", "3"], ("tp",)),
    case("pareto-max-ttft-nothing-meets", [*PARETO, "--max-ttft", "1e-9"], ("--max-ttft",)),
    case("collective-stride-spans-past-ceiling", [*COLL, "--size", "1MiB", "--stride", "1000000"], ("--stride",)),
    case("roofline-decode-context-0", [*RF, "--phase", "decode", "--context", "0"], ("context", "KV cache")),
    case("report-set-unknown-knob", ["report", "--systems", "trn2-ultraserver", "--cases", "llama-3-70b-decode",
                                     "--no-claims", "--no-progress", "--set", "bogus=1"], ("bogus",)),
    case("report-set-out-of-range", ["report", "--systems", "trn2-ultraserver", "--cases", "llama-3-70b-decode",
                                     "--no-claims", "--no-progress", "--set", "hbm_efficiency=1.7"],
         ("hbm_efficiency",)),
    case("claims--id=no-match", ["claims", "--id", "ZZ"], ("ZZ",)),  # no family letter Z: nothing computed
    case("sweep-huge-product-in-memory", [*SWEEP, "--grid", "batch=1:100000", "--grid", "context=1:100000",
                                          "--grid", "tp=1:64"], ("sweep", "--out")),
]


@pytest.mark.parametrize("argv,must", OPTION_CASES + RUNTIME_CASES)
def test_command_line_options(capsys, argv, must):
    refused(capsys, argv, must)


# ================================================================ 2. what-ifs (--set NAME=VALUE)

_CAL_BAD = [("hbm_efficiency", "1.7"), ("tensor_efficiency", "0"), ("pue", "0.5"), ("power_idle_frac", "2"),
            ("op_overhead", "-1 us"), ("op_overhead", "2 h"), ("tile_m", "0"), ("tile_n", "1.5"),
            ("collective_fixed_latency", "inf"), ("runtime_reserved_memory", "1e99 GB"),
            ("node_other_power", "1e99 W"), ("comm_overlap_frac", "1.5"), ("link_efficiency_node", "x2"),
            ("hbm_efficiency", "nan"), ("element_efficiency", "-0.1")]
_CAL_CMDS = [MEM, SERVE, TRAIN, [*COLL, "--size", "1MiB"], SENS]
_SPEC_BAD = [("hbm_bandwidth", "xinf"), ("hbm_bandwidth", "10**10**7 GB/s"), ("hbm_bandwidth", "1e99 TB/s"),
             ("hbm_capacity", "5"), ("hbm_capacity", "5 s"), ("hbm_capacity", "x0"), ("hbm_capacity", "-200%"),
             ("tensor_rate", "nan TFLOPS"), ("link_bandwidth", "(1+1) TB/s"), ("tdp", "-5 W"),
             ("price", "inf USD/h"), ("tensor_rate.fp7", "2 PFLOPS")]
_WORKLOAD_BAD = [("num_hidden_layers", "1e8"), ("num_key_value_heads", "0"), ("vocab_size", "0"),
                 ("max_position_embeddings", "0"), ("num_attention_heads", "1.5"), ("intermediate_size", "1e300"),
                 ("hidden_size", "inf"), ("num_attention_heads", "7"), ("num_hidden_layers", "-2")]

WHATIF_CASES = [
    *[case(f"{_CAL_CMDS[i % 5][0]}--set-{n}={v}", [*_CAL_CMDS[i % 5], "--set", f"{n}={v}"], (n,))
      for i, (n, v) in enumerate(_CAL_BAD)],
    *[case(f"{(RF, MEM, SERVE)[i % 3][0]}--set-{n}={v}", [*(RF, MEM, SERVE)[i % 3], "--set", f"{n}={v}"],
           (n.split(".")[0],)) for i, (n, v) in enumerate(_SPEC_BAD)],
    *[case(f"{(RF, MEM)[i % 2][0]}--set-{n}={v}", [*(RF, MEM)[i % 2], "--set", f"{n}={v}"], (n,))
      for i, (n, v) in enumerate(_WORKLOAD_BAD)],
    case("roofline--set-unknown", [*RF, "--set", "hbm_bandwith=x2"], ("'hbm_bandwith'", "did you mean")),
    case("serve--set-unknown", [*SERVE, "--set", "nosuch=1"], ("'nosuch'",)),
    case("roofline--set-no-equals", [*RF, "--set", "hbm_efficiency"], ("NAME=VALUE", "hbm_efficiency")),
    case("roofline--set-no-name", [*RF, "--set", "=3"], ("NAME=VALUE", "=3")),
    case("roofline--set-no-value", [*RF, "--set", "hbm_bandwidth="], ("NAME=VALUE", "hbm_bandwidth=")),
    case("roofline--set-wrong-family", [*RF, "--set", "spec.hbm_efficiency=0.5"], ("spec value", "hbm_efficiency")),
    case("train--set-spec-knob", [*TRAIN, "--set", "tensor_rate=x2"], ("tensor_rate", "!did you mean 'tensor_rate'")),
    case("memory--set-quote-kept", [*MEM, "--set", "tensor_efficiency=0"], ("got '0'",)),
]


@pytest.mark.parametrize("argv,must", WHATIF_CASES)
def test_what_ifs(capsys, argv, must):
    refused(capsys, argv, must)


# ================================================================ 3. sweep grids (--grid / --fixed)

CTX = ["--fixed", "context=64"]
SWEEP_CASES = [
    *[case(f"grid-{g}", [*SWEEP, *CTX, "--grid", g], (f"sweep field {g.split('=')[0]}",)) for g in [
        "batch=1e30", "batch=1:1e12", "batch=1:1e300:x2", "batch=1:8:xnan", "batch=1:8:x1.0000000001",
        "batch=1:8:1e-12", "batch=a:b", "batch=1:inf", "batch=", "batch=,,", "batch=8:1", "batch=1:2:3:4",
        "batch=0,1", "tp=2000000", "tp=1.5", "dp=1e9", "pp=-1", "microbatches=1e20", "pp_virtual=1e20", "zero=4",
        "moe_imbalance=1e300", "moe_imbalance=0.5", "moe_imbalance=inf", "compute=fp9", "kv_cache=int3",
        "flash_attention=maybe", "flash_attention=2", "recompute=half", "optimizer=lion", "pp_schedule=zb",
        "overlap=parallel", "sequence_parallel=3", "system=nosuch", "workload=nosuch", "bogus=1,2",
    ]],
    case("fixed-context=1e15", [*SWEEP, "--fixed", "context=1e15"], ("sweep field context",)),
    case("fixed-tp=list", [*SWEEP, *CTX, "--fixed", "tp=1,2"], ("sweep field tp", "one value")),
    case("fixed-tp=0", [*SWEEP, *CTX, "--fixed", "tp=0"], ("sweep field tp",)),
    case("fixed-batch=1e30", [*SWEEP, *CTX, "--fixed", "batch=1e30"], ("sweep field batch",)),
    case("fixed-and-grid", [*SWEEP, *CTX, "--fixed", "tp=2", "--grid", "tp=1,2"], ("sweep field tp", "both")),
    case("grid-no-equals", [*SWEEP, *CTX, "--grid", "batch"], ("--grid", "FIELD=VALUES")),
    case("grid-twice", [*SWEEP, *CTX, "--grid", "batch=1,2", "--grid", "batch=3"], ("--grid batch", "twice")),
    case("prefill-seq_len=1e12", [*SWEEP, "--phase", "prefill", "--grid", "seq_len=1e12"], ("sweep field seq_len",)),
    case("decode-no-context", [*SWEEP, "--grid", "batch=1,2"], ("sweep field context", "KV cache")),
    case("train-overlap", [*SWEEP, "--phase", "train", "--grid", "overlap=serial"], ("sweep field overlap",)),
]


@pytest.mark.parametrize("argv,must", SWEEP_CASES)
def test_sweep_grids(capsys, argv, must):
    refused(capsys, argv, must)


# ================================================================ 4. catalogue files (spec sheets, workloads, families)


@pytest.fixture()
def catalogue(tmp_path, monkeypatch):
    """A catalogue of links to the real files; edit(rel, text) replaces one file with `text` (str or bytes)."""
    for sub in ("hardware_specs", "hardware_specs/chips", "hardware_specs/calibration", "workloads"):
        (tmp_path / sub).mkdir(parents=True)
        for p in (ROOT / sub).glob("*.toml"):
            (tmp_path / sub / p.name).symlink_to(p)
    monkeypatch.setenv("PERFMODEL_CATALOG", str(tmp_path))  # --catalog sets it for the process: undone after

    def clear():
        files.clear_caches(), calibration.clear_cache(), workload_files.clear_cache()

    def edit(rel: str, text: str | bytes) -> Path:
        """Replace catalogue file `rel` (a link) with `text`; returns its path."""
        path = tmp_path / rel
        path.unlink()
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
        clear()
        return path
    yield edit
    clear()


def _text(rel: str) -> str:
    return (ROOT / rel).read_text()


def _sub(rel: str, old: str, new: str) -> str:
    text = _text(rel)
    assert old in text, (rel, old)
    return text.replace(old, new, 1)


SYS, CHIP = "hardware_specs/trn1.2xlarge.toml", "hardware_specs/chips/trainium1.toml"
WL, FAM = "workloads/llama-3-8b.toml", "hardware_specs/calibration/neuron.toml"
SHOW_SYS, SHOW_WL, KNOBS = ["specs", "show", "trn1.2xlarge"], ["workloads", "show", "llama-3-8b"], \
    ["knobs", "--hardware", "trn1.2xlarge"]
CHIPS_1 = '[node.chips]\nvalue = "1"'
PRICE = 'value = "1.34375 USD/h"'
BW = 'value = "12.5 Gbps"'
BF16 = '[peak.bf16]\nvalue = "190 TFLOPS"'

def _workload(field: str, value: str) -> str:
    text = _text(WL)
    m = re.search(rf"^{field} = .*$", text, re.MULTILINE)
    assert m, field
    return text.replace(m.group(0), f"{field} = {value}")


CATALOGUE_CASES = [
    # system spec sheet
    *[case(f"system-node.chips={v}", SYS, _sub(SYS, CHIPS_1, f"[node.chips]\nvalue = {v}"), SHOW_SYS, ("node.chips",))
      for v in ['"0"', '"-1"', '"nan"', '"abc"', '""', '"1 GB"', '"1.5"']],
    *[case(f"system-node.price={v}", SYS, _sub(SYS, PRICE, f"value = {v}"), SHOW_SYS, ("node.price", v.strip('"')))
      for v in ['"-1.34375 USD/h"', '"nan USD/h"', '"1.34375"', '"1.34375 GB"', '"1e99 USD/h"', '"10**10 USD/h"']],
    *[case(f"system-tier-bandwidth={v}", SYS, _sub(SYS, BW, f"value = {v}"), SHOW_SYS, ("tiers.0.bandwidth",))
      for v in ['"0 Gbps"', '"inf Gbps"', '"12.5"', '"12.5 s"', '"1e40 Gbps"', '"(1+1) Gbps"']],
    case("system-status", SYS, _sub(SYS, 'status = "published"', 'status = "rumoured"'), SHOW_SYS, ("status",)),
    case("system-schema", SYS, _sub(SYS, "schema_version = 1", "schema_version = 99"), SHOW_SYS, ("schema_version",)),
    case("system-kind", SYS, _sub(SYS, 'kind = "system"', 'kind = "chip"'), SHOW_SYS, ("field kind",)),
    case("system-name", SYS, _sub(SYS, 'name = "trn1.2xlarge"\n', 'name = "trn1.4xlarge"\n'), SHOW_SYS,
         ("field name", "trn1.4xlarge")),
    case("system-scope", SYS, _sub(SYS, 'scope = "scaleout"', 'scope = "galaxy"'), SHOW_SYS, ("tiers.0.scope",)),
    case("system-topology", SYS, _sub(SYS, 'topology = "switch"', 'topology = "hypercube"'), SHOW_SYS,
         ("tiers.0.topology",)),
    case("system-source", SYS, _sub(SYS, 'source = "S2"', 'source = "S999"'), SHOW_SYS, ("S999",)),
    case("system-unknown-key", SYS, _sub(SYS, "[node]\n", "[node]\nbogus_key = 1\n"), SHOW_SYS, ("node.bogus_key",)),
    case("system-bad-toml", SYS, _text(SYS).replace("[node]", "[node", 1), SHOW_SYS, ("malformed TOML",)),
    case("system-node.chips=1e9", SYS, _sub(SYS, CHIPS_1, '[node.chips]\nvalue = "1e9"'), SHOW_SYS, ("node.chips",)),
    case("system-binary", SYS, b"\xff\xfe\x00garbage", SHOW_SYS, ("trn1.2xlarge.toml",)),
    case("system-empty", SYS, "", SHOW_SYS, ("schema_version",)),
    # chip spec sheet
    *[case(f"chip-peak.bf16={v}", CHIP, _sub(CHIP, BF16, f"[peak.bf16]\nvalue = {v}"), SHOW_SYS, ("peak.bf16",))
      for v in ['"-190 TFLOPS"', '"0 TFLOPS"', '"nan TFLOPS"', '"190"', '"190 GB"', '"1e99 TFLOPS"',
                '"190 TFLOPS + 1 TFLOPS"']],
    *[case(f"chip-cores={v}", CHIP, _sub(CHIP, '[cores]\nvalue = "2"', f"[cores]\nvalue = {v}"), SHOW_SYS, ("cores",))
      for v in ['"0"', '"-2"']],
    case("chip-family", CHIP, _sub(CHIP, 'family = "trainium"', 'family = "tpu"'), SHOW_SYS, ("field family",)),
    case("chip-cores=2.5", CHIP, _sub(CHIP, '[cores]\nvalue = "2"', '[cores]\nvalue = "2.5"'), SHOW_SYS, ("cores",)),
    case("chip-binary", CHIP, b"\x00\xff\x01", SHOW_SYS, ("trainium1.toml",)),
    # workload file
    *[case(f"workload-{f}={v}", WL, _workload(f, v), SHOW_WL, (f"config.{f}",)) for f, v in [
        ("num_hidden_layers", "-32"), ("num_hidden_layers", "32.5"), ("num_hidden_layers", '"32"'),
        ("num_hidden_layers", "nan"), ("hidden_size", "1e30"), ("vocab_size", "-1"), ("num_attention_heads", "0"),
        ("num_key_value_heads", "7"), ("intermediate_size", "true"), ("max_position_embeddings", "inf")]],
    case("workload-unknown-field", WL, _text(WL).replace("[config]", "[config]\nbogus_field = 3", 1), SHOW_WL,
         ("config.bogus_field",)),
    case("workload-name", WL, _text(WL).replace('name = "llama-3-8b"', 'name = "llama-3-9b"', 1), SHOW_WL,
         ("field name", "llama-3-9b")),
    case("workload-garbage", WL, b"\x00\x01garbage", SHOW_WL, ("llama-3-8b.toml", "malformed TOML")),
    case("workload-zero-value-shown", WL, _workload("vocab_size", "0"), SHOW_WL, ("config.vocab_size", "got 0")),
    # calibration family file
    *[case(f"family-{label}", FAM, _sub(FAM, old, new), KNOBS, (field,)) for label, old, new, field in [
        ("tile_m=1.5", "[params.tile_m]\nvalue = 32", "[params.tile_m]\nvalue = 1.5", "params.tile_m.value"),
        ("hbm_efficiency=nan", "[params.hbm_efficiency]\nvalue = 0.85", "[params.hbm_efficiency]\nvalue = nan",
         "params.hbm_efficiency.value"),
        ("hbm_efficiency=text", "[params.hbm_efficiency]\nvalue = 0.85", '[params.hbm_efficiency]\nvalue = "high"',
         "params.hbm_efficiency.value"),
        ("hbm_efficiency=-1", "[params.hbm_efficiency]\nvalue = 0.85", "[params.hbm_efficiency]\nvalue = -1",
         "params.hbm_efficiency.value"),
        ("op_overhead=bare", '[params.op_overhead]\nvalue = "2 us"', '[params.op_overhead]\nvalue = "2"',
         "params.op_overhead.value"),
        ("op_overhead=arith", '[params.op_overhead]\nvalue = "2 us"', '[params.op_overhead]\nvalue = "2**40 us"',
         "params.op_overhead.value"),
        ("op_overhead=GB", '[params.op_overhead]\nvalue = "2 us"', '[params.op_overhead]\nvalue = "2 GB"',
         "params.op_overhead.value"),
        ("unknown-key", "[params.hbm_efficiency]\nvalue = 0.85", "[params.hbm_efficiency]\nvalue = 0.85\nstatus2 = 1",
         "params.hbm_efficiency.status2"),
        ("kind", '[params.hbm_efficiency]\nvalue = 0.85\nkind = "ratio"',
         '[params.hbm_efficiency]\nvalue = 0.85\nkind = "furlong"', "params.hbm_efficiency.kind")]],
    case("family-binary", FAM, b"\xff\xff", KNOBS, ("neuron.toml",)),
]


@pytest.mark.parametrize("rel,text,argv,must", CATALOGUE_CASES)
def test_catalogue_files(capsys, tmp_path, catalogue, rel, text, argv, must):
    path = catalogue(rel, text)
    line = refused(capsys, ["--catalog", str(tmp_path), *argv], must)
    assert str(path) in line, line


# ================================================================ 5. calibrated sets (--calibration FILE)

SET = """schema_version = 1
family = "neuron"
created = "2025-01-31T12:00:00"
method = "test"

[fitted_on]
cases_file = "x.csv"
sha256 = "%s"
cases = 3

[params.hbm_efficiency]
value = 0.8
initial = 0.85
lower = 0.05
kind = "ratio"
""" % ("0" * 64)


def _set(old: str, new: str) -> str:
    assert old in SET, old
    return SET.replace(old, new, 1)


CALIBRATED_SET_CASES = [
    *[case(f"set-value={v}", _set("value = 0.8", f"value = {v}"), ("params.hbm_efficiency.value",))
      for v in ["0", "-0.5", "1.5", "nan", "inf", '"high"', "1e400"]],
    case("set-family", _set('family = "neuron"', 'family = "amd"'), ("field family",)),
    case("set-schema", _set("schema_version = 1", "schema_version = 2"), ("schema_version",)),
    case("set-kind", _set('kind = "ratio"', 'kind = "time"'), ("params.hbm_efficiency.kind",)),
    case("set-unknown-param", _set("[params.hbm_efficiency]", "[params.bogus_param]"), ("params.bogus_param",)),
    case("set-sha", _set("sha256 = \"" + "0" * 64, "sha256 = \"xyz"), ("fitted_on.sha256",)),
    case("set-cases", _set("cases = 3", "cases = -3"), ("fitted_on.cases",)),
    case("set-created", _set('created = "2025-01-31T12:00:00"', 'created = "yesterday"'), ("field created",)),
    case("set-unknown-key", _set("value = 0.8\n", "value = 0.8\nbogus = 1\n"), ("bogus",)),
    case("set-no-value", _set("value = 0.8\n", ""), ("params.hbm_efficiency.value",)),
    case("set-bad-toml", "[[[", ("malformed TOML",)),
    case("set-value=true", _set("value = 0.8", "value = true"), ("params.hbm_efficiency.value",)),
    case("set-binary", b"\x00\xff\xfe", ("set.toml",)),
    case("set-empty", "", ("schema_version",)),
]


@pytest.mark.parametrize("text,must", CALIBRATED_SET_CASES)
def test_calibrated_sets(capsys, tmp_path, text, must):
    path = tmp_path / "set.toml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    line = refused(capsys, ["--calibration", str(path), "specs", "list"], must)
    assert str(path) in line, line


# ================================================================ 6. measurement files (validate / calibrate --cases)

def _rows() -> dict[str, dict]:
    with open(ROOT / "reference" / "published_measurements.csv", newline="") as f:
        return {r["case_id"]: r for r in csv.DictReader(f)}


ROWS = _rows()
COLUMNS = list(next(iter(ROWS.values())))
DECODE, TRAINING, COLLECTIVE = ROWS["NRN-TRN1-001b"], ROWS["MEG-001"], ROWS["NRN-CC-001"]


def _csv(*rows: dict, columns: list[str] = COLUMNS) -> str:
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _row(base: dict, **changes) -> str:
    return _csv({**base, **changes})


MEASUREMENT_CASES = [
    *[case(f"value={v or 'blank'}", _row(DECODE, value=v), ("row 2", "'value'")) for v in
      ["nan", "inf", "-1", "0", "abc", "", "1e400", "9.95 ms"]],
    *[case(f"decode-{f}={v}", _row(DECODE, **{f: v}), ("row 2", "NRN-TRN1-001b", f"'{f}'", v)) for f, v in [
        ("num_chips", "-4"), ("num_chips", "0"), ("num_chips", "1e400"), ("num_chips", "nan"), ("num_chips", HUGE),
        ("batch", "1.5"), ("batch", "1e30"), ("batch", "-8"), ("input_len", "0"), ("input_len", "-1"),
        ("output_len", "nan"), ("output_len", "1e30"), ("parallelism", "TP0 (NeuronCores)"),
        ("parallelism", "TP1e9 (NeuronCores)"), ("parallelism", "TP-4")]],
    *[case(f"train-{f}={v}", _row(TRAINING, **{f: v}), ("row 2", "MEG-001", f"'{f}'")) for f, v in [
        ("batch", "GBS 0"), ("batch", "GBS nan"), ("parallelism", "TP1 PP0 DP32"),
        ("parallelism", "TP8 PP99999999 DP1"), ("input_len", "1e30")]],
    *[case(f"collective-num_chips={v}", _row(COLLECTIVE, num_chips=v), ("row 2", "NRN-CC-001", "'num_chips'"))
      for v in ["0 ranks", "99999999999 ranks"]],
    *[case(f"train-model-{label}", _row(TRAINING, model=m), ("row 2", "MEG-001", "training")) for label, m in [
        ("heads=0", "GPT 1.7B (h=2304, L=24, heads=0, V=51200)")]],
    case("missing-value-column", _csv(DECODE, columns=[c for c in COLUMNS if c != "value"]), ("missing column", "value")),
    case("missing-columns", "case_id,value\nX,1\n", ("missing column", "hardware")),
    case("duplicate-case", _csv(DECODE, DECODE), ("'case_id'", "NRN-TRN1-001b", "more than once")),
    case("blank-case-id", _row(DECODE, case_id=""), ("row 2", "'case_id'")),
    case("header-only", _csv(), ("no cases",)),
    case("empty-file", "", ("empty file",)),
    case("binary", b"\xff\xfe\x00\x81garbage\n", ("UTF-16 (byte-order mark)",)),
    case("latin-1", "case_id,value\ncafé,1\n".encode("latin-1"), ("not UTF-8", "0xe9")),
    case("json-not-csv", json.dumps({"case_id": "X", "value": 1}), ("missing column",)),
    case("unclosed-quote", _csv(DECODE) + '"X,unclosed\n', ("not a CSV file",)),
]


@pytest.mark.parametrize("text,must", MEASUREMENT_CASES)
def test_measurement_files(capsys, tmp_path, text, must):
    """--strict: any row that cannot be read or predicted refuses the file in one line (without it the row is
    listed and the rest predicted: test_validation_row_by_row.py)."""
    path = tmp_path / "m.csv"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    line = refused(capsys, ["validate", "--cases", str(path), "-f", "json", "--strict"], must)
    assert str(path) in line, line


@pytest.mark.parametrize("text,must", [
    case("calibrate-value=nan", _row(DECODE, value="nan"), ("row 2", "'value'")),
    case("calibrate-num_chips=0", _row(DECODE, num_chips="0"), ("row 2", "'num_chips'")),
])
def test_measurement_files_given_to_calibrate(capsys, tmp_path, text, must):
    path = tmp_path / "m.csv"
    path.write_text(text)
    line = refused(capsys, [*CAL, "--cases", str(path)], must)
    assert str(path) in line, line


def test_an_edited_measurements_file_is_read_again(capsys, tmp_path):
    """The harness caches a file's cases: an edit (the app re-reading an upload's path, a notebook) is seen."""
    path = tmp_path / "m.csv"
    path.write_text(_row(DECODE, value="nan"))
    refused(capsys, ["validate", "--cases", str(path), "--strict"], ("'value'",))
    path.write_text(_row(DECODE, value="-2.5 "))
    assert "'-2.5 '" in refused(capsys, ["validate", "--cases", str(path), "--strict"], ("'value'",))


# ================================================================ 7. demand files (plan --demand)

DEMAND = """[demand]
workload = "llama-3-8b"
requests_per_s = 20.0
peak_to_average = 1.5
input_tokens = 1024
output_tokens = 256
ttft_s = 2.0
tpot_s = 0.05
"""


def _demand(field: str, value: str | None) -> str:
    lines = [ln for ln in DEMAND.splitlines() if not ln.startswith(f"{field} ")]
    return "\n".join(lines + ([f"{field} = {value}"] if value is not None else [])) + "\n"


DEMAND_CASES = [
    *[case(f"{f}={v}", _demand(f, v), (f"field demand.{f}",)) for f, v in [
        ("requests_per_s", "0"), ("requests_per_s", "-1"), ("requests_per_s", "nan"), ("requests_per_s", "inf"),
        ("requests_per_s", '"fast"'), ("requests_per_s", "true"), ("requests_per_s", "[1]"), ("ttft_s", "0"),
        ("ttft_s", "1e400"), ("ttft_s", '"1 s"'), ("tpot_s", "-1"), ("tpot_s", "nan"), ("tpot_s", "false"),
        ("peak_to_average", "0.5"), ("peak_to_average", "inf"), ("peak_to_average", "1e9"),
        ("peak_to_average", '"x2"'), ("input_tokens", "0"), ("input_tokens", "-5"), ("input_tokens", "1.5"),
        ("input_tokens", "nan"), ("input_tokens", '"long"'), ("input_tokens", '{ "512" = -1 }'),
        ("input_tokens", '{ "abc" = 1 }'), ("input_tokens", '{ "512" = 0 }'), ("input_tokens", "{}"),
        ("input_tokens", '{ "1e30" = 1 }'), ("output_tokens", "1e30"), ("output_tokens", "inf"),
        ("output_tokens", '{ "512" = nan }'), ("output_tokens", '{ "512" = "half" }'), ("output_tokens", "[[512]]"),
        ("workload", '"nosuch"'), ("workload", "42"), ("workload", '""'), ("name", "7"), ("bogus_field", "1")]],
    *[case(f"missing-{f}", _demand(f, None), (f"field demand.{f}", "missing")) for f in ("workload", "tpot_s")],
    case("empty", "", ("no [demand] table",)),
    case("binary", b"\xff\xfe\x00\x01", ("UTF-16 (byte-order mark)",)),
    case("no-demand-table", "[load]\nrps = 1\n", ("no [demand] table",)),
    case("bad-toml", "[demand\nx=", ("malformed TOML",)),
    case("demand-not-a-table", "demand = 5\n", ("field demand",)),
]


@pytest.mark.parametrize("text,must", DEMAND_CASES)
def test_demand_files(capsys, tmp_path, text, must):
    path = tmp_path / "d.toml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    line = refused(capsys, ["plan", "--demand", str(path), "--systems", "trn2-ultraserver", "--no-progress"], must)
    assert str(path) in line, line


# ================================================================ 8. Hugging Face config.json (workloads import)

HF = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
      "hidden_act": "silu", "torch_dtype": "bfloat16", "rope_theta": 500000.0, "tie_word_embeddings": False}
_HF_FIELDS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
              "vocab_size", "max_position_embeddings"]
_HF_BAD = [0, -4, 1.5, "4096", 10 ** 30, True, float("nan"), float("inf"), [1]]


def _hf(**changes) -> str:
    d = {**HF, **changes}
    return json.dumps({k: v for k, v in d.items() if v is not ...})


HF_CASES = [
    *[case(f"{f}={v!r}", _hf(**{f: v}), (f"field {f}",)) for i, f in enumerate(_HF_FIELDS)
      for v in (_HF_BAD[i % 9], _HF_BAD[(i + 3) % 9], _HF_BAD[(i + 6) % 9])],
    case("missing-hidden_size", _hf(hidden_size=...), ("field hidden_size", "missing")),
    case("missing-model_type", _hf(model_type=...), ("field model_type", "missing")),
    case("model_type=unknown", _hf(model_type="bert2"), ("field model_type", "bert2")),
    case("model_type=number", _hf(model_type=1), ("field model_type",)),
    case("hidden_act=number", _hf(hidden_act=5), ("field hidden_act",)),
    case("torch_dtype=float8", _hf(torch_dtype="float8"), ("field torch_dtype", "float8")),
    case("tie_word_embeddings=yes", _hf(tie_word_embeddings="yes"), ("field tie_word_embeddings", "yes")),
    case("sliding_window=-1", _hf(sliding_window=-1), ("field sliding_window",)),
    case("sliding_window=huge", _hf(sliding_window=10 ** 30), ("field sliding_window",)),
    case("layer_types=bad", _hf(layer_types=["full", "x"]), ("field layer_types",)),
    case("quant=gptq", _hf(quantization_config={"quant_method": "gptq"}), ("quantization_config", "gptq")),
    case("quant=text", _hf(quantization_config="fp8"), ("field quantization_config",)),
    case("experts_per_tok>experts", _hf(num_experts=4, num_experts_per_tok=8), ("field num_experts_per_tok",)),
    case("head_dim=0", _hf(head_dim=0), ("field head_dim",)),
    case("empty", "", ("malformed JSON",)),
    case("binary", b"\x00\xff\xfe\x01garbage", ("not UTF-8",)),
    case("array", "[1, 2, 3]", ("JSON object",)),
    case("null", "null", ("JSON object",)),
    case("truncated", _hf()[:40], ("malformed JSON",)),
    case("utf16", _hf().encode("utf-16"), ("UTF-16",)),
    case("nested-deep", "[" * 100_000 + "]" * 100_000, ("not JSON", "nested too deeply")),
    case("integer-of-5000-digits", _hf().replace('"hidden_size": 4096', '"hidden_size": 1' + "0" * 5000),
         ("malformed JSON",)),
    case("NaN-literal", _hf().replace('"hidden_size": 4096', '"hidden_size": NaN'), ("field hidden_size", "nan")),
    case("key-twice", _hf().replace("{", '{"hidden_size": 0, ', 1), ("field hidden_size", "twice")),
]


@pytest.mark.parametrize("text,must", HF_CASES)
def test_hf_configs(capsys, tmp_path, text, must):
    path = tmp_path / "my-model" / "config.json"
    path.parent.mkdir()
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    line = refused(capsys, ["workloads", "import", str(path)], must)
    assert str(path) in line, line


# ================================================================ 9. the app's URL query parameters

URL_CASES = [
    *[case(f"{k}={v or 'empty'}", {k: v}, k, f"{v!r}"[:20]) for k, v in [
        ("seq", "0"), ("seq", "1e400"), ("seq", "-2048"), ("context", "-1"), ("context", "inf"), ("tp", "0"),
        ("tp", "2000"), ("tp", "1.5"), ("pp", "1e9"), ("pp", "four"), ("ep", "-1"), ("ep", ""), ("batch", HUGE),
        ("batch", "0x40"), ("system", "trn9.64xlarge"), ("system", "../hardware_specs/trn2-ultraserver"),
        ("workload", "llama-9"), ("phase", "finetune"), ("dtype", "mxfp4"), ("dtype", "fp7"), ("page", "Nope"),
        ("bogus", "1"), ("s.hbm_bandwidth", "10**10**7 GB/s"), ("s.hbm_capacity", "5"), ("s.nosuch", "x2"),
        ("c.tensor_efficiency", "0"), ("c.pue", "0.5"), ("c.op_overhead", "-1 us"), ("c.nosuch", "1"),
        ("w.num_hidden_layers", "1e8"), ("w.num_key_value_heads", "0"), ("w.vocab_size", "0"),
        ("workload.hidden_size", "inf"), ("spec.tdp", "-5 W"), ("cal.hbm_efficiency", "1.7")]],
]


@pytest.mark.parametrize("query,key,shown", URL_CASES)
def test_url_query_parameters(query, key, shown):
    """A bad URL value is one notice naming the parameter and the value; its field keeps the default."""
    t0 = time.perf_counter()
    state, notices = url_state.read_query(query, pages=("Roofline", "Memory"))
    assert time.perf_counter() - t0 < FAST
    assert len(notices) == 1, notices
    note = notices[0]
    assert note.startswith(f"URL parameter {key}=") and shown in note, note
    assert "\n" not in note and "Traceback" not in note
    default = {**url_state.defaults(state["phase"]), url_state.PAGE_KEY: url_state.DEFAULT_PAGE}
    if key in default:
        assert state[key] == default[key]
    if "." in key:  # a what-if: none applied
        assert state["wi_text"] == "" and not any(state[f"wi_{n}"] for n in url_state.QUICK_WHATIF)
