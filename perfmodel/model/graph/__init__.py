"""The operator graph of a model: one symbolic list of operator records per model structure.

    build.py               the inference graph (graph_for): embeddings, decoder layers, head, the collectives
    training.py            what training adds: backward, recompute, optimizer, low-precision casts, LoRA
    attention_variants.py  Gated DeltaNet layers and DeepSeek Sparse Attention placed in a graph
    cache.py               compiled graphs kept on disk, keyed by the formulas' version

Import the module you need (`from perfmodel.model.graph import build`); nothing is re-exported here.
"""
