"""A sweep's chunks gathered into preallocated columns (sweep/assemble.py): the rows and values pd.concat
gives, categorical columns whose chunks bring new labels recoded onto their union."""

import numpy as np
import pandas as pd
import pytest

from perfmodel.sweep.assemble import ColumnsFrame
from perfmodel.sweep.engine import SweepSpec, iter_chunks
from perfmodel.sweep.run import run_sweep


def _chunk(lo, labels):
    n = len(labels)
    return pd.DataFrame({"x": np.arange(lo, lo + n, dtype=float), "k": np.arange(lo, lo + n),
                         "ok": np.arange(n) % 2 == 0, "label": pd.Categorical(labels),
                         "why": np.asarray([f"r{i}" for i in range(n)], dtype=object)})


def test_chunks_with_new_labels_give_the_concatenated_rows():
    chunks = [_chunk(0, ["b", "a", "b"]), _chunk(3, ["c", "a"]), _chunk(5, [])]
    whole = ColumnsFrame(10)
    for c in chunks:
        whole.add(c)
    got, want = whole.frame(), pd.concat(chunks, ignore_index=True)
    assert len(got) == 5 and list(got.columns) == list(want.columns)
    assert got["label"].astype(str).tolist() == ["b", "a", "b", "c", "a"]
    for col in ("x", "k", "ok", "why"):
        assert got[col].tolist() == want[col].tolist() and got[col].dtype == want[col].dtype
    with pytest.raises(ValueError, match="exceed"):
        whole.add(_chunk(0, list("abcdef")))


def test_a_returned_sweep_frame_is_its_chunks_in_order():
    spec = SweepSpec("trn2-ultraserver", "llama-3-8b", "decode", grid={"batch": "1:40", "tp": [1, 2, 4]},
                     fixed={"context": 512})
    got = run_sweep(spec, chunk_size=17, progress=False)
    want = pd.concat(list(iter_chunks(spec, chunk_size=17)), ignore_index=True)
    assert len(got) == len(want) == 120
    pd.testing.assert_frame_equal(got, want, check_categorical=False)
