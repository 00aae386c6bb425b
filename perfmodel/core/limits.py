"""Ceilings for the counts and magnitudes read at the edge (files, what-ifs, CLI options, scenarios).

Each ceiling is far above any real model, cluster or quantity, so it never refuses a real input:
it is there so that a typo or a hostile value (num_hidden_layers=1e8, --chips 1e12, '1e99 TB/s')
is refused in one line where it enters, instead of costing minutes of CPU, memory or an
overflow deep inside the model. Raise one when a real model or system comes near it.

`check_count` is the one wording of "a whole number in [lo, hi]" that every validator uses.

Does not: read files or know which field belongs where (the loaders and validators do).
"""

from __future__ import annotations

import math
import numbers

# --- model structure (workload files, workload what-ifs)
# the deepest published models have ~100-200 layers (GPT-3 96, Llama 3.1 405B 126)
MAX_LAYERS = 2**14
# attention and KV heads: published models have at most 128 (DeepSeek-V3, Llama 3.1 405B)
MAX_HEADS = 2**14
# hidden, head, MLP, expert and latent widths: the widest published MLP is PaLM 540B's 73,728
MAX_WIDTH = 2**20
# a linear-attention layer's short causal convolution: published kernels are 4 tokens (Qwen3-Next,
# Qwen3.5, Mamba-2); a kernel this long would be a sequence-length filter, not a short conv
MAX_CONV_KERNEL = 2**13
# vocabulary (and token-type) entries: published vocabularies are at most ~262k (Gemma 3)
MAX_VOCAB = 2**24
# routed and shared experts: production MoEs have at most 384 (Kimi K2); PEER (He, 2024) routes
# over 1,024^2 tiny experts, the largest count in the literature
MAX_EXPERTS = 2**20
# tokens in one sequence, context or position table: the longest announced context is ~100 M
# tokens (Magic LTM-2-mini), five times below this
MAX_SEQ_TOKENS = 2**29

# --- scenarios and plans (CLI options, sweeps, the app)
# sequences per step, micro-batches or concurrent requests: training batches are ~10^3-10^4
# sequences and serving batches at most ~10^4; this is over a thousand times more
MAX_BATCH = 2**24
# chips in one plan, parallel group or collective: the largest announced cluster is ~500k
# Trainium2 chips (Project Rainier), half of this
MAX_CHIPS = 2**20

# --- quantities (any value with a unit, in SI)
# larger than any quantity the model meets by many orders: a zettaFLOP/s machine is 1e21 FLOP/s,
# an exabyte 1e18 B, a century 3e9 s; anything above is a typo or an attack, not a what-if
MAX_QUANTITY_SI = 1e30


def check_count(value, what: str, lo: int = 1, hi: int = MAX_CHIPS) -> int:
    """`value` as an int when it is a whole number in [lo, hi]; else ValueError naming `what`,
    the value and the allowed range. Floats that are whole (40.0) are accepted; bools are not."""
    # a plain int first (a scenario's fields): the ABC check below costs more than the rest of the function
    whole = type(value) is int or isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy ints
    if whole:
        value = int(value)
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        whole, value = True, int(value)
    if not whole:
        raise ValueError(f"{what}: must be a whole number between {lo} and {hi:,}, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{what}: must be between {lo} and {hi:,}, got {value:,}")
    return value
