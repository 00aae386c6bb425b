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

Does not: evaluate a chunk (engine.py) or choose where rows go (run.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


class ColumnsFrame:
    """Rows of equal-schema chunks gathered into preallocated columns (module doc)."""

    def __init__(self, capacity: int):
        self.capacity, self.n = int(capacity), 0
        self.columns: dict[str, np.ndarray] = {}
        self.categories: dict[str, list] = {}  # categorical column -> its categories so far
        self.category_dtype: dict[str, object] = {}
        self.pieces: dict[str, list] = {}  # an extension-typed column (pandas' str): its chunks' arrays
        self.infer: set[str] = set()  # object columns given as arrays: typed at the end as a DataFrame would
        self.order: list[str] = []

    def _allocate(self, chunk) -> None:
        for name in chunk:
            s = chunk[name]
            if isinstance(s, pd.Series) and isinstance(s.dtype, pd.CategoricalDtype):
                s = s.array
            if isinstance(s, pd.Categorical):
                self.categories[name] = list(s.categories)
                self.category_dtype[name] = s.categories.dtype
                self.columns[name] = np.empty(self.capacity, dtype=np.int16)  # a sweep's labels: few
            elif isinstance(s.dtype, np.dtype):
                self.columns[name] = np.empty(self.capacity, dtype=s.dtype)
                if not isinstance(s, pd.Series) and s.dtype == object:
                    self.infer.add(name)
            else:
                self.pieces[name] = []
        self.order = list(chunk)

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
                    codes = np.asarray([where[c] for c in cats] + [-1], dtype=np.int16)[codes]
                self.columns[name][rows] = codes
            elif name in self.pieces:
                self.pieces[name].append(s.array)
            else:
                self.columns[name][rows] = s.to_numpy() if isinstance(s, pd.Series) else s
        self.n += m

    def frame(self) -> pd.DataFrame:
        data = {}
        for name in self.order:
            if name in self.pieces:
                data[name] = pd.concat([pd.Series(a, copy=False) for a in self.pieces[name]], ignore_index=True)
                continue
            col = self.columns[name][:self.n]
            if name in self.categories:
                data[name] = pd.Categorical.from_codes(
                    col, categories=pd.Index(self.categories[name], dtype=self.category_dtype[name]))
            elif name in self.infer:
                data[name] = pd.Series(col)  # texts typed once, as DataFrame(chunk) types them (pandas' str)
            else:
                data[name] = pd.Series(col, dtype=col.dtype, copy=False)  # object stays object (no str inference)
        return pd.DataFrame(data, copy=False)
