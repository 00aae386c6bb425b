"""Fit each Neuron software stack's fixed cost per operator instance (op_overhead) on its decode rows.

The fixed cost of a compiled Neuron graph (instruction issue, semaphore waits between engines, DMA descriptor
set-up, the engines' ramp after idle) is a property of the software stack that compiled and runs the graph,
so each stack of hardware_specs/stacks/neuron.toml carries its own op_overhead, fitted here on every decode
row that names that stack, whatever the instance (Trn1, Inf2, Trn2), with the link hop latency held at its
documented value (calibration link_latency_node: 1-2 us per ring hop, Neuron runtime docs) rather than
absorbing the graph's costs.

A decode step is linear in op_overhead: step(v) = step(0) + n v, with n the operator instances of the step
(roofline: every instance pays it once), so two evaluations per row give every value's prediction,
and the stack's fitted value is the smallest (on a 0.01 us grid) whose median |log(predicted / measured)| over
the stack's rows is within one standard error of the smallest (engine_fit's one-standard-error rule: where
the loss is flat the rows do not identify a larger cost): a median, not least squares, so a few rows off for
reasons outside this term (the bucket-growth gap of the Transformers NeuronX rows, inference.py) do not move
it.

Cross-validation leaves one model out at a time (all its rows, on every instance): the value is fitted on
the stack's other models and predicts the held-out model's rows.

    python -m perfmodel.validation.neuron_fit [CASES ...]     fitted values, in-sample and held-out errors

Decode rows only: prefill (the context-encoding regimes of inference.py's known gaps) and whole-run
throughput are checks of the fitted value, not its data.
Does not: write the stack file (a person copies the values, with this command as their source).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from perfmodel.catalog import neuron_stacks
from perfmodel.catalog.replacements import Replacements
from perfmodel.core import units
from perfmodel.validation.sources import inference as inf
from perfmodel.validation.sources import neuron_words
from perfmodel.validation.harness import measurements

DEFAULT_CASES = ("reference/published_measurements.csv", "reference/neuron_trn2_vllm.csv")
PARAM = "op_overhead"
PROBE = 1e-6  # s: the second evaluation of the linear step(v)


def decode_rows(paths=DEFAULT_CASES) -> pd.DataFrame:
    """The decode rows of the files that the latency family predicts, with the stack each names."""
    rows = pd.concat([measurements(path=p) for p in paths], ignore_index=True)
    rows = rows[inf.selects(rows) & rows["phase"].eq("decode")]
    rows = rows[rows.apply(inf.expressible, axis=1).eq("")].drop_duplicates("case_id")
    rows = rows[~rows.apply(inf.speculative, axis=1).astype(bool)].reset_index(drop=True)  # the fit's rows: plain decode
    return rows.assign(stack=[neuron_words.stack_named(m) or neuron_stacks.SERVING_DEFAULT
                              for _, m in rows.iterrows()])


def _at(rows: pd.DataFrame, values: dict[str, float]) -> np.ndarray:
    """Predicted decode step (s) of every row with each stack's op_overhead set to `values[stack]`."""
    trial = {n: neuron_stacks.stack(n).with_overrides({PARAM: f"{v!r} s"}) for n, v in values.items()}
    p = inf.predict_latency(rows, Replacements(stacks=trial)).set_index("case_id")
    scale = p["unit"].map(inf.TIME_UNITS)
    return (p["predicted"] * scale).reindex(rows["case_id"]).to_numpy()


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row: measured (s), step at op_overhead 0 and the operator instances n (the slope), stack, model."""
    names = sorted(rows["stack"].unique())
    zero = _at(rows, {n: 0.0 for n in names})
    probe = _at(rows, {n: PROBE for n in names})
    measured = (rows["value_num"] * rows["unit"].map(inf.TIME_UNITS)).to_numpy()
    return pd.DataFrame({"case_id": rows["case_id"], "stack": rows["stack"], "model": rows["model"],
                         "measured": measured, "base": zero, "ops": (probe - zero) / PROBE})


GRID = np.arange(0.0, 50e-6, 0.01e-6)  # op_overhead values tried (s): to 3x the 15 us the evidence allows


def fit(t: pd.DataFrame) -> dict[str, float]:
    """{stack: op_overhead (s)}: the smallest value on GRID whose median |log(predicted / measured)| over the
    stack's rows is within one standard error of the smallest (engine_fit's rule and loss)."""
    out = {}
    for s in t["stack"].unique():
        r = t[t["stack"].eq(s)]
        pred = r["base"].to_numpy()[None, :] + GRID[:, None] * r["ops"].to_numpy()[None, :]
        dev = np.abs(np.log(pred / r["measured"].to_numpy()[None, :]))
        loss = np.median(dev, axis=1)
        best = int(np.argmin(loss))
        # one-standard-error rule (as engine_fit): the smallest value within one standard error of the best
        # median (1.2533 sd / sqrt(n)); where the loss is flat the rows do not identify a larger cost
        se = 1.2533 * np.std(dev[best]) / np.sqrt(dev.shape[1])
        out[s] = float(GRID[int(np.argmax(loss <= loss[best] + se))])
    return out


def errors(t: pd.DataFrame, values: dict[str, float]) -> pd.Series:
    """Signed relative error per row with the given values."""
    pred = t["base"] + t["ops"] * t["stack"].map(values)
    return pd.Series(pred / t["measured"] - 1.0, index=t.index)


def cross_validate(t: pd.DataFrame) -> pd.Series:
    """Held-out errors: each model's rows predicted by the value fitted on its stack's other models (a stack
    with one model has nothing to hold out against: its rows are left out)."""
    out = []
    for model in t["model"].unique():
        test = t[t["model"].eq(model)]
        train = t[t["model"].ne(model) & t["stack"].isin(test["stack"].unique())]
        if len(train):
            out.append(errors(test, fit(train)))
    return pd.concat(out) if out else pd.Series(dtype=float)


def summary(t: pd.DataFrame, e: pd.Series) -> pd.DataFrame:
    g = pd.DataFrame({"stack": t.loc[e.index, "stack"], "e": e.abs()}).groupby("stack")["e"]
    return pd.DataFrame({"rows": g.size(), "median": g.median(), "p90": g.quantile(0.9)})


def main(argv: list[str]) -> int:
    t = table(decode_rows(tuple(argv) or DEFAULT_CASES))
    values = fit(t)
    print(f"op_overhead per stack, fitted on {len(t)} decode rows ({t['model'].nunique()} models):")
    for s, v in values.items():
        sel = t["stack"].eq(s)
        print(f"  {s}: {v / units.US:.2f} us ({sel.sum()} rows, {t.loc[sel, 'model'].nunique()} models)")
    print("\nin-sample |error|:")
    print(summary(t, errors(t, values)).round(3).to_string())
    print("\nheld out, one model at a time:")
    print(summary(t, cross_validate(t)).round(3).to_string())
    print("\nwith the stack file's values:")
    print(summary(t, errors(t, {s: neuron_stacks.stack(s)[PARAM] for s in values})).round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
