"""Worker for bench/bench_peers.py: runs ONE peer tool inside that tool's own virtual environment.

    bench/.peers/<tool>/bin/python bench/peer_worker.py JOB.json RESULT.json

Never imports perfmodel (the peers are not perfmodel dependencies and perfmodel is not installed
in their environments). JOB.json holds the shared sweep: {"tool", "budget_s", "min_s", "agreement":
[[gpu, batch, context, tp], ...], "grid": [[gpu, batch, context, tp], ...]} with gpu "a100" or
"h100". Each configuration is one Llama-2-7B decode step (BF16 weights and KV cache): `batch`
sequences, `context` tokens already in the KV cache, tensor parallel degree `tp`; the tool's decode
latency per output token is returned in seconds. The grid is walked once per pass, passes repeat
until `min_s` have passed (a fast tool), and the walk stops at `budget_s` (a slow tool): configs/s
counts only the configurations that ran. RESULT.json: {"tool", "version", "api", "agreement":
[seconds or null], "done", "seconds", "latency_s": [first pass, in grid order, null where it
failed], "cpu_s", "errors": {message: count}}.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from importlib import metadata

LLAMA2_7B_LLM_ANALYSIS = "NousResearch_Llama-2-7b-hf"  # llm-analysis' bundled Llama-2-7B config
GPU_LLM_ANALYSIS = {"a100": "a100-sxm-80gb", "h100": "h100-sxm-80gb"}
GPU_GENZ = {"a100": "A100_80GB_GPU", "h100": "H100_GPU"}


def llm_analysis_fn():
    import logging

    from llm_analysis.analysis import infer

    logging.getLogger("llm_analysis").setLevel(logging.ERROR)

    def one(gpu: str, batch: int, context: int, tp: int) -> float:
        # the documented entry point: prompt of `context` tokens, one generated token; decode_latency is
        # the time of that decode step (KV cache of context + 1 tokens), per GPU of the tp group
        out = infer(model_name=LLAMA2_7B_LLM_ANALYSIS, gpu_name=GPU_LLM_ANALYSIS[gpu], dtype_name="w16a16e16",
                    log_level="ERROR", batch_size_per_gpu=batch, tp_size=tp, seq_len=context,
                    num_tokens_to_generate=1)
        return float(out["decode_latency"])

    return one, "llm_analysis.analysis.infer(model_name='NousResearch_Llama-2-7b-hf', dtype_name='w16a16e16', " \
                "num_tokens_to_generate=1)['decode_latency'], default efficiencies (1.0)"


def genz_fn():
    warnings.filterwarnings("ignore")
    from GenZ import decode_moddeling

    def one(gpu: str, batch: int, context: int, tp: int) -> float:
        # beam width Bb=1 (the default 4 multiplies the batch); Latency is in ms
        out = decode_moddeling(model="llama2_7b", batch_size=batch, input_tokens=context, output_tokens=1, Bb=1,
                               system_name=GPU_GENZ[gpu], bits="bf16", tensor_parallel=tp)
        return float(out["Latency"]) / 1e3

    return one, "GenZ.decode_moddeling(model='llama2_7b', bits='bf16', Bb=1, output_tokens=1)['Latency'] / 1e3, " \
                "system_eff 1"


TOOLS = {"llm-analysis": llm_analysis_fn, "genz-llm": genz_fn}


def main() -> int:
    job = json.loads(open(sys.argv[1]).read())
    tool = job["tool"]
    one, api = TOOLS[tool]()
    errors: dict[str, int] = {}

    def safe(cfg):
        try:
            return one(*cfg)
        except Exception as exc:  # a configuration the tool rejects: counted, reported, not fatal
            msg = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            errors[msg] = errors.get(msg, 0) + 1
            return None

    agreement = [safe(c) for c in job["agreement"]]  # also warms the tool up
    grid = job["grid"]
    latency: list = [None] * len(grid)
    done, first_pass = 0, True
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        for i, cfg in enumerate(grid):
            v = safe(cfg)
            if first_pass:
                latency[i] = v
            done += 1
            if time.perf_counter() - t0 >= job["budget_s"]:
                break
        else:
            first_pass = False
            if time.perf_counter() - t0 < job["min_s"]:
                continue
        break
    seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    result = {"tool": tool, "version": metadata.version(tool), "api": api, "agreement": agreement, "done": done,
              "seconds": seconds, "cpu_s": cpu_s, "latency_s": latency, "errors": errors}
    with open(sys.argv[2], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
