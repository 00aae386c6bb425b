"""Validation family: serving measurements written the way people publish them (phase 'serving').

A row names a quantity in its own words (reference/measured_quantities.toml [serving]: output or total token throughput,
request throughput, tokens/s per user, TTFT, TPOT / ITL, end-to-end latency; per GPU, node, replica or the
deployment; mean or a percentile), the hardware and model as its source writes them (catalog/system_names.py,
catalog/model_names.py), the plan ('TP8', 'TP4 PP2', 'DP8 EP8 attention DP'), the concurrency (batch), the
input and output lengths and the data type (catalog/quant_modes.py). Each row is priced once, stated here and
nothing fitted:

    plan        t, d_a, e, p from the parallelism text as any framework spells it (validation/sources/plan_words.py:
                SGLang's --enable-dp-attention, TensorRT-LLM's enable_attention_dp, vLLM's data parallel with
                expert parallel, DEP8 / TEP8); replicas = GPUs / (t d_a p) (GPUs: num_chips, else one replica)
    load        C = ceil(batch / replicas) sequences in flight per replica, rounded up to a multiple of d_a p: a
                closed loop of `batch` clients with a known engine is priced as the InferenceX rows are
                (inferencex_engine.closed_loop: running cap, KV pages, host time, steps to the first token, the
                prefill queue of its waves = the notes' prompts / clients; throughput C O / (TTFT + (O-1) TPOT));
                without a batch, N prompts at a request rate (notes: "300 prompts", "--num-prompts 200"): a finite run,
                run request by request (serving_runs.py: the client's figures over the run's span); a rate alone:
                an open loop held at the fewest C whose steady-
                state request rate reaches it (Little's law), or an infinite rate with N prompts: a burst, as many
                running as the engine's cap and the KV cache hold (throughputs only: a burst's latencies are its
                queue's)
    engine      the one the notes name (vLLM, SGLang, TensorRT-LLM), else the hardware family's default
    at speed    a throughput stated 'at N tokens/s/user' (or per MW) is read on the engine frontier: every plan
                inside the engine's measured envelope in the row's data types (validation/frontier.model_frontier),
                its best at interactivity >= N
    lengths     as stated, or the mean of a spread a client draws ('1024 (random range ratio 0)': uniform in
                [r L, L], mean (1 + r) L / 2; '20000 (+/-15%)': mean L), priced at the mean
    quantity    the steady state's figure (serving/steady_state.serve, aggregated): TTFT, TPOT, 1 / TPOT,
                TTFT + (O - 1) TPOT; output tokens/s per chip x the scope's chips (the deployment: every GPU);
                total = output x (I + O) / O; requests/s = output / O
    statistic   the steady state gives means; a median is read as the mean (said in the note); a p90-p99
                latency is listed (the tail needs the simulation: perfmodel simulate)

Does not: fit anything, or read files (harness.py).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import model_names, neuron_stacks, serving_engines, system_names, workload_files
from perfmodel.catalog.replacements import Replacements
from perfmodel.core import units
from perfmodel.serving import closed_loop, search
from perfmodel.serving.options import Mode, ServingOptions
from perfmodel.serving.steady_state import Grid, Mix, serve
from perfmodel.validation import case_checks, frontier, harness
from perfmodel.validation.sources import (inferencex_engine, inferencex_map, plan_words, quantities, serving_runs,
                                         training_rows)
from perfmodel.validation.harness import register_validation, unexpressed

PHASE = "serving"
# a throughput stated at an interactivity: 'output tokens/s per GPU at 50 tok/s/user'
AT_SPEED = re.compile(r"\s*@?\s*\bat\s+(\d+(?:\.\d+)?)\s*(?:output\s+)?tok(?:en)?s?\s*/\s*s(?:ec)?\s*(?:/|per)\s*user",
                      re.I)
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "trtllm", "trt-llm": "trtllm", "trtllm": "trtllm"}


def vocabulary() -> dict:
    """The serving part of the one vocabulary of measured quantities (validation/sources/quantities.py)."""
    return quantities.vocabulary()["serving"]


def _first(text: str, table: dict[str, list[str]], default: str) -> str:
    """The entry of `table` whose longest word appears in `text` (longest first), else `default`."""
    words = sorted(((w, k) for k, ws in table.items() for w in ws), key=lambda x: -len(x[0]))
    return next((k for w, k in words if w in text), default)


def quantity_of(metric: str) -> tuple[str, str, str]:
    """(quantity, scope, statistic) a metric text names ('' quantity when none)."""
    v, t = vocabulary(), AT_SPEED.sub("", str(metric).strip().lower())
    q = _first(t, {k: e["words"] for k, e in v["quantities"].items()}, "")
    return q, _first(t, v["scopes"], "deployment"), _first(t, v["stats"], "mean")


def unit_factor(unit: str, kind: str) -> float:
    """SI factor of a row's unit: a time ('ms', 's', 'us') or a rate (rate_units)."""
    u = str(unit).strip().lower()
    if kind == "rate":
        table = vocabulary()["rate_units"]
        if u not in table:
            raise ValueError(f"unit {unit!r} is not a rate unit (known: {', '.join(table)})")
        return float(table[u])
    return units.parse(f"1 {unit}", "time")


def selects(rows: pd.DataFrame) -> pd.Series:
    return rows["phase"].str.strip().str.lower().eq(PHASE) & rows["metric"].map(lambda m: bool(quantity_of(m)[0]))


def _count(text) -> int:
    s = str(text).strip()
    return int(float(s)) if re.fullmatch(r"\d+(\.0+)?", s) else 0


def _spread(text) -> tuple[int, float]:
    """(longest length L, range ratio r) of a length cell (case_checks.length_spread: lengths uniform in [r L, L],
    as sglang.bench_serving --random-range-ratio and vllm bench serve's random dataset draw them); a plain L: r = 1;
    (0, 1) when the cell gives none (a dataset's distribution: ShareGPT)."""
    return case_checks.length_spread(text) or (_count(text), 1.0)


def _length(text) -> int:
    """A length cell as its mean, (1 + r) L / 2 (L for a plain length; 0 when the cell gives none)."""
    top, r = _spread(text)
    return round(top * (1.0 + r) / 2.0)


def _engine(notes: str, system) -> str:
    t = str(notes).lower()
    return next((e for w, e in ENGINES.items() if w in t), serving_engines.default_for(system))


KV_TYPE = re.compile(r"KV[ -]cache\s+(\w+)(\s+except\b)?", re.I)  # '...; KV cache FP8' (one type for every layer)


def _types(m):
    """(quant label, dense weight type, expert weight type) of a row's dtype ('(not stated)' remarks, a 'KV cache'
    clause and a trailing 'weights' dropped)."""
    label = re.sub(r"\s*[(\[].*$", "", str(m["dtype"]).split(";")[0]).strip()
    label = re.sub(r"\s+weights$", "", label, flags=re.I)
    if re.fullmatch(r"not stated|unstated|native|default|default checkpoint|auto|", label, re.I):
        label = ""  # the checkpoint's own types
    w = inferencex_map.storage_type(label, m["_arch"], experts=False)
    return label, w, (inferencex_map.storage_type(label, m["_arch"], experts=True) if m["_arch"].is_moe else w)


def _on_frontier(m, x: float, i: int, o: int, gpus: int, replaced: Replacements) -> tuple[float, str, str]:
    """A throughput stated at an interactivity: the engine frontier (every plan inside the engine's measured
    envelope, in the row's data types) read at x tokens/s per user, per chip x the scope's chips, or per MW."""
    system, (q, scope, _) = m["_system"], m["_q"]
    label, w, e = _types(m)
    if w is None:
        return np.nan, "", f"dtype {label!r} is not a data type or quantisation mode"
    engine = _engine(m["notes"], system)
    fr = frontier.model_frontier(system, m["_arch"], Mix(i, o), engine,
                                 serving_engines.envelope(engine, system.chip.name),
                                 {f"{w.value}/{e.value}"}, replaced=replaced)
    col = "output_tokens_per_s_per_mw" if q == "output_per_mw" else "output_tokens_per_s_per_chip"
    y = float(search.best_at(fr, col, [x])[0]) if len(fr) else np.nan
    if not np.isfinite(y):
        return np.nan, "", f"no plan of {engine}'s engine frontier reaches {x:g} tokens/s per user"
    chips = 1.0 if q == "output_per_mw" else {"gpu": 1.0, "node": float(system.node.chips),
                                              "replica": float(gpus), "deployment": float(gpus)}[scope]
    scale = {"output_per_mw": 1.0, "output_throughput": 1.0, "total_throughput": (i + o) / o,
             "request_throughput": 1.0 / o}.get(q)
    if scale is None:
        return np.nan, "", f"{q} is not a throughput to read at an interactivity"
    note = (f"{engine} engine frontier at >= {x:g} tokens/s/user (every plan inside its measured envelope, weights "
            f"{w.value}, experts {e.value}), {i}/{o} tokens; {q} {scope}")
    return y * chips * scale, note, ""


RATE = re.compile(r"(?:request[ -]rate|rps)\s*(?:=|:)?\s*(?:default\s*)?\(?(inf\w*|\d+(?:\.\d+)?)"
                  r"|(\d+(?:\.\d+)?)\s*(?:rps|req/s)", re.I)
PROMPTS = re.compile(r"--num-prompts?[ =](\d[\d,]*)|(\d[\d,]*)\s*(?:prompts|requests)\b", re.I)


def _prompts(notes) -> int | None:
    """The prompts a run sent ('300 prompts', '--num-prompts 200'), or None."""
    n = PROMPTS.search(str(notes))
    return int((n.group(1) or n.group(2)).replace(",", "")) if n else None


def _load(m, batch: int, replicas: int, step: int, at, o: int, cap: float):
    """(sequences in flight per replica, how it was read, whether latencies are the steady state's) or a reason:
    a concurrency (batch: a closed loop of that many clients); else a request rate R (an open loop: the fewest
    sequences per replica whose steady-state request rate holds R / replicas, Little's law); else an infinite rate
    with N prompts (a burst: as many as the engine's cap and the KV cache hold run; the rest queue)."""
    if batch:
        c = step * math.ceil(math.ceil(batch / replicas) / step)
        return c, f"{batch} clients, C={c} per replica", True
    hit = RATE.search(str(m["notes"]))
    if hit is None:
        return "a serving row needs its concurrency (batch) or a request rate (in its notes)"
    rate = hit.group(1) or hit.group(2)
    probe = at([step]).iloc[0]
    most = max(step, min(cap, float(probe["max_concurrency_kv"])) // step * step)
    if rate.lower().startswith("inf"):
        n = _prompts(m["notes"])
        if n is None:
            return "an unbounded request rate needs the number of prompts sent (a burst)"
        c = int(min(most, step * math.ceil(n / replicas / step)))
        return c, f"a burst of {n} prompts, C={c} running per replica", False
    per = float(rate) / replicas
    cs = np.unique(np.round(np.geomspace(1, max(1.0, most / step), 64)) * step)
    f = at(cs)
    held = (f["valid"] & f["kv_fits"]).to_numpy() & (f["output_tokens_per_s_per_replica"].to_numpy() / o >= per)
    if not held.any():
        return (f"request rate {rate}/s is beyond what the deployment serves (at most "
                f"{f['output_tokens_per_s_per_replica'].max() / o * replicas:.3g} requests/s): its queue grows")
    c = int(cs[np.argmax(held)])
    return c, f"{rate} requests/s held at C={c} per replica", True


def _finite_run(m, g, engine: str, rate: float, prompts: int, replicas: int, gpus: int, plan_words_: str,
                replaced: Replacements):
    """(value, note, reason) of N prompts sent at R requests/s, run request by request (serving_runs.py): what
    the client prints for that run, throughputs over its whole span, latencies' mean or percentile."""
    try:
        s = serving_runs.finite_run(m["_system"], m["_arch"], g, engine, rate, prompts, _spread(m["input_len"]),
                                    _spread(m["output_len"]), replicas, replaced)
    except ValueError as exc:
        return np.nan, "", f"the run of {prompts} prompts at {rate:g}/s cannot be simulated: {exc}"
    q, scope, stat = m["_q"]
    span = s["mean_output_tokens"] * s["requests"] / s["output_tokens_per_s"]  # first arrival to last finish
    per = {"gpu": 1.0 / gpus, "node": float(m["_system"].node.chips) / gpus, "replica": 1.0 / replicas,
           "deployment": 1.0}[scope]
    key = {"p50": "p50", "p90": "p90", "p99": "p99", "mean": "mean"}.get(stat)
    if key is None:
        return np.nan, "", f"the simulation reports p50, p90, p99 and means, not {stat}"
    value = {"output_throughput": s["output_tokens_per_s"] * per,
             "total_throughput": s["output_tokens_per_s"] * per * (s["mean_input_tokens"] + s["mean_output_tokens"])
             / s["mean_output_tokens"], "request_throughput": s["requests"] / span * per,
             "ttft": s[f"ttft_{key}_s"], "tpot": s[f"tpot_{key}_s"], "e2e_latency": s[f"e2e_{key}_s"],
             "user_speed": 1.0 / s[f"tpot_{key}_s"]}[q]
    note = (f"{plan_words_}, {prompts} prompts at {rate:g} requests/s (Poisson) simulated request by request, "
            f"lengths {m['input_len']} / {m['output_len']} (mean {s['mean_input_tokens']:.0f} / "
            f"{s['mean_output_tokens']:.0f}); {q} {scope}, {stat}")
    return float(value), note, ""


def _closed_loop(m, r, engine: str, c: int, step: int, da: int, i: int, o: int, batch: int, how: str,
                 replaced: Replacements):
    """(TTFT, TPOT, how) of a closed loop of clients (serving/closed_loop.py through inferencex_engine, as the
    InferenceX rows are priced): the engine's running cap and KV pages, its host time and steps to the first
    token, and the prefill queue of a burst of C prompts and its waves (requests / clients, from the notes'
    'N prompts', else the InferenceX protocol's), lengths as stated (no spread)."""
    prof = serving_engines.engine(engine, replaced=replaced)
    s = float(np.ravel(inferencex_engine.slots(float(c), prof["max_running"], float(r["max_concurrency_kv"]), step,
                                               da))[0])
    n = _prompts(m["notes"])
    waves = max(1, round(n / batch)) if n else inferencex_engine.protocol()["waves"]
    rows = inferencex_engine.replica_terms(engine, c, s, da, i, o, r)
    cl = inferencex_engine.closed_loop(rows, overrides={"waves": waves, "length_range_ratio": 1.0},
                                       replaced=replaced).iloc[0]
    return float(cl["ttft_s"]), float(cl["tpot_s"]), f"{how} in a closed loop of {waves} waves, {s:g} running"


def _price(m, replaced: Replacements) -> tuple[float, str, str]:
    """(predicted SI value, note, reason) of one row (module doc)."""
    system, arch = m["_system"], m["_arch"]
    try:
        plan = plan_words.plan_of(m["parallelism"])
    except ValueError as exc:
        return np.nan, "", f"parallelism {m['parallelism']!r}: {exc}"
    tp, da = plan.tp, plan.da
    unit = plan.gpus
    gpus = _count(m["num_chips"]) or unit
    if gpus % unit:
        return np.nan, "", f"parallelism {m['parallelism']!r} ({unit} GPUs per replica) does not divide {gpus} GPUs"
    replicas = gpus // unit
    batch, i, o = _count(m["batch"]), _length(m["input_len"]), _length(m["output_len"])
    speed = AT_SPEED.search(str(m["metric"]))
    if speed and i and o:
        return _on_frontier(m, float(speed.group(1)), i, o, gpus, replaced)
    if m["_q"][0] == "output_per_mw":
        return np.nan, "", "tokens per MW is read at an interactivity ('... at N tokens/s/user')"
    if not (i and o):
        return np.nan, "", "a serving row needs its input and output lengths (a dataset's distribution is not one)"
    label, w, e = _types(m)
    if w is None:
        return np.nan, "", f"dtype {label!r} is not a data type or quantisation mode"
    kv = KV_TYPE.search(str(m["dtype"]))
    if kv and kv.group(2):
        return np.nan, "", f"a KV cache of mixed types ({kv.group(0)} ...) is not one data type"
    kv_type = inferencex_map.storage_type(kv.group(1), m["_arch"], experts=False) if kv else None
    if kv and kv_type is None:
        return np.nan, "", f"KV cache type {kv.group(1)!r} is not a data type"
    comp = inferencex_map.compute_type(w, system, label)
    engine = _engine(m["notes"], system)
    opts = ServingOptions(mode=Mode.AGGREGATED, software=neuron_stacks.software(engine, system, replaced))

    def at(cs, options=opts) -> pd.DataFrame:
        g = Grid.of(tp=tp, da=da, ep=plan.ep, pp=plan.pp, concurrency=np.asarray(cs, dtype=float), compute=comp,
                    weights=w, expert_weights=e, kv_cache=kv_type)
        return serve(system, arch, g, Mix(i, o), options)

    def at_gpu(c) -> pd.Series:  # the GPU's terms alone (the closed loop adds the engine)
        return at([c], ServingOptions(mode=Mode.AGGREGATED)).iloc[0]

    rate, prompts = RATE.search(str(m["notes"])), _prompts(m["notes"])
    rate = rate and (rate.group(1) or rate.group(2))
    if not batch and rate and prompts and not rate.lower().startswith("inf"):  # N prompts at R/s: a finite run
        g = Grid.of(tp=tp, da=da, ep=plan.ep, pp=plan.pp, concurrency=float(da * plan.pp), compute=comp, weights=w,
                    expert_weights=e, kv_cache=kv_type)
        return _finite_run(m, g, engine, float(rate), prompts, replicas, gpus,
                           f"{engine}, TP{tp} DA{da} EP{plan.ep} PP{plan.pp} x {replicas} replicas", replaced)
    known = serving_engines.engines(replaced=replaced)
    load = _load(m, batch, replicas, da * plan.pp, at, o, known[engine]["max_running"] * da if engine in known
                 else np.inf)
    if isinstance(load, str):
        return np.nan, "", load
    c, how, latencies = load
    if m["_q"][0] in ("ttft", "tpot", "e2e_latency", "user_speed") and not latencies:
        return np.nan, "", f"{how}: its latencies are its queue's (the simulation: perfmodel simulate)"
    r = at([c]).iloc[0]
    if not r["valid"]:
        return np.nan, "", f"plan refused: {r['invalid_reason']}"
    q, scope, stat = m["_q"]
    chips = {"gpu": 1.0, "node": float(system.node.chips), "replica": float(unit), "deployment": float(gpus)}[scope]
    out = r["output_tokens_per_s_per_chip"] * chips
    ttft, tpot = r["ttft_s"], r["time_per_output_token_s"]
    if batch and engine in known:  # a closed loop of clients: the benchmark's own queue
        ttft, tpot, how = _closed_loop(m, at_gpu(c), engine, c, da * plan.pp, da, i, o, batch, how, replaced)
        out = frontier.closed_loop_y(c, o, ttft, tpot, unit) * chips  # each client finishes O tokens per request
    value = {"output_throughput": out, "total_throughput": out * (i + o) / o, "request_throughput": out / o,
             "user_speed": 1.0 / tpot, "ttft": ttft, "tpot": tpot, "e2e_latency": closed_loop.evaluate("e2e", T_1=ttft, T_2=tpot, O=o)}[q]
    note = (f"{engine}, TP{tp} DA{da} EP{plan.ep} PP{plan.pp} x {replicas} replicas, {how}, "
            f"{comp.value}/{w.value} weights{f', {e.value} experts' if e != w else ''}"
            f"{f', {kv_type.value} KV cache' if kv_type else ''}, {i}/{o} tokens; {q} {scope}"
            + ("; the median read as the steady state's mean" if stat == "p50" else ""))
    return float(value), note, ""


@register_validation("serving-words", selects,
                     gaps={"serving": "closed-loop queueing and engine scheduling beyond the steady state"})
def predict(rows: pd.DataFrame, replaced: Replacements) -> pd.DataFrame:
    """Serving measurements written as people publish them, through the steady state and an engine profile."""
    out = []
    for _, m in rows.iterrows():
        q = quantity_of(m["metric"])
        kind = vocabulary()["quantities"][q[0]]["kind"]
        sysname = system_names.lookup(m["hardware"]) or training_rows.system_of(m["hardware"])
        wname, dropped = model_names.resolve(m["model"])
        why = ("" if sysname else f"hardware {m['hardware']!r}: no system file lists it") or \
              ("" if wname else f"model {m['model']!r}: no workload file or alias names it") or \
              (f"{q[2]} latency: the tail needs the simulation (perfmodel simulate); the steady state gives means"
               if kind == "time" and q[2] in ("p90", "p95", "p99") else "")
        text = " ".join(str(m[c]) for c in ("metric", "parallelism", "notes"))
        if not why and re.search(r"(?<!no )(?<!without )\b(MTP|speculative|EAGLE|draft model)\b", text, re.I):
            why = "speculative decoding: the draft and its acceptance are not stated as perfmodel takes them"
        if not why and re.search(r"disaggregat|\bPD\b|prefill.decode split", text, re.I):
            why = "a disaggregated deployment whose prefill and decode pools the row does not size"
        try:
            factor = unit_factor(m["unit"], kind)
        except (ValueError, units.UnitError) as exc:
            why = why or str(exc)
        if why:
            out.append(unexpressed(m, why))
            continue
        m = m.copy()
        m["_system"], m["_arch"], m["_q"] = (catalog.load_system(sysname, replaced=replaced),
                                             workload_files.load_workload(wname), q)
        value, note, why = _price(m, replaced)
        if why:
            out.append(unexpressed(m, why))
            continue
        words = [d.strip("-") for d in dropped if not d.endswith("/")]
        note += f"; model read as {wname}" + (f" (dropped: {', '.join(words)})" if words else "")
        out.append(harness.row(m["case_id"], m["hardware"], m["metric"], float(m["value_num"]), value / factor,
                               m["unit"], note, sysname))
    return harness.frame(out)
