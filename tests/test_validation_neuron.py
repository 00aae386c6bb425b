"""Neuron serving and collective validation: the Transformers NeuronX mapping rules behave as the
library does (head sharding, buckets, ranks), conserve work where they should, and every NRN case
is predicted or has a reason, with per-phase error figures computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel import validation as v
from perfmodel.catalog import neuron_stacks
from perfmodel.catalog.calibration import calibration_for
from perfmodel.comm import collectives as co
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import evaluate_sweep, run
from perfmodel.validation.sources.inference import arch_of
from perfmodel.validation.sources.neuron_shapes import (context_buckets, decode_bucket, find_bucket, prefill_bucket,
                                                        token_buckets)
from perfmodel.validation.sources.serving import bucket_counts

NRN_FAMILIES = ["neuron-latency", "serving-throughput", "neuron-collectives"]


@pytest.fixture(scope="module")
def trn1():
    return catalog.load_system("trn1.32xlarge")


@pytest.fixture(scope="module")
def nrn() -> pd.DataFrame:
    df = v.run_cases(families=NRN_FAMILIES)
    return df[df["case_id"].str.startswith("NRN")]


# ---------------------------------------------------------------- head sharding (utils.get_qkv_padding)


@pytest.mark.parametrize("H, KV, n, want", [
    (40, 40, 32, (64, 64)),  # Llama-2-13b on TP32: MHA, Q and KV padded alike
    (40, 40, 24, (48, 48)),
    (32, 8, 32, (32, 32)),  # Llama-3-8B / Mistral on TP32: KV replicated to one per rank
    (32, 8, 24, (48, 24)),  # TP24: Q padded to 48, KV to 24 (partial replication)
    (64, 8, 24, (72, 24)),  # Llama-3-70B on TP24
    (32, 32, 32, (32, 32)),  # divisible MHA: unchanged
    (64, 8, 8, (64, 8)),  # KV == ranks: unchanged
    (64, 8, 4, (64, 8)),  # KV heads divide over the ranks: two whole KV heads per rank, no replication
    (32, 8, 2, (32, 8)),
    (32, 8, 0, (32, 8)),  # no sharding rule
])
def test_sharded_heads_follow_transformers_neuronx(H, KV, n, want):
    hp, kvp = bd.sharded_heads(H, KV, n)
    assert (float(hp), float(kvp)) == want


@pytest.mark.parametrize("H, KV", [(40, 40), (32, 8), (64, 8), (56, 8), (96, 12), (16, 2), (28, 4)])
@pytest.mark.parametrize("n", [2, 4, 8, 16, 24, 32, 64])
def test_sharded_heads_are_whole_per_rank_and_never_fewer(H, KV, n):
    hp, kvp = (float(x) for x in bd.sharded_heads(H, KV, n))
    assert hp >= H and kvp >= KV and hp % n == 0  # every rank holds the same whole query heads
    assert kvp >= min(n, hp) or kvp == hp  # KV heads reach every rank (or match the padded query heads)
    h2 = float(bd.sharded_heads(H, KV, 2 * n)[0])
    assert h2 >= hp  # more ranks never need fewer padded heads


def _decode(system, model, shards, context=8192, batch=8, ranks=1):
    arch = arch_of(model)
    kn = bd.Knobs(phase=Phase.DECODE, batch=batch, seq_len=1, context=context, tp=16, head_shards=shards,
                  ranks_per_chip=ranks)
    return arch, kn


def test_sharding_conserves_work_when_heads_divide(trn1):
    """Llama-2-7b (32 MHA heads) on 32 ranks: nothing to pad, same step time and bytes."""
    arch, plain = _decode(trn1, "Llama-2-7b", 0)
    _, sharded = _decode(trn1, "Llama-2-7b", 32)
    a, b = evaluate_sweep(trn1, arch, plain), evaluate_sweep(trn1, arch, sharded)
    assert b["step_time_s"].iloc[0] == pytest.approx(a["step_time_s"].iloc[0])
    assert b["hbm_bytes"].iloc[0] == pytest.approx(a["hbm_bytes"].iloc[0])


def test_padding_and_replication_add_work_monotonically(trn1):
    """Llama-2-13b (40 heads -> 64 on 32 ranks) and Mistral (8 KV heads -> 32): more bytes, more time;
    the KV cache read of the attention core grows with the replicated KV heads per chip."""
    for model, kv_ratio in (("Llama-2-13b", 64 / 40), ("Mistral-7B-Instruct-v0.2", 2.0)):
        arch, plain = _decode(trn1, model, 0)
        _, sharded = _decode(trn1, model, 32)
        a, b = evaluate_sweep(trn1, arch, plain), evaluate_sweep(trn1, arch, sharded)
        assert b["hbm_bytes"].iloc[0] > a["hbm_bytes"].iloc[0]
        assert b["step_time_s"].iloc[0] > a["step_time_s"].iloc[0]
        ops_a, qa, _, _ = run(trn1, arch, plain)
        _, qb, _, _ = run(trn1, arch, sharded)
        core = next(i for i, o in enumerate(ops_a) if o.name == "attn.core")
        # at 8k context the core's reads are the K/V cache: they scale with the KV heads per chip
        assert qb["read"][core].item() / qa["read"][core].item() == pytest.approx(kv_ratio, rel=0.05)


def test_unfused_softmax_runs_every_score_through_the_vector_engine(trn1):
    """Transformers NeuronX 0.10 context encoding (no flash attention): the mask + softmax HLO ops
    are p_sm VectorE passes over the whole T x T matrix of each head on the chip (64 padded heads
    of Llama-2-13b over 16 chips = 4), and the longer prompt's core is bound by them."""
    arch = arch_of("Llama-2-13b")
    p_sm = calibration_for(trn1)["materialised_softmax_vector_passes"]
    for T in (1024, 4096):
        kn = bd.Knobs(phase=Phase.PREFILL, batch=1, seq_len=T, context=0, tp=16, head_shards=32, ranks_per_chip=2,
                      flash_attention=False)
        ops, q, _, _ = run(trn1, arch, kn)
        core = next(i for i, o in enumerate(ops) if o.name == "attn.core")
        assert q["vector"][core].item() == pytest.approx(p_sm * 4 * T * T)
        assert q["exp"][core].item() == pytest.approx(4 * T * T)
    flash = bd.Knobs(phase=Phase.PREFILL, batch=1, seq_len=4096, context=0, tp=16, head_shards=32, ranks_per_chip=2)
    _, qf, _, _ = run(trn1, arch, flash)
    assert qf["vector"][core].item() < q["vector"][core].item() / p_sm  # flash: causal half, p_av = 1 pass


# ---------------------------------------------------------------- ranks per chip (NeuronCores as ranks)


def test_32_rank_group_runs_the_ring_under_the_sdk_2_18_runtime(trn1):
    cal = neuron_stacks.stack("transformers-neuronx-2.18").calibration(calibration_for(trn1))
    ag = co.collective_cost(trn1, cal, "all-gather", 1024.0, 16, launch="host", ranks_per_chip=2)
    assert ag.algorithm[()] in ("ring", "bidir-ring")  # that runtime's only intra-node choice above 16 ranks
    assert cal.params["intranode_direct_max_ranks"].origin == "stack transformers-neuronx-2.18"
    assert float(ag.ranks) == 32
    steps = ag.latency_s[()] / cal["link_latency_node"]
    assert steps == pytest.approx(31)  # g r - 1 ring steps
    # 16 ranks (8 chips x 2): the runtime's all-to-all pattern is available again
    small = co.collective_cost(trn1, cal, "all-reduce", 8192.0, 8, ranks_per_chip=2)
    assert small.time_s[()] < co.collective_cost(trn1, cal, "all-reduce", 8192.0, 16, ranks_per_chip=2).time_s[()]


def test_ranks_per_chip_never_makes_a_collective_faster(trn1):
    cal = calibration_for(trn1)
    sizes = np.array([1024.0, 65536.0, 4 * 2.0 ** 20])
    for g in (2, 4, 8, 16):
        one = co.collective_time(trn1, cal, "all-reduce", sizes, g)
        two = co.collective_time(trn1, cal, "all-reduce", sizes, g, ranks_per_chip=2)
        assert np.all(two >= one - 1e-12)
    # one chip with two cores still communicates; one rank does not
    assert co.collective_time(trn1, cal, "all-reduce", 8192.0, 1, ranks_per_chip=2) > 0
    assert co.collective_time(trn1, cal, "all-reduce", 8192.0, 1) == 0


def test_the_runtime_rule_is_the_stacks_not_the_chips(trn1):
    # today's runtime (the family default and the NxD Inference stack) offers every algorithm on every chip;
    # only the SDK 2.18 stack's runtime ran the ring above 16 ranks
    for system in (trn1, catalog.load_system("trn2-ultraserver")):
        for cal in (calibration_for(system), neuron_stacks.stack("nxd-inference").calibration(calibration_for(system))):
            assert cal["intranode_direct_max_ranks"] == 0 and cal["intranode_multistep_algorithms"] == 1
            cost = co.collective_cost(system, cal, "all-gather", 1024.0, 16, ranks_per_chip=2)
            assert cost.algorithm[()] not in ("ring", "bidir-ring")


def test_int8_weights_are_cast_by_dma_not_vector_engine(trn1):
    arch = arch_of("Llama-3-8B")
    common = {"phase": Phase.DECODE, "batch": 1, "seq_len": 1, "context": 4096, "tp": 16, "head_shards": 32,
              "ranks_per_chip": 2}
    i8 = evaluate_sweep(trn1, arch, bd.Knobs(weights=DType.INT8, **common))
    b16 = evaluate_sweep(trn1, arch, bd.Knobs(weights=DType.BF16, **common))
    assert i8["step_time_s"].iloc[0] < b16["step_time_s"].iloc[0]
    assert i8["vector_busy_s"].iloc[0] == pytest.approx(b16["vector_busy_s"].iloc[0], rel=1e-6)


# ---------------------------------------------------------------- buckets


def test_buckets_match_transformers_neuronx():
    assert token_buckets(8192) == [128, 256, 512, 1024, 2048, 4096, 8192]
    assert token_buckets(3072) == [128, 256, 512, 1024, 2048, 3072]
    assert token_buckets(256) == [128, 256]
    tnx = neuron_stacks.stack("transformers-neuronx-2.18")  # context buckets half the token buckets
    assert context_buckets(8192, tnx["context_bucket_ratio"])[-1] == 4096
    assert find_bucket([128, 256, 512], 257) == 512 and find_bucket([128, 256], 999) == 256
    row = {"input_len": "128", "output_len": "8064", "notes": "compiled max seq len 8192"}
    assert decode_bucket(row, tnx) == 8192 and prefill_bucket(row, tnx) == 128
    row = {"input_len": "128", "output_len": "3968", "notes": ""}
    assert decode_bucket(row, tnx) == 4096  # n_positions = input + output without a note
    row = {"input_len": "1024", "output_len": "1024", "notes": "compiled max seq len 2048"}
    assert decode_bucket(row, tnx) == 2048 and prefill_bucket(row, tnx) == 1024


@pytest.mark.parametrize("i, o, n", [(128, 8064, 8192), (4096, 4096, 8192), (128, 1024, 1152), (1024, 2048, 3072)])
def test_bucket_counts_cover_every_generated_token(i, o, n):
    counts = bucket_counts({"input_len": str(i), "output_len": str(o), "notes": f"compiled max seq len {n}"})
    assert sum(c for _, c in counts) == o
    assert [b for b, _ in counts] == sorted(b for b, _ in counts)


# ---------------------------------------------------------------- the development cases


def test_every_nrn_case_is_predicted_or_has_a_reason(nrn):
    src = v.measurements("NRN")
    assert set(nrn["case_id"].str.split("@").str[0]) == set(src["case_id"])
    pred = np.isfinite(nrn["predicted"])
    assert (nrn.loc[~pred, "reason"].str.len() > 0).all()
    assert pred.all()  # all NRN rows are expressible
    assert (nrn["predicted"] > 0).all()
    assert set(nrn["system"]) == {"trn1.32xlarge", "inf2.48xlarge"}


def test_per_phase_error_figures_are_computed(nrn):
    s = v.phase_verdicts(nrn).set_index("phase")
    for phase in ("prefill", "decode", "e2e", "collective"):
        row = s.loc[phase]
        assert row["predicted"] > 0
        assert 0 <= row["median_abs_error_frac"] <= row["p90_abs_error_frac"] <= row["worst_abs_error_frac"]
        assert np.isfinite(row["mean_error_frac"])
    # the notes say which stack rule each row used
    lat = nrn[nrn["phase"].isin(["prefill", "decode"])]
    assert lat["note"].str.contains("NeuronCores").all() and lat["note"].str.contains("bucket").all()


def test_inconsistent_throughput_rows_are_flagged(nrn):
    e2e = nrn[nrn["phase"].eq("e2e")].set_index("case_id")
    flagged = e2e["note"].str.contains("inconsistent with the row's own TTFT/TPOT")
    assert "NRN-TRN1-027c" in e2e.index[flagged] and "NRN-TRN1-019c" not in e2e.index[flagged]


def test_the_public_neuron_file_is_read_row_by_row_with_its_sources(capsys):
    """reference/neuron_public_dev.csv (issue 51's development data): every row listed with the reason the model
    does not read it yet, or predicted; every row names its repository path and commit; Trn2 and Inf2 both."""
    import pandas as pd

    from perfmodel import cli
    from perfmodel.validation import harness

    path = harness.CSV.parent / "neuron_public_dev.csv"
    df = harness.run_cases(path)
    assert len(df) >= 250 and (df["predicted"].notna() | df["reason"].str.len().gt(0)).all()
    raw = pd.read_csv(path, dtype=str)
    assert raw["case_id"].is_unique and raw["source"].str.contains(r"@[0-9a-f]{8}").all()
    assert raw["hardware"].str.contains("trn2").sum() >= 100 and raw["hardware"].str.contains("inf2").sum() >= 100
    assert cli.main(["validate", "--cases", str(path), "--show", "not-expressed", "--format", "csv"]) == 0
