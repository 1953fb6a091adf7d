"""The one door through which user values enter SymPy.

SymPy's ``sympify`` — and with it ``Matrix(...)``, ``ImmutableMatrix(...)``, ``.subs(...)``,
``nsimplify`` and every ``sympy.Function`` — parses strings with ``eval``: handing it a user's
string runs that string as Python. Every public symbolic entry therefore converts the values it
is given with :func:`exact` (numbers), :func:`exact_matrix` (arrays) or :func:`exact_subs`
(substitution mappings) before any of them reaches SymPy. Accepted are Python and NumPy
numbers, :class:`fractions.Fraction`, :class:`decimal.Decimal`, SymPy objects, and (for
matrices) SymPy matrices, NumPy arrays and nested lists or tuples of those. Strings and bytes
are refused, with an error naming the argument, wherever they appear (also as one entry of a
list). ``tests/test_security.py`` scans the package so that no other path appears.

>>> exact("n", 3)
3
>>> exact("scale", 0.5, floats="rational")
1/2
>>> exact("n", "__import__('os').system('id')")
Traceback (most recent call last):
...
attnsym.errors.SpecError: n must be a real number or a SymPy expression (got the string "__import__('os').system('id')"; ...
>>> exact_matrix("X", [[1, 2], [3, 4.5]], floats="rational")
Matrix([
[1,   2],
[3, 9/2]])
"""

from __future__ import annotations

import decimal
import fractions
import math
import numbers
from collections.abc import Mapping
from typing import Any

import sympy as sp
from sympy.utilities.lambdify import MODULES

from .errors import AttnsymError, ShapeError, SpecError

__all__ = ["exact", "exact_entries", "exact_matrix", "exact_modules", "exact_subs"]

_NON_FINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


def _show(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, sp.Basic):
        return f"an array of shape {tuple(shape)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _refuse(name: str, value: Any, what: str, error: type[AttnsymError]) -> AttnsymError:
    if isinstance(value, str | bytes):
        kind = "string" if isinstance(value, str) else "bytes"
        return error(f"{name} must be {what} (got the {kind} {_show(value)}; strings are never parsed: "
                     "build expressions with sympy.Symbol)")
    return error(f"{name} must be {what} (got {_show(value)} of type {type(value).__name__})")


def exact(name: str, value: Any, *, floats: str = "float", finite: bool = True, real: bool = True,
          error: type[AttnsymError] = SpecError) -> sp.Basic:
    """``value`` as a SymPy number or expression, never parsing a string.

    Parameters
    ----------
    name : str
        The argument's name as the user wrote it, for the error message.
    value : number, Fraction, Decimal, NumPy scalar or 0-d array, or sympy.Basic
        The value to convert. ``bool``, ``str``, ``bytes`` and every other type are refused.
    floats : {"float", "rational"}, default "float"
        ``"float"`` keeps a float as ``sympy.Float``; ``"rational"`` turns it into the Rational
        of its shortest decimal form (``0.1 → 1/10``), which keeps exact results exact.
    finite : bool, default True
        Refuse NaN, ±inf and SymPy's ``nan``, ``oo``, ``zoo``.
    real : bool, default True
        Refuse complex numbers.
    error : AttnsymError subclass, default SpecError

    Returns
    -------
    sympy.Basic

    Raises
    ------
    SpecError (or ``error``)
        ``value`` is a string, bytes, a bool, non-finite or of another type.

    Examples
    --------
    >>> import fractions
    >>> exact("p", fractions.Fraction(3, 4))
    3/4
    >>> exact("p", float("nan"))
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: p must be finite (got nan)
    """
    if floats not in ("float", "rational"):
        raise SpecError(f"floats must be 'float' or 'rational' (got {floats!r})")
    if hasattr(value, "ndim") and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a 0-d array (NumPy, CuPy, torch) is a number
    what = "a real number or a SymPy expression" if real else "a number or a SymPy expression"
    if isinstance(value, sp.MatrixBase):
        raise error(f"{name} must be {what}, not a matrix (got a {value.shape[0]}x{value.shape[1]} Matrix)")
    if isinstance(value, sp.Basic):
        result = value
    elif isinstance(value, bool) or type(value).__name__ == "bool_":
        raise _refuse(name, value, what, error)
    elif isinstance(value, numbers.Integral):
        result = sp.Integer(int(value))
    elif isinstance(value, numbers.Rational | decimal.Decimal) and not isinstance(value, float):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            if finite:
                raise error(f"{name} must be finite (got {value})")
            return sp.nan if value.is_nan() else (sp.oo if value > 0 else -sp.oo)
        frac = fractions.Fraction(value)
        result = sp.Rational(frac.numerator, frac.denominator)
    elif isinstance(value, numbers.Real):
        as_float = float(value)
        if not math.isfinite(as_float):
            if finite:
                raise error(f"{name} must be finite (got {value!r})")
            return sp.nan if as_float != as_float else (sp.oo if as_float > 0 else -sp.oo)
        if floats == "rational":
            frac = fractions.Fraction(repr(as_float))
            result = sp.Rational(frac.numerator, frac.denominator)
        else:
            result = sp.Float(as_float)
    elif isinstance(value, numbers.Complex) and not real:
        z = complex(value)
        result = exact(name, z.real, floats=floats, finite=finite, error=error) + sp.I * exact(
            name, z.imag, floats=floats, finite=finite, error=error)
    else:
        raise _refuse(name, value, what, error)
    if finite and isinstance(result, sp.Basic) and result.has(*_NON_FINITE):
        raise error(f"{name} must be finite (got {result})")
    if real and isinstance(result, sp.Expr) and result.is_number and result.is_extended_real is False:
        raise error(f"{name} must be real (got {result})")
    return result


def _rows(name: str, value: Any, error: type[AttnsymError]) -> list:
    """Nested Python lists of the entries of ``value`` (a SymPy matrix, an array or a sequence)."""
    if isinstance(value, str | bytes):
        raise _refuse(name, value, "an array-like of numbers or SymPy expressions", error)
    if isinstance(value, sp.MatrixBase):
        return value.tolist()
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # NumPy (or other) arrays
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_rows(f"{name}[{i}]", v, error) if isinstance(v, list | tuple | sp.MatrixBase)
                or (hasattr(v, "tolist") and hasattr(v, "shape") and getattr(v, "ndim", 0) > 0) else v
                for i, v in enumerate(value)]
    raise _refuse(name, value, "an array-like of numbers or SymPy expressions", error)


def exact_entries(name: str, value: Any, shape: tuple[int, int], *, floats: str = "float",
                  error: type[AttnsymError] = ShapeError) -> list[sp.Basic]:
    """Row-major exact entries of ``value`` for an input of ``shape``.

    A number stands for a matrix filled with it; a flat sequence is accepted for a ``(1, k)`` row.

    >>> exact_entries("b", [1, 2], (1, 2))
    [1, 2]
    >>> exact_entries("W", 3, (1, 2))
    [3, 3]
    """
    if not isinstance(value, list | tuple | sp.MatrixBase | str | bytes) and not (
            hasattr(value, "shape") and getattr(value, "ndim", 0) > 0):
        scalar = exact(name, value, floats=floats, error=error)
        return [scalar] * (shape[0] * shape[1])
    rows = _rows(name, value, error)
    if shape[0] == 1 and rows and not any(isinstance(r, list) for r in rows):
        rows = [rows]  # a flat sequence for a (1, k) row, e.g. a bias given as a 1-d array
    two_d = all(isinstance(r, list) and not any(isinstance(v, list) for v in r) for r in rows)
    lengths = sorted({len(r) for r in rows}) if two_d else []
    if not two_d or len(lengths) > 1:
        raise error(f"{name} must be a 2-d array-like of shape {shape} or a number (got {_show(value)})")
    got = (len(rows), lengths[0] if lengths else 0)
    if got != tuple(shape):
        raise error(f"{name} must have shape {tuple(shape)} (got {got})")
    return [exact(f"{name}[{i}][{j}]", v, floats=floats, error=error) for i, r in enumerate(rows) for j, v in enumerate(r)]


def exact_matrix(name: str, value: Any, *, floats: str = "float", finite: bool = True,
                 error: type[AttnsymError] = ShapeError) -> sp.Matrix:
    """``value`` (a SymPy matrix, an array, or nested lists of numbers) as a SymPy ``Matrix``.

    A 1-d sequence becomes a column, as ``sympy.Matrix`` does. Every entry goes through
    :func:`exact`, so one string anywhere is refused, named by its index.

    >>> exact_matrix("v", [1, 2]).shape
    (2, 1)
    >>> exact_matrix("X", [[1, "2"]])
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: X[0][1] must be a real number or a SymPy expression (got the string '2'; strings ...
    """
    rows = _rows(name, value, error)
    if not rows:
        return sp.Matrix(0, 0, [])
    if not any(isinstance(r, list) for r in rows):
        entries = [exact(f"{name}[{i}]", v, floats=floats, finite=finite, error=error) for i, v in enumerate(rows)]
        return sp.Matrix(len(entries), 1, entries)
    if not all(isinstance(r, list) and not any(isinstance(v, list) for v in r) for r in rows):
        raise error(f"{name} must be a 1-d or 2-d array-like (got {_show(value)})")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise error(f"{name} has rows of different lengths {sorted(widths)}")
    entries = [exact(f"{name}[{i}][{j}]", v, floats=floats, finite=finite, error=error)
               for i, r in enumerate(rows) for j, v in enumerate(r)]
    return sp.Matrix(len(rows), widths.pop(), entries)


def exact_subs(name: str, values: Any, symbols: Any, *, floats: str = "float",
               error: type[AttnsymError] = SpecError) -> dict[sp.Basic, sp.Basic]:
    """A substitution mapping ``{symbol: exact value}`` safe to hand to ``.subs`` / ``.xreplace``.

    Keys are SymPy symbols, or their names as strings: a string key is matched by name against
    ``symbols`` (the free symbols of the expression), never parsed. Values go through :func:`exact`.

    >>> n = sp.Symbol("n", positive=True)
    >>> exact_subs("values", {"n": 4}, {n})
    {n: 4}
    >>> exact_subs("values", {"m": 4}, {n})
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: values has an unknown symbol 'm'; the free symbols are ['n']
    """
    if not isinstance(values, Mapping):
        raise error(f"{name} must be a mapping from symbol to value (got {_show(values)} of type {type(values).__name__})")
    by_name: dict[str, sp.Basic] = {}
    for sym in symbols:
        by_name.setdefault(str(sym), sym)
    result: dict[sp.Basic, sp.Basic] = {}
    for key, value in values.items():
        if isinstance(key, str):
            if key not in by_name:
                raise error(f"{name} has an unknown symbol {key!r}; the free symbols are {sorted(by_name)}")
            target = by_name[key]
        elif isinstance(key, sp.Symbol):
            target = key
        else:
            raise _refuse(f"a key of {name}", key, "a SymPy Symbol or a symbol's name", error)
        result[target] = exact(f"{name}[{key!r}]", value, floats=floats, error=error)
    return result


def exact_modules(name: str, modules: Any, *, error: type[AttnsymError] = SpecError) -> Any:
    """``modules`` for ``sympy.lambdify``, checked: module names SymPy knows, dicts of callables or modules.

    A string is only ever looked up in SymPy's table of printers (``"numpy"``, ``"math"``, ...).

    >>> exact_modules("modules", "numpy")
    'numpy'
    >>> exact_modules("modules", "os")
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: modules must name a module sympy.lambdify knows (one of ...) (got 'os')
    """
    items = modules if isinstance(modules, list | tuple) else [modules]
    for item in items:
        if isinstance(item, str):
            if item not in MODULES:
                known = ", ".join(repr(m) for m in sorted(MODULES))
                raise error(f"{name} must name a module sympy.lambdify knows (one of {known}) (got {item!r})")
        elif isinstance(item, bytes):
            raise _refuse(name, item, "a module name, a module or a dict of functions", error)
        elif not (isinstance(item, Mapping) or type(item).__name__ == "module"):
            raise _refuse(name, item, "a module name, a module or a dict of functions", error)
    return modules
