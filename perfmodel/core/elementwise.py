"""Elementwise operations that take one Python number or numpy arrays alike.

A cost function written with these runs a sweep's arrays through numpy and one configuration's Python floats
through Python arithmetic, which is ~20x cheaper than numpy's on a single value (the API called in a loop, a
collective priced for one message). Both paths give the same IEEE values: each helper does on one number what
numpy does on each element, NaN included, and the reductions over a list of terms keep numpy's order (a stack
reduced over its first axis adds and multiplies the rows one after another).

    where(c, a, b)          np.where; a plain conditional when c is a Python bool and neither branch has dimensions
    maximum / minimum       np.maximum / np.minimum (a NaN wins)
    scalar_max / scalar_min / scalar_ceil   the same on Python numbers alone (any number of terms for the first two)
    floor / ceil            np.floor / np.ceil (a finite float as a float)
    isfinite / isinf        np.isfinite / np.isinf
    logical_not             np.logical_not (~ on a Python bool would give -2)
    any_true                np.any
    zeros_like, ones_like, full_like
    prod_rows(xs)           np.prod(xs, axis=0)
    max_rows(xs, shape)     np.max of the terms broadcast to shape, over the terms
    sum_rows(xs, shape)     np.sum of the terms broadcast to shape, over the terms
    argmin_rows(xs)         np.argmin over the terms (the first minimum; the first NaN where there is one)
    choose(i, xs)           np.choose

Does not: know what the numbers mean (the cost modules do).
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np


def one(x) -> bool:
    """One Python number (a float, an int, a bool; numpy's scalar float counts as a float)."""
    return isinstance(x, (int, float))


def where(cond, a, b):
    """np.where(cond, a, b), as a plain conditional where cond is one bool and neither branch is an array
    with dimensions (np.where would broadcast the one not chosen into the result's shape)."""
    if isinstance(cond, bool) and getattr(a, "ndim", 0) == 0 and getattr(b, "ndim", 0) == 0:
        return a if cond else b
    return np.where(cond, a, b)


def scalar_max(a, b, *rest):
    """numpy's maximum over Python numbers (the largest; a NaN wins): maximum's one-number case, and the
    compiled graph's vmax on one configuration (model/numeric.scalar_namespace)."""
    m = a if (a > b or a != a) else b  # equal (0.0 and -0.0 too): numpy gives the second
    for c in rest:
        if not (m > c or m != m):
            m = c
    return m


def scalar_min(a, b, *rest):
    """numpy's minimum over Python numbers (the smallest; a NaN wins)."""
    m = a if (a < b or a != a) else b  # equal (0.0 and -0.0 too): numpy gives the second
    for c in rest:
        if not (m < c or m != m):
            m = c
    return m


def scalar_ceil(x):
    """numpy's ceil of a Python number: a float, a zero keeping x's sign (-0.5 -> -0.0), inf and NaN as they are."""
    return (float(math.ceil(x)) or math.copysign(0.0, x)) if math.isfinite(x) else x


def maximum(a, b):
    """np.maximum(a, b), on two Python floats as numpy gives it (the larger; a NaN wins)."""
    return scalar_max(a, b) if isinstance(a, float) and isinstance(b, float) else np.maximum(a, b)


def minimum(a, b):
    """np.minimum(a, b), on two Python floats as numpy gives it (the smaller; a NaN wins)."""
    return scalar_min(a, b) if isinstance(a, float) and isinstance(b, float) else np.minimum(a, b)


def floor(x):
    """np.floor(x), on a finite Python float as a Python float (a zero keeps x's sign, as numpy's does)."""
    if isinstance(x, float) and math.isfinite(x):
        return float(math.floor(x)) or math.copysign(0.0, x)
    return np.floor(x)


def ceil(x):
    """np.ceil(x), on a Python float as a Python float (scalar_ceil)."""
    return scalar_ceil(x) if isinstance(x, float) else np.ceil(x)


def isfinite(x):
    return math.isfinite(x) if isinstance(x, float) else np.isfinite(x)


def isinf(x):
    return math.isinf(x) if isinstance(x, float) else np.isinf(x)


def logical_not(x):
    return not x if isinstance(x, bool) else np.logical_not(x)


def any_true(x) -> bool:
    return x if isinstance(x, bool) else bool(np.any(x))


def zeros_like(x):
    return 0.0 if isinstance(x, float) else np.zeros_like(x)


def ones_like(x):
    return 1.0 if isinstance(x, float) else np.ones_like(x)


def full_like(x, value: float):
    return float(value) if isinstance(x, float) else np.full_like(x, value)


def _all_one(xs) -> bool:
    return all(isinstance(x, (int, float)) for x in xs)


def prod_rows(xs: list):
    """np.prod(xs, axis=0): the terms multiplied one after another."""
    if _all_one(xs):
        return functools.reduce(operator.mul, xs)
    return np.prod(xs, axis=0)


def max_rows(xs: list, shape=None):
    """The largest term per element (a NaN wins): np.max over the terms stacked (at `shape` when given)."""
    if _all_one(xs):
        return functools.reduce(maximum, (float(x) for x in xs))
    if shape is None:
        return np.max(xs, axis=0)
    return np.max(np.stack([np.broadcast_to(x, shape) for x in xs]), axis=0)


def sum_rows(xs: list, shape):
    """The terms' sum per element as numpy sums a stack over its first axis: one after another (numpy sums one
    value per term, a contiguous run, pairwise from 8 terms on: that case is left to numpy)."""
    if _all_one(xs) and len(xs) < 8:
        return functools.reduce(operator.add, (float(x) for x in xs), 0.0)  # numpy adds from its identity, 0.0
    return np.stack([np.broadcast_to(x, shape) for x in xs]).sum(axis=0)


def argmin_rows(xs: list):
    """np.argmin over the terms: the first smallest, or the first NaN where a term is NaN."""
    if _all_one(xs):
        best = 0
        for i, x in enumerate(xs):
            if x != x:
                return i
            if x < xs[best]:
                best = i
        return best
    return np.argmin(np.stack(np.broadcast_arrays(*xs)), axis=0)  # a term may be one number beside arrays


def choose(i, xs: list):
    """np.choose(i, xs): xs[i] for one index; for an index array each entry taken from the terms stacked
    (np.choose itself is ~3x slower at a sweep's sizes: the collectives' picks among their algorithms)."""
    if isinstance(i, int):
        return xs[i]
    i, *xs = np.broadcast_arrays(i, *xs)
    return np.take_along_axis(np.stack(xs), i[None], axis=0)[0]
