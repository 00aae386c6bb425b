"""GPU spec files (A100, H100, H200, B200, GB200 systems on AWS; B300, GB300 NVL72 and H800 from
their published spec sheets): load, internal consistency, the ratios NVIDIA and AWS state, ridge
points of hardware_facts.md section 7.1, and link direction.

Every expected number here is a published figure or plain arithmetic on one, so a failure
means a spec file drifted from its sources, not that a model changed.
"""

from __future__ import annotations

import pytest

from perfmodel import catalog
from perfmodel.core import units
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Family, Scope, Topology
from perfmodel.core.provenance import Status

GPU_SYSTEMS = {
    # system: (chip, GPUs per node, nodes in the scale-up domain, EFA Gbps per node)
    "p4d.24xlarge": ("a100-sxm4-40gb", 8, 1, 400),
    "p5.48xlarge": ("h100-sxm", 8, 1, 3200),
    "p5e.48xlarge": ("h200-sxm", 8, 1, 3200),
    "p6-b200.48xlarge": ("b200", 8, 1, 3200),
    "gb200-nvl72": ("gb200-b200", 4, 18, 3200),
    "p6-b300.48xlarge": ("b300", 8, 1, 6400),
    "gb300-nvl72": ("gb300-b300", 4, 18, 3200),
    "hgx-h800": ("h800-sxm", 8, 1, 3200),
}
BLACKWELL_ULTRA = {"p6-b300.48xlarge", "gb300-nvl72"}
FMA_FLOP = 2.0  # one fused multiply-add per lane per clock = 2 FLOP

# NVLink per GPU, bidirectional, as published (GB/s)
NVLINK_BIDIR_GBPS = {"p4d.24xlarge": 600, "p5.48xlarge": 900, "p5e.48xlarge": 900,
                     "p6-b200.48xlarge": 1800, "gb200-nvl72": 1800,
                     "p6-b300.48xlarge": 1800, "gb300-nvl72": 1800, "hgx-h800": 400}

# hardware_facts.md section 7.1: (system, dtype, FLOP per HBM byte)
RIDGE_POINTS = [
    ("p4d.24xlarge", DType.BF16, 201),
    ("p5.48xlarge", DType.BF16, 295),
    ("p5.48xlarge", DType.FP8, 591),
    ("p5e.48xlarge", DType.FP8, 412),
    ("p6-b200.48xlarge", DType.FP8, 562),
    ("p6-b200.48xlarge", DType.FP4, 1125),
    ("gb200-nvl72", DType.FP8, 625),
]


def sysobj(name):
    return catalog.load_system(name)


def tflops(x: float) -> float:
    return x / units.TFLOPS


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_system_loads(name):
    chip_name, per_node, nodes, _ = GPU_SYSTEMS[name]
    s = sysobj(name)
    assert s.chip.name == chip_name
    assert s.chip.family == Family.NVIDIA and not s.chip.family.is_neuron
    assert s.node.chips == per_node and s.scaleup_nodes == nodes
    assert s.chip.gpsimd is None, "GPUs have no GpSimd engine"
    assert s.chip.tdp_w and s.chip.hbm_capacity_bytes > 0 and s.chip.sram_bytes > 0
    for v in s.provenance.values():
        assert v.status != Status.ASSUMED, f"{name}: {v.path} carries a modelling assumption"


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_fp32_from_sms_lanes_clock(name):
    """SMs x FP32 lanes x boost clock x 2 (FMA) reproduces the published non-tensor FP32 within 2%."""
    c = sysobj(name).chip
    derived = c.vector.elems_per_s * FMA_FLOP
    assert c.vector.fp32_flop_per_s == c.peak(DType.FP32)
    assert derived == pytest.approx(c.vector.fp32_flop_per_s, rel=0.02), (
        f"{name}: {tflops(derived):.1f} vs published {tflops(c.vector.fp32_flop_per_s):.1f} TFLOPS")
    lanes = c.vector.elems_per_s / c.vector.clock_hz
    assert lanes == pytest.approx(c.cores * (64 if c.generation == "Ampere" else 128))


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_sfu_sixteen_per_sm(name):
    """The scalar engine is 16 MUFU results per SM per clock (Ampere, Hopper, Blackwell); Blackwell
    Ultra doubles the exp2 rate only (GPU-BWU-SOFTMAX)."""
    c = sysobj(name).chip
    assert c.scalar.elems_per_s / c.scalar.clock_hz == pytest.approx(16 * c.cores)
    exp_factor = 2 if name in BLACKWELL_ULTRA else 1
    assert c.scalar.exp_elems_per_s == pytest.approx(exp_factor * c.scalar.elems_per_s)


def test_h100_sfu_matches_flashattention3():
    """FA3: H100 SXM5 has 989 TFLOPS FP16 matmul but only 3.9 TFLOPS of special functions."""
    s = sysobj("p5.48xlarge")
    c = s.chip
    fa3_clock = s.provenance["chip.scalar_engine.clock"].alternative("fa3").si
    assert c.cores * 16 * fa3_clock == pytest.approx(3.9e12, rel=0.01)
    # at the boost clock the SFU array is 7% faster than the FA3 statement, never slower
    ratio = c.scalar.elems_per_s / 3.9e12
    assert ratio > 1.0 and ratio < 1.10
    assert c.tensor.rate(DType.FP16) / 3.9e12 == pytest.approx(256, rel=0.02)


def test_gb200_sfu_matches_published_exp_rate():
    """GB200: 5 TeraExponentials/s SFU EX2 (S38) from 152 SMs x 16 x 2.062 GHz."""
    assert sysobj("gb200-nvl72").chip.scalar.elems_per_s == pytest.approx(5e12, rel=0.02)


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_tensor_rates_equal_dense_peaks(name):
    c = sysobj(name).chip
    assert set(c.tensor.flop_per_s) == set(c.peak_flop_per_s) - {DType.FP32}
    for d, r in c.tensor.flop_per_s.items():
        assert r == c.peak(d)
    for d, r in c.peak_sparse_flop_per_s.items():
        if name in BLACKWELL_ULTRA and d == DType.FP4:  # NVIDIA: 144 | 108 and 20 | 15, not 2x
            assert r == pytest.approx(4 / 3 * c.peak(d), rel=0.005), f"{name}: sparse fp4 is not 4/3 dense"
            continue
        assert r == pytest.approx(2 * c.peak(d), rel=0.005), f"{name}: sparse {d.value} is not 2x dense"
    assert not c.supports(DType.FP32), "GPUs have no FP32 tensor-core path"


def test_published_peaks_and_generation_ratios():
    a100, h100, h200, b200, gb200 = (sysobj(n).chip for n in
                                     ("p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p6-b200.48xlarge",
                                      "gb200-nvl72"))
    T = units.TFLOPS
    assert a100.peak(DType.BF16) == 312 * T and a100.peak(DType.TF32) == 156 * T
    assert h100.peak(DType.BF16) == 989 * T and h100.peak(DType.FP8) == 1979 * T
    assert b200.peak(DType.BF16) == 2250 * T and gb200.peak(DType.BF16) == 2500 * T
    assert gb200.peak(DType.FP8) == 5000 * T and gb200.peak(DType.FP4) == 10000 * T
    # no FP8 on Ampere, no FP4 before Blackwell
    assert not a100.supports(DType.FP8) and not h100.supports(DType.FP4)
    # H200 = H100 compute with more, faster HBM
    assert dict(h200.peak_flop_per_s) == dict(h100.peak_flop_per_s)
    assert h200.hbm_bandwidth_bytes_per_s > h100.hbm_bandwidth_bytes_per_s
    for c in (h100, b200, gb200):
        assert c.peak(DType.FP8) == pytest.approx(2 * c.peak(DType.BF16), rel=0.001)
        assert c.peak(DType.TF32) == pytest.approx(c.peak(DType.BF16) / 2, rel=0.03)
    for c in (b200, gb200):
        assert c.peak(DType.FP4) == 2 * c.peak(DType.FP8)  # NVIDIA: FP4 = 2x FP8 on Blackwell
        assert c.tensor.rate(DType.MXFP8) == c.tensor.rate(DType.FP8)
        assert c.tensor.rate(DType.MXFP4) == c.tensor.rate(DType.FP4)
    assert a100.peak(DType.BF16) / a100.peak(DType.TF32) == 2
    # GB200's B200 runs ~11% above the HGX B200 (S50)
    assert gb200.peak(DType.BF16) / b200.peak(DType.BF16) == pytest.approx(1.11, abs=0.01)


@pytest.mark.parametrize("name,dtype,ridge", RIDGE_POINTS)
def test_ridge_points_match_hardware_facts(name, dtype, ridge):
    c = sysobj(name).chip
    assert c.peak(dtype) / c.hbm_bandwidth_bytes_per_s == pytest.approx(ridge, rel=0.01)


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_nvlink_tiers_are_half_the_bidirectional_figure(name):
    s = sysobj(name)
    published = NVLINK_BIDIR_GBPS[name] * units.GB
    # the chip's link budget is held per direction, like the tiers
    assert s.chip.link_bandwidth_bytes_per_s == published / 2
    inner = [t for t in s.tiers if t.scope in (Scope.NODE, Scope.SCALEUP)]
    assert inner
    for t in inner:
        assert t.direction == "bidirectional" and t.topology == Topology.SWITCH and not t.per_node
        assert t.bandwidth_bytes_per_s == published / 2
    assert s.tier(Scope.NODE).dims == (s.node.chips,)
    if s.scaleup_nodes > 1:
        assert s.tier(Scope.SCALEUP).dims == (s.scaleup_nodes,)
        assert s.scaleup_chips == 72


@pytest.mark.parametrize("name", sorted(GPU_SYSTEMS))
def test_efa_scaleout_tier(name):
    s = sysobj(name)
    gbps = GPU_SYSTEMS[name][3]
    t = s.tier(Scope.SCALEOUT)
    assert t.per_node and t.direction == "per-direction" and t.dims == ()
    assert t.bandwidth_bytes_per_s == gbps * units.GB / units.BITS_PER_BYTE
    assert s.node.efa_bandwidth_bytes_per_s == t.bandwidth_bytes_per_s


def test_prices_are_dated_and_p5e_has_none():
    for name in GPU_SYSTEMS:
        n = sysobj(name).node
        if n.price_usd_per_hour is not None:
            assert n.price_as_of
    assert sysobj("p5.48xlarge").node.price_usd_per_hour == 98.32
    post_cut = sysobj("p5.48xlarge").provenance["node.price"].alternative("post-cut")
    assert post_cut.si < 98.32
    assert sysobj("p5e.48xlarge").node.price_usd_per_hour is None
    assert sysobj("gb200-nvl72").node.price_usd_per_hour is None


def test_recorded_conflicts():
    """hardware_facts conflicts 14, 17, 18, 19 are recorded where they apply."""
    gb = sysobj("gb200-nvl72").provenance
    efa = gb["scaleup.totals.efa_bandwidth"]
    assert efa.si == 18 * 3200 * units.GB / units.BITS_PER_BYTE
    assert efa.alternative("hyperpod-blog").si == pytest.approx(28.8e12 / units.BITS_PER_BYTE)
    fp4 = gb["scaleup.totals.fp4"]
    assert fp4.si == pytest.approx(720 * units.PFLOPS)
    assert fp4.alternative("aws-quote").si == pytest.approx(2 * fp4.si, rel=0.03)
    hbm = sysobj("p6-b200.48xlarge").provenance["chip.memory.hbm_capacity"]
    assert hbm.si == 179 * units.GiB  # what AWS exposes per GPU on p6-b200 (S19)
    assert hbm.alternative("physical").si == 192 * units.GB
    assert hbm.alternative("nvidia-usable").si == 180 * units.GB
    for name, tag in (("p4d.24xlarge", 14), ("p5.48xlarge", 14), ("gb200-nvl72", 17), ("gb200-nvl72", 18),
                      ("p6-b200.48xlarge", 19)):
        text = (catalog.catalog_root() / "hardware_specs" / f"{name}.toml").read_text()
        assert f"hardware_facts conflict {tag}" in text, (name, tag)


def test_dgx_power_is_an_estimate_for_the_aws_instance():
    for name, kw in (("p4d.24xlarge", 6.5), ("p5.48xlarge", 10.2), ("p6-b200.48xlarge", 14.3)):
        s = sysobj(name)
        assert s.node.power_w == kw * units.KW
        assert s.provenance["node.power"].status == Status.ESTIMATED
    gb = sysobj("gb200-nvl72")
    assert gb.scaleup_power_w == 120 * units.KW
    assert gb.provenance["scaleup.power"].status == Status.ESTIMATED


def test_chip_tdps():
    expected = {"p4d.24xlarge": 400, "p5.48xlarge": 700, "p5e.48xlarge": 700, "p6-b200.48xlarge": 1000,
                "gb200-nvl72": 1200, "p6-b300.48xlarge": 1100, "gb300-nvl72": 1400, "hgx-h800": 700}
    for name, w in expected.items():
        assert sysobj(name).chip.tdp_w == w


def test_blackwell_sm_counts_and_clocks_are_flagged_estimated():
    for name in ("p6-b200.48xlarge", "gb200-nvl72", "p6-b300.48xlarge", "gb300-nvl72"):
        unc = sysobj(name).uncertain_fields()
        for path in ("chip.cores", "chip.vector_engine.clock", "chip.scalar_engine.elements_per_cycle"):
            assert path in unc, f"{name}: {path} should be marked estimated"
    for name in ("p4d.24xlarge", "p5.48xlarge", "hgx-h800"):  # H800: DeepSeek count 132 SMs
        assert "chip.cores" not in sysobj(name).uncertain_fields()


# ------------------------------------------------------------------ Blackwell Ultra (B300, GB300) and H800

def _chips(*names):
    return [sysobj(n).chip for n in names]


def test_b300_published_values():
    """HGX B300 (GPU-HGX-B300 board totals / 8, GPU-BWU-DS per GPU) on p6-b300.48xlarge (GPU-AWS-P6)."""
    s = sysobj("p6-b300.48xlarge")
    b300, b200 = s.chip, sysobj("p6-b200.48xlarge").chip
    T, P = units.TFLOPS, units.PFLOPS
    assert b300.generation == "Blackwell Ultra"
    # FP4: '144 PFLOPS | 108 PFLOPS' (sparse | dense) per 8-GPU board; AWS: 1.5x p6-b200 at FP4 dense
    assert b300.peak(DType.FP4) == pytest.approx(108 * P / 8) == b300.tensor.rate(DType.FP4)
    assert b300.peak_sparse_flop_per_s[DType.FP4] == pytest.approx(144 * P / 8)
    assert b300.peak(DType.FP4) / b200.peak(DType.FP4) == pytest.approx(1.5)
    assert s.provenance["chip.peak.fp4"].alternative("datasheet-hgx").si == pytest.approx(14 * P)
    # sparse-only figures halved: FP8 9, BF16 4.5, TF32 2.2 PFLOPS per GPU -> the B200's dense rates
    for d, sparse_pf in ((DType.FP8, 9), (DType.BF16, 4.5), (DType.FP16, 4.5), (DType.TF32, 2.2)):
        assert b300.peak(d) == pytest.approx(sparse_pf * P / 2), d
        assert b300.peak(d) == b200.peak(d), d
        assert s.provenance[f"chip.peak.{d.value}"].status == Status.DERIVED
    assert b300.peak(DType.FP32) == 75 * T == b200.peak(DType.FP32)
    # INT8 nearly removed: 307 TOPS sparse per GPU (B200: 9,000)
    assert b300.peak(DType.INT8) == pytest.approx(307 * T / 2)
    assert b300.peak(DType.INT8) < 0.05 * b200.peak(DType.INT8)
    # memory: same 8 TB/s as B200, 1.5x the capacity AWS exposes (2,144 vs 1,432 per instance)
    assert b300.hbm_bandwidth_bytes_per_s == b200.hbm_bandwidth_bytes_per_s == 8e12
    assert b300.hbm_capacity_bytes == 268 * units.GiB == s.provenance["node.totals.hbm_capacity"].si / 8
    assert b300.hbm_capacity_bytes / b200.hbm_capacity_bytes == pytest.approx(1.5, rel=0.01)
    hbm = s.provenance["chip.memory.hbm_capacity"]
    assert hbm.alternative("nvidia-usable").si == 270 * units.GB and hbm.alternative("physical").si == 288 * units.GB
    assert s.provenance["chip.memory.hbm_bandwidth"].alternative("datasheet-hgx").si == pytest.approx(7.7e12)
    # AWS: 2x networking (6.4 Tbps = 8 x 800 Gbps, ConnectX-8 class), 4 TiB host memory, priced 1.25x
    p6 = sysobj("p6-b200.48xlarge")
    assert s.node.efa_bandwidth_bytes_per_s == 2 * p6.node.efa_bandwidth_bytes_per_s == 800e9
    assert s.node.host_memory_bytes == 4096 * units.GiB and s.node.vcpus == 192
    assert s.node.price_usd_per_hour == 142.416 and s.node.price_as_of
    assert s.provenance["node.price"].source == "GPU-PRICE-P6B300"
    assert s.node.price_usd_per_hour / p6.node.price_usd_per_hour == pytest.approx(1.25, abs=0.005)


def test_gb300_published_values():
    """GB300 NVL72 (GPU-GB300-NVL72 rack, GPU-BWU-DS per GPU) as the P6e-GB300 UltraServer."""
    s = sysobj("gb300-nvl72")
    gb300, gb200 = s.chip, sysobj("gb200-nvl72").chip
    P = units.PFLOPS
    assert s.scaleup_chips == 72 and s.node.chips == 4
    assert s.node.price_usd_per_hour is None  # Capacity Blocks only
    # FP4 dense 15 PFLOPS per GPU ('20 | 15'), rack '1,440 | 1,080'; AWS: 1.5x P6e-GB200
    assert gb300.peak(DType.FP4) == 15 * P and gb300.peak_sparse_flop_per_s[DType.FP4] == 20 * P
    assert 72 * gb300.peak(DType.FP4) == pytest.approx(s.provenance["scaleup.totals.fp4"].si) == 1080 * P
    assert gb300.peak(DType.FP4) / gb200.peak(DType.FP4) == pytest.approx(1.5)
    for d, sparse_pf in ((DType.FP8, 10), (DType.BF16, 5), (DType.TF32, 2.5)):
        assert gb300.peak(d) == pytest.approx(sparse_pf * P / 2) == gb200.peak(d), d
    assert gb300.peak(DType.INT8) == pytest.approx(165 * units.TFLOPS)
    assert gb300.hbm_bandwidth_bytes_per_s == gb200.hbm_bandwidth_bytes_per_s == 8e12
    assert 72 * gb300.hbm_bandwidth_bytes_per_s == pytest.approx(s.provenance["scaleup.totals.hbm_bandwidth"].si)
    assert s.provenance["chip.memory.hbm_capacity"].alternative("nvidia").si == 279 * units.GB
    assert gb300.hbm_capacity_bytes > sysobj("p6-b300.48xlarge").chip.hbm_capacity_bytes  # 279 vs 270 (NVIDIA)
    # the GB300 part runs 1/0.9 above the HGX part, as GB200 above HGX B200
    b300 = sysobj("p6-b300.48xlarge").chip
    for d in (DType.FP4, DType.FP8, DType.BF16):
        assert gb300.peak(d) / b300.peak(d) == pytest.approx(gb200.peak(DType.BF16) / 2.25e15, rel=0.001), d
    # scale-out: NVIDIA's one ConnectX-8 (800 Gb/s) per GPU; AWS's figure was not found: estimated
    assert s.tier(Scope.SCALEOUT).bandwidth_bytes_per_s == 4 * 800e9 / units.BITS_PER_BYTE
    assert "node.efa_bandwidth" in s.uncertain_fields()
    assert s.provenance["scaleup.power"].status == Status.ESTIMATED
    assert s.scaleup_power_w == 135 * units.KW


def test_blackwell_ultra_fp64_int8_cut_is_recorded():
    """No fp64 field in the schema: the cut is stated in the chip files, and int8 rates are tiny."""
    for chip_file, fp64 in (("b300", "1.2 TFLOPS"), ("gb300-b300", "1.3 TFLOPS")):
        text = (catalog.catalog_root() / "hardware_specs" / "chips" / f"{chip_file}.toml").read_text()
        assert "FP64" in text and fp64 in text
    for c in _chips("p6-b300.48xlarge", "gb300-nvl72"):
        assert c.supports(DType.FP4) and c.supports(DType.MXFP4) and c.supports(DType.MXFP8)
        assert c.peak(DType.INT8) < 0.1 * c.peak(DType.FP8)
        assert c.peak(DType.FP4) == pytest.approx(3 * c.peak(DType.FP8))  # B200: 2x


def test_h800_is_the_h100_with_nvlink_cut_to_400():
    """DeepSeek (GPU-H800-DSV3-HW): the H800 SXM is the H100's Hopper design with FP64 and NVLink
    reduced, NVLink from 900 to 400 GB/s; 132 SMs (GPU-H800-DSV3); 8 x 400G IB CX7 per node."""
    h800s, h100s = sysobj("hgx-h800"), sysobj("p5.48xlarge")
    h800, h100 = h800s.chip, h100s.chip
    assert dict(h800.peak_flop_per_s) == dict(h100.peak_flop_per_s)
    assert dict(h800.tensor.flop_per_s) == dict(h100.tensor.flop_per_s)
    assert h800.cores == 132 and h800.tdp_w == 700
    assert h800.hbm_bandwidth_bytes_per_s == h100.hbm_bandwidth_bytes_per_s == 3.35e12
    assert h800.hbm_capacity_bytes == h100.hbm_capacity_bytes
    assert not h800.supports(DType.FP4) and h800.supports(DType.FP8)
    assert h800.link_bandwidth_bytes_per_s == 200e9  # 400 GB/s bidirectional
    assert h800s.tier(Scope.NODE).bandwidth_bytes_per_s / h100s.tier(Scope.NODE).bandwidth_bytes_per_s \
        == pytest.approx(400 / 900)
    assert h800s.tier(Scope.NODE).in_switch_reduction
    assert h800s.node.efa_bandwidth_bytes_per_s == 8 * 400e9 / units.BITS_PER_BYTE
    for path in ("chip.peak.bf16", "chip.peak.fp8"):
        assert h800s.provenance[path].status == Status.DERIVED and "GPU-H800-DSV3-HW" in h800s.provenance[path].source
    assert h800s.provenance["chip.interconnect.bandwidth"].status == Status.PUBLISHED
    assert h800s.node.price_usd_per_hour is None


NEW_SYSTEMS = ("p6-b300.48xlarge", "gb300-nvl72", "hgx-h800")


def _decode_70b(name):
    from perfmodel.catalog import workload_files
    from perfmodel.core.scenario import Parallelism, Phase, Scenario
    from perfmodel.model.evaluate import evaluate

    arch = workload_files.load_workload("llama-3-70b")
    r = evaluate(sysobj(name), arch, Scenario(Phase.DECODE, batch=64, context=4096, parallel=Parallelism(tp=8)))
    return r


@pytest.mark.parametrize("name", NEW_SYSTEMS)
def test_new_systems_evaluate(name):
    """Llama-3-70B decode, batch 64, 4k context, TP8 runs on each new system with a finite step."""
    r = _decode_70b(name)
    step = r.summary["step_time_s"].iloc[0]
    assert r.summary["valid"].iloc[0] and 1e-3 < step < 0.1, (name, step)


def test_new_systems_against_their_predecessors():
    """Memory-bound decode: B300 = B200 and GB300 = GB200 (same 8 TB/s, same NVLink); the H800 is
    slower than the H100 only through its tensor-parallel all-reduces (NVLink 400 vs 900 GB/s)."""
    step = {n: _decode_70b(n).summary["step_time_s"].iloc[0]
            for n in ("p6-b200.48xlarge", "p6-b300.48xlarge", "gb200-nvl72", "gb300-nvl72", "p5.48xlarge",
                      "hgx-h800")}
    assert step["p6-b300.48xlarge"] == pytest.approx(step["p6-b200.48xlarge"], rel=0.01)
    assert step["gb300-nvl72"] == pytest.approx(step["gb200-nvl72"], rel=0.01)
    assert step["hgx-h800"] > step["p5.48xlarge"]
    ops = {n: _decode_70b(n).ops.set_index("op") for n in ("p5.48xlarge", "hgx-h800")}
    compute = {n: (o["time_s"] * o["count"]).sum() - (o["comm_s"] * o["count"]).sum() for n, o in ops.items()}
    assert compute["hgx-h800"] == pytest.approx(compute["p5.48xlarge"], rel=0.01)
