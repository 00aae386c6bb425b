"""Fit the serving-engine profiles' fitted parameters per engine, cross-validated by model.

The fitted parameters (hardware_specs/serving/engines.toml, status "fitted") are, per engine:

    step_cost          tau_0  host time per engine step beyond the GPU's, tau = tau_0 + tau_1 S / d_a (s):
    step_cost_per_     tau_1  the least-absolute-deviation line (a median regression, both >= 0) of
    sequence                  measured TPOT - modelled TPOT (tau = 0) against the sequences per
                              attention-DP rank S / d_a over the engine's aggregated rows (disaggregated
                              decode rows mix in speculative decoding the model does not price; an
                              engine with no aggregated rows: the median over its rows, tau_1 = 0)
    first_token_steps  kappa  engine steps between a prompt's prefill and its first token at the client
    (_disagg: the same          (aggregated rows; _disagg: its disaggregated rows): the fewest steps whose
     in disaggregated rows)     median |log(predicted / measured)| TTFT over the engine's rows is within one
                                standard error of the smallest (the one-standard-error rule: where the loss
                                is flat the data do not identify a larger count), with the fitted tau
    prefill_utilization         (the protocol's) the median modelled utilization of the prefill pools of the
                                disaggregated rows that give their prefill worker count: the rule that sizes
                                the pools of the rows that do not

Medians, not least squares: a few rows far off for reasons outside these terms (cold starts,
speculative decoding) do not move them. Cross-validation leaves one model out at a time (all its
rows, every engine): the model is fitted on the others and predicts the held-out model's rows; the
held-out errors are what `validate` can promise on a model it was not fitted to.

    python -m perfmodel.validation.engine_fit [CASES]     fitted values, in-sample and held-out errors

Does not: write the profile file (a person copies the values, with this command as their source).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from scipy.optimize import linprog

from perfmodel.core import units
from perfmodel.serving import closed_loop as cl
from perfmodel.validation.sources import inferencex, inferencex_engine
from perfmodel.validation.harness import measurements

DEFAULT_CASES = "reference/inferencex_serving_dev.csv"


def table(cases: str = DEFAULT_CASES) -> pd.DataFrame:
    """Every predicted corpus row: its GPU terms (inferencex_engine.TERMS), measured TTFT and TPOT (s), model."""
    rows = measurements(path=cases)
    src = rows[rows["format"].eq(inferencex.FORMAT)].drop_duplicates("id").reset_index(drop=True)
    m = inferencex.predict(src)
    m = m[m["reasons"].eq("") & m["term_t_d"].notna()]
    t = m[[f"term_{c}" for c in inferencex_engine.TERMS if f"term_{c}" in m.columns]]
    t = t.rename(columns=lambda c: c.removeprefix("term_"))
    t = t.assign(backend=m["backend"], agg=m["mode"].eq("agg"), total=m["total"].astype(float),
                 n_pre=m["n_pre"].astype(float), model=m["workload"])
    meas = src.set_index(src.index)
    t["ttft_meas"] = pd.to_numeric(meas.loc[t.index, "silicon_ttft_ms"]).to_numpy() * units.MS
    t["tpot_meas"] = pd.to_numeric(meas.loc[t.index, "silicon_tpot_ms"]).to_numpy() * units.MS
    return t


def _with(values: dict[str, dict[str, float]], **changes) -> dict:
    out = {k: {e: v[k] for e, v in values.items()} for k in inferencex_engine.FITTED}
    for k, v in changes.items():
        if k == "prefill_utilization":
            out[k] = v
        else:
            out[k].update(v)
    return out


GRID = np.arange(0.0, 200.0, 0.25)  # steps-to-first-token values tried


def _kappa(t: pd.DataFrame, values: dict, util: float, engine: str, key: str) -> float:
    """The steps-to-first-token of `engine` (parameter `key`) that minimises the median |log(predicted /
    measured)| TTFT of its rows. TTFT is nearly linear in it (it also lengthens each client's cycle a
    little): a + k b from two evaluations around the current value, the best k on GRID, twice."""
    k = 0.0
    for _ in range(2):
        a, b = (inferencex_engine.closed_loop(
            t, overrides=_with(values, prefill_utilization=util, **{key: {engine: x}}))["ttft_s"].to_numpy()
            for x in (k, k + 1.0))
        pred = a[None, :] + (GRID - k)[:, None] * (b - a)[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = np.abs(np.log(np.maximum(pred, 1e-9) / t["ttft_meas"].to_numpy()[None, :]))
        loss = np.median(dev, axis=1)
        best = int(np.argmin(loss))
        # one-standard-error rule (Hastie et al., ESL 7.10): the fewest steps whose loss is within one
        # standard error of the best (a median's: 1.2533 sd / sqrt(n)); where the loss is flat, the data
        # do not identify a larger count
        se = 1.2533 * np.std(dev[best]) / np.sqrt(dev.shape[1])
        k = float(GRID[int(np.argmax(loss <= loss[best] + se))])
    return k


def median_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) >= 0 minimising sum |y - a - b x| (least absolute deviations: the conditional median's line),
    as a linear programme: min sum(u + v) subject to a + b x + u - v = y, every variable >= 0."""
    n = len(y)
    A = np.hstack([np.ones((n, 1)), np.asarray(x, float)[:, None], np.eye(n), -np.eye(n)])
    r = linprog(np.r_[0.0, 0.0, np.ones(2 * n)], A_eq=A, b_eq=np.asarray(y, float), bounds=(0, None), method="highs")
    if not r.success:
        raise RuntimeError(f"engine_fit.median_line: {r.message}")
    return float(r.x[0]), float(r.x[1])


def _host(t: pd.DataFrame, residual: pd.Series, engine: str) -> tuple[float, float]:
    """(step_cost, step_cost_per_sequence) of `engine` from its rows' TPOT residuals (module doc)."""
    sel = t["backend"].eq(engine)
    agg = sel & t["agg"]
    if not agg.any():
        return max(0.0, float(np.median(residual[sel]))), 0.0
    return median_line((t.loc[agg, "s_rep"] / t.loc[agg, "d_a_dec"]).to_numpy(float), residual[agg].to_numpy(float))


def fit(t: pd.DataFrame) -> dict:
    """{engine: {step_cost, step_cost_per_sequence, first_token_steps, first_token_steps_disagg},
    "prefill_utilization": u} from the
    rows of `t` (module doc). An engine without disaggregated rows keeps its aggregated value for both."""
    engines = sorted(t["backend"].unique())
    values = {e: {k: 0.0 for k in inferencex_engine.FITTED} for e in engines}
    util = inferencex_engine.protocol()["prefill_utilization"]
    base = inferencex_engine.closed_loop(t, overrides=_with(values, prefill_utilization=util))
    for e in engines:
        values[e]["step_cost"], values[e]["step_cost_per_sequence"] = _host(t, t["tpot_meas"] - base["tpot_s"], e)
    per = {k: t["backend"].map({e: v[k] for e, v in values.items()}) for k in ("step_cost", "step_cost_per_sequence")}
    tau = pd.Series(cl.evaluate("host", tau_0=per["step_cost"], tau_1=per["step_cost_per_sequence"], S=t["s_rep"],
                                d_a=t["d_a_dec"]), index=t.index)
    known = t[t["n_pre"].notna() & ~t["agg"]]
    if len(known):  # the prefill pools the deployments ran: their modelled utilization
        tpot = known["tpot_gpu"] + tau[known.index]
        rate = known["total"] / ((known["osl"] - 1) * tpot + known["l_f"])
        util = float(np.median(rate * known["t_f"] / (known["d_a_pre"] * known["n_pre"])))
    for e in engines:
        agg, dis = t[t["backend"].eq(e) & t["agg"]], t[t["backend"].eq(e) & ~t["agg"]]
        values[e]["first_token_steps"] = _kappa(agg, values, util, e, "first_token_steps") if len(agg) else 0.0
        values[e]["first_token_steps_disagg"] = (_kappa(dis, values, util, e, "first_token_steps_disagg")
                                                 if len(dis) else values[e]["first_token_steps"])
    return {**values, "prefill_utilization": util}


def _as_overrides(values: dict) -> dict:
    engines = {e: v for e, v in values.items() if isinstance(v, dict)}
    return _with(engines, prefill_utilization=values["prefill_utilization"])


def errors(t: pd.DataFrame, values: dict[str, dict[str, float]] | None) -> pd.DataFrame:
    """Signed relative errors of TTFT and TPOT per row with the given fitted values (None: the shipped file)."""
    p = inferencex_engine.closed_loop(t, overrides=_as_overrides(values) if values else None)
    return pd.DataFrame({"ttft": p["ttft_s"] / t["ttft_meas"] - 1, "tpot": p["tpot_s"] / t["tpot_meas"] - 1,
                         "backend": t["backend"], "model": t["model"], "agg": t["agg"]}, index=t.index)


def cross_validate(t: pd.DataFrame) -> pd.DataFrame:
    """Held-out errors: each model predicted by the fit to the other models."""
    parts = []
    for model in t["model"].unique():
        train, test = t[t["model"].ne(model)], t[t["model"].eq(model)]
        fitted = fit(train)
        missing = set(test["backend"]) - {e for e, v in fitted.items() if isinstance(v, dict)}
        if missing:  # an engine seen only with this model: nothing to hold out against
            test = test[~test["backend"].isin(missing)]
        parts.append(errors(test, fitted))
    return pd.concat(parts)


def summary(e: pd.DataFrame) -> pd.DataFrame:
    def stats(g):
        return pd.Series({"rows": len(g), "ttft_median": g["ttft"].abs().median(),
                          "ttft_p90": g["ttft"].abs().quantile(.9),
                          "tpot_median": g["tpot"].abs().median(), "tpot_p90": g["tpot"].abs().quantile(.9)})
    by = e.groupby("backend").apply(stats, include_groups=False)
    by.loc["all"] = stats(e)
    return by


def main(argv: list[str]) -> int:
    cases = argv[0] if argv else DEFAULT_CASES
    t = table(cases)
    fitted = fit(t)
    print(f"fitted on {len(t)} rows of {cases} (models: {', '.join(sorted(t['model'].unique()))}):")
    for eng, v in fitted.items():
        if isinstance(v, dict):
            print(f"  {eng}: step_cost = {v['step_cost'] / units.MS:.3f} ms, step_cost_per_sequence = "
                  f"{v['step_cost_per_sequence'] / units.US:.2f} us, first_token_steps = "
                  f"{v['first_token_steps']:.2f}, first_token_steps_disagg = {v['first_token_steps_disagg']:.2f}")
    print(f"  prefill_utilization = {fitted['prefill_utilization']:.3f}")
    print("\nin-sample |error| (fitted on every model):")
    print(summary(errors(t, fitted)).round(3).to_string())
    print("\nheld out, one model at a time (cross-validation grouped by model):")
    print(summary(cross_validate(t)).round(3).to_string())
    print("\nwithout the fitted parameters (engine defaults and the client protocol only):")
    zero = {e: {k: 0.0 for k in inferencex_engine.FITTED} for e, v in fitted.items() if isinstance(v, dict)}
    print(summary(errors(t, {**zero, "prefill_utilization": fitted["prefill_utilization"]})).round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
