"""Property tests over random VALID scenarios on every system of the catalogue (issue 15, deliverable 6).

Every test is parametrised over all systems `catalog.list_systems()` lists, and hypothesis draws a
workload, a phase and a plan that is valid by construction (the rules of model/plan.check and
model/feasibility):

    tp   divides the attention heads, divides or is a multiple of the KV heads, <= scale-up chips
    da   tp x da <= scale-up chips, and the batch is a multiple of da
    ep   divides the experts and tp x da (MoE; 1 for dense models)
    pp   divides the layers;   cp divides the sequence (prefill and training; 1 for decode)
    context + new tokens <= max_position_embeddings;  data types the chip supports

Properties (examples per system x 20 systems; phases prefill / decode / training in equal shares):
    finite       5 x 20   no NaN / inf / negative in any numeric summary, per-operator or footprint
                          value (per-operator intensity is NaN exactly where the operator moves no
                          HBM bytes, as op_frame documents)
    rates        3 x 20   a higher HBM, tensor, vector / scalar / GpSimd / exp rate or link bandwidth
                          (apply_spec, x1.1 .. x16) never lengthens a step
    batch        3 x 20   a larger batch never shortens a decode or prefill step (a sweep of 2-5 batches)
    sums         3 x 20   step = compute + comm = sum over operators of count x time; footprint
                          components sum to the total
    throughput   3 x 20   tokens/s = tokens per step / step time; decode steps make `batch` tokens
    memory      15 x 20   doubling tp (when still valid) or pp never raises the footprint per chip
                          (every catalogue workload, training included, every recompute policy)
    serving      2 x 20   serve() finite and non-negative; throughput = concurrency / TPOT, 1 / TPOT
                          per user, e2e = TTFT + (O - 1) TPOT (1-4 concurrencies, every mode)
One test holds the minimal example the serving property found (disaggregated serving on a system
with no scale-up or node tier, which raised AttributeError until the hand-off took the scale-out tier).

The workloads are chosen to cover the model structures the graph builder distinguishes (dense
GQA, dense MHA with learned positions, MoE, MoE with sliding windows and sinks, MLA, encoder-only)
while compiling few graphs: each structure and phase costs one lambdify (1-5 s), shared by the tests.
Runs derandomised (database=None): the same examples on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from perfmodel import catalog
from perfmodel.catalog import workload_files
from perfmodel.catalog.knobs import apply_spec, spec_value
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Scope, System
from perfmodel.core.scenario import (
    Optimizer,
    Parallelism,
    Phase,
    Precision,
    Recompute,
    Scenario,
)
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model.evaluate import evaluate, evaluate_sweep
from perfmodel.model.memory import COMPONENTS, footprint_for
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, kv_bytes_per_sequence, serve

SYSTEM_NAMES = catalog.list_systems()
SYSTEMS: dict[str, System] = {n: catalog.load_system(n) for n in SYSTEM_NAMES}

# Evaluated workloads: one or more per graph structure (equal structures share one compiled graph;
# each structure and phase costs a 1-4 s compile, so the structures are few): dense GQA, dense MHA
# with learned positions (25 heads: odd tp), MoE with sliding windows and sinks, MLA + MoE, encoder.
INFERENCE_WORKLOADS = ("llama-3-8b", "llama-3-70b", "llama-3.1-405b", "gpt2-xl", "gpt3-6.7b", "gpt-oss-20b",
                       "gpt-oss-120b", "deepseek-v3", "bert-large")
DECODER_WORKLOADS = tuple(n for n in INFERENCE_WORKLOADS if n != "bert-large")
# a training graph costs ~4 s to compile per structure and recompute policy: one structure, no recompute
# (recompute is evaluated in test_graph / test_validation_training, and drawn here for the footprint)
TRAIN_WORKLOADS = ("llama-3-8b", "llama-3-70b")
EVALUATED = {Phase.PREFILL: INFERENCE_WORKLOADS, Phase.DECODE: DECODER_WORKLOADS, Phase.TRAIN: TRAIN_WORKLOADS}
EVALUATED_RECOMPUTE = (Recompute.NONE,)
# the memory footprint compiles no time graph: every workload of the catalogue, every phase, every recompute
ALL_ARCHS = {n: workload_files.load_workload(n) for n in workload_files.list_workloads()}
EVERY_WORKLOAD = {ph: tuple(n for n, a in ALL_ARCHS.items() if not (ph == Phase.DECODE and a.encoder_only))
                  for ph in Phase}
ARCHS: dict[str, ModelArch] = ALL_ARCHS

SERVING_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "mxfp8", "mxfp6", "mxfp4", "fp4", "int8")
TRAIN_DTYPES = ("bf16", "fp16", "fp32")
ALL_PHASES = (Phase.PREFILL, Phase.DECODE, Phase.TRAIN)
REL = 1e-9

SETTINGS = {"deadline": None, "derandomize": True, "database": None, "print_blob": False,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]}

# rate and bandwidth knobs (perfmodel knobs); a system without one (no GpSimd, no scale-up tier) skips it
RATE_KNOBS = ("hbm_bandwidth", "tensor_rate", "link_bandwidth", "node_link_bandwidth", "scaleup_link_bandwidth",
              "scaleout_bandwidth", "vector_rate", "scalar_rate", "gpsimd_rate", "exp_rate")


# ------------------------------------------------------------------ valid plans by construction


def divisors(n: int, upto: int) -> list[int]:
    return [d for d in range(1, min(n, upto) + 1) if n % d == 0]


def tp_ok(arch: ModelArch, system: System, t: int) -> bool:
    H, K = arch.num_attention_heads, arch.num_key_value_heads
    linear_ok = not arch.num_linear_layers or arch.linear_num_key_heads % t == 0  # Gated DeltaNet key heads
    return H % t == 0 and (K % t == 0 or t % K == 0) and linear_ok and t <= system.scaleup_chips


def tp_options(arch: ModelArch, system: System) -> list[int]:
    return [t for t in divisors(arch.num_attention_heads, system.scaleup_chips) if tp_ok(arch, system, t)]


def ep_options(arch: ModelArch, tp: int, da: int) -> list[int]:
    if not arch.is_moe:
        return [1]
    return [e for e in divisors(arch.num_experts, tp * da) if (tp * da) % e == 0]


@dataclass(frozen=True)
class Case:
    system: System
    arch: ModelArch
    scenario: Scenario

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        s, p, q = self.scenario, self.scenario.parallel, self.scenario.precision
        return (f"Case({self.system.name}, {self.arch.name}, {s.phase.value}, batch={s.batch}, seq_len={s.seq_len}, "
                f"context={s.context}, tp={p.tp}, da={p.da}, ep={p.ep}, cp={p.cp}, pp={p.pp}, dp={p.dp}, "
                f"zero={p.zero}, microbatches={p.microbatches}, schedule={p.pp_schedule}, sp={p.sequence_parallel}, "
                f"dtype={q.compute.value}, kv={q.kv_cache.value}, recompute={s.recompute.value}, "
                f"optimizer={s.optimizer.value}, flash={s.flash_attention})")


def rotated(items, system_name: str, salt: int) -> list:
    """`items` rotated by the system's index (+ a per-test salt). Derandomised hypothesis draws the
    same choices for every parametrised system (one seed per test function) and tries the simplest
    example (the first item of each list) first; rotating the lists makes those choices land on
    different workloads, phases and knobs on each system, so the catalogue covers them all."""
    k = (SYSTEM_NAMES.index(system_name) * 7 + salt) % len(items)
    return list(items[k:]) + list(items[:k])


def lanes(phases, workloads) -> list[tuple[Phase, str]]:
    """(phase, workload) pairs, phases interleaved so each phase gets an equal share."""
    n = max(len(workloads[ph]) for ph in phases)
    return [(ph, workloads[ph][i % len(workloads[ph])]) for i in range(n) for ph in phases]


def draw_case(data, system_name: str, salt: int, phases=ALL_PHASES, workloads=EVALUATED,
              recompute=EVALUATED_RECOMPUTE) -> Case:
    """A random valid scenario on `system_name` (see the module doc for the rules)."""
    system = SYSTEMS[system_name]
    phase, name = data.draw(st.sampled_from(rotated(lanes(phases, workloads), system_name, salt)),
                            label="phase, workload")
    arch = ARCHS[name]
    S = system.scaleup_chips
    tp = data.draw(st.sampled_from(tp_options(arch, system)), label="tp")
    da = data.draw(st.sampled_from([d for d in (1, 2, 4) if tp * d <= S]), label="da")
    ep = data.draw(st.sampled_from(ep_options(arch, tp, da)), label="ep")
    pp = data.draw(st.sampled_from(divisors(arch.num_hidden_layers, 16)), label="pp")
    P = arch.max_position_embeddings
    if phase == Phase.DECODE:
        seq_len, cp = 1, 1
        context = data.draw(st.integers(1, min(P - 1, 65536)), label="context")
        batch = da * data.draw(st.integers(1, 128), label="batch/da")
    else:
        seq_len = data.draw(st.integers(1, min(P, 8192)), label="seq_len")
        cp = data.draw(st.sampled_from(divisors(seq_len, 4)), label="cp")
        context = 0
        if phase == Phase.PREFILL and seq_len < P:
            context = data.draw(st.one_of(st.just(0), st.integers(0, min(P - seq_len, 32768))), label="context")
        batch = da * data.draw(st.integers(1, 16), label="batch/da")
    if phase == Phase.TRAIN:
        dtype = data.draw(st.sampled_from([d for d in TRAIN_DTYPES if system.chip.supports(DType(d))]), label="dtype")
        par = Parallelism(tp=tp, pp=pp, da=da, ep=ep, cp=cp,
                          dp=data.draw(st.sampled_from([1, 2, 4, 8]), label="dp"),
                          zero=data.draw(st.sampled_from([0, 1, 2, 3]), label="zero"),
                          microbatches=data.draw(st.sampled_from([1, 2, 4, 8, 16]), label="microbatches"),
                          sequence_parallel=data.draw(st.booleans(), label="sequence_parallel"),
                          pp_schedule=data.draw(st.sampled_from(["1f1b", "gpipe"]), label="schedule"))
        extra = {"recompute": data.draw(st.sampled_from(recompute), label="recompute"),
                 "optimizer": data.draw(st.sampled_from(list(Optimizer)), label="optimizer")}
    else:
        dtype = data.draw(st.sampled_from([d for d in SERVING_DTYPES if system.chip.supports(DType(d))]),
                          label="dtype")
        par = Parallelism(tp=tp, pp=pp, da=da, ep=ep, cp=cp)
        extra = {}
    sc = Scenario(phase, batch=batch, seq_len=seq_len, context=context, parallel=par,
                  precision=Precision.uniform(dtype), flash_attention=data.draw(st.booleans(), label="flash"),
                  **extra)
    sc.validate()
    case = Case(system, arch, sc)
    note(repr(case))  # printed with a failing example
    return case


def _assert_valid_by_construction(c: Case) -> None:
    """The generator's own rules, restated: a failure here is a bug in this file, not the model."""
    a, p, s = c.arch, c.scenario.parallel, c.scenario
    assert tp_ok(a, c.system, p.tp) and p.tp * p.da <= c.system.scaleup_chips
    assert a.num_hidden_layers % p.pp == 0 and (p.tp * p.da) % p.ep == 0 and s.batch % p.da == 0
    assert not a.is_moe or a.num_experts % p.ep == 0
    assert s.context + s.new_tokens <= a.max_position_embeddings
    assert c.system.chip.supports(s.precision.compute)


def numeric(frame):
    return frame.select_dtypes("number").to_numpy(dtype=float)


# ------------------------------------------------------------------ no NaN / inf / negative


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=5, **SETTINGS)
@given(data=st.data())
def test_results_are_finite_and_non_negative(system_name, data):
    c = draw_case(data, system_name, salt=0)
    _assert_valid_by_construction(c)
    r = evaluate(c.system, c.arch, c.scenario)
    summ = numeric(r.summary)
    assert np.isfinite(summ).all() and (summ >= 0).all(), r.summary.T.to_string()
    ops = r.ops
    moved = (ops["hbm_read_bytes"] + ops["hbm_write_bytes"]).to_numpy(dtype=float)
    intensity = ops["intensity_flop_per_byte"].to_numpy(dtype=float)
    # op_frame's one documented NaN: the intensity of an operator that moves no HBM bytes
    assert (np.isnan(intensity) == (moved == 0)).all()
    rest = numeric(ops.drop(columns=["intensity_flop_per_byte"]))
    assert np.isfinite(rest).all() and (rest >= 0).all()
    assert np.isfinite(intensity[moved > 0]).all() and (intensity[moved > 0] >= 0).all()
    assert r["step_time_s"] > 0
    fp = footprint_for(c.system, c.arch, c.scenario)
    for name, v in fp.components.items():
        assert np.isfinite(v).all() and (v >= 0).all(), name
    assert (fp.total_bytes > 0).all()


# ------------------------------------------------------------------ monotone in rates and in batch


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=3, **SETTINGS)
@given(data=st.data())
def test_a_faster_spec_never_lengthens_a_step(system_name, data):
    c = draw_case(data, system_name, salt=1)
    knobs = [k for k in RATE_KNOBS if spec_value(c.system, k)]
    knob = data.draw(st.sampled_from(rotated(knobs, system_name, salt=1)), label="knob")
    factor = data.draw(st.sampled_from(["x1.1", "x1.5", "x2", "x4", "x16"]), label="factor")
    faster = apply_spec(c.system, [(knob, factor)])
    base = evaluate(c.system, c.arch, c.scenario)["step_time_s"]
    quick = evaluate(faster, c.arch, c.scenario)["step_time_s"]
    assert quick <= base * (1 + REL), (knob, factor, base, quick)


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=3, **SETTINGS)
@given(data=st.data())
def test_a_larger_batch_never_shortens_a_step(system_name, data):
    c = draw_case(data, system_name, salt=2, phases=(Phase.PREFILL, Phase.DECODE))
    sc, da = c.scenario, c.scenario.parallel.da
    more = data.draw(st.lists(st.integers(1, 64), min_size=1, max_size=4), label="batch increments/da")
    batch = np.cumsum([sc.batch] + [da * m for m in more])
    kn = bd.Knobs(**{**bd.Knobs.of(sc).__dict__, "batch": batch})
    step = evaluate_sweep(c.system, c.arch, kn)["step_time_s"].to_numpy()
    assert step[0] == pytest.approx(evaluate(c.system, c.arch, sc)["step_time_s"], rel=1e-9)
    assert (np.diff(step) >= -REL * step[:-1]).all(), dict(zip(batch.tolist(), step.tolist()))


# ------------------------------------------------------------------ components sum to totals


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=3, **SETTINGS)
@given(data=st.data())
def test_a_step_is_the_sum_of_its_parts(system_name, data):
    c = draw_case(data, system_name, salt=3)
    r = evaluate(c.system, c.arch, c.scenario)
    step = r["step_time_s"]
    assert step == pytest.approx(r["compute_time_s"] + r["comm_time_s"], rel=REL)
    assert math.fsum(r.ops["total_time_s"]) == pytest.approx(step, rel=REL)
    assert (r.ops["total_time_s"] == r.ops["count"] * r.ops["time_s"]).all()
    fp = footprint_for(c.system, c.arch, c.scenario)
    assert set(fp.components) == set(COMPONENTS)
    parts = np.sum([np.asarray(v, dtype=float) for v in fp.components.values()], axis=0)
    assert np.allclose(parts, fp.total_bytes, rtol=REL, atol=0)
    assert np.array_equal(fp.fits, fp.total_bytes <= fp.capacity_bytes)


# ------------------------------------------------------------------ throughput = tokens / step


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=3, **SETTINGS)
@given(data=st.data())
def test_throughput_is_tokens_over_step_time(system_name, data):
    c = draw_case(data, system_name, salt=4)
    sc, p = c.scenario, c.scenario.parallel
    r = evaluate(c.system, c.arch, sc)
    step = r["step_time_s"]
    expected_tokens = {Phase.DECODE: sc.batch, Phase.PREFILL: sc.batch * sc.seq_len,
                       Phase.TRAIN: sc.batch * sc.seq_len * p.microbatches}[sc.phase]
    assert r["tokens_per_step"] == expected_tokens
    assert r["tokens_per_s_per_replica"] == pytest.approx(r["tokens_per_step"] / step, rel=REL)
    assert r["replica_chips"] == p.replica_chips
    assert r["tokens_per_s_per_chip"] == pytest.approx(r["tokens_per_s_per_replica"] / p.replica_chips, rel=REL)
    if sc.phase == Phase.DECODE:
        assert r["time_per_output_token_s"] == step
        assert r["tokens_per_s_per_user"] == pytest.approx(1 / step, rel=REL)


# ------------------------------------------------------------------ more chips, no more memory per chip


def _double(c: Case, what: str) -> Case:
    p = c.scenario.parallel
    doubled = Parallelism(**{**p.__dict__, what: 2 * getattr(p, what)})
    return Case(c.system, c.arch, c.scenario.replace(parallel=doubled))


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_more_chips_never_need_more_memory_per_chip(system_name, data):
    c = draw_case(data, system_name, salt=5, workloads=EVERY_WORKLOAD, recompute=tuple(Recompute))
    p = c.scenario.parallel
    options = (["tp"] if tp_ok(c.arch, c.system, 2 * p.tp) and 2 * p.tp * p.da <= c.system.scaleup_chips else []) \
        + (["pp"] if c.arch.num_hidden_layers % (2 * p.pp) == 0 else [])
    assume(options)
    what = data.draw(st.sampled_from(options), label="doubled")
    bigger = _double(c, what)
    _assert_valid_by_construction(bigger)
    before = footprint_for(c.system, c.arch, c.scenario)
    after = footprint_for(bigger.system, bigger.arch, bigger.scenario)
    total0, total1 = float(np.ravel(before.total_bytes)[0]), float(np.ravel(after.total_bytes)[0])
    assert total1 <= total0 * (1 + REL), {k: (float(np.ravel(before.components[k])[0]),
                                              float(np.ravel(after.components[k])[0])) for k in before.components}


# ------------------------------------------------------------------ serving


@pytest.mark.parametrize("system_name", SYSTEM_NAMES)
@settings(max_examples=2, **SETTINGS)
@given(data=st.data())
def test_serving_is_finite_and_throughput_is_concurrency_over_tpot(system_name, data):
    system = SYSTEMS[system_name]
    arch = ARCHS[data.draw(st.sampled_from(rotated(DECODER_WORKLOADS, system_name, salt=6)), label="workload")]
    tp = data.draw(st.sampled_from(tp_options(arch, system)), label="tp")
    da = data.draw(st.sampled_from([d for d in (1, 2) if tp * d <= system.scaleup_chips]), label="da")
    ep = data.draw(st.sampled_from(ep_options(arch, tp, da)), label="ep")
    pp = data.draw(st.sampled_from(divisors(arch.num_hidden_layers, 8)), label="pp")
    dtype = data.draw(st.sampled_from([d for d in SERVING_DTYPES if system.chip.supports(DType(d))]), label="dtype")
    conc = np.asarray(data.draw(st.lists(st.integers(1, 64), min_size=1, max_size=4), label="concurrency/unit"))
    conc = conc * math.lcm(pp, da)
    P = arch.max_position_embeddings
    i_tok = data.draw(st.integers(1, min(4096, P - 1)), label="input_tokens")
    o_tok = data.draw(st.integers(1, min(2048, P - i_tok)), label="output_tokens")
    mode = data.draw(st.sampled_from(list(Mode)), label="mode")
    g = Grid.of(tp=tp, da=da, ep=ep, pp=pp, concurrency=conc, compute=dtype)
    df = serve(system, arch, g, Mix(i_tok, o_tok), ServingOptions(mode=mode, chunk_tokens=512))
    num = df.select_dtypes("number").drop(columns=["max_concurrency_kv"])
    assert np.isfinite(num.to_numpy(dtype=float)).all() and (num.to_numpy(dtype=float) >= 0).all()
    cmax = df["max_concurrency_kv"].to_numpy(dtype=float)
    assert not np.isnan(cmax).any() and (cmax >= 0).all()
    tpot = df["time_per_output_token_s"].to_numpy()
    assert (tpot > 0).all()
    # throughput = C / cycle: disaggregated cycle = TPOT; aggregated and chunked, the cycle also holds the request's
    # own prefill (n chunks of one step each per attention-DP rank), which TPOT leaves to TTFT
    n = 1.0 if mode != Mode.CHUNKED else math.ceil(i_tok / min(512, i_tok))
    own = 0.0 if mode == Mode.DISAGGREGATED else n * df["prefill_step_s"].to_numpy() / da / o_tok
    assert np.allclose(df["output_tokens_per_s_per_replica"], df["concurrency"] / (tpot + own), rtol=REL, atol=0)
    assert np.allclose(df["tokens_per_s_per_user"], 1 / tpot, rtol=REL, atol=0)
    assert np.allclose(df["e2e_latency_s"], df["ttft_s"] + (o_tok - 1) * tpot, rtol=REL, atol=0)


def test_disaggregated_serving_on_a_single_chip_system():
    """Minimal example the serving property found on trn1.2xlarge (no scale-up or node tier): the
    KV hand-off between pools goes over the scale-out network, so TTFT carries its transfer."""
    system, arch = SYSTEMS["trn1.2xlarge"], ARCHS["llama-3-8b"]
    df = serve(system, arch, Grid.of(), Mix(1024, 64), ServingOptions(mode=Mode.DISAGGREGATED))
    assert np.isfinite(df.select_dtypes("number").drop(columns=["max_concurrency_kv"]).to_numpy(dtype=float)).all()
    hand_off = kv_bytes_per_sequence(arch, 1024, DType.BF16) / system.tier(Scope.SCALEOUT).bandwidth_bytes_per_s
    assert (df["ttft_s"] > hand_off).all()  # 128 MiB of KV over 1.56 GB/s: about 86 ms on its own
