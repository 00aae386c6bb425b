"""The shapes a compiled Neuron model runs at: its length buckets and its compiled batch (the Neuron latency
family's rules, inference.py; the serving-throughput family's, serving.py).

    token_buckets(n)          powers of two from 128 below the compiled length n, then n (bucket.token_sizes)
    context_buckets(n, r)     the token buckets x the stack's context_bucket_ratio
    n_positions(row)          the compiled length a row states ('compiled max seq len N', 'max-model-len N',
                              'sequence length N', 'seq_len=N', TGI's 'MAX_TOTAL_TOKENS N'), else input + output
    (a row whose notes say 'bucketing disabled' was compiled with one bucket: its prompt runs the compiled length)
    prefill_bucket(row, st)   the context-encoding length: the prompt padded to its bucket, or the whole compiled
                              length where the stack's context graph computes it (context_spans_compiled_length:
                              optimum-neuron pads every prompt to max_context_length)
    decode_bucket(row, st)    the span a decode step attends over: the bucket of position input + output/2, or the
                              compiled length (decode_spans_compiled_length)
    decode_graph_batch(row, st)  the batch a decode step computes: the row's, or its compiled batch where the
                              stack's token-generation graph runs every line (decode_runs_compiled_batch:
                              optimum-neuron pads the batch to the compiled one)

Does not: price anything.
"""

from __future__ import annotations

import bisect
import re

MIN_TOKEN_BUCKET = 128  # bucket.token_sizes: power_of_two_bucket_sizes(128, n_positions)
_COMPILED_LENGTH = re.compile(r"(?:compiled max seq len|max-model-len|sequence[ _]length|seq_len|MAX_TOTAL_TOKENS)"
                              r"\s*[=:]?\s*(\d+)", re.I)
_ONE_BUCKET = re.compile(r"bucketing disabled", re.I)  # a row compiled with one bucket: every prompt padded to it
_COMPILED_BATCH = re.compile(r"(?:compiled (?:max )?batch(?: size)?|MAX_BATCH_SIZE|max_batch_size)\s*[=:]?\s*(\d+)",
                             re.I)


def token_buckets(n_positions: int) -> list[int]:
    """bucket.token_sizes(n): powers of two from 128 below n, then n itself."""
    out, b = [], MIN_TOKEN_BUCKET
    while b < n_positions:
        out.append(b)
        b *= 2
    return out + [int(n_positions)]


def context_buckets(n_positions: int, ratio: float) -> list[int]:
    """Context-encoding buckets: every token bucket x the stack's context_bucket_ratio (Transformers NeuronX's
    bucket.context_sizes: half)."""
    return sorted({max(1, int(b * ratio)) for b in token_buckets(n_positions)})


def find_bucket(buckets: list[int], size: int) -> int:
    """bucket.find: the smallest bucket >= size (the largest when none is)."""
    return buckets[bisect.bisect_left(buckets, size, hi=len(buckets) - 1)]


def compiled_length(m) -> int | None:
    """The compiled maximum sequence length a row's notes state ('compiled max seq len N', 'max-model-len N',
    'sequence length N', 'sequence_length N', 'seq_len=N'), else None."""
    hit = _COMPILED_LENGTH.search(str(m.get("notes", "")))
    return int(hit.group(1)) if hit else None


def n_positions(m) -> int:
    """The compiled maximum sequence length of a row (compiled_length), else input + output."""
    n = compiled_length(m)
    return n if n is not None else int(float(m["input_len"])) + int(float(m["output_len"]))


def decode_bucket(m, stack) -> int:
    """Span the P50 decode step attends over: the bucket holding position input + output/2, or the whole
    compiled length where the stack's decode graph reads it."""
    if stack["decode_spans_compiled_length"]:
        return n_positions(m)
    i, o = int(float(m["input_len"])), int(float(m["output_len"]))
    return find_bucket(token_buckets(n_positions(m)), i + o // 2)


def prefill_bucket(m, stack) -> int:
    """Context-encoding length: the prompt padded to the stack's context bucket that holds it, or to the compiled
    length where the stack's context graph computes all of it."""
    if stack["context_spans_compiled_length"] or _ONE_BUCKET.search(str(m.get("notes", ""))):
        return n_positions(m)
    return find_bucket(context_buckets(n_positions(m), stack["context_bucket_ratio"]), int(float(m["input_len"])))


def compiled_batch(m) -> int | None:
    """The compiled (maximum) batch a row's notes state ('compiled batch 32', 'MAX_BATCH_SIZE 32'), else None."""
    hit = _COMPILED_BATCH.search(str(m.get("notes", "")))
    return int(hit.group(1)) if hit else None


def decode_graph_batch(m, stack) -> int:
    """Sequences one decode step computes: the row's batch, or its compiled batch where the stack's token-generation
    graph runs every compiled line (padding the idle ones)."""
    b = int(float(m["batch"]))
    return max(b, compiled_batch(m) or b) if stack is not None and stack["decode_runs_compiled_batch"] else b
