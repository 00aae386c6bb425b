"""Every input range-checked and bounded at the edge (issue 15, deliverable 2).

Each bad input is refused with one line naming the input (file, knob or option), the field, the
value and what is allowed; nothing runs for long on a short hostile string or a huge count.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from perfmodel import catalog
from perfmodel.catalog import check, files, workload_files
from perfmodel.core import param_ranges
from perfmodel.catalog import whatif as wi
from perfmodel.catalog.calibration import calibration_for, load_calibrated_set, load_calibration_file
from perfmodel.catalog.spec_schema import CatalogError
from perfmodel.cli.parser import main
from perfmodel.core import limits, units
from perfmodel.core.scenario import Parallelism, Phase, Scenario

ROOT = Path(__file__).resolve().parent.parent
FAST = 2.0  # seconds: every refusal here must come at once


@pytest.fixture(scope="module")
def trn2():
    return catalog.load_system("trn2-ultraserver")


@pytest.fixture(scope="module")
def cal(trn2):
    return calibration_for(trn2)


@pytest.fixture(scope="module")
def llama():
    return workload_files.load_workload("llama-3-70b")


def refused(exc_type, fn, *args, match: str | tuple[str, ...] = ()):
    """Run fn(*args), expecting exc_type within FAST seconds; the message is one line holding every `match`."""
    t0 = time.perf_counter()
    with pytest.raises(exc_type) as info:
        fn(*args)
    assert time.perf_counter() - t0 < FAST, f"took {time.perf_counter() - t0:.1f} s"
    msg = str(info.value)
    assert "\n" not in msg, msg
    for m in (match,) if isinstance(match, str) else match:
        assert m in msg, f"{m!r} not in {msg!r}"
    return msg


def cli_refusal(capsys, *argv) -> str:
    """Run the CLI expecting a refusal: exit status != 0, no traceback, one error line; returns it."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse: a bad option value
        rc = exc.code
    err = capsys.readouterr().err
    assert rc not in (0, None), err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------- quantity strings: number + unit, no arithmetic


@pytest.mark.parametrize("text", ["10**10**7 GB/s", "10**10**8 GB/s", "2**3 GB/s", "(1+1) GB/s", "1 GB/s + 1 GB/s",
                                  "1 GB; import os", "x" * 10_000])
def test_quantity_with_arithmetic_is_refused_at_once(text):
    refused(units.UnitError, units.parse, text, "bandwidth", match=("expected a number and a unit such as '2.9 TB/s'",
                                                                     text[:20]))


@pytest.mark.parametrize("text,fragment", [("inf GB/s", "not finite"), ("nan GB/s", "not finite"),
                                           ("1e999 GB/s", "not finite"), ("-inf TB/s", "not finite"),
                                           ("1e99 TB/s", "beyond any real quantity")])
def test_non_finite_and_absurd_quantities_are_refused(text, fragment):
    refused(units.UnitError, units.parse, text, "bandwidth", match=(fragment, text))


def test_huge_plain_numbers_are_refused():
    refused(units.UnitError, units.parse, 10**400, "count", match="too large")
    refused(units.UnitError, units.parse, "1e40", "count", match="beyond any real quantity")


@pytest.mark.parametrize("text,kind,si", [
    ("40GB", "capacity", 40e9), ("1MiB", "capacity", 2**20), ("2.9 TB/s", "bandwidth", 2.9e12),
    ("800 Gbps", "bandwidth", 100e9), ("1.5e3 GiB/s", "bandwidth", 1500 * 2**30), ("+3 us", "time", 3e-6),
    ("85 %", "ratio", 0.85), ("128 elem/cycle", "elements_per_cycle", 128), ("21.50 USD/h", "price_rate", 21.5),
    ("4e-06 s", "time", 4e-6), ("1 kW", "power", 1e3), ("2 GB * s / s", "capacity", 2e9), ("1 s^-1", "frequency", 1),
])
def test_number_and_unit_spellings_still_read(text, kind, si):
    assert units.parse(text, kind) == pytest.approx(si, rel=1e-12)


def test_unknown_unit_names_the_text():
    refused(units.UnitError, units.parse, "5 furlongs", "capacity", match=("cannot read", "5 furlongs"))


# ---------------------------------------------------------------- work bounded by the model's structure


def test_sliding_layer_count_is_closed_form():
    """num_sliding_layers does not loop over the layers: 10^8 layers answer at once."""
    mistral = workload_files.load_workload("mistral-7b")
    huge = dataclasses.replace(mistral, num_hidden_layers=10**8)  # bypasses validate(): the count alone
    t0 = time.perf_counter()
    assert huge.num_sliding_layers == (10**8 if mistral.sliding_window else 0)
    assert time.perf_counter() - t0 < 0.1
    gpt_oss = workload_files.load_workload("gpt-oss-120b")
    assert gpt_oss.num_sliding_layers == sum(t == "sliding_attention" for t in gpt_oss.layer_types)


def test_workload_what_if_layer_count_has_a_ceiling(llama):
    refused(wi.WhatIfError, wi.apply_workload, llama, [("num_hidden_layers", "1e8")],
            match=("workload field num_hidden_layers", f"{limits.MAX_LAYERS:,}", "100,000,000"))


def test_a_listed_layer_pattern_follows_the_layer_count():
    gpt_oss = workload_files.load_workload("gpt-oss-120b")
    new = wi.apply_workload(gpt_oss, [("num_hidden_layers", "40")])
    assert len(new.layer_types) == 40 and new.layer_types[:36] == gpt_oss.layer_types
    assert new.num_sliding_layers == 20


def test_workload_file_layer_count_has_a_ceiling(tmp_path):
    text = (ROOT / "workloads" / "llama-3-8b.toml").read_text()
    assert "num_hidden_layers = 32" in text
    bad = tmp_path / "llama-3-8b.toml"
    bad.write_text(text.replace("num_hidden_layers = 32", "num_hidden_layers = 100_000_000"))
    refused(CatalogError, workload_files.load_workload_file, bad,
            match=(str(bad), "field config.num_hidden_layers", "16,384", "100,000,000"))


# ---------------------------------------------------------------- what-ifs: the files' rules


@pytest.mark.parametrize("name,value,fragments", [
    ("num_key_value_heads", "0", ("workload field num_key_value_heads", "between 1 and", "got 0")),
    ("vocab_size", "0", ("workload field vocab_size", "between 1 and", "got 0")),
    ("hidden_size", "inf", ("workload field hidden_size", "finite", "'inf'")),
    ("num_attention_heads", "7", ("num_key_value_heads", "multiple", "num_attention_heads=7")),
    ("num_experts_per_tok", "2", ("workload field num_experts_per_tok", "mixture-of-experts")),
    ("intermediate_size", "x1e300", ("workload field intermediate_size", "scale 'x1e300'")),
])
def test_workload_what_ifs_meet_the_file_rules(llama, name, value, fragments):
    refused(wi.WhatIfError, wi.apply_workload, llama, [(name, value)], match=fragments)


@pytest.mark.parametrize("value,fragments", [
    ("xinf", ("hbm_bandwidth", "cannot read the scale 'xinf'")),
    ("xnan", ("hbm_bandwidth", "cannot read the scale 'xnan'")),
    ("x1e300", ("hbm_bandwidth", "x1e300", "within a factor")),
    ("-100%", ("hbm_bandwidth", "-100%")),
    ("1e99 TB/s", ("hbm_bandwidth", "beyond any real quantity")),
    ("inf TB/s", ("hbm_bandwidth", "not finite")),
    ("10**10**8 GB/s", ("hbm_bandwidth", "expected a number and a unit")),
    ("0 TB/s", ("hbm_bandwidth", "must be positive")),
])
def test_spec_what_ifs_are_finite_and_positive(trn2, value, fragments):
    refused(wi.WhatIfError, wi.apply_spec, trn2, [("hbm_bandwidth", value)], match=fragments)


@pytest.mark.parametrize("name,value,allowed", [
    ("hbm_efficiency", "1.7", "(0, 1]"), ("hbm_efficiency", "5", "(0, 1]"), ("tensor_efficiency", "0", "(0, 1]"),
    ("link_efficiency_node", "x2", "(0, 1]"), ("comm_overlap_frac", "1.5", "[0, 1]"),
    ("tile_m", "0", "whole number in [1, 65,536]"), ("tile_m", "x1.3", "whole number"), ("pue", "0.5", "[1, 10]"),
    ("op_overhead", "2 h", "[0, 1 s]"), ("op_overhead", "4", "with its unit"),
])
def test_calibration_what_ifs_meet_the_parameter_range(cal, name, value, allowed):
    refused(wi.WhatIfError, wi.apply_calibration, cal, [(name, value)],
            match=(f"calibration parameter {name}", allowed))


def test_a_scale_applies_to_calibration_parameters_with_units(cal):
    """`--set op_overhead=x2` (documented) doubles the time instead of failing on a bare SI number."""
    new = wi.apply_calibration(cal, [("op_overhead", "x2"), ("runtime_reserved_memory", "+50%"),
                                     ("hbm_efficiency", "-10%")])
    assert new["op_overhead"] == pytest.approx(2 * cal["op_overhead"])
    assert new["runtime_reserved_memory"] == pytest.approx(1.5 * cal["runtime_reserved_memory"])
    assert new["hbm_efficiency"] == pytest.approx(0.9 * cal["hbm_efficiency"])


def test_every_family_value_lies_in_its_range():
    for path in sorted((ROOT / "hardware_specs" / "calibration").glob("*.toml")):
        f = load_calibration_file(path)
        for table in [f.params] + [o.params for o in f.chips.values()]:
            for name, p in table.items():
                if p.kind != "flag":
                    v = units.parse(p.value, p.kind)
                    assert param_ranges.range_for(name, p.kind).contains(v), (path.name, name, p.value)


@pytest.mark.parametrize("wrong,fragments", [
    ("hbm_eficiency", ("'hbm_eficiency'", "did you mean 'hbm_efficiency'")),
    ("hbm_bandwith", ("'hbm_bandwith'", "did you mean 'hbm_bandwidth'")),
    ("num_hiden_layers", ("'num_hiden_layers'", "did you mean 'num_hidden_layers'")),
])
def test_unknown_what_if_names_suggest_the_close_ones(cal, wrong, fragments):
    refused(wi.WhatIfError, wi.parse_assignments, [f"{wrong}=x2"], cal, match=fragments)


def test_unknown_catalogue_names_suggest_the_close_ones():
    refused(CatalogError, catalog.load_system, "trn2-ultraservr", match="did you mean 'trn2-ultraserver'")
    refused(CatalogError, workload_files.load_workload, "llama-3-70", match="did you mean 'llama-3-70b'")
    refused(CatalogError, workload_files.load_workload, "../workloads/llama-3-8b", match="no such workload")
    refused(CatalogError, catalog.load_system, "../hardware_specs/trn2-ultraserver", match="no such system file")


# ---------------------------------------------------------------- calibration files and `perfmodel check`


@pytest.fixture()
def catalog_copy(tmp_path):
    """A catalogue whose calibration files may be edited: everything else links to the real one."""
    specs = tmp_path / "hardware_specs"
    specs.mkdir()
    for p in (ROOT / "hardware_specs").iterdir():
        if p.name != "calibration":
            (specs / p.name).symlink_to(p)
    (specs / "calibration").mkdir()
    for p in (ROOT / "hardware_specs" / "calibration").glob("*.toml"):
        (specs / "calibration" / p.name).write_text(p.read_text())
    (tmp_path / "workloads").symlink_to(ROOT / "workloads")
    yield tmp_path
    files.clear_caches()  # check_catalog cleared them to read the copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("old,new,field,allowed", [
    ("[params.tile_m]\nvalue = 32", "[params.tile_m]\nvalue = 0", "params.tile_m.value", "[1, 65,536]"),
    ("[params.hbm_efficiency]\nvalue = 0.85", "[params.hbm_efficiency]\nvalue = 40", "params.hbm_efficiency.value",
     "(0, 1]"),
    ("[params.tensor_efficiency]\nvalue = 0.90", "[params.tensor_efficiency]\nvalue = 0",
     "params.tensor_efficiency.value", "(0, 1]"),
    ('[params.op_overhead]\nvalue = "2 us"', '[params.op_overhead]\nvalue = "inf us"', "params.op_overhead.value",
     "not finite"),
    ("[chips.trainium3.params.attention_vector_passes]\nvalue = 0.25",
     "[chips.trainium3.params.attention_vector_passes]\nvalue = 100",
     "chips.trainium3.params.attention_vector_passes.value", "[0, 64]"),
])
def test_calibration_file_values_out_of_range_are_errors(catalog_copy, old, new, field, allowed):
    path = catalog_copy / "hardware_specs" / "calibration" / "neuron.toml"
    _edit(path, old, new)
    refused(CatalogError, load_calibration_file, path, match=(str(path), f"field {field}", allowed))
    errors = [f for f in check.check_catalog(catalog_copy) if f.level == "error"]
    assert [Path(f.file).name for f in errors] == ["neuron.toml"] and field in errors[0].message


def test_perfmodel_check_fails_on_a_zero_tile(catalog_copy, capsys, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CATALOG", str(catalog_copy))  # main() sets it for --catalog; restored after
    _edit(catalog_copy / "hardware_specs" / "calibration" / "neuron.toml", "[params.tile_m]\nvalue = 32",
          "[params.tile_m]\nvalue = 0")
    assert main(["--catalog", str(catalog_copy), "check"]) != 0
    out = capsys.readouterr()
    assert "params.tile_m.value" in out.out + out.err and "Traceback" not in out.err


def test_calibrated_set_value_out_of_range_is_an_error(tmp_path):
    text = """schema_version = 1
family = "neuron"
created = "2025-01-31T12:00:00"
method = "test"

[fitted_on]
cases_file = "x.csv"
sha256 = "{sha}"
cases = 3

[params.hbm_efficiency]
value = 1.3
initial = 0.85
lower = 0.05
kind = "ratio"
""".replace("{sha}", "0" * 64)
    path = tmp_path / "set.toml"
    path.write_text(text)
    refused(CatalogError, load_calibrated_set, path, match=(str(path), "params.hbm_efficiency.value", "(0, 1]"))


# ---------------------------------------------------------------- scenarios


@pytest.mark.parametrize("build,fragments", [
    (lambda: Parallelism(tp=0), ("parallelism field tp", "between 1 and", "got 0")),
    (lambda: Parallelism(dp=limits.MAX_CHIPS + 1), ("parallelism field dp", f"{limits.MAX_CHIPS:,}")),
    (lambda: Parallelism(tp=1024, dp=2048), ("2,097,152 chips", "MAX_CHIPS")),
    (lambda: Scenario(Phase.PREFILL, batch=10**9), ("scenario field batch", f"{limits.MAX_BATCH:,}")),
    (lambda: Scenario(Phase.PREFILL, seq_len=0), ("scenario field seq_len", "got 0")),
    (lambda: Scenario(Phase.DECODE, context=-1), ("scenario field context", "between 0 and")),
    (lambda: Scenario(Phase.PREFILL, batch=2.5), ("scenario field batch", "whole number", "2.5")),
])
def test_scenario_counts_are_bounded(build, fragments):
    refused(ValueError, lambda: build().validate(), match=fragments)


@pytest.mark.parametrize("field,value,shown", [("batch", float("inf"), "inf"), ("tp", 0, "got 0"),
                                               ("seq_len", 10**12, "1,000,000,000,000"), ("context", -1, "got -1"),
                                               ("batch", "8", "'8'")])
def test_scenario_options_are_checked(llama, field, value, shown):
    opts = wi.ScenarioOptions(phase="prefill").replace(**{field: value})
    refused(ValueError, wi.scenario_of, opts, llama, match=(f"scenario option {field}", shown))


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("chips", ["0", "-4", "4,0", "1e3", "1.5", str(limits.MAX_CHIPS + 1), "10**9"])
def test_collective_chips_must_be_counts(capsys, chips):
    line = cli_refusal(capsys, "collective", "--hardware", "trn2-ultraserver", "--op", "all-reduce", "--chips", chips,
                       "--size", "1MiB")
    assert "argument --chips" in line and "between 1 and 1,048,576" in line


def test_reversed_size_range_names_the_option_and_values(capsys):
    line = cli_refusal(capsys, "collective", "--hardware", "trn2-ultraserver", "--op", "all-gather", "--chips", "64",
                       "--size-range", "1GB:1MB")
    assert "argument --size-range" in line and "1GB" in line and "1MB" in line


@pytest.mark.parametrize("size", ["0B", "inf GB", "10**10**8 GB", "1 TB/s"])
def test_collective_size_is_a_positive_capacity(capsys, size):
    assert "argument --size" in cli_refusal(capsys, "collective", "--hardware", "trn2-ultraserver", "--op",
                                            "all-gather", "--chips", "64", "--size", size)


def test_collective_set_scales_and_ranges(capsys):
    base = ["collective", "--hardware", "trn2-ultraserver", "--op", "all-reduce", "--chips", "16", "--size", "1KiB",
            "-f", "json"]
    assert main(base + ["--set", "collective_fixed_latency=x2"]) == 0
    capsys.readouterr()
    line = cli_refusal(capsys, *base, "--set", "link_efficiency_node=1.7")
    assert "link_efficiency_node" in line and "(0, 1]" in line and "1.7" in line


@pytest.mark.parametrize("argv,option", [
    (["train", "--hardware", "trn1.32xlarge", "--nodes", "0", "--workload", "gpt3-6.7b", "--seq", "2048",
      "--global-batch", "128", "--micro-batch", "1"], "--nodes"),
    (["train", "--hardware", "trn1.32xlarge", "--nodes", "2", "--workload", "gpt3-6.7b", "--seq", "2048",
      "--global-batch", "128", "--micro-batch", "-1"], "--micro-batch"),
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--tp", "0"], "--tp"),
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--batch", "-3"], "--batch"),
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--seq", "1e12"], "--seq"),
    (["roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--microbatches", "0"],
     "--microbatches"),
    (["serve", "--concurrency", "16", "0"], "--concurrency"),
    (["serve", "--tdp", "inf"], "--tdp"),
    (["plan", "--input", "0"], "--input"),
    (["plan", "--train", "--chips", "0"], "--chips"),
    (["sensitivity", "--rel-step", "2"], "--rel-step"),
    (["sweep", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--workers", "0"], "--workers"),
])
def test_count_options_are_refused_before_the_command_runs(capsys, argv, option):
    assert f"argument {option}" in cli_refusal(capsys, *argv)


def test_an_out_of_range_what_if_is_one_line(capsys):
    line = cli_refusal(capsys, "roofline", "--hardware", "trn2-ultraserver", "--workload", "llama-3-8b", "--set",
                       "hbm_efficiency=1.7")
    assert line.startswith("perfmodel: error: calibration parameter hbm_efficiency") and "(0, 1]" in line
