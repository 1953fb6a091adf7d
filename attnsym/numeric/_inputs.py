"""The one input-checking path of :mod:`attnsym.numeric`: every public function's arrays pass here.

Scalars (sizes, flags, scales) are checked by :mod:`attnsym._checks`; arrays here, with one
message per kind of mistake, naming the argument:

* not an array, or an array of no known library → :class:`~attnsym.errors.ShapeError` /
  :class:`~attnsym.errors.BackendError`;
* a dtype other than float32 / float64 (integers, booleans, float16, complex — a complex
  array is never silently truncated to its real part) → ``ShapeError`` with the conversion;
* NaN or ±inf → ``ShapeError`` (``-inf`` is allowed only where it means "masked", in
  :func:`~attnsym.numeric.softmax` scores);
* a mask that is not boolean (``0/1`` integers, additive ``0/-inf`` floats) → ``ShapeError``
  with the conversion;
* finite inputs whose result overflows the dtype → ``ShapeError`` naming the inputs, never a
  silent NaN (:func:`finite_result`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import array_api_compat
import numpy as np

from ..errors import BackendError, ShapeError
from .backend import array_namespace, asarray_in

__all__ = ["FLOAT_DTYPES", "amax", "as_array", "bool_mask", "dtype_name", "finite_result", "float64_arrays",
           "float_array", "float_inputs",
           "namespace_of"]

#: the dtypes every numeric function computes in
FLOAT_DTYPES = ("float32", "float64")


def dtype_name(x: Any) -> str:
    """``"float32"``, ``"int64"``, ``"bool"`` … for NumPy, CuPy and PyTorch arrays alike.

    >>> dtype_name(np.zeros(2, np.float32)), dtype_name(np.zeros(2, bool))
    ('float32', 'bool')
    """
    try:
        return _name_of_dtype(x.dtype)
    except TypeError:  # an unhashable dtype-like object: named without the cache
        return _name_of_dtype.__wrapped__(x.dtype)


@functools.lru_cache(maxsize=64)
def _name_of_dtype(dtype: Any) -> str:
    """The name of a dtype object, once per dtype: ``str(dtype)`` costs 7.7 µs for a NumPy dtype (Python-level
    code in NumPy), and every checked argument of every numeric call asks for it twice."""
    return str(dtype).removeprefix("torch.")


def namespace_of(named: dict[str, Any], backend: str | None = None) -> ModuleType:
    """The namespace of the arrays in ``named``, or a BackendError that says which argument is which."""
    try:
        return array_namespace(*named.values(), backend=backend)
    except BackendError:
        kinds = {k: f"{type(v).__module__}.{type(v).__name__}" for k, v in named.items()
                 if v is not None and array_api_compat.is_array_api_obj(v)}
        if len(set(kinds.values())) < 2:
            raise
        got = ", ".join(f"{k} is {t}" for k, t in kinds.items())
        raise BackendError(f"all arrays of one call must come from one array library (got {got}); convert them first, "
                           "e.g. numpy.asarray(t.cpu()) or torch.asarray(a), or pass backend='numpy' or 'torch'") from None


def as_array(xp: ModuleType, name: str, value: Any, *, convert: bool = False) -> Any:
    """``value`` as an array of ``xp`` (lists become arrays; with ``convert`` other libraries' arrays too)."""
    if value is None:
        return None
    if convert:
        value = asarray_in(xp, value)
    elif not hasattr(value, "shape") or not hasattr(value, "dtype"):
        if isinstance(value, str | bytes):
            raise ShapeError(f"{name} must be an array of numbers (got the string {value!r})")
        try:
            value = xp.asarray(value)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"{name} must be an array of numbers (got {type(value).__name__}: {exc})") from None
    if not hasattr(value, "ndim"):
        raise ShapeError(f"{name} must be an array (got {type(value).__name__})")
    return value


def float_array(xp: ModuleType, name: str, value: Any, *, like: str | None = None, neg_inf: bool = False,
                like_name: str = "X") -> str:
    """Check that ``value`` is float32/float64 (as ``like``, if given) and finite; return its dtype name.

    ``neg_inf=True`` lets ``-inf`` through (masked scores); ``+inf`` and NaN never pass.
    """
    got = dtype_name(value)
    if got not in FLOAT_DTYPES:
        kind = "complex numbers have no order for softmax; " if got.startswith("complex") else ""
        raise ShapeError(
            f"{name} must have dtype float32 or float64 (got {got}); {kind}convert it first, "
            f"e.g. {name}.astype('float64') for NumPy or {name}.double() for PyTorch"
        )
    if like is not None and got != like:
        raise ShapeError(f"{name} has dtype {got} but {like_name} has dtype {like}; give every array one dtype")
    ok = xp.isfinite(value)
    if neg_inf:
        ok = xp.logical_or(ok, value == -xp.inf)
    if not bool(xp.all(ok)):
        what = "nan or +inf" if neg_inf else "inf or nan"
        raise ShapeError(f"{name} contains non-finite values ({what}); attention needs finite inputs")
    return got


def float_inputs(named: dict[str, Any], *, neg_inf: tuple[str, ...] = ()) -> tuple[ModuleType, dict[str, Any], str]:
    """The namespace, the arrays and the one float dtype of ``named`` (``None`` entries skipped).

    The first array sets the dtype the others must share; names in ``neg_inf`` may hold ``-inf``.
    """
    xp = namespace_of(named)
    arrays = {k: as_array(xp, k, v) for k, v in named.items()}
    first = next(k for k, v in arrays.items() if v is not None)
    dtype = float_array(xp, first, arrays[first], neg_inf=first in neg_inf)
    for k, v in arrays.items():
        if v is not None and k != first:
            float_array(xp, k, v, like=dtype, like_name=first, neg_inf=k in neg_inf)
    return xp, arrays, dtype


def float64_arrays(named: dict[str, Any], ndims: dict[str, tuple[int, ...]]) -> list[np.ndarray]:
    """The values of ``named`` as float64 NumPy arrays (lists and tuples accepted), each with one of its ``ndims``.

    Checked as :func:`float_inputs` does (finite reals, no strings); a wrong number of dimensions is a
    :class:`~attnsym.ShapeError` naming the argument. The small float64 checks of the literature's
    claims (:mod:`attnsym.numeric.performer`, ``linear_attention``, ``kernel_smoother``) use it.
    """
    _, arrays, _ = float_inputs({k: np.asarray(v) if isinstance(v, list | tuple) else v for k, v in named.items()})
    out = []
    for name, a in arrays.items():
        a = np.asarray(a, dtype=np.float64)
        if a.ndim not in ndims[name]:
            raise ShapeError(f"{name} must have {' or '.join(map(str, ndims[name]))} dimensions (got shape {a.shape})")
        out.append(a)
    return out


def bool_mask(xp: ModuleType, name: str, mask: Any, device: Any) -> Any:
    """``mask`` as a boolean array of ``xp`` on ``device`` (NumPy masks accepted with any library)."""
    if isinstance(mask, str | bytes):
        raise ShapeError(f"{name} must be a boolean array with True = may attend (got the string {mask!r})")
    mask = array_api_compat.to_device(asarray_in(xp, mask), device)
    if dtype_name(mask) != "bool":
        raise ShapeError(f"{name} must be a boolean array with True = may attend (got dtype {dtype_name(mask)}); "
                         f"an additive float mask (0 / -inf) converts with {name} = (m == 0), a 0/1 mask with "
                         f"{name} = (m != 0)")
    return mask


def finite_result(xp: ModuleType, value: Any, what: str, cause: Callable[[], str]) -> Any:
    """``value`` if it is finite; else a ShapeError saying that ``what`` overflowed and ``cause()``.

    ``cause`` is called only on failure: the sizes it reports (``amax`` of the inputs) cost a
    pass over each input, which a call that succeeds does not pay.
    """
    if not bool(xp.all(xp.isfinite(value))):
        raise ShapeError(f"{what} overflows {dtype_name(value)} for these finite inputs ({cause()}); "
                         "scale the inputs down" + (" or compute in float64" if dtype_name(value) == "float32" else ""))
    return value


def amax(xp: ModuleType, value: Any) -> float:
    """The largest absolute entry, as a Python float (0 for an empty array; NaN if any entry is NaN).

    ``max(max v, −min v)``: two reductions and no ``|v|`` array (a temporary the size of ``v``,
    whose fresh pages cost more than the second reduction).
    """
    if not math.prod(value.shape):
        return 0.0
    if isinstance(value, np.ndarray):  # the array's own reductions: the namespace's wrappers add 4 µs a call
        return max(float(value.max()), -float(value.min()))
    if hasattr(value, "detach"):  # a PyTorch tensor that records gradients
        value = value.detach()
    return max(float(xp.max(value)), -float(xp.min(value)))
