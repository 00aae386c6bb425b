"""Communication claims C1-C4 (seeds 000, 001, 002, 004), computed with comm/collectives.py and training.

Conventions (stated, not tuned):
    - NeuronCores -> chips: a Trainium1 chip has 2 NeuronCores, so the seed's 32 NC data-parallel
      ranks per trn1.32xlarge are 16 chips with twice the per-NC micro-batch, and 'TP 8 NC' is TP 4
      chips ('[8xNC(TP)x4(DP)]' = TP 4 x DP 4 chips per node).
    - Training state as in the seed-004 slides: BF16 with stochastic rounding (8 B/param) on
      Trainium; mixed precision (16 B/param) for the GPT-3 175B overhead comparison on all three.
    - "Gradient-sized message" (C1) = BERT-Large's gradients in BF16, the phase-1 workload of the
      same slide deck.
    - C2 compares 64 chips of each UltraServer (the whole Trn2 UltraServer) over message sizes
      1 B to 4 GiB, and quotes the peak ratio and where it occurs.
Efficiency rows use a 5-percentage-point tolerance (the brief's), throughput rows 20%.

Does not: format output or tune anything to a claim.
"""

from __future__ import annotations

import functools

import numpy as np

from perfmodel import catalog, training
from perfmodel.catalog import neuron_stacks, workload_files
from perfmodel.core.calibration import of as calibration_of
from perfmodel.claims.registry import ClaimResult, claim
from perfmodel.comm import collectives as co
from perfmodel.comm.algorithms import Collective
from perfmodel.core import units
from perfmodel.core.scenario import Optimizer, Parallelism, Phase, Recompute, Scenario
from perfmodel.core.workload import parameter_count

TOL = 0.20
PP_TOL = 5.0  # percentage points, for scaling-efficiency rows


def _sizes() -> np.ndarray:
    return co.size_range(1.0, 4 * units.GiB)


# ---------------------------------------------------------------- C1


def c1_numbers(chips=(16, 32, 64, 128, 256, 512)) -> dict:
    """Flat ring vs 2D ring vs auto all-reduce of BERT-Large's BF16 gradients on trn1.32xlarge."""
    s = catalog.load_system("trn1.32xlarge")
    cal = calibration_of(s)
    arch = workload_files.load_workload("bert-large")
    nbytes = parameter_count(arch).total * 2.0
    g = np.asarray(chips, dtype=float)
    ring = co.collective_cost(s, cal, Collective.ALL_REDUCE, nbytes, g, algorithm="ring")
    twod = co.collective_cost(s, cal, Collective.ALL_REDUCE, nbytes, g, algorithm="2d-ring")
    auto = co.collective_cost(s, cal, Collective.ALL_REDUCE, nbytes, g)
    return {"chips": g, "nbytes": nbytes, "ring_s": ring.time_s, "ring_latency_s": ring.latency_s,
            "twod_s": twod.time_s, "auto_s": auto.time_s, "auto_algorithm": auto.algorithm}


@claim
def c1_two_d_ring() -> list[ClaimResult]:
    """C1: 2D ring all-reduce instead of a flat ring cuts all-reduce time by ~75% at 512 Trainium chips."""
    r = c1_numbers()
    cut = 100 * (1 - r["twod_s"] / r["ring_s"])
    auto_cut = 100 * (1 - r["auto_s"] / r["ring_s"])
    curve = ", ".join(f"{int(c)}: {t * 1e3:.1f} vs {u * 1e3:.1f} ms" for c, t, u in zip(r["chips"], r["ring_s"],
                                                                                     r["twod_s"]))
    note = (f"trn1.32xlarge, all-reduce of {r['nbytes'] / units.GB:.2f} GB (BERT-Large gradients, BF16) over 512 chips "
            f"= 32 instances: flat ring {r['ring_s'][-1] * 1e3:.0f} ms (one ring; each node's EFA hop leaves at one "
            f"chip, which reaches one 100 Gbps NIC; {r['ring_latency_s'][-1] * 1e3:.0f} ms of it is 1,022 hops of "
            f"latency) vs 2D ring {r['twod_s'][-1] * 1e3:.1f} ms (bidirectional rings along the torus X and Y axes, "
            f"then across the 32 nodes on 1/16 of the data with every chip's NIC share). The fastest algorithm "
            f"({r['auto_algorithm'][-1]}) cuts {auto_cut[-1]:.0f}%. Ring vs 2D ring by chips: {curve}; the cut at "
            f"16 chips (one node) is {cut[0]:.0f}%, from the torus' second axis and ring direction, not from EFA.")
    return [ClaimResult("C1", "2D ring all-reduce cuts all-reduce time by about 75% vs a flat ring at 512 Trainium "
                              "chips", "004", 75.0, float(cut[-1]), "%", TOL, note)]


# ---------------------------------------------------------------- C2


def c2_ratios(collective, chips: int = 64, cal_overrides: dict | None = None, trn3_chips: int | None = None) -> dict:
    """t(Trn2 UltraServer torus) / t(Trn3 UltraServer NeuronSwitch) over message sizes."""
    t2 = catalog.load_system("trn2-ultraserver")
    t3 = catalog.load_system("trn3-ultraserver")
    c2 = calibration_of(t2).with_overrides(cal_overrides or {})
    c3 = calibration_of(t3).with_overrides(cal_overrides or {})
    n = _sizes()
    a = co.collective_cost(t2, c2, collective, n, chips)
    b = co.collective_cost(t3, c3, collective, n, trn3_chips or chips)
    r = a.time_s / b.time_s
    i = int(np.argmax(r))
    return {"sizes": n, "ratio": r, "peak": float(r[i]), "at_bytes": float(n[i]), "trn2_s": float(a.time_s[i]),
            "trn3_s": float(b.time_s[i]), "trn2_alg": a.algorithm[i], "trn3_alg": b.algorithm[i],
            "small": float(r[0]), "large": float(r[-1])}


def _fixed_us() -> float:
    return calibration_of(catalog.load_system("trn2-ultraserver"))["collective_fixed_latency"] / units.US


def _hop_us() -> str:
    cal = calibration_of(catalog.load_system("trn2-ultraserver"))
    return f"{cal['link_latency_node'] / units.US:g}-{cal['link_latency_scaleup'] / units.US:g} us"


@claim
def c2_neuronswitch() -> list[ClaimResult]:
    """C2: NeuronSwitch (Trn3) vs NeuronLink torus (Trn2): all-gather latency up to 6x lower, all-reduce 2x."""
    rows = []
    for id_, coll, quoted in (("C2.all_gather", Collective.ALL_GATHER, 6.0), ("C2.all_reduce", Collective.ALL_REDUCE,
                                                                              2.0)):
        r = c2_ratios(coll)
        full = c2_ratios(coll, trn3_chips=144)
        zero = c2_ratios(coll, cal_overrides={"collective_fixed_latency": "0 us"})
        ok = abs(r["peak"] - quoted) / quoted <= TOL
        why = "" if ok else (
            f" MISS: in the latency-bound regime both systems pay the per-call cost collective_fixed_latency = "
            f"{_fixed_us():g} us (calibration/neuron.toml), so the step count that the switch saves (one switch hop "
            f"per phase on Trn3 vs several hops along each axis of the 4x4x4 torus, at {_hop_us()} per hop) is a "
            f"small part of the call; with no per-call cost the model's peak "
            f"ratio is {zero['peak']:.1f}x. The model also gives all-gather and all-reduce a similar advantage "
            f"(all-reduce = reduce-scatter + all-gather with the same algorithms), so it cannot make one 6x and "
            f"the other 2x; the quoted figures imply a per-call cost on Trn3 well below Trn1's and algorithms "
            f"not in the model (e.g. an all-gather that skips the torus' multi-hop forwarding).")
        note = (f"{coll.value}, 64 chips on each (the whole Trn2 UltraServer vs 64 of the Trn3 UltraServer's 144), "
                f"sizes 1 B-4 GiB, each system's fastest algorithm: peak ratio {r['peak']:.2f}x at "
                f"{r['at_bytes']:.3g} B (Trn2 {r['trn2_alg']} {r['trn2_s'] * 1e6:.0f} us vs Trn3 {r['trn3_alg']} "
                f"{r['trn3_s'] * 1e6:.0f} us); {r['small']:.2f}x at 1 B, {r['large']:.2f}x at 4 GiB. "
                f"Whole domains (64 Trn2 vs 144 "
                f"Trn3 chips): peak {full['peak']:.2f}x." + why)
        rows.append(ClaimResult(id_, f"NeuronSwitch (Trn3) vs torus (Trn2): {coll.value} latency up to "
                                     f"{quoted:g}x lower", "000, 001, 002", quoted, r["peak"], "x", TOL, note))
    return rows


# ---------------------------------------------------------------- C3


C3_SYSTEMS = ("trn1n.32xlarge", "trn1.32xlarge", "p4d.24xlarge")


def c3_numbers(name: str):
    """GPT-3 175B on 2 replicas of 8 instances each: TP 8 inside a node, PP over the replica's
    instances, DP 2 across replicas (1 member per node: all over EFA); mixed precision, ZeRO-1,
    full recompute, micro-batch 1, global batch 1536 x 2048 tokens (GPT-3 paper)."""
    s = catalog.load_system(name)
    arch = workload_files.load_workload("gpt3-175b")
    replica_nodes, dp, gbs = 8, 2, 1536
    tp = 8
    pp = replica_nodes * s.node.chips // tp
    par = Parallelism(tp=tp, pp=pp, dp=dp, zero=1, microbatches=gbs // dp)
    sc = Scenario(phase=Phase.TRAIN, batch=1, seq_len=2048, parallel=par, recompute=Recompute.FULL,
                  optimizer=Optimizer.ADAM_MIXED)
    return training.train(s, arch, sc, nodes=replica_nodes * dp)


@claim
def c3_gpt3_overhead() -> list[ClaimResult]:
    """C3: GPT-3 175B DP gradient traffic: exposed comm trn1n (1600 Gbps) < trn1 (800) < p4d (400)."""
    res = {n: c3_numbers(n) for n in C3_SYSTEMS}
    exp = {n: r["dp_comm_exposed_s"] for n, r in res.items()}
    detail = "; ".join(
        f"{n}: data-parallel gradient sync {r['dp_comm_s']:.2f} s per step ({r['dp_algorithm']} over "
        f"{r['dp_crosses']}), exposed {exp[n]:.2f} s = {100 * exp[n] / r['step_time_s']:.1f}% of a "
        f"{r['step_time_s']:.1f} s "
        f"step; all exposed comm {100 * r['comm_exposed_s'] / r['step_time_s']:.1f}%"
        f"{'' if r['fits'] else ' (plan does not fit memory)'}"
        for n, r in res.items())
    base = (f"GPT-3 175B, 16 instances = 2 data-parallel replicas of 8 (TP 8 in a node, PP over the replica, "
            f"DP 2 across replicas: one member per node, all gradient traffic on EFA), micro-batch 1, 1536 x 2048 "
            f"tokens per step, mixed precision, ZeRO-1, full recompute. {detail}. Ordering claim: holds when the "
            f"ratio >= 1.")
    return [
        ClaimResult("C3.trn1_over_trn1n", "GPT-3 175B comm overhead: trn1 (800 Gbps) > trn1n (1600 Gbps)", "004", 1.0,
                    exp["trn1.32xlarge"] / exp["trn1n.32xlarge"], "x", 0.0, base, bound="at_least"),
        ClaimResult("C3.p4d_over_trn1", "GPT-3 175B comm overhead: p4d (400 Gbps) > trn1 (800 Gbps)", "004", 1.0,
                    exp["p4d.24xlarge"] / exp["trn1.32xlarge"], "x", 0.0,
                    "Per node each holds 1/8 of the gradients (replica = 8 instances) and moves them over its EFA: "
                    "800 Gbps for 16 Trainium1 vs 400 Gbps for 8 A100, hence about 2x. " + base, bound="at_least"),
    ]


# ---------------------------------------------------------------- C4

# (id, workload, seq, micro-batch per chip, tp chips, dp chips per node, global batch per node, seq/s 1 node,
#  seq/s 16 nodes, quoted efficiency %)
C4_CASES = (
    ("bert_ph1", "bert-large", 128, 32, 1, 16, 16384, 2846.0, 42484.0, 93.0),
    ("bert_ph2", "bert-large", 512, 4, 1, 16, 32768, 479.0, 7187.0, 94.0),
    ("gpt3_6.7b", "gpt3-6.7b", 2048, 1, 4, 4, 64, 7.0, 110.0, 94.0),
)
C4_STACK = "torch-neuronx-2022"  # the seed's runs: PyTorch Neuron on PyTorch/XLA, late 2022 (hardware_specs/stacks)
# seed 004, the same talk's single-node comparison on BERT-Large phase 1 (Hugging Face, seq 128): "Single Node:
# Trn1 1.5x faster" than p4d.24xlarge (trn1 in BF16 with stochastic rounding, p4d in mixed precision)
C4_P4D_SPEEDUP = 1.5


def c4_scenario(workload: str, seq: int, micro: int, tp: int, dp: int, gbs_node: int) -> Scenario:
    par = Parallelism(tp=tp, dp=dp, microbatches=gbs_node // (micro * dp))
    return Scenario(phase=Phase.TRAIN, batch=micro, seq_len=seq, parallel=par, optimizer=Optimizer.ADAM_BF16_SR)


@functools.lru_cache(maxsize=1)
def c4_numbers():
    """Weak scaling of the three C4 plans under the seed's stack (computed once per process)."""
    s = catalog.load_system("trn1.32xlarge")
    out = {}
    for id_, wl, seq, micro, tp, dp, gbs, q1, q16, eff in C4_CASES:
        arch = workload_files.load_workload(wl)
        sc = c4_scenario(wl, seq, micro, tp, dp, gbs)
        out[id_] = training.scaling(s, arch, sc, [1, 2, 4, 8, 16],
                                    stack=neuron_stacks.for_system(C4_STACK, "training", s))
    return out


@functools.lru_cache(maxsize=1)
def c4_p4d_bert_ph1() -> float:
    """Modelled seq/s of one p4d.24xlarge on the seed's BERT-Large phase 1 as 2022 software ran it on GPUs: mixed
    precision, attention scores through HBM (Hugging Face's BertSelfAttention), 32 sequences per GPU per
    micro-batch (the seed's Trainium1 per-chip value; p4d's is not stated), 16,384 per step."""
    arch = workload_files.load_workload("bert-large")
    sc = c4_scenario("bert-large", 128, 32, 1, 8, 16384).replace(flash_attention=False,
                                                                   optimizer=Optimizer.ADAM_MIXED)
    return float(training.scaling(catalog.load_system("p4d.24xlarge"), arch, sc, [1]).iloc[0]["sequences_per_s"])


@claim
def c4_scaling() -> list[ClaimResult]:
    """C4: 1 -> 16 trn1.32xlarge scaling efficiency and single-node throughput (seed-004 table)."""
    res = c4_numbers()
    p4d_measured = C4_CASES[0][7] / C4_P4D_SPEEDUP
    p4d_over = c4_p4d_bert_ph1() / p4d_measured
    rows = []
    for id_, wl, seq, micro, tp, dp, gbs, q1, q16, eff in C4_CASES:
        df = res[id_]
        one, last = df.iloc[0], df.iloc[-1]
        e = 100 * last["scaling_efficiency_frac"]
        plan = (f"{wl} seq {seq}, per node TP {tp} x DP {dp} chips (= the seed's NeuronCores / 2), micro-batch {micro} "
                f"per chip, {gbs} sequences per node per step "
                f"({int(one['global_batch'] / (micro * dp))} micro-batches), "
                f"BF16 + stochastic rounding, stack {C4_STACK} (attention scores through HBM, 2D rings)")
        wait = [r["straggler_s"] / (r["step_time_s"] - r["straggler_s"]) for r in (one, last)]
        eff_note = (f"{plan}: 16 nodes {last['sequences_per_s']:.0f} seq/s vs 16 x {one['sequences_per_s']:.0f}; "
                    f"gradient sync {last['dp_comm_s'] * 1e3:.0f} ms ({last['dp_algorithm']}), exposed "
                    f"{last['dp_comm_exposed_s'] * 1e3:.0f} ms of a {last['step_time_s']:.2f} s step; waiting for "
                    f"the slowest chip stretches the step {100 * wait[1]:.1f}% at {last['chips']:.0f} chips against "
                    f"{100 * wait[0]:.1f}% at {one['chips']:.0f} (rank_speed_spread_frac: chips of one SKU differ "
                    f"in speed and a synchronous step runs at the slowest's).")
        if abs(e - eff) > PP_TOL:
            eff_note += (f" MISS by {e - eff:+.1f} points: the model's scaling losses are the slowest chip's pace "
                         f"and exposed gradient communication, which the collective engines hide under the backward "
                         f"pass. The measured "
                         f"loss ({100 - eff:.0f}% of the step: {(100 - eff) / 100 * gbs / q1:.1f} s at the measured "
                         f"{gbs / q1:.1f} s step) is about the same fraction for BERT phase 1 and phase 2, whose steps "
                         f"differ 12x with the same gradient volume, so it grows with step time, not with "
                         f"communication: per-step work the model does not include (input pipeline, host and "
                         f"synchronisation overheads, a larger spread of 2022 nodes than the one assumed).")
        rows.append(ClaimResult(f"C4.{id_}.efficiency", f"{wl} seq {seq}: 1 -> 16 trn1.32xlarge scaling efficiency "
                                f"{eff:g}%", "004", eff, e, "%", PP_TOL / eff, eff_note))
        mfu = one["mfu_frac"]
        implied = mfu * q1 / one["sequences_per_s"]
        tp_note = (f"{plan}: modelled {one['sequences_per_s']:.1f} seq/s per node at MFU {100 * mfu:.0f}%; the "
                   f"measured {q1:g} seq/s implies MFU {100 * implied:.1f}% (same model FLOPs per sequence).")
        if abs(one["sequences_per_s"] - q1) / q1 > TOL:
            tp_note += (f" MISS, named not closed: the 2022 stacks' kernel rates, not a Trainium efficiency. The same "
                        f"talk measured Trn1 {C4_P4D_SPEEDUP:g}x faster than p4d.24xlarge on BERT-Large phase 1, so 8 "
                        f"A100 gave about {p4d_measured:.0f} seq/s where perfmodel, with A100 efficiencies measured on "
                        f"today's kernels and the same 2022 attention, gives {p4d_over:.2f}x that: 2022's software ran "
                        f"at {q1 / one['sequences_per_s']:.0%} of the modelled rate here and at {1 / p4d_over:.0%} on "
                        f"the A100s. The model's efficiencies "
                        f"(tensor 0.9, HBM 0.85; calibration/neuron.toml) describe today's compiled kernels; the "
                        f"2022 compiler's per-operator rates are not modelled (its only rows, these three, cannot "
                        f"separate them), and dropout (BERT's 0.1, not in the graph) is not either.")
        rows.append(ClaimResult(f"C4.{id_}.throughput_1node", f"{wl} seq {seq}: {q1:g} seq/s on one trn1.32xlarge",
                                "004", q1, float(one["sequences_per_s"]), "seq/s", TOL, tp_note))
    return rows
