r"""Fused float32 kernels for the NumPy forward pass, compiled by Numba when it is installed (``attnsym[fast]``).

A forward pass of a small model is a chain of short element-wise steps between the matrix
products — GELU over the ``128 × 1536`` feed-forward activations, the softmax over twelve
``128 × 128`` score matrices, bias, residual and LayerNorm over ``128 × 384`` rows. NumPy runs
each step as several whole-array passes (GELU's rational erf is 28 of them), each a call that
takes and releases the GIL, so they cost more than the products on two cores and do not run
side by side on threads. Each kernel here is one compiled loop over the rows (SIMD, no
temporaries, no GIL), the same formulas as the array path of :mod:`attnsym.models.forward`
(:class:`~attnsym.models.forward.FusedPrimitives` is the implementation of the pass's primitives
built on them, chosen once per pass instead of :class:`~attnsym.models.forward.ArrayPrimitives`):

- :func:`bias_gelu` — ``h ← GELU(h + b)``, exact GELU with the float32 rational erf of
  :func:`~attnsym.models.forward.gelu_float32`;
- :func:`residual_layernorm` — ``a ← a + bias + residual`` (each optional), ``out ← LN(a)``;
- :func:`softmax_rows` — ``A ← softmax(S)`` per row (the kernel of :mod:`attnsym.numeric._kernels`,
  shared with the numeric fast path), the stable one (shift by the row maximum),
  ``exp`` by Cephes' float32 polynomial (relative error below 1e-6 on ``[-87, 0]``), weight 0
  for a ``-inf`` score (a masked key) and for any shifted score below ``-87`` (``e⁻⁸⁷ ≈ 1.6e-38``,
  float32's smallest normal), a row with no finite score all 0 — the fully-masked-row policy of
  :func:`attnsym.numeric.softmax`.

They take C-contiguous float32 NumPy arrays; the tests tie each to its array counterpart and the
whole fused forward pass to the array one and to PyTorch. :func:`available` says whether they
are used: Numba importable and not switched off (:func:`disabled`, or ``ATTNSYM_NUMBA=0`` in
the environment); the forward pass takes them for float32 passes over at least
:data:`~attnsym.models.forward.FUSED_MIN_TOKENS` tokens. Compiled code is cached on disk (Numba's
``cache=True``): the first process on a machine compiles the kernels (2.4 s on the 2-core
machines this project measures on), later ones load them (0.5–0.7 s, Numba's import included).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import BackendError, ShapeError
from ..numeric._kernels import lazily_compiled
from ._erf import ERF_P, ERF_Q

__all__ = ["available", "bias_gelu", "disabled", "load", "residual_layernorm", "softmax_rows"]

_STATE: dict[str, Any] = {"off": 0}
#: guards the one compilation; its own lock (not numeric._kernels'), re-entrant, so loading these kernels
#: while the shared softmax is compiled under numeric._kernels' lock cannot wait on itself
_LOCK = threading.RLock()

#: float32 constants of the kernels (Numba freezes module globals into the compiled code)
_F = np.float32
_INV_SQRT2 = _F(1 / math.sqrt(2.0))
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = (_F(c) for c in ERF_P)
_Q0, _Q1, _Q2, _Q3, _Q4 = (_F(c) for c in ERF_Q)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """The array path everywhere inside the block (for comparing the two, in tests and benchmarks)."""
    _STATE["off"] += 1
    try:
        yield
    finally:
        _STATE["off"] -= 1


def available() -> bool:
    """Whether the fused kernels are used: Numba importable, not :func:`disabled`, ``ATTNSYM_NUMBA`` not ``0``."""
    if _STATE["off"] or os.environ.get("ATTNSYM_NUMBA", "1") == "0":
        return False
    return _kernels() is not None


def load() -> bool:
    """Load (or, the first time on a machine, compile) every kernel for the signatures the forward pass uses.

    Otherwise that happens during the first pass that takes them; a benchmark or a server calls
    this first. Returns :func:`available`.

    >>> load()
    True
    """
    if not available():
        return False
    row, rows = np.zeros(2, np.float32), np.zeros((1, 2), np.float32)
    bias_gelu(rows, row)
    residual_layernorm(rows, row, rows, row, row, 1e-5, rows)
    residual_layernorm(rows, None, None, row, row, 1e-5, np.empty_like(rows))
    softmax_rows(rows, np.empty_like(rows))
    return True


def _kernels() -> dict[str, Any] | None:
    """The compiled kernels (compiled lazily, by signature, on first call), or None without Numba."""
    return lazily_compiled(_STATE, _LOCK, _compile)


def _compile(numba) -> dict[str, Any]:
    # no 'nnan'/'ninf': a masked score is -inf and must give weight 0; 'reassoc' lets the row sums vectorise
    jit = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy",
                     fastmath={"contract", "reassoc", "nsz", "arcp"})

    @jit
    def bias_gelu(h, b):  # pragma: no cover - compiled
        rows, width = h.shape
        for r in range(rows):
            row = h[r]
            for j in range(width):
                x = row[j] + b[j]
                z = x * _INV_SQRT2
                z = _F(-4.0) if z < _F(-4.0) else (_F(4.0) if z > _F(4.0) else z)
                z2 = z * z
                p = (((((_P0 * z2 + _P1) * z2 + _P2) * z2 + _P3) * z2 + _P4) * z2 + _P5) * z2 + _P6
                q = (((_Q0 * z2 + _Q1) * z2 + _Q2) * z2 + _Q3) * z2 + _Q4
                row[j] = _F(0.5) * x * (_F(1.0) + z * p / q)

    @jit
    def residual_layernorm(a, bias, residual, weight, beta, eps, out):  # pragma: no cover - compiled
        rows, width = a.shape
        for r in range(rows):
            ar, o = a[r], out[r]
            if bias is not None:
                for j in range(width):
                    ar[j] += bias[j]
            if residual is not None:
                res = residual[r]
                for j in range(width):
                    ar[j] += res[j]
            total = _F(0.0)
            for j in range(width):
                total += ar[j]
            mean = total / _F(width)
            square = _F(0.0)
            for j in range(width):
                c = ar[j] - mean
                square += c * c
            scale = _F(1.0) / np.sqrt(square / _F(width) + eps)
            for j in range(width):
                o[j] = (ar[j] - mean) * scale * weight[j] + beta[j]

    from ..numeric import _kernels  # the softmax is the numeric fast path's compiled primitive, shared

    shared = _kernels.compiled()
    assert shared is not None  # Numba imported above
    softmax_rows = shared["softmax_rows"]

    return {"bias_gelu": bias_gelu, "residual_layernorm": residual_layernorm, "softmax_rows": softmax_rows}


def _kernel(name: str, *arrays):
    """The compiled kernel ``name``, once its ``arrays`` (None: an omitted term) are C-contiguous float32 NumPy arrays."""
    kernels = _kernels()
    if kernels is None:
        raise BackendError(f"{name} needs Numba, which is not installed: pip install 'attnsym[fast]'")
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or a.dtype != np.float32:
            raise ShapeError(f"{name}: expected C-contiguous float32 NumPy arrays, got a {type(a).__name__} of "
                             f"{getattr(a, 'dtype', '?')}")
        if not a.flags.c_contiguous:
            raise ShapeError(f"{name}: expected C-contiguous float32 NumPy arrays, got a float32 array of shape "
                             f"{a.shape}, not C-contiguous")
    return kernels[name]


def bias_gelu(h: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``h ← GELU(h + b)`` in place for ``h`` ``(rows, f)`` and ``b`` ``(f,)``; returns ``h``.

    >>> h = np.array([[-1.0, 0.0, 2.0]], np.float32)
    >>> np.round(bias_gelu(h, np.zeros(3, np.float32)), 4)
    array([[-0.1587,  0.    ,  1.9545]], dtype=float32)
    """
    _kernel("bias_gelu", h, b)(h, b)
    return h


def residual_layernorm(a: np.ndarray, bias: np.ndarray | None, residual: np.ndarray | None,
                       weight: np.ndarray, beta: np.ndarray, eps: float, out: np.ndarray) -> np.ndarray:
    """``a ← a + bias + residual`` in place (each term optional), then ``out ← LayerNorm(a)``; returns ``out``.

    ``out`` may be ``a`` itself. LayerNorm over the last axis with the biased variance, as
    :func:`~attnsym.models.forward.layer_norm`.
    """
    _kernel("residual_layernorm", a, bias, residual, weight, beta, out)(a, bias, residual, weight, beta, np.float32(eps), out)
    return out


def softmax_rows(S: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``A ← softmax(S)`` over the last axis, for ``S`` and ``A`` of the same shape (``S`` unchanged); returns ``A``.

    Arrays of three or more axes need only be C-contiguous below their first axis (a range of
    heads of several texts): each leading entry is then one call.

    >>> S = np.array([[0.0, np.log(3.0), -np.inf]], np.float32)
    >>> np.round(softmax_rows(S, np.empty_like(S)), 6)
    array([[0.25, 0.75, 0.  ]], dtype=float32)
    """
    if S.shape != A.shape:
        raise ShapeError(f"softmax_rows: S has shape {S.shape} and A {A.shape}; expected the same shape")
    if S.ndim > 2 and not (S.flags.c_contiguous and A.flags.c_contiguous):
        for s, a in zip(S, A, strict=True):
            softmax_rows(s, a)
        return A
    _kernel("softmax_rows", S, A)(S.reshape(-1, S.shape[-1]), A.reshape(-1, A.shape[-1]))
    return A

