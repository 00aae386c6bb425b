"""Import a workload from a local Hugging Face config.json: the text of a workloads/<name>.toml file.

Aliases are mapped to the names used here (HF_ALIASES); a multimodal config.json's text_config is
the model; the [perfmodel] structural fields config.json does not state are inferred from model_type
(hf_families.FAMILIES, from transformers' modelling code per family), each written with a comment
saying why; the result is validated by the same strict loader as a hand-written file
(workload_files.build_arch) before it is returned.

Does not: fetch anything over the network or guess a family it does not know (clear error).
"""

from __future__ import annotations

import json
import textwrap
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from perfmodel.catalog.hf_families import FAMILIES, TORCH_DTYPES, WHY, ImportState, apply_family, weight_dtypes
from perfmodel.catalog.spec_schema import SCHEMA_VERSION, CatalogError
from perfmodel.catalog.workload_files import CONFIG_FIELDS, HF_ALIASES, PERFMODEL_FIELDS, build_arch, field_error
from perfmodel.core import input_files

_INT_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
             "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size", "num_experts",
             "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts", "shared_expert_intermediate_size",
             "first_k_dense_replace", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
             "v_head_dim", "sliding_window", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
             "linear_value_head_dim", "linear_conv_kernel_dim", "index_n_heads", "index_head_dim", "index_topk")
_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "max_position_embeddings")
_LAYER_TYPES = ("full_attention", "sliding_attention", "linear_attention")


class _RepeatedKey(Exception):
    """A key written twice in one JSON object (its name is the message)."""


def _no_repeats(pairs: list) -> dict:
    """json object_pairs_hook: the object, refusing a key given twice."""
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _RepeatedKey(k)
        out[k] = v
    return out


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


def _read(path: Path) -> dict:
    p = str(path)
    try:
        raw = json.loads(input_files.read_text(path, "file"), object_pairs_hook=_no_repeats)
    except input_files.InputError as exc:
        raise CatalogError(str(exc)) from None
    except RecursionError:
        raise CatalogError(f"{p}: not JSON: nested too deeply to parse") from None
    except _RepeatedKey as exc:
        raise field_error(p, str(exc), "given twice in config.json (JSON would keep the last silently)") from None
    except RecursionError:
        raise CatalogError(f"{p}: malformed JSON: nested too deeply to be a config.json") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of thousands of digits
        raise CatalogError(f"{p}: malformed JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(raw, dict):
        raise field_error(p, "(top level)", "a config.json must be a JSON object")
    return raw


def _text_decoder(raw: dict, p: str) -> tuple[dict, list[str]]:
    """A multimodal config.json's language model: text_config's keys over the top level's (transformers
    builds the text model from text_config; tie_word_embeddings and the like may sit at the top). The
    vision encoder is not modelled: the header says so."""
    text = raw.get("text_config")
    if text is None:
        return raw, []
    if not isinstance(text, dict):
        raise field_error(p, "text_config", f"expected an object, got {text!r}")
    merged = {k: v for k, v in raw.items() if k != "text_config"}
    merged.update(text)
    vision = [k for k, v in raw.items() if k.startswith("vision") and isinstance(v, dict)]
    return merged, [f"text_config of a {raw.get('model_type')!r} config.json: the text decoder is modelled"
                    + (f"; {', '.join(vision)} (the vision encoder) is not" if vision else "")]


def _partial_rotary(st: ImportState) -> None:
    """partial_rotary_factor at the top level or inside rope_parameters / rope_scaling."""
    for holder in ("rope_parameters", "rope_scaling"):
        inner = st.raw.get(holder)
        if isinstance(inner, dict) and "partial_rotary_factor" in inner:
            st.used.add(holder)
            st.raw = {**st.raw, "partial_rotary_factor": inner["partial_rotary_factor"]}
    hf_key, v = st.take("partial_rotary_factor")
    if hf_key is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise field_error(st.path, hf_key, f"expected a number, got {v!r}")
    if v != 1:
        st.put("partial_rotary_factor", float(v), hf_key)


def _layer_types(st: ImportState) -> None:
    hf_key, v = st.take("layer_types")
    if hf_key is not None:
        if not (isinstance(v, list) and all(x in _LAYER_TYPES for x in v)):
            bad = next((x for x in v if x not in _LAYER_TYPES), v) if isinstance(v, list) else v
            raise field_error(st.path, "layer_types", f"unknown layer type {bad!r} (perfmodel models "
                                                      f"{', '.join(_LAYER_TYPES)})")
        if set(v) != {"full_attention"}:
            st.put("layer_types", v, hf_key)
    use_sw = st.get("use_sliding_window")
    if use_sw is False and "sliding_window" in st.cfg:
        st.cfg.pop("sliding_window")
    if "sliding_window" in st.cfg and st.cfg["sliding_window"][0] == 0:
        st.cfg.pop("sliding_window")


def import_hf_config(path: str | Path, name: str | None = None) -> str:
    """Text of a workload TOML file made from a local Hugging Face config.json (no network access).

    Aliases are mapped to the names used here (GPT-2 n_embd/n_layer/n_head/n_positions/n_inner,
    Mixtral/gpt-oss num_local_experts, DeepSeek n_routed_experts/n_shared_experts); a multimodal
    config's text_config is read as the model (the vision encoder is not modelled); the [perfmodel]
    structural fields are inferred from model_type (hf_families.py), each with a comment saying so;
    the config keys not used are listed in a comment. `name` defaults to the file's stem (its folder's
    name for "config.json"). [source] gets the file's URI and today's date; add the published parameter
    count and its source by hand. Raises CatalogError naming the file and field for anything it cannot
    map, a layer kind it does not model included. The text is validated before it is returned; write
    it with write_workload().
    """
    path = Path(path)
    p = str(path)
    raw, notes = _text_decoder(_read(path), p)
    if name is None:
        name = path.parent.name if path.stem == "config" else path.stem
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise field_error(p, "model_type", "required field is missing" if model_type is None else
                          f"expected a string, got {model_type!r}")
    if model_type not in FAMILIES:
        raise field_error(p, "model_type", f"cannot infer the structural fields of {model_type!r}; "
                          f"known: {', '.join(sorted(FAMILIES))}")
    st = ImportState(raw=raw, path=p, model_type=model_type, used={"model_type", "text_config"}, notes=notes)
    fam = st.fam
    label = fam["label"]

    # integers
    for key in _INT_KEYS:
        hf_key, v = st.take(key)
        if hf_key is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise field_error(p, hf_key, f"expected an integer, got {v!r}")
        st.put(key, v, hf_key)
    for key in _REQUIRED:
        if key not in st.cfg:
            aliases = [a for a, c in HF_ALIASES.items() if c == key]
            also = f" (also looked for {', '.join(aliases)})" if aliases else ""
            raise field_error(p, key, f"required field is missing{also}")
    D = st.cfg["hidden_size"][0]
    if "intermediate_size" not in st.cfg:
        if model_type == "gpt2":
            st.put("intermediate_size", 4 * D, None,
                   f"n_inner is {'null' if 'n_inner' in raw else 'absent'} in config.json: GPT-2 uses 4 * n_embd")
        elif fam.get("no_dense_mlp") and "moe_intermediate_size" in st.cfg:
            st.put("intermediate_size", st.cfg["moe_intermediate_size"][0], None,
                   f"not in config.json: {label} has no dense MLP; set to moe_intermediate_size, unused")
        else:
            raise field_error(p, "intermediate_size", "required field is missing")

    # strings and booleans
    hf_key, v = st.take("hidden_act")
    if hf_key is None:
        st.put("hidden_act", fam["hidden_act"], None, f"not in config.json: {label} default")
    elif not isinstance(v, str):
        raise field_error(p, hf_key, f"expected a string, got {v!r}")
    else:
        st.put("hidden_act", v, hf_key)
    for key in ("tie_word_embeddings", "attention_bias", "mlp_bias", "attn_output_gate"):
        hf_key, v = st.take(key)
        if hf_key is None:
            if key == "tie_word_embeddings":
                st.put(key, fam[key], None, f"not in config.json: {label} default")
            continue
        if not isinstance(v, bool):
            raise field_error(p, hf_key, f"expected true or false, got {v!r}")
        st.put(key, v, hf_key)

    _layer_types(st)
    _partial_rotary(st)
    if model_type == "bert":
        pet = st.get("position_embedding_type", "absolute")
        if pet != "absolute":
            raise field_error(p, "position_embedding_type", f"only 'absolute' is supported, got {pet!r}")
    if model_type == "gpt_oss" and "experts_per_token" in raw:
        st.used.add("experts_per_token")
        if "num_experts_per_tok" not in st.cfg:
            st.put("num_experts_per_tok", raw["experts_per_token"], "experts_per_token")
        elif raw["experts_per_token"] != st.cfg["num_experts_per_tok"][0]:
            raise field_error(p, "experts_per_token",
                              f"{raw['experts_per_token']!r} disagrees with num_experts_per_tok "
                              f"{st.cfg['num_experts_per_tok'][0]!r}")
    if model_type == "qwen3_moe":
        st.require("decoder_sparse_step", lambda v: v == 1, "only 1 is supported (every layer MoE)")
        st.require("mlp_only_layers", lambda v: v == [], "only [] is supported (every layer MoE)")
    apply_family(st)

    # [perfmodel]
    for key in ("norm", "gated_mlp", "position_embedding", "encoder_only", "attention_bias", "mlp_bias",
                "router_bias", "qk_norm", "attention_sinks", "pooler"):
        if key in st.cfg or key in st.perf:
            continue  # stated by config.json, or by the family's own keys
        value = fam.get(key, False)
        if key in ("attention_bias", "mlp_bias", "norm", "gated_mlp", "position_embedding") or value:
            why = WHY.get(key, {}).get(value, "")
            st.perf[key] = (value, f"inferred from model_type {model_type!r} ({label})" + (f": {why}" if why else ""))
    # weight data type as shipped
    torch_dtype = raw.get("torch_dtype", raw.get("dtype"))
    st.used.update(k for k in ("torch_dtype", "dtype") if k in raw)
    if torch_dtype is not None:
        if torch_dtype not in TORCH_DTYPES:
            raise field_error(p, "torch_dtype", f"cannot map {torch_dtype!r}; known: {', '.join(TORCH_DTYPES)}")
        base, base_why = TORCH_DTYPES[torch_dtype], f"torch_dtype = {torch_dtype!r} in config.json"
    else:
        base = fam.get("weight_dtype", "bf16")
        base_why = f"no torch_dtype in config.json: {label} checkpoints ship {base}"
    weight_dtypes(st, base, base_why)
    return _assemble(st, path, name)


def _assemble(st: ImportState, path: Path, name: str) -> str:
    """The TOML text, validated by the strict loader (naming the config.json and its key on failure)."""
    raw, p = st.raw, str(path)
    dropped = sorted(k for k in raw if k not in st.used)
    lines = [
        f"# Imported by perfmodel.workload_files.import_hf_config from {path.name}.",
        "# [perfmodel] values marked 'inferred' come from model_type, not from config.json: check them.",
    ]
    if dropped:
        lines += textwrap.wrap("config.json keys not used by perfmodel (dropped): " + ", ".join(dropped), width=98,
                               initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False)
    lines += [f"# note: {n}" for n in st.notes]
    lines += ["", _line("schema_version", SCHEMA_VERSION), _line("name", name), _line("display_name", name), "",
              "[source]", _line("config_url", path.resolve().as_uri(), "local file this was imported from")]
    if isinstance(raw.get("_name_or_path"), str) and raw["_name_or_path"]:
        lines.append(f"# _name_or_path in config.json: {raw['_name_or_path']}")
    lines += [_line("retrieved", date.today().isoformat(), "date imported"),
              "# parameters = ...          (published total; add with parameters_source)",
              "# parameters_source = \"...\" (model card / paper / safetensors total)", "", "[config]"]
    order = ["model_type"] + [k for k in CONFIG_FIELDS if k != "model_type"]
    st.cfg["model_type"] = (st.model_type, "")
    for key in order:
        if key in st.cfg:
            lines.append(_line(key, *st.cfg[key]))
    lines += ["", "[perfmodel]"]
    for key in PERFMODEL_FIELDS:
        if key in st.perf:
            lines.append(_line(key, *st.perf[key]))
    text = "\n".join(lines) + "\n"

    try:  # validate, naming the config.json and its key on failure
        build_arch(tomllib.loads(text), p, expect_name=name)
    except CatalogError as exc:
        msg = str(exc).replace(f"{p}: field config.", f"{p}: field ")
        msg = msg.replace(f"{p}: field perfmodel.", f"{p}: field (inferred) ")
        raise CatalogError(msg) from None
    return text
