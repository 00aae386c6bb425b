"""Model architecture records (Hugging Face config.json field names) and parameter counts.

Letters used in formulas (scaling-book convention):
    D = hidden_size, L = num_hidden_layers, H = num_attention_heads,
    K = num_key_value_heads, d_h = head_dim, F = intermediate_size, V = vocab_size,
    E = num_experts, k = num_experts_per_tok, F_e = moe_intermediate_size.
More letters for the parameter count: P = max_position_embeddings, T_v = type_vocab_size,
    L_d = dense layers (first_k_dense_replace for MoE, L for dense models), L_m = L - L_d MoE layers,
    E_s = num_shared_experts, F_s = shared_expert_intermediate_size (default F_e),
    r_q = q_lora_rank, r_kv = kv_lora_rank, d_n = qk_nope_head_dim, d_r = qk_rope_head_dim,
    d_v = v_head_dim (MLA), n = parameters of one norm over D (D for RMSNorm, 2D for LayerNorm).

Parameter counts are exact element counts of the tensors the architecture has (weights,
biases, norm scales, learned sink logits), not rounded published figures.

Does not: read files (workload_files.py does) or know about hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from perfmodel.core import attention_variants as variants
from perfmodel.core.dtypes import DType
from perfmodel.core.workload_checks import check_arch


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
    layer_types: tuple[str, ...] = ()  # per layer "full_attention" | "sliding_attention" | "linear_attention"; () = all full
    attention_sinks: bool = False  # gpt-oss learned per-head sink logits
    qk_norm: bool = False  # RMSNorm over head_dim on q and k (Qwen3 q_norm/k_norm)
    pooler: bool = False  # BERT pooler (dense D x D + bias on the [CLS] token)
    attn_output_gate: bool = False  # Qwen3-Next/3.5: q_proj also emits a per-channel sigmoid gate on the output
    qk_norm_per_layer: bool = False  # the q/k norms span all heads of a layer (MiniMax-M2 qk_norm_type 'per_layer')
    partial_rotary_factor: float = 1.0  # share of head_dim that RoPE rotates (MiniMax-M2 rotary_dim / head_dim)
    shared_expert_gate: bool = False  # Qwen3-Next/3.5: a D -> 1 sigmoid gate scales the shared expert's output
    # --- Gated DeltaNet linear attention (layer_types "linear_attention"; Qwen3-Next / Qwen3.5 hybrids)
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 0  # depthwise causal conv over q, k, v before the recurrence (tokens)
    linear_state_dtype: DType = DType.FP32  # the recurrent state as kept per sequence (mamba_ssm_dtype)
    # --- DeepSeek Sparse Attention (MLA with a lightning indexer; DeepSeek-V3.2, GLM-5): index_topk > 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0  # keys each query attends to
    # --- stored weights as shipped
    weight_dtype: DType = DType.BF16  # data type of the shipped checkpoint's weights
    expert_weight_dtype: DType | None = None  # routed-expert weights when they differ (gpt-oss: MXFP4)
    # --- provenance
    published_parameters: float = 0.0
    published_active_parameters: float = 0.0
    published_active_excludes_embeddings: bool = False  # the published active count leaves out lookup tables
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
        """Layers with a sliding window: all of them without a per-layer list, else the list's count
        (closed form, C speed: never a Python loop over num_hidden_layers, which a what-if may set)."""
        if not self.sliding_window:
            return 0
        if not self.layer_types:
            return self.num_hidden_layers
        return self.layer_types[:self.num_hidden_layers].count("sliding_attention")

    @property
    def num_linear_layers(self) -> int:
        """Gated DeltaNet (linear-attention) layers: the per-layer list's count (closed form)."""
        return self.layer_types[:self.num_hidden_layers].count("linear_attention") if self.layer_types else 0

    @property
    def num_softmax_attention_layers(self) -> int:
        """Layers with softmax attention (full or sliding window): all but the linear-attention ones."""
        return self.num_hidden_layers - self.num_linear_layers

    @property
    def sparse_attention(self) -> bool:
        """DeepSeek Sparse Attention: a lightning indexer picks index_topk keys per query."""
        return self.index_topk > 0

    def validate(self) -> None:
        """Raise ArchError (field, problem) for counts out of range or fields that contradict each other.
        The workload-file loader and workload what-ifs both call it: one set of rules for both."""
        check_arch(self)

    @property
    def shares_lm_head(self) -> bool:
        """True when the output projection reuses the token-embedding table (tied, and a decoder)."""
        return self.tie_word_embeddings and not self.encoder_only


# ---------------------------------------------------------------- parameter count (closed form)


@dataclass(frozen=True)
class ParamCount:
    """Parameter count of one model by component (element counts; no units).

    embedding: token embeddings V*D plus BERT's token-type embeddings T_v*D. A tied table
        (tie_word_embeddings) is counted here once and lm_head is 0.
    position_embedding: learned absolute positions P*D (0 for RoPE).
    attention: projection weights, their biases and attention-sink logits over all layers, the
        sparse-attention indexer's projections, and the Gated DeltaNet layers' projections, conv and
        gate parameters (norm scales inside the attention block, MLA latent norms and Qwen3 q/k norms,
        are in norms).
    mlp_dense: the MLPs of the L_d dense layers.
    moe_routed_experts: all E routed experts of the L_m MoE layers.
    moe_shared_experts: the E_s always-active shared experts of the L_m MoE layers.
    router: the MoE gate (E*D weight, plus E bias where the model has one).
    norms: every normalisation scale (and LayerNorm bias): two per layer, the final (or BERT
        embedding) norm, Qwen3 q/k norms, MLA latent norms, the indexer's key LayerNorm, the Gated
        DeltaNet gated output norm.
    lm_head: the output projection V*D when it is not tied (0 for encoder-only models: BERT's
        masked-LM head is a pre-training head, not part of the encoder).
    other: BERT's pooler (D*D + D).
    total: sum of the above.
    active_per_token: total minus the routed experts a token does not use, (E - k) per MoE layer.
    active_per_token_excluding_embeddings: active_per_token minus the lookup tables (token,
        position and token-type embeddings), keeping a tied table that is also the LM head. This is
        the convention of the gpt-oss model card ("active parameters" exclude the embedding).
    """

    embedding: int
    position_embedding: int
    attention: int
    mlp_dense: int
    moe_routed_experts: int
    moe_shared_experts: int
    router: int
    norms: int
    lm_head: int
    other: int
    total: int
    active_per_token: int
    active_per_token_excluding_embeddings: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def norm_params(arch: ModelArch, width: int | None = None) -> int:
    """Parameters of one normalisation over `width` (default D): width for RMSNorm (scale only),
    2*width for LayerNorm (scale and bias)."""
    w = arch.hidden_size if width is None else width
    return 2 * w if arch.norm == "layernorm" else w


def attention_params_per_layer(arch: ModelArch) -> int:
    """Attention projection weights, biases and sink logits in one softmax-attention layer (norms
    excluded; a Gated DeltaNet layer is core/attention_variants.linear_attention_params_per_layer).

    MHA/GQA (d_h = head_dim):
        q: D*H*d_h (2*D*H*d_h with attn_output_gate: the gate comes out of q_proj), k and v:
        D*K*d_h each, o: H*d_h*D
        + biases H*d_h (2*H*d_h gated) + 2*K*d_h + D when attention_bias (GPT-2/GPT-3/BERT/gpt-oss)
        + H learned sink logits when attention_sinks (gpt-oss).
    MLA (DeepSeek; kv_lora_rank > 0), with d_qk = d_n + d_r:
        q: D*r_q + r_q*H*d_qk (q_a_proj, q_b_proj) when r_q > 0, else D*H*d_qk (q_proj)
        kv_a_proj_with_mqa: D*(r_kv + d_r)      kv_b_proj: r_kv*H*(d_n + d_v)
        o: H*d_v*D
        + biases r_q (q_a_proj) + (r_kv + d_r) + D when attention_bias (transformers'
          DeepseekV3Attention puts the bias on q_a_proj, kv_a_proj_with_mqa and o_proj only)
        + the lightning indexer's projections with sparse attention (attention_variants).
    """
    a = arch
    D, H = a.hidden_size, a.num_attention_heads
    if a.attention == AttentionKind.MLA:
        d_qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q = D * a.q_lora_rank + a.q_lora_rank * H * d_qk
        else:
            q = D * H * d_qk
        kv_a = D * (a.kv_lora_rank + a.qk_rope_head_dim)
        kv_b = a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim)
        o = H * a.v_head_dim * D
        bias = (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim + D) if a.attention_bias else 0
        n = q + kv_a + kv_b + o + bias + variants.indexer_params_per_layer(a)
    else:
        K, d_h, q_out = a.num_key_value_heads, a.head_dim, 2 if a.attn_output_gate else 1
        n = q_out * D * H * d_h + 2 * D * K * d_h + H * d_h * D
        if a.attention_bias:
            n += q_out * H * d_h + 2 * K * d_h + D
    if a.attention_sinks:
        n += H
    return n


def mlp_params(arch: ModelArch, intermediate_size: int) -> int:
    """One MLP (a dense layer's MLP, one routed expert or one shared expert) of width F.

    gated (SwiGLU/GeGLU: gate, up, down): 3*D*F, + 2*F + D biases when mlp_bias
    plain (up, down):                     2*D*F, + F + D biases when mlp_bias
    """
    D, F = arch.hidden_size, intermediate_size
    if arch.gated_mlp:
        return 3 * D * F + ((2 * F + D) if arch.mlp_bias else 0)
    return 2 * D * F + ((F + D) if arch.mlp_bias else 0)


def expert_params(arch: ModelArch) -> int:
    """One routed expert: mlp_params with F = F_e (moe_intermediate_size); 0 for a dense model."""
    return mlp_params(arch, arch.moe_intermediate_size) if arch.is_moe else 0


def shared_expert_params(arch: ModelArch) -> int:
    """One shared expert: mlp_params with F = F_s (shared_expert_intermediate_size, default F_e)."""
    if not (arch.is_moe and arch.num_shared_experts):
        return 0
    return mlp_params(arch, arch.shared_expert_intermediate_size or arch.moe_intermediate_size)


def router_params_per_layer(arch: ModelArch) -> int:
    """MoE gate of one MoE layer: E*D, + E when router_bias (gpt-oss router bias; DeepSeek-V3's
    e_score_correction_bias), + D for the shared expert's sigmoid gate (Qwen3-Next shared_expert_gate)."""
    if not arch.is_moe:
        return 0
    E = arch.num_experts
    return E * arch.hidden_size + (E if arch.router_bias else 0) + (arch.hidden_size if arch.shared_expert_gate else 0)


def norm_params_per_layer(arch: ModelArch) -> int:
    """Norm parameters in one softmax-attention layer: 2*n (before attention and before the MLP; BERT's
    two post-norms) + 2*d_h-wide norms for Qwen3 q/k norm ((H + K)*d_h when the norms span the layer's
    heads, MiniMax-M2) + r_q and r_kv latent norms for MLA + the sparse-attention indexer's key LayerNorm."""
    n = 2 * norm_params(arch)
    if arch.qk_norm:
        heads = arch.num_attention_heads + arch.num_key_value_heads if arch.qk_norm_per_layer else 2
        n += heads * norm_params(arch, arch.head_dim)
    if arch.attention == AttentionKind.MLA:
        n += norm_params(arch, arch.kv_lora_rank)
        if arch.q_lora_rank:
            n += norm_params(arch, arch.q_lora_rank)
    return n + variants.indexer_norm_params_per_layer(arch)


def linear_layer_norm_params(arch: ModelArch) -> int:
    """Norm parameters in one Gated DeltaNet layer: the 2*n layer norms and the gated output RMSNorm."""
    return 2 * norm_params(arch) + variants.linear_attention_norm_params_per_layer(arch)


def parameter_count(arch: ModelArch) -> ParamCount:
    """Closed-form parameter count of `arch`, by component.

    embedding          = V*D + T_v*D
    position_embedding = P*D (learned), 0 (rope)
    attention          = L_a * attention_params_per_layer (see there: MHA/GQA/MLA, biases, sinks, indexer)
                         + L_lin * linear_attention_params_per_layer (Gated DeltaNet layers; L_a = L - L_lin)
    mlp_dense          = L_d * mlp_params(F)              (3*D*F gated, 2*D*F plain, + biases)
    moe_routed_experts = L_m * E * mlp_params(F_e)
    moe_shared_experts = L_m * E_s * mlp_params(F_s)
    router             = L_m * (E*D [+ E] [+ D shared-expert gate])
    norms              = L_a * norm_params_per_layer + L_lin * linear_layer_norm_params + n (n = D RMSNorm,
                         2D LayerNorm; the last term is the final norm, or BERT's embedding LayerNorm)
    lm_head            = V*D unless tied or encoder-only
    other              = D*D + D (BERT pooler)
    active_per_token   = total - L_m * (E - k) * mlp_params(F_e)

    Source: the module structure of the Hugging Face transformers implementations (GPT2Model,
    BertModel, LlamaForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM,
    GptOssForCausalLM, MiniMaxM2ForCausalLM, Qwen3_5MoeForCausalLM, GlmMoeDsaForCausalLM);
    multi-token-prediction modules (DeepSeek-V3, GLM-5, MiniMax-M2, Qwen3.5) and vision encoders
    (Kimi-K2.5, Qwen3.5) are not part of the language model counted here.
    """
    a = arch
    D, L, V = a.hidden_size, a.num_hidden_layers, a.vocab_size
    L_m, L_d = a.num_moe_layers, a.num_dense_layers
    embedding = V * D + a.type_vocab_size * D
    position = a.max_position_embeddings * D if a.position_embedding == "learned" else 0
    L_lin = a.num_linear_layers
    attention = (L - L_lin) * attention_params_per_layer(a) + L_lin * variants.linear_attention_params_per_layer(a)
    mlp_dense = L_d * mlp_params(a, a.intermediate_size)
    routed = L_m * a.num_experts * expert_params(a)
    shared = L_m * a.num_shared_experts * shared_expert_params(a)
    router = L_m * router_params_per_layer(a)
    norms = (L - L_lin) * norm_params_per_layer(a) + L_lin * linear_layer_norm_params(a) + norm_params(a)
    lm_head = 0 if (a.tie_word_embeddings or a.encoder_only) else V * D
    other = (D * D + D) if a.pooler else 0
    total = embedding + position + attention + mlp_dense + routed + shared + router + norms + lm_head + other
    active = total - L_m * (a.num_experts - a.num_experts_per_tok) * expert_params(a)
    lookup = position + a.type_vocab_size * D + (0 if a.shares_lm_head else V * D)
    return ParamCount(
        embedding=embedding, position_embedding=position, attention=attention, mlp_dense=mlp_dense,
        moe_routed_experts=routed, moe_shared_experts=shared, router=router, norms=norms, lm_head=lm_head,
        other=other, total=total, active_per_token=active, active_per_token_excluding_embeddings=active - lookup)
