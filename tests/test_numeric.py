"""The unevaluated maximum (model/numeric.py): the same numbers as sympy's Max, built without its symbolic
comparisons, shown as max in LaTeX, differentiated like Max, compiled to broadcasting numpy."""

import types

import numpy as np
import pytest
import sympy as sp

from perfmodel.model.numeric import lambdify_numeric, vmax

a, b, c = sp.symbols("a b c", positive=True)


def test_vmax_folds_numbers_and_stays_symbolic_otherwise():
    assert vmax(a) == a
    assert vmax(sp.Integer(2), sp.Rational(5, 2)) == sp.Rational(5, 2)
    e = vmax(a, b + c)
    assert isinstance(e, vmax) and e.subs({a: 3, b: 1, c: 1}) == 3 and float(e.subs({a: 1, b: 1, c: 2})) == 3.0


def test_vmax_prints_as_max_and_differentiates_as_max():
    assert sp.latex(vmax(a, b)) == r"\max\left(a, b\right)"
    # d max(a, b) / da = 1 where a > b, 0 where a < b (the active term): elasticities follow the bound
    d = sp.diff(vmax(a, 2 * b), a)
    assert d.subs({a: 3, b: 1}) == 1 and d.subs({a: 1, b: 1}) == 0
    assert sp.diff(sp.Max(a, 2 * b), a).subs({a: 3, b: 1}) == d.subs({a: 3, b: 1})


def test_compiled_maxima_broadcast_like_numpy():
    f = lambdify_numeric([a, b, c], [vmax(a / 2, b + c) + sp.Max(a, 1), sp.Min(a, b)], cse=True)
    x, y = f(np.array([1.0, 4.0]), 1.0, np.array([0.0, 3.0]))
    np.testing.assert_array_equal(x, [1.0 + 1.0, 4.0 + 4.0])
    np.testing.assert_array_equal(y, [1.0, 1.0])


def test_an_operator_time_compiles_to_what_sympy_max_gives():
    from perfmodel.model import formulas as fm
    from perfmodel.model import roofline as rl

    t = rl.op_time(fm.matmul(a, b, c))
    syms = sorted(t.free_symbols, key=lambda s: s.name)
    f = lambdify_numeric(syms, t)
    rng = np.random.default_rng(0)
    vals = {s: float(rng.uniform(0.5, 4.0)) for s in syms}
    plain = t.replace(vmax, sp.Max).subs(vals)
    assert f(*[vals[s] for s in syms]) == pytest.approx(float(plain), rel=1e-12)


def test_the_namespace_built_directly_is_lambdifys():
    """numeric.namespace() (built without calling lambdify, for compiled source read from disk) holds every name
    lambdify_numeric's functions see, bound to the same objects, but the numpy submodules it may skip (loaded
    lazily)."""
    import sympy as sp

    from perfmodel.model import numeric

    ns = numeric.namespace()
    ref = numeric.lambdify_numeric([], sp.Integer(0)).__globals__
    lazy = {k for k, v in ref.items() if isinstance(v, types.ModuleType) and k != "numpy"}  # loaded on first touch
    names = {k for k in ref if k != "__builtins__"} - lazy
    assert names <= set(ns)
    assert all(ns[k] is ref[k] or ns[k] == ref[k] for k in names)
