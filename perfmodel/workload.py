"""Model architecture records (Hugging Face config.json field names) and parameter counts.

Letters used in formulas (scaling-book convention):
    D = hidden_size, L = num_hidden_layers, H = num_attention_heads,
    K = num_key_value_heads, d_h = head_dim, F = intermediate_size, V = vocab_size,
    E = num_experts, k = num_experts_per_tok, F_e = moe_intermediate_size.

Does not: read files (catalog_workloads.py does) or know about hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class AttentionKind(str, Enum):
    MHA = "mha"  # K == H
    GQA = "gqa"  # 1 <= K < H (MQA is K == 1)
    MLA = "mla"  # DeepSeek latent KV (kv_lora_rank set)


@dataclass(frozen=True)
class ModelArch:
    """One model architecture. Integer fields are counts; no units needed.

    Structural fields HF config.json does not state (norm type, gated MLP, position
    embedding kind) are filled from the model family by the loader and recorded in the
    workload file's [perfmodel] table.
    """

    name: str
    display_name: str
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    hidden_act: str = "silu"
    encoder_only: bool = False  # BERT-style bidirectional encoder (no causal mask, no KV cache)
    norm: str = "rmsnorm"  # "rmsnorm" | "layernorm"
    gated_mlp: bool = True  # SwiGLU/GeGLU (3 matrices) vs plain (2 matrices)
    position_embedding: str = "rope"  # "rope" | "learned"
    attention_bias: bool = False
    mlp_bias: bool = False
    type_vocab_size: int = 0  # BERT token-type embeddings
    # --- mixture of experts (num_experts == 0 means dense)
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0  # per shared expert; defaults to moe_intermediate_size
    first_k_dense_replace: int = 0  # leading layers that stay dense (DeepSeek)
    router_bias: bool = False
    # --- multi-head latent attention (DeepSeek); kv_lora_rank > 0 means MLA
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # --- attention window
    sliding_window: int = 0  # tokens; 0 = none
    layer_types: tuple[str, ...] = ()  # per layer "full_attention" | "sliding_attention"; () = all full
    attention_sinks: bool = False  # gpt-oss learned per-head sink logits
    # --- provenance
    published_parameters: float = 0.0
    published_active_parameters: float = 0.0
    parameters_source: str = ""
    config_source: str = ""
    notes: str = ""
    extra: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def attention(self) -> AttentionKind:
        if self.kv_lora_rank > 0:
            return AttentionKind.MLA
        return AttentionKind.MHA if self.num_key_value_heads == self.num_attention_heads else AttentionKind.GQA

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        return self.is_moe and layer >= self.first_k_dense_replace

    @property
    def num_moe_layers(self) -> int:
        return max(0, self.num_hidden_layers - self.first_k_dense_replace) if self.is_moe else 0

    @property
    def num_dense_layers(self) -> int:
        return self.num_hidden_layers - self.num_moe_layers

    def is_sliding_layer(self, layer: int) -> bool:
        if not self.sliding_window:
            return False
        if not self.layer_types:
            return True
        return self.layer_types[layer] == "sliding_attention"

    @property
    def num_sliding_layers(self) -> int:
        return sum(self.is_sliding_layer(i) for i in range(self.num_hidden_layers))
