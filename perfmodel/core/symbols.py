"""The symbols every formula is written in: letter, meaning and unit, in one table.

Letters follow the JAX scaling book where it has one (B, T, S, D, F, H, K, L, V, E).
Formulas (formulas.py, graph.py, roofline.py) are sympy expressions over these symbols;
evaluation binds each symbol to a float or a numpy array (a whole sweep at once).

Does not: hold values (scenario.py and hardware objects supply them).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Sym:
    symbol: sp.Symbol
    meaning: str
    unit: str


_TABLE: dict[str, Sym] = {}


def _s(name: str, latex: str, meaning: str, unit: str = "1") -> sp.Symbol:
    sym = sp.Symbol(name, positive=True)
    _TABLE[name] = Sym(sym, meaning, unit)
    LATEX_NAMES[sym] = latex
    return sym


LATEX_NAMES: dict[sp.Symbol, str] = {}

# ---- model (Hugging Face config fields)
D = _s("D", "D", "hidden size (hidden_size)")
H = _s("H", "H", "attention heads (num_attention_heads)")
KV = _s("KV", "K", "key/value heads (num_key_value_heads)")
dh = _s("dh", "d_h", "head dimension (head_dim)")
F = _s("F", "F", "MLP intermediate size (intermediate_size)")
V = _s("V", "V", "vocabulary size (vocab_size)")
E = _s("E", "E", "routed experts (num_experts)")
k = _s("k", "k", "experts per token (num_experts_per_tok)")
Fe = _s("Fe", "F_e", "expert intermediate size (moe_intermediate_size)")
Fs = _s("Fs", "F_s", "shared-expert intermediate size (all shared experts together)")
W = _s("W", "W", "sliding-window length", "token")
rq = _s("rq", "r_q", "MLA query latent rank (q_lora_rank)")
rkv = _s("rkv", "r_{kv}", "MLA key/value latent rank (kv_lora_rank)")
dn = _s("dn", "d_{nope}", "MLA per-head non-rotary q/k dimension (qk_nope_head_dim)")
dr = _s("dr", "d_{rope}", "MLA rotary q/k dimension (qk_rope_head_dim)")
dv = _s("dv", "d_v", "MLA value head dimension (v_head_dim)")
frot = _s("frot", "f_{rot}", "share of head_dim that RoPE rotates (partial_rotary_factor)")
Hlk = _s("Hlk", "H_{lk}", "Gated DeltaNet key heads (linear_num_key_heads)")
Hlv = _s("Hlv", "H_{lv}", "Gated DeltaNet value heads (linear_num_value_heads)")
dlk = _s("dlk", "d_{lk}", "Gated DeltaNet key head dimension (linear_key_head_dim)")
dlv = _s("dlv", "d_{lv}", "Gated DeltaNet value head dimension (linear_value_head_dim)")
Kc = _s("Kc", "K_c", "Gated DeltaNet causal-conv kernel (linear_conv_kernel_dim)", "token")
Hix = _s("Hix", "H_{ix}", "lightning-indexer heads (index_n_heads)")
dix = _s("dix", "d_{ix}", "lightning-indexer head dimension (index_head_dim)")
ktop = _s("ktop", "k_{top}", "keys each query attends to under sparse attention (index_topk)", "token")

# ---- scenario
B = _s("B", "B", "sequences in the batch on this model replica", "sequence")
T = _s("T", "T", "new tokens per sequence in this step (prefill/train: sequence length; decode: 1)", "token")
C0 = _s("C0", "C_0", "tokens already in the KV cache before this step", "token")
Savg = _s("Savg", r"\bar{S}", "mean keys attended per query token", "token")
t = _s("t", "t", "tensor-parallel degree")
ep = _s("ep", "e", "expert-parallel degree")
cp = _s("cp", "c", "context/sequence-parallel degree")
u = _s("u", "u", "MoE load imbalance: busiest expert's tokens / mean tokens per expert")
bw = _s("bw", "b_w", "bytes per weight element (storage, incl. block scales)", "B")
ba = _s("ba", "b_a", "bytes per activation element", "B")
bwe = _s("bwe", "b_{we}", "bytes per routed-expert weight element (storage)", "B")
bkv = _s("bkv", "b_{kv}", "bytes per KV-cache element", "B")
bc = _s("bc", "b_c", "bytes per element fed to the tensor engine (compute data type)", "B")
bs = _s("bs", "b_s", "bytes per Gated DeltaNet recurrent-state element (linear_state_dtype)", "B")
bix = _s("bix", "b_{ix}", "bytes per lightning-indexer key-cache element (FP8 and its block scale)", "B")

# ---- hardware (one chip; rates are whole-chip)
Rt = _s("Rt", "R_t", "tensor-engine rate for the compute data type", "FLOP/s")
Rv = _s("Rv", "R_v", "vector-engine element rate", "elem/s")
Rs = _s("Rs", "R_s", "scalar-engine element rate", "elem/s")
Rg = _s("Rg", "R_g", "GpSimd-engine element rate", "elem/s")
Bhbm = _s("Bhbm", "BW_{hbm}", "HBM bandwidth", "B/s")
Ssram = _s("Ssram", "M_{sram}", "on-chip SRAM per chip (SBUF / L2 + shared memory)", "B")

# ---- a training run (training/time_to_train.py)
T_run = _s("T_run", "T_{run}", "compute time of a run: trained tokens / tokens per second", "s")
n_ev = _s("n_ev", "n_{ev}", "evaluation iterations per evaluation (forward only)")
I_ev = _s("I_ev", "I_{ev}", "training steps between evaluations", "step")
t_ev = _s("t_ev", "t_{ev}", "one evaluation iteration: the step's forward passes with their bubble", "s")
t_st = _s("t_st", "t_{step}", "one training step", "s")
d_ck = _s("d_ck", r"\delta", "training paused per checkpoint", "s")
tau_ck = _s("tau_ck", r"\tau", "compute time between checkpoints", "s")
M_job = _s("M_job", "M", "job mean time to interrupt: the chips' mean time to interrupt / chips", "s")
R_rs = _s("R_rs", "R", "time to resume after an interrupt: restart plus reading the last checkpoint", "s")

# ---- calibration (named assumptions, hardware_specs/calibration/*.toml)
eta_t = _s("eta_t", r"\eta_t", "sustained fraction of the tensor rate on large aligned matmuls at the compute type")
eta_m = _s("eta_m", r"\eta_m", "achievable fraction of HBM bandwidth")
eta_v = _s("eta_v", r"\eta_v", "sustained fraction of vector/scalar/GpSimd element rates")
mt = _s("mt", "m_t", "tensor tile along the token (M) dimension", "elem")
kt = _s("kt", "k_t", "tensor tile along the contraction (K) dimension", "elem")
kb = _s("kb", "k_{b16}", "tensor tile along the contraction dimension at BF16 (transposes)", "elem")
nt = _s("nt", "n_t", "tensor tile along the output (N) dimension", "elem")
t_ovh = _s("t_ovh", r"t_{ovh}", "fixed overhead per operator instance", "s")


def table() -> dict[str, Sym]:
    """Every symbol: name -> Sym(symbol, meaning, unit)."""
    return dict(_TABLE)


def latex(expr: sp.Expr) -> str:
    """LaTeX of an expression in the document letters (d_h, \\eta_m, ...)."""
    return sp.latex(expr, symbol_names=LATEX_NAMES, mul_symbol="dot")


def by_name(name: str) -> sp.Symbol:
    return _TABLE[name].symbol
