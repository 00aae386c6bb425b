"""A sweep's chunks gathered into preallocated columns (sweep/assemble.py): the rows and values pd.concat
gives, categorical columns whose chunks bring new labels recoded onto their union."""

import sys

import numpy as np
import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.sweep.assemble import ColumnsFrame, TextCodes, fresh_column, text_array
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
    spec = SweepSpec(catalog.load_system("trn2-ultraserver"), catalog.load_workload("llama-3-8b"), "decode", grid={"batch": "1:40", "tp": [1, 2, 4]},
                     fixed={"context": 512})
    got = run_sweep(spec, chunk_size=17, progress=False)
    want = pd.concat(list(iter_chunks(spec, chunk_size=17)), ignore_index=True)
    assert len(got) == len(want) == 120
    pd.testing.assert_frame_equal(got, want, check_categorical=False)


def test_text_codes_become_the_text_column_a_dataframe_makes_of_the_strings():
    """Reasons given as codes into their distinct texts (TextCodes): chunks whose texts differ and come in other
    orders give the column, dtype included, that pd.DataFrame makes of the Python strings."""
    chunks = [(np.array([0, 1, 0]), ("", "tp: no")), (np.array([1, 0]), ("pp: no", "")), (np.array([0]), ("x; y",))]
    whole = ColumnsFrame(10)
    for codes, texts in chunks:
        whole.add({"why": TextCodes(codes, texts), "x": np.zeros(len(codes))})
    want = pd.DataFrame({"why": np.asarray([t[c] for codes, t in chunks for c in codes], dtype=object)})["why"]
    got = whole.frame()["why"]
    assert got.tolist() == ["", "tp: no", "", "", "pp: no", "x; y"]
    pd.testing.assert_series_equal(got, want, check_exact=True)
    alone = pd.DataFrame({"why": text_array(np.array([1, 1, 0]), ("a", "b"))})["why"]
    pd.testing.assert_series_equal(alone, pd.Series(np.array(["b", "b", "a"], dtype=object), name="why"))


def test_a_sweep_with_reasons_that_differ_by_chunk_returns_the_chunks_rows():
    """Chunks with no invalid row, one reason or two (context past the positions, tp not dividing the heads)."""
    spec = SweepSpec(catalog.load_system("dgx-h100"), catalog.load_workload("llama-3-8b"), "decode", grid={"context": [1024, 8192, 9000], "tp": [1, 3]},
                     fixed={"batch": 8})
    got = run_sweep(spec, chunk_size=2, progress=False)
    want = pd.concat(list(iter_chunks(spec, chunk_size=2)), ignore_index=True)
    assert got["invalid_reason"].nunique() == 4 and got["invalid_reason"].dtype == want["invalid_reason"].dtype
    pd.testing.assert_frame_equal(got, want, check_categorical=False, check_exact=True)


def test_label_codes_widen_when_later_chunks_bring_many_labels():
    """Codes are kept in the type pandas uses for the labels so far (int8 below 127), widened when a later
    chunk's labels pass it: the frame's labels are still every chunk's, in order."""
    first = [f"l{i}" for i in range(100)]
    later = [f"m{i}" for i in range(100)]
    chunks = [_chunk(0, first), _chunk(100, later)]
    whole = ColumnsFrame(200)
    whole.add(chunks[0])
    assert whole.columns["label"].dtype == np.int8
    whole.add(chunks[1])
    got = whole.frame()
    assert whole.columns["label"].dtype == np.int16
    assert got["label"].astype(str).tolist() == first + later
    assert got["x"].tolist() == list(range(200))


def test_large_frames_are_faulted_in_ahead_of_the_writer_without_touching_rows():
    """The prefault thread (madvise MADV_POPULATE_WRITE) never writes data: rows copied in while it runs keep
    their values, and it stops when the frame is taken."""
    n, step = 3 << 20, 1 << 16
    whole = ColumnsFrame(n)
    for lo in range(0, n, step):
        whole.add({"x": np.arange(lo, lo + step, dtype=float), "k": np.full(step, 7, dtype=np.int64)})
    got = whole.frame()
    assert not whole.prefault.thread.is_alive()
    assert np.array_equal(got["x"].to_numpy(), np.arange(n, dtype=float)) and (got["k"] == 7).all()


def _vm_flags(a: np.ndarray) -> list[str] | None:
    """The kernel's VmFlags of the mapping holding a's first byte (Linux /proc/self/smaps), or None."""
    try:
        text = open("/proc/self/smaps").read()
    except OSError:
        return None
    where, inside = a.ctypes.data, False
    for line in text.splitlines():
        head = line.split()[0] if line else ""
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= where < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    return None


def test_large_columns_take_base_pages_and_small_ones_numpys_memory():
    """A frame's large column is its own writable mapping marked no-huge-pages (the kernel's 'nh' flag: no
    synchronous compaction on its first touch); a small one, and any object column, is numpy's own empty array;
    the frame's rows are what was added."""
    big = fresh_column(1 << 20, np.float64)  # 8 MiB
    small = fresh_column(1000, np.float64)
    assert big.flags.writeable and big.shape == (1 << 20,) and big.dtype == np.float64
    if sys.platform != "linux":  # no MADV_NOHUGEPAGE: numpy's own array, as a small column's
        assert big.base is None
        return
    assert "nh" in _vm_flags(big) and "hg" not in _vm_flags(big)
    assert small.base is None and fresh_column(1 << 20, object).dtype == object
    frame = ColumnsFrame(1 << 20)
    frame.add({"x": np.arange(1 << 20, dtype=float), "c": pd.Categorical(["a", "b"] * (1 << 19))})
    got = frame.frame()
    assert "nh" in _vm_flags(frame.columns["x"])
    assert np.array_equal(got["x"].to_numpy(), np.arange(1 << 20, dtype=float))
    assert got["c"].tolist()[:3] == ["a", "b", "a"]


def test_a_frame_and_its_columns_are_freed_when_let_go_without_the_cycle_collector():
    """Once the frame is taken, nothing the prefault thread held keeps the columns alive in a reference cycle:
    letting go of the builder and the frame frees them at once (a cycle would hold gigabytes until Python's
    collector ran, mid-way through whatever runs next)."""
    import gc
    import weakref

    n, step = 3 << 20, 1 << 16
    whole = ColumnsFrame(n)
    for lo in range(0, n, step):
        whole.add({"x": np.arange(lo, lo + step, dtype=float)})
    got = whole.frame()
    column = weakref.ref(whole.columns["x"])
    gc.disable()
    try:
        del whole, got
        assert column() is None
    finally:
        gc.enable()
