"""Formulas as the numbers they are evaluated as: an unevaluated maximum, and one way to compile sympy to numpy.

    vmax(a, b, ...)   max(a, b, ...) elementwise (numpy.maximum over broadcast arrays)
    scalar_namespace() the compiled source's functions for one configuration of Python floats

sympy's Max compares its arguments symbolically when it is built (factor_terms, gcd_terms over every pair:
about 0.1 s per operator, 85% of compiling a graph), only for evaluate to print it as a numpy maximum
anyway. vmax is that maximum, built in microseconds: it folds numbers (so `subs` of every symbol gives a
number), prints as \\max in LaTeX, differentiates as Max does (the Heaviside of the argument against the others,
for elasticities), and lambdifies to numpy.maximum. lambdify_numeric prints any sympy Max / Min left in
an expression (a structural formula such as the KV heads per device) the same way, without walking the
expression to replace them.

Does not: choose what a formula is (formulas.py, roofline.py) or bind values (bindings.py).
"""

from __future__ import annotations

import builtins
import functools

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from perfmodel.core import elementwise as ew


class vmax(sp.Function):  # noqa: N801 - the name lambdify prints and the compiled source calls
    """max(a, b, ...) left unevaluated unless every argument is a number (module doc)."""

    @classmethod
    def eval(cls, *args):
        if len(args) == 1:
            return args[0]
        if all(a.is_Number for a in args):
            return sp.Max(*args)
        return None

    def fdiff(self, argindex=1):
        me, others = self.args[argindex - 1], self.args[:argindex - 1] + self.args[argindex:]
        return sp.Heaviside(me - vmax(*others))

    def _eval_evalf(self, prec):
        args = [a.evalf(prec) for a in self.args]
        return sp.Max(*args) if all(a.is_Number for a in args) else vmax(*args)

    def _latex(self, printer):
        return r"\max\left(" + ", ".join(printer._print(a) for a in self.args) + r"\right)"


def _maximum(*a):
    return functools.reduce(np.maximum, a)


def _minimum(*a):
    return functools.reduce(np.minimum, a)


NAMESPACE = {"vmax": _maximum, "vmin": _minimum}


class _Printer(NumPyPrinter):
    """numpy code where Max / Min broadcast their arguments (numpy.amax of a list would not)."""

    def _print_Max(self, expr):
        return f"vmax({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr):
        return f"vmin({', '.join(self._print(a) for a in expr.args)})"

    def _print_vmax(self, expr):
        return self._print_Max(expr)


def lambdify_numeric(symbols, exprs, cse: bool = False):
    """sympy.lambdify to numpy with vmax / Max / Min as broadcasting maxima and minima."""
    printer = _Printer({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True,
                        "user_functions": {}})
    return sp.lambdify(symbols, exprs, modules=[NAMESPACE, "numpy"], printer=printer, cse=cse)


@functools.lru_cache(maxsize=1)
def namespace() -> dict:
    """The globals lambdify_numeric gives its functions, for compiled source read back from disk: numpy's names
    as lambdify imports them ('from numpy import *' and numpy.linalg's, less lazily imported submodules), its
    translations of sympy names (Heaviside, Abs, I) and the maxima. Built directly: lambdify itself costs ~0.13 s,
    a warm CLI call's largest cost after its imports (a test holds the two equal)."""
    # numpy's public names as 'from numpy import *' binds them, less the submodules numpy imports lazily on first
    # touch (f2py, testing, ma, ...: ~0.12 s; no formula calls a module).
    loaded = vars(np)
    ns: dict = {"numpy": np, **{k: loaded[k] for k in np.__all__ if k in loaded},
                **{k: getattr(np.linalg, k) for k in np.linalg.__all__}}
    ns.update({"Heaviside": np.heaviside, "Abs": abs, "I": 1j, "builtins": builtins, "range": range, **NAMESPACE})
    return ns


# One configuration: the same compiled source run on Python floats, its maxima, minima and ceilings as the
# scalar operations numpy's are (core/elementwise: numpy.maximum is a if a >= b or a is NaN, else b; numpy.ceil
# keeps inf, NaN and a zero's sign). numpy spends about a microsecond on each operation on a scalar; the graph of
# one configuration is a few hundred.


@functools.lru_cache(maxsize=1)
def scalar_namespace() -> dict:
    """namespace() with vmax / vmin / ceil for Python floats (the compiled source's only functions)."""
    return {**namespace(), "vmax": ew.scalar_max, "vmin": ew.scalar_min, "ceil": ew.scalar_ceil}
