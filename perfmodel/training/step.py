"""Training step: compute from the operator graph, pipeline bubble, communication exposed vs hidden.

Per chip, per optimizer step (m micro-batches, p stages, v virtual stages, times in s):

    t_fb      = forward + backward + recompute compute of the stage (evaluate.run, TRAIN graph)
    t_block   = tensor / expert / context-parallel collectives (critical path); a fraction
                f_tp = max(`tp_comm_overlap_frac`, c (1 - 1/tp)) of it hides behind independent compute:
                c = `tp_comm_chunked_overlap` = 1 when the stack pipelines each collective with its GEMM in
                tp chunks (Transformer Engine userbuffers, torch AsyncTP): all but one chunk hides
    t_p2p     = pipeline send/recv; a fraction f_pp = `pp_comm_overlap_frac` hides behind the next
                chunk's compute (Megatron-Core's overlap_p2p_comm in the interleaved schedule)
    exposed_b = (1 - f_tp) t_block + (1 - f_pp) t_p2p
    bubble    = (p - 1) / (m v)            1F1B and GPipe: v = 1; interleaved: v = pp_virtual
    t_pipe    = (t_fb + exposed_b) (1 + bubble)
    data-parallel / ZeRO collectives (G = gradient bytes, W = weight bytes per chip), for the dense weights over
    the dp x d_a x cp ranks that hold them and, in a MoE model, for the routed experts over dp x cp, in turn:
        ZeRO 0: all-reduce(G) once            hides under the last micro-batch's backward
        ZeRO 1: reduce-scatter(G) once        hides under the last micro-batch's backward
                + all-gather(W) once          a fraction f_ag = `param_gather_overlap_frac` hides under the
                                              next step's first forward (Megatron-Core overlap_param_gather)
        ZeRO 2: reduce-scatter(G) per micro-batch (hides under any compute) + all-gather(W) once
        ZeRO 3: 2 all-gather(W) + reduce-scatter(G) per micro-batch (FSDP; hides under any compute)
      hidden  = min(f c_last, t_bwd / m) + min(f c_mb, t_fb - that) + min(f_ag c_end, t_fwd / m)
                                                                        f = `comm_overlap_frac`
      exposed = c_total - hidden
    contention = `comm_compute_contention_frac` x (hidden + hidden_pp) + c_tp hidden_tp   GPUs: SMs shared
                c_tp = `chunked_tp_contention_frac` where the stack pipelines TP collectives with their GEMMs
                (userbuffers, AsyncTP: copy-engine rings and 2-24 SMs), else `comm_compute_contention_frac`
    offload   = m [max(0, t_x - t_fwd / m) + max(0, t_x - t_bwd / m)],  t_x = o N a_tok / BW_host
                activations of o layers per stage (Scenario.offload_layers) go to host memory on copy engines
                during the micro-batch's forward and come back during its backward, over the chip's host link
                (node.host_link_bandwidth, per direction); only what outlasts the pass is on the critical path
    straggle  = sigma z(n),  z(n) = Phi^-1((n - 0.375) / (n + 0.25))   expected slowest of n = chips ranks
                (Blom), sigma = `rank_speed_spread_frac`: chips of one SKU differ in sustained speed, and a
                synchronous step runs at the slowest rank's; 0 for one chip, grows like sqrt(2 ln n)
    step      = (t_pipe + t_optimizer + exposed + contention + offload) (1 + straggle)
Bounds: overlapped = ((t_fb + exposed_b)(1+bubble) + t_opt + max(0, c_mb+c_last - t_fb)
                      + max(0, c_end - t_fwd / m) + offload)(1 + straggle)
        serial     = ((t_fb + t_block + t_p2p)(1 + bubble) + t_opt + c_total + 2 m t_x)(1 + straggle)
Metrics: tokens/s = B m d T / step; MFU = model FLOPs of all replicas (forward + backward,
graph with t = p = 1) / (step x chips x peak); scaling efficiency = tokens/s(N nodes) /
(N x tokens/s(1 node)) at a fixed per-node plan (weak scaling).

The plan's collectives (ZeRO data-parallel traffic, pipeline send/recv, context-parallel K,V
gathers) are operators of the training graph (graph._training_plan_comm); this module prices
how much of each hides under compute.

Does not: model data loading, host launch gaps (an operator's fixed `op_overhead` only) or HBM contention from
collectives; a whole run's evaluation, checkpoints and interrupts are time_to_train.py's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from perfmodel.comm import collectives as co
from perfmodel.comm.algorithms import Collective
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.hardware import System
from perfmodel.core.profiles import Stack
from perfmodel.core.scenario import Optimizer, Phase, Recompute, Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import evaluate as ev
from perfmodel.model import memory
from perfmodel.model import plan as pl
from perfmodel.model.ops import Pass

SCHEDULES = ("1f1b", "gpipe", "interleaved")
DTYPE_FIELDS = ("weights", "compute", "activations", "kv_cache", "expert_weights")


def bubble_fraction(pp, microbatches, schedule: str = "1f1b", virtual=1) -> np.ndarray:
    """Pipeline bubble as a fraction of the ideal time: (p - 1) / (m v); v = 1 unless interleaved."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r} (choose from {', '.join(SCHEDULES)})")
    v = np.asarray(virtual, dtype=float) if schedule == "interleaved" else 1.0
    return (np.asarray(pp, dtype=float) - 1) / (np.asarray(microbatches, dtype=float) * v)


def slowest_rank_z(n) -> np.ndarray:
    """Expected maximum of n standard normal draws (Blom: Phi^-1((n - 0.375) / (n + 0.25))); 0 for one rank."""
    n = np.asarray(n, dtype=float)
    return special.ndtri((n - 0.375) / (n + 0.25))


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _by_pass(ops, terms: list, shape: tuple, want) -> np.ndarray:
    """Sum of the per-operator terms of the operators `want` selects (evaluate.opsum)."""
    return ev.opsum([x if want(op) else None for op, x in zip(ops, terms)], shape)


def _replica_flop(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration, shape: tuple) -> np.ndarray:
    """Model FLOPs of one whole replica (kn has t = p = ... = 1), evaluated once per distinct
    configuration (a plan sweep repeats few) and spread back: the numbers of one full evaluation."""
    names = [f.name for f in dataclasses.fields(kn) if f.name not in ("phase", "optimizer")]
    swept = {k: getattr(kn, k) for k in names if np.ndim(getattr(kn, k)) > 0 and getattr(kn, k) is not None}
    codes = {k: (bd.dtype_codes(v) if k in DTYPE_FIELDS else (np.asarray(v, dtype=float), None))
             for k, v in swept.items()}
    d = co.distinct(*[c for c, _ in codes.values()]) if codes else None
    if d is None:
        return np.broadcast_to(ev.model_flop(ev.run_rows(system, arch, kn, cal, Recompute.NONE)), shape)
    rows, inverse, dshape = d
    one = {k: (np.asarray(cats, dtype=object)[r.astype(np.intp)] if cats is not None else r)
           for (k, (_, cats)), r in zip(codes.items(), rows)}
    if "flash_attention" in one or "sequence_parallel" in one:
        one = {k: (v.astype(bool) if k in ("flash_attention", "sequence_parallel") else v) for k, v in one.items()}
    # the full evaluation would sum its many configurations' operators in order, not pairwise
    flop = ev.model_flop(ev.run_rows(system, arch, dataclasses.replace(kn, **one), cal, Recompute.NONE), False)
    return np.broadcast_to(np.asarray(flop)[inverse].reshape(dshape), shape)


def step_arrays(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
                recompute: Recompute = Recompute.NONE, pp_schedule: str = "1f1b", pp_virtual=1,
                sequence_parallel: bool = False) -> dict[str, np.ndarray]:
    """Every term of the module doc as arrays over the configurations in `kn` (no loop per config)."""
    # the graph's plan collectives and the bubble below read the same plan fields
    kn = dataclasses.replace(kn, pp_virtual=pp_virtual if pp_schedule == "interleaved" else 1,
                             sequence_parallel=sequence_parallel)
    cal = cal or calibration_of(system)
    if Phase(kn.phase) != Phase.TRAIN:
        raise ValueError("training step needs phase=train knobs")
    r = ev.run_rows(system, arch, kn, cal, recompute)  # per-operator arrays at their own shapes
    ops, q, comm, shape0 = r.ops, r.rows, r.comm, r.shape
    count = q["count"]
    per_op = [c * t for c, t in zip(count, q["time"])]
    per_comm = [c * x if op.comm is not None else None for op, c, x in zip(ops, count, comm)]
    t_fwd = _by_pass(ops, per_op, shape0, lambda o: o.pass_ == Pass.FORWARD)
    t_bwd = _by_pass(ops, per_op, shape0, lambda o: o.pass_ in (Pass.BACKWARD, Pass.RECOMPUTE))
    t_opt = _by_pass(ops, per_op, shape0, lambda o: o.pass_ == Pass.OPTIMIZER)
    # blocking collectives on the critical path: TP / EP / CP in the layers, plus pipeline send/recv
    # (a pipeline hand-off's all-gather over the TP group, 'pp.gather', is the pipeline's)
    def hand_off(o):
        return o.comm is not None and o.name.startswith("pp.")

    t_block = _by_pass(ops, per_comm, shape0, lambda o: o.comm is not None and o.comm.group in ("tp", "ep")
                       and not hand_off(o))
    t_cp = _by_pass(ops, per_comm, shape0, lambda o: o.comm is not None and o.comm.group == "cp")
    t_p2p = _by_pass(ops, per_comm, shape0, hand_off)
    idx = {o.name: i for i, o in enumerate(ops)}
    opt = Optimizer(kn.optimizer).bytes_per_param
    grad_bytes = q["comm_bytes"][idx["dp.grad_all_reduce"]]  # dense weights (over dp x da x cp)
    weight_bytes = q["comm_bytes"][idx["dp.weight_all_gather"]]
    moe = "dp.expert_grad_all_reduce" in idx  # routed experts' (over dp x cp)
    expert_grad = q["comm_bytes"][idx["dp.expert_grad_all_reduce"]] if moe else 0.0
    expert_weight = q["comm_bytes"][idx["dp.expert_weight_all_gather"]] if moe else 0.0
    params_dev = (grad_bytes + expert_grad) / opt["gradients"]
    shape = np.shape(t_fwd)
    tp, da, cp, pp, dp = (np.broadcast_to(_f(getattr(kn, k)), shape) for k in ("tp", "da", "cp", "pp", "dp"))
    m = np.broadcast_to(_f(kn.microbatches), shape)
    zero = np.broadcast_to(_f(kn.zero), shape)
    v = np.broadcast_to(_f(kn.pp_virtual), shape)

    dense_dp, dense_stride = np.broadcast_to(kn.dense_dp, shape), np.broadcast_to(kn.dense_dp_stride, shape)
    expert_dp, expert_stride = np.broadcast_to(kn.expert_dp, shape), np.broadcast_to(kn.expert_dp_stride, shape)

    def cost(c, dense_bytes, expert_bytes):
        """The dense weights' collective over their dp x da x cp copies, then (MoE) the experts' over dp x cp: one
        after the other on the same links; the algorithm shown is the dense one's, the tier the outermost of both."""
        fields = ("time_s", "algorithm", "crosses")
        d = co.collective_fields(system, cal, c, dense_bytes, dense_dp, dense_stride, fields)
        if not moe:
            return d
        e = co.collective_fields(system, cal, c, expert_bytes, expert_dp, expert_stride, fields)
        def depth(x):  # the tier's rank in co.TIERS, innermost 0 (one comparison per tier, not per configuration)
            return sum(i * (np.asarray(x) == t) for i, t in enumerate(co.TIERS))

        deeper = depth(e["crosses"]) > depth(d["crosses"])
        return {"time_s": d["time_s"] + e["time_s"], "algorithm": d["algorithm"],
                "crosses": np.where(deeper, e["crosses"], d["crosses"])}

    # data-parallel collectives come from the graph's plan operators; their timing class
    # (once at the end vs once per micro-batch) decides how much can hide under compute
    ar = cost(Collective.ALL_REDUCE, grad_bytes, expert_grad)
    rs = cost(Collective.REDUCE_SCATTER, grad_bytes, expert_grad)
    ag = cost(Collective.ALL_GATHER, weight_bytes, expert_weight)
    c_last = np.select([zero == 0, zero == 1], [ar["time_s"], rs["time_s"]], 0.0)
    c_mb = np.select([zero == 2, zero >= 3], [m * rs["time_s"], m * (2 * ag["time_s"] + rs["time_s"])], 0.0)
    c_end = np.where((zero == 1) | (zero == 2), ag["time_s"], 0.0)

    f_tp, f_pp = cal["tp_comm_overlap_frac"], cal["pp_comm_overlap_frac"]
    f = cal["comm_overlap_frac"]
    blocking = t_block + t_p2p + t_cp
    # collectives pipelined with their GEMMs in tp chunks (userbuffers, AsyncTP) hide all but one chunk's
    f_tp = np.maximum(f_tp, cal["tp_comm_chunked_overlap"] * (1 - 1 / tp))
    hidden_tp, hidden_pp = f_tp * (t_block + t_cp), f_pp * t_p2p
    exposed_block = blocking - hidden_tp - hidden_pp
    bubble = bubble_fraction(pp, m, pp_schedule, v)
    t_fb = t_fwd + t_bwd
    t_pipe = (t_fb + exposed_block) * (1 + bubble)
    h_last = np.minimum(f * c_last, t_bwd / m)
    h_mb = np.minimum(f * c_mb, np.maximum(t_fb - h_last, 0.0))
    # the weight all-gather after the optimizer step feeds the next step's first micro-batch: Megatron-Core
    # gathers bucket by bucket as that forward reaches each layer (overlap_param_gather)
    h_end = np.minimum(cal["param_gather_overlap_frac"] * c_end, t_fwd / m)
    hidden = h_last + h_mb + h_end
    c_total = c_last + c_mb + c_end
    exposed = c_total - hidden
    # TP collectives pipelined with their GEMMs run on copy engines and a few SMs, NCCL's on 16-32 channels
    c_nccl, chunked = cal["comm_compute_contention_frac"], cal["tp_comm_chunked_overlap"]
    c_tp = c_nccl + chunked * (cal["chunked_tp_contention_frac"] - c_nccl)
    contention = c_nccl * (hidden + hidden_pp) + c_tp * hidden_tp
    offload_bytes, offload, offload_copy = _offload(system, arch, kn, cal, recompute, sequence_parallel, t_fwd / m,
                                                    t_bwd / m)
    offload, offload_copy = m * offload, m * offload_copy
    chips = tp * da * cp * pp * dp
    # every rank waits for the slowest at each synchronisation: the step stretches by the expected maximum of
    # the chips' speeds (spread sigma), Blom's approximation of the maximum of n normal draws
    straggle = cal["rank_speed_spread_frac"] * slowest_rank_z(chips)
    work = t_pipe + t_opt + exposed + contention + offload
    step = work * (1 + straggle)

    def row(x):  # one operator's array at the configurations' shape (a read-only view)
        return np.broadcast_to(x, shape0)

    plan_ops = [(op.name, op.pass_.value, op.comm.group, op.comm.collective.value, row(q["comm_bytes"][i]),
                 row(count[i]), row(comm[i])) for i, op in enumerate(ops) if op.group == "plan"]
    graph_comm = [(op.name, op.pass_.value, op.comm.group, op.comm.collective.value, row(q["comm_bytes"][i]),
                   row(count[i]), row(comm[i])) for i, op in enumerate(ops)
                  if op.comm is not None and op.group != "plan"]
    whole = dataclasses.replace(kn, tp=1, da=1, cp=1, pp=1, ep=1, dp=1)
    flop_replica = _replica_flop(system, arch, whole, cal, shape)
    tokens = _f(kn.batch) * m * dp * _f(kn.seq_len)
    peak = ev.peak_flop_per_s(system, kn.compute) * np.ones(shape)
    out = {
        "step_time_s": step, "forward_s": t_fwd, "backward_s": t_bwd, "optimizer_s": t_opt,
        "bubble_s": (t_fb + exposed_block) * bubble, "bubble_frac": bubble,
        "tp_ep_cp_comm_s": t_block + t_cp, "pp_send_recv_s": t_p2p, "blocking_comm_s": blocking,
        "blocking_comm_exposed_s": exposed_block,
        "dp_comm_s": c_total, "dp_comm_hidden_s": hidden, "dp_comm_exposed_s": exposed, "contention_s": contention,
        "straggler_s": work * straggle,
        "offload_bytes_per_microbatch": offload_bytes, "offload_exposed_s": offload,
        "comm_total_s": blocking + c_total, "comm_exposed_s": exposed_block + exposed,
        "comm_hidden_s": hidden_tp + hidden_pp + hidden,
        "tp_ep_cp_comm_hidden_s": hidden_tp, "pp_send_recv_hidden_s": hidden_pp,
        "dp_algorithm": np.select([zero == 0], [ar["algorithm"]], rs["algorithm"]),
        "dp_crosses": ar["crosses"],
        "overlapped_bound_s": ((t_fb + exposed_block) * (1 + bubble) + t_opt
                               + np.maximum(c_last + c_mb - t_fb, 0.0) + np.maximum(c_end - t_fwd / m, 0.0) + offload)
                              * (1 + straggle),
        "serial_bound_s": ((t_fb + blocking) * (1 + bubble) + t_opt + c_total + offload_copy) * (1 + straggle),
        "grad_bytes_per_chip": (grad_bytes + expert_grad) * np.ones(shape),
        "params_per_chip": params_dev * np.ones(shape),
        "chips": chips, "global_batch": _f(kn.batch) * m * dp, "tokens_per_step": tokens,
        "tokens_per_s": tokens / step, "tokens_per_s_per_chip": tokens / step / chips,
        "sequences_per_s": _f(kn.batch) * m * dp / step,
        "model_flop_per_step": flop_replica * dp, "peak_flop_per_s": peak * np.ones(shape),
        "mfu_frac": flop_replica * dp / (step * chips * peak),
        "achieved_flop_per_s_per_chip": flop_replica * dp / (step * chips),
    }
    out = {k: np.broadcast_to(np.asarray(v_), shape) if np.ndim(v_) <= len(shape) else v_ for k, v_ in out.items()}
    out["_plan_ops"], out["_graph_comm"] = plan_ops, graph_comm
    return out


def _offload(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration, recompute: Recompute,
             sequence_parallel: bool, fwd_window, bwd_window) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes offloaded per micro-batch and direction, exposed seconds per micro-batch, copy seconds per micro-batch
    both ways): o N a_tok over the host link each way, hidden under the micro-batch's forward (out) and backward
    (back) where it fits (module doc)."""
    o = _f(kn.offload_layers)
    if not np.any(o > 0):
        return np.zeros(()), np.zeros(()), np.zeros(())
    link = system.node.host_link_bytes_per_s
    if link is None:  # feasibility's offload_host_link rule refuses the plan; nothing to price it with
        raise ValueError(f"{system.display_name}: no node.host_link_bandwidth in its spec; activation offloading "
                         f"cannot be priced")
    tokens, a_tok, _ = memory.saved_bytes_per_layer(arch, kn, cal, recompute, sequence_parallel)
    nbytes = o * tokens * a_tok
    t_x = nbytes / link
    return nbytes, np.maximum(t_x - fwd_window, 0.0) + np.maximum(t_x - bwd_window, 0.0), 2 * t_x


@dataclass(frozen=True)
class TrainResult:
    """One training configuration: `summary` (one row), `comm` (one row per collective class,
    exposed vs hidden), `timeline` (lanes compute / comm with start and duration), the plan
    `check` (divisibility, fit, placement) and `comm_ops` (every communication operator of the
    step: the graph's and those the plan inserts)."""

    summary: pd.DataFrame
    comm: pd.DataFrame
    timeline: pd.DataFrame
    check: pl.PlanCheck
    comm_ops: pd.DataFrame | None = None

    def __getitem__(self, key: str):
        v = self.summary.iloc[0][key]
        return float(v) if isinstance(v, (int, float, np.number, np.bool_)) else v


def _scalar(d: dict) -> dict:
    return {k: (v.ravel()[0].item() if isinstance(v, np.ndarray) and v.dtype != object else
                (v.ravel()[0] if isinstance(v, np.ndarray) else v)) for k, v in d.items() if not k.startswith("_")}


def _first(x):
    a = np.asarray(x)
    return a.ravel()[0].item() if a.dtype != object else a.ravel()[0]


def comm_ops_frame(s: dict) -> pd.DataFrame:
    """The step's communication operators, one row each: the layers' (tensor / expert parallel,
    per pass) and the plan's (ZeRO data-parallel collectives, pipeline send/recv, context-parallel
    K,V exchange), all operators of the training graph; plan operators with count 0 are dropped."""
    rows = []
    for plan, ops in ((False, s["_graph_comm"]), (True, s["_plan_ops"])):
        for name, pas, grp, coll, nb, cnt, t in ops:
            c = float(_first(cnt))
            if plan and c == 0:
                continue
            rows.append({"op": name, "pass": pas, "group": grp, "collective": coll, "bytes": float(_first(nb)),
                         "count": c, "time_each_s": float(_first(t)), "total_s": c * float(_first(t)),
                         "inserted_by_plan": plan})
    return pd.DataFrame(rows)


def with_stack(system: System, scenario: Scenario, cal: Calibration,
               stack: Stack | None) -> tuple[Scenario, Calibration]:
    """`scenario` and `cal` under a Neuron training stack (core/profiles.Stack, role "training", resolved at the
    edge: catalog.neuron_stacks.for_system(name, "training", system), which refuses a serving stack or a system
    that is not Neuron): its attention kernels decide flash attention, its collective rules and graph cost per
    operator replace the family file's. No stack: both as given."""
    if stack is None:
        return scenario, cal
    return scenario.replace(flash_attention=bool(stack["flash_attention"])), stack.calibration(cal)


def train(system: System, arch: ModelArch, scenario: Scenario, nodes: int | None = None,
          cal: Calibration | None = None, stack: Stack | None = None) -> TrainResult:
    """Model one training step of `scenario` (phase train; batch = micro-batch per replica), under the Neuron
    training stack `stack` when one is named (with_stack)."""
    scenario, cal = with_stack(system, scenario, cal or calibration_of(system), stack)
    scenario.validate()
    p = scenario.parallel
    chk = pl.check(system, arch, scenario, nodes, cal=cal)
    kn = pl.knobs_for(scenario)
    raw = step_arrays(system, arch, kn, cal, scenario.recompute, p.pp_schedule, p.pp_virtual, p.sequence_parallel)
    s = _scalar(raw)
    row = {**ev.scenario_columns(system, arch, scenario), "stack": stack.name if stack else "",
           "nodes": nodes if nodes else p.chips / system.node.chips,
           "pp_schedule": p.pp_schedule, "pp_virtual": p.pp_virtual, "offload_layers": scenario.offload_layers,
           "lora_rank": scenario.lora_rank, "recompute_layers": scenario.recompute_layers, **s,
           "fits": chk.footprint is not None and bool(np.ravel(chk.footprint.fits)[0]),
           "plan_ok": chk.ok}
    return TrainResult(summary=pd.DataFrame([row]), comm=comm_frame(s), timeline=timeline_frame(s), check=chk,
                       comm_ops=comm_ops_frame(raw))


def comm_frame(s: dict) -> pd.DataFrame:
    """Communication per class for one configuration: total, hidden, exposed."""
    rows = [("tensor/expert/context parallel", s["tp_ep_cp_comm_s"], s["tp_ep_cp_comm_hidden_s"]),
            ("pipeline send/recv", s["pp_send_recv_s"], s["pp_send_recv_hidden_s"]),
            ("data parallel / ZeRO", s["dp_comm_s"], s["dp_comm_hidden_s"])]
    return pd.DataFrame([{"class": c, "total_s": tot, "hidden_s": hid, "exposed_s": tot - hid,
                          "exposed_frac": (tot - hid) / tot if tot else 0.0} for c, tot, hid in rows])


def timeline_frame(s: dict) -> pd.DataFrame:
    """A two-lane timeline (compute, comm) of one step; `exposed` marks comm on the critical path, `in_step` the
    parts whose durations add up to the step time (the hidden data-parallel comm runs beside them)."""
    fb = s["forward_s"] + s["backward_s"]
    rows = []
    t0 = 0.0
    for name, dur in (("forward + backward (all micro-batches)", fb),
                      ("blocking comm (tp/ep/cp, pipeline send/recv)", s["blocking_comm_exposed_s"]),
                      ("pipeline bubble", s["bubble_s"])):
        rows.append({"lane": "compute" if "comm" not in name else "comm", "component": name, "start_s": t0,
                     "duration_s": dur, "exposed": "comm" in name})
        t0 += dur
    hidden = s["dp_comm_hidden_s"]
    rows.append({"lane": "comm", "component": "data-parallel comm, hidden under compute",
                 "start_s": max(fb - hidden, 0.0), "duration_s": hidden, "exposed": False})
    for name, dur, lane, exp in (("data-parallel comm, exposed", s["dp_comm_exposed_s"], "comm", True),
                                 ("activation offload to host, exposed", s["offload_exposed_s"], "comm", True),
                                 ("compute slowed by overlapped comm", s["contention_s"], "compute", False),
                                 ("optimizer step", s["optimizer_s"], "compute", False),
                                 ("waiting for the slowest rank", s["straggler_s"], "compute", False)):
        rows.append({"lane": lane, "component": name, "start_s": t0, "duration_s": dur, "exposed": exp})
        t0 += dur
    df = pd.DataFrame(rows)
    return df.assign(in_step=df["component"] != "data-parallel comm, hidden under compute")
