"""A benchmark run of N prompts sent at a request rate, priced request by request (the simulation), as the client
measures it: `sglang.bench_serving --request-rate R --num-prompts N`, `vllm bench serve` likewise.

Such a run is finite: its throughput is the output tokens over the run's whole span (arrivals plus the drain of
the last requests), and when R is above what the deployment serves its queue grows until the prompts run out, so
the steady state has no answer while the client still prints one. The request-level simulation (simulation/:
the engine's running cap, token budget and paged KV, tabulated from the same step model) runs exactly that:

    arrivals    Poisson at R requests/s (the clients' default), N of them, their times scaled so the draw's own
                rate is R exactly: a run's span is (N - 1) / R on average, and one unlucky draw of a few hundred
                arrivals would move the throughput by its +-1/sqrt(N) alone
    lengths     as the client draws them: uniform in [r L, L] (--random-range-ratio r; L the nominal length)
    deployment  `replicas` aggregated replicas of the row's plan behind a round-robin router, with its engine
    measures    output tokens/s = output tokens / (last finish - first arrival); TTFT, TPOT, e2e per request

Does not: read files, or price a closed loop of clients (serving_words and inferencex_engine do).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from perfmodel.catalog import neuron_stacks
from perfmodel.catalog.replacements import NONE, Replacements
from perfmodel.serving.options import Mode, ServingOptions
from perfmodel.serving.steady_state import Grid
from perfmodel.simulation import deployment, metrics, traffic

SEED = 0  # one draw of arrivals and lengths: the run's own randomness, not a parameter


def finite_run(system, arch, plan: Grid, engine: str, rate: float, prompts: int, input_len: tuple[int, float],
               output_len: tuple[int, float], replicas: int, replaced: Replacements = NONE) -> pd.Series:
    """metrics.summarize of `prompts` requests at `rate` requests/s through `replicas` replicas of `plan` (module
    doc); input_len / output_len are (nominal L, range ratio r)."""
    if input_len[1] != output_len[1]:  # the clients draw both with one ratio
        raise ValueError("input and output lengths drawn with different range ratios")
    ratio = max(input_len[1], 1.0 / min(input_len[0], output_len[0]))  # a client draws at least one token
    shapes = traffic.Shapes(input_tokens=((input_len[0], 1.0),), output_tokens=((output_len[0], 1.0),),
                            ratio=ratio)
    poisson = traffic.Traffic("poisson", rate=rate)
    reqs = traffic.draw(poisson, shapes, prompts, SEED)
    t = reqs.arrival_s - reqs.arrival_s[0]
    if prompts > 1 and t[-1] > 0:
        reqs = dataclasses.replace(reqs, arrival_s=t * ((prompts - 1) / rate / t[-1]))
    run = deployment.simulate(system, arch, plan, poisson, shapes, options=ServingOptions(mode=Mode.AGGREGATED,
                              software=neuron_stacks.software(engine, system, replaced)), layout=deployment.Layout(replicas=replicas), reqs=reqs)
    return metrics.summarize(run, trim=0.0)
