"""InferenceX serving rows -> perfmodel serving scenarios: the mapping rules, written once.

One row of the corpus (reference/inferencex_serving_dev.csv; columns as its README defines them)
is one deployment at one load level. Every row goes through the same rules; none is per row,
per model or per case, and nothing here is fitted:

  system      the catalogue system whose file lists the name among its aliases (catalog/system_names.py:
              h100_sxm -> p5.48xlarge, h200_sxm -> p5e.48xlarge, b200_sxm -> p6-b200.48xlarge, b300_sxm ->
              p6-b300.48xlarge (8-GPU HGX nodes), gb200 / gb300 -> gb200-nvl72 / gb300-nvl72 (72-GPU racks));
              a system added to the catalogue with its aliases is read with no code change.
  model       catalog/model_names.py: the Hugging Face id without its organisation, checkpoint variants
              and quantised copies ('-Instruct', '-FP8', '-NVFP4', date tags: one architecture in another
              checkpoint; the dropped words go to the row's note), then the workload files' aliases for
              other names of one architecture (DeepSeek-R1 is DeepSeek-V3's: their config.json files differ
              only in transformers_version); it must name a workload file.
  data types  gemm_quant_mode: weights of the dense GEMMs (attention, dense MLP, shared experts,
              head); moe_quant_mode: routed-expert weights (storage). fp8 and fp8_block -> FP8
              (fp8_block: one FP32 scale per 128 x 128 block, 0.002 bit per element, not
              counted). fp4 / nvfp4 / mxfp4 -> the checkpoint's own 4-bit format: a workload that
              ships 4-bit weights keeps its own types layer by layer (GPT-OSS: MXFP4 experts;
              attention, router and head BF16, the modules_to_not_convert of its checkpoint);
              any other model's 4-bit checkpoint is NVIDIA's ModelOpt NVFP4 (DType.FP4, one E4M3
              scale per 16). Blank -> the checkpoint's own types (weight_dtype and
              expert_weight_dtype of the workload file). Compute: the dense-GEMM weight type
              where the chip's tensor cores run it (FP8 on all four, FP4 / MXFP4 on Blackwell),
              else BF16 with the weights dequantized (weight-only, as engines run MXFP4 on
              Hopper). KV cache: the serving grid's default (BF16 beside 16-bit compute, FP8
              otherwise); the row does not say.
  plan        tp_size -> tp, attention_dp_size -> da, pp_size -> pp, moe_ep_size -> ep (a
              blank or 0 parallel degree other than tp_size is 1: not used); perfmodel's MoE-TP
              is tp x da / ep, so a written moe_tp_size must equal it (MoE models; a dense model
              has no experts and ignores the MoE columns).
  load        concurrency C: silicon_concurrency in silicon_data_source (the measured load),
              else batch_size (agg; some rows write it per attention-DP rank: batch 2 x 64 ranks
              = 128 requests), else decode_batch_size x decode_num_workers x decode_attention_dp
              (disagg). agg: one replica holds all C requests in a closed loop. disagg: C is
              spread over decode_num_workers decode replicas (blank: the fewest replicas whose
              KV cache holds C sequences at their mean length I + O/2, inferencex.decode_replicas).
              Attention-DP ranks step together (the MoE all-to-all joins them), so a step is
              paced by the busiest rank's ceil(C / da) sequences: priced at da ceil(C / da)
              (likewise for pp micro-batches).

Does not: evaluate the model (inferencex.py does); read files.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import model_names, quant_modes, system_names, workload_files
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.core import limits
from perfmodel.core.dtypes import DType
from perfmodel.core.scenario import Phase
from perfmodel.model import bindings as bd
from perfmodel.model import feasibility

_SHIPPED_FOUR_BIT = (DType.FP4, DType.MXFP4)
_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")
# (key, column suffix, blank or 0 means 1)
_POOL_FIELDS = (("tp", "tp_size", False), ("pp", "pp_size", True), ("da", "attention_dp_size", True),
                ("moe_tp", "moe_tp_size", True), ("moe_ep", "moe_ep_size", True))


@dataclass(frozen=True)
class Pool:
    """One serving instance's plan: tensor, pipeline, attention-DP, MoE-TP (0 = not written), MoE-EP."""

    tp: int
    pp: int
    da: int
    moe_tp: int
    moe_ep: int

    @property
    def chips(self) -> int:
        return self.tp * self.da * self.pp

    def text(self) -> str:
        return f"TP{self.tp} DA{self.da} EP{self.moe_ep} PP{self.pp} ({self.chips} GPUs)"


def system_name(system: str) -> str:
    """Catalogue system of a corpus system name ('' when unknown): the system file that lists it among its aliases
    (catalog/system_names.py)."""
    return system_names.lookup(system)


def _unknown(system) -> str:
    try:
        system_names.resolve(system)
    except ValueError as exc:
        return str(exc)
    return ""


def workload_name(model_path: str) -> str:
    """Catalogue workload of a Hugging Face id ('' when none): catalog/model_names.py's rules (publisher,
    checkpoint variants and quantised copies dropped; the workload files' aliases)."""
    return model_names.resolve(model_path)[0]


def storage_type(label: str, arch, experts: bool) -> DType | None:
    """Stored weight type of the dense GEMMs (experts=False) or routed experts for a quant-mode label
    (catalog/quant_modes.py's table; None when the label is not a data type)."""
    own = (arch.expert_weight_dtype or arch.weight_dtype) if experts else arch.weight_dtype
    key = str(label).strip().lower()
    if key in ("", "nan"):
        return own
    m = quant_modes.mode(key)
    if m is None:
        try:
            return DType.parse(key)
        except ValueError:
            return None
    ships = arch.weight_dtype in _SHIPPED_FOUR_BIT or arch.expert_weight_dtype in _SHIPPED_FOUR_BIT
    return own if m.shipped and ships else m.weights


def compute_type(weights: DType, system, label: str = "") -> DType:
    """The dense GEMMs' operand type: the quant mode's (weight-only modes: BF16; W4A8: FP8), else the stored
    type, where the tensor cores run it; else BF16 (weights dequantised)."""
    m = quant_modes.mode(label) if str(label).strip() else None
    want = m.compute if m is not None and m.compute is not None else weights
    return want if system.chip.supports(want) else DType.BF16


def _number(text) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        return float("nan")


def _whole(text, one_if_blank: bool) -> tuple[int | None, str]:
    """(value, problem): a whole number >= 1; blank or 0 -> 1 where `one_if_blank`."""
    v = _number(text)
    if one_if_blank and (not np.isfinite(v) or v == 0):
        return 1, ""
    if not np.isfinite(v):
        return None, "not given" if str(text).strip() in ("", "nan") else f"{str(text).strip()!r} is not a number"
    if not (v.is_integer() and 1 <= v <= limits.MAX_CHIPS):
        return None, f"{str(text).strip()!r} is not a whole number between 1 and {limits.MAX_CHIPS:,}"
    return int(v), ""


def pool(row, prefix: str, moe: bool) -> tuple[Pool | None, list[str]]:
    """The plan in the `prefix`-columns of a row (prefix '', 'prefill_' or 'decode_') and every problem with it."""
    vals, why = {}, []
    for key, col, blank_one in _POOL_FIELDS:
        raw = row.get(prefix + col, "")
        if key == "moe_tp" and _number(raw) == 0:
            vals[key] = 0
            continue
        vals[key], problem = _whole(raw, blank_one)
        if problem:
            why.append(f"{prefix}{col} {problem}")
    if why:
        return None, why
    p = Pool(**vals)
    if not moe:
        p = Pool(p.tp, p.pp, p.da, 0, 1)
    elif p.moe_tp and p.moe_tp * p.moe_ep != p.tp * p.da:
        why.append(f"{prefix}moe_tp_size x moe_ep_size = {p.moe_tp} x {p.moe_ep} is not the {p.tp * p.da} GPUs of "
                   f"tp_size x attention_dp_size (perfmodel's MoE-TP is tp x da / ep)")
    return p, why


def concurrency(row) -> tuple[int | None, str]:
    """(total requests in flight, how it was read)."""
    hit = _CONCURRENCY.search(str(row.get("silicon_data_source", "")))
    if hit and int(hit.group(1)) >= 1:
        return int(hit.group(1)), "silicon_concurrency"
    if row.get("mode") == "agg":
        c, problem = _whole(row.get("batch_size", ""), False)
        return (c, "batch_size") if not problem else (None, "")
    parts = [_whole(row.get(c, ""), False)[0] for c in ("decode_batch_size", "decode_num_workers")]
    da = _whole(row.get("decode_attention_dp_size", ""), True)[0]
    if None in parts:
        return None, ""
    return parts[0] * parts[1] * da, "decode_batch_size x decode_num_workers x decode_attention_dp_size"


def paced(c: float, p: Pool) -> int:
    """Sequences per replica as the step is paced: a multiple of da x pp holding ceil(c / (da pp)) each."""
    step = p.da * p.pp
    return int(step * math.ceil(c / step))


def _dtypes(row, arch, system, why: list[str]) -> tuple:
    w = storage_type(row.get("gemm_quant_mode", ""), arch, experts=False)
    e = storage_type(row.get("moe_quant_mode", ""), arch, experts=True) if arch.is_moe else w
    for col, d in (("gemm_quant_mode", w), ("moe_quant_mode", e))[:2 if arch.is_moe else 1]:
        if d is None:  # a dense model's experts are its GEMMs: one reason, for the column it came from
            known = ", ".join(sorted(quant_modes.modes()))
            why.append(f"{col} {row.get(col)!r} is not a data type (known quantisation modes: {known})")
    if w is None or e is None or system is None:
        return None, None, None
    return w, e, compute_type(w, system, row.get("gemm_quant_mode", ""))


def map_row(row: dict, replaced: Replacements = NONE) -> dict:
    """One corpus row as serving scenario fields, with every reason it cannot be expressed ('reasons')."""
    why, notes = [], []
    sysname = system_name(row.get("system", ""))
    wname, dropped = model_names.resolve(row.get("model_path", ""))
    if wname and [d for d in dropped if not d.endswith("/")]:  # the publisher is no news; a variant is
        notes.append(f"model {str(row.get('model_path')).strip()!r} read as {wname} (dropped: "
                     f"{', '.join(d.strip('-') for d in dropped if not d.endswith('/'))})")
    if not sysname:
        why.append(_unknown(row.get("system")))
    if not wname:
        why.append(f"model {row.get('model_path')!r} has no workload file (after dropping checkpoint variants "
                   f"and aliases)")
    system = catalog.load_system(sysname, replaced=replaced) if sysname else None
    arch = workload_files.load_workload(wname) if wname else None
    mode = str(row.get("mode", "")).strip()
    if mode not in ("agg", "disagg"):
        why.append(f"mode {mode!r} is neither agg nor disagg")
    isl, p1 = _whole(row.get("isl", ""), False)
    osl, p2 = _whole(row.get("osl", ""), False)
    why += [f"{c} {p}" for c, p in (("isl", p1), ("osl", p2)) if p]
    moe = bool(arch is not None and arch.is_moe)
    pools = {}
    for kind, prefix in ((("agg", ""),) if mode == "agg" else (("prefill", "prefill_"), ("decode", "decode_"))):
        pools[kind], problems = pool(row, prefix, moe)
        why += problems
    total, how = concurrency(row)
    if total is None:
        why.append("no concurrency (silicon_concurrency, batch_size or the decode pool's batch x workers)")
    workers = 1 if mode == "agg" else None  # None: not given (inferencex.decode_replicas decides)
    if mode == "disagg":
        w, problem = _whole(row.get("decode_num_workers", ""), False)
        workers = None if problem else w
    dec = pools.get("agg") or pools.get("decode")
    c = paced(total / (workers or 1), dec) if total is not None and dec is not None else None
    w = e = comp = None
    if arch is not None:
        w, e, comp = _dtypes(row, arch, system, why)
    return {"id": row.get("id"), "system": sysname, "workload": wname, "mode": mode, "isl": isl, "osl": osl,
            "weights": w, "experts": e, "compute": comp, "concurrency": c, "total": total, "how": how,
            "workers": workers, "pools": pools, "reasons": why, "notes": notes}


def _rule_reasons(system, arch, pools: list[Pool], conc: list[int], isl: np.ndarray, osl: np.ndarray) -> list[str]:
    """feasibility.check_rules over many plans at once (decode at the last position, as serve checks them);
    the plans that break a rule are asked again one by one, so their reasons carry the values (tp=64)."""
    def knobs(sel) -> bd.Knobs:
        a = {k: np.array([getattr(pools[i], k) for i in sel], dtype=float) for k in ("tp", "da", "pp", "moe_ep")}
        return bd.Knobs(phase=Phase.DECODE, batch=np.asarray([conc[i] for i in sel], dtype=float), seq_len=1,
                        context=np.maximum(isl[sel] + osl[sel] - 1, 0), tp=a["tp"], da=a["da"], ep=a["moe_ep"],
                        pp=a["pp"])

    valid = feasibility.check_rules(system, arch, knobs(np.arange(len(pools))))[0]
    return ["" if ok else str(feasibility.check_rules(system, arch, knobs(np.array([i])))[1].ravel()[0])
            for i, ok in enumerate(np.ravel(valid))]


def map_rows(raw: pd.DataFrame, replaced: Replacements = NONE) -> pd.DataFrame:
    """Every row mapped (map_row), plus the plan rules of feasibility.check_rules for each pool (vectorised
    per system and model); `reasons` joins every reason with '; ' ('' = expressible)."""
    df = pd.DataFrame([map_row(r, replaced) for r in raw.to_dict("records")])
    known = df["system"].ne("") & df["workload"].ne("") & df["isl"].notna() & df["osl"].notna()
    for (sysname, wname), g in df[known].groupby(["system", "workload"], sort=False):
        system, arch = catalog.load_system(sysname, replaced=replaced), workload_files.load_workload(wname)
        for kind in ("agg", "prefill", "decode"):
            rows = [(i, pl[kind]) for i, pl in zip(g.index, g["pools"]) if pl.get(kind) is not None]
            if not rows:
                continue
            idx = [i for i, _ in rows]
            plans = [p for _, p in rows]
            conc = [df.at[i, "concurrency"] if kind != "prefill" and pd.notna(df.at[i, "concurrency"])
                    else p.da * p.pp for i, p in rows]
            texts = _rule_reasons(system, arch, plans, conc, df.loc[idx, "isl"].to_numpy(float),
                                  df.loc[idx, "osl"].to_numpy(float))
            for i, t in zip(idx, texts):
                if t:
                    df.at[i, "reasons"] = df.at[i, "reasons"] + [f"{'' if kind == 'agg' else kind + ' pool '}plan "
                                                                 f"{p}" for p in str(t).split("; ")]
    df["reasons"] = df["reasons"].map("; ".join)
    df["notes"] = df["notes"].map("; ".join)
    return df
