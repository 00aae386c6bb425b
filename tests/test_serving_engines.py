"""Serving-engine profiles (hardware_specs/serving/engines.toml): every parameter of every engine with its
status and source, fitted ones with their fit, bad values refused in one line naming file, field and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.catalog import serving_engines as se
from perfmodel.catalog.replacements import Replacements
from perfmodel.catalog.spec_schema import CatalogError

FILE = Path(__file__).resolve().parent.parent / "hardware_specs" / "serving" / "engines.toml"


def test_every_engine_has_every_parameter_with_provenance():
    engines = se.engines()
    assert {"vllm", "trtllm", "sglang"} <= set(engines)
    for prof in engines.values():
        assert set(prof.params) == set(se.ENGINE_PARAMS)
        for p in prof.params.values():
            assert p.status in ("assumed", "measured", "fitted") and p.source and p.reason
            assert p.status != "fitted" or "engine_fit" in p.fit  # the command that reproduces it
    proto = se.protocol("inferencex")
    assert set(proto.params) == set(se.PROTOCOL_PARAMS) and proto["waves"] == 10


def test_engine_defaults_are_the_documented_ones():
    assert se.engine("vllm")["token_budget"] == 8192 and se.engine("vllm")["kv_memory_fraction"] == 0.9
    assert se.engine("trtllm")["max_running"] == 2048
    assert se.engine("vllm")["step_cost"] < 0.01  # seconds: a host cost per step is ms, not s


def test_overrides_are_range_checked_and_in_force_only_where_passed():
    capped = se.engine("vllm").with_overrides({"max_running": 64})
    assert capped["max_running"] == 64 and capped.params["max_running"].status == "assumed"
    assert se.engine("vllm", replaced=Replacements(engines={"vllm": capped}))["max_running"] == 64
    assert se.engine("vllm")["max_running"] == 1024
    with pytest.raises(CatalogError, match=r"kv_memory_fraction: must be in \(0, 1\]"):
        se.engine("vllm").with_overrides({"kv_memory_fraction": 1.5})
    with pytest.raises(KeyError, match="did you mean 'max_running'"):
        se.engine("vllm").with_overrides({"max_runing": 3})
    with pytest.raises(CatalogError, match="unknown serving engine 'vlm'.*did you mean 'vllm'"):
        se.engine("vlm")


@pytest.mark.parametrize("old, new, match", [
    ('value = 0.90\nkind = "ratio"\nstatus = "assumed"\nsource = "vLLM engine arguments: gpu_memory_utilization',
     'value = 1.90\nkind = "ratio"\nstatus = "assumed"\nsource = "vLLM engine arguments: gpu_memory_utilization',
     r"engines\.vllm\.params\.kv_memory_fraction: must be in \(0, 1\] .*got 1\.9"),
    ("[engines.vllm.params.max_running]", "[engines.vllm.params.max_runnin]",
     "missing max_running.*unknown max_runnin"),
    ('value = "0.651 ms"', 'value = "0.651 GB"', r"engines\.vllm\.params\.step_cost"),
])
def test_a_bad_file_is_one_line_naming_file_and_field(tmp_path, old, new, match):
    text = FILE.read_text()
    assert old in text
    bad = tmp_path / "engines.toml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogError, match=match) as err:
        se.engines(str(bad))
    assert str(bad) in str(err.value) and "\n" not in str(err.value)


def test_an_envelope_on_a_chip_the_catalogue_lacks_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "engines.toml"
    bad.write_text(FILE.read_text().replace("[envelopes.vllm.chips.h200-sxm.", "[envelopes.vllm.chips.h200-sx."))
    se.engines(str(bad))  # the profiles themselves load
    with pytest.raises(CatalogError, match=r"envelopes\.vllm\.chips\.h200-sx: no catalogue chip 'h200-sx'.*did you "
                                           r"mean 'h200-sxm'") as err:
        se.check_envelope_chips(["h100-sxm", "h200-sxm", "b200"], str(bad))
    assert str(bad) in str(err.value) and "\n" not in str(err.value)


def test_a_plan_is_read_against_its_engine_on_its_chip_else_on_every_chip():
    """vLLM ran at most 128 sequences per replica on H200 and 512 on H100: an H200 plan at 256 is extrapolated
    though the engine ran 256 elsewhere; a chip with no vLLM rows (B300) falls back to every chip's rows."""
    assert se.envelope("vllm", "h200-sxm")["max_running"] < se.envelope("vllm", "h100-sxm")["max_running"]
    assert se.envelope("vllm", "b300")["max_running"] == se.envelope("vllm")["max_running"] == max(
        se.envelope("vllm", c)["max_running"] for c in ("b200", "h100-sxm", "h200-sxm"))
    assert "on H200 SXM" in se.envelope("vllm", "h200-sxm").params["max_running"].source
