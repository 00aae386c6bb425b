"""Published Neuron tables read as people write them (validation/sources/neuron_words.py) and the compiled shapes
a Neuron graph runs at (neuron_shapes.py): words to numbers, the instance rule, e2e figures from TTFT and TPOT,
and the optimum-neuron stack's padded batch and context."""

import numpy as np
import pandas as pd
import pytest

from perfmodel.catalog import neuron_stacks
from perfmodel.validation import harness
from perfmodel.validation.sources import inference, neuron_words
from perfmodel.validation.sources.neuron_shapes import decode_graph_batch, n_positions, prefill_bucket

ROW = {"case_id": "X-1", "hardware": "trn2.3xlarge (1x Trainium2; 8 physical / 4 logical NeuronCores at LNC=2)",
       "num_chips": "1.0", "model": "Llama-3.1-8B-Instruct", "phase": "decode", "parallelism":
       "TP4 (LNC=2 logical NeuronCores)", "batch": "1 (synchronous)", "input_len": "~1500 (emulated, N(1500,150))",
       "output_len": "~250 (emulated, N(250,20))", "dtype": "BF16", "metric": "ITL mean", "value": "22.1", "unit": "ms",
       "source": "optimum-neuron vLLM benchmark results", "notes": "optimum-neuron vLLM plugin, compiled batch 32, "
       "sequence length 4096; guidellm 'synchronous' mode"}


@pytest.mark.parametrize("metric, kind", [
    ("TTFT mean", "ttft"), ("TTFT P50 without prefix caching", "ttft"), ("TTFT P50 with prefix caching", ""),
    ("ITL mean", "tpot"), ("TPOT mean (TKG ms/tok)", "tpot"), ("decode throughput (bs*1000/TKG, as published)", "rate"),
    ("throughput (single stream, as published)", "rate"), ("output token throughput (whole server)", "output_rate"),
    ("Latency per Token P50 (input+output tokens counted)", "latency_per_token"),
    ("throughput (input+output tokens counted)", "total_rate"), ("requests per second", "")])
def test_metric_words_name_what_is_priced(metric, kind):
    assert neuron_words.kind_of(metric) == kind


def test_loads_and_lengths_as_written():
    assert neuron_words.batch("1 (synchronous)") == (1, "") and neuron_words.batch("8") == (8, "")
    for text in ("32 (throughput mode, 32 concurrent users)", "variable (asynchronous@2.46 req/sec)",
                 "4 (compiled max batch; ctx batch 1)", "up to 8 per replica"):
        b, why = neuron_words.batch(text)
        assert b is None and "queue" in why
    assert neuron_words.length("~1500 (emulated, N(1500,150))") == 1500
    assert neuron_words.length("32 generated (28 timed)") == 32 and neuron_words.length("~15900 (emulated)") == 15900
    assert neuron_words.length("not stated (compiled seq_len 2048)") is None
    assert neuron_words.length("dataset: math.math") is None and neuron_words.length("~2K (seq 2K)") is None


def test_a_smaller_instance_is_priced_on_the_catalogue_instance_of_its_chip():
    """One chip of trn2.3xlarge is one chip of trn2.48xlarge; half an Inferentia2 chip is refused with its reason."""
    assert neuron_words.system_for(ROW["hardware"], 1.0) == ("trn2.48xlarge", "")
    assert neuron_words.system_for("Trainium2 (instance not stated; TP4 at LNC=2 = 1 chip)", 1.0)[0] == "trn2.48xlarge"
    assert neuron_words.system_for("inf2.8xlarge (1x Inferentia2; 2 NeuronCore-v2)", 1.0)[0] == "inf2.48xlarge"
    assert "one NeuronCore" in neuron_words.system_for("inf2.xlarge (1x Inferentia2)", 0.5)[1]
    assert neuron_words.neuron_chip("h100_sxm") == "" and neuron_words.neuron_chip("trn1.32xlarge (16x ...)")


def test_a_published_row_becomes_plain_rows_and_folds_back_by_the_formulas():
    """An output rate becomes a TTFT and a TPOT row; folded back it is O / (TTFT + (O - 1) TPOT)."""
    rows = pd.DataFrame([dict(ROW, case_id="X-1c", metric="output token throughput (whole server)", value="43.5",
                              unit="tokens/s", phase="e2e")])
    plain, dropped = neuron_words.plain_rows(rows, inference.expressible)
    assert not dropped and list(plain["case_id"]) == ["X-1c#ttft", "X-1c#tpot"]
    assert set(plain["metric"]) == {"TTFT P50", "TPOT P50"} and plain["hardware"].str.startswith("trn2.48xlarge").all()
    pred = pd.DataFrame({"case_id": plain["case_id"], "metric": plain["metric"], "predicted": [0.2, 0.02],
                         "batch": "1", "note": "n", "system": "trn2.48xlarge", "model": "m", "unit": "s",
                         "measured": 43.5, "error_frac": 0.0})
    got = neuron_words.fold(pred, plain, rows).iloc[0]
    assert got["case_id"] == "X-1c" and got["predicted"] == pytest.approx(250 / (0.2 + 249 * 0.02))
    assert got["unit"] == "tokens/s" and got["measured"] == 43.5


SATURATED = dict(ROW, batch="up to 32 (throughput mode; compiled max batch 32)", notes=ROW["notes"].replace(
    "'synchronous' mode", "'throughput' mode (max concurrency 128 users; server capped at its compiled batch)"))


def test_a_saturated_server_is_priced_from_its_prefill_alone_and_its_decode_at_the_cap():
    """Throughput mode with the client above the cap: a prefill at batch 1 and a decode at S = 32; folded back,
    TPOT = t_d + S t_f / O and the output rate O S / (S t_f + O t_d) x replicas (by hand); its TTFT, and a
    chunked-prefill build's rows, are listed with why."""
    rows = pd.DataFrame([dict(SATURATED, case_id="S-1b"),
                         dict(SATURATED, case_id="S-1c", metric="output token throughput (whole server)",
                              unit="tokens/s", phase="e2e", value="580")])
    plain, dropped = neuron_words.plain_rows(rows, inference.expressible)
    assert not dropped and list(plain["batch"]) == ["1", "32", "1", "32"]  # prefill alone, decode at the cap
    t_f, t_d, o, s = 0.2, 0.03, 250, 32
    pred = pd.DataFrame({"case_id": plain["case_id"], "metric": plain["metric"], "predicted": [t_f, t_d] * 2,
                         "batch": plain["batch"].astype(int), "note": "n", "system": "trn2.48xlarge", "model": "m",
                         "unit": "s", "measured": 1.0, "error_frac": 0.0})
    got = neuron_words.fold(pred, plain, rows).set_index("case_id")["predicted"]
    assert got["S-1b"] == pytest.approx((t_d + s * t_f / o) / 1e-3)  # ms, the row's unit
    assert got["S-1c"] == pytest.approx(o * s / (s * t_f + o * t_d))
    three = dict(SATURATED, batch="up to 8 per replica x 3 replicas (throughput mode, max concurrency 128)")
    assert neuron_words.saturated(three, "output_rate") == (8, 3)
    assert "client's queue" in neuron_words.read(dict(SATURATED, metric="TTFT mean"))[1]
    chunked = dict(SATURATED, notes=SATURATED["notes"] + "; config C: chunked prefill (chunk 1024)")
    assert "not prefill-first" in neuron_words.read(chunked)[1]
    few = dict(SATURATED, batch="32 (throughput mode, 16 concurrent users; compiled batch 32)")
    assert "not saturated" in neuron_words.read(few)[1]


def test_an_open_loop_below_saturation_is_priced_from_its_rate_and_its_output_rate_is_listed():
    """'asynchronous@R req/sec' on a stack that decodes its compiled batch: a prefill at batch 1, a decode at the
    compiled batch; TPOT = t_d / (1 - R t_f), TTFT = (1 - rho) t_d / 2 + rho t_f / (2 (1 - rho)) + t_f (Poisson:
    c_a = 1; 'constant': 0), by hand; the row check reads the rate as a rate, not a batch count."""
    from perfmodel.validation import case_checks

    load = "variable (asynchronous@2.00 req/sec; compiled max batch 32)"
    rows = pd.DataFrame([dict(ROW, case_id="O-1a", batch=load, metric="TTFT mean", phase="prefill", value="200"),
                         dict(ROW, case_id="O-1b", batch=load)])
    assert case_checks.row_problems(rows.assign(value="1")).eq("").all()
    plain, dropped = neuron_words.plain_rows(rows, inference.expressible)
    assert not dropped and list(plain["batch"]) == ["1", "32", "1", "32"]
    t_f, t_d, r = 0.2, 0.03, 2.0
    pred = pd.DataFrame({"case_id": plain["case_id"], "metric": plain["metric"], "predicted": [t_f, t_d] * 2,
                         "batch": plain["batch"].astype(int), "note": "n", "system": "trn2.48xlarge", "model": "m",
                         "unit": "s", "measured": 1.0, "error_frac": 0.0})
    got = neuron_words.fold(pred, plain, rows).set_index("case_id")["predicted"]
    rho = r * t_f
    assert got["O-1b"] == pytest.approx(t_d / (1 - rho) / 1e-3)
    assert got["O-1a"] == pytest.approx(((1 - rho) * t_d / 2 + rho * t_f / (2 * (1 - rho)) + t_f) / 1e-3)
    over = neuron_words.fold(pred.assign(predicted=[0.6, t_d] * 2), plain, rows).set_index("case_id")
    assert over["predicted"].isna().all() and over["note"].str.contains("no steady state").all()  # 2 x 0.6 >= 1
    constant = dict(ROW, batch="variable (constant 0.85 req/s)", notes=ROW["notes"] + ", 3 replicas",
                    parallelism="3 replicas x TP4")
    assert neuron_words.open_loop(constant, "ttft") == (pytest.approx(0.85 / 3), 32, 3, 0.0)
    assert "request rate x O" in neuron_words.read(dict(ROW, batch=load, metric="output token throughput (whole "
                                                        "server)", unit="tokens/s"))[1]


def test_optimum_neuron_pads_the_batch_and_the_context_to_the_compiled_shapes():
    """The optimum-neuron stack (decoder_wrappers.py: inputs padded to the compiled batch and max_context_length):
    a synchronous row's decode computes 32 lines and its prompt the whole 4096; NxD Inference keeps the row's batch
    and the prompt's bucket."""
    opt, nxd = neuron_stacks.stack("optimum-neuron"), neuron_stacks.stack("nxd-inference")
    plain = dict(ROW, batch="1", input_len="1500", output_len="250")
    assert neuron_stacks.named_in(ROW["notes"]) == "optimum-neuron"
    assert decode_graph_batch(plain, opt) == 32 and decode_graph_batch(plain, nxd) == 1
    assert n_positions(plain) == 4096 and prefill_bucket(plain, opt) == 4096 and prefill_bucket(plain, nxd) == 2048


def test_padded_lines_cost_decode_time_and_the_published_file_is_priced():
    """The public Neuron file: 110+ rows predicted (the throughput modes' TPOT and output rates as saturated
    servers); the padded compiled batch makes a decode step slower than the row's own batch alone (more KV read),
    and every kind's prediction is finite and positive."""
    df = harness.run_cases(harness.CSV.parent / "neuron_public_dev.csv", ["neuron-latency"])
    done = df[df["predicted"].notna()]
    assert len(done) >= 110 and np.isfinite(done["predicted"]).all() and (done["predicted"] > 0).all()
    assert done["note"].str.contains("saturated prefill-first server").sum() >= 25
    itl = done.set_index("case_id")["note"]
    assert "compiled batch of 32 lines" in itl["NRN-TRN2-NEW-OPT-01b"]
    listed = df[df["predicted"].isna()]
    assert listed["reason"].str.len().gt(0).all()
    assert listed["reason"].str.contains("queue").sum() >= 15  # a throughput mode's TTFT: the client's queue
