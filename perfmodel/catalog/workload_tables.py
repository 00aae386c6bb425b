"""Workload tables: the catalogue's models as tidy DataFrames (list, show with parameter breakdown).

Does not: read files itself beyond workload_files.load_workload, or format output.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from perfmodel.catalog import workload_files, workload_refs
from perfmodel.core.workload import ModelArch, parameter_count


def workloads_frame() -> pd.DataFrame:
    """One row per workload: shape, attention kind, MoE, parameters (computed and published)."""
    rows = []
    for name in workload_files.list_workloads():
        a = workload_files.load_workload(name)
        pc = parameter_count(a)
        rows.append({
            "workload": name, "display_name": a.display_name, "attention": a.attention.value,
            "layers": a.num_hidden_layers, "hidden_size": a.hidden_size, "heads": a.num_attention_heads,
            "kv_heads": a.num_key_value_heads, "experts": a.num_experts, "experts_per_token": a.num_experts_per_tok,
            "sliding_layers": a.num_sliding_layers, "linear_attention_layers": a.num_linear_layers,
            "sparse_attention_topk": a.index_topk, "params": pc.total, "active_params": pc.active_per_token,
            "published_params": a.published_parameters or float("nan"),
            "params_error_frac": (pc.total - a.published_parameters) / a.published_parameters
            if a.published_parameters else float("nan"),
        })
    return pd.DataFrame(rows)


def workload_show_frame(name: str) -> pd.DataFrame:
    """Every field of one workload, then its parameter breakdown (field, value, meaning)."""
    a: ModelArch = workload_refs.load(name)
    rows = [{"field": f.name, "value": str(getattr(a, f.name)), "section": "architecture"}
            for f in dataclasses.fields(a) if f.name != "extra"]
    rows += [{"field": k, "value": v, "section": "provenance"} for k, v in a.extra]
    pc = parameter_count(a)
    rows += [{"field": f"params.{k}", "value": f"{v:,}", "section": "parameters (closed form)"}
             for k, v in pc.as_dict().items()]
    return pd.DataFrame(rows)
