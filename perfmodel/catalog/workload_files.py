"""Workload files (workloads/<name>.toml): strict loader, listing and writing (hf_import makes one from a config.json).

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
(exactly one of the two). Unknown keys, wrong types, non-positive sizes, counts above the
ceilings of core/limits.py, head counts that do not divide, a name that differs from the file
name, malformed TOML and a missing [source] are rejected with a CatalogError naming the file,
the field and the problem (the architecture rules are ModelArch.validate's, which workload
what-ifs meet too). Files are parsed with
tomllib (data only, no eval).

Does not: compute parameter counts (workload.py does) or fetch anything over the network.
"""

from __future__ import annotations

import math
import os
import tempfile
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from perfmodel.catalog.files import catalog_root, did_you_mean, read_toml
from perfmodel.catalog.spec_schema import CatalogError, DTypeName, one_line, validation_lines
from perfmodel.core.dtypes import DType
from perfmodel.core.workload import ModelArch
from perfmodel.core.workload_checks import ArchError

STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)
Positive = Annotated[int, Field(gt=0)]
NonNegative = Annotated[int, Field(ge=0)]
LayerType = Literal["full_attention", "sliding_attention", "linear_attention"]

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
    attn_output_gate: bool = False
    partial_rotary_factor: float = 1.0
    # Gated DeltaNet (linear_attention layers)
    linear_num_key_heads: NonNegative = 0
    linear_num_value_heads: NonNegative = 0
    linear_key_head_dim: NonNegative = 0
    linear_value_head_dim: NonNegative = 0
    linear_conv_kernel_dim: NonNegative = 0
    # DeepSeek Sparse Attention (lightning indexer)
    index_n_heads: NonNegative = 0
    index_head_dim: NonNegative = 0
    index_topk: NonNegative = 0


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
    qk_norm_per_layer: bool = False
    shared_expert_gate: bool = False
    linear_state_dtype: DTypeName = "fp32"


class WorkloadFile(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    name: str
    display_name: str
    aliases: list[str] = []  # other names of this architecture in measured data (catalog/model_names.py)
    notes: str = ""
    source: _Source
    config: _Config
    perfmodel: _Perfmodel


# ---------------------------------------------------------------- validation


def field_error(path: str, field: str, problem: str) -> CatalogError:
    return CatalogError(f"{path}: field {field}: {problem}")


def _format(path: str, exc: ValidationError) -> str:
    """validation_lines with the offending value added to type and bound errors, as one line."""
    lines = validation_lines(path, exc)
    for i, err in enumerate(exc.errors()):
        if i < len(lines) and (err["type"].endswith("_type") or err["type"] == "literal_error"):
            lines[i] += f", got {err['input']!r} ({type(err['input']).__name__})"
        elif i < len(lines) and err["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            lines[i] += f", got {err['input']!r}"
    return one_line(lines)


def _precheck(data: dict, path: str) -> None:
    """Errors pydantic would word poorly: Hugging Face aliases, and a missing or non-table section."""
    for section in ("source", "config", "perfmodel"):
        if section in data and not isinstance(data[section], dict):
            raise field_error(path, section, f"must be a table ([{section}]), got {type(data[section]).__name__}")
    for key in data.get("config", {}) or {}:
        if key in HF_ALIASES:
            raise field_error(path, f"config.{key}",
                              f"unknown key (not in the schema): {key!r} is the Hugging Face alias "
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
        raise field_error(path, "name", f"must equal the file name {expect_name!r}, got {wf.name!r}")
    c, p, s = wf.config, wf.perfmodel, wf.source
    if not (s.retrieved.strip() or s.version.strip()):
        raise field_error(path, "source.retrieved", "required field is missing: give 'retrieved' (date read) or "
                          "'version' (document version)")
    if s.parameters is not None and not s.parameters_source.strip():
        raise field_error(path, "source.parameters_source", "required with 'parameters': where the published count "
                          "comes from (model card / paper / safetensors total)")
    if s.active_parameters is not None and s.parameters is None:
        raise field_error(path, "source.parameters", "required with 'active_parameters' (the published total)")

    def once(key: str) -> bool:
        in_c, in_p = getattr(c, key), getattr(p, key)
        if in_c is not None and in_p is not None:
            raise field_error(path, f"perfmodel.{key}", "also given in [config]; state it once ([config] when "
                              "config.json has it, else [perfmodel])")
        if in_c is None and in_p is None:
            raise field_error(path, f"perfmodel.{key}", "required field is missing (state it in [config] when "
                              "config.json has it, else in [perfmodel])")
        return bool(in_c if in_c is not None else in_p)

    attention_bias, mlp_bias = once("attention_bias"), once("mlp_bias")
    D, H = c.hidden_size, c.num_attention_heads
    K = c.num_key_value_heads if c.num_key_value_heads is not None else H
    mla = c.kv_lora_rank > 0
    if c.head_dim is not None:
        head_dim = c.head_dim
    elif mla:
        head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
    elif D % H:
        raise field_error(path, "config.head_dim", f"required when hidden_size ({D}) is not a multiple of "
                          f"num_attention_heads ({H})")
    else:
        head_dim = D // H
    arch = ModelArch(
        name=wf.name, display_name=wf.display_name, model_type=c.model_type, hidden_size=D,
        num_hidden_layers=c.num_hidden_layers, num_attention_heads=H, num_key_value_heads=K, head_dim=head_dim,
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
        attn_output_gate=c.attn_output_gate, qk_norm_per_layer=p.qk_norm_per_layer,
        partial_rotary_factor=c.partial_rotary_factor, shared_expert_gate=p.shared_expert_gate,
        linear_num_key_heads=c.linear_num_key_heads, linear_num_value_heads=c.linear_num_value_heads,
        linear_key_head_dim=c.linear_key_head_dim, linear_value_head_dim=c.linear_value_head_dim,
        linear_conv_kernel_dim=c.linear_conv_kernel_dim, linear_state_dtype=DType(p.linear_state_dtype),
        index_n_heads=c.index_n_heads, index_head_dim=c.index_head_dim, index_topk=c.index_topk,
        weight_dtype=DType(p.weight_dtype),
        expert_weight_dtype=DType(p.expert_weight_dtype) if p.expert_weight_dtype else None,
        published_parameters=float(s.parameters or 0.0),
        published_active_parameters=float(s.active_parameters or 0.0),
        published_active_excludes_embeddings=s.active_parameters_excludes_embeddings,
        parameters_source=s.parameters_source, config_source=s.config_url, notes=wf.notes,
        extra=tuple((k, v) for k, v in (("retrieved", s.retrieved), ("version", s.version),
                                         ("source_note", s.note)) if v))
    try:
        arch.validate()  # the rules workload what-ifs meet too (core/workload_checks.py)
    except ArchError as exc:
        raise field_error(path, file_field(exc.field), exc.problem) from None
    return arch


def file_field(name: str) -> str:
    """Where a ModelArch field sits in a workload file: [source], [perfmodel] or [config]."""
    if name in _SOURCE_FIELDS:
        return _SOURCE_FIELDS[name]
    return f"perfmodel.{name}" if name in _Perfmodel.model_fields else f"config.{name}"


_SOURCE_FIELDS = {"published_parameters": "source.parameters",
                  "published_active_parameters": "source.active_parameters"}


def load_workload_file(path: str | Path) -> ModelArch:
    """Read and validate one workload file (not cached); `name` must equal the file's stem."""
    path = Path(path)
    return build_arch(read_toml(path), path, expect_name=path.stem)


@lru_cache(maxsize=128)
def _load(name: str, root: Path) -> ModelArch:
    path = root / "workloads" / f"{name}.toml"
    known = list_workloads(root)
    if name not in known:  # a key, never a path ('../x' names no file outside the catalogue)
        raise CatalogError(f"{path}: no such workload {name!r}{did_you_mean(name, known)} "
                           f"(known: {', '.join(known) or 'none'})")
    return load_workload_file(path)


WORKLOAD_REFS = ("a catalogue key (perfmodel workloads list), a path to a workload .toml or a Hugging Face "
                 "config.json, or a Hugging Face model id in the local Hugging Face cache")


def load_workload(name: str, root: str | Path | None = None) -> ModelArch:
    """The ModelArch for catalogue key `name` (workloads/<name>.toml under `root`, default catalog_root()), or for a
    workload file's path (NAME.toml anywhere, read each time). Keys are cached; call clear_cache() after editing
    files. A config.json or a Hugging Face id: workload_refs.load."""
    if name.endswith(".toml"):  # a workload file anywhere
        if not Path(name).is_file():
            raise CatalogError(f"{name}: no such workload file; a workload is {WORKLOAD_REFS}")
        return load_workload_file(Path(name))
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


# field names of the [config] and [perfmodel] tables, in schema order (hf_import writes them so)
CONFIG_FIELDS = tuple(_Config.model_fields)
PERFMODEL_FIELDS = tuple(_Perfmodel.model_fields)


def list_drafts(root: str | Path | None = None) -> list[str]:
    """Speculative-decoding drafts (workloads/drafts/*.toml): small models that propose tokens for a target,
    not served on their own (no published parameter count is required of them)."""
    root = Path(root) if root is not None else catalog_root()
    return sorted(p.stem for p in (root / "workloads" / "drafts").glob("*.toml"))


def load_draft(name: str, root: str | Path | None = None) -> ModelArch:
    """The ModelArch of draft `name` (workloads/drafts/<name>.toml); one line naming the known drafts else."""
    root = Path(root) if root is not None else catalog_root()
    known = list_drafts(root)
    if name not in known:
        raise CatalogError(f"{root / 'workloads' / 'drafts'}: no such draft {name!r}{did_you_mean(name, known)} "
                           f"(known: {', '.join(known) or 'none'})")
    return load_workload_file(root / "workloads" / "drafts" / f"{name}.toml")
