"""Published Neuron serving tables read as the plain rows the Neuron latency family prices (inference.py).

Neuron's benchmark pages, NxD Inference's model READMEs and optimum-neuron's result files write a row as people
write tables: '1 (synchronous)', '~1500 (emulated, N(1500,150))', '3 replicas x TP8', 'ITL mean',
'output token throughput (whole server)', 'trn2.3xlarge (1x Trainium2 ...)'. `plain_rows` turns each such row into
the plain rows inference.py reads (a whole batch, whole lengths, 'TP<n>', 'TTFT P50' / 'TPOT P50' on a catalogue
system) by these rules, stated once:

  system    the hardware text's first word when it is a catalogue system; else the chip it names ('1x Trainium2',
            'Inferentia2'): the smallest catalogue EC2 instance of that chip holding the row's chips (a TP group's
            step does not depend on the instance's other chips: trn2.3xlarge's one chip is priced as one chip of
            trn2.48xlarge); half a chip (TP1 on a two-core Inferentia2) is no plan the model prices
  plan      'N replicas x TP8' and 'TP24 ..., 1 replica': one replica's TP group (a synchronous run keeps one
            replica busy; the others idle)
  load      a whole batch, or '1 (synchronous)' (one request at a time); a throughput mode whose client keeps at
            least the server's cap S in flight ('up to 32 (throughput mode; ...)', 'max concurrency 128' in the
            notes) runs the server saturated: its TPOT and output rate are the saturated prefill-first server's
            (serving/closed_loop.py: a Neuron step runs one compiled graph, a context encoding or a decode), from
            the row's prefill at batch 1 and its decode at S; its TTFT is the client's queue, which the row does not
            size, and a chunked-prefill build is not prefill-first: listed. A request rate ('asynchronous@0.40
            req/sec', 'constant 0.85 req/s') below saturation is the open loop of the same server (closed_loop.py:
            TPOT t_d / (1 - rho), TTFT with the prompts ahead in Kingman's queue; 'asynchronous' arrivals taken as
            Poisson, 'constant' as evenly spaced), its decode at the compiled batch (a stack that pads every step to
            it; another's running count is not stated: listed); its output rate is the rate x O: listed
  lengths   the stated length, or the mean of an emulated distribution ('~1500 (emulated, N(1500,150))' -> 1500;
            prompts within +-10% share a context bucket); 'not stated' or a dataset name: not predicted
  compiled  the compiled length and batch the notes state (neuron_shapes.py) set the graph's shapes
  metrics   KINDS below; a mean and a median are priced alike (one request's step: the synchronous runs'
            lengths vary by 10% or less). The e2e kinds combine the row's TTFT and TPOT:
            e2e latency = TTFT + (O - 1) TPOT, output rate = O / e2e, total rate = (I + O) / e2e,
            latency per token = e2e / (I + O) (the Inf2 page counts input and output tokens)

Rows whose words the plain reader already reads are left as they are (their predictions do not change).
Does not: price anything (inference.py) or fit anything.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd

from perfmodel import catalog
from perfmodel.catalog import neuron_stacks
from perfmodel.core.scenario import Phase
from perfmodel.serving import closed_loop
from perfmodel.validation import case_checks
from perfmodel.validation.sources.neuron_shapes import compiled_length

# metric words -> kind; the first pattern that matches the metric (case-insensitive) decides
KINDS = (
    (r"^TTFT\b.*with prefix caching", ""),  # cached prefixes skip work the row does not size
    (r"^TTFT\b", "ttft"),
    (r"^(ITL|TPOT)\b", "tpot"),
    (r"^(decode throughput|throughput \(single stream|throughput \(BS=\d+\))", "rate"),
    (r"^output token throughput \(whole (server|instance)\)", "output_rate"),
    (r"^Latency per Token P50 .*input\+output", "latency_per_token"),
    (r"^(Throughput \(tokens/second\)|throughput) \(?.*input\+output", "total_rate"),
)
PLAIN_METRICS = {"TTFT P50": Phase.PREFILL, "TPOT P50": Phase.DECODE, "median TTFT": Phase.PREFILL,
                 "median TPOT": Phase.DECODE}  # the words the plain reader (inference.py) prices
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}  # the time units rows are written in, SI seconds each
PLAIN_COUNT = re.compile(r"\s*\d+(\.0+)?\s*")  # a count written plainly ('8', '128.0')
INSTANCE_THROUGHPUT = "output token throughput (whole instance)"  # serving.py's metric, on rows written plainly
PLAIN = {"ttft": ("TTFT P50", "prefill"), "tpot": ("TPOT P50", "decode")}
E2E = ("output_rate", "latency_per_token", "total_rate")
SATURATED = ("tpot", "output_rate")  # what a saturated server's row gives (its TTFT is the client's queue)
OPEN = ("ttft", "tpot")  # what an open loop's row gives (its output rate is its request rate x O)
# The arrivals' squared coefficient of variation c_a by the word a rate is written with (closed_loop.OPEN_TTFT):
# guidellm's 'constant' rate type spaces the requests evenly (0); 'asynchronous' does not say which of its two rate
# types (constant, poisson) ran: taken as Poisson (1), the longer queue. An assumption: at 0 those rows' TTFT would
# lose c_a rho t_f / (2 (1 - rho)).
ARRIVALS_CV2 = {"constant": 0.0, "asynchronous": 1.0}
_LENGTH = re.compile(r"\s*~?\s*(\d+)(?:\.0+)?(?![\d.kK])")


def kind_of(metric: str) -> str:
    """The metric's kind (KINDS), '' when it is none this reader prices."""
    return next((k for pat, k in KINDS if re.search(pat, str(metric), re.I)), "")


def written_plainly(m) -> bool:
    """Batch, input and output lengths written as whole numbers (the plain dialects' rows)."""
    return all(PLAIN_COUNT.fullmatch(str(m[c])) for c in ("batch", "input_len", "output_len"))


def published(m) -> bool:
    """A row this reader takes: Neuron hardware, a metric of KINDS, and not a whole-instance throughput row
    written plainly (the serving-throughput family's, serving.py: it prices the batch's bucket walk)."""
    if not kind_of(m["metric"]) or not neuron_chip(m["hardware"]):
        return False
    return not (m["metric"] == INSTANCE_THROUGHPUT and written_plainly(m))


def neuron_chip(hardware: str) -> str:
    """The Neuron chip a hardware text names (its catalogue system's chip, else a chip name in the text), or ''."""
    first = str(hardware).split()[0] if str(hardware).strip() else ""
    if first in catalog.list_systems():
        chip = catalog.load_system(first).chip
        return chip.name if chip.family.is_neuron else ""
    low = str(hardware).lower()
    return next((c for c in _neuron_instances() if c in low), "")


def _neuron_instances() -> dict[str, list[tuple[float, str]]]:
    return _instances(str(catalog.catalog_root()))


@lru_cache(maxsize=4)
def _instances(_root: str) -> dict[str, list[tuple[float, str]]]:
    """Neuron chip -> [(chips per node, EC2 instance)] of the catalogue at `_root`, smallest first."""
    out: dict[str, list[tuple[float, str]]] = {}
    for name in catalog.list_systems():
        s = catalog.load_system(name)
        if "." in name and s.chip.family.is_neuron:
            out.setdefault(s.chip.name, []).append((s.node.chips, name))
    return {c: sorted(v) for c, v in out.items()}


def system_for(hardware: str, chips: float) -> tuple[str, str]:
    """(catalogue system, '' or why none) for a Neuron row's hardware text and the chips it uses."""
    first = str(hardware).split()[0] if str(hardware).strip() else ""
    if first in catalog.list_systems():
        return first, ""
    if chips < 1:
        return "", f"{chips:g} chips (one NeuronCore of a two-core chip): no plan the model prices"
    chip = neuron_chip(hardware)
    fits = [n for per, n in _neuron_instances().get(chip, []) if per >= chips]
    return (fits[0], "") if fits else ("", f"no catalogue instance of {chip or 'the chip named'} holds {chips:g} chips")


def length(text: str) -> int | None:
    """A stated length or an emulated distribution's mean ('~1500 (emulated, ...)'); None when not stated."""
    m = _LENGTH.match(str(text))
    return int(m.group(1)) if m else None


def batch(text: str) -> tuple[int | None, str]:
    """(batch, '') for '8' or '1 (synchronous)'; (None, why) for a load the rows do not size."""
    m = re.fullmatch(r"\s*(\d+)(?:\.0+)?\s*(\(synchronous\))?\s*", str(text))
    if m:
        return int(m.group(1)), ""
    return None, (f"load {str(text)!r}: a request rate, throughput mode or compiled maximum is a server queue the "
                  "row does not size (predicted: one request at a time, or a whole batch)")


def stack_named(m, replaced=None) -> str:
    """The Neuron software stack the row's text names ('' when it names none)."""
    return neuron_stacks.named_in(f"{m.get('notes', '')} {m.get('source', '')} {m.get('hardware', '')}",
                                  replaced=replaced)


def _replicas(m, text: str) -> int:
    """Replicas a load or plan states ('3 replicas x TP8', 'up to 8 per replica x 3 replicas'); 1 when none."""
    reps = re.search(r"(\d+) replicas", f"{text} {m['parallelism']}")
    return int(reps.group(1)) if reps else 1


def saturated(m, kind: str) -> tuple[int, int] | str | None:
    """(the server's cap S per replica, replicas) of a throughput-mode load that holds the server saturated; why
    not (str) for a throughput mode this reader cannot price; None for another load (module doc: load)."""
    text, notes = str(m["batch"]), str(m.get("notes", ""))
    if "throughput mode" not in text:
        return None
    if kind not in SATURATED:
        return (f"load {text!r}: in throughput mode the TTFT is the client's queue, which the row does not size "
                "(its TPOT and output rate are priced: the saturated server)")
    if re.search(r"chunked prefill \(chunk", notes):
        return f"load {text!r}: a chunked-prefill build mixes prefill into decode steps (not prefill-first)"
    cap = re.search(r"up to (\d+)", text) or re.search(r"compiled (?:max )?batch (\d+)", text)
    users = re.search(r"(\d+) concurrent users", text) or re.search(r"max concurrency (\d+)", f"{text} {notes}")
    if not (cap and users):
        return f"load {text!r}: the server's cap and the client's concurrency are not both stated"
    s, r = int(cap.group(1)), _replicas(m, text)
    if int(users.group(1)) < s * r:
        return f"load {text!r}: the client keeps fewer requests in flight than the server's cap (not saturated)"
    return s, r


def open_loop(m, kind: str) -> tuple[float, int, int, float] | str | None:
    """(requests/s per replica, compiled batch, replicas, c_a) of a load given as a rate; why not (str) for one this
    reader cannot price; None for another load (module doc: load)."""
    text, notes = str(m["batch"]), str(m.get("notes", ""))
    rate, word = case_checks.RATE.search(text), next((w for w in ARRIVALS_CV2 if w in text.lower()), "")
    if not (rate and word):
        return None
    if kind not in OPEN:
        return f"load {text!r}: an open loop's output rate is its request rate x O (nothing the model prices)"
    cap = re.search(r"compiled (?:max )?batch (\d+)", f"{text} {notes}")
    stack = stack_named(m)
    if not cap or not stack or not neuron_stacks.stack(stack)["decode_runs_compiled_batch"]:
        return (f"load {text!r}: an open loop's running count is not stated (priced where the stack decodes its "
                "compiled batch every step and the row states it)")
    r = _replicas(m, text)
    return float(rate.group(1)) / r, int(cap.group(1)), r, ARRIVALS_CV2[word]


def read(m) -> tuple[dict | None, str]:
    """(the row's plain fields, '') or (None, why it is not predicted) for one published row."""
    kind = kind_of(m["metric"])
    if not kind:
        return None, f"metric {m['metric']!r} is not one this reader prices (prefix-cached TTFT, or unknown words)"
    try:
        chips = float(m.get("num_chips", "nan"))
    except ValueError:
        chips = float("nan")
    system, why = system_for(m["hardware"], chips if np.isfinite(chips) else 1.0)
    if why:
        return None, why
    tp = re.search(r"TP\s*(\d+)", str(m["parallelism"]))
    if not tp:
        return None, f"parallelism {m['parallelism']!r} names no TP degree"
    lnc = re.search(r"LNC\s*=\s*\d+", f"{m['parallelism']} {m['hardware']}")
    inp, out, n = length(m["input_len"]), length(m["output_len"]), compiled_length(m)
    if inp is None:
        return None, f"input_len {m['input_len']!r}: the prompt length is not stated as a number"
    if out is None and (kind != "ttft" or n is None):
        return None, f"output_len {m['output_len']!r}: the output length is not stated as a number"
    b, why = batch(m["batch"])
    sat = saturated(m, kind) if why else None
    opened = open_loop(m, kind) if why and sat is None else None
    for load in (sat, opened):
        if isinstance(load, str):
            return None, load
    if why and sat is None and opened is None:
        return None, why
    replicas, rate, c_a = 1, float("nan"), float("nan")
    if sat is not None:  # the saturated server: its prefill at batch 1 and its decode at the cap (plain_rows)
        (b, replicas), kind = sat, "sat_" + kind
    if opened is not None:  # the open loop: the same two plain rows, and its rate
        (rate, b, replicas, c_a), kind = opened, "open_" + kind
    if kind in E2E and b != 1:
        return None, "an end-to-end rate is predicted for one request at a time (batch 1)"
    return {"hardware": f"{system} ({m['hardware']})", "parallelism": f"TP{tp.group(1)}"
            + (f" ({lnc.group(0)})" if lnc else ""), "batch": str(b), "input_len": str(inp),
            "output_len": str(out if out is not None else max(n - inp, 1)), "kind": kind, "replicas": replicas,
            "rate": rate, "c_a": c_a}, ""


def plain_metric(metric: str, phase: str) -> bool:
    """The plain reader's metrics: 'TTFT P50' / 'TPOT P50' / 'median TTFT' ... (a bracket or 'without prefix
    caching' after it) on a prefill or decode row."""
    base = re.sub(r"\s*\(.*\)$", "", str(metric)).replace(" without prefix caching", "")
    return base in PLAIN_METRICS and phase in ("prefill", "decode")


def plain_rows(rows: pd.DataFrame, reads_plain) -> tuple[pd.DataFrame, list[tuple[object, str]]]:
    """(the rows as the plain reader takes them, [(row, why)] for rows not predicted). A plain metric's row that
    `reads_plain(row)` accepts stays as it is (kind ''); a published row becomes one plain row (TTFT, TPOT, rate:
    kind set) or two (the e2e kinds: '<case>#ttft' and '<case>#tpot'), each with `origin` = the row's case id."""
    out, dropped = [], []
    for _, m in rows.iterrows():
        plain_why = reads_plain(m) if plain_metric(m["metric"], m["phase"]) else ""
        if plain_metric(m["metric"], m["phase"]) and not plain_why:
            out.append(dict(m, kind="", origin=m["case_id"]))
            continue
        plain, why = read(m)
        if plain is None:  # off Neuron hardware, a plain row keeps the plain reader's reason
            dropped.append((m, why if neuron_chip(m["hardware"]) else plain_why or why))
            continue
        kind = plain["kind"]
        sat = kind.startswith(("sat_", "open_"))  # a server under load: its prefill alone, its decode at the cap
        parts = ("ttft", "tpot") if kind in E2E or sat else ("tpot",) if kind == "rate" else (kind,)
        for part in parts:
            metric, phase = PLAIN[part]
            case = m["case_id"] if len(parts) == 1 else f"{m['case_id']}#{part}"
            b = "1" if sat and part == "ttft" else plain["batch"]  # a context encoding runs one prompt
            out.append(dict(m, **{**plain, "batch": b}, metric=metric, phase=phase, unit="s", case_id=case,
                            origin=m["case_id"]))
    cols = list(rows.columns) + ["kind", "origin", "replicas", "rate", "c_a"]
    return pd.DataFrame(out, columns=cols), dropped


def split(rows: pd.DataFrame, reads_plain, unexpressed) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(plain rows, those to predict, a frame of unexpressed(row, why) for the rows not predicted, one per case):
    a published row is predicted only when every plain part of it is expressible."""
    plain, dropped = plain_rows(rows, reads_plain)
    why = pd.Series([reads_plain(m) for _, m in plain.iterrows()], index=plain.index, dtype=object)
    ok = plain[~plain["origin"].isin(plain.loc[why.ne(""), "origin"])]
    listed = [unexpressed(m, w) for m, w in dropped]
    listed += [unexpressed(dict(m, case_id=m["origin"]), w) for (_, m), w in zip(plain.iterrows(), why) if w]
    return plain, ok, pd.DataFrame(listed).drop_duplicates("case_id") if listed else pd.DataFrame()


def fold(pred: pd.DataFrame, plain: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Predictions of the plain rows (case_id, predicted in the plain row's unit, note, ...) folded back onto the
    published rows: TTFT / TPOT in the row's unit, rates and e2e figures by the module doc's formulas, a saturated
    server's by closed_loop's (its prefill t_f, its decode step t_d at the cap S, per replica)."""
    meta = plain.set_index("case_id")[["kind", "origin", "replicas", "rate", "c_a"]]
    p = pred.join(meta, on="case_id")
    keep = p[p["kind"].eq("")].drop(columns=["kind", "origin", "replicas", "rate", "c_a"])
    pub = p[p["kind"].ne("")]
    if pub.empty:
        return keep
    orig = rows.set_index("case_id")
    seconds = pub.assign(part=np.where(pub["metric"].eq(PLAIN["ttft"][0]), "ttft", "tpot"))
    wide = seconds.pivot_table(index="origin", columns="part", values="predicted", aggfunc="first")
    first = seconds.groupby("origin").first()
    o = orig.loc[wide.index]
    scale = o["unit"].map({**TIME_UNITS, "tokens/s": 1.0}).to_numpy()
    inp = o["input_len"].map(length).astype(float).to_numpy()
    out = o["output_len"].map(length).astype(float).to_numpy()
    b = first["batch"].astype(float).to_numpy()
    ttft = wide["ttft"].to_numpy() if "ttft" in wide else np.full(len(wide), np.nan)
    tpot = wide["tpot"].to_numpy() if "tpot" in wide else np.full(len(wide), np.nan)
    e2e = closed_loop.evaluate("e2e", T_1=ttft, T_2=tpot, O=out)  # serving/closed_loop.E2E
    cap = seconds[seconds["part"].eq("tpot")].groupby("origin")["batch"].first().reindex(wide.index).astype(float)
    sat = dict(S=cap.to_numpy(), t_f=ttft, O=out, t_d=tpot)
    x_sat, tpot_sat = closed_loop.evaluate("saturated_rate", **sat), closed_loop.evaluate("saturated_tpot", **sat)
    load = dict(t_f=ttft, t_d=tpot, R_a=first["rate"].astype(float).to_numpy())
    with np.errstate(invalid="ignore", divide="ignore"):  # rho >= 1: no steady state, NaN below
        stable = load["R_a"] * ttft < 1.0
        tpot_open = np.where(stable, closed_loop.evaluate("open_tpot", **load), np.nan)
        ttft_open = np.where(stable, closed_loop.evaluate("open_ttft", **load, c_a=first["c_a"].astype(float)), np.nan)
    kind = first["kind"].to_numpy()
    value = np.select([kind == "ttft", kind == "tpot", kind == "rate", kind == "output_rate",
                       kind == "latency_per_token", kind == "total_rate", kind == "sat_tpot", kind == "sat_output_rate",
                       kind == "open_ttft", kind == "open_tpot"],
                      [ttft, tpot, b / tpot, out / e2e, e2e / (inp + out), (inp + out) / e2e, tpot_sat,
                       out * x_sat * first["replicas"].astype(float).to_numpy(), ttft_open, tpot_open])
    value = np.where(np.isin(kind, ["rate", "output_rate", "total_rate", "sat_output_rate"]), value, value / scale)
    how = np.where(np.char.startswith(kind.astype(str), "sat_"),
                   [f" (the saturated prefill-first server at {c:g} per replica: prefill {f * 1e3:.1f} ms, decode step "
                    f"{d * 1e3:.2f} ms)" for c, f, d in zip(cap.fillna(0), ttft, tpot)],
                   np.where(np.char.startswith(kind.astype(str), "open_"),
                            [f" (the open loop at {r:g} requests/s per replica, prefill-first: prefill {f * 1e3:.1f} "
                             f"ms, decode step {d * 1e3:.2f} ms at the compiled batch"
                             + (")" if r * f < 1 else f"; no steady state: R t_f = {r * f:.2f} >= 1, the modelled "
                                                      "server does not hold this rate)")
                             for r, f, d in zip(load["R_a"], ttft, tpot)], ""))
    measured = o["value"].astype(float).to_numpy()
    folded = first.reset_index().assign(case_id=wide.index, metric=o["metric"].to_numpy(), unit=o["unit"].to_numpy(),
                                        measured=measured, predicted=value,
                                        error_frac=(value - measured) / measured,
                                        note=first["note"].to_numpy() + "; published row read as " + kind
                                        + np.where(np.isin(kind, list(E2E)), " (TTFT + (O - 1) TPOT)", "") + how)
    return pd.concat([keep, folded[keep.columns]], ignore_index=True)
