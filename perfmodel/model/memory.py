"""Memory footprint per device: weights, gradients, optimizer state, activations, KV cache.

Per device (one pipeline stage; SI bytes; letters as in symbols.py):

    weights      = P_dev b_w / (n if ZeRO-3)           P_dev: parameters on the device (graph); n: the ranks
                   + c_8 b_q P_q                       holding a copy (dense dp d_a c, routed experts dp c);
                                                       an 8-bit recipe's quantized copies of its linears' P_q
    gradients    = P_tr b_g / (n if ZeRO>=2)           training only; P_tr the trained parameters (LoRA: the
    master+optim = P_tr (b_master + b_opt) / (n if ZeRO>=1)   adapters alone, the base weights frozen)
    activations  = m_f (L/p - o + min(o, 1)) N a_tok     training: N tokens per micro-batch per
                   device, a_tok bytes saved per token per layer, m_f micro-batches in flight
                   (1F1B: p on the first stage; GPipe: all); recompute keeps only layer inputs;
                   o layers' activations offloaded to host memory (one layer's staged in HBM while it moves)
    host         = m_f o N a_tok                        the offloaded activations, in host memory: at most
                   the node's host memory per chip (fits)
    scores       = m_f (L/p) B (H/t) T^2 2 b_a          only if attention is materialised (no flash)
    kv_cache     = (B/d_a) sum_layers min(W, C_0 + T)/c  x  per-token KV bytes
                   GQA: 2 max(K/t,1) d_h b_kv;  MLA: (r_kv + d_rope) b_kv (+ d_ix b_ix index keys
                   with DeepSeek Sparse Attention); Gated DeltaNet layers hold no keys but a fixed
                   state per sequence, counted here too (the per-sequence cache):
                 + (B/d_a) L_lin [H_v/t d_k d_v b_s + (2 H_k d_k + H_v d_v)/t (K_c - 1) b_a]
    reserved     = runtime reserve (calibration `runtime_reserved_memory`)

a_tok (bytes, activations in b_a; Korthikanti et al. 2022 style, no dropout masks; activation_memory.py):
    b_a [2D (norm inputs) + D (QKV input) + (H+2K)d_h/t (Q,K,V) + H d_h/t (attn out)
         + D (MLP input) + 3F/t (gate, up, act)]  (+ MoE: k (D + 3 F_e) u / ep per token)
    Gated DeltaNet layers keep, in place of Q, K, V and the attention output, the in_proj output
    (2 H_k d_k + 2 H_v d_v + 2 H_v)/t, the conv output (2 H_k d_k + H_v d_v)/t and the core and
    gated-norm outputs 2 H_v d_v / t; the layer mix weights the two kinds.

Does not: evaluate time.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field

import numpy as np

from perfmodel.core.attention_variants import linear_qkv_channels
from perfmodel.core.calibration import Calibration, of as calibration_of
from perfmodel.core.dtypes import DType, bytes_per_element
from perfmodel.core.hardware import System
from perfmodel.core.object_cache import ObjectCache
from perfmodel.core.scenario import Optimizer, Phase, Recompute, Scenario
from perfmodel.core.symbols import t as t_sym
from perfmodel.core.workload import AttentionKind, ModelArch
from perfmodel.model import attention_variant_formulas as av
from perfmodel.model import bindings as bd
from perfmodel.model.graph import build as gr
from perfmodel.model import numeric, ops
from perfmodel.model.graph import cache as graph_cache
from perfmodel.model.activation_memory import (  # noqa: F401  (a_tok: the footprint's activations, re-exported)
    activation_bytes_per_token_layer,
    saved_bytes_per_layer,
    selective_op_bytes_per_token_layer,
)

COMPONENTS = ("weights", "gradients", "master_weights", "optimizer_state", "activations", "attention_scores",
              "kv_cache", "reserved")


@dataclass(frozen=True)
class Footprint:
    """Bytes per device by component (arrays over a sweep or scalars), capacity and fit."""

    components: dict[str, np.ndarray]
    capacity_bytes: float
    params_per_device: np.ndarray
    notes: tuple[str, ...] = field(default_factory=tuple)
    host_bytes: np.ndarray | float = 0.0  # activations offloaded to host memory (not in components: not HBM)
    host_capacity_bytes: float | None = None  # the node's host memory per chip (None: not in its spec)

    @property
    def total_bytes(self) -> np.ndarray:
        return sum(self.components.values())

    @property
    def host_fits(self) -> np.ndarray:
        """Offloaded activations within the host memory per chip (nothing offloaded always fits)."""
        host = np.asarray(self.host_bytes, dtype=float)
        return (host <= 0) | (host <= (np.inf if self.host_capacity_bytes is None else self.host_capacity_bytes))

    @property
    def fits(self) -> np.ndarray:
        return (self.total_bytes <= self.capacity_bytes) & self.host_fits

    @property
    def headroom_bytes(self) -> np.ndarray:
        return self.capacity_bytes - self.total_bytes


@functools.lru_cache(maxsize=256)
def _params_fn(key: ops.GraphKey, phase: Phase, experts: bool | None, quantized: bool = False, lora: bool = False):
    """(symbols, numpy function, is zero) of the per-device parameter count of a graph structure (cached in the
    process and on disk: graph_cache; built one at a time: graph_cache.BUILD)."""
    with graph_cache.BUILD:
        return _build_params_fn(key, phase, experts, quantized, lora)


def _build_params_fn(key: ops.GraphKey, phase: Phase, experts: bool | None, quantized: bool, lora: bool):
    parts = ("parameters", repr(key), Phase(phase).value, repr(experts)) + (("quantized",) if quantized else ()) \
        + (("lora",) if lora else ())
    hit = graph_cache.load(parts)
    if hit is not None and isinstance(hit[2], bool):
        source, syms, zero = hit
        return syms, graph_cache.function(source, numeric.namespace()), zero
    expr = gr.parameter_expression(gr.build_graph(key, phase), experts, quantized, lora)
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    fn = numeric.lambdify_numeric(syms, expr)
    graph_cache.store(parts, inspect.getsource(fn), tuple(syms), bool(expr == 0))
    return tuple(syms), fn, bool(expr == 0)


def params_per_device(arch: ModelArch, kn: bd.Knobs, phase: Phase = Phase.PREFILL,
                      experts: bool | None = None, quantized: bool = False, lora: bool = False) -> np.ndarray:
    """Parameters on one device, from the operator graph (sharded by t, ep, d_a and p);
    experts=True / False selects routed-expert / other parameters; quantized: only the linear layers a
    low-precision training recipe quantizes (graph.training.quantized_linear); lora: the LoRA adapters of a
    training graph at kn.lora_rank (0 without LoRA), otherwise the model's own weights."""
    phase = Phase(phase)
    phase = Phase.PREFILL if phase == Phase.DECODE else phase
    if lora and phase != Phase.TRAIN:
        return np.zeros(())
    degrees = (kn.tp, kn.pp, kn.ep, kn.da) + ((kn.lora_rank,) if lora else ())
    if all(getattr(x, "ndim", 0) == 0 for x in degrees):  # one configuration (a loop of them): once per plan
        return _PARAMS.get((arch,), (phase, experts, quantized, lora) + tuple(map(float, degrees)),
                           lambda: _params_per_device(arch, kn, phase, experts, quantized, lora))
    return _params_per_device(arch, kn, phase, experts, quantized, lora)


# params_per_device of one plan; 1024 plans (tp x pp x ep x da per model) are more than a loop visits
_PARAMS = ObjectCache(1024)


def _params_per_device(arch: ModelArch, kn: bd.Knobs, phase: Phase, experts: bool | None,
                       quantized: bool = False, lora: bool = False) -> np.ndarray:
    syms, fn, zero = _params_fn(ops.GraphKey.of(arch), phase, experts, quantized, lora)
    shape = np.broadcast_shapes(np.shape(kn.tp), np.shape(kn.pp), np.shape(kn.ep), np.shape(kn.da),
                                np.shape(kn.lora_rank) if lora else ())
    if zero:
        return np.zeros(shape)
    vals = bd.model_values(arch, kn.pp)
    vals.update({t_sym: np.asarray(kn.tp, dtype=float), ops.da: np.asarray(kn.da, dtype=float),
                 bd.S.ep: np.asarray(kn.ep, dtype=float)})
    # the routed-expert instance count uses the touched fraction; parameters do not depend on it
    vals.update({bd.S.B: 1.0, bd.S.T: 1.0, bd.S.cp: 1.0, bd.S.u: 1.0})
    rank = np.asarray(kn.lora_rank, dtype=float)  # the adapters' rank and presence (lora=True only)
    vals.update({ops.r_lo: rank, ops.i_fr: np.where(rank > 0, 1.0, 0.0)})
    return np.broadcast_to(np.asarray(fn(*[vals[s] for s in syms]), dtype=float), shape)


def kv_bytes_per_token_layer(arch: ModelArch, tp, bkv: float, head_shards=0) -> np.ndarray:
    """KV-cache bytes per token per layer on one device (a softmax-attention layer: Gated DeltaNet layers
    hold no per-token cache). MLA's latent (and a sparse-attention indexer's keys) sit whole on every
    tensor-parallel rank. head_shards n > 0: KV heads as sharded whole over n ranks (bindings.sharded_heads:
    replicated so that every rank holds one), spread over the tp devices."""
    if arch.attention == AttentionKind.MLA:
        index_keys = arch.index_head_dim * av.INDEX_KEY_BYTES if arch.sparse_attention else 0.0
        per_token = (arch.kv_lora_rank + arch.qk_rope_head_dim) * bkv + index_keys
        if isinstance(tp, (int, float)) and isinstance(per_token, (int, float)):  # one plan's
            return float(per_token)
        return np.asarray(per_token, dtype=float) * np.ones_like(np.asarray(tp, dtype=float))
    tp = tp if isinstance(tp, float) else np.asarray(tp, dtype=float)  # a Python float: one plan's (footprint)
    kv_dev = bd.maximum(arch.num_key_value_heads / tp, 1.0)
    n = head_shards if isinstance(head_shards, (int, float)) else np.asarray(head_shards, dtype=float)
    if bd.any_true(n > 0):
        kv = bd.heads_sharded(arch.num_attention_heads, arch.num_key_value_heads, n)[1]
        kv_dev = bd.where(n > 0, kv / tp, kv_dev)
    return 2 * kv_dev * arch.head_dim * bkv


def kv_tokens_per_sequence(arch: ModelArch, length) -> np.ndarray:
    """sum over layers of keys held: full layers hold `length`, sliding layers min(W, length), Gated
    DeltaNet layers none (recurrent_state_bytes_per_sequence holds their fixed state)."""
    length = length if isinstance(length, float) else np.asarray(length, dtype=float)
    n_sw = arch.num_sliding_layers
    n_full = arch.num_hidden_layers - n_sw - arch.num_linear_layers
    held = n_full * length
    if n_sw:
        held = held + n_sw * np.minimum(arch.sliding_window, length)
    return held


def recurrent_state_bytes_per_sequence(arch: ModelArch, tp, ba: float) -> np.ndarray:
    """Bytes one sequence keeps on one device across its Gated DeltaNet layers, whatever its length:
    L_lin [H_v/t d_k d_v b_s (the delta-rule state, in linear_state_dtype) + (2 H_k d_k + H_v d_v)/t
    (K_c - 1) b_a (the causal conv's last K_c - 1 inputs)]. 0 for a model without such layers."""
    t = np.asarray(tp, dtype=float)
    a = arch
    if not a.num_linear_layers:
        return np.zeros_like(t)
    state = a.linear_num_value_heads * a.linear_key_head_dim * a.linear_value_head_dim \
        * bytes_per_element(a.linear_state_dtype)
    conv = linear_qkv_channels(a) * (a.linear_conv_kernel_dim - 1) * ba
    return a.num_linear_layers * (state + conv) / t


def cache_bytes_per_sequence(arch: ModelArch, length, tp, bkv: float, ba: float) -> np.ndarray:
    """Whole-model cache of one sequence of `length` tokens on one device: KV (and index keys) of the
    softmax-attention layers plus the fixed state of the Gated DeltaNet layers."""
    return kv_tokens_per_sequence(arch, length) * kv_bytes_per_token_layer(arch, tp, bkv) \
        + recurrent_state_bytes_per_sequence(arch, tp, ba)


def footprint(system: System, arch: ModelArch, kn: bd.Knobs, cal: Calibration | None = None,
              recompute: Recompute = Recompute.NONE, flash_attention: bool = True,
              sequence_parallel: bool = False) -> Footprint:
    """Per-device memory for the configuration(s) in `kn` (fields may be arrays)."""
    kn = bd.on_system(system, kn)
    cal = cal or calibration_of(system)
    phase = Phase(kn.phase)
    one = bd.one_plan(kn)
    f = bd.num if one else bd._arr  # one plan's numbers as Python floats (scenario_knobs.num), a sweep's as arrays
    P_dev = params_per_device(arch, kn, phase)
    P_exp = params_per_device(arch, kn, phase, experts=True) if arch.is_moe else 0.0
    if one and P_dev.ndim == 0:  # one plan's counts as Python floats (kept as 0-d arrays: params_per_device)
        P_dev, P_exp = float(P_dev), float(P_exp)
    bw = bd._dtype_map(kn.weights, bytes_per_element)
    bwe = bd._dtype_map(kn.weights if kn.expert_weights is None else kn.expert_weights, bytes_per_element)
    ba = bd._dtype_map(kn.activations, bytes_per_element)
    ba = ba if isinstance(ba, float) else float(np.max(ba))  # a sweep's widest
    bkv = bd._dtype_map(kn.kv_cache, bytes_per_element)
    zero, dp = f(kn.zero), f(kn.dp)
    comp: dict[str, np.ndarray] = {c: 0.0 if one else np.zeros(1) for c in COMPONENTS}
    comp["weights"] = ((P_dev - P_exp) * bw + P_exp * bwe) / bd.where(zero >= 3, dp, 1.0)
    notes, host = [], np.zeros(1)
    B, T, C0 = f(kn.batch), f(kn.seq_len), f(kn.context)
    tp, da, cp, pp, ep = f(kn.tp), f(kn.da), f(kn.cp), f(kn.pp), f(kn.ep)
    if phase == Phase.TRAIN:
        layers_stage = np.ceil(arch.num_hidden_layers / pp)  # the heaviest stage (bindings.stage_stretch)
        opt = Optimizer(kn.optimizer).bytes_per_param

        # LoRA: the base weights frozen (no gradients, master copies or optimizer state), the adapters trained
        P_lora = params_per_device(arch, kn, phase, lora=True) if np.any(f(kn.lora_rank) > 0) else 0.0
        tw = np.where(f(kn.lora_rank) > 0, 0.0, 1.0)

        def sharded(nbytes, stage, trained=True):  # per-parameter bytes, ZeRO-sharded from `stage` on over every
            # rank that holds a copy: dense parameters over dp x da x cp (attention-DP and context-parallel ranks
            # hold them), experts over dp x cp; trained: the parameters that have gradients and optimizer state
            w = tw if trained else 1.0
            dense, experts = (w * (P_dev - P_exp) + P_lora) * nbytes, w * P_exp * nbytes
            return dense / np.where(zero >= stage, kn.dense_dp, 1.0) + experts / np.where(zero >= stage, kn.expert_dp,
                                                                                          1.0)

        comp["weights"] = sharded(opt["weights"], 3, trained=False) + low_precision_weight_bytes(arch, kn, cal)
        comp["gradients"] = sharded(opt["gradients"], 2)
        comp["master_weights"] = sharded(opt["master"], 1)
        comp["optimizer_state"] = sharded(opt["optimizer"], 1)
        if np.any(P_lora > 0):
            notes.append("LoRA: the base weights frozen (no gradients or optimizer state), the adapters trained; "
                         "the frozen MLP and expert layers keep no inputs (their backward is the dgrad alone)")
        in_flight = np.minimum(pp, f(kn.microbatches))  # 1F1B: first stage holds p micro-batches
        tokens, a_tok, note = saved_bytes_per_layer(arch, kn, cal, recompute, sequence_parallel)
        notes += [note] if note else []
        off = np.minimum(f(kn.offload_layers), layers_stage)
        comp["activations"] = in_flight * (layers_stage - off + np.minimum(off, 1.0)) * tokens * a_tok
        host = in_flight * off * tokens * a_tok
        if np.any(off > 0):
            notes.append("offloaded layers' activations held in host memory, one layer's staged in HBM")
        if not flash_attention and Recompute(recompute) == Recompute.NONE:
            heads = arch.num_attention_heads / tp
            comp["attention_scores"] = in_flight * layers_stage * (B / da) * heads * (T / cp) * T * 2 * ba
            notes.append("attention scores and probabilities materialised (no flash attention)")
    else:
        length = C0 + (1 if phase == Phase.DECODE else T)
        per_token = _per_plan(one, arch, ("kv", tp, bkv, kn.head_shards),
                              lambda: kv_bytes_per_token_layer(arch, tp, bkv, kn.head_shards))
        comp["kv_cache"] = (B / da) * kv_tokens_per_sequence(arch, length) / cp / pp * bd.stage_stretch(arch, pp) \
            * per_token
        if arch.num_linear_layers:  # each sequence's fixed recurrent state (not split over context ranks)
            comp["kv_cache"] = comp["kv_cache"] + (B / da) / pp * bd.stage_stretch(arch, pp) \
                * recurrent_state_bytes_per_sequence(arch, tp, ba)
        if arch.encoder_only:
            comp["kv_cache"] = 0.0 if one else np.zeros(1)
        # transient working set: one layer's activations for the tokens of this step
        tokens = B * (1 if phase == Phase.DECODE else T) / (da * cp)
        comp["activations"] = tokens * _per_plan(one, arch, ("activations", tp, ep, ba),
                                                 lambda: activation_bytes_per_token_layer(arch, tp, ep, ba, 1.0))
    comp["reserved"] = np.asarray(cal["runtime_reserved_memory"], dtype=float)
    if one and all(getattr(v, "ndim", 0) == 0 for v in (P_dev, *comp.values())):  # one configuration: each
        # component a one-value array, as a sweep of one gives (views of one array: a single numpy call)
        shape, table = (1,), np.array([float(v) for v in comp.values()])
        comp = {k: table[i:i + 1] for i, k in enumerate(comp)}
    else:
        shape = np.broadcast_shapes(*[np.shape(v) for v in comp.values()], np.shape(P_dev))
        single = int(np.prod(shape)) == 1  # a one-value array takes the shape as a view (no broadcast)
        comp = {k: a if a.shape == shape else a.reshape(shape) if single else np.broadcast_to(a, shape)
                for k, a in ((k, np.asarray(v, dtype=float)) for k, v in comp.items())}
    node = system.node
    return Footprint(components=comp, capacity_bytes=system.chip.hbm_capacity_bytes,
                     params_per_device=np.asarray(P_dev).reshape(shape) if np.size(P_dev) == 1 and shape == (1,)
                     else np.broadcast_to(P_dev, shape), notes=tuple(notes), host_bytes=host,
                     host_capacity_bytes=node.host_memory_bytes / node.chips if node.host_memory_bytes else None)


# one plan's bytes per token per layer (KV cache, activations) by model and plan: a loop's plans repeat
_PER_TOKEN = ObjectCache(1024)


def _per_plan(one: bool, arch: ModelArch, key: tuple, make):
    """make() once per model and plan where the plan is one configuration's (the key's values Python numbers), else
    every time."""
    if one and all(isinstance(x, (int, float, str)) for x in key):
        return _PER_TOKEN.get((arch,), key, make)
    return make()


def low_precision_weight_bytes(arch: ModelArch, kn: bd.Knobs, cal: Calibration) -> np.ndarray:
    """Training with GEMMs at 8 bits or fewer: the recipe's quantized copies of the weights it runs at that type,
    c_8 per weight at b_q (row-wise and, where the GEMM needs it, transposed: calibration
    low_precision_training_copies / microscaled_training_copies), kept for the step's micro-batches (Transformer
    Engine caches them from the first micro-batch); under ZeRO-3 / FSDP only the gathered layers' exist, counted
    as the shard. 0 for a recipe at 16 bits."""
    from perfmodel.core.dtypes import is_microscaled, payload_bits

    if Phase(kn.phase) != Phase.TRAIN:
        return np.zeros(())
    # per configuration (a sweep may vary the compute type): copies x bytes of the 8-bit-or-narrower types, else 0
    per = bd._dtype_map(kn.compute, lambda d: 0.0 if payload_bits(d) > 8 else bytes_per_element(d) * (
        cal["microscaled_training_copies"] if is_microscaled(d) else cal["low_precision_training_copies"]))
    if not np.any(per > 0):
        return np.zeros(())
    z3 = np.asarray(kn.zero, dtype=float) >= 3  # ZeRO-3: each set of weights sharded over the ranks holding it
    dense = params_per_device(arch, kn, Phase.TRAIN, experts=False, quantized=True) / np.where(z3, kn.dense_dp, 1.0)
    experts = params_per_device(arch, kn, Phase.TRAIN, experts=True, quantized=True) / np.where(z3, kn.expert_dp, 1.0)
    return (dense + experts) * per


def footprint_for(system: System, arch: ModelArch, scenario: Scenario, cal: Calibration | None = None) -> Footprint:
    """The footprint of one scenario (its attention kernels decide whether scores are stored for the backward)."""
    return footprint(system, arch, bd.Knobs.of(scenario), cal, scenario.recompute, scenario.flash_attention,
                     scenario.parallel.sequence_parallel)


def training_state_bytes(arch_params: float, optimizer: Optimizer) -> float:
    """Whole-model training state: parameters x (weights + gradients + master + optimizer) bytes."""
    return arch_params * sum(Optimizer(optimizer).bytes_per_param.values())


def weight_bytes(arch_params: float, dtype: DType) -> float:
    return arch_params * bytes_per_element(dtype)
