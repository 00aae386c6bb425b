"""Power model (idle + dynamic, overheads, PUE, ranges, caveats) and cost ($/h -> $/M tokens, $/month, $/run)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.calibration import calibration_for
from perfmodel.serving import cost, power, search
from perfmodel.serving.steady_state import Grid, Mix

ZERO = {e: 0.0 for e in ("tensor", "vector", "scalar", "gpsimd", "memory", "comm")}
ONE = {e: 1.0 for e in ZERO}


def sys_(name):
    return catalog.load_system(name)


def test_chip_power_spans_idle_to_tdp():
    pm = power.power_model(sys_("trn2-ultraserver"))
    assert pm.chip_w(ZERO) == pytest.approx(pm.idle_frac * 500)
    assert pm.chip_w(ONE) == pytest.approx(500)
    half = pm.chip_w({**ZERO, "tensor": 1.0})
    w = pm.weights
    assert half == pytest.approx(pm.idle_w + (500 - pm.idle_w) * w["tensor"] / sum(w.values()))
    over = pm.chip_w({**ONE, "memory": 3.0})  # busy fractions are clipped to 1
    assert over == pytest.approx(500)


def test_tdp_ranges_follow_the_sources():
    t3 = power.tdp_cases(sys_("trn3-ultraserver"))
    # 690 W derived from AWS's 40% efficiency statement (itself +-20%: it scales the Trainium2 estimate), up to
    # the 1,000 W remark
    assert (t3["low"].watts, t3["nominal"].watts, t3["high"].watts) == pytest.approx((552, 690, 1000))
    t2 = power.tdp_cases(sys_("trn2-ultraserver"))
    assert (t2["low"].watts, t2["nominal"].watts, t2["high"].watts) == pytest.approx((400, 500, 600))
    h = power.tdp_cases(sys_("p5.48xlarge"))
    assert h["low"].watts == h["high"].watts == 700 and h["nominal"].status == "published"


def test_caveats_say_what_is_published():
    assert "NOT published" in power.caveat(sys_("trn2-ultraserver"))
    assert "552-1000 W" in power.caveat(sys_("trn3-ultraserver"))
    assert "is published" in power.caveat(sys_("p5.48xlarge"))


def test_chip_without_tdp_raises_or_says_so():
    s = sys_("trn1.32xlarge")
    with pytest.raises(ValueError, match="assumed_tdp"):
        power.power_model(s)
    df = pd.DataFrame({f"activity_{e}_frac": [0.5] for e in ZERO} | {"chips_used_per_scaleup": [16.0],
                                                                      "output_tokens_per_s_per_scaleup": [100.0]})
    out = power.add_power_columns(df, s)
    assert out["output_tokens_per_s_per_mw"].isna().all() and out["power_caveat"].iloc[0].startswith("NO POWER")
    cal = calibration_for(s).with_overrides({"assumed_tdp": "300 W"})
    assert power.power_model(s, cal).tdp_w == 300 and power.power_model(s, cal).tdp_status == "assumed"


def test_node_overhead_is_built_up_the_same_way_for_every_vendor():
    # P_node = (vCPU c_cpu + GiB c_mem + Gbps c_net + other)(1 + f) + f chips (TDP + switch), by hand
    for name in ("p5.48xlarge", "trn2-ultraserver"):
        s = sys_(name)
        cal = calibration_for(s)
        n, f = s.node, cal["cooling_conversion_frac"]
        host = (n.vcpus * cal["host_power_per_vcpu"] + n.host_memory_bytes / 2 ** 30 * cal["host_memory_power_per_gib"]
                + n.efa_bandwidth_bytes_per_s * 8e-9 * cal["network_power_per_gbps"] + cal["node_other_power"])
        want = host * (1 + f) + f * n.chips * (s.chip.tdp_w + cal["scaleup_switch_power_per_chip"])
        pm = power.power_model(s)
        assert pm.node_overhead_w == pytest.approx(want) and pm.node_overhead_basis.startswith("build-up")
    assert power.power_model(sys_("trn3-ultraserver")).switch_w_per_chip == 30
    assert power.power_model(sys_("p5.48xlarge")).switch_w_per_chip == 50  # its share of 4 NVSwitches


def test_it_and_facility_power_and_tokens_per_mw():
    s = sys_("trn3-ultraserver")
    pm = power.power_model(s, case="low")
    assert pm.tdp_w == pytest.approx(552)
    it = pm.it_w(500.0, 128, 144, 36)
    assert it == pytest.approx(128 * 500 + 16 * pm.idle_w + 36 * pm.node_overhead_w + 144 * 30)
    assert pm.facility_w(it) == pytest.approx(1.15 * it)
    with pytest.raises(ValueError):
        pm.it_w(500.0, 200, 144, 36)
    arch = workload_files.load_workload("gpt-oss-120b")
    df = search.frontier_sweep(s, arch, Mix(1024, 1024), grid=Grid.of(da=4, ep=4, concurrency=[64, 256],
                                                                      compute="mxfp4"))
    tpm = df["output_tokens_per_s_per_scaleup"] / (df["scaleup_facility_power_w"] / 1e6)
    assert np.allclose(df["output_tokens_per_s_per_mw"], tpm)
    assert np.all(df["output_tokens_per_s_per_mw_at_low_power"] > df["output_tokens_per_s_per_mw"])
    assert np.all(df["chip_power_w"] <= 1000) and np.all(df["chip_power_w"] >= 300)


def test_prices_and_status():
    t2 = cost.price_for(sys_("trn2-ultraserver"))
    assert t2.usd_per_node_hour == pytest.approx(85.964) and t2.status == "derived"
    t3 = cost.price_for(sys_("trn3-ultraserver"))
    assert t3.status == "assumed" and t3.usd_per_chip_hour == pytest.approx(8.06) and "NO LIST PRICE" in t3.label
    assert cost.price_for(sys_("p5.48xlarge"), alternative="post-cut").usd_per_node_hour == pytest.approx(55.04)
    assert cost.price_for(sys_("p5.48xlarge"), usd_per_node_hour=40).status == "override"
    none = cost.price_for(sys_("trn3-ultraserver"), calibration_for(sys_("trn3-ultraserver")).with_overrides(
        {"assumed_price_per_chip_hour": "0 USD/h"}))
    assert not none.available and none.label == "no price"
    with pytest.raises(ValueError, match="no price"):
        none.require()
    out = cost.add_cost_columns(pd.DataFrame({"output_tokens_per_s_per_chip": [100.0]}), none)
    assert out["usd_per_million_output_tokens"].isna().all() and out["price_note"].iloc[0] == "no price"


def test_cost_formulas():
    p = cost.price_for(sys_("trn2-ultraserver"))
    per_chip = 85.964 / 16
    assert cost.usd_per_million_tokens(1000.0, p) == pytest.approx(per_chip / (1000 * 3600) * 1e6)
    assert cost.monthly_usd(64, p) == pytest.approx(64 * per_chip * 730)
    assert cost.training_run_usd(64, 10, p) == pytest.approx(64 * per_chip * 240)
    with pytest.raises(ValueError):
        cost.usd_per_million_tokens(0.0, p)
