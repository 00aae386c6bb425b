"""Which catalogue workload a model name in measured data means, and which words of the name did not matter.

People name a model with its publisher, purpose, framework and checkpoint variant: "meta-llama/Llama-3.1-70B-
Instruct", "nvidia/Llama-3.1-8B-Instruct-FP8", "DeepSeek-V3-0324", "Llama 3 70B pre-training (Megatron)". None of
those words changes the architecture. `resolve` drops them by rule and records what it dropped:

    publisher        the Hugging Face organisation ("org/"), a 'Meta-' prefix
    brackets         "(Megatron)", "(NeMo 24.07)": a framework or a remark
    purpose          pre-training, fine-tuning, SFT, LoRA, inference, training, benchmark
    checkpoint       -instruct, -chat, -hf, -base, -it; quantised copies (-fp8, -fp4, -nvfp4, -mxfp4, -int4,
                     -int8, -awq, -gptq, -w4a16, -w8a8, -bf16, -dynamic); date tags (-0324, -0528, -2507)

then looks the rest up among the workload files' names and their `aliases` (another name of the same
architecture: DeepSeek-R1 is DeepSeek-V3's config.json; CodeLlama-13B is Llama-2-13B's), spelling aside
(lower case, separators as '-').

    resolve(name)  (workload or '', the words dropped)

Does not: load a workload (workload_files) or guess from a size alone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from perfmodel.catalog.files import catalog_root, read_toml
from perfmodel.catalog.spec_schema import CatalogError

_BRACKETS = re.compile(r"\s*[(\[][^)\]]*[)\]]")
_PURPOSE = re.compile(r"[-\s]*\b(pre-?training|fine-?tuning|sft|lora|inference|training|benchmark)\b", re.I)
_SUFFIX = re.compile(r"-(instruct|chat|hf|base|it|fp8|fp4|nvfp4|mxfp4|int4|int8|awq|gptq|w4a16|w8a8|bf16|dynamic|"
                     r"\d{4})$")


def key(name) -> str:
    return re.sub(r"-+", "-", re.sub(r"[\s_]+", "-", str(name).strip().lower())).strip("-")


@lru_cache(maxsize=8)
def _index(root: str) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for path in sorted((Path(root) / "workloads").glob("*.toml")):
        data = read_toml(path)
        for name in [path.stem, data.get("display_name", ""), *data.get("aliases", ())]:
            k = key(name)
            if k and out.get(k, path.stem) != path.stem:
                raise CatalogError(f"{path}: alias {name!r} also names workload {out[k]!r}: a model name must mean "
                                   "one architecture")
            if k:
                out.setdefault(k, path.stem)
    return tuple(out.items())


def index(root: Path | None = None) -> dict[str, str]:
    return dict(_index(str(root or catalog_root())))


def clear_cache() -> None:
    _index.cache_clear()


def _resolve(text: str, names: dict[str, str]) -> tuple[str, list[str]]:
    dropped = []
    if "/" in text:
        org, text = text.rsplit("/", 1)
        dropped.append(org.strip() + "/")
    dropped += [m.group(0).strip(" -") for m in _PURPOSE.finditer(text)]
    k = key(_PURPOSE.sub("", text))
    if k.startswith("meta-"):
        k, dropped = k.removeprefix("meta-"), dropped + ["meta-"]
    while k not in names and _SUFFIX.search(k):
        dropped.append(_SUFFIX.search(k).group(0))
        k = _SUFFIX.sub("", k)
    return names.get(k, ""), dropped


def resolve(name, root: Path | None = None) -> tuple[str, list[str]]:
    """(catalogue workload, the words dropped to find it); ('', dropped) when none matches. A bracket is a remark
    ("(Megatron)") or the model's id ("Llama 3.1 70B Instruct (meta-llama/Llama-3.1-70B-Instruct)"): the name
    without it is tried first, then what it holds."""
    names = index(root)
    text = str(name).strip()
    inside = [m.group(0) for m in _BRACKETS.finditer(text)]
    found, dropped = _resolve(_BRACKETS.sub("", text), names)
    for b in inside if not found else ():
        found, dropped = _resolve(b.strip(" ()[]"), names)
        if found:
            return found, dropped
    return found, [b.strip() for b in inside] + dropped
