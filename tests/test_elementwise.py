"""core/elementwise: each helper does on one Python number what numpy does on each element (NaN, inf and -0.0
included), so a cost function written with them gives a point and its configuration in a sweep the same bits."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.core import elementwise as ew

ANY = st.floats(allow_nan=True, allow_infinity=True)
SPECIAL = (0.0, -0.0, 1.0, -2.5, 2.5, 1e308, float("inf"), float("-inf"), float("nan"))


def same(x, y) -> bool:
    """The same IEEE value (NaN equals NaN; 0.0 and -0.0 differ)."""
    return np.float64(x).tobytes() == np.float64(y).tobytes() or (math.isnan(x) and math.isnan(y))


@given(ANY, ANY)
def test_maximum_and_minimum_are_numpys(a, b):
    assert same(ew.maximum(a, b), np.maximum(a, b))
    assert same(ew.minimum(a, b), np.minimum(a, b))


@given(ANY)
def test_floor_ceil_and_finiteness_are_numpys(x):
    assert same(ew.floor(x), np.floor(x)) and same(ew.ceil(x), np.ceil(x))
    assert ew.isfinite(x) == bool(np.isfinite(x)) and ew.isinf(x) == bool(np.isinf(x))


@given(st.lists(ANY, min_size=1, max_size=9))
def test_reductions_over_terms_are_numpys(xs):
    """Sums, products and maxima of one value per term, in numpy's order; argmin picks numpy's index (a NaN
    first); the same helpers on arrays are numpy's."""
    rows = [np.asarray([x]) for x in xs]
    with np.errstate(all="ignore"):
        assert same(ew.sum_rows(xs, ()), ew.sum_rows(rows, (1,))[0])
        assert same(ew.prod_rows(xs), ew.prod_rows(rows)[0])
        assert same(ew.max_rows(xs), ew.max_rows(rows)[0]) and same(ew.max_rows(xs, ()), ew.max_rows(rows, (1,))[0])
        assert ew.argmin_rows(xs) == int(ew.argmin_rows(rows)[0]) == int(np.argmin(np.asarray(xs)))
    i = ew.argmin_rows(xs)
    assert ew.choose(i, xs) is xs[i]


def test_conditionals_take_python_bools_and_leave_arrays_to_numpy():
    for x in SPECIAL:
        for c in (True, False):
            assert same(ew.where(c, x, 7.0), np.where(c, x, 7.0))
    assert np.array_equal(ew.where(np.asarray([True, False]), 1.0, 0.0), [1.0, 0.0])
    assert np.array_equal(ew.where(True, np.asarray([5.0, 6.0]), 1.0), [5.0, 6.0])  # an array branch keeps its shape
    assert ew.logical_not(True) is False and np.array_equal(ew.logical_not(np.asarray([True])), [False])
    assert ew.any_true(False) is False and ew.any_true(np.asarray([False, True])) is True
    assert ew.zeros_like(3.0) == 0.0 and ew.ones_like(3.0) == 1.0 and ew.full_like(3.0, np.inf) == np.inf
    assert np.array_equal(ew.full_like(np.ones(2), np.inf), [np.inf, np.inf])
    assert ew.one(2.0) and ew.one(np.float64(2.0)) and not ew.one(np.asarray(2.0))


def test_signed_zeros_come_out_as_numpys():
    """Equal arguments (0.0 and -0.0): numpy's maximum and minimum give the second; its sums start from 0.0."""
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        assert same(ew.maximum(a, b), np.maximum(a, b)) and same(ew.minimum(a, b), np.minimum(a, b))
    assert same(ew.max_rows([0.0, -0.0]), ew.max_rows([np.asarray([0.0]), np.asarray([-0.0])])[0])
    assert same(ew.sum_rows([-0.0], ()), ew.sum_rows([np.asarray([-0.0])], (1,))[0])
