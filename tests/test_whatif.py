"""What-if overrides: spec values, calibration and workload fields are copied, changed, recorded."""

import dataclasses

import pytest

from perfmodel import catalog, report
from perfmodel.catalog import whatif as wi
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Scope


@pytest.fixture(scope="module")
def trn2():
    return catalog.load_system("trn2-ultraserver")


@pytest.mark.parametrize("text,factor", [("x1.5", 1.5), ("*2", 2.0), ("+50%", 1.5), ("-20%", 0.8), ("×0.5", 0.5)])
def test_parse_change_scales(text, factor):
    ch = wi.parse_change(text)
    assert ch.op == "scale" and ch.factor == pytest.approx(factor)


@pytest.mark.parametrize("text", ["6 TB/s", "0.8", "500 W"])
def test_parse_change_sets(text):
    assert wi.parse_change(text) == wi.Change("set", text=text)


@pytest.mark.parametrize("text", ["x", "*abc", "-100%", "x0", ""])
def test_parse_change_rejects_bad_scales(text):
    with pytest.raises(wi.WhatIfError):
        wi.parse_change(text)


def test_scale_hbm_bandwidth_copies_and_records_provenance(trn2):
    new = wi.apply_spec(trn2, [("hbm_bandwidth", "+50%")])
    assert new.chip.hbm_bandwidth_bytes_per_s == pytest.approx(1.5 * trn2.chip.hbm_bandwidth_bytes_per_s)
    assert trn2.chip.hbm_bandwidth_bytes_per_s == pytest.approx(2.9e12)  # the original is untouched
    v = new.provenance["chip.memory.hbm_bandwidth"]
    assert v.status.value == "assumed" and v.note.startswith("what-if override")
    assert v.si == pytest.approx(new.chip.hbm_bandwidth_bytes_per_s)
    assert trn2.provenance["chip.memory.hbm_bandwidth"].status.value == "published"


def test_set_with_units(trn2):
    new = wi.apply_spec(trn2, [("hbm_bandwidth", "4 TB/s"), ("hbm_capacity", "128 GiB")])
    assert new.chip.hbm_bandwidth_bytes_per_s == pytest.approx(4e12)
    assert new.chip.hbm_capacity_bytes == pytest.approx(128 * 2**30)


def test_set_rejects_wrong_dimension(trn2):
    with pytest.raises(wi.WhatIfError, match="hbm_bandwidth"):
        wi.apply_spec(trn2, [("hbm_bandwidth", "4 GiB")])


def test_tensor_rate_per_dtype_changes_only_that_dtype(trn2):
    new = wi.apply_spec(trn2, [("tensor_rate.fp8", "x2")])
    old_t, new_t = trn2.chip.tensor.flop_per_s, new.chip.tensor.flop_per_s
    assert new_t[DType.FP8] == pytest.approx(2 * old_t[DType.FP8])
    assert new_t[DType.BF16] == old_t[DType.BF16]
    assert new.chip.peak_flop_per_s[DType.FP8] == pytest.approx(2 * trn2.chip.peak_flop_per_s[DType.FP8])


def test_link_bandwidth_set_keeps_tier_ratios(trn2):
    new = wi.apply_spec(trn2, [("link_bandwidth", "2 TB/s")])
    inner_old = [t.bandwidth_bytes_per_s for t in trn2.tiers if t.scope != Scope.SCALEOUT]
    inner_new = [t.bandwidth_bytes_per_s for t in new.tiers if t.scope != Scope.SCALEOUT]
    assert max(inner_new) == pytest.approx(2e12)
    assert inner_new[1] / inner_new[0] == pytest.approx(inner_old[1] / inner_old[0])
    assert new.tier(Scope.SCALEOUT) == trn2.tier(Scope.SCALEOUT)
    marked = [p for p, v in new.provenance.items() if v.note.startswith("what-if")]
    assert marked and all(p.startswith(("tiers.", "chip.interconnect")) for p in marked)


def test_unknown_spec_name_lists_the_known_ones(trn2):
    with pytest.raises(wi.WhatIfError, match="hbm_bandwidth"):
        wi.apply_spec(trn2, [("hbm_bandwith", "x2")])


def test_missing_value_is_a_clear_error():
    trn3 = catalog.load_system("trn3-ultraserver")
    with pytest.raises(wi.WhatIfError, match="no on-demand price"):
        wi.apply_spec(trn3, [("price", "x2")])


def test_calibration_scale_and_set(trn2):
    cal = calibration_for(trn2)
    new = wi.apply_calibration(cal, [("hbm_efficiency", "x0.5"), ("op_overhead", "3 us")])
    assert new["hbm_efficiency"] == pytest.approx(0.5 * cal["hbm_efficiency"])
    assert new["op_overhead"] == pytest.approx(3e-6)
    assert new.params["hbm_efficiency"].origin == "user override"
    with pytest.raises(wi.WhatIfError, match="unknown what-if name 'hbm_eff'"):
        wi.apply_calibration(cal, [("hbm_eff", "0.5")])


def test_workload_fields():
    arch = workload_files.load_workload("llama-3-70b")
    new = wi.apply_workload(arch, [("num_hidden_layers", "40"), ("intermediate_size", "x0.5"),
                                   ("tie_word_embeddings", "true")])
    assert (new.num_hidden_layers, new.intermediate_size, new.tie_word_embeddings) == (40, 14336, True)
    assert arch.num_hidden_layers == 80
    with pytest.raises(wi.WhatIfError, match="whole number"):
        wi.apply_workload(arch, [("num_hidden_layers", "40.5")])
    with pytest.raises(wi.WhatIfError, match="non-numeric"):
        wi.apply_workload(arch, [("name", "x")])


def test_assignments_route_to_families_and_round_trip_the_url(trn2):
    cal = calibration_for(trn2)
    w = wi.parse_assignments(["hbm_bandwidth=+50%", "hbm_efficiency=0.8", "num_hidden_layers=40",
                              "spec.tdp=x1.2", "cal.pue=1.3"], cal)
    assert w.spec == (("hbm_bandwidth", "+50%"), ("tdp", "x1.2"))
    assert w.cal == (("hbm_efficiency", "0.8"), ("pue", "1.3"))
    assert w.workload == (("num_hidden_layers", "40"),)
    q = wi.to_query(w)
    assert q["s.hbm_bandwidth"] == "+50%" and q["c.hbm_efficiency"] == "0.8"
    assert wi.from_query({**q, "system": "x", "page": "y"}) == w
    assert hash(w) == hash(wi.from_query(q))  # usable as a cache key
    assert w.label().startswith("hbm_bandwidth+50%")
    with pytest.raises(wi.WhatIfError, match="NAME=VALUE"):
        wi.parse_assignments(["hbm_bandwidth"])


def test_what_if_moves_a_memory_bound_result():
    """Decode of a dense model is HBM-bound: +50% bandwidth cuts the step, but by less than 1/1.5."""
    opts = wi.ScenarioOptions(phase="decode", batch=8, context=4096, tp=4)
    base = report.run_scenario(report.load("trn2-ultraserver", "llama-3-70b"), opts, with_fit=False)
    fast = report.run_scenario(report.load("trn2-ultraserver", "llama-3-70b", wi.WhatIf(spec=(("hbm_bandwidth",
                                                                                             "+50%"),))),
                               opts, with_fit=False)
    ratio = fast.result["step_time_s"] / base.result["step_time_s"]
    assert ratio >= 1 / 1.5 - 1e-9 and ratio < 0.95  # at most the bandwidth gain, and a real gain
    # the figures that rest on the override are marked as what-if
    assert fast.summary().iloc[0]["basis_performance"] == "what-if"
    assert base.summary().iloc[0]["basis_performance"] in ("published", "derived")


def test_scenario_options_defaults():
    gpt_oss = workload_files.load_workload("gpt-oss-120b")
    sc = wi.scenario_of(wi.ScenarioOptions(phase="decode", dtype="fp8"), gpt_oss)
    assert sc.context == wi.DEFAULT_CONTEXT["decode"]
    assert sc.precision.compute == DType.FP8 and sc.precision.experts == DType.MXFP4  # shipped MXFP4 experts kept
    sc = wi.scenario_of(wi.ScenarioOptions(phase="decode", dtype="bf16"), gpt_oss)
    assert sc.precision.experts == DType.MXFP4
    dense = wi.scenario_of(wi.ScenarioOptions(phase="prefill", dtype="mxfp4"), workload_files.load_workload(
        "llama-3-8b"))
    assert dense.precision.experts == DType.MXFP4
    with pytest.raises(ValueError, match="ep"):
        wi.scenario_of(wi.ScenarioOptions(phase="prefill", tp=2, ep=4), gpt_oss)


def test_knobs_frame_lists_current_values(trn2):
    df = wi.knobs_frame(trn2)
    row = df.set_index("name").loc["hbm_bandwidth"]
    assert row["value_si"] == pytest.approx(2.9e12) and row["unit"] == "B/s"
    assert {"tensor_rate", "link_bandwidth", "tdp", "price"} <= set(df["name"])


def test_what_if_is_frozen():
    w = wi.WhatIf()
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.spec = ()
    assert not w and w.with_spec("tdp", "x2").spec == (("tdp", "x2"),)


def test_shipped_expert_weights_kept_only_where_native():
    from perfmodel import catalog
    from perfmodel.catalog import workload_files
    from perfmodel.catalog.whatif import ScenarioOptions, scenario_of
    oss = workload_files.load_workload("gpt-oss-120b")
    opts = ScenarioOptions(phase="decode", batch=8, seq_len=1, context=1024, dtype="mxfp8")
    trn3 = scenario_of(opts, oss, catalog.load_system("trn3-ultraserver"))
    assert trn3.precision.experts.value == "mxfp4"  # Trainium3 multiplies MXFP4 x MXFP8 in hardware
    trn2 = scenario_of(opts.replace(dtype="fp8"), oss, catalog.load_system("trn2-ultraserver"))
    assert trn2.precision.experts.value == "fp8"  # no MX support: experts converted offline
