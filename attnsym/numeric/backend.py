"""Which array library runs the numeric code: NumPy, CuPy or PyTorch, found from the arrays.

Every numeric function opens with ``xp = array_namespace(X, W_Q, ...)`` and then uses only
``xp.*`` (the array API standard, through ``array-api-compat``), so one implementation serves
NumPy arrays, CuPy arrays and PyTorch tensors and returns the caller's own array type.

Rules
-----
* NumPy is the default: inputs that are not arrays (lists, scalars) run on NumPy.
* CuPy is imported only when the caller passes CuPy arrays or asks for ``backend="cupy"``.
  If CuPy imports but cannot run a kernel (no driver, no device), the request falls back to
  NumPy with a :class:`RuntimeWarning`.
* Arrays from two libraries in one call, or an object no library recognises, raise
  :class:`~attnsym.errors.BackendError` naming the types received.

The few operations the standard lacks (``erf``; in-place ``exp`` to save a pass over an
``n × n`` block) are dispatched here, once, per library, and so is the one product that
NumPy runs differently inside a fast-path call (:func:`matmul`, split over the worker pool
of :mod:`attnsym.numeric._pool`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import array_api_compat

from ..errors import BackendError
from . import _pool

__all__ = ["BACKENDS", "array_namespace", "asarray_in", "backend_name", "cupy_usable", "erf", "exp_inplace", "matmul", "matmuls"]

#: backend names accepted by ``backend=`` arguments
BACKENDS = ("numpy", "cupy", "torch")

_CUPY_STATE: dict[str, Any] = {}


def cupy_usable() -> tuple[bool, str]:
    """Whether CuPy imports *and* runs a kernel here, with the reason when it does not.

    The answer is computed once per process. CuPy is imported by this call (and only by it
    or by passing CuPy arrays).

    Returns
    -------
    (bool, str)
        ``(True, "")`` when a small reduction ran on the device, else ``(False, why)``.
    """
    if "ok" not in _CUPY_STATE:
        try:
            import cupy

            value = int(cupy.arange(4).sum())  # compiles and launches a kernel
            if value != 6:  # pragma: no cover - a broken device
                raise RuntimeError(f"a test reduction returned {value}, expected 6")
            _CUPY_STATE.update(ok=True, why="")
        except Exception as exc:  # ImportError, CUDARuntimeError, CompileException, ...
            _CUPY_STATE.update(ok=False, why=f"{type(exc).__name__}: {exc}".strip())
    return _CUPY_STATE["ok"], _CUPY_STATE["why"]


def _named_namespace(name: str) -> ModuleType:
    if name == "numpy":
        import array_api_compat.numpy as xp

        return xp
    if name == "torch":
        try:
            import array_api_compat.torch as xp_torch
        except ImportError as exc:
            raise BackendError(f"backend='torch' needs PyTorch, which does not import here ({exc})") from None
        return xp_torch
    if name == "cupy":
        ok, why = cupy_usable()
        if not ok:
            warnings.warn(f"backend='cupy' was asked for but CuPy cannot run here ({why}); using NumPy instead",
                          RuntimeWarning, stacklevel=3)
            return _named_namespace("numpy")
        import array_api_compat.cupy as xp_cupy

        return xp_cupy
    raise BackendError(f"backend must be one of {BACKENDS} or None (got {name!r})")


def array_namespace(*arrays: Any, backend: str | None = None) -> ModuleType:
    """The array-API namespace that runs computations on ``arrays``.

    Parameters
    ----------
    *arrays
        Arrays (``None`` entries are ignored). Lists and Python scalars count as NumPy input.
    backend : {"numpy", "cupy", "torch"}, optional
        Ask for a library explicitly; the arrays are then converted with :func:`asarray_in`.

    Returns
    -------
    module
        An ``array_api_compat`` namespace (``array_api_compat.numpy``, ``.cupy`` or ``.torch``).

    Raises
    ------
    BackendError
        Arrays of two different libraries, arrays of a library other than NumPy, CuPy and
        PyTorch, or an unknown ``backend`` name.

    Examples
    --------
    >>> array_namespace(np.ones(2)).__name__
    'array_api_compat.numpy'
    >>> array_namespace([1.0, 2.0]).__name__
    'array_api_compat.numpy'
    """
    if backend is not None:
        return _named_namespace(backend)
    found = [a for a in arrays if a is not None and array_api_compat.is_array_api_obj(a)]
    if not found:
        return _named_namespace("numpy")
    try:
        xp = array_api_compat.array_namespace(*found)
    except TypeError:
        kinds = sorted({f"{type(a).__module__}.{type(a).__name__}" for a in found})
        raise BackendError(
            f"all arrays of one call must come from one array library (got {', '.join(kinds)}); "
            "convert them first, e.g. numpy.asarray(t.cpu()) or torch.asarray(a)"
        ) from None
    if backend_name(xp) not in BACKENDS:
        kind = type(found[0])
        raise BackendError(
            f"attnsym.numeric runs on {', '.join(BACKENDS)} arrays (got {kind.__module__}.{kind.__name__}); "
            "convert the arrays first, e.g. with numpy.asarray"
        )
    return xp


def backend_name(xp: ModuleType) -> str:
    """``"numpy"``, ``"cupy"`` or ``"torch"`` for a namespace from :func:`array_namespace`.

    >>> backend_name(array_namespace(np.ones(1)))
    'numpy'
    """
    for name in BACKENDS:
        if getattr(array_api_compat, f"is_{name}_namespace")(xp):
            return name
    return getattr(xp, "__name__", repr(xp))


def asarray_in(xp: ModuleType, value: Any) -> Any:
    """``value`` as an array of the namespace ``xp`` (copying across libraries when needed)."""
    if value is None:
        return None
    name = backend_name(xp)
    if name == "cupy" and not array_api_compat.is_cupy_array(value):
        import cupy

        return cupy.asarray(_to_numpy(value))
    if name == "numpy" and array_api_compat.is_cupy_array(value):
        return value.get()
    if name == "numpy" and array_api_compat.is_torch_array(value):
        return value.detach().cpu().numpy()
    if name == "torch" and array_api_compat.is_cupy_array(value):
        return xp.asarray(value.get())
    return xp.asarray(value)


def _to_numpy(value: Any) -> Any:
    import numpy as np

    if array_api_compat.is_torch_array(value):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def exp_inplace(xp: ModuleType, x: Any) -> Any:
    """``exp(x)``, computed in place where the library allows it (saves an ``n × n`` buffer)."""
    if array_api_compat.is_numpy_array(x) or array_api_compat.is_cupy_array(x):
        return _np_like_exp(x)
    if array_api_compat.is_torch_array(x) and not x.requires_grad:
        return x.exp_()
    return xp.exp(x)


def matmul(xp: ModuleType, A: Any, B: Any, scratch: str | None = None) -> Any:
    """``A @ B``; NumPy arrays inside a fast-path call split the rows of ``A`` across the worker pool.

    There BLAS runs at one thread (:func:`attnsym.numeric._pool.one_blas_thread`), so a long
    product — the projections ``X W``, the weight gradients ``Xᵀ dQ`` — is cut into row
    blocks on the pool instead; everywhere else this is ``xp.matmul``. With ``scratch`` (a
    name), a fast-path product is written into the calling thread's
    :func:`~attnsym.numeric._pool.workspace` of that name: only for a result that does not
    leave the call.

    >>> matmul(array_namespace(np.ones((2, 3))), np.ones((2, 3)), np.ones((3, 1))).ravel()
    array([3., 3.])
    """
    return matmuls(xp, [(A, B)], [scratch])[0]


def matmuls(xp: ModuleType, pairs: list[tuple[Any, Any]], scratch: Sequence[str | None] | None = None) -> list[Any]:
    """``[A @ B for A, B in pairs]``, as :func:`matmul`; in a fast-path call all their row blocks share one wait.

    >>> [M.ravel() for M in matmuls(array_namespace(np.ones(1)), [(np.ones((1, 2)), np.ones((2, 1)))] * 2)]
    [array([2.]), array([2.])]
    """
    if _pool.active() and all(array_api_compat.is_numpy_array(M) for pair in pairs for M in pair):
        return _pool.matmuls(pairs, scratch)
    return [xp.matmul(A, B) for A, B in pairs]


def _np_like_exp(x: Any) -> Any:
    if array_api_compat.is_cupy_array(x):
        import cupy

        return cupy.exp(x, out=x)
    import numpy as np

    return np.exp(x, out=x)


def erf(xp: ModuleType, x: Any) -> Any:
    """The error function elementwise (the array API standard has none).

    NumPy arrays use :func:`scipy.special.erf`, CuPy arrays ``cupyx.scipy.special.erf``,
    PyTorch tensors :func:`torch.erf`.

    >>> float(erf(array_namespace(np.zeros(1)), np.array([0.5]))[0])  # math.erf(0.5)
    0.5204998778130465
    """
    name = backend_name(xp)
    if name == "torch":
        import torch

        return torch.erf(x)
    if name == "cupy":
        from cupyx.scipy.special import erf as cupy_erf

        return cupy_erf(x)
    from scipy.special import erf as scipy_erf

    return xp.asarray(scipy_erf(x))
