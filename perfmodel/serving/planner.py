"""Capacity planner: a serving demand to chips, instances, UltraServers, MW and $.

Serving (`plan_serving`), per system:
    1. every plan / data type / concurrency of the scale-up domain (search.frontier_sweep) at the
       demand's mean input / output lengths;
    2. keep those meeting the SLA: TPOT <= target, TTFT <= target at the LONGEST listed input
       (re-priced at that length), KV cache fits;
    3. size for the peak: output tokens/s R = requests/s x peak-to-average x mean output;
       replicas = ceil(R / replica throughput); UltraServers = ceil(replicas / replicas per
       domain); chips = replicas x chips per replica (prefill pool included when disaggregated);
       instances = ceil(chips / node chips) (or whole UltraServers with whole_scaleup);
    4. pick the cheapest ($/month, instance-hours x node price x 730 h) where a price exists or
       is assumed, else the lowest power, among the plans inside the engine's measured envelope
       (serving/envelope.py: concurrencies and attention-DP degrees measured deployments of the
       engine ran) when any meets the SLA, else among all (the answer says it is extrapolated);
       then refine the chosen plan's concurrency to the whole micro-batch (the largest C meeting
       the targets, inside the envelope when the plan is; _refine, on arrays).
    Engine: each system's SystemInputs (resolved at the edge: the engine named, the hardware family's default, or
    "none", the accelerator alone, the roofline) prices every plan as that engine runs it.
    Ceiling: a fleet above FLEET_CHIPS (PlanOptions.max_fleet_chips) is no answer: feasible False, its count said.
    Power: facility W at peak (provisioned) and on average (chip dynamic power x 1/peak factor),
    with the low / high chip-power cases. Queueing is not modelled beyond the peak factor.

A training run (`plan_training`) is sized in training_run.py.

Does not: format output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfmodel.core import units
from perfmodel.core.calibration import Calibration
from perfmodel.core.hardware import System
from perfmodel.core.inputs import SystemInputs
from perfmodel.core.workload import ModelArch
from perfmodel.serving import cost, envelope, power, search
from perfmodel.serving.demand import Demand, Lengths  # noqa: F401 (re-exported: planner.Demand)
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, serve


@dataclass(frozen=True)
class PlanOptions:
    modes: tuple = (Mode.AGGREGATED,)
    objective: str = "cost"  # cost | power | chips
    whole_scaleup: bool = False  # bill whole UltraServers (scale-up domains) instead of instances
    prices: dict = field(default_factory=dict)  # system -> USD per node-hour override
    grid_kw: dict = field(default_factory=dict)  # passed to search.plan_grid (dtypes, tp, concurrency ...)
    max_replica_chips: int = 0  # a replica's largest size; 0: the larger of the scale-up domain and SPAN_CHIPS
    max_fleet_chips: int = 0  # a fleet larger is no answer (0: FLEET_CHIPS)


# A sanity ceiling, not physics (assumption, PlanOptions.max_fleet_chips / plan --max-fleet-chips overrides it): the
# most accelerators one buyer could plausibly obtain for one deployment. Two million chips draw 2-4 GW of facility
# power at 1-2 kW each, the scale of the largest single-operator AI campuses announced by 2026; a demand that needs
# more is answered "no fleet" with the count, never priced as if it could be bought.
FLEET_CHIPS = 2_000_000


# Search-space bounds, not physics (each multiplies the plans priced; PlanOptions overrides them):
SPAN_CHIPS = 64  # replicas may span scale-up domains up to this many chips: 8 nodes of 8 GPUs, expert
#                  parallelism to 64 ranks (DeepSeek-V3's 256 experts: 4 per GPU), beyond which all-to-all
#                  over the scale-out network dominates a decode step
LONG_CONTEXT_TOKENS = 65_536  # from this request length the planner also tries context-parallel plans (they
#                              multiply the grid up to 7x; grid_kw={"cp": [...]} tries them at any length)


def _size(df: pd.DataFrame, system: System, peak_tokens_per_s: float, whole_scaleup: bool,
          replicas=None) -> pd.DataFrame:
    rep = np.ceil(peak_tokens_per_s / df["output_tokens_per_s_per_replica"].to_numpy()) if replicas is None else \
        np.full(len(df), float(replicas))
    chips_rep = df["replica_chips"].to_numpy()
    # disaggregated (xPyD): y = rep decode workers and x = ceil(y s) prefill workers of the same plan, s the
    # prefill share per decode replica; aggregated: x = 0
    prefill = np.maximum(0.0, np.ceil(rep * df["prefill_chips_per_replica"].to_numpy() / chips_rep - 1e-9))
    workers = rep + prefill
    chips = workers * chips_rep
    dom = float(system.scaleup_chips)
    # whole workers inside a domain, or a worker spanning whole domains (search.plan_grid's rule)
    scaleups = np.where(chips_rep <= dom, np.ceil(workers / np.floor(dom / np.minimum(chips_rep, dom))),
                        workers * np.ceil(chips_rep / dom))
    inst = scaleups * system.scaleup_nodes if whole_scaleup else np.ceil(chips / system.node.chips)
    return df.assign(replicas=rep, prefill_workers=prefill, chips=chips, instances=inst, scaleups=scaleups,
                     billed_chips=inst * system.node.chips)


def _power_cols(df: pd.DataFrame, system: System, cal: Calibration, p2a: float) -> pd.DataFrame:
    act = {e: df[f"activity_{e}_frac"].to_numpy() for e in ("tensor", "vector", "scalar", "gpsimd", "memory", "comm")}
    out = df.copy()
    active = (df["replicas"] * (df["replica_chips"] + df["prefill_chips_per_replica"])).to_numpy()
    billed = df["billed_chips"].to_numpy()
    nodes = df["instances"].to_numpy()
    for case in power.CASES:
        pm = power.power_model(system, cal, case)
        chip_w = pm.chip_w(act)
        peak = pm.facility_w(pm.it_w(chip_w, np.minimum(active, billed), billed, nodes))
        avg_chip = pm.idle_w + (chip_w - pm.idle_w) / p2a
        avg = pm.facility_w(pm.it_w(avg_chip, np.minimum(active, billed), billed, nodes))
        out["facility_power_peak_w" if case == "nominal" else f"facility_power_peak_at_{case}_tdp_w"] = peak
        if case == "nominal":
            out["facility_power_avg_w"] = avg
    return out


def _refine(system: System, arch: ModelArch, row: pd.Series, demand: Demand, mix: Mix, mix_max: Mix,
            opts: ServingOptions, cal: Calibration, peak: float, c_cap: float = np.inf
            ) -> tuple[pd.Series, pd.Series, str]:
    """The chosen plan's concurrency to the whole micro-batch (C a multiple of d_a x p), searched on arrays:

    capacity   C_max: the largest C with TPOT(C) <= target, TTFT(C) at the longest input <= target and the
               KV cache in HBM (each bound is monotone in C); replicas = ceil(peak / (C_max / TPOT(C_max)))
    operating  C_op: the smallest C with C / TPOT(C) >= peak / replicas, the concurrency each replica
               actually holds at the peak (Little's law)
    Each is a coarse geometric grid then every whole micro-batch between the two grid points that bracket
    the answer: four vectorised serve() evaluations, never one per concurrency.
    C stays at or below c_cap (the engine's measured envelope, when the chosen plan lies inside it).
    Returns (capacity row, operating row, note)."""
    step = int(row["da"] * row["pp"])
    seen: list[pd.DataFrame] = []  # every evaluated concurrency, looked up by value (at)

    def whole(c) -> np.ndarray:
        return np.maximum(step, np.floor(np.asarray(c, dtype=float) / step) * step).astype(np.int64)

    def evaluate(cs: np.ndarray, with_ttft: bool = True) -> pd.DataFrame:
        g = Grid.of(tp=row["tp"], da=row["da"], ep=row["ep"], pp=row["pp"], cp=row["cp"], concurrency=cs,
                    compute=row["compute_dtype"], weights=row["weights_dtype"],
                    expert_weights=row["expert_weights_dtype"], kv_cache=row["kv_dtype"])
        f = serve(system, arch, g, mix, opts, cal)
        if not with_ttft:  # throughput only: the longest input's TTFT is priced when needed
            tt = np.full(len(cs), np.nan)
        else:
            tt = serve(system, arch, g, mix_max, opts, cal)["ttft_s"].to_numpy() if mix_max != mix else \
                f["ttft_s"].to_numpy()
        seen.append(f.assign(ttft_at_max_input_s=tt))
        return seen[-1]

    def at(c: int, with_ttft: bool = False) -> pd.Series | None:
        f = pd.concat(seen, ignore_index=True)
        hit = f[(f["concurrency"] == c) & (f["ttft_at_max_input_s"].notna() | (not with_ttft))]
        return hit.iloc[-1] if len(hit) else None

    def ok(f: pd.DataFrame) -> np.ndarray:
        good = f["kv_fits"] & f["valid"] & (f["time_per_output_token_s"] <= demand.tpot_s) & \
            (f["ttft_at_max_input_s"] <= demand.ttft_s)
        return np.logical_and.accumulate(good.to_numpy())  # the bounds are monotone: the first miss ends it

    def between(lo: int, hi: int) -> np.ndarray:
        return np.unique(whole(np.linspace(lo, hi, min(2048, max(2, (hi - lo) // step + 1)))))

    c0 = int(row["concurrency"])
    coarse = np.unique(np.concatenate([[c0], whole(np.minimum(np.geomspace(c0, 64 * c0, 64), max(c_cap, c0)))]))
    good = ok(evaluate(coarse))
    i = int(np.flatnonzero(good)[-1]) if good.any() else 0
    c_max = int(coarse[i])
    if i + 1 < len(coarse):
        fine = between(int(coarse[i]), int(coarse[i + 1]))
        g2 = ok(evaluate(fine))
        c_max = int(fine[np.flatnonzero(g2)[-1]]) if g2.any() else c_max

    def thr(c: int) -> float:
        return float(at(c)["output_tokens_per_s_per_replica"])

    replicas = math.ceil(peak / thr(c_max))
    need = peak / replicas
    lows = np.unique(np.concatenate([whole(np.geomspace(step, c_max, 48)), [c_max]]))
    t = evaluate(lows, with_ttft=False)["output_tokens_per_s_per_replica"].to_numpy()
    j = int(np.argmax(t >= need)) if (t >= need).any() else len(lows) - 1
    c_op = int(lows[j])
    if j > 0:
        fine = between(int(lows[j - 1]), int(lows[j]))
        tf = evaluate(fine, with_ttft=False)["output_tokens_per_s_per_replica"].to_numpy()
        c_op = int(fine[int(np.argmax(tf >= need))]) if (tf >= need).any() else c_op
    if at(c_op, with_ttft=True) is None:
        evaluate(np.array([c_op]))

    def full(c: int) -> pd.Series:
        out = row.copy()
        r = at(c, with_ttft=True)
        keep = [k for k in r.index if k in out.index]
        out[keep] = r[keep]
        out["ttft_at_max_input_s"] = r["ttft_at_max_input_s"]
        return out

    note = (f"capacity {c_max} sequences per replica at TPOT <= {demand.tpot_s * 1e3:.1f} ms (grid {c0}, refined to "
            f"the whole micro-batch); at the peak each of {replicas} replicas holds {c_op} (C / TPOT(C) >= "
            f"{need:,.0f} tokens/s)")
    return full(c_max), full(c_op), note


KEPT = ("weights_dtype", "kv_dtype", "replica_chips", "prefill_chips_per_replica", "replicas_per_scaleup") + tuple(
    f"activity_{e}_frac" for e in ("tensor", "vector", "scalar", "gpsimd", "memory", "comm"))


def _answer(one: pd.Series, cap: pd.Series, price, peak: float, demand: Demand, how: str) -> dict:
    """A system's answer from its operating row `one` (sized and powered) and capacity row `cap`; KEPT carries
    what resize() and the simulation's verification need (the plan's data types, chips per replica, activity)."""
    usd_m = one["billed_chips"] * price.usd_per_chip_hour * cost.HOURS_PER_MONTH if price.available else np.nan
    return {
        "feasible": True, "mode": one["mode"],
        "tp": one["tp"], "da": one["da"], "ep": one["ep"], "pp": one["pp"], "cp": one["cp"],
        "concurrency": one["concurrency"],
        "capacity_concurrency": cap["concurrency"],
        "compute_dtype": one["compute_dtype"], "expert_weights_dtype": one["expert_weights_dtype"],
        "ttft_s": one["ttft_at_max_input_s"], "time_per_output_token_s": one["time_per_output_token_s"],
        "tokens_per_s_per_user": one["tokens_per_s_per_user"],
        "peak_output_tokens_per_replica": cap["output_tokens_per_s_per_replica"],
        "replicas": one["replicas"], "prefill_workers": one["prefill_workers"], "chips": one["chips"],
        "instances": one["instances"],
        "scaleups": one["scaleups"], "billed_chips": one["billed_chips"],
        "facility_power_peak_w": one["facility_power_peak_w"],
        "facility_power_peak_at_low_tdp_w": one["facility_power_peak_at_low_tdp_w"],
        "facility_power_peak_at_high_tdp_w": one["facility_power_peak_at_high_tdp_w"],
        "facility_power_avg_w": one["facility_power_avg_w"], "usd_per_month": usd_m,
        "usd_per_million_output_tokens": (price.usd_per_chip_hour * one["billed_chips"]
                                          / (peak / demand.peak_to_average * units.SECONDS_PER_HOUR)
                                          * units.MILLION if price.available else np.nan),
        "price_note": price.label, "note": how, **{k: one[k] for k in KEPT}}


def resize(row: dict, system: System, cal: Calibration, replicas: int, demand: Demand,
           options: PlanOptions = PlanOptions(), price=None) -> dict:
    """A system's answer at another replica count (the count the simulation verified): chips, instances,
    UltraServers, power and cost recomputed; the plan and its per-replica figures unchanged."""
    price = price or cost.price_for(system, cal, options.prices.get(row["system"]))
    peak = demand.requests_per_s * demand.peak_to_average * demand.output_tokens.mean
    df = _size(pd.DataFrame([{**row, "ttft_at_max_input_s": row["ttft_s"]}]), system, peak, options.whole_scaleup,
               replicas=replicas)
    one = _power_cols(df, system, cal, demand.peak_to_average).iloc[0]
    cap = pd.Series({"concurrency": row["capacity_concurrency"],
                     "output_tokens_per_s_per_replica": row["peak_output_tokens_per_replica"]})
    return {**row, **_answer(one, cap, price, peak, demand, row["note"])}


def _outside(engine: str, env) -> str:
    """Why an answer is extrapolated: no engine, or no plan meeting the SLA inside the engine's envelope."""
    if env is None:
        return ("extrapolated: the accelerator alone (no serving engine, the roofline)" if not engine else
                f"extrapolated: {engine} has no measured envelope")
    return (f"extrapolated: no plan meeting the targets lies inside {engine}'s measured envelope (at most "
            f"{env['max_running']:g} sequences per replica, attention-DP up to {env['max_attention_dp']:g})")


def plan_serving(demand: Demand, arch: ModelArch, systems: list[SystemInputs], options: PlanOptions = PlanOptions(),
                 progress=None) -> pd.DataFrame:
    """Best configuration per system for `demand` (module doc): one row per system, generations side by side.
    `arch` is the demand's model and `systems` each system's inputs (core/inputs.SystemInputs: the System with its
    calibration, the engine, its record and envelope), resolved at the edge (catalog/system_inputs.resolve)."""
    demand.validate()
    i, o = demand.input_tokens.max, demand.output_tokens.max
    if i + o > arch.max_position_embeddings:  # no engine serves such a request: no fleet is its answer
        raise ValueError(f"demand {demand.name!r}: input {i:g} + output {o:g} = {i + o:g} tokens is past the "
                         f"{arch.max_position_embeddings} positions of {arch.name} (max_position_embeddings)")
    mix = Mix(int(round(demand.input_tokens.mean)), int(round(demand.output_tokens.mean)))
    mix_max = Mix(int(round(demand.input_tokens.max)), mix.output_tokens)
    peak = demand.requests_per_s * demand.peak_to_average * demand.output_tokens.mean
    modes = [Mode(m) for m in options.modes]
    rows = []
    for i, inputs in enumerate(systems):
        system, cal, name = inputs.system, inputs.cal, inputs.name
        price = cost.price_for(system, cal, options.prices.get(name))
        kw = {"max_chips": options.max_replica_chips or max(system.scaleup_chips, SPAN_CHIPS), **options.grid_kw}
        if mix_max.input_tokens + mix_max.output_tokens >= LONG_CONTEXT_TOKENS and "cp" not in kw:
            kw["cp"] = [2 ** j for j in range(0, int(np.log2(kw["max_chips"])) + 1)]  # context parallel plans
        eng, sw, env = inputs.engine, inputs.software, inputs.envelope
        df = search.frontier_sweep(system, arch, mix, modes, cal=cal, price=price, prefix_tokens=demand.cached_tokens,
                                   software=sw, envelope_profile=env, **kw)
        ok = df["kv_fits"] & df["valid"] & (df["time_per_output_token_s"] <= demand.tpot_s)
        df = df[ok]
        if len(df) and mix_max != mix:
            g = Grid.of(tp=df["tp"], da=df["da"], ep=df["ep"], pp=df["pp"], cp=df["cp"], concurrency=df["concurrency"],
                        compute=df["compute_dtype"].tolist(), weights=df["weights_dtype"].tolist(),
                        expert_weights=df["expert_weights_dtype"].tolist(), kv_cache=df["kv_dtype"].tolist())
            ttft = np.concatenate([serve(system, arch, g.take(np.flatnonzero((df["mode"] == m.value).to_numpy())),
                                         mix_max, ServingOptions(mode=m, prefix_tokens=demand.cached_tokens,
                                                                 software=sw), cal)["ttft_s"].to_numpy()
                                   for m in modes])
            order = np.concatenate([np.flatnonzero((df["mode"] == m.value).to_numpy()) for m in modes])
            t = np.empty(len(df))
            t[order] = ttft
            df = df.assign(ttft_at_max_input_s=t)
        else:
            df = df.assign(ttft_at_max_input_s=df["ttft_s"])
        df = df[df["ttft_at_max_input_s"] <= demand.ttft_s]
        base = {"system": name, "generation": system.generation, "workload": arch.name, "demand": demand.name,
                "mix": mix.label, "engine": eng or "none", "power_caveat": power.caveat(system, cal),
                "price_status": price.status}
        measured = df["envelope"].eq(envelope.MEASURED)
        df = df[measured] if measured.any() else df  # measured ground first; else say the answer leaves it
        if not len(df):
            rows.append({**base, "feasible": False,
                         "note": f"no configuration meets TTFT <= {demand.ttft_s * 1e3:.0f} ms (at "
                                 f"{mix_max.input_tokens} "
                                 f"input tokens) and TPOT <= {demand.tpot_s * 1e3:.1f} ms with the KV cache in HBM"})
            continue
        df = _power_cols(_size(df, system, peak, options.whole_scaleup), system, cal, demand.peak_to_average)
        usd = df["billed_chips"] * price.usd_per_chip_hour * cost.HOURS_PER_MONTH if price.available else np.nan
        df = df.assign(usd_per_month=usd)
        obj = options.objective
        if obj == "cost" and not price.available:
            obj = "power"
        key = {"cost": "usd_per_month", "power": "facility_power_peak_w", "chips": "billed_chips"}[obj]
        best = df.sort_values([key, "billed_chips", "facility_power_peak_w"]).iloc[0]
        inside = best["envelope"] == envelope.MEASURED
        cap, op, how = _refine(system, arch, best, demand, mix, mix_max,
                               ServingOptions(mode=Mode(best["mode"]), prefix_tokens=demand.cached_tokens, software=sw),
                               cal, peak, env["max_running"] if inside else np.inf)
        how = how if inside else f"{how}; {_outside(eng, env)}"
        sized = _size(pd.DataFrame([cap]), system, peak, options.whole_scaleup).iloc[0]
        op = op.copy()
        for k in ("replicas", "prefill_workers", "chips", "instances", "scaleups", "billed_chips"):
            op[k] = sized[k]
        ceiling = options.max_fleet_chips or FLEET_CHIPS
        if sized["chips"] > ceiling:
            rows.append({**base, "feasible": False, "chips": sized["chips"],
                         "note": f"no fleet: the demand needs {sized['chips']:,.0f} chips, beyond the {ceiling:,} one "
                                 "buyer could plausibly obtain (assumption: planner.FLEET_CHIPS; --max-fleet-chips)"})
            continue
        one = _power_cols(pd.DataFrame([op]), system, cal, demand.peak_to_average).iloc[0]
        rows.append({**base, **_answer(one, cap, price, peak, demand, how), "objective": obj,
                     "envelope": envelope.MEASURED if inside else envelope.EXTRAPOLATED})
        if progress:
            progress(i + 1, len(systems))
    return pd.DataFrame(rows)
