"""A sweep's chunks written into one frame's preallocated columns, so returning a frame costs its own size
and no more (pd.concat of the chunks held every chunk and the result at once: 2.1x the frame at 10M rows).

    ColumnsFrame(capacity)   columns allocated from the first chunk's dtypes, capacity rows each
    .add(chunk)              copies a chunk's columns (a DataFrame, or engine.chunk_columns' dict: no
                             DataFrame built per chunk) into rows [n, n + len(chunk)); categorical columns
                             keep their codes, their categories grown in order of first appearance; an
                             extension-typed column (pandas' Arrow strings) keeps its chunks' arrays,
                             joined once at the end
    .frame()                 the rows written, as a DataFrame over the same arrays (no copy, no
                             consolidation into blocks)
    TextCodes(codes, texts)  a text column given as codes into its few distinct texts (a sweep's reasons):
                             kept as codes like a categorical's, made pandas' text column once at the end
                             (text_array: Arrow's take, not a conversion of millions of Python strings)
    .close()                 stops the page prefaulting below (frame() does; run.py on an interrupted sweep)

The columns' pages are faulted in ahead of the writer by a thread (Linux: madvise MADV_POPULATE_WRITE, which
never writes data, so it cannot race the rows being copied in), from the last rows back towards the writer:
a frame's first touch of fresh memory is otherwise paid on the sweep's critical path (10M rows x 47 columns is
3 GiB; on a virtual machine whose host backs guest memory lazily, about 2 ms per MiB, as long as the sweep's
own compute), and the kernel's work on that thread runs beside numpy's on another core.

A large column is its own anonymous mapping in base pages (fresh_column: MADV_NOHUGEPAGE). np.empty would ask
for transparent huge pages (numpy madvises MADV_HUGEPAGE from 4 MiB), and under the kernel's usual THP defrag
setting ("madvise") a huge-page fault in such a region may compact memory synchronously, in the kernel, while
the sweep's threads wait for cores: on the 2-core development VM a process's first 10M-row frame spent 6.4-8.8 s
of system time with huge-page columns against 2.4-3.4 s with base pages, and was returned at 1.00-1.30M/s
against 1.58-2.08M/s (runs of each rotated in both orders; bench_frames.py). A column is written once, in order,
so huge pages' fewer TLB misses buy it little. The text column's Arrow buffers come from the system allocator
for the same reason (text_array).

Does not: evaluate a chunk (engine.py) or choose where rows go (run.py).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import sys
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

_MADV_POPULATE_WRITE = 23  # Linux >= 5.14 (include/uapi/asm-generic/mman-common.h)
_PREFAULT_ROWS = 1 << 20  # rows per madvise call and column: 8 MiB of float64
_OWN_MAPPING_BYTES = 4 << 20  # numpy madvises huge pages from 4 MiB (HUGEPAGE_THRESHOLD in alloc.c); below, np.empty


def _madvise():
    """libc's madvise through ctypes (which releases the GIL during the call), or None off Linux / glibc."""
    if sys.platform != "linux":
        return None
    try:
        f = ctypes.CDLL("libc.so.6", use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return f


def fresh_column(capacity: int, dtype) -> np.ndarray:
    """An uninitialised column of `capacity` rows; from 4 MiB its own anonymous mapping in base pages (module doc),
    freed with the last array over it."""
    dtype = np.dtype(dtype)
    nbytes = capacity * dtype.itemsize
    if nbytes < _OWN_MAPPING_BYTES or dtype.hasobject or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return np.empty(capacity, dtype=dtype)
    pages = mmap.mmap(-1, nbytes)
    pages.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(pages, dtype=dtype, count=capacity)


def _codes_dtype(categories: int) -> np.dtype:
    """The integer type pandas keeps a Categorical's codes in for this many categories (coerce_indexer_dtype)."""
    return np.dtype(np.int8 if categories < 127 else np.int16 if categories < 32767 else np.int32)


@functools.lru_cache(maxsize=1)
def _text_dtype():
    """What a DataFrame makes of a column of Python strings (pandas 3: Arrow-backed 'str'; before: object)."""
    return pd.Series(np.array([""], dtype=object)).dtype


def text_array(codes: np.ndarray, texts) -> object:
    """texts[codes] as the column pd.DataFrame would make of those strings, equal to it value for value: under
    pandas' Arrow-backed 'str', built by Arrow's take of the distinct texts (10M rows: ~0.25 s, where converting
    the Python strings takes ~2 s); otherwise the object array itself."""
    dtype = _text_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        # the system allocator's pages: Arrow's default pool (mimalloc) takes transparent huge pages, whose
        # synchronous compaction made this take of 10M rows 0.5-1.1 s inside a sweep, against 0.25 s (module doc)
        taken = pc.take(pa.array(list(texts), type=pa.large_string()), pa.array(codes),
                        memory_pool=pa.system_memory_pool())
        return pd.array(taken, dtype=dtype)
    return np.asarray(list(texts), dtype=object)[codes]


@dataclass(frozen=True)
class TextCodes:
    """A text column as codes into its distinct texts (its values are texts[codes]); `categories` and `codes`
    as a Categorical has them, so ColumnsFrame keeps it as one."""

    codes: np.ndarray
    texts: tuple

    @property
    def categories(self) -> tuple:
        return self.texts

    def __len__(self) -> int:
        return len(self.codes)

    def array(self) -> object:
        return text_array(self.codes, self.texts)


class _Prefault:
    """Faults in rows [writer, capacity) of the columns, last block first, until it meets the writer (module doc).
    Stops for good at the first refusal (a kernel without MADV_POPULATE_WRITE)."""

    def __init__(self, columns: list[np.ndarray], capacity: int, written):
        self.columns, self.capacity, self.written = columns, capacity, written
        self.stopped = False
        self.madvise = _madvise()
        self.thread = threading.Thread(target=self._run, name="perfmodel-prefault", daemon=True)
        if self.madvise is not None and columns:
            self.thread.start()

    def _populate(self, a: np.ndarray, r0: int, r1: int) -> bool:
        base = a.ctypes.data
        lo = -(-(base + r0 * a.itemsize) // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages inside the rows only
        hi = (base + r1 * a.itemsize) // mmap.PAGESIZE * mmap.PAGESIZE
        return hi <= lo or self.madvise(lo, hi - lo, _MADV_POPULATE_WRITE) == 0

    def _run(self) -> None:
        last = (self.capacity - 1) // _PREFAULT_ROWS * _PREFAULT_ROWS
        for r0 in range(last, -1, -_PREFAULT_ROWS):
            for a in self.columns:
                start = max(r0, self.written())
                if self.stopped or start >= r0 + _PREFAULT_ROWS:
                    return
                if not self._populate(a, start, min(r0 + _PREFAULT_ROWS, self.capacity)):
                    return

    def stop(self) -> None:
        self.stopped = True
        if self.thread.is_alive():
            self.thread.join()
        # the columns and the writer's counter (a closure over the ColumnsFrame, which holds this object) let go:
        # otherwise the frame's gigabytes wait for Python's cycle collector, which frees them later, mid-way
        # through whatever runs then (a second 10M-row sweep: 0.99-1.3M/s instead of 1.7M/s, bench_frames.py)
        self.columns, self.written = [], None


class ColumnsFrame:
    """Rows of equal-schema chunks gathered into preallocated columns (module doc)."""

    def __init__(self, capacity: int):
        self.capacity, self.n = int(capacity), 0
        self.columns: dict[str, np.ndarray] = {}
        self.categories: dict[str, list] = {}  # categorical column -> its categories so far
        self.category_dtype: dict[str, object] = {}
        self.texts: set[str] = set()  # categorical columns given as TextCodes: text columns in the frame
        self.pieces: dict[str, list] = {}  # an extension-typed column (pandas' str): its chunks' arrays
        self.infer: set[str] = set()  # object columns given as arrays: typed at the end as a DataFrame would
        self.order: list[str] = []
        self.prefault: _Prefault | None = None

    def _allocate(self, chunk) -> None:
        for name in chunk:
            s = chunk[name]
            if isinstance(s, pd.Series) and isinstance(s.dtype, pd.CategoricalDtype):
                s = s.array
            if isinstance(s, (pd.Categorical, TextCodes)):
                self.categories[name] = list(s.categories)
                if isinstance(s, TextCodes):
                    self.texts.add(name)
                else:
                    self.category_dtype[name] = s.categories.dtype
                # a sweep's labels are few: the codes pandas keeps for them (int8 below 127 categories, so
                # Categorical.from_codes takes the column as it is), widened if a later chunk adds more
                self.columns[name] = fresh_column(self.capacity, _codes_dtype(len(s.categories)))
            elif isinstance(s.dtype, np.dtype):
                self.columns[name] = fresh_column(self.capacity, s.dtype)
                if not isinstance(s, pd.Series) and s.dtype == object:
                    self.infer.add(name)
            else:
                self.pieces[name] = []
        self.order = list(chunk)
        fixed = [a for a in self.columns.values() if a.dtype != object]
        self.prefault = _Prefault(fixed, self.capacity, lambda: self.n)

    def add(self, chunk) -> None:
        if not self.order:
            self._allocate(chunk)
        if list(chunk) != self.order:
            raise ValueError(f"a sweep chunk's columns differ from the first chunk's: {list(chunk)}")
        m = len(chunk) if isinstance(chunk, pd.DataFrame) else len(chunk[self.order[0]])
        if self.n + m > self.capacity:
            raise ValueError(f"sweep rows exceed the {self.capacity:,} the plan holds")
        rows = slice(self.n, self.n + m)
        for name in self.order:
            s = chunk[name]
            if isinstance(s, pd.Series) and isinstance(s.dtype, pd.CategoricalDtype):
                s = s.array
            if name in self.categories:
                cats, known = list(s.categories), self.categories[name]
                codes = np.asarray(s.codes)
                if cats != known[:len(cats)]:  # new or reordered categories: map this chunk's codes onto the union
                    known.extend(c for c in cats if c not in known)
                    where = {c: i for i, c in enumerate(known)}
                    codes = np.asarray([where[c] for c in cats] + [-1], dtype=np.int32)[codes]
                    wide = _codes_dtype(len(known))
                    if wide != self.columns[name].dtype:
                        self.columns[name] = self.columns[name].astype(wide)
                self.columns[name][rows] = codes
            elif name in self.pieces:
                self.pieces[name].append(s.array)
            else:
                self.columns[name][rows] = s.to_numpy() if isinstance(s, pd.Series) else s
        self.n += m

    def close(self) -> None:
        """Stop faulting pages in (the frame is taken, or the sweep stopped)."""
        if self.prefault is not None:
            self.prefault.stop()

    def frame(self) -> pd.DataFrame:
        self.close()
        data = {}
        for name in self.order:
            if name in self.pieces:
                data[name] = pd.concat([pd.Series(a, copy=False) for a in self.pieces[name]], ignore_index=True)
                continue
            col = self.columns[name][:self.n]
            if name in self.texts:
                data[name] = text_array(col, self.categories[name])
            elif name in self.categories:
                data[name] = pd.Categorical.from_codes(
                    col, categories=pd.Index(self.categories[name], dtype=self.category_dtype[name]))
            elif name in self.infer:
                data[name] = pd.Series(col)  # texts typed once, as DataFrame(chunk) types them (pandas' str)
            else:
                data[name] = pd.Series(col, dtype=col.dtype, copy=False)  # object stays object (no str inference)
        return pd.DataFrame(data, copy=False)
