"""Import a workload from a local Hugging Face config.json: the text of a workloads/<name>.toml file.

Aliases are mapped to the names used here (HF_ALIASES); the [perfmodel] structural fields
config.json does not state are inferred from model_type (_FAMILIES, from transformers' modelling
code per family), each written with a comment saying why; the result is validated by the same
strict loader as a hand-written file (workload_files.build_arch) before it is returned.

Does not: fetch anything over the network or guess a family it does not know (clear error).
"""

from __future__ import annotations

import json
import textwrap
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from perfmodel.catalog.spec_schema import SCHEMA_VERSION, CatalogError
from perfmodel.catalog.workload_files import CONFIG_FIELDS, HF_ALIASES, PERFMODEL_FIELDS, build_arch, field_error

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
        raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_repeats)
    except OSError as exc:
        raise CatalogError(f"{p}: cannot read file: {exc.strerror or exc}") from None
    except _RepeatedKey as exc:
        raise field_error(p, str(exc), "given twice in config.json (JSON would keep the last silently)") from None
    except RecursionError:
        raise CatalogError(f"{p}: malformed JSON: nested too deeply to be a config.json") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of thousands of digits
        raise CatalogError(f"{p}: malformed JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(raw, dict):
        raise field_error(p, "(top level)", "a config.json must be a JSON object")
    if name is None:
        name = path.parent.name if path.stem == "config" else path.stem
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise field_error(p, "model_type", "required field is missing" if model_type is None else
                          f"expected a string, got {model_type!r}")
    if model_type not in _FAMILIES:
        raise field_error(p, "model_type", f"cannot infer the structural fields of {model_type!r}; "
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
            raise field_error(p, hf_key, f"expected an integer, got {v!r}")
        put(key, v, hf_key)
    for key in _REQUIRED:
        if key not in cfg:
            aliases = [a for a, c in HF_ALIASES.items() if c == key]
            also = f" (also looked for {', '.join(aliases)})" if aliases else ""
            raise field_error(p, key, f"required field is missing{also}")
    D = cfg["hidden_size"][0]
    if "intermediate_size" not in cfg:
        if model_type == "gpt2":
            put("intermediate_size", 4 * D, None,
                f"n_inner is {'null' if 'n_inner' in raw else 'absent'} in config.json: GPT-2 uses 4 * n_embd")
        else:
            raise field_error(p, "intermediate_size", "required field is missing")

    # strings and booleans
    for key in ("hidden_act",):
        hf_key, v = take(key)
        if hf_key is None:
            put(key, fam[key], None, f"not in config.json: {label} default")
        elif not isinstance(v, str):
            raise field_error(p, hf_key, f"expected a string, got {v!r}")
        else:
            put(key, v, hf_key)
    for key in ("tie_word_embeddings", "attention_bias", "mlp_bias"):
        hf_key, v = take(key)
        if hf_key is None:
            if key == "tie_word_embeddings":
                put(key, fam[key], None, f"not in config.json: {label} default")
            continue
        if not isinstance(v, bool):
            raise field_error(p, hf_key, f"expected true or false, got {v!r}")
        put(key, v, hf_key)

    # attention window
    hf_key, v = take("layer_types")
    if hf_key is not None:
        if not (isinstance(v, list) and all(x in ("full_attention", "sliding_attention") for x in v)):
            raise field_error(p, "layer_types", f"expected a list of 'full_attention' / 'sliding_attention', got {v!r}")
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
            raise field_error(p, "position_embedding_type", f"only 'absolute' is supported, got {pet!r}")
    if fam.get("expert_width_is_intermediate") and "num_experts" in cfg and "moe_intermediate_size" not in cfg:
        put("moe_intermediate_size", cfg["intermediate_size"][0], None,
            f"not in config.json: {label} experts are intermediate_size wide")
    if model_type == "gpt_oss" and "experts_per_token" in raw:
        used.add("experts_per_token")
        if "num_experts_per_tok" not in cfg:
            put("num_experts_per_tok", raw["experts_per_token"], "experts_per_token")
        elif raw["experts_per_token"] != cfg["num_experts_per_tok"][0]:
            raise field_error(p, "experts_per_token",
                              f"{raw['experts_per_token']!r} disagrees with num_experts_per_tok "
                              f"{cfg['num_experts_per_tok'][0]!r}")
    if model_type == "qwen3_moe":
        for key, ok in (("decoder_sparse_step", 1), ("mlp_only_layers", [])):
            if key in raw:
                used.add(key)
                if raw[key] not in (ok, None):
                    raise field_error(p, key, f"only {ok!r} is supported (every layer MoE), got {raw[key]!r}")
    if model_type == "deepseek_v3":
        if raw.get("moe_layer_freq", 1) != 1:
            raise field_error(p, "moe_layer_freq", f"only 1 is supported, got {raw['moe_layer_freq']!r}")
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
            raise field_error(p, "torch_dtype", f"cannot map {torch_dtype!r}; known: {', '.join(_TORCH_DTYPES)}")
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
                raise field_error(p, "quantization_config", "MXFP4 is mapped only for mixture-of-experts weights")
            if torch_dtype is None:
                base_why = "no torch_dtype in config.json; modules_to_not_convert (attention, router, embeddings, " \
                           "lm_head) ship in bf16"
                base = "bf16"
            perf["weight_dtype"] = (base, base_why)
            perf["expert_weight_dtype"] = ("mxfp4", "quantization_config.quant_method = 'mxfp4': expert weights ship "
                                           "as MXFP4 blocks with E8M0 scales")
        else:
            raise field_error(p, "quantization_config.quant_method", f"cannot map {method!r} (known: fp8, mxfp4)")
    elif quant is not None:
        raise field_error(p, "quantization_config", f"expected an object, got {quant!r}")
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
    order = ["model_type"] + [k for k in CONFIG_FIELDS if k != "model_type"]
    cfg["model_type"] = (model_type, "")
    for key in order:
        if key in cfg:
            lines.append(_line(key, *cfg[key]))
    lines += ["", "[perfmodel]"]
    for key in PERFMODEL_FIELDS:
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
