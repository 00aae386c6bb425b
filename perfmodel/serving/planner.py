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
       is assumed, else the lowest power; then refine the chosen plan's concurrency to the whole
       micro-batch (the largest C meeting the targets; _refine, on arrays).
    Power: facility W at peak (provisioned) and on average (chip dynamic power x 1/peak factor),
    with the low / high chip-power cases. Queueing is not modelled beyond the peak factor.

A training run (`plan_training`) is sized in training_run.py.

Does not: format output.
"""

from __future__ import annotations

import math
import numbers
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import files, workload_files
from perfmodel.catalog.calibration import Calibration, calibration_for
from perfmodel.core import limits, units
from perfmodel.core.hardware import System
from perfmodel.core.workload import ModelArch
from perfmodel.serving import cost, power, search
from perfmodel.serving.steady_state import Grid, Mix, Mode, ServingOptions, serve

NUMBER_FIELDS = ("requests_per_s", "ttft_s", "tpot_s", "peak_to_average")
MAX_PEAK_TO_AVERAGE = 1000.0  # provisioning for a peak 1000x the average is a typo (the CLI's --peak-factor ceiling)


def _number(v, what: str) -> float:
    """`v` as a float when it is a real number (not a bool, not text), else ValueError naming `what`."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"{what}: expected a number, got {v!r}")
    try:
        return float(v)
    except OverflowError:  # an int beyond any float
        raise ValueError(f"{what}: must be finite, got {v!r}") from None


def _length(v, what: str) -> int:
    """A token length: a whole number in [1, MAX_SEQ_TOKENS] (a table key may be its text, '512')."""
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= 20:
        v = int(v.strip())
    return limits.check_count(v, f"{what}: token lengths", 1, limits.MAX_SEQ_TOKENS)


@dataclass(frozen=True)
class Lengths:
    """A token-length distribution: values with weights (a single value is a point mass)."""

    values: tuple[float, ...]
    weights: tuple[float, ...]

    @classmethod
    def of(cls, x, what: str = "token lengths") -> "Lengths":
        """A length (512), a table {"512": 0.5, "4096": 0.5} or pairs [(512, 0.5), ...] of length and
        weight; lengths whole numbers in [1, MAX_SEQ_TOKENS], weights finite, >= 0, summing > 0.
        Errors name `what` (the field) and the value."""
        if isinstance(x, Lengths):
            return x
        if isinstance(x, dict):
            pairs = list(x.items())
        elif isinstance(x, (list, tuple)):
            pairs = [tuple(p) if isinstance(p, (list, tuple)) else (p,) for p in x]
        else:
            pairs = [(x, 1.0)]
        if not pairs or any(len(p) != 2 for p in pairs):
            raise ValueError(f"{what}: expected a length or LENGTH = WEIGHT pairs, got {x!r}")
        vals = tuple(float(_length(a, what)) for a, _ in pairs)
        wts = tuple(_number(b, f"{what}: weight of {a}") for a, b in pairs)
        if not all(math.isfinite(w) and w >= 0 for w in wts) or sum(wts) <= 0:
            raise ValueError(f"{what}: token lengths need finite weights >= 0 summing > 0, got {x!r}")
        return cls(vals, wts)

    @property
    def mean(self) -> float:
        return float(np.average(self.values, weights=self.weights))

    @property
    def max(self) -> float:
        return float(max(v for v, w in zip(self.values, self.weights) if w > 0))


@dataclass(frozen=True)
class Demand:
    """What to serve: workload, average request rate, length distributions and the SLA.

    ttft_s applies to the longest listed input; tpot_s to every output token.
    """

    workload: str
    requests_per_s: float
    input_tokens: Lengths
    output_tokens: Lengths
    ttft_s: float
    tpot_s: float
    peak_to_average: float = 1.0
    name: str = "demand"

    def validate(self, where: str = "demand field ") -> None:
        """Rates and targets finite and > 0 (at most limits.MAX_QUANTITY_SI), peak-to-average in
        [1, MAX_PEAK_TO_AVERAGE]; errors start with `where` and the field's name."""
        for f in ("requests_per_s", "ttft_s", "tpot_s"):
            v = _number(getattr(self, f), f"{where}{f}")
            if not (math.isfinite(v) and 0 < v <= limits.MAX_QUANTITY_SI):
                raise ValueError(f"{where}{f}: must be a number > 0 and <= {limits.MAX_QUANTITY_SI:g}, got {v!r}")
        v = _number(self.peak_to_average, f"{where}peak_to_average")
        if not 1 <= v <= MAX_PEAK_TO_AVERAGE:
            raise ValueError(f"{where}peak_to_average: must be >= 1 and <= {MAX_PEAK_TO_AVERAGE:g}, got {v!r}")

    def as_dict(self) -> dict:
        """Plain values (JSON-ready); lengths as {length: weight}."""
        out = dict(self.__dict__)
        for f in ("input_tokens", "output_tokens"):
            out[f] = {str(v): w for v, w in zip(getattr(self, f).values, getattr(self, f).weights)}
        return out

    @classmethod
    def from_dict(cls, d: dict, name: str = "demand", where: str = "demand field ") -> "Demand":
        """A demand from plain values; every error starts with `where` (a file's name in from_toml)
        and names the field and the value."""
        known = {"workload", "requests_per_s", "input_tokens", "output_tokens", "ttft_s", "tpot_s",
                 "peak_to_average", "name"}
        unknown = sorted(str(k) for k in set(d) - known)
        if unknown:
            raise ValueError(f"{where}{unknown[0]}: unknown field (known: {', '.join(sorted(known))})")
        missing = sorted({"workload", "requests_per_s", "input_tokens", "output_tokens", "ttft_s", "tpot_s"} - set(d))
        if missing:
            raise ValueError(f"{where}{missing[0]}: missing field (required: workload, requests_per_s, "
                             "input_tokens, output_tokens, ttft_s, tpot_s)")
        for f in ("workload", "name"):
            if f in d and not (isinstance(d[f], str) and d[f].strip()):
                raise ValueError(f"{where}{f}: expected a name, got {d[f]!r}")
        num = {f: _number(d[f], f"{where}{f}") for f in NUMBER_FIELDS if f in d}
        dem = cls(workload=d["workload"], requests_per_s=num["requests_per_s"],
                  input_tokens=Lengths.of(d["input_tokens"], f"{where}input_tokens"),
                  output_tokens=Lengths.of(d["output_tokens"], f"{where}output_tokens"),
                  ttft_s=num["ttft_s"], tpot_s=num["tpot_s"], peak_to_average=num.get("peak_to_average", 1.0),
                  name=d.get("name", name))
        dem.validate(where)
        return dem

    @classmethod
    def from_toml(cls, path: str | Path) -> "Demand":
        """Read a demand file: a [demand] table with the fields above; lengths as a number or a
        table {"512" = 0.5, "4096" = 0.5} of length = weight. Errors name the file and the field."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read demand file: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a demand file (not UTF-8 text; expected TOML with a [demand] table)") \
                from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: malformed TOML in demand file: {exc}") from None
        if "demand" not in data:
            raise ValueError(f"{path}: no [demand] table")
        if not isinstance(data["demand"], dict):
            raise ValueError(f"{path}: field demand: expected a [demand] table, got {data['demand']!r}")
        dem = cls.from_dict(data["demand"], name=path.stem, where=f"{path}: field demand.")
        known = workload_files.list_workloads()
        if dem.workload not in known:
            raise ValueError(f"{path}: field demand.workload: no such workload {dem.workload!r}"
                             f"{files.did_you_mean(dem.workload, known)} (perfmodel workloads list)")
        return dem


@dataclass(frozen=True)
class PlanOptions:
    modes: tuple = (Mode.AGGREGATED,)
    objective: str = "cost"  # cost | power | chips
    whole_scaleup: bool = False  # bill whole UltraServers (scale-up domains) instead of instances
    prices: dict = field(default_factory=dict)  # system -> USD per node-hour override
    grid_kw: dict = field(default_factory=dict)  # passed to search.plan_grid (dtypes, tp, concurrency ...)


def _size(df: pd.DataFrame, system: System, peak_tokens_per_s: float, whole_scaleup: bool) -> pd.DataFrame:
    rep = np.ceil(peak_tokens_per_s / df["output_tokens_per_s_per_replica"].to_numpy())
    per_dom = df["replicas_per_scaleup"].to_numpy()
    chips_eff = df["replica_chips"].to_numpy() + df["prefill_chips_per_replica"].to_numpy()
    scaleups = np.ceil(rep / np.maximum(per_dom, 1))
    chips = np.ceil(rep * chips_eff)
    inst = scaleups * system.scaleup_nodes if whole_scaleup else np.ceil(chips / system.node.chips)
    return df.assign(replicas=rep, chips=chips, instances=inst, scaleups=scaleups,
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
            opts: ServingOptions, cal: Calibration, peak: float) -> tuple[pd.Series, pd.Series, str]:
    """The chosen plan's concurrency to the whole micro-batch (C a multiple of d_a x p), searched on arrays:

    capacity   C_max: the largest C with TPOT(C) <= target, TTFT(C) at the longest input <= target and the
               KV cache in HBM (each bound is monotone in C); replicas = ceil(peak / (C_max / TPOT(C_max)))
    operating  C_op: the smallest C with C / TPOT(C) >= peak / replicas, the concurrency each replica
               actually holds at the peak (Little's law)
    Each is a coarse geometric grid then every whole micro-batch between the two grid points that bracket
    the answer: four vectorised serve() evaluations, never one per concurrency.
    Returns (capacity row, operating row, note)."""
    step = int(row["da"] * row["pp"])
    memo: dict[int, tuple[pd.Series, float]] = {}

    def whole(c) -> np.ndarray:
        return np.maximum(step, np.floor(np.asarray(c, dtype=float) / step) * step).astype(np.int64)

    def evaluate(cs: np.ndarray, with_ttft: bool = True) -> pd.DataFrame:
        g = Grid.of(tp=row["tp"], da=row["da"], ep=row["ep"], pp=row["pp"], concurrency=cs,
                    compute=row["compute_dtype"], weights=row["weights_dtype"],
                    expert_weights=row["expert_weights_dtype"], kv_cache=row["kv_dtype"])
        f = serve(system, arch, g, mix, opts, cal)
        if not with_ttft:  # throughput only: the longest input's TTFT is priced when needed
            tt = np.full(len(cs), np.nan)
        else:
            tt = serve(system, arch, g, mix_max, opts, cal)["ttft_s"].to_numpy() if mix_max != mix else \
                f["ttft_s"].to_numpy()
        for c, (_, r), t in zip(cs, f.iterrows(), tt):
            memo[int(c)] = (r, float(t))
        return f.assign(ttft_at_max_input_s=tt)

    def ok(f: pd.DataFrame) -> np.ndarray:
        good = f["kv_fits"] & f["valid"] & (f["time_per_output_token_s"] <= demand.tpot_s) & \
            (f["ttft_at_max_input_s"] <= demand.ttft_s)
        return np.logical_and.accumulate(good.to_numpy())  # the bounds are monotone: the first miss ends it

    def between(lo: int, hi: int) -> np.ndarray:
        return np.unique(whole(np.linspace(lo, hi, min(2048, max(2, (hi - lo) // step + 1)))))

    c0 = int(row["concurrency"])
    coarse = np.unique(np.concatenate([[c0], whole(np.geomspace(c0, 64 * c0, 64))]))
    good = ok(evaluate(coarse))
    i = int(np.flatnonzero(good)[-1]) if good.any() else 0
    c_max = int(coarse[i])
    if i + 1 < len(coarse):
        fine = between(int(coarse[i]), int(coarse[i + 1]))
        g2 = ok(evaluate(fine))
        c_max = int(fine[np.flatnonzero(g2)[-1]]) if g2.any() else c_max

    def thr(c: int) -> float:
        return float(memo[c][0]["output_tokens_per_s_per_replica"])

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
    if c_op not in memo or not np.isfinite(memo[c_op][1]):
        evaluate(np.array([c_op]))

    def full(c: int) -> pd.Series:
        out = row.copy()
        r, t_max = memo[c]
        for k, v in r.items():
            if k in out.index:
                out[k] = v
        out["ttft_at_max_input_s"] = t_max
        return out

    note = (f"capacity {c_max} sequences per replica at TPOT <= {demand.tpot_s * 1e3:.1f} ms (grid {c0}, refined to "
            f"the whole micro-batch); at the peak each of {replicas} replicas holds {c_op} (C / TPOT(C) >= "
            f"{need:,.0f} tokens/s)")
    return full(c_max), full(c_op), note


def plan_serving(demand: Demand, systems: list[str], options: PlanOptions = PlanOptions(),
                 cal_overrides: dict | None = None, progress=None) -> pd.DataFrame:
    """Best configuration per system for `demand` (module doc): one row per system, generations side by side."""
    demand.validate()
    arch = workload_files.load_workload(demand.workload)
    mix = Mix(int(round(demand.input_tokens.mean)), int(round(demand.output_tokens.mean)))
    mix_max = Mix(int(round(demand.input_tokens.max)), mix.output_tokens)
    peak = demand.requests_per_s * demand.peak_to_average * demand.output_tokens.mean
    modes = [Mode(m) for m in options.modes]
    rows = []
    for i, name in enumerate(systems):
        system = catalog.load_system(name)
        cal = calibration_for(system)
        if cal_overrides:
            cal = cal.with_overrides({k: v for k, v in cal_overrides.items() if k in cal.params})
        price = cost.price_for(system, cal, options.prices.get(name))
        df = search.frontier_sweep(system, arch, mix, modes, cal=cal, price=price, **options.grid_kw)
        ok = df["kv_fits"] & df["valid"] & (df["time_per_output_token_s"] <= demand.tpot_s)
        df = df[ok]
        if len(df) and mix_max != mix:
            g = Grid.of(tp=df["tp"], da=df["da"], ep=df["ep"], pp=df["pp"], concurrency=df["concurrency"],
                        compute=df["compute_dtype"].tolist(), weights=df["weights_dtype"].tolist(),
                        expert_weights=df["expert_weights_dtype"].tolist(), kv_cache=df["kv_dtype"].tolist())
            ttft = np.concatenate([serve(system, arch, g.take(np.flatnonzero((df["mode"] == m.value).to_numpy())),
                                         mix_max, ServingOptions(mode=m), cal)["ttft_s"].to_numpy()
                                   for m in modes])
            order = np.concatenate([np.flatnonzero((df["mode"] == m.value).to_numpy()) for m in modes])
            t = np.empty(len(df))
            t[order] = ttft
            df = df.assign(ttft_at_max_input_s=t)
        else:
            df = df.assign(ttft_at_max_input_s=df["ttft_s"])
        df = df[df["ttft_at_max_input_s"] <= demand.ttft_s]
        base = {"system": name, "generation": system.generation, "workload": arch.name, "demand": demand.name,
                "mix": mix.label, "power_caveat": power.caveat(system, cal), "price_status": price.status}
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
        best = df.sort_values([key, "billed_chips", "facility_power_peak_w"]).iloc[0]
        cap, op, how = _refine(system, arch, best, demand, mix, mix_max, ServingOptions(mode=Mode(best["mode"])),
                               cal, peak)
        sized = _size(pd.DataFrame([cap]), system, peak, options.whole_scaleup).iloc[0]
        op = op.copy()
        for k in ("replicas", "chips", "instances", "scaleups", "billed_chips"):
            op[k] = sized[k]
        one = _power_cols(pd.DataFrame([op]), system, cal, demand.peak_to_average).iloc[0]
        usd_m = one["billed_chips"] * price.usd_per_chip_hour * cost.HOURS_PER_MONTH if price.available else np.nan
        rows.append({
            **base, "feasible": True, "objective": obj, "mode": one["mode"],
            "tp": one["tp"], "da": one["da"], "ep": one["ep"], "pp": one["pp"], "concurrency": one["concurrency"],
            "capacity_concurrency": cap["concurrency"],
            "compute_dtype": one["compute_dtype"], "expert_weights_dtype": one["expert_weights_dtype"],
            "ttft_s": one["ttft_at_max_input_s"], "time_per_output_token_s": one["time_per_output_token_s"],
            "tokens_per_s_per_user": one["tokens_per_s_per_user"],
            "peak_output_tokens_per_replica": cap["output_tokens_per_s_per_replica"],
            "replicas": one["replicas"], "chips": one["chips"], "instances": one["instances"],
            "scaleups": one["scaleups"], "billed_chips": one["billed_chips"],
            "facility_power_peak_w": one["facility_power_peak_w"],
            "facility_power_peak_at_low_tdp_w": one["facility_power_peak_at_low_tdp_w"],
            "facility_power_peak_at_high_tdp_w": one["facility_power_peak_at_high_tdp_w"],
            "facility_power_avg_w": one["facility_power_avg_w"], "usd_per_month": usd_m,
            "usd_per_million_output_tokens": (price.usd_per_chip_hour * one["billed_chips"]
                                              / (peak / demand.peak_to_average * units.SECONDS_PER_HOUR)
                                              * units.MILLION if price.available else np.nan),
            "price_note": price.label, "note": how})
        if progress:
            progress(i + 1, len(systems))
    return pd.DataFrame(rows)
