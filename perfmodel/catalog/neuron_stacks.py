"""Neuron software-stack profiles: hardware_specs/stacks/neuron.toml.

    [stacks.<name>]                      description, role ("serving" | "training"), names (the words a row's
                                         text uses for the stack)
    [stacks.<name>.params.<param>]       value, kind, status, reason, source (+ fit for "fitted")

A stack profile holds the rules of one Neuron software line that decide how a model runs on Neuron
hardware (STACK_PARAMS): flash_attention (1: NKI flash attention; 0: scores materialised), the bucket
rules (context_bucket_ratio: context-encoding buckets as a share of the token buckets;
decode_spans_compiled_length: 1 when a decode step reads the KV cache over the whole compiled length;
context_spans_compiled_length: 1 when the context graph computes the whole compiled context, not a bucket;
decode_runs_compiled_batch: 1 when a decode step computes every line of the compiled batch, idle ones padded),
the runtime's in-node collective algorithms (intranode_direct_max_ranks, intranode_multistep_algorithms), how its
MoE layers run their experts (moe_kernel_block: NxD's all-experts, selective and padded-block rules,
model/moe_kernels.py; 0 = grouped GEMMs),
the fixed cost of each operator instance in its compiled graphs (op_overhead: instruction issue, semaphore
waits between engines, DMA descriptor set-up, the engines' ramp after idle) - these three replace the
calibration parameters of the same names while the stack is in use - and the host time per graph
execution (step_host_latency). A serving stack states all of them; a training stack (role "training": its
graphs are whole training steps, no buckets, no per-token host loop) states TRAINING_PARAMS. The stack is
chosen by the scenario or by a row's text (`named_in`), never by the chip family.

Every parameter carries status and source like the serving-engine profiles (serving_engines.Setting),
parsed and range-checked as calibration parameters are.

Does not: compute anything.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from perfmodel.catalog.root import catalog_root, read_toml
from perfmodel.catalog import serving_engines
from perfmodel.catalog.serving_engines import _Param, _profile
from perfmodel.catalog.spec_schema import STRICT, CatalogError, validate_file
from perfmodel.core.errors import did_you_mean
from perfmodel.core.profiles import Profile, Stack

if TYPE_CHECKING:
    from perfmodel.catalog.replacements import Replacements

STACK_PARAMS = ("flash_attention", "context_bucket_ratio", "decode_spans_compiled_length",
                "context_spans_compiled_length", "decode_runs_compiled_batch", "intranode_direct_max_ranks",
                "intranode_multistep_algorithms", "op_overhead", "step_host_latency", "moe_kernel_block")
TRAINING_PARAMS = ("flash_attention", "intranode_direct_max_ranks", "intranode_multistep_algorithms", "op_overhead")
ROLES = {"serving": STACK_PARAMS, "training": TRAINING_PARAMS}
SERVING_DEFAULT = "nxd-inference"  # today's Neuron serving stack: what a measurement row naming none ran


class _Stack(BaseModel):
    model_config = STRICT
    description: str = ""
    role: Literal["serving", "training"] = "serving"
    names: list[str]
    params: dict[str, _Param]


class _File(BaseModel):
    model_config = STRICT
    schema_version: Literal[1]
    stacks: dict[str, _Stack]


def _stack(path: str, name: str, table: _Stack) -> Stack:
    if not table.names:
        raise CatalogError(f"{path}: stacks.{name}.names: give at least one word a row's text uses for the stack")
    prof = _profile(path, "stacks", name, table, ROLES[table.role])  # the engine profiles' checks and parsing
    return Stack(name, table.description, prof.params, tuple(table.names), table.role)


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Stack]:
    path = path or str(catalog_root() / "hardware_specs" / "stacks" / "neuron.toml")
    f = validate_file(_File, read_toml(Path(path)), path, None)
    return {n: _stack(path, n, t) for n, t in f.stacks.items()}


def stacks(path: str = "", role: str = "", replaced: Replacements | None = None) -> dict[str, Stack]:
    """Every profile (or those of one role: "serving", "training"), with those `replaced` holds."""
    out = {**_load(path), **(replaced.stacks if replaced else {})}
    return {n: s for n, s in out.items() if s.role == role} if role else out


def stack(name: str, replaced: Replacements | None = None) -> Stack:
    known = stacks(replaced=replaced)
    if name not in known:
        raise CatalogError(f"unknown Neuron software stack {name!r}{did_you_mean(name, known)} "
                           f"(known: {', '.join(known)})")
    return known[name]


def named_in(text: str, role: str = "serving", replaced: Replacements | None = None) -> str:
    """The stack of `role` a row's text names ('' when none): the first profile one of whose names it contains."""
    low = str(text).lower()
    return next((n for n, s in stacks(role=role, replaced=replaced).items() if any(w.lower() in low for w in s.names)),
                "")


def for_system(name: str, role: str, system, replaced: Replacements | None = None) -> Stack:
    """The stack `name` for a `role` scenario on `system`; ValueError (one line) when it is another role's or the
    system is not a Neuron one."""
    st = stack(name, replaced)
    if st.role != role:
        mine = ", ".join(stacks(role=role))
        raise ValueError(f"{name!r} is a Neuron {st.role} stack, not a {role} one ({role} stacks: {mine})")
    if not system.chip.family.is_neuron:
        raise ValueError(f"{name!r} is a Neuron software stack; {system.name} is not a Neuron system")
    return st


def software(name: str, system, replaced: Replacements | None = None) -> Profile | None:
    """What the serving engine `name` means on `system`, resolved at the edge (ServingOptions.software): a Neuron
    serving stack (a Stack; ValueError off Neuron hardware), a GPU serving-engine profile, or None for "" (the
    accelerator alone). ValueError (one line) for a training stack or an unknown name."""
    if not name:
        return None
    serving = stacks(role="serving", replaced=replaced)
    if name in serving:
        return for_system(name, "serving", system, replaced)
    gpu, neuron = list(serving_engines.engines(replaced=replaced)), list(serving)
    if name in stacks(replaced=replaced):
        raise ValueError(f"serving option engine: {name!r} is a Neuron training stack (perfmodel train "
                         f"--stack); serving stacks: {', '.join(neuron)}")
    if name not in gpu:
        raise ValueError(f"unknown serving engine {name!r}{did_you_mean(name, gpu + neuron)} "
                         f"(serving engines: {', '.join(gpu)}; Neuron software stacks: {', '.join(neuron)})")
    return serving_engines.engine(name, replaced=replaced)
