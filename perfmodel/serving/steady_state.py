"""Serving model: continuous batching in steady state, prefill + decode, vectorised over plans.

One configuration = a replica plan (t, d_a, e, p), a data-type recipe, and a concurrency C
(sequences in flight on the replica). A request has I input and O output tokens (`Mix`).
Every configuration of a `Grid` is priced with TWO vectorised evaluations (`sweep`) (decode over the
whole grid, prefill over its distinct plans), never one call per configuration.

Per replica (times in s; symbols: t_d decode stage step, t_f prefill stage step, p stages):

    decode step      t_d = stage step at batch C/p (p micro-batches in flight), context
                     I + O/2 (the mean position of a sequence in steady state)
                     + a pipeline send/recv of the micro-batch's hidden states per stage
    prefill          t_f = stage step of `d_a` requests of I tokens (one per attention-DP rank);
                     occupancy per request o_f = t_f / d_a; latency L_f = p t_f
    chunked prefill  chunks of k tokens at mean prior context (n-1) k / 2, n = ceil(I / k):
                     o_f = n t_chunk / d_a;  TTFT = TPOT / 2 + n (p t_d + t_chunk) + (p - 1) t_chunk
                     (wait for the running step, then n steps that each carry a chunk); one chunk per
                     attention-DP rank per step, so prompts must not arrive faster than (C / O) n <= d_a
                     (else the chunks queue without bound: refused, as the simulation shows)

    aggregated       cycle = p t_d + (C / O) o_f     (replica time per decode step: a replica finishing C/O
                     requests per step must prefill as many)
                     TPOT = p t_d + ((C - 1) / O) o_f  (a request's own prefill is in its TTFT; while it
                     decodes its O tokens the other C - 1 sequences' prefills interleave)
                     TTFT = t_d / 2 (wait for the running step) + L_f
    disaggregated    TPOT = p t_d;  TTFT = L_f + KV transfer (I tokens of KV over the scale-up
                     links of the replica's chips); prefill pool = r o_f replicas per decode
                     replica (r = C / (O TPOT) requests/s), same plan as the decode replica

    interactivity    = 1 / TPOT   output tokens/s per user
    throughput       = C / cycle  output tokens/s per decode replica (C / TPOT disaggregated); per chip divides by the
                     replica's chips (x (1 + r o_f) when disaggregated); per node x node chips;
                     per scale-up domain x floor(domain / replica chips) replicas (a fraction when
                     a disaggregated unit is larger than the domain)
    e2e latency      = TTFT + (O - 1) TPOT
    stall            = worst inter-token gap: p t_d + t_f (a prefill blocks the batch;
                     chunked: one chunk)

KV-cache capacity caps concurrency (kv_capacity.py): `memory.footprint` of the decode replica at
batch C and context I + O ("peak": every sequence may reach its full length; "mean": I + O/2) must fit.

With a serving-engine profile (`ServingOptions.engine`: vllm, trtllm, sglang) the engine's host time
per step, tau_0 + tau_1 C / d_a (closed_loop.HOST: a fixed part and one per sequence each attention-DP
rank schedules), joins every step and so TPOT, its steps to the first token join TTFT (closed_loop.py's formulas at an idle
queue), its KV allotment (a share of HBM) decides the fit, and a concurrency above its running cap is
refused (the rest would queue: closed_loop.py prices that queue for a benchmark's closed loop).
Engine activity (busy time / wall time per engine, averaged over decode and prefill work and
over the chips of both pools) is returned for the power model.

Speculative decoding (ServingOptions.speculative, speculative.py): the decode step is the target's verify
step over k + 1 tokens plus k draft steps, and TPOT = step / E (E tokens emitted per step).
Prefix caching (ServingOptions.prefix_tokens = h, the mean prompt tokens served from the cache: hit rate x
shared prefix length): prefill computes I - h tokens at prior context h; each sequence holds KV for its own
I + O - h tokens (the prefix's blocks are shared; its one copy per replica is not counted); a disaggregated
hand-off moves I - h tokens (the decode worker caches the prefix too); decode still reads the whole context.

Not modelled: queueing delay (TTFT is at zero queue; simulation/ runs the queue, planner.py adds the peak
factor and verifies a percentile demand by simulation), the weight reads a prefill chunk could share with the
decode batch it rides with (chunked prefill is priced as a separate step: conservative).

Does not: price power or money (power.py, cost.py) or choose plans (search.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from perfmodel.comm import collectives
from perfmodel.comm.algorithms import Collective
from perfmodel.core.calibration import Calibration
from perfmodel.core.dtypes import DType
from perfmodel.core.hardware import Scope, System
from perfmodel.core.scenario import Phase
from perfmodel.core.workload import ModelArch
from perfmodel.model import bindings as bd
from perfmodel.model import feasibility
from perfmodel.serving import closed_loop, speculative
from perfmodel.serving.kv_capacity import kv_bytes_per_sequence, kv_fit
from perfmodel.serving.options import Mix, Mode, ServingOptions, Setup, setup  # noqa: F401 (re-exported)
from perfmodel.serving.steps import p2p_s, sweep  # noqa: F401 (re-exported)

ACTIVITY_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "memory", "comm")


def _dt(v) -> DType:
    return DType.parse(v) if isinstance(v, str) else DType(v)


def _types(values: np.ndarray, convert=_dt) -> np.ndarray:
    """convert(v) of every entry, each distinct value converted once (a grid repeats a few types)."""
    codes, distinct = bd.dtype_codes(values)
    return np.asarray([convert(d) for d in distinct] + [None], dtype=object)[:-1][codes]


def _names(dtypes: np.ndarray) -> np.ndarray:
    """Data-type names of a grid column (each distinct type looked up once)."""
    codes, distinct = bd.dtype_codes(dtypes)
    return np.asarray([_dt(d).value for d in distinct], dtype=object)[codes]


@dataclass(frozen=True)
class Grid:
    """Serving configurations as equal-length arrays, one entry per configuration.

    tp, da, ep, pp: replica plan (see scenario.Parallelism); concurrency: sequences in flight
    per replica; compute / weights / expert_weights / kv_cache: data types (DType objects); cp: context
    parallel ranks (a long sequence's prompt and KV cache split over cp groups of tp x da x pp chips).
    """

    tp: np.ndarray
    da: np.ndarray
    ep: np.ndarray
    pp: np.ndarray
    concurrency: np.ndarray
    compute: np.ndarray
    weights: np.ndarray
    expert_weights: np.ndarray
    kv_cache: np.ndarray
    cp: np.ndarray | None = None  # None: 1 everywhere

    def __post_init__(self):
        if self.cp is None:
            object.__setattr__(self, "cp", np.ones(len(self.tp)))

    @classmethod
    def of(cls, tp=1, da=1, ep=1, pp=1, concurrency=1, compute=DType.BF16, weights=None, expert_weights=None,
           kv_cache=None, cp=1) -> "Grid":
        """Broadcast scalars / arrays to one length; weights default to compute, experts to weights,
        KV cache to BF16 for 16-bit compute and FP8 otherwise."""
        num = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in
               dict(tp=tp, da=da, ep=ep, pp=pp, concurrency=concurrency, cp=cp).items()}
        comp = np.atleast_1d(np.asarray(compute, dtype=object))
        w = comp if weights is None else np.atleast_1d(np.asarray(weights, dtype=object))
        e = w if expert_weights is None else np.atleast_1d(np.asarray(expert_weights, dtype=object))
        if kv_cache is None:
            kv = _types(comp, lambda c: DType.BF16 if _dt(c) in (DType.BF16, DType.FP16, DType.FP32, DType.TF32)
                        else DType.FP8)
        else:
            kv = np.atleast_1d(np.asarray(kv_cache, dtype=object))
        arrs = list(num.values()) + [comp, w, e, kv]
        n = np.broadcast_shapes(*[a.shape for a in arrs])
        b = [np.broadcast_to(a, n).ravel() for a in arrs]
        conv = [_types(a) for a in b[6:]]
        g = cls(*b[:5], *conv, cp=b[5])
        g.validate()
        return g

    def __len__(self) -> int:
        return len(self.tp)

    def take(self, idx) -> "Grid":
        return Grid(*[getattr(self, f.name)[idx] for f in fields(self)])

    def validate(self) -> None:
        for f in ("tp", "da", "ep", "pp", "concurrency", "cp"):
            a = getattr(self, f)
            if np.any(~np.isfinite(a)) or np.any(a < 1) or np.any(a != np.round(a)):
                raise ValueError(f"grid field {f}: every entry must be a whole number >= 1")
        n = self.tp * self.da
        if np.any(n % self.ep):
            raise ValueError("grid field ep: expert parallel must divide tp x da in every configuration")

    @property
    def replica_chips(self) -> np.ndarray:
        return self.tp * self.da * self.pp * self.cp

    def knobs(self, phase: Phase, batch, seq_len, context, cp=None) -> bd.Knobs:
        return bd.Knobs(phase=phase, batch=batch, seq_len=seq_len, context=context, tp=self.tp, da=self.da,
                        ep=self.ep, pp=self.pp, cp=self.cp if cp is None else cp, weights=self.weights,
                        compute=self.compute, activations=DType.BF16, kv_cache=self.kv_cache,
                        expert_weights=self.expert_weights)

    def plan_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(first row of each distinct plan+dtype, inverse map row -> distinct plan), distinct plans
        in order of first appearance (hash-based: no sort of the rows)."""
        key, n_keys = np.zeros(len(self), dtype=np.int64), 1
        for f in ("tp", "da", "ep", "pp", "cp", "compute", "weights", "expert_weights", "kv_cache"):
            codes, uniq = pd.factorize(getattr(self, f))
            key, n_keys = key * len(uniq) + codes, n_keys * len(uniq)
        if n_keys > 2 ** 62:
            raise ValueError("plan_index: too many distinct plan fields")
        inverse = pd.factorize(key)[0]
        first = np.flatnonzero(np.diff(np.maximum.accumulate(inverse), prepend=-1) > 0)
        return first, inverse


def _busy(df: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {e: df[f"{e}_busy_s"].to_numpy() for e in ACTIVITY_ENGINES if e != "comm"}
    out["comm"] = df["comm_time_s"].to_numpy()
    return out


def _with_engine(prof, mode: Mode, ttft, t_d, t_f, tau, C, da, valid, reasons):
    """The engine's first token and cap (serving/closed_loop.py's formulas, at an idle queue: a prompt's
    prefill waits for nothing but the running step; its host time per step is already in the step, so in
    TPOT, the request rate and the stall): the first token after its steps to the client; a concurrency
    above its running cap is not what runs (that plan is refused)."""
    kappa = prof["first_token_steps_disagg" if mode == Mode.DISAGGREGATED else "first_token_steps"]
    if mode == Mode.CHUNKED:  # one chunk per step (TPOT has the host time), then the steps to the client
        ttft_e = ttft + kappa * (t_d + tau)
    else:  # aggregated: ttft = t_d/2 + L_f; disaggregated: ttft = L_f + KV hand-off
        gpu = ttft - (0.5 * t_d if mode == Mode.AGGREGATED else 0.0)
        ttft_e = closed_loop.evaluate("first_token", t_d=t_d, tau=tau, t_f=t_f, L_f=gpu, kappa=kappa, T_p=t_f)
    why = (f"engine: {prof.name} runs at most {prof['max_running']:g} sequences per attention-DP rank (max_running); "
           f"the rest would queue")
    return (ttft_e, *_refuse(C > prof["max_running"] * da, why, valid, reasons))


def _refuse(over, why: str, valid, reasons):
    """(valid, reasons) with the configurations in `over` refused and `why` added to their reasons."""
    r = np.broadcast_to(np.asarray(reasons, dtype=str), np.shape(over))
    joined = np.char.add(np.char.add(r, np.where(r == "", "", "; ")), why)
    return np.asarray(valid) & ~over, np.where(over, joined, r)


def _chunk_rate(C, O, n_chunks, da, valid, reasons):
    """Chunked prefill runs one chunk per attention-DP rank per step: (C / O) n chunks are needed per step."""
    why = "chunked prefill: prompts arrive faster than one chunk per step per attention-DP rank can prefill them"
    return _refuse((C / O) * n_chunks > da, why, valid, reasons)


def cp_combine_s(system: System, cal: Calibration, arch: ModelArch, grid: Grid, tokens_per_rank) -> np.ndarray:
    """Decode with context parallelism: each of the cp ranks holds 1 / cp of every sequence's KV cache and
    attends its query over that shard (the decode graph at context / cp, its other layers repeated on every cp
    rank); the partial outputs merge per attention layer, as flash-decoding merges its splits: an all-reduce
    of each query's partial output (H / t heads x d_h, BF16) and log-sum-exp (FP32) over the cp group.
    0 without context parallelism."""
    if not np.any(grid.cp > 1):
        return np.zeros(np.broadcast_shapes(np.shape(tokens_per_rank), grid.cp.shape))
    heads = arch.num_attention_heads / grid.tp
    nbytes = np.asarray(tokens_per_rank, dtype=float) * heads * (arch.head_dim * 2 + 4)
    t = collectives.collective_time(system, cal, Collective.ALL_REDUCE, nbytes, grid.cp,
                                    grid.tp * grid.da * grid.pp)
    return np.where(grid.cp > 1, arch.num_softmax_attention_layers * np.asarray(t, dtype=float), 0.0)


def handoff_bytes_per_s_per_chip(system: System) -> float:
    """A disaggregated KV hand-off takes the fastest tier joining two pools: scale-up, node, or (a one-chip
    instance) the scale-out network; bytes/s per chip of the receiving replica."""
    tier = next(t for t in map(system.tier, (Scope.SCALEUP, Scope.NODE, Scope.SCALEOUT)) if t is not None)
    return tier.bandwidth_bytes_per_s / (system.node.chips if tier.per_node else 1.0)


def serve(system: System, arch: ModelArch, grid: Grid, mix: Mix = Mix(), options: ServingOptions = ServingOptions(),
          cal: Calibration | None = None) -> pd.DataFrame:
    """Steady-state serving metrics for every configuration of `grid` (see module doc).

    Returns one row per configuration: plan, data types, ttft_s, time_per_output_token_s,
    tokens_per_s_per_user, e2e_latency_s, stall_s, output_tokens_per_s_per_{replica,chip,node,
    scaleup}, concurrency_per_scaleup, kv fit and max concurrency, and activity_<engine>_frac.
    Raises ValueError on a configuration the hardware cannot run (unsupported data type) or on
    non-finite results.
    """
    mix.validate()
    options.validate()
    if arch.encoder_only:
        raise ValueError(f"{arch.name} is an encoder-only model: it has no decode phase to serve")
    su = setup(system, options, cal)
    cal, stack, prof, knobs = su.cal, su.stack, su.profile, su.knobs
    mode = Mode(options.mode)
    I, O = float(mix.input_tokens), float(mix.output_tokens)
    C, p, da = grid.concurrency, grid.pp, grid.da
    if np.any(C % p) or np.any(C < da):
        raise ValueError("grid field concurrency: must be a multiple of pp and at least da in every configuration "
                         "(p micro-batches of C/p sequences, >= 1 sequence per attention-DP rank)")
    # ---- decode: one sweep over the whole grid
    spans_all = stack is not None and stack["decode_spans_compiled_length"]  # the block table over the whole length
    ctx_d = I + O if spans_all else I + O // 2
    spec = options.speculative
    if spec is None:
        dec, E = sweep(system, arch, knobs(grid, Phase.DECODE, C / p, 1, ctx_d / grid.cp, cp=1), cal), 1.0
    else:  # verify k + 1 tokens and k draft steps per step, E tokens emitted per sequence per step
        dec, E = speculative.step_frame(system, arch, grid, su, C / p, ctx_d / grid.cp, spec)
    t_d = dec["step_time_s"].to_numpy() + p2p_s(system, cal, grid, C / p / da, arch.hidden_size) \
        + cp_combine_s(system, cal, arch, grid, C / p / da)
    busy_d = _busy(dec)
    # ---- prefill: one sweep over the distinct plans
    first, inv = grid.plan_index()
    g1 = grid.take(first)
    h = float(options.prefix_tokens)  # a cached shared prefix: prefilled once, read by every request
    if h >= I:
        raise ValueError(f"serving option prefix_tokens: {options.prefix_tokens} must be below the input length "
                         f"({mix.input_tokens}): the request's own tokens are prefilled")
    pad = lambda n: np.ceil(n / g1.cp) * g1.cp  # noqa: E731  a context-parallel prefill pads to whole shards
    if mode == Mode.CHUNKED:
        k = float(min(options.chunk_tokens, I - h))
        n_chunks = float(np.ceil((I - h) / k))
        pre = sweep(system, arch, knobs(g1, Phase.PREFILL, g1.da, pad(k), h + (n_chunks - 1) * k / 2), cal)
    else:
        k, n_chunks = I - h, 1.0
        pre = sweep(system, arch, knobs(g1, Phase.PREFILL, g1.da, pad(I - h), h), cal)
    t_f = (pre["step_time_s"].to_numpy() + p2p_s(system, cal, g1, k, arch.hidden_size))[inv]
    busy_f = {e: v[inv] for e, v in _busy(pre).items()}
    occ_f = n_chunks * t_f / da  # prefill stage-time per request
    lat_f = p * t_f  # one chunk (or the whole prefill) through all stages
    # ---- combine
    host = su.host_time(C, da)  # an engine's (or a stack's) host time joins every step, growing with the batch
    step = p * t_d + host
    chips = grid.replica_chips
    if mode == Mode.DISAGGREGATED:
        tpot = cycle = step / E
        codes, kv_types = bd.dtype_codes(grid.kv_cache)  # each distinct KV type priced once
        kv_req = np.asarray([float(kv_bytes_per_sequence(arch, I - h, _dt(d))) for d in kv_types])[codes]
        ttft = lat_f + kv_req / (chips * handoff_bytes_per_s_per_chip(system))
        rate = C / (O * tpot)  # requests/s per decode replica
        prefill_share = rate * occ_f  # prefill replicas per decode replica
        chips_eff = chips * (1 + prefill_share)
        stall = step
        w_dec, w_pre = 1.0 / (1 + prefill_share), prefill_share / (1 + prefill_share)
        act = {e: w_dec * p * busy_d[e] / step + w_pre * busy_f[e] / t_f for e in ACTIVITY_ENGINES}
    else:
        cycle = step / E + (C / O) * occ_f
        tpot = step / E + ((C - 1) / O) * occ_f
        ttft = (0.5 * tpot + n_chunks * (step + t_f) + (p - 1) * t_f) if mode == Mode.CHUNKED else 0.5 * t_d + lat_f
        chips_eff = chips.astype(float)
        prefill_share = np.zeros(len(grid))
        stall = step + t_f
        act = {e: (p * busy_d[e] / E + (C / O) * n_chunks * busy_f[e] / da) / cycle for e in ACTIVITY_ENGINES}
    act = {e: np.clip(v, 0.0, 1.0) for e, v in act.items()}
    ctx = (I + O if options.kv_reserve == "peak" else I + O / 2) - h  # the prefix's blocks are shared
    fits, used, cmax = kv_fit(system, arch, grid, ctx, cal, prof["kv_memory_fraction"] if prof else None)
    valid, reasons = feasibility.check_rules(system, arch, grid.knobs(Phase.DECODE, C, 1, np.maximum(ctx - 1, 0)))
    if mode == Mode.CHUNKED:
        valid, reasons = _chunk_rate(C, O, n_chunks, da, valid, reasons)
    if prof:
        ttft, valid, reasons = _with_engine(prof, mode, ttft, t_d, t_f, host, C, da, valid, reasons)
    per_replica = C / cycle
    per_chip = per_replica / chips_eff
    # whole replicas per scale-up domain; a disaggregated unit larger than the domain (decode replica plus
    # its prefill share) counts fractionally: a fleet average over several domains
    dom = system.scaleup_chips
    replicas = np.where(chips_eff <= dom, np.floor(dom / chips_eff), dom / chips_eff)
    out = pd.DataFrame({
        "system": system.name, "workload": arch.name, "mode": mode.value, "mix": mix.label,
        "engine": options.engine or "none",
        "input_tokens": int(I), "output_tokens": int(O),
        "tp": grid.tp, "da": grid.da, "ep": grid.ep, "pp": grid.pp, "cp": grid.cp, "concurrency": C,
        "compute_dtype": _names(grid.compute), "weights_dtype": _names(grid.weights),
        "expert_weights_dtype": _names(grid.expert_weights), "kv_dtype": _names(grid.kv_cache),
        "replica_chips": chips.astype(float), "prefill_chips_per_replica": chips * prefill_share,
        "replicas_per_scaleup": replicas,
        "ttft_s": ttft, "time_per_output_token_s": tpot, "tokens_per_s_per_user": 1.0 / tpot,
        "e2e_latency_s": ttft + (O - 1) * tpot, "stall_s": stall,
        "decode_step_s": t_d, "prefill_step_s": t_f,
        "output_tokens_per_s_per_replica": per_replica, "output_tokens_per_s_per_chip": per_chip,
        "output_tokens_per_s_per_node": per_chip * system.node.chips,
        "output_tokens_per_s_per_scaleup": per_replica * replicas,
        "concurrency_per_scaleup": C * replicas,
        "chips_used_per_scaleup": replicas * chips_eff,
        "valid": np.broadcast_to(valid, C.shape), "invalid_reason": np.broadcast_to(reasons, C.shape),
        "kv_fits": fits, "hbm_used_bytes": used, "hbm_capacity_bytes": system.chip.hbm_capacity_bytes,
        "max_concurrency_kv": cmax,
    })
    for e in ACTIVITY_ENGINES:
        out[f"activity_{e}_frac"] = act[e]
    num = out.select_dtypes(include=[np.number]).drop(columns=["max_concurrency_kv"])
    bad = ~np.isfinite(num.to_numpy(dtype=float))
    if bad.any():
        cols = sorted({num.columns[j] for j in np.nonzero(bad)[1]})
        raise ValueError(f"{system.name} / {arch.name}: non-finite serving results in {', '.join(cols)}")
    return out


def serve_one(system: System, arch: ModelArch, *, tp=1, da=1, ep=1, pp=1, concurrency=1, compute=DType.BF16,
              weights=None, expert_weights=None, kv_cache=None, mix: Mix = Mix(),
              options: ServingOptions = ServingOptions(), cal: Calibration | None = None) -> pd.Series:
    """One configuration's serving metrics (a row of `serve`)."""
    g = Grid.of(tp=tp, da=da, ep=ep, pp=pp, concurrency=concurrency, compute=compute, weights=weights,
                expert_weights=expert_weights, kv_cache=kv_cache)
    if len(g) != 1:
        raise ValueError("serve_one takes scalars; use serve(Grid.of(...)) for sweeps")
    return serve(system, arch, g, mix, options, cal).iloc[0]
