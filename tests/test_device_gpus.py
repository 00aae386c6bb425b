"""perfmodel's own H100 and H200 measurements (reference/device_gpu_kernels.csv): the Hopper parameters they fix
are recomputed from the rows, and the model is checked against the rows it was not read from."""

import pytest

from perfmodel import catalog
from perfmodel.catalog.calibration import calibration_for
from perfmodel.validation import device_runs as dr
from perfmodel.validation.sources import kernels as vk


@pytest.fixture(scope="module")
def rows():
    return dr.load()


@pytest.fixture(scope="module")
def h100():
    return calibration_for(catalog.load_system("dgx-h100"))


def test_sustained_ratio_is_the_mean_of_the_burst_pairs(rows, h100):
    r = dr.sustained_ratios(rows)
    assert len(r) == 8 and (r < 0.95).all()  # every GEMM slows once the board reaches its power limit
    assert h100["sustained_tensor_ratio"] == pytest.approx(r.mean(), abs=5e-4)
    r200 = dr.sustained_ratios(rows, dr.H200)  # measured on its own: its HBM3e takes more of the same 700 W
    h200 = calibration_for(catalog.load_system("p5e.48xlarge"))["sustained_tensor_ratio"]
    assert len(r200) == 5 and h200 == pytest.approx(r200.mean(), abs=5e-4) and h200 < h100["sustained_tensor_ratio"]
    p = dr.burst_pairs(rows).set_index("name")["ratio"]
    # attention draws less power per FLOP: it slows at most as much as the GEMMs do (documented, not averaged in)
    attention = p[p.index.str.startswith("attention")]
    assert len(attention) == 8 and (attention >= min(r.min(), r200.min()) - 0.01).all()
    # the H800 (H100's SM, HBM3 and 700 W) is not measured: it takes the H100's
    assert calibration_for(catalog.load_system("hgx-h800"))["sustained_tensor_ratio"] == h100["sustained_tensor_ratio"]
    for system in ("dgx-a100-80gb", "trn2.48xlarge"):  # not measured: no discount
        assert calibration_for(catalog.load_system(system))["sustained_tensor_ratio"] == 1.0
    # Blackwell: the B200's published MSMF / MAMF pairs (mamf-finder, 0.815-0.840), the other parts assume it
    b200 = calibration_for(catalog.load_system("p6-b200.48xlarge"))
    assert b200.params["sustained_tensor_ratio"].status == "measured" and 0.81 <= b200["sustained_tensor_ratio"] <= 0.84
    for system in ("gb200-nvl72", "gb300-nvl72", "p6-b300.48xlarge"):
        cal = calibration_for(catalog.load_system(system))
        assert cal["sustained_tensor_ratio"] == b200["sustained_tensor_ratio"]
        assert cal.params["sustained_tensor_ratio"].status == "assumed"


def test_power_limit_seen_while_sustained():
    """The mechanism, not only the ratio: at 700 W the SM clock falls well below its 1980 MHz boost."""
    import pandas as pd

    smi = pd.read_csv("reference/device_gpu_smi.csv")
    capped = smi[smi["power_w"] >= 690]
    assert len(capped) > 20 and capped["sm_clock_mhz"].median() <= 1500
    assert smi[smi["power_w"] < 200]["sm_clock_mhz"].median() >= 1900


def test_tile_fixed_cost_fits_both_types(rows, h100):
    """One fixed time per output tile: the BF16 fit and the FP8 fit (in BF16 K steps) agree with the
    shipped gemm_tile_fixed_k within 20%."""
    k0 = h100["gemm_tile_fixed_k"]
    for device in (dr.H100, dr.H200):
        _, k_bf16 = dr.k_fit(rows, "bf16", device)
        _, k_fp8 = dr.k_fit(rows, "fp8_e4m3", device)
        assert k_bf16 == pytest.approx(k0, rel=0.2) and k_fp8 / 2 == pytest.approx(k0, rel=0.25), device


def test_layer_and_sweep_gemms_within_a_few_percent(rows):
    g = dr.gemm_frame(rows)
    assert len(g) > 250
    assert g["error_frac"].abs().median() < 0.04 and abs(g["error_frac"].median()) < 0.03
    assert g["error_frac"].abs().quantile(0.9) < 0.12


def test_kernel_rows_priced_at_burst(rows):
    """Micro-benchmark rows are bursts: the same shape is predicted faster in a burst than sustained, by the
    ratio while compute-bound (to 0.1%: the per-operator launch overhead does not slow with the clock)."""
    system = catalog.load_system("dgx-h100")
    burst = vk.gemm_cost(system, 8192, 8192, 8192, vk.DType.BF16)["achieved_flop_per_s"]
    b = rows[rows["section"].eq("burst") & rows["name"].eq("matmul_nn") & rows["M"].eq(8192)
             & rows["device"].eq(dr.H100)]
    measured = b.groupby("variant")["tflops"].mean() * 1e12  # runs 2 and 3
    assert burst == pytest.approx(measured["burst_10"], rel=0.05)
    cal = calibration_for(system)
    sustained = float(dr.predicted_tflops(system, cal, 8192, 8192, 8192, "bf16")) * 1e12
    assert sustained == pytest.approx(burst * cal["sustained_tensor_ratio"], rel=1e-3)
    assert sustained == pytest.approx(measured["sustained_3s"], rel=0.05)


# a step predicted from first principles is held to the bar issue 20 sets a published run (within 10%), not to
# the last measurement's error
STEP_BUDGET = 0.10


def test_training_steps(rows):
    """A compiled step runs the fused kernels the graph prices: BF16 within the budget on both GPUs (five widths on
    the H200, one on the H100). Eager PyTorch runs each element-wise primitive as its own kernel, in FP32 under
    autocast, which the fused pricing leaves out: measured slower."""
    s = dr.step_frame(rows)
    compiled = s[s["variant"].eq("compiled")]
    assert set(compiled["device"]) == {dr.H100, dr.H200} and len(compiled) == 6
    assert compiled["error_frac"].abs().max() < STEP_BUDGET
    eager = s[~s["variant"].str.startswith("compiled")]["error_frac"]
    assert (eager < 0).all() and (eager > -0.2).all()


def test_fp8_training_steps(rows):
    """The same compiled steps with the blocks' GEMMs in FP8 (per-tensor current scaling, h100_fp8_steps.py):
    each step within the budget, FP8's speed-up over BF16 predicted within it too, and in the measured direction
    of width: smaller at d = 2048 (measured 1.10) than from d = 4096 (1.25-1.26), where the casts, linear in the
    width, weigh less against GEMMs quadratic in it. The model's speed-ups run high (by up to 9%, at d = 2048):
    the device script's casts read FP32 master weights (the model prices BF16 ones, the NeMo setting) and its
    transposed copies are separate kernels."""
    s = dr.step_frame(rows)
    fp8 = s[s["variant"].eq("compiled_fp8")]
    assert len(fp8) == 5 and fp8["error_frac"].abs().max() < STEP_BUDGET
    up = dr.fp8_speedups(s).set_index("name")
    assert len(up) == 5 and (up["predicted"] / up["measured"] - 1).abs().max() < STEP_BUDGET
    # the model's speed-ups are above 1 and grow with width as the measured ones do (their order, not a value)
    narrow, wide = (up.loc[n] for n in ("gpt_d2048_L8_mbs8_s2048", "gpt_d4096_L4_mbs6_s2048"))
    assert narrow["predicted"] > 1
    assert (wide["predicted"] - narrow["predicted"]) * (wide["measured"] - narrow["measured"]) > 0
