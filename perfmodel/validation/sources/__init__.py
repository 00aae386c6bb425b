"""The measurement dialects validation reads: one module per family of measured rows, registered with the harness
(harness.FAMILY_MODULES lists them; each `register_validation`s the families it predicts), with the readers that
map each dialect's words onto the model's records.

    comm.py, kernels.py            collective (nccl-tests, nccom-test) and kernel microbenchmark rows
    inference.py, serving.py       Neuron latency and serving-throughput rows
    inferencex.py (+ _engine, _map) the InferenceX serving corpus
    serving_words.py (+ plan_words, quantities, serving_runs, speculative_rows)  serving tables as people write them
    training.py, training_public.py (+ training_rows, training_stacks)          published training runs

Import the module; nothing is re-exported.
"""
