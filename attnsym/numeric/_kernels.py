r"""Compiled element-wise kernels shared by the numeric fast path and :mod:`attnsym.models` (Numba, extra ``fast``).

One primitive, the exponential of a row shifted by a constant, and the four loops built on it:

- :func:`exp_rowsum` — ``S ← exp(S)`` and the row sums of the result, in one loop: the forward's
  one pass over a score block of :mod:`attnsym.numeric._fast` (its shift is folded into the
  product before it; NumPy's path folds the row sums into the product after it instead);
- :func:`exp_and_dscores` — ``A ← exp(A)``, ``dS ← A ⊙ dS``: the backward's two passes fused
  into one loop (``A`` holds ``S − L``, ``dS`` holds ``dA − D``);
- :func:`softmax_rows` — ``A ← softmax(S)`` per row, the stable one (shift by the row
  maximum), the kernel of the real-model forward (:mod:`attnsym.models._fused`);
- :func:`exp_rowsum_moment` — ``S ← exp(S)`` with the row sums, the first moments ``Σ e^s s``
  and the row maxima in one loop: the streamed head statistics of :mod:`attnsym.audits.stream`.

**The float32 exp** is Cephes' ``expf``: ``exp(x) = 2^k · e^f`` with ``k = round(x·log₂e)``
and ``f = x − k·ln 2`` (ln 2 in two parts, so ``f`` is exact), ``e^f`` by a degree-7 polynomial
on ``|f| ≤ ln2/2``, ``2^k`` built from its exponent bits. Relative error at most **2e-7**
(about 2 float32 ulps) for ``x`` in ``[-87, 88]``, measured against float64 ``exp`` by the
tests (``tests/test_kernels.py``) over 2·10⁶ points of the range; a weight ``e^x`` with
``x ≤ -87`` (below float32's smallest normal, 1.2e-38) is 0, as is ``-inf`` (a masked key);
NaN stays NaN; ``x`` above 88 is taken as 88 (the fast path's shifted scores stay below 60, and a
row whose sum says otherwise is redone exactly: :data:`attnsym.numeric._fast.MAX_ROW_SUM`).
The kernels are float32 only: a float64 loop over the compiled libm ``exp`` ran at
0.23 G elements/s here against NumPy's 1.18 G/s (its SIMD ``exp``), so float64 stays on NumPy.
Measured on one 512 × 256 block, one thread, interleaved (a copy of the block subtracted):
NumPy's float32 ``exp`` 47 µs (2.8 G/s), and with the row sums 74 µs; :func:`exp_rowsum` 30 µs
(4.4 G/s) with them. Earlier, on the same block: ``exp`` then ``dS *= A`` in NumPy 86 µs,
:func:`exp_and_dscores` 69 µs.

The loops are compiled with ``nogil=True`` (the fast path's worker threads run them side by
side), without ``parallel`` (the worker pool gives the parallelism) and with the fast-math
flags that cannot change a result here (``contract``, ``arcp``, ``nsz``; no ``nnan``/``ninf``:
``-inf`` scores must give 0; ``reassoc`` only where a row sum is taken). They take C-contiguous
float32 NumPy arrays. :func:`available` says whether they are used: Numba importable and
``ATTNSYM_NUMBA`` not ``0`` in the environment (tests and benchmarks set it to run the NumPy
path). Numba is imported on the first call of :func:`compiled`, never by ``import attnsym``;
compiled code is cached on disk (Numba's ``cache=True``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["EXP_MAX", "EXP_MIN", "EXP_RTOL", "available", "compiled", "exp_and_dscores", "exp_rowsum", "exp_rowsum_moment",
           "softmax_rows"]

#: weights e^x with x at or below this are 0 (float32's smallest normal is e^-87.3)
EXP_MIN = -87.0
#: arguments above this are taken as this (e^88 = 1.65e38 < float32's largest, 3.4e38)
EXP_MAX = 88.0
#: the float32 exp's relative error bound on [EXP_MIN, EXP_MAX], checked by the tests
EXP_RTOL = 2e-7

_STATE: dict[str, Any] = {}
_LOCK = threading.RLock()  # re-entrant: models._fused compiles its kernels, then these, on one thread

#: float32 constants of the kernels (Numba freezes module globals into the compiled code)
_F = np.float32
_LOG2E, _LN2_HI, _LN2_LO = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
_E0, _E1, _E2, _E3, _E4, _E5 = (_F(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_LO32, _HI32 = _F(EXP_MIN), _F(EXP_MAX)

#: the compiled float32 exp, set by :func:`_compile`. The kernels reach it as a module global:
#: Numba keys its disk cache on a function's closure cells, and a dispatcher in a cell pickles
#: with a new uuid in every process, so as a closure each process compiled the kernels again
#: (1.1-1.6 s on its first call here) and added a file to the cache.
_expf: Any = None
#: a row scaled by its powers of two and summed, set by :func:`_compile`: compiled with 'reassoc' (the sum
#: vectorises), which the exp's polynomial must not be
_scale_and_sum: Any = None
#: a row scaled by its powers of two, its sum and its first moment, set by :func:`_compile` (as _scale_and_sum)
_scale_sum_moment: Any = None


def available() -> bool:
    """Whether the kernels are used: ``ATTNSYM_NUMBA`` is not ``0`` and Numba is importable."""
    if os.environ.get("ATTNSYM_NUMBA", "1") == "0":
        return False
    return compiled() is not None


def lazily_compiled(state: dict[str, Any], lock, compile_with: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
    """``compile_with(numba)`` once per ``state`` (double-checked under ``lock``), or None without Numba.

    Shared by this module and :mod:`attnsym.models._fused`, each with its own state and re-entrant
    lock: one lock for both deadlocked with a cold Numba cache (the fused kernels' compilation
    calls :func:`compiled`).
    """
    if "kernels" not in state:
        with lock:
            if "kernels" not in state:
                try:
                    import numba
                except ImportError:
                    state["kernels"] = None
                else:
                    state["kernels"] = compile_with(numba)
    return state["kernels"]


def compiled() -> dict[str, Any] | None:
    """The compiled kernels (each compiled by signature on its first call), or None without Numba."""
    return lazily_compiled(_STATE, _LOCK, _compile)


def _compile(numba) -> dict[str, Any]:
    flags = {"contract", "arcp", "nsz"}
    jit = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags)
    jit_sum = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags | {"reassoc"})

    inline = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags,
                        inline="always")

    global _expf  # a module global, not a closure cell: see _expf above

    @inline
    def _expf(t):  # pragma: no cover - compiled
        """e^t as (e^f, the float32 bits of 2^k): e^t = e^f · 2^k; bits 0 (weight 0) at or below -87 and -inf."""
        keep = t > _LO32
        t = min(max(t, _LO32), _HI32)
        k = np.floor(t * _LOG2E + _F(0.5))
        f = t - k * _LN2_HI - k * _LN2_LO
        y = ((((_E0 * f + _E1) * f + _E2) * f + _E3) * f + _E4) * f + _E5
        return y * f * f + f + _F(1.0), ((np.int32(k) + np.int32(127)) << 23) if keep else np.int32(0)

    global _scale_and_sum  # a module global too

    @jit_sum
    def _scale_and_sum(x, power):  # pragma: no cover - compiled
        """x ← x · power (exact: powers of two) and the sum of the result, vectorised ('reassoc' only here)."""
        total = _F(0.0)
        for j in range(x.shape[0]):
            v = x[j] * power[j]
            x[j] = v
            total += v
        return total

    @jit
    def exp_rowsum(S, sums):  # pragma: no cover - compiled
        # the exp without 'reassoc' (it would reorder the polynomial, whose error bound is stated), the sum with it
        rows, n = S.shape
        bits = np.empty(n, np.int32)
        power = bits.view(np.float32)
        for r in range(rows):
            x = S[r]
            for j in range(n):
                e, b = _expf(x[j])
                x[j] = e
                bits[j] = b
            sums[r] += _scale_and_sum(x, power)

    global _scale_sum_moment  # a module global too

    @jit_sum
    def _scale_sum_moment(x, power, xs):  # pragma: no cover - compiled
        """x ← x · power, and the sums of x and of x · xs ('reassoc': vectorised)."""
        total = _F(0.0)
        moment = _F(0.0)
        for j in range(x.shape[0]):
            v = x[j] * power[j]
            x[j] = v
            total += v
            moment += v * xs[j]
        return total, moment

    @jit
    def exp_rowsum_moment(S, sums, moments, maxima):  # pragma: no cover - compiled
        rows, n = S.shape
        bits = np.empty(n, np.int32)
        power = bits.view(np.float32)
        xs = np.empty(n, np.float32)
        for r in range(rows):
            x = S[r]
            top = maxima[r]
            for j in range(n):
                v = x[j]
                top = max(top, v)
                e, b = _expf(v)
                x[j] = e
                bits[j] = b
                xs[j] = v if b != 0 else _F(0.0)  # a weight of 0 (masked: -inf) adds nothing to the moment
            total, moment = _scale_sum_moment(x, power, xs)
            sums[r] += total
            moments[r] += moment
            maxima[r] = top

    @jit
    def exp_and_dscores(A, dS):  # pragma: no cover - compiled
        rows, n = A.shape
        bits = np.empty(n, np.int32)
        power = bits.view(np.float32)
        for r in range(rows):
            a, d = A[r], dS[r]
            for j in range(n):
                e, b = _expf(a[j])
                a[j] = e
                bits[j] = b
            for j in range(n):
                v = a[j] * power[j]
                a[j] = v
                d[j] *= v

    @jit_sum
    def softmax_rows(S, A):  # pragma: no cover - compiled
        rows, n = S.shape
        bits = np.empty(n, np.int32)
        for r in range(rows):
            s, p = S[r], A[r]
            top = s[0]
            for j in range(1, n):
                top = max(top, s[j])
            if top == -np.inf:  # no allowed key: the row stays 0
                top = _F(0.0)
            power = bits.view(np.float32)
            for j in range(n):
                e, b = _expf(s[j] - top)
                p[j] = e
                bits[j] = b
            for j in range(n):
                p[j] *= power[j]
            total = _F(0.0)
            for j in range(n):
                total += p[j]
            inv = _F(1.0) / total if total > _F(0.0) else _F(0.0)
            for j in range(n):
                p[j] *= inv

    return {"exp_rowsum": exp_rowsum, "exp_and_dscores": exp_and_dscores, "softmax_rows": softmax_rows,
            "exp_rowsum_moment": exp_rowsum_moment}


def _checked(name: str, *arrays: np.ndarray):
    """The kernel ``name``, once ``arrays`` are C-contiguous float32 NumPy arrays."""
    from ..errors import BackendError, ShapeError

    kernels = compiled()
    if kernels is None:
        raise BackendError(f"{name} needs Numba, which is not installed: pip install 'attnsym[fast]'")
    for a in arrays:
        if not isinstance(a, np.ndarray) or a.dtype != np.float32:
            raise ShapeError(f"{name}: expected C-contiguous float32 NumPy arrays, got a {type(a).__name__} of "
                             f"{getattr(a, 'dtype', '?')}")
        if not a.flags.c_contiguous:
            raise ShapeError(f"{name}: expected C-contiguous float32 NumPy arrays, got a float32 array of shape "
                             f"{a.shape}, not C-contiguous")
    return kernels[name]


def _rows(M: np.ndarray) -> np.ndarray:
    """A C-contiguous array as 2-D rows (last axis kept; a scalar or vector as one row)."""
    return M.reshape(-1, M.shape[-1] if M.ndim else 1)


def exp_rowsum(S: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """``S ← exp(S)`` in place and ``sums += S.sum(axis=1)`` in the same pass, for float32 ``S`` (rows, n) and ``sums`` (rows,).

    The forward's pass over a score block when the row sums are not taken by the product
    (its ``V`` without the column of ones: the product is then 64 wide, not 65). Returns ``S``.

    >>> S = np.log(np.array([[0.25, 0.5], [1.0, 2.0]], np.float32))
    >>> sums = np.ones(2, np.float32)
    >>> np.round(exp_rowsum(S, sums), 6), np.round(sums, 6)
    (array([[0.25, 0.5 ],
           [1.  , 2.  ]], dtype=float32), array([1.75, 4.  ], dtype=float32))
    """
    from ..errors import ShapeError

    if S.ndim != 2 or sums.shape != S.shape[:1]:
        raise ShapeError(f"exp_rowsum: S has shape {S.shape} and sums {sums.shape}; expected (rows, n) and (rows,)")
    _checked("exp_rowsum", S, sums)(S, sums)
    return S


def exp_rowsum_moment(S: np.ndarray, sums: np.ndarray, moments: np.ndarray, maxima: np.ndarray) -> np.ndarray:
    """``S ← exp(S)``, ``sums += Σ_j exp(S_j)``, ``moments += Σ_j exp(S_j) S_j``, ``maxima ← max(maxima, max_j S_j)``.

    One pass over float32 rows (``S`` (rows, n), the others (rows,)): the streamed head
    statistics' pass (:mod:`attnsym.audits.stream`), where the row sums and the first moment of the
    shifted scores give the entropy ``log ℓ − moment / ℓ`` and the maximum the largest weight.
    A ``-inf`` score (a masked key) adds 0 to the sums. Returns ``S``.

    >>> S = np.log(np.array([[0.25, 0.75, 0.0]], np.float32))
    >>> sums, moments, maxima = np.zeros(1, np.float32), np.zeros(1, np.float32), np.full(1, -np.inf, np.float32)
    >>> _ = exp_rowsum_moment(S, sums, moments, maxima)
    >>> np.round(sums, 6), np.round(moments, 5), np.round(maxima, 5)   # 0.25 ln 0.25 + 0.75 ln 0.75
    (array([1.], dtype=float32), array([-0.56233], dtype=float32), array([-0.28768], dtype=float32))
    """
    from ..errors import ShapeError

    if S.ndim != 2 or any(a.shape != S.shape[:1] for a in (sums, moments, maxima)):
        raise ShapeError(f"exp_rowsum_moment: S has shape {S.shape}, sums {sums.shape}, moments {moments.shape}, "
                         f"maxima {maxima.shape}; expected (rows, n) and (rows,)")
    _checked("exp_rowsum_moment", S, sums, moments, maxima)(S, sums, moments, maxima)
    return S


def exp_and_dscores(A: np.ndarray, dS: np.ndarray) -> None:
    """``A ← exp(A)`` and ``dS ← A ⊙ dS`` in one pass, for float32 ``A`` (``S − L``) and ``dS`` (``dA − D``) of one shape.

    >>> A = np.log(np.array([[0.25, 0.75]], np.float32))
    >>> dS = np.array([[2.0, -1.0]], np.float32)
    >>> exp_and_dscores(A, dS)
    >>> np.round(A, 6), np.round(dS, 6)
    (array([[0.25, 0.75]], dtype=float32), array([[ 0.5 , -0.75]], dtype=float32))
    """
    from ..errors import ShapeError

    if A.shape != dS.shape:
        raise ShapeError(f"exp_and_dscores: A has shape {A.shape} and dS {dS.shape}; expected the same shape")
    _checked("exp_and_dscores", A, dS)(_rows(A), _rows(dS))


def softmax_rows(S: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``A ← softmax(S)`` over the last axis of 2-D C-contiguous float32 ``S`` and ``A`` (``S`` unchanged); returns ``A``.

    The checked, N-dimensional entry point is :func:`attnsym.models._fused.softmax_rows`.

    >>> S = np.array([[0.0, np.log(3.0), -np.inf]], np.float32)
    >>> np.round(softmax_rows(S, np.empty_like(S)), 6)
    array([[0.25, 0.75, 0.  ]], dtype=float32)
    """
    kernels = compiled()
    if kernels is None:
        from ..errors import BackendError

        raise BackendError("softmax_rows needs Numba, which is not installed: pip install 'attnsym[fast]'")
    kernels["softmax_rows"](S, A)
    return A
