"""Workload files (workloads/<name>.toml): strict loader, listing, and import from a local config.json.

A workload file:

    schema_version = 1
    name = "llama-3-8b"                 # must equal the file name
    display_name = "Llama 3 8B"
    notes = "..."                       # optional

    [source]                            # provenance (required)
    config_url = "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"
    retrieved = "2026-11-21"            # or version = "..." (at least one)
    parameters = 8_030_261_248          # published total count (optional; needs parameters_source)
    active_parameters = 12.9e9          # MoE only: published active count per token
    active_parameters_excludes_embeddings = false   # true when the publisher leaves out lookup tables
    parameters_source = "safetensors total (Hugging Face model page)"
    note = "..."

    [config]                            # Hugging Face config.json names and values
    model_type = "llama"
    hidden_size = 4096
    ...

    [perfmodel]                         # structural facts config.json does not state
    norm = "rmsnorm"                    # rmsnorm | layernorm
    gated_mlp = true
    position_embedding = "rope"         # rope | learned
    weight_dtype = "bf16"               # as shipped
    ...

attention_bias and mlp_bias go in [config] when config.json states them, else in [perfmodel]
(exactly one of the two). Unknown keys, wrong types, non-positive sizes, head counts that do not
divide, a name that differs from the file name, malformed TOML and a missing [source] are
rejected with a CatalogError naming the file, the field and the problem. Files are parsed with
tomllib (data only, no eval).

Does not: compute parameter counts (workload.py does) or fetch anything over the network.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import textwrap
import tomllib
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from perfmodel.catalog import catalog_root, read_toml
from perfmodel.dtypes import DType
from perfmodel.specs import SCHEMA_VERSION, CatalogError, DTypeName, format_validation_error
from perfmodel.workload import ModelArch

STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
Positive = Annotated[int, Field(gt=0)]
NonNegative = Annotated[int, Field(ge=0)]
LayerType = Literal["full_attention", "sliding_attention"]

# Hugging Face spellings of the same quantity in other model families -> the name used here.
HF_ALIASES: dict[str, str] = {
    "n_embd": "hidden_size", "d_model": "hidden_size",
    "n_layer": "num_hidden_layers", "num_layers": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_positions": "max_position_embeddings",
    "n_inner": "intermediate_size",
    "activation_function": "hidden_act",
    "num_local_experts": "num_experts", "n_routed_experts": "num_experts",
    "n_shared_experts": "num_shared_experts",
}


# ---------------------------------------------------------------- schema


class _Source(BaseModel):
    model_config = STRICT
    config_url: str
    retrieved: str = ""
    version: str = ""
    parameters: int | float | None = None
    active_parameters: int | float | None = None
    active_parameters_excludes_embeddings: bool = False
    parameters_source: str = ""
    note: str = ""

    @field_validator("config_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty (where the configuration comes from)")
        return v

    @field_validator("parameters", "active_parameters")
    @classmethod
    def _positive(cls, v: int | float | None) -> int | float | None:
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"must be a positive number, got {v!r}")
        return v


class _Config(BaseModel):
    """The Hugging Face config.json fields perfmodel uses, under their Hugging Face names."""

    model_config = STRICT
    model_type: str
    hidden_size: Positive
    num_hidden_layers: Positive
    num_attention_heads: Positive
    num_key_value_heads: Positive | None = None  # default: num_attention_heads (MHA)
    head_dim: Positive | None = None  # default: hidden_size / num_attention_heads (MLA: d_n + d_r)
    intermediate_size: Positive
    vocab_size: Positive
    max_position_embeddings: Positive
    tie_word_embeddings: bool
    hidden_act: str
    type_vocab_size: NonNegative = 0
    num_experts: NonNegative = 0
    num_experts_per_tok: NonNegative = 0
    moe_intermediate_size: NonNegative = 0
    num_shared_experts: NonNegative = 0
    shared_expert_intermediate_size: NonNegative = 0
    first_k_dense_replace: NonNegative = 0
    q_lora_rank: NonNegative = 0
    kv_lora_rank: NonNegative = 0
    qk_nope_head_dim: NonNegative = 0
    qk_rope_head_dim: NonNegative = 0
    v_head_dim: NonNegative = 0
    sliding_window: NonNegative = 0
    layer_types: list[LayerType] = []
    attention_bias: bool | None = None
    mlp_bias: bool | None = None


class _Perfmodel(BaseModel):
    """Structural facts config.json does not state."""

    model_config = STRICT
    norm: Literal["rmsnorm", "layernorm"]
    gated_mlp: bool
    position_embedding: Literal["rope", "learned"]
    weight_dtype: DTypeName
    expert_weight_dtype: DTypeName | None = None
    encoder_only: bool = False
    attention_bias: bool | None = None
    mlp_bias: bool | None = None
    router_bias: bool = False
    qk_norm: bool = False
    attention_sinks: bool = False
    pooler: bool = False


class WorkloadFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    name: str
    display_name: str
    notes: str = ""
    source: _Source
    config: _Config
    perfmodel: _Perfmodel


# ---------------------------------------------------------------- validation


def _fail(path: str, field: str, problem: str) -> CatalogError:
    return CatalogError(f"{path}: field {field}: {problem}")


def _format(path: str, exc: ValidationError) -> str:
    """format_validation_error's lines, with the offending value added to type errors."""
    lines = format_validation_error(path, exc).split("\n")
    for i, err in enumerate(exc.errors()):
        if i < len(lines) and (err["type"].endswith("_type") or err["type"] == "literal_error"):
            lines[i] += f", got {err['input']!r} ({type(err['input']).__name__})"
    return "\n".join(lines)


def _precheck(data: dict, path: str) -> None:
    """Errors pydantic would word poorly: Hugging Face aliases, and a missing or non-table section."""
    for section in ("source", "config", "perfmodel"):
        if section in data and not isinstance(data[section], dict):
            raise _fail(path, section, f"must be a table ([{section}]), got {type(data[section]).__name__}")
    for key in data.get("config", {}) or {}:
        if key in HF_ALIASES:
            raise _fail(path, f"config.{key}", f"unknown key (not in the schema): {key!r} is the Hugging Face alias "
                        f"of {HF_ALIASES[key]!r}; write {HF_ALIASES[key]} = ... instead")


def build_arch(data: dict, path: str | Path, expect_name: str | None = None) -> ModelArch:
    """Validate a parsed workload TOML dict and build its ModelArch.

    `path` is used only in messages; `expect_name` (normally the file's stem) must equal `name`.
    """
    path = str(path)
    _precheck(data, path)
    try:
        wf = WorkloadFile.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(_format(path, exc)) from None
    if expect_name is not None and wf.name != expect_name:
        raise _fail(path, "name", f"must equal the file name {expect_name!r}, got {wf.name!r}")
    c, p, s = wf.config, wf.perfmodel, wf.source
    if not (s.retrieved.strip() or s.version.strip()):
        raise _fail(path, "source.retrieved", "required field is missing: give 'retrieved' (date read) or "
                    "'version' (document version)")
    if s.parameters is not None and not s.parameters_source.strip():
        raise _fail(path, "source.parameters_source", "required with 'parameters': where the published count "
                    "comes from (model card / paper / safetensors total)")
    if s.active_parameters is not None and s.parameters is None:
        raise _fail(path, "source.parameters", "required with 'active_parameters' (the published total)")

    def once(key: str) -> bool:
        in_c, in_p = getattr(c, key), getattr(p, key)
        if in_c is not None and in_p is not None:
            raise _fail(path, f"perfmodel.{key}", f"also given in [config]; state it once ([config] when "
                        "config.json has it, else [perfmodel])")
        if in_c is None and in_p is None:
            raise _fail(path, f"perfmodel.{key}", "required field is missing (state it in [config] when "
                        "config.json has it, else in [perfmodel])")
        return bool(in_c if in_c is not None else in_p)

    attention_bias, mlp_bias = once("attention_bias"), once("mlp_bias")
    D, L, H = c.hidden_size, c.num_hidden_layers, c.num_attention_heads
    K = c.num_key_value_heads if c.num_key_value_heads is not None else H
    if K > H or H % K:
        raise _fail(path, "config.num_key_value_heads",
                    f"num_attention_heads ({H}) must be a multiple of num_key_value_heads ({K})")
    mla = c.kv_lora_rank > 0
    if mla:
        for key in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(c, key) <= 0:
                raise _fail(path, f"config.{key}", "multi-head latent attention (kv_lora_rank > 0) needs it > 0")
    else:
        for key in ("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if getattr(c, key):
                raise _fail(path, f"config.{key}", "only meaningful with multi-head latent attention "
                            "(kv_lora_rank > 0)")
    if c.head_dim is not None:
        head_dim = c.head_dim
    elif mla:
        head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
    elif D % H:
        raise _fail(path, "config.head_dim", f"required when hidden_size ({D}) is not a multiple of "
                    f"num_attention_heads ({H})")
    else:
        head_dim = D // H
    moe = c.num_experts > 0
    if moe:
        if not 1 <= c.num_experts_per_tok <= c.num_experts:
            raise _fail(path, "config.num_experts_per_tok",
                        f"must be between 1 and num_experts ({c.num_experts}), got {c.num_experts_per_tok}")
        if c.moe_intermediate_size <= 0:
            raise _fail(path, "config.moe_intermediate_size", "a mixture-of-experts model needs the expert width > 0")
        if c.first_k_dense_replace >= L:
            raise _fail(path, "config.first_k_dense_replace",
                        f"must be less than num_hidden_layers ({L}), got {c.first_k_dense_replace}")
    else:
        for key in ("num_experts_per_tok", "moe_intermediate_size", "num_shared_experts",
                    "shared_expert_intermediate_size", "first_k_dense_replace"):
            if getattr(c, key):
                raise _fail(path, f"config.{key}", "only meaningful for a mixture-of-experts model (num_experts > 0)")
        if p.expert_weight_dtype is not None:
            raise _fail(path, "perfmodel.expert_weight_dtype", "only meaningful for a mixture-of-experts model")
        if p.router_bias:
            raise _fail(path, "perfmodel.router_bias", "only meaningful for a mixture-of-experts model")
        if s.active_parameters is not None:
            raise _fail(path, "source.active_parameters", "only meaningful for a mixture-of-experts model")
    if c.layer_types:
        if len(c.layer_types) != L:
            raise _fail(path, "config.layer_types",
                        f"has {len(c.layer_types)} entries, num_hidden_layers is {L}")
        if "sliding_attention" in c.layer_types and not c.sliding_window:
            raise _fail(path, "config.sliding_window", "layer_types has sliding_attention layers but no window")
    if p.pooler and not p.encoder_only:
        raise _fail(path, "perfmodel.pooler", "a pooler belongs to an encoder-only model (encoder_only = true)")
    if s.parameters is not None and s.active_parameters is not None and s.active_parameters > s.parameters:
        raise _fail(path, "source.active_parameters",
                    f"({s.active_parameters:g}) exceeds the total parameters ({s.parameters:g})")

    return ModelArch(
        name=wf.name, display_name=wf.display_name, model_type=c.model_type, hidden_size=D,
        num_hidden_layers=L, num_attention_heads=H, num_key_value_heads=K, head_dim=head_dim,
        intermediate_size=c.intermediate_size, vocab_size=c.vocab_size,
        max_position_embeddings=c.max_position_embeddings, tie_word_embeddings=c.tie_word_embeddings,
        hidden_act=c.hidden_act, encoder_only=p.encoder_only, norm=p.norm, gated_mlp=p.gated_mlp,
        position_embedding=p.position_embedding, attention_bias=attention_bias, mlp_bias=mlp_bias,
        type_vocab_size=c.type_vocab_size, num_experts=c.num_experts, num_experts_per_tok=c.num_experts_per_tok,
        moe_intermediate_size=c.moe_intermediate_size, num_shared_experts=c.num_shared_experts,
        shared_expert_intermediate_size=c.shared_expert_intermediate_size,
        first_k_dense_replace=c.first_k_dense_replace, router_bias=p.router_bias, q_lora_rank=c.q_lora_rank,
        kv_lora_rank=c.kv_lora_rank, qk_nope_head_dim=c.qk_nope_head_dim, qk_rope_head_dim=c.qk_rope_head_dim,
        v_head_dim=c.v_head_dim, sliding_window=c.sliding_window, layer_types=tuple(c.layer_types),
        attention_sinks=p.attention_sinks, qk_norm=p.qk_norm, pooler=p.pooler,
        weight_dtype=DType(p.weight_dtype),
        expert_weight_dtype=DType(p.expert_weight_dtype) if p.expert_weight_dtype else None,
        published_parameters=float(s.parameters or 0.0),
        published_active_parameters=float(s.active_parameters or 0.0),
        published_active_excludes_embeddings=s.active_parameters_excludes_embeddings,
        parameters_source=s.parameters_source, config_source=s.config_url, notes=wf.notes,
        extra=tuple((k, v) for k, v in (("retrieved", s.retrieved), ("version", s.version),
                                         ("source_note", s.note)) if v))


def load_workload_file(path: str | Path) -> ModelArch:
    """Read and validate one workload file (not cached); `name` must equal the file's stem."""
    path = Path(path)
    return build_arch(read_toml(path), path, expect_name=path.stem)


@lru_cache(maxsize=128)
def _load(name: str, root: Path) -> ModelArch:
    path = root / "workloads" / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(list_workloads(root)) or "none"
        raise CatalogError(f"{path}: no such workload {name!r} (known: {known})")
    return load_workload_file(path)


def load_workload(name: str, root: str | Path | None = None) -> ModelArch:
    """The ModelArch for catalogue key `name` (workloads/<name>.toml under `root`, default catalog_root()).
    Cached; call clear_cache() after editing files."""
    return _load(name, Path(root) if root is not None else catalog_root())


def list_workloads(root: str | Path | None = None) -> list[str]:
    """Catalogue keys of workloads/*.toml under `root` (default catalog_root()), sorted."""
    root = Path(root) if root is not None else catalog_root()
    return sorted(p.stem for p in (root / "workloads").glob("*.toml"))


def clear_cache() -> None:
    _load.cache_clear()


def write_workload(text: str, path: str | Path, overwrite: bool = False) -> Path:
    """Validate workload TOML `text` as the file `path` (name must equal its stem) and write it.

    Refuses to replace an existing file unless overwrite=True. Returns the path written.
    """
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: malformed TOML: {exc}") from None
    build_arch(data, path, expect_name=path.stem)
    if path.exists() and not overwrite:
        raise CatalogError(f"{path}: already exists (pass overwrite=True to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    clear_cache()
    return path


# ---------------------------------------------------------------- import from a local config.json


# Structural facts per model_type (transformers' modelling code for each family).
_FAMILIES: dict[str, dict[str, Any]] = {
    "llama": dict(label="LlamaForCausalLM", norm="rmsnorm", gated_mlp=True, position_embedding="rope",
                  attention_bias=False, mlp_bias=False, tie_word_embeddings=False, hidden_act="silu"),
    "mistral": dict(label="MistralForCausalLM", norm="rmsnorm", gated_mlp=True,
                    position_embedding="rope", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                    hidden_act="silu"),
    "mixtral": dict(label="MixtralForCausalLM", norm="rmsnorm", gated_mlp=True,
                    position_embedding="rope", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                    hidden_act="silu", expert_width_is_intermediate=True),
    "qwen3": dict(label="Qwen3ForCausalLM", norm="rmsnorm", gated_mlp=True, position_embedding="rope",
                  attention_bias=False, mlp_bias=False, tie_word_embeddings=False, hidden_act="silu", qk_norm=True),
    "qwen3_moe": dict(label="Qwen3MoeForCausalLM", norm="rmsnorm", gated_mlp=True,
                      position_embedding="rope", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                      hidden_act="silu", qk_norm=True),
    "deepseek_v3": dict(label="DeepseekV3ForCausalLM", norm="rmsnorm", gated_mlp=True,
                        position_embedding="rope", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                        hidden_act="silu"),
    "gpt_oss": dict(label="GptOssForCausalLM", norm="rmsnorm", gated_mlp=True, position_embedding="rope",
                    attention_bias=True, mlp_bias=True, tie_word_embeddings=False, hidden_act="silu",
                    router_bias=True, attention_sinks=True, expert_width_is_intermediate=True),
    "gpt2": dict(label="GPT2LMHeadModel", norm="layernorm", gated_mlp=False, position_embedding="learned",
                 attention_bias=True, mlp_bias=True, tie_word_embeddings=True, hidden_act="gelu_new",
                 weight_dtype="fp32"),
    "bert": dict(label="BertModel", norm="layernorm", gated_mlp=False, position_embedding="learned",
                 attention_bias=True, mlp_bias=True, tie_word_embeddings=True, hidden_act="gelu",
                 encoder_only=True, pooler=True, weight_dtype="fp32"),
}

# Why each inferred [perfmodel] value holds, per field (the family label is added).
_WHY = {
    "norm": {"rmsnorm": "RMSNorm (scale only)", "layernorm": "LayerNorm (scale and bias)"},
    "gated_mlp": {True: "gated MLP (gate, up and down projections)", False: "plain MLP (up and down projections)"},
    "position_embedding": {"rope": "rotary position embedding (no position table)",
                           "learned": "learned absolute position table of max_position_embeddings rows"},
    "encoder_only": {True: "bidirectional encoder: no causal mask, no KV cache"},
    "attention_bias": {True: "q/k/v/o projections have biases", False: "attention projections have no biases"},
    "mlp_bias": {True: "MLP / expert projections have biases", False: "MLP projections have no biases"},
    "router_bias": {True: "the MoE router has a bias"},
    "qk_norm": {True: "RMSNorm over head_dim on queries and keys (q_norm, k_norm)"},
    "attention_sinks": {True: "learned per-head sink logits in the softmax"},
    "pooler": {True: "pooler: dense D x D + bias on the first token"},
}

_INT_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
             "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size", "num_experts",
             "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts", "shared_expert_intermediate_size",
             "first_k_dense_replace", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
             "v_head_dim", "sliding_window")
_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "max_position_embeddings")
_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:_}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as a TOML value")


def _line(key: str, value: Any, comment: str = "") -> str:
    text = f"{key} = {_toml_value(value)}"
    if isinstance(value, (list, tuple)) and len(text) > 100:  # one row per line, pairs kept together
        rows = [", ".join(_toml_value(x) for x in value[i:i + 2]) + "," for i in range(0, len(value), 2)]
        text = f"{key} = [" + (f"  # {comment}" if comment else "") + "\n" + "\n".join("    " + r for r in rows) + "\n]"
        return text
    return f"{text}  # {comment}" if comment else text


def import_hf_config(path: str | Path, name: str | None = None) -> str:
    """Text of a workload TOML file made from a local Hugging Face config.json (no network access).

    Aliases are mapped to the names used here (GPT-2 n_embd/n_layer/n_head/n_positions/n_inner,
    Mixtral/gpt-oss num_local_experts, DeepSeek n_routed_experts/n_shared_experts); the [perfmodel]
    structural fields are inferred from model_type, each with a comment saying so; the config keys not
    used are listed in a comment. `name` defaults to the file's stem (its folder's name for
    "config.json"). [source] gets the file's URI and today's date; add the published parameter count
    and its source by hand. Raises CatalogError naming the file and field for anything it cannot map.
    The text is validated before it is returned; write it with write_workload().
    """
    path = Path(path)
    p = str(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{p}: cannot read file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{p}: malformed JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _fail(p, "(top level)", "a config.json must be a JSON object")
    if name is None:
        name = path.parent.name if path.stem == "config" else path.stem
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise _fail(p, "model_type", "required field is missing" if model_type is None else
                    f"expected a string, got {model_type!r}")
    if model_type not in _FAMILIES:
        raise _fail(p, "model_type", f"cannot infer the structural fields of {model_type!r}; "
                    f"known: {', '.join(sorted(_FAMILIES))}")
    fam = _FAMILIES[model_type]
    label = fam["label"]
    used: set[str] = {"model_type"}
    cfg: dict[str, tuple[Any, str]] = {}  # name -> (value, comment)

    def take(key: str) -> tuple[str | None, Any]:
        """(HF key found, value) for `key` or one of its aliases; None values count as absent."""
        for k in [key] + [a for a, c in HF_ALIASES.items() if c == key]:
            if k in raw:
                used.add(k)
                if raw[k] is not None:
                    return k, raw[k]
        return None, None

    def put(key: str, value: Any, hf_key: str | None, comment: str = "") -> None:
        if hf_key and hf_key != key:
            comment = f"{hf_key} in config.json" + (f"; {comment}" if comment else "")
        cfg[key] = (value, comment)

    # integers
    for key in _INT_KEYS:
        hf_key, v = take(key)
        if hf_key is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise _fail(p, hf_key, f"expected an integer, got {v!r}")
        put(key, v, hf_key)
    for key in _REQUIRED:
        if key not in cfg:
            aliases = [a for a, c in HF_ALIASES.items() if c == key]
            also = f" (also looked for {', '.join(aliases)})" if aliases else ""
            raise _fail(p, key, f"required field is missing{also}")
    D = cfg["hidden_size"][0]
    if "intermediate_size" not in cfg:
        if model_type == "gpt2":
            put("intermediate_size", 4 * D, None,
                f"n_inner is {'null' if 'n_inner' in raw else 'absent'} in config.json: GPT-2 uses 4 * n_embd")
        else:
            raise _fail(p, "intermediate_size", "required field is missing")

    # strings and booleans
    for key in ("hidden_act",):
        hf_key, v = take(key)
        if hf_key is None:
            put(key, fam[key], None, f"not in config.json: {label} default")
        elif not isinstance(v, str):
            raise _fail(p, hf_key, f"expected a string, got {v!r}")
        else:
            put(key, v, hf_key)
    for key in ("tie_word_embeddings", "attention_bias", "mlp_bias"):
        hf_key, v = take(key)
        if hf_key is None:
            if key == "tie_word_embeddings":
                put(key, fam[key], None, f"not in config.json: {label} default")
            continue
        if not isinstance(v, bool):
            raise _fail(p, hf_key, f"expected true or false, got {v!r}")
        put(key, v, hf_key)

    # attention window
    hf_key, v = take("layer_types")
    if hf_key is not None:
        if not (isinstance(v, list) and all(x in ("full_attention", "sliding_attention") for x in v)):
            raise _fail(p, "layer_types", f"expected a list of 'full_attention' / 'sliding_attention', got {v!r}")
        if "sliding_attention" in v:
            put("layer_types", v, hf_key)
        else:
            cfg.pop("layer_types", None)
    use_sw = raw.get("use_sliding_window")
    if "use_sliding_window" in raw:
        used.add("use_sliding_window")
    if use_sw is False and "sliding_window" in cfg:
        cfg.pop("sliding_window")
    if "sliding_window" in cfg and cfg["sliding_window"][0] == 0:
        cfg.pop("sliding_window")

    # family specifics
    notes: list[str] = []
    if model_type == "bert":
        pet = raw.get("position_embedding_type", "absolute")
        used.add("position_embedding_type")
        if pet != "absolute":
            raise _fail(p, "position_embedding_type", f"only 'absolute' is supported, got {pet!r}")
    if fam.get("expert_width_is_intermediate") and "num_experts" in cfg and "moe_intermediate_size" not in cfg:
        put("moe_intermediate_size", cfg["intermediate_size"][0], None,
            f"not in config.json: {label} experts are intermediate_size wide")
    if model_type == "gpt_oss" and "experts_per_token" in raw:
        used.add("experts_per_token")
        if "num_experts_per_tok" not in cfg:
            put("num_experts_per_tok", raw["experts_per_token"], "experts_per_token")
        elif raw["experts_per_token"] != cfg["num_experts_per_tok"][0]:
            raise _fail(p, "experts_per_token", f"{raw['experts_per_token']!r} disagrees with num_experts_per_tok "
                        f"{cfg['num_experts_per_tok'][0]!r}")
    if model_type == "qwen3_moe":
        for key, ok in (("decoder_sparse_step", 1), ("mlp_only_layers", [])):
            if key in raw:
                used.add(key)
                if raw[key] not in (ok, None):
                    raise _fail(p, key, f"only {ok!r} is supported (every layer MoE), got {raw[key]!r}")
    if model_type == "deepseek_v3":
        if raw.get("moe_layer_freq", 1) != 1:
            raise _fail(p, "moe_layer_freq", f"only 1 is supported, got {raw['moe_layer_freq']!r}")
        used.add("moe_layer_freq")
        if "head_dim" in cfg:  # transformers' DeepseekV3Config writes head_dim = qk_rope_head_dim
            cfg.pop("head_dim")
            used.discard("head_dim")
        if "q_lora_rank" not in cfg:
            put("q_lora_rank", 0, "q_lora_rank" if "q_lora_rank" in raw else None,
                "null in config.json: queries use one q_proj, no low-rank pair")
        if raw.get("num_nextn_predict_layers"):
            notes.append(f"num_nextn_predict_layers = {raw['num_nextn_predict_layers']}: the multi-token-"
                         "prediction module is not part of the model counted here")

    # [perfmodel]
    perf: dict[str, tuple[Any, str]] = {}
    for key in ("norm", "gated_mlp", "position_embedding", "encoder_only", "attention_bias", "mlp_bias",
                "router_bias", "qk_norm", "attention_sinks", "pooler"):
        if key in cfg:
            continue  # stated by config.json
        value = fam.get(key, False)
        if key in ("attention_bias", "mlp_bias", "norm", "gated_mlp", "position_embedding") or value:
            why = _WHY.get(key, {}).get(value, "")
            perf[key] = (value, f"inferred from model_type {model_type!r} ({label})" + (f": {why}" if why else ""))
    if model_type == "deepseek_v3" and "num_experts" in cfg:
        topk = raw.get("topk_method")
        used.add("topk_method")
        if topk == "noaux_tc":
            perf["router_bias"] = (True, "inferred from topk_method = 'noaux_tc': the gate stores "
                                   "e_score_correction_bias (E values per MoE layer)")
    # weight data type as shipped
    quant = raw.get("quantization_config")
    torch_dtype = raw.get("torch_dtype", raw.get("dtype"))
    used.update(k for k in ("quantization_config", "torch_dtype", "dtype") if k in raw)
    if torch_dtype is not None:
        if torch_dtype not in _TORCH_DTYPES:
            raise _fail(p, "torch_dtype", f"cannot map {torch_dtype!r}; known: {', '.join(_TORCH_DTYPES)}")
        base, base_why = _TORCH_DTYPES[torch_dtype], f"torch_dtype = {torch_dtype!r} in config.json"
    else:
        base = fam.get("weight_dtype", "bf16")
        base_why = f"no torch_dtype in config.json: {label} checkpoints ship {base}"
    if isinstance(quant, dict):
        method = quant.get("quant_method")
        if method == "fp8":
            perf["weight_dtype"] = ("fp8", f"quantization_config.quant_method = 'fp8' (fmt {quant.get('fmt', '?')}, "
                                    f"block {quant.get('weight_block_size', '?')}): linear weights ship in FP8")
        elif method == "mxfp4":
            if not cfg.get("num_experts"):
                raise _fail(p, "quantization_config", "MXFP4 is mapped only for mixture-of-experts weights")
            if torch_dtype is None:
                base_why = "no torch_dtype in config.json; modules_to_not_convert (attention, router, embeddings, " \
                           "lm_head) ship in bf16"
                base = "bf16"
            perf["weight_dtype"] = (base, base_why)
            perf["expert_weight_dtype"] = ("mxfp4", "quantization_config.quant_method = 'mxfp4': expert weights ship "
                                           "as MXFP4 blocks with E8M0 scales")
        else:
            raise _fail(p, "quantization_config.quant_method", f"cannot map {method!r} (known: fp8, mxfp4)")
    elif quant is not None:
        raise _fail(p, "quantization_config", f"expected an object, got {quant!r}")
    else:
        perf["weight_dtype"] = (base, base_why)

    # assemble
    dropped = sorted(k for k in raw if k not in used)
    lines = [
        f"# Imported by perfmodel.workload_files.import_hf_config from {path.name}.",
        "# [perfmodel] values marked 'inferred' come from model_type, not from config.json: check them.",
    ]
    if dropped:
        lines += textwrap.wrap("config.json keys not used by perfmodel (dropped): " + ", ".join(dropped), width=98,
                               initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False)
    lines += [f"# note: {n}" for n in notes]
    lines += ["", _line("schema_version", SCHEMA_VERSION), _line("name", name), _line("display_name", name), "",
              "[source]", _line("config_url", path.resolve().as_uri(), "local file this was imported from")]
    if isinstance(raw.get("_name_or_path"), str):
        lines.append(f"# _name_or_path in config.json: {raw['_name_or_path']}")
    lines += [_line("retrieved", date.today().isoformat(), "date imported"),
              "# parameters = ...          (published total; add with parameters_source)",
              "# parameters_source = \"...\" (model card / paper / safetensors total)", "", "[config]"]
    order = ["model_type"] + [k for k in _Config.model_fields if k != "model_type"]
    cfg["model_type"] = (model_type, "")
    for key in order:
        if key in cfg:
            lines.append(_line(key, *cfg[key]))
    lines += ["", "[perfmodel]"]
    for key in _Perfmodel.model_fields:
        if key in perf:
            lines.append(_line(key, *perf[key]))
    text = "\n".join(lines) + "\n"

    try:  # validate, naming the config.json and its key on failure
        build_arch(tomllib.loads(text), p, expect_name=name)
    except CatalogError as exc:
        msg = str(exc).replace(f"{p}: field config.", f"{p}: field ")
        msg = msg.replace(f"{p}: field perfmodel.", f"{p}: field (inferred) ")
        raise CatalogError(msg) from None
    return text
