"""Worker for bench/bench_aiconfigurator.py: runs NVIDIA's aiconfigurator inside its own virtual environment.

    bench/.peers/aiconfigurator/bin/python bench/aiconfigurator_worker.py JOB.json RESULT.json

Never imports perfmodel (aiconfigurator is not a perfmodel dependency and perfmodel is not installed
in its environment). JOB.json: {"rows": [row, ...]}, each row a dict of the columns of
reference/inferencex_serving_dev.csv (NaN as null). Each row goes through aiconfigurator's
single-point estimate, `aiconfigurator.cli.api.cli_estimate` (what `aiconfigurator cli estimate`
runs): agg rows through its aggregated (in-flight batching) path with the row's parallel plan and
per-rank batch size, disagg rows through its disaggregated path with the row's prefill / decode
plans, batch sizes and worker counts. RESULT.json: {"version", "api", "seconds", "cpu_s",
"import_s", "db_versions": {"system/backend": version}, "aliases": {row model: model used},
"rows": [{"id", "ttft_ms", "tpot_ms", "error", "kv_warning"}]}; a row aiconfigurator cannot
express has null predictions and the reason in "error".

Only aiconfigurator's prediction API and its kernel perf databases are used: an audit hook refuses
to open any silicon_sample* file (the measured-silicon rows it ships, held out from this benchmark).
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from importlib import metadata


def _guard(event: str, args: tuple) -> None:
    if event == "open" and args and "silicon_sample" in str(args[0]):
        raise PermissionError(f"bench: refusing to open held-out measured data {args[0]}")


sys.addaudithook(_guard)

# HF ids of the rows -> the architecture-identical config aiconfigurator bundles (it would otherwise
# download config.json from the Hugging Face hub, which this benchmark does not do): the HF renames
# Llama-3.1-* <- Meta-Llama-3.1-*, and the 8B Instruct / FP8 checkpoints share the 8B base architecture
# (their quantisation comes from the row's quant columns).
ALIASES = {
    "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Meta-Llama-3.1-8B",
}
# checkpoints whose "fp4" rows are MXFP4 (the CSV labels every fp4 row nvfp4): aiconfigurator infers
# the checkpoint's own quantisation (MXFP4 experts, BF16 attention) when no quant mode is given
MXFP4_CHECKPOINTS = {"openai/gpt-oss-120b"}
API = ("aiconfigurator.cli.api.cli_estimate(model, system, mode=agg|disagg, backend_name, backend_version=<current "
       "perf database>, isl, osl, plan and batch sizes of the row, gemm_quant_mode, moe_quant_mode; database_mode="
       "SILICON)")


def _num(v) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)


def _int(v, default=None, zero_is_none=False):
    x = _num(v)
    if x is None or (zero_is_none and x == 0):
        return default
    return round(x)


def _plan(r: dict, pre: str, moe: bool) -> dict:
    """One instance's parallel plan: the row's columns pre+tp_size ... (pre "", "prefill_" or "decode_"), which
    cli_estimate takes under the same names (attention DP 0 or missing = 1; the MoE widths only for MoE models,
    0 or missing = left for aiconfigurator to infer)."""
    plan = {f"{pre}tp_size": _int(r[f"{pre}tp_size"], 1), f"{pre}pp_size": _int(r[f"{pre}pp_size"], 1),
            f"{pre}attention_dp_size": _int(r[f"{pre}attention_dp_size"], 1, zero_is_none=True)}
    if moe:
        plan.update({f"{pre}moe_tp_size": _int(r[f"{pre}moe_tp_size"], None, True),
                     f"{pre}moe_ep_size": _int(r[f"{pre}moe_ep_size"], None, True)})
    return plan


class Estimator:
    def __init__(self):
        from aiconfigurator.cli.api import cli_estimate
        from aiconfigurator.sdk.common import DefaultHFModels
        from aiconfigurator.sdk.models import check_is_moe
        from aiconfigurator.sdk.perf_database import get_latest_database_version

        self.cli_estimate, self.bundled = cli_estimate, DefaultHFModels
        self.latest, self.is_moe = get_latest_database_version, check_is_moe
        self.db_versions: dict[str, str | None] = {}
        self.aliases: dict[str, str] = {}

    def db_version(self, system: str, backend: str) -> str | None:
        # cli_estimate resolves the "current" perf-database slot on every call by re-reading the YAML of
        # every database (~1.5 s a call); the same function is called once per (system, backend) here
        key = f"{system}/{backend}"
        if key not in self.db_versions:
            self.db_versions[key] = self.latest(system=system, backend=backend)
        return self.db_versions[key]

    def kwargs(self, r: dict) -> dict:
        model = ALIASES.get(r["model_path"], r["model_path"])
        if model not in self.bundled:
            raise LookupError(f"model {r['model_path']} not among aiconfigurator's bundled configs "
                              "(it would download config.json from the Hugging Face hub)")
        if model != r["model_path"]:
            self.aliases[r["model_path"]] = model
        version = self.db_version(r["system"], r["backend"])
        if version is None:
            raise LookupError(f"no perf database for system {r['system']}, backend {r['backend']}")
        moe = self.is_moe(model)
        gemm, moe_q = r["gemm_quant_mode"], r["moe_quant_mode"]
        if model in MXFP4_CHECKPOINTS and r["precision"] == "fp4":
            gemm = moe_q = None  # the checkpoint's own MXFP4
        kw = {"model_path": model, "system_name": r["system"], "mode": r["mode"], "backend_name": r["backend"],
              "backend_version": version, "isl": int(r["isl"]), "osl": int(r["osl"]), "gemm_quant_mode": gemm,
              "moe_quant_mode": moe_q if moe else None}
        if r["mode"] == "agg":
            if _num(r["batch_size"]) is None:
                raise LookupError("agg row without batch_size")
            kw.update(batch_size=_int(r["batch_size"]), **_plan(r, "", moe))
            return kw
        need = ("prefill_batch_size", "prefill_num_workers", "decode_batch_size", "decode_num_workers")
        if any(_num(r[c]) is None for c in need):
            raise LookupError("disagg row gives no prefill/decode batch sizes and worker counts (only the total "
                              "concurrency), which aiconfigurator's disagg estimate requires")
        for side in ("prefill_", "decode_"):
            kw.update({f"{side}batch_size": _int(r[f"{side}batch_size"]),
                       f"{side}num_workers": _int(r[f"{side}num_workers"]), **_plan(r, side, moe)})
        return kw

    def one(self, r: dict) -> dict:
        out = {"id": r["id"], "ttft_ms": None, "tpot_ms": None, "error": None, "kv_warning": False}
        try:
            res = self.cli_estimate(**self.kwargs(r))
            ttft, tpot = float(res.ttft), float(res.tpot)
            if not (math.isfinite(ttft) and math.isfinite(tpot) and ttft > 0 and tpot > 0):
                raise ValueError(f"non-positive or non-finite estimate (TTFT {ttft}, TPOT {tpot})")
            out.update(ttft_ms=ttft, tpot_ms=tpot, kv_warning=bool(getattr(res, "kv_cache_warning", None)))
        # a row aiconfigurator cannot express: counted and reported, not fatal
        except Exception as exc:  # noqa: BLE001
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            out["error"] = f"{type(exc).__name__}: {text[:300]}"
        return out


def main() -> int:
    with open(sys.argv[1]) as f:
        job = json.load(f)
    logging.disable(logging.WARNING)  # aiconfigurator logs every estimate at INFO and warns on fallbacks
    t0 = time.perf_counter()
    est = Estimator()
    import_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    rows = [est.one(r) for r in job["rows"]]
    seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    result = {"version": metadata.version("aiconfigurator"), "api": API, "seconds": seconds, "cpu_s": cpu_s,
              "import_s": import_s, "db_versions": est.db_versions, "aliases": est.aliases, "rows": rows}
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
