"""How an MoE layer runs its experts on the device (model/moe_kernels.py): NxD's rules on Neuron, by hand from
neuronx-distributed's ExpertMLPsV2.forward; grouped GEMMs (block 0) leave every number as it was."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog import neuron_stacks, workload_files
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate, ops

SYSTEM, MODEL = "trn2.48xlarge", "qwen3-30b-a3b"  # 128 experts, top-8


def _rho(phase: Phase, batch: int, seq_len: int, block: int = 512) -> tuple[float, float, float]:
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(MODEL)
    kn = bd.on_system(s, bd.Knobs(phase=phase, batch=batch, seq_len=seq_len, context=1024, tp=4,
                                  moe_kernel_block=block))
    v = bd.bind(s, a, s.calibration, kn)
    return float(v[ops.rho_r]), float(v[ops.rho_w]), float(v[ops.n_b])


def _touched(tokens: float, E: int = 128, k: int = 8) -> float:
    return E * (1 - (1 - k / E) ** tokens)


def test_context_encoding_runs_worst_case_blocks_of_512_rows():
    """4,096 tokens x top-8 = 32,768 rows: ceil((32,768 - 127) / 512) + 127 = 191 blocks of 512 rows, each its
    expert's weights and one instance of each projection."""
    rho_r, rho_w, n_b = _rho(Phase.PREFILL, 1, 4096)
    blocks = math.ceil((4096 * 8 - 127) / 512) + 127
    assert n_b == blocks == 191
    assert rho_r == pytest.approx(blocks * 512 / (4096 * 8)) and rho_w == pytest.approx(blocks / _touched(4096))


def test_small_prompts_and_full_decode_steps_run_every_expert_and_few_tokens_only_their_own():
    """Context of 32 tokens (256 rows < 512, 256 / 128 >= 1): every expert on every token, one launch; a decode step
    of 16 lines (16 x 8 / 128 = 1, the selective-loading threshold): every expert; of 8 lines, or a speculation's 2
    tokens: only the chosen ones, as grouped GEMMs."""
    rho_r, rho_w, n_b = _rho(Phase.PREFILL, 1, 32)
    assert (rho_r, n_b) == (pytest.approx(32 * 128 / (32 * 8)), 1.0) and rho_w == pytest.approx(128 / _touched(32))
    rho_r, rho_w, n_b = _rho(Phase.DECODE, 16, 1)
    assert rho_r == pytest.approx(16.0) and rho_w == pytest.approx(128 / _touched(16)) and n_b == 1.0
    assert _rho(Phase.DECODE, 8, 1) == (1.0, 1.0, 1.0) and _rho(Phase.PREFILL, 1, 2) == (1.0, 1.0, 1.0)


def test_grouped_gemms_leave_the_graph_as_it_was_and_padding_costs_time_not_useful_flops():
    """Block 0 binds exactly 1.0 (the graph's numbers bit for bit); the padded blocks issue more tensor work and
    fixed costs, the useful (model) FLOPs stay the routed tokens'."""
    assert _rho(Phase.PREFILL, 1, 4096, block=0) == (1.0, 1.0, 1.0)
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(MODEL)
    base = bd.Knobs(phase=Phase.PREFILL, batch=1, seq_len=4096, tp=4)
    plain = evaluate.evaluate_sweep(s, a, base, s.calibration).iloc[0]
    zero = evaluate.evaluate_sweep(s, a, bd.Knobs(**{**base.__dict__, "moe_kernel_block": 0}), s.calibration).iloc[0]
    nxd = evaluate.evaluate_sweep(s, a, bd.Knobs(**{**base.__dict__, "moe_kernel_block": 512}), s.calibration).iloc[0]
    assert zero["step_time_s"] == plain["step_time_s"]
    assert nxd["step_time_s"] > 1.5 * plain["step_time_s"]
    assert nxd["achieved_flop_per_s"] * nxd["step_time_s"] == pytest.approx(
        plain["achieved_flop_per_s"] * plain["step_time_s"], rel=1e-9)


def test_the_nxd_stacks_state_the_block_and_a_sweep_agrees_with_one_configuration():
    assert neuron_stacks.stack("nxd-inference")["moe_kernel_block"] == 512
    assert neuron_stacks.stack("optimum-neuron")["moe_kernel_block"] == 512
    s, a = catalog.load_system(SYSTEM), workload_files.load_workload(MODEL)
    kn = bd.Knobs(phase=Phase.PREFILL, batch=1, seq_len=np.array([32.0, 4096.0]), tp=4, moe_kernel_block=512)
    swept = evaluate.evaluate_sweep(s, a, kn, s.calibration)["step_time_s"].to_numpy()
    one = [evaluate.evaluate_sweep(s, a, bd.Knobs(phase=Phase.PREFILL, batch=1, seq_len=n, tp=4,
                                                  moe_kernel_block=512), s.calibration)["step_time_s"].iloc[0]
           for n in (32, 4096)]
    assert swept == pytest.approx(one, rel=1e-12)
