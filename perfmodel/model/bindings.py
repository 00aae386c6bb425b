"""Bind numbers to formula symbols: model sizes, scenario fields, hardware rates, assumptions.

Every scenario field may be a scalar or a numpy array (one entry per configuration);
values broadcast, so one call binds a whole sweep. Data types map to bytes per element
and to the tensor-engine rate of the chip for that type.

Does not: evaluate formulas (evaluate.py) or read files.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd

from perfmodel.core import symbols as S
from perfmodel.core.calibration import Calibration
from perfmodel.core.dtypes import DType, bytes_per_element, is_microscaled, payload_bits
from perfmodel.core.elementwise import any_true
from perfmodel.core.hardware import System
from perfmodel.core.object_cache import ObjectCache
from perfmodel.core.scenario import Optimizer, Phase, Scenario
from perfmodel.core.workload import ModelArch
from perfmodel.model import attention_variant_formulas as av
from perfmodel.model import formulas as fm
from perfmodel.model import moe_kernels, ops
from perfmodel.model import roofline as rl
from perfmodel.model.scenario_knobs import Knobs, _arr, ceil, flag, maximum, minimum, num, one_plan, where  # noqa: F401


def on_system(system: System, kn: Knobs) -> Knobs:
    """`kn` with the runtime ranks it leaves open (None) set for `system`: a Neuron runtime runs one rank per
    logical NeuronCore (chip.logical_cores = cores / LNC: 4 on Trainium2 / Trainium3, 2 on Trainium1) and
    shards the attention heads whole over the t r ranks of a TP group (NxD Inference's GQA replication);
    other systems, and training (whose plans count chips: the seed's Trainium1 runs spread data parallelism
    over the cores), run one rank per chip with heads split as the model defines them."""
    if kn.ranks_per_chip is not None and kn.head_shards is not None:
        return kn
    r, h = _runtime_ranks(system, kn.phase, kn.tp, kn.ranks_per_chip, kn.head_shards)
    return dataclasses.replace(kn, ranks_per_chip=r, head_shards=h)


def _runtime_ranks(system: System, phase, tp, ranks_per_chip, head_shards) -> tuple:
    """on_system's (ranks per chip, head shards) where the knobs leave them open (None)."""
    neuron = system.chip.family.is_neuron and Phase(phase) != Phase.TRAIN
    r = (system.chip.logical_cores if neuron else 1) if ranks_per_chip is None else ranks_per_chip
    h = (num(tp) * r if neuron else 0) if head_shards is None else head_shards  # one plan's: a Python float
    return r, h


def knobs_on(system: System, s: Scenario) -> Knobs:
    """on_system(system, Knobs.of(s)), built once (one scenario at a time: a second record costs ~8 us)."""
    r, h = _runtime_ranks(system, s.phase, s.parallel.tp, None, None)
    return Knobs.of(s, ranks_per_chip=r, head_shards=h)


def _parse_dtype(v) -> DType:
    return v if isinstance(v, DType) else DType.parse(v) if isinstance(v, str) else DType(v)


def dtype_codes(values) -> tuple[np.ndarray, list]:
    """(codes, distinct values) of a data-type field: a scalar, a sequence or object array, or a
    pd.Categorical (a sweep's codes, no per-configuration hashing); values[i] = distinct[codes[i]]."""
    if isinstance(values, pd.Categorical):
        return np.asarray(values.codes), list(values.categories)
    arr = np.asarray(values, dtype=object)
    if arr.ndim == 0:
        return np.zeros((), dtype=np.intp), [arr.item()]
    codes, distinct = pd.factorize(arr.ravel(), use_na_sentinel=False)
    return codes.reshape(arr.shape), list(distinct)


def _dtype_map(values, fn) -> np.ndarray:
    """fn(DType) for every entry of a data-type field, called once per distinct type."""
    if isinstance(values, DType):  # one configuration's type: a Python float (scenario_knobs.num)
        return float(fn(values))
    if isinstance(values, str):
        return float(fn(_parse_dtype(values)))
    codes, distinct = dtype_codes(values)
    table = np.asarray([fn(_parse_dtype(v)) for v in distinct], dtype=float)
    return np.asarray(table[codes])


def tensor_rate(system: System, dtype) -> float:
    chip = system.chip
    d = DType.parse(dtype) if isinstance(dtype, str) else DType(dtype)
    if not chip.supports(d):
        have = ", ".join(x.value for x in chip.tensor.flop_per_s)
        raise ValueError(f"{system.name}: the {chip.display_name} tensor engine has no {d.value} rate "
                         f"(supported: {have})")
    return chip.tensor.rate(d)


ATTENTION_REFERENCE = (256.0, 16384.0)  # head dim, keys per query of attention_tensor_efficiency's measurement


def tensor_efficiency(cal: Calibration, d: DType) -> float:
    """Sustained fraction of the tensor rate of matmuls whose operands are of type `d`: 8-bit
    operands (fp8_tensor_efficiency) and 4- or 6-bit ones (fp4_tensor_efficiency) hide their loads and
    epilogue behind a faster MMA less well than 16-bit ones (tensor_efficiency) do."""
    bits = payload_bits(d)
    if bits <= 6:
        return cal["fp4_tensor_efficiency"]
    return cal["fp8_tensor_efficiency"] if bits <= 8 else cal["tensor_efficiency"]


def bf16_rate(system: System) -> float:
    rates = system.chip.tensor.flop_per_s
    for d in (DType.BF16, DType.FP16, DType.TF32, DType.FP32):
        if d in rates:
            return rates[d]
    raise ValueError(f"{system.name}: no 16-bit tensor rate")


def _sram(system: System) -> float:
    if not system.chip.sram_bytes:
        raise ValueError(f"{system.name}: the spec sheet gives no on-chip SRAM (memory.sram_total or sram_per_core)")
    return system.chip.sram_bytes


def stage_stretch(a: ModelArch, pp) -> np.ndarray:
    """Layers of the heaviest pipeline stage over the mean: ceil(L / p) / (L / p), 1 when p divides L.
    Runtimes split L layers unevenly over p stages (vLLM's and SGLang's layer partition, Megatron's
    first / last stage sizes); the slowest stage paces the pipeline, so a stage is priced with
    ceil(L / p) layers in the model's mix of layer kinds."""
    pp = num(pp)  # a Knobs' count below 1 is a numpy value (Knobs.__post_init__): its zero carries to NaN
    L = float(a.num_hidden_layers)
    return ceil(L / pp) / (L / pp)


def model_values(a: ModelArch, pp) -> dict:
    """Model symbols; features a model lacks get a harmless 1 (their ops are not in its graph).
    Layer counts are those of the heaviest pipeline stage (stage_stretch)."""
    one = lambda v: float(v) if v else 1.0  # noqa: E731
    L = a.num_hidden_layers
    per_stage = np.ceil(L / _arr(pp))  # n x ceil(L / p) / L: layers of each kind in the heaviest stage

    def stage(n):
        return n * per_stage / L

    return {
        S.D: float(a.hidden_size), S.H: float(a.num_attention_heads), S.KV: float(a.num_key_value_heads),
        S.dh: float(a.head_dim), S.F: one(a.intermediate_size), S.V: float(a.vocab_size),
        S.E: one(a.num_experts), S.k: one(a.num_experts_per_tok), S.Fe: one(a.moe_intermediate_size),
        S.Fs: one(a.num_shared_experts * (a.shared_expert_intermediate_size or a.moe_intermediate_size)),
        S.W: one(a.sliding_window), S.rq: one(a.q_lora_rank), S.rkv: one(a.kv_lora_rank),
        S.dn: one(a.qk_nope_head_dim), S.dr: one(a.qk_rope_head_dim), S.dv: one(a.v_head_dim),
        ops.P: float(a.max_position_embeddings), ops.TV: float(a.type_vocab_size),
        ops.Lfa: stage(L - a.num_sliding_layers - a.num_linear_layers), ops.Lsw: stage(a.num_sliding_layers),
        ops.Lla: stage(a.num_linear_layers), ops.Ld: stage(a.num_dense_layers), ops.Lm: stage(a.num_moe_layers),
        S.frot: float(a.partial_rotary_factor),
        S.Hlk: one(a.linear_num_key_heads), S.Hlv: one(a.linear_num_value_heads), S.dlk: one(a.linear_key_head_dim),
        S.dlv: one(a.linear_value_head_dim), S.Kc: one(a.linear_conv_kernel_dim),
        S.bs: bytes_per_element(a.linear_state_dtype), av.cg: float(av.GDN_CHUNK_TOKENS),
        S.Hix: one(a.index_n_heads), S.dix: one(a.index_head_dim), S.ktop: one(a.index_topk),
        S.bix: av.INDEX_KEY_BYTES,
    }


def hardware_values(system: System, cal: Calibration, compute) -> dict:
    chip = system.chip
    rt = _dtype_map(compute, lambda d: tensor_rate(system, d))
    rb = bf16_rate(system)
    lanes = np.maximum(1.0, np.round(rt / rb))  # elements of the compute type per BF16 element's time on a K lane
    vec_exp, sc_exp = chip.vector.exp_elems_per_s, chip.scalar.exp_elems_per_s
    if not sc_exp > 0:
        raise ValueError(f"{system.name}: the scalar engine needs an exp rate (activation functions)")
    return {
        S.Rt: rt, rl.Rb: rb, S.Rv: chip.vector.elems_per_s, S.Rs: chip.scalar.elems_per_s,
        rl.Rxv: vec_exp, rl.Rxs: sc_exp, rl.hv: 1.0 if vec_exp > 0 else 0.0,
        S.Rg: chip.gpsimd.elems_per_s if chip.gpsimd else chip.vector.elems_per_s,
        S.Bhbm: chip.hbm_bandwidth_bytes_per_s,
        S.Ssram: _sram(system),
        # micro-benchmarks' burst efficiency x the power-limited clock of sustained work (sustained_tensor_ratio)
        S.eta_t: _dtype_map(compute, lambda d: tensor_efficiency(cal, d)) * cal["sustained_tensor_ratio"],
        S.eta_m: cal["hbm_efficiency"],
        S.eta_v: cal["element_efficiency"],
        # faster data types pack a whole number of elements per contraction lane (FP8 2x, MX 4x)
        S.mt: cal["tile_m"], S.nt: cal["tile_n"], S.kt: cal["tile_k"] * lanes,
        S.kb: cal["tile_k"], S.t_ovh: cal["op_overhead"],
        # a GEMM's fixed cost per output tile, in steps of its K loop (BF16 elements; the same time is more
        # elements of a faster type)
        fm.k0: cal["gemm_tile_fixed_k"] * lanes,
        fm.p_av: cal["attention_vector_passes"], fm.p_sm: cal["materialised_softmax_vector_passes"],
        fm.x_tr: cal["attention_transpose_on_tensor"],
        fm.qb: cal["attention_query_block"],
        # attention kernels' tensor-core efficiency relative to GEMMs' (a family without the
        # parameter runs attention at the GEMM efficiency)
        fm.r_att: cal["attention_tensor_efficiency"] / cal["tensor_efficiency"],
        fm.r_abw: cal["attention_backward_relative_efficiency"],
        fm.k_d: cal["attention_head_dim_fixed"], fm.k_s: cal["attention_keys_fixed"],
        # attention_tensor_efficiency's shape (head dim, keys per query): FlashAttention-3's 740 TFLOP/s (FA-001)
        fm.g_ref: ATTENTION_REFERENCE[0] / (ATTENTION_REFERENCE[0] + cal["attention_head_dim_fixed"])
        * ATTENTION_REFERENCE[1] / (ATTENTION_REFERENCE[1] + cal["attention_keys_fixed"]),
        fm.e_x: cal["elementwise_traffic_factor"],
        fm.rho_mat: cal["materialised_attention_bandwidth_ratio"],
    }


def conversion_values(system: System, cal: Calibration, weights, compute) -> dict:
    """Quantize / dequantize passes: activations into the compute type, weights from storage type."""
    def q_act(d: DType) -> float:
        if d in (DType.FP8, DType.INT8):
            return cal["fp8_activation_quantize_passes"]
        if is_microscaled(d) or d in (DType.FP4, DType.INT4):
            return cal["mx_activation_quantize_passes"]
        return 0.0

    def q_weight(w: DType, c: DType) -> float:
        # The tensor engine multiplies operands of one type; only block-scaled (MX / NVFP4) formats
        # mix natively (MXFP4 x MXFP8 on Trainium3 and Blackwell). Anything else is dequantized.
        native_mix = is_microscaled(w) or w == DType.FP4
        native_mix = native_mix and (is_microscaled(c) or c == DType.FP4) and system.chip.supports(w)
        if w == c or native_mix:
            return 0.0
        if w == DType.INT8:  # per-channel int8 storage: a plain cast (a family without the parameter
            return cal.get("int8_weight_dequantize_passes", cal["weight_dequantize_passes"])  # dequantizes it)
        return cal["weight_dequantize_passes"]

    (wc, wu), (cc, cu) = dtype_codes(weights), dtype_codes(compute)
    table = np.asarray([[q_weight(_parse_dtype(w), _parse_dtype(c)) for c in cu] for w in wu], dtype=float)
    wc, cc = np.broadcast_arrays(wc, cc)  # one entry per (weights, compute) pair present
    qw = np.asarray(table[wc, cc])
    # a training recipe with GEMMs at 8 bits or fewer quantizes each linear layer's input and output gradient
    # (graph.training.low_precision_casts): f_8 = 1, c_8 copies per tensor
    return {fm.q_a: _dtype_map(compute, q_act), fm.q_w: qw,
            fm.f8: _dtype_map(compute, lambda d: 1.0 if payload_bits(d) <= 8 else 0.0),
            fm.c8: _dtype_map(compute, lambda d: cal["microscaled_training_copies"] if is_microscaled(d)
                              else cal["low_precision_training_copies"]),
            fm.r8: cal["low_precision_training_amax_reads"]}


def expert_values(system: System, cal: Calibration, kn: "Knobs") -> dict:
    """Bytes and dequantize passes for routed-expert weights (default: the weights' type)."""
    ew = kn.weights if kn.expert_weights is None else kn.expert_weights
    conv = conversion_values(system, cal, ew, kn.compute)
    return {S.bwe: _dtype_map(ew, bytes_per_element), fm.q_we: conv[fm.q_w]}


FP8_DISPATCH_BYTES = 1.0 + 4.0 / 128  # FP8 with one FP32 scale per 128 elements (DeepEP's dispatch layout)


def dispatch_bytes(kn: Knobs, cal: Calibration) -> np.ndarray:
    """Bytes per element of the activations an MoE dispatch sends: FP8 (with its scales) where the family's
    engines quantize before they send (moe_dispatch_fp8 = 1) and the experts compute in 8 bits or fewer
    (they would quantize on arrival anyway), else the activation type. The combine returns BF16 outputs."""
    ba = _dtype_map(kn.activations, bytes_per_element)
    low = _dtype_map(kn.compute, _eight_bits_or_fewer) > 0
    return where(low & (cal["moe_dispatch_fp8"] > 0), minimum(ba, FP8_DISPATCH_BYTES), ba)


def _eight_bits_or_fewer(d: DType) -> bool:
    return payload_bits(d) <= 8


def scenario_values(kn: Knobs, cal: Calibration) -> dict:
    """The symbols a scenario's knobs set. The optimizer, ZeRO, LoRA and micro-batch symbols are bound in training
    only: no inference graph has them (a graph missing a value says so: CompiledGraph.arguments)."""
    phase = Phase(kn.phase)
    T = num(1.0) if phase == Phase.DECODE else num(kn.seq_len)
    u = cal["moe_load_imbalance"] if kn.moe_imbalance is None else kn.moe_imbalance
    da, ep, cp, pp = num(kn.da), num(kn.ep), num(kn.cp), num(kn.pp)
    values = {
        S.B: num(kn.batch), S.T: T, S.C0: num(kn.context), S.t: num(kn.tp), ops.da: da,
        S.ep: ep, S.cp: cp, S.u: num(u),
        ops.i_a2a: where((da > 1) & (ep >= num(kn.tp) * da), 1.0, 0.0),
        ops.i_ag: where((da > 1) & (ep < num(kn.tp) * da), 1.0, 0.0), ops.bdp: dispatch_bytes(kn, cal),
        ops.i_ep: where(ep > 1, 1.0, 0.0),
        S.bw: _dtype_map(kn.weights, bytes_per_element), S.bc: _dtype_map(kn.compute, bytes_per_element),
        S.ba: _dtype_map(kn.activations, bytes_per_element), S.bkv: _dtype_map(kn.kv_cache, bytes_per_element),
        ops.i_pp: where(pp > 1, 1.0, 0.0), ops.i_cp: where(cp > 1, 1.0, 0.0),
        ops.vpp: num(kn.pp_virtual),
        ops.i_sp: where(flag(kn.sequence_parallel), 1.0, 0.0),
        ops.i_sg: float(cal["pp_scatter_gather"]),
        fm.i_mat: where(flag(kn.flash_attention), 0.0, 1.0),
    }
    if phase == Phase.TRAIN:
        values.update(training_values(kn))
    return values


def training_values(kn: Knobs) -> dict:
    """The training plan's symbols: micro-batches, data-parallel degree, ZeRO stage, LoRA rank, optimizer bytes."""
    opt = Optimizer(kn.optimizer).bytes_per_param
    zero, lora = num(kn.zero), num(kn.lora_rank)
    return {
        ops.nmb: num(kn.microbatches), ops.dp_: num(kn.dp),
        ops.zs: where(zero >= 1, kn.expert_dp, 1.0), ops.zsd: where(zero >= 1, kn.dense_dp, 1.0),
        ops.bg: float(opt["gradients"]),
        ops.r_lo: lora, ops.i_fr: where(lora > 0, 1.0, 0.0),
        ops.bo_r: float(opt["gradients"] + opt["master"] + opt["optimizer"] + (opt["weights"] if not opt["master"] else 0)),
        ops.bo_w: float(opt["master"] + opt["optimizer"] + opt["weights"]),
        ops.bwt: float(opt["weights"]),
        ops.i_z0: where(zero == 0, 1.0, 0.0), ops.i_z1: where(zero == 1, 1.0, 0.0),
        ops.i_z2: where(zero == 2, 1.0, 0.0), ops.i_z3: where(zero == 3, 1.0, 0.0),
    }


def sharded_heads(H, KV, shards) -> tuple[np.ndarray, np.ndarray]:
    """(query heads, KV heads) after sharding whole heads over `shards` ranks, as Transformers
    NeuronX does (utils.get_qkv_padding, GQA.REPLICATED_HEADS, the fallback whenever KV % ranks != 0):
      H_p  = n ceil(H / n)                      zero-padded query heads (every rank holds H_p / n)
      MHA (KV = H):  KV_p = H_p
      GQA: KV_p = KV r,  r = n / KV  if KV < n, n % KV = 0 and (H % n = 0 or (H_p - H) % KV = 0 and H_p > H)
                         r = 1       if KV % n = 0 (whole KV heads per rank) or H_p / n = H / KV (one KV head
                                     per rank already)
                         r = H / KV  otherwise (full replication, as MHA);  KV_p = max(KV_p, n)
                   (KV_p = H_p when the replication reaches H)
    Padded heads cost what real heads cost (their weights, K/V cache and work are all there).
    shards = 0: (H, KV) unchanged."""
    H, KV, n = np.broadcast_arrays(_arr(H), _arr(KV), _arr(shards))
    on = n > 0
    nn = np.where(on, n, 1.0)
    Hp = nn * np.ceil(H / nn)
    mha = KV == H
    partial = (KV < nn) & (np.mod(nn, KV) == 0) & ((np.mod(H, nn) == 0) | ((np.mod(Hp - H, KV) == 0) & (Hp > H)))
    even = (KV >= nn) & (np.mod(KV, nn) == 0)
    ratio = np.where(partial, nn / KV, np.where(even | (Hp / nn == H / KV), 1.0, H / KV))
    kv = np.maximum(KV * ratio, nn)
    kv = np.where(kv == H, Hp, kv)
    KVp = np.where(mha, Hp, kv)
    return np.where(on, Hp, H), np.where(on, KVp, KV)


def heads_sharded(H, KV, shards) -> tuple:
    """sharded_heads, kept per (heads, KV heads, shards) where they are one plan's Python numbers."""
    if isinstance(H, (int, float)) and isinstance(KV, (int, float)) and isinstance(shards, (int, float)):
        return _sharded_heads_one(H, KV, shards)
    return sharded_heads(H, KV, shards)


@functools.lru_cache(maxsize=1024)
def _sharded_heads_one(H: float, KV: float, shards: float) -> tuple[float, float]:
    Hp, KVp = sharded_heads(H, KV, shards)
    return float(Hp), float(KVp)


def _fixed_values(system: System, arch: ModelArch, cal: Calibration, kn: Knobs) -> dict:
    """The values a scenario's sizes do not change: the model's (at its pipeline depth), the hardware's and the
    data types' conversions."""
    vals = model_values(arch, kn.pp)
    vals.update(hardware_values(system, cal, kn.compute))
    vals.update(conversion_values(system, cal, kn.weights, kn.compute))
    vals.update(expert_values(system, cal, kn))
    return vals


# one configuration's _fixed_values (fixed_values); 256 distinct (system, model, calibration, data types, depth)
# are more than a loop visits, a few MB at most
_FIXED = ObjectCache(256)
_SWEPT = object()  # an array-valued knob: a sweep, whose values are not kept


def _scalar_key(x) -> object:
    """A hashable stand-in for one knob's value: the value itself where it is one value, else _SWEPT."""
    if isinstance(x, (DType, str, bool, int, float, type(None))):
        return x
    return x.item() if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0) else _SWEPT


def fixed_values(system: System, arch: ModelArch, cal: Calibration, kn: Knobs) -> dict:
    """_fixed_values, kept for one configuration at a time (the API in a loop, the app's what-if: a third of a
    point's binding): keyed by the system, model and calibration objects (held in the entry, so an id is never
    reused while kept) and the scalar data types and pipeline depth. Entries are read-only (bind copies)."""
    parts = tuple(_scalar_key(getattr(kn, f)) for f in ("pp", "compute", "weights", "expert_weights"))
    if _SWEPT in parts:
        return _fixed_values(system, arch, cal, kn)
    return _FIXED.get((system, arch, cal), parts, lambda: _python_numbers(_fixed_values(system, arch, cal, kn)))


def _python_numbers(vals: dict) -> dict:
    """vals with its one-number numpy values (a layer count per stage, a lane count) as the Python floats their
    neighbours are: the same IEEE values, and a configuration's arguments then all floats (the compiled graph's
    scalar path takes them as they are)."""
    return {k: float(v) if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0) else v
            for k, v in vals.items()}


def bind(system: System, arch: ModelArch, cal: Calibration, kn: Knobs) -> dict:
    vals = dict(fixed_values(system, arch, cal, kn))
    if Phase(kn.phase) == Phase.TRAIN:
        # a low-precision training recipe quantizes activations, gradients and weights in kernels of their own
        # (graph.training.low_precision_casts / _weight_casts, f_8 = 1): its GEMMs convert nothing themselves
        keep = 1.0 - vals[fm.f8]
        vals[fm.q_a], vals[fm.q_w], vals[fm.q_we] = (vals[x] * keep for x in (fm.q_a, fm.q_w, fm.q_we))
    n = kn.head_shards if isinstance(kn.head_shards, (int, float)) else _arr(kn.head_shards)
    if any_true(n > 0):
        vals[S.H], vals[S.KV] = heads_sharded(vals[S.H], vals[S.KV], n)
    vals.update(scenario_values(kn, cal))
    vals.update(_python_numbers(moe_kernels.values(kn, vals)))  # how the MoE kernel runs its experts
    vals[ops.f_rc] = kn.recompute_share(arch.num_hidden_layers)
    return vals
