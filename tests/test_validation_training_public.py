"""The 'training' family reads public training rows of any source (reference/training_public_dev.csv)."""

from __future__ import annotations

import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel import validation as v

PUBLIC = "reference/training_public_dev.csv"


@pytest.fixture(scope="module")
def public() -> pd.DataFrame:
    return v.run_cases(catalog.catalog_root() / PUBLIC, families=["training"]).set_index("case_id")


def test_every_public_row_is_predicted_or_has_a_reason(public):
    src = pd.read_csv(catalog.catalog_root() / PUBLIC)
    assert len(src) >= 150 and src["source"].str.strip().ne("").all()
    assert set(public.index) <= set(src["case_id"])
    predicted = public[public["predicted"].notna()]
    assert len(predicted) >= 60
    listed = public[public["predicted"].isna()]
    assert listed["reason"].str.len().gt(10).all()
    assert "plan is not stated" in public.at["MLM-001", "reason"]


def test_the_source_flop_count_cancels_between_a_runs_rows(public):
    """A run's TFLOP/s row is its tokens/s (or iteration time) row in the source's own FLOPs: one error."""
    for a, b in (("NEMO-003-a", "NEMO-003-b"), ("BLOOM-001-b", "BLOOM-001-a")):
        ea, eb = public.at[a, "error_frac"], public.at[b, "error_frac"]
        if "time per iteration" in public.at[a, "metric"]:  # a time: the error of its inverse
            ea = 1 / (1 + ea) - 1
        assert ea == pytest.approx(eb, abs=1e-9)


def test_time_to_train_and_gpu_hours_follow_the_modelled_rate(tmp_path):
    """A run written as time to train and GPU-hours per trillion tokens: both follow its tokens/s row."""
    from perfmodel.validation.sources.training_public import trained_tokens

    assert trained_tokens("Est. time to train (10T tokens, 1K GPUs)") == 1e13
    assert trained_tokens("300B tokens") == 3e11 and trained_tokens("no tokens here") == 0.0
    src = pd.read_csv(catalog.catalog_root() / PUBLIC)
    base = src[src["case_id"].eq("NEMO-041-a")].iloc[0].to_dict()
    rows = [dict(base, case_id="X-001-a"),
            dict(base, case_id="X-001-b", metric="time to train 10T tokens", value=1.0, unit="days"),
            dict(base, case_id="X-001-c", metric="GPU-hours per trillion tokens", value=1.0, unit="h")]
    path = tmp_path / "rows.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = v.run_cases(path, families=["training"]).set_index("case_id")
    tok = out.at["X-001-a", "predicted"]
    assert out.at["X-001-b", "predicted"] == pytest.approx(1e13 / (tok * 1024) / 86400)
    assert out.at["X-001-c", "predicted"] == pytest.approx(1e12 / tok / 3600)


def test_a_run_on_1024_gpus_is_within_ten_percent(public):
    """NVIDIA NeMo Framework docs, 'Performance Benchmarks' pretraining table (NeMo 24.07, DGX-H100, FP8):
    Llama 3.1 405B on 1,024 H100 (TP8 PP8 CP2 VP8), 292 tokens/s per GPU (NEMO-041-a). Predicted from the
    mechanisms alone: FP8 GEMMs at their K and Hopper's sustained clock, casts, overlaps of Megatron-Core (its
    userbuffers' contention by the SMs they take), the slowest of 1,024 ranks."""
    src = pd.read_csv(catalog.catalog_root() / PUBLIC).set_index("case_id")
    assert int(src.at["NEMO-041-a", "num_chips"]) >= 1000 and "NeMo" in src.at["NEMO-041-a", "source"]
    assert abs(public.at["NEMO-041-a", "error_frac"]) <= 0.10


def test_stack_rules_follow_what_the_row_states():
    from perfmodel.validation.sources import training_public as tp
    from perfmodel.validation.sources.training_stacks import stack_overrides

    src = pd.read_csv(catalog.catalog_root() / PUBLIC).set_index("case_id", drop=False)

    def rules(case):
        m = src.loc[case]
        arch = tp.arch_of(m["model"])
        sc = tp.scenario_of(m, arch, int(m["num_chips"]))
        return sc, stack_overrides(m, sc, arch)

    sc, o = rules("NEMO-041-a")  # Megatron-Core: SP, distributed optimizer, userbuffers, interleaved overlap
    assert sc.parallel.sequence_parallel and sc.parallel.zero == 1
    assert o["tp_comm_chunked_overlap"] == 1 and o["pp_comm_overlap_frac"] == 1.0
    assert o["param_gather_overlap_frac"] == 1.0
    sc, o = rules("TITAN-012")  # torchtitan with AsyncTP stated: TP pipelined, nothing else
    assert o == {"tp_comm_chunked_overlap": 1} and not sc.parallel.sequence_parallel
    assert rules("BLOOM-001-a")[1] == {}  # Megatron-DeepSpeed: every collective blocks
    assert rules("TITAN-027")[1] == {"low_precision_training_amax_reads": 1}  # torchao tensorwise: amax first
    # torchtitan without torch.compile: each element-wise primitive its own kernel (about 3x a fused layer's bytes)
    sc, o = rules("TITAN-019-a")
    assert o["elementwise_traffic_factor"] == pytest.approx(3.13, abs=0.01)
    assert sc.recompute.value == "alternate-layers" and rules("TITAN-020-a")[0].recompute.value == "selective-op"
    assert rules("TITAN-022-a")[0].recompute.value == "none"  # 'activation checkpointing: none'
    # NeMo's MoE benchmarks force their routers to balance the experts (the page's note): no busiest expert; a run
    # that does not say so keeps the calibration's imbalance
    assert rules("NEMO-028-a")[1]["moe_load_imbalance"] == 1.0
    assert "moe_load_imbalance" not in rules("BLOOM-001-a")[1]


def test_eager_traffic_is_counted_from_the_kernels():
    from perfmodel.catalog import workload_files
    from perfmodel.validation.sources.training_stacks import EAGER_BYTES, FUSED_BYTES, eager_traffic_factor

    a = workload_files.load_workload("llama-3-8b")
    assert all(EAGER_BYTES[k] >= FUSED_BYTES[k] for k in EAGER_BYTES)
    norm, rope, act, res = 2 * 4096, (32 + 8) * 128, 14336, 2 * 4096
    eager = 36 * norm + 20 * rope + 10 * act + 6 * res
    assert eager_traffic_factor(a) == pytest.approx(eager / (4 * norm + 4 * rope + 6 * act + 6 * res))


def test_each_publishers_rules_are_stated_once(public):
    """Megatron-LM 2021, llm-foundry and the FlashAttention-2 paper are sources of the one family: the rows of
    the development file keep their publishers' FLOP counts (Eq. 3, llm-foundry's MFU, the paper's count)."""
    from perfmodel.validation.sources.training_stacks import SOURCES, source_of

    dev = v.run_cases(families=["training"]).set_index("case_id")
    src = v.measurements().set_index("case_id", drop=False)
    names = {s.name for s in SOURCES}
    assert {"megatron-lm-2021", "llm-foundry", "flash-attention-2", "megatron-deepspeed"} <= names
    assert source_of(src.loc["MEG-001"]).name == "megatron-lm-2021"
    assert source_of(src.loc["MOSAIC-001"]).name == "llm-foundry"
    assert source_of(src.loc["FA-005"]).name == "flash-attention-2"
    train = dev[dev["phase"].eq("train")]
    assert train["predicted"].notna().all() and set(train["family"]) == {"training"}


def test_megatron_2021_rows_run_the_plans_of_their_scripts():
    """The MEG rows run the plans of Megatron-LM's examples/sc21/run_table_1.sh (micro-batch, virtual stages,
    DDP): the 1.7B model one micro-batch of 16 under PyTorch DDP (its gradient all-reduce overlapped with the
    backward), the 530B model interleaved over 3 virtual stages under Megatron's local DDP; pipeline sends use
    the paper's scatter/gather."""
    from perfmodel.validation.sources import training_public as tp
    from perfmodel.validation.sources import training_rows as tr
    from perfmodel.validation.sources.training_stacks import source_of, stack_overrides

    src = v.measurements().set_index("case_id", drop=False)

    def plan(cid):
        m = src.loc[cid]
        arch = tp.arch_of(m["model"], int(float(m["input_len"])), source_of(m))
        sc = tp.scenario_of(m, arch, tr.gpus_of(m))
        return sc, stack_overrides(m, sc, arch)

    small, small_cal = plan("MEG-001")
    assert (small.batch, small.parallel.microbatches, small.parallel.pp_virtual) == (16, 1, 1)
    assert small_cal["comm_overlap_frac"] == 1.0 and small_cal["pp_scatter_gather"] == 1
    big, big_cal = plan("MEG-009")
    assert (big.batch, big.parallel.pp, big.parallel.pp_virtual, big.parallel.microbatches) == (1, 35, 3, 280)
    assert big_cal["comm_overlap_frac"] == 0.0


def test_experts_over_data_parallel_ranks_become_the_replicas_expert_group():
    """Megatron-Core's expert data parallelism (EP carved out of DP, NEMO-021: TP1 PP4 EP16 on 256 GPUs): the
    16 DP ranks an expert group spans share their experts as the model's tp x da replica, each with its own
    micro-batch; the step's tokens are unchanged."""
    from perfmodel.validation.sources import training_public as tp

    src = pd.read_csv(catalog.catalog_root() / PUBLIC).set_index("case_id", drop=False)
    m = src.loc["NEMO-021-a"]
    sc = tp.scenario_of(m, tp.arch_of(m["model"]), 256)
    p = sc.parallel
    assert (p.tp, p.da, p.ep, p.pp, p.dp) == (1, 16, 16, 4, 4) and sc.batch == 2 * 16
    assert sc.batch * p.microbatches * p.dp == 8192  # GBS
    bad = m.copy()
    bad["parallelism"] = "TP1 PP4 CP1 EP48"
    assert "not a whole number" in tp.scenario_of(bad, tp.arch_of(m["model"]), 256)
    # all of the expert-data-parallel ranks (dp = 1 after the remap: TP1 PP4 EP64 on 256 GPUs, NEMO-026) hold the
    # dense weights, so the distributed optimizer still shards their state: ZeRO-1, not the single-replica 0
    m = src.loc["NEMO-026-a"]
    p = tp.scenario_of(m, tp.arch_of(m["model"]), 256).parallel
    assert (p.dp, p.da, p.zero) == (1, 64, 1)


def test_published_runs_that_ran_fit_in_memory(public):
    """A run that was measured fitted its chips: the footprint of its plan, with the activations its recipe states
    it offloaded to host memory (NEMO-015 / -024: Megatron-Bridge's cpu_offloading_num_layers), FP8 recipes'
    quantized activations and weights, and the distributed optimizer over every rank holding a copy (dp x da x
    cp), torchtitan's op-level selective checkpointing keeping every other matmul's output (TITAN-025), fits.
    Two runs are listed not fitting: gpt-oss on H100 (NEMO-042, 1.6x: the table's micro-batch of 4 at PP4, whose
    first stage holds 4 micro-batches under 1F1B; the publisher's later recipe runs micro-batch 1 and recomputes
    its norms and expert activations) and Llama 2 70B SFT on 16 H100 at TP4 PP4 DP1 (NEMO-046, 1.17x: no data
    parallelism to shard the optimizer over; the term that made it fit is not found)."""
    from perfmodel.validation.sources.training_rows import offload_layers_of

    src = pd.read_csv(catalog.catalog_root() / PUBLIC).set_index("case_id")
    assert offload_layers_of(src.at["NEMO-024-a", "parallelism"]) == 40
    assert offload_layers_of("TP1 PP1 CP1 VP1 EP1 FSDP") == 0
    flagged = public["note"].fillna("").str.contains("does not fit")
    runs = {c.rsplit("-", 1)[0] if c.endswith(("-a", "-b")) else c for c in public.index[flagged]}
    assert runs <= {"NEMO-042", "NEMO-046"}

