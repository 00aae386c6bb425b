"""Collective cost model: hand-computed alpha-beta cases on small synthetic topologies.

Synthetic systems keep the arithmetic easy: per-chip link rate B, per-hop latency a, per-call
cost F, all efficiencies 1, so each expected time is the docstring formula in collectives.py.
"""

from __future__ import annotations

import dataclasses
import itertools
from types import MappingProxyType

import numpy as np
import pytest

from perfmodel import catalog
from perfmodel.catalog.calibration import calibration_for
from perfmodel.core.calibration import Calibration, Param
from perfmodel.comm import collectives as co
from perfmodel.comm.algorithms import Collective
from perfmodel.core.hardware import LinkTier, Scope, Topology

B = 100e9  # B/s per chip per direction (node tier)
B_OUT = 80e9  # B/s per node (scale-out)
A, A_OUT, F = 1e-6, 5e-6, 10e-6
N = 2.0 ** 26  # 64 MiB


def make_cal(**over) -> Calibration:
    vals = dict(link_efficiency_node=1.0, link_efficiency_scaleup=1.0, link_efficiency_scaleout=1.0,
                link_latency_node=A, link_latency_scaleup=2 * A, link_latency_scaleout=A_OUT,
                collective_fixed_latency=F, unstated_link_direction_frac=0.5, hierarchical_pipelining=0.0)
    vals.update(over)
    return Calibration(chip="test", params=MappingProxyType(
        {k: Param(k, float(v), str(v), "ratio", "assumed", "test", "", "test") for k, v in vals.items()}))


def make_system(node_topology=Topology.SWITCH, dims=(8,), direction="per-direction", node_bw=B):
    base = catalog.load_system("trn1.32xlarge")
    chips = int(np.prod(dims))
    tiers = (LinkTier("node", Scope.NODE, node_topology, tuple(dims), node_bw, direction),
             LinkTier("efa", Scope.SCALEOUT, Topology.SWITCH, (), B_OUT, "per-direction", per_node=True))
    return dataclasses.replace(base, node=dataclasses.replace(base.node, chips=chips), tiers=tiers, scaleup_nodes=1,
                               provenance=MappingProxyType({}))


SW = make_system()
CAL = make_cal()
ALL = list(Collective)


def cost(c, n, g, stride=1, alg="auto", system=SW, cal=CAL):
    return co.collective_cost(system, cal, c, n, g, stride, alg)


@pytest.mark.parametrize("c", ALL)
def test_group_of_one_costs_nothing(c):
    r = cost(c, N, 1)
    assert float(r.time_s) == 0.0 and r.algorithm.item() == "none"


def test_two_chips_on_a_switch():
    # ring all-reduce, g = 2: 2 (g-1) a + 2 (g-1)/g n / B = 2a + n/B
    r = cost(Collective.ALL_REDUCE, N, 2, alg="ring")
    assert float(r.time_s) == pytest.approx(F + 2 * A + N / B)
    # send/recv: one hop
    r = cost(Collective.SEND_RECV, N, 2)
    assert float(r.time_s) == pytest.approx(F + A + N / B)


def test_eight_chips_on_a_switch_each_algorithm():
    g, bw_ar = 8, 2 * 7 / 8 * N / B
    expect = {"ring": 14 * A, "bidir-ring": 14 * A, "2d-ring": 14 * A, "tree": 2 * 3 * A, "direct": 2 * A,
              "hierarchical": 2 * A}
    r = cost(Collective.ALL_REDUCE, N, g)
    for alg, lat in expect.items():
        t, la, bw = r.per_algorithm[alg]
        assert float(la) == pytest.approx(lat), alg
        assert float(bw) == pytest.approx(bw_ar), alg
        assert float(t) == pytest.approx(F + lat + bw_ar), alg
    assert r.algorithm.item() in ("direct", "hierarchical")
    # all-gather / reduce-scatter are half an all-reduce; all-to-all direct is one step
    for c in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL):
        t, la, bw = cost(c, N, g).per_algorithm["direct"]
        assert float(t) == pytest.approx(F + A + 7 / 8 * N / B)
    # broadcast as a pipelined chain: (g-1) a + n / B
    t, _, _ = cost(Collective.BROADCAST, N, g).per_algorithm["ring"]
    assert float(t) == pytest.approx(F + 7 * A + N / B)


def test_latency_and_bandwidth_limits():
    tiny = cost(Collective.ALL_REDUCE, 1.0, 8, alg="ring")
    assert float(tiny.time_s) == pytest.approx(F + 14 * A, rel=1e-6)
    huge = cost(Collective.ALL_REDUCE, 1e15, 8, alg="ring")
    assert float(huge.time_s) / 1e15 == pytest.approx(2 * 7 / 8 / B, rel=1e-6)
    assert tiny.fixed_s + tiny.latency_s >= tiny.bandwidth_s
    assert huge.bandwidth_s > huge.latency_s


@pytest.mark.parametrize("c", ALL)
def test_monotonic_in_size_and_auto_is_the_minimum(c):
    sizes = co.size_range(1, 2.0 ** 34, 2)
    g = 2 if c == Collective.SEND_RECV else 32
    r = cost(c, sizes, g)
    assert np.all(np.diff(r.time_s) >= -1e-15)
    finite = np.stack([t for t, _, _ in r.per_algorithm.values()])
    assert np.allclose(r.time_s, finite.min(axis=0))
    for t, _, _ in r.per_algorithm.values():
        t = np.where(np.isfinite(t), t, np.inf)
        assert np.all(np.diff(t[np.isfinite(t)]) >= -1e-15)


def test_ring_on_a_torus_uses_one_link_per_direction():
    tor = make_system(Topology.TORUS2D, (4, 4))
    port = B / 4  # per-chip rate over 4 ports (2 axes x 2 directions)
    ring = cost(Collective.ALL_REDUCE, N, 4, alg="ring", system=tor)
    assert float(ring.bandwidth_s) == pytest.approx(2 * 3 / 4 * N / port)
    assert float(ring.latency_s) == pytest.approx(6 * A)
    bidir = cost(Collective.ALL_REDUCE, N, 4, alg="bidir-ring", system=tor)
    assert float(bidir.bandwidth_s) == pytest.approx(2 * 3 / 4 * N / (2 * port))
    # the whole 4x4 torus, a bidirectional ring per axis: X on n, then Y on n/4
    twod = cost(Collective.REDUCE_SCATTER, N, 16, alg="2d-ring", system=tor)
    assert float(twod.bandwidth_s) == pytest.approx(3 / 4 * N / (2 * port) + 3 / 4 * (N / 4) / (2 * port))
    assert float(twod.latency_s) == pytest.approx(6 * A)
    # an unstated direction is read with unstated_link_direction_frac (0.5 here): half the rate
    uns = make_system(Topology.TORUS2D, (4, 4), direction="unstated")
    r = cost(Collective.ALL_REDUCE, N, 4, alg="ring", system=uns)
    assert float(r.bandwidth_s) == pytest.approx(2 * float(ring.bandwidth_s))


def test_placement_by_stride_on_a_torus():
    tor = make_system(Topology.TORUS2D, (4, 4))
    dims = co.topology_dims(tor, CAL)
    assert [d.size for d in dims] == [4.0, 4.0, np.inf]
    gds = co.place_group(dims, 4, 4)  # a column: the Y axis
    assert [float(gd.m) for gd in gds] == [1.0, 4.0, 1.0]
    gds = co.place_group(dims, 2, 8)  # two chips two rows apart: Y axis, 2 hops
    assert [float(gd.m) for gd in gds] == [1.0, 2.0, 1.0] and float(gds[1].h) == 2.0
    gds = co.place_group(dims, 4, 16)  # one chip per node: all over EFA
    assert [float(gd.m) for gd in gds] == [1.0, 1.0, 4.0]
    # vectorised over groups and strides
    gds = co.place_group(dims, np.array([4, 4, 32]), np.array([1, 4, 1]))
    assert np.allclose(gds[0].m, [4, 1, 4]) and np.allclose(gds[2].m, [1, 1, 2])


def test_hierarchical_crosses_efa_only_for_the_inter_node_part():
    per_chip_out = B_OUT / 8
    r = cost(Collective.ALL_REDUCE, N, 16, alg="hierarchical")
    inner = 7 / 8 * N / B  # direct reduce-scatter inside the node
    outer = 1 / 2 * (N / 8) / per_chip_out  # 2 nodes, each chip's 1/8 shard, its NIC share
    assert float(r.bandwidth_s) == pytest.approx(2 * (inner + outer))
    assert float(r.latency_s) == pytest.approx(2 * (A + A_OUT))
    assert r.crosses.item() == "scaleout"
    # pipelined tiers: the max instead of the sum
    rp = cost(Collective.ALL_REDUCE, N, 16, alg="hierarchical", cal=make_cal(hierarchical_pipelining=1.0))
    assert float(rp.bandwidth_s) == pytest.approx(2 * max(inner, outer))
    # a group inside one node never touches EFA: its time does not depend on the EFA rate
    slow = dataclasses.replace(SW, tiers=(SW.tiers[0], dataclasses.replace(SW.tiers[1],
                                                                           bandwidth_bytes_per_s=B_OUT / 100)))
    a = cost(Collective.ALL_REDUCE, N, 8)
    b = cost(Collective.ALL_REDUCE, N, 8, system=slow)
    assert float(a.time_s) == float(b.time_s) and a.crosses.item() == "node"
    # across nodes the EFA rate matters
    assert float(cost(Collective.ALL_REDUCE, N, 16, system=slow).time_s) > float(r.time_s)


def test_flat_ring_leaves_each_node_at_one_chip():
    # 2 nodes x 8 chips, no NIC count in the provenance: one NIC per chip, so one chip reaches
    # B_OUT / 8; the ring's EFA hop is the slowest and sets every step
    r = cost(Collective.ALL_REDUCE, N, 16, alg="ring")
    assert float(r.bandwidth_s) == pytest.approx(2 * 15 / 16 * N / (B_OUT / 8))
    assert float(r.latency_s) == pytest.approx(30 * A_OUT)


def test_collective_time_matches_cost_and_broadcasts():
    n = np.array([1e3, 1e6, 1e9])
    g = np.array([[2.0], [8.0], [16.0]])
    t = co.collective_time(SW, CAL, Collective.ALL_REDUCE, n, g)
    assert t.shape == (3, 3)
    assert t[1, 2] == pytest.approx(float(cost(Collective.ALL_REDUCE, 1e9, 8).time_s))


def test_sweep_frame_columns_and_regimes():
    df = co.sweep(SW, CAL, "all-reduce", co.size_range(1, 2.0 ** 32, 1), [16])
    for col in ("size_bytes", "algorithm", "time_s", "latency_s", "bandwidth_s", "busbw_bytes_per_s", "regime",
                "time_ring_s", "time_hierarchical_s"):
        assert col in df.columns
    assert df["regime"].iloc[0] == "latency" and df["regime"].iloc[-1] == "bandwidth"


def test_real_systems_price_every_collective():
    for name in ("trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver", "p5.48xlarge", "gb200-nvl72"):
        s = catalog.load_system(name)
        from perfmodel.catalog.calibration import calibration_for
        cal = calibration_for(s)
        for c in ALL:
            g = 2 if c == Collective.SEND_RECV else 2 * s.scaleup_chips
            t = co.collective_time(s, cal, c, np.array([8.0, 2.0 ** 30]), g)
            assert np.all(np.isfinite(t)) and np.all(t > 0) and t[1] > t[0]


def test_one_switch_domain_split_at_the_node_boundary_shares_ports():
    # GB200 NVL72: node [4] and rack [18] tiers are one NVLink Switch domain through the same ports,
    # so no link-based algorithm beats the per-GPU link rate on a 72-GPU all-reduce, and in-switch
    # reduction (each port carries n (1 + 1/g) per direction) cannot move data faster than the port
    from perfmodel.catalog.calibration import calibration_for
    s = catalog.load_system("gb200-nvl72")
    cal = calibration_for(s)
    link = s.tier(Scope.NODE).bandwidth_bytes_per_s * cal["link_efficiency_node"]
    for alg in ("ring", "bidir-ring", "2d-ring", "tree", "direct"):
        df = co.sweep(s, cal, "all-reduce", [2.0 ** 32], [72], algorithm=alg)
        assert df["busbw_bytes_per_s"].iloc[0] <= link * (1 + 1e-9), alg
    for alg in ("nvls", "hierarchical"):  # hierarchical = NVLS per tier (NVLS-tree), tiers on the same ports
        df = co.sweep(s, cal, "all-reduce", [2.0 ** 32], [72], algorithm=alg)
        assert df["algbw_bytes_per_s"].iloc[0] <= link * cal["in_switch_reduction_efficiency"] * 72 / 73, alg
    dims = co.topology_dims(s, cal)
    assert dims[0].ports == dims[1].ports != dims[2].ports


def test_in_switch_reduction_all_reduce():
    # NVLS on an NVSwitch node: per port n (1 + 1/g) instead of the ring's 2 (g-1)/g n, so it wins at
    # large sizes by (2 (g-1)/g) / ((1 + 1/g) / eta_r) and the auto choice takes it; A100's NVSwitch
    # (gen 2) has no SHARP, Trainium's NeuronLink no switch, so neither offers it
    from perfmodel.catalog.calibration import calibration_for
    s = catalog.load_system("p5e.48xlarge")
    cal = calibration_for(s)
    df = co.sweep(s, cal, "all-reduce", [2.0 ** 34], [8])
    assert df["algorithm"].iloc[0] == "nvls"
    ratio = df["time_ring_s"].iloc[0] / df["time_nvls_s"].iloc[0]
    expect = (2 * 7 / 8) / ((1 + 1 / 8) / cal["in_switch_reduction_efficiency"])
    assert ratio == pytest.approx(expect, rel=0.01)
    for other in ("p4d.24xlarge", "trn1.32xlarge"):
        o = catalog.load_system(other)
        assert "time_nvls_s" not in co.sweep(o, calibration_for(o), "all-reduce", [2.0 ** 30], [8])  # no column
    with pytest.raises(ValueError):  # only all-reduce has an NVLS form here
        co.collective_cost(s, cal, "all-gather", [2.0 ** 30], [8], algorithm="nvls")
    # Blackwell's switch reduces at a smaller fraction of its (faster) links (NCCL: 0.74 vs 0.85)
    b = catalog.load_system("p6-b200.48xlarge")
    assert calibration_for(b)["in_switch_reduction_efficiency"] < cal["in_switch_reduction_efficiency"]


def test_launch_modes_add_only_a_fixed_cost_per_call():
    # in-graph F, host F_host, eager F_host + the framework's per-call overhead; the transfer is the same
    cal = make_cal(collective_host_launch_latency=3 * F, framework_call_overhead=2 * F)
    t = {lm: float(co.collective_cost(SW, cal, Collective.ALL_REDUCE, N, 8, launch=lm).time_s) for lm in co.LAUNCH}
    assert t["host"] - t["in-graph"] == pytest.approx(2 * F)
    assert t["eager"] - t["host"] == pytest.approx(2 * F)
    with pytest.raises(ValueError, match="launch must be one of"):
        co.collective_cost(SW, cal, Collective.ALL_REDUCE, N, 8, launch="graph")


def test_eager_overhead_dominates_small_payloads_only():
    # torch.distributed one call at a time: small all-reduces on 8x H200 cost about twice nccl-tests',
    # 16 GiB ones the same (the overhead is a fixed 20 us per call)
    from perfmodel.catalog.calibration import calibration_for
    s = catalog.load_system("p5e.48xlarge")
    cal = calibration_for(s)
    host, eager = (co.sweep(s, cal, "all-reduce", [2.0 ** 15, 2.0 ** 34], [8], launch=lm)["time_s"].to_numpy()
                   for lm in ("host", "eager"))
    assert eager[0] / host[0] > 2.0
    assert eager[1] / host[1] == pytest.approx(1.0, abs=1e-3)


def test_expert_all_to_all_carries_the_load_imbalance():
    from perfmodel.catalog import workload_files
    from perfmodel.core.scenario import Phase
    from perfmodel.model import bindings as bd
    from perfmodel.model import evaluate as ev
    s = catalog.load_system("trn2.48xlarge")
    arch = workload_files.load_workload("mixtral-8x7b")
    kn = bd.Knobs(phase=Phase.PREFILL, batch=8, seq_len=1024, tp=1, da=8, ep=8, moe_imbalance=np.array([1.0, 2.0]))
    ops, q, comm, _ = ev.run(s, arch, kn)
    i = [k for k, op in enumerate(ops) if op.name == "moe.dispatch"][0]
    assert comm[i, 1] > comm[i, 0] > 0


def test_engines_dispatch_fp8_tokens_when_the_experts_compute_in_8_bits():
    """NVIDIA's MoE engines quantize dispatched tokens to FP8 (DeepEP layout: an FP32 scale per 128) when
    the experts run FP8; the combine stays BF16. BF16 experts dispatch BF16; Neuron (no such stack) does not."""
    from perfmodel.catalog import workload_files
    from perfmodel.catalog.calibration import calibration_for
    from perfmodel.core.dtypes import DType
    from perfmodel.core.scenario import Phase
    from perfmodel.model import bindings as bd
    from perfmodel.model import evaluate as ev
    arch = workload_files.load_workload("mixtral-8x7b")
    s = catalog.load_system("p5.48xlarge")
    fp8, bf16 = (bd.Knobs(phase=Phase.DECODE, batch=64, context=1024, tp=1, da=8, ep=8, weights=d, compute=d)
                 for d in (DType.FP8, DType.BF16))
    cal = calibration_for(s)
    assert bd.dispatch_bytes(fp8, cal) == pytest.approx(1 + 4 / 128)
    assert bd.dispatch_bytes(bf16, cal) == pytest.approx(2.0)
    assert bd.dispatch_bytes(fp8, cal.with_overrides({"moe_dispatch_fp8": 0})) == pytest.approx(2.0)
    assert bd.dispatch_bytes(fp8, calibration_for(catalog.load_system("trn2.48xlarge"))) == pytest.approx(2.0)
    ops, q, _, _ = ev.run(s, arch, fp8)
    names = [op.name for op in ops]
    dispatch, combine = (float(np.asarray(q["comm_bytes"][names.index(n)]).max()) for n in ("moe.dispatch", "moe.combine"))
    assert dispatch / combine == pytest.approx((1 + 4 / 128) / 2.0)


ONE_MESSAGE_CASES = (  # collective, group, stride, bytes, ranks per chip
    (Collective.ALL_REDUCE, 8.0, 1.0, 3.0e6, 1), (Collective.ALL_REDUCE, 64.0, 1.0, 2.0 ** 30, 1),
    (Collective.ALL_GATHER, 4.0, 2.0, 1024.0, 1), (Collective.ALL_TO_ALL, 16.0, 4.0, 7.3e6, 1),
    (Collective.REDUCE_SCATTER, 2.0, 8.0, 0.0, 1), (Collective.ALL_REDUCE, 4.0, 1.0, 8192.0, 4),
    (Collective.BROADCAST, 32.0, 1.0, 1.0e5, 1), (Collective.SEND_RECV, 2.0, 64.0, 5.0e7, 1))


def test_one_message_on_python_floats_is_the_array_path_bit_for_bit():
    """collective_fields prices one configuration's message on Python floats (collectives._cost, core/elementwise):
    every field, and every algorithm's breakdown, equals the array path's, on every catalogue system, collective,
    group shape and rank count."""
    fields = ("time_s", "latency_s", "bandwidth_s", "fixed_s", "algorithm", "crosses", "group", "nbytes", "ranks")
    checked = 0
    for name in catalog.list_systems():
        s = catalog.load_system(name)
        cal = calibration_for(s)
        for c, g, stride, n, r in ONE_MESSAGE_CASES:
            try:
                want = co.collective_cost(s, cal, c, np.array([n]), np.array([g]), np.array([stride]),
                                          ranks_per_chip=r)
            except ValueError:
                continue  # a group larger than the system: the array path says so
            got = co._cost(s, cal, c, n, g, stride, "auto", "in-graph", r)
            for f in fields:
                w, v = np.asarray(getattr(want, f)).ravel()[0], getattr(got, f)
                assert (w == v and (isinstance(v, str) or np.float64(w).tobytes() == np.float64(v).tobytes())), \
                    (name, c.value, g, f, w, v)
            for alg, parts in want.per_algorithm.items():
                for w, v in zip(parts, got.per_algorithm[alg]):
                    w = np.asarray(w).ravel()[0]
                    assert w == v or (np.isnan(w) and np.isnan(v)), (name, c.value, g, alg)
            checked += 1
    assert checked > 50


def test_dimensions_and_tiers_of_one_member_are_not_priced_and_change_no_number(monkeypatch):
    """algorithms._alone skips a dimension (and a hierarchical tier of them) with one member in every
    configuration: each algorithm masks such a dimension out and a tier of one member costs (0, 0), so every
    field and every algorithm's breakdown equals the cost with nothing skipped, bit for bit (NaN where NaN),
    on every catalogue system, collective, group, stride and rank count (a mixed group array included)."""
    from perfmodel.comm import algorithms

    n = np.array([0.0, 1.0, 4096.0, 3.3e6, 2.5e8, 1.0e10])
    groups = (1.0, 2.0, 8.0, 64.0, np.array([1.0, 2.0, 1.0, 8.0, 1.0, 4.0]))
    cases = [(c, g, stride, r) for c in Collective for g in groups for stride in (1.0, 4.0) for r in (1, 4)]

    def costs():
        out = {}
        for name in catalog.list_systems():
            s = catalog.load_system(name)
            cal = calibration_for(s)
            for i, (c, g, stride, r) in enumerate(cases):
                try:
                    cost = co.collective_cost(s, cal, c, n, g, stride, ranks_per_chip=r)
                except ValueError:
                    continue
                out[name, i] = [np.asarray(x).tobytes() for x in (cost.time_s, cost.latency_s, cost.bandwidth_s)] \
                    + [np.asarray(cost.algorithm).tolist()] \
                    + [np.asarray(x).tobytes() for parts in cost.per_algorithm.values() for x in parts]
        return out

    skipped = costs()
    monkeypatch.setattr(algorithms, "_alone", lambda gd: False)
    priced = costs()
    assert skipped.keys() == priced.keys() and len(skipped) > 200
    assert [k for k in skipped if skipped[k] != priced[k]] == []


def test_one_group_of_many_messages_is_placed_once_and_gives_every_field_the_arrays_give(monkeypatch):
    """A sweep whose plan is fixed prices many messages over one group: collective_fields then hands _cost the
    group and stride as Python numbers (placed once, not once per message). Every field equals the cost with the
    group spread over the messages, bit for bit and dtype for dtype, on every catalogue system, collective, group,
    stride and rank count; repeated messages are priced once and spread back; the one-group path is the one taken."""
    fields = ("time_s", "latency_s", "bandwidth_s", "fixed_s", "algorithm", "crosses", "group", "ranks", "nbytes")
    n = np.array([0.0, 1.0, 4096.0, 3.3e6, 2.5e8, 1.0e10, 4096.0, 1.0])  # two repeats: distinct() spreads them
    n = np.concatenate([n, np.logspace(0, 10, 120)])
    taken = []
    one_group = co._one_group
    monkeypatch.setattr(co, "_one_group", lambda *a: taken.append(a[4]) or one_group(*a))
    checked = 0
    for name in catalog.list_systems():
        s = catalog.load_system(name)
        cal = calibration_for(s)
        for c, g, stride, r in itertools.product(Collective, (2.0, 8.0, 72.0), (1.0, 4.0), (1, 4)):
            try:
                spread = co.collective_cost(s, cal, c, n, np.full(n.shape, g), np.full(n.shape, stride),
                                            ranks_per_chip=r)
            except ValueError:
                continue
            got = co.collective_fields(s, cal, c, n, g, stride, fields, ranks_per_chip=r)
            for f in fields:
                want = np.asarray(getattr(spread, f))
                assert got[f].dtype == want.dtype and got[f].shape == want.shape, (name, c, g, f)
                same = got[f].tolist() == want.tolist() if want.dtype == object else got[f].tobytes() == want.tobytes()
                assert same, (name, c, g, stride, r, f)
            checked += 1
    assert checked > 1000 and len(taken) >= checked
