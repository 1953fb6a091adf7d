r"""Compiled element-wise kernels of the numeric fast path and the real-model forward (Numba, extra ``fast``).

The one registry of attnsym's compiled kernels (:func:`compiled`), with one switch
(:func:`available`, :func:`disabled`) and one input checker. One primitive, the exponential of a
row shifted by a constant, and the five loops built on it:

- :func:`exp_rowsum` — ``S ← exp(S)`` and the row sums of the result, in one loop: the forward's
  one pass over a score block of :mod:`attnsym.numeric._fast` (its shift is folded into the
  product before it; NumPy's path folds the row sums into the product after it instead);
- :func:`exp_and_dscores` — ``A ← exp(A)``, ``dS ← A ⊙ dS``: the backward's two passes fused
  into one loop (``A`` holds ``S − L``, ``dS`` holds ``dA − D``);
- :func:`softmax_rows` — ``A ← softmax(S)`` per row, the stable one (shift by the row
  maximum), weight 0 for a ``-inf`` score (a masked key) and for any shifted score below ``-87``,
  a row with no finite score all 0 — the fully-masked-row policy of :func:`attnsym.numeric.softmax`;
  the real-model forward's softmax;
- :func:`exp_rowsum_moment` — ``S ← exp(S)`` with the row sums, the first moments ``Σ e^s s``
  and the row maxima in one loop: the streamed head statistics of :mod:`attnsym.audits.stream`;
- :func:`attend_rows` — the lean forward's rows of one head, whole: per key block a BLAS
  product ``c·Q Kᵀ``, the exp shifted by the first block's row maximum with the row sums, and
  ``acc += P V`` accumulated by BLAS (``β = 1``); its products call SciPy's ``sgemm`` from the
  compiled loop (:func:`rows_kernel`), so a task is one call with no Python per block.

and two loops of the real-model forward (:class:`attnsym.models.forward.FusedPrimitives`, the pass's
primitives built on them, chosen once per pass for float32 NumPy passes of at least
:data:`~attnsym.models.forward.FUSED_MIN_TOKENS` tokens), each one compiled loop over the rows
(no temporaries, no GIL) instead of NumPy's several whole-array passes — the same formulas as the
array primitives they replace:

- :func:`bias_gelu` — ``h ← GELU(h + b)``, exact GELU with the float32 rational erf of
  :func:`attnsym.numeric.gelu_float32` (:data:`~attnsym.numeric.activations.ERF_P`, ``ERF_Q``);
- :func:`residual_layernorm` — ``a ← a + bias + residual`` (each optional), ``out ← LN(a)``
  (:func:`attnsym.numeric.layer_norm`).

**The float32 exp**: ``exp(x) = 2^k · e^f`` with ``k = round(x·log₂e)`` and ``f = x − k·ln 2``
(ln 2 in two parts, so ``f`` is exact), ``e^f = 1 + f + f²·p(f)`` with ``p`` of degree 4, the
minimax polynomial of the relative error on ``|f| ≤ ln2/2`` (:data:`EXP_POLY`; 3.8e-9 in exact
arithmetic, a test refits it), and ``2^k`` written straight into the float's exponent bits. The
rounding adds 1.5·2²³ (the integer lands in the low bits of the sum: no ``floor``, no
conversion) and the bits are reinterpreted in registers (:func:`_float32_bits`,
:func:`_bits_float32`), so the loop is one pass of vector instructions and no array of powers
(the first version, Cephes' ``expf`` with a degree-7 polynomial, ``floor`` and a second pass
over a bits array, took 1.58 ns an element here against 1.37). Relative error at most
**2e-7** (8.5e-8 measured over 1.3·10⁷ points) for ``x`` in ``[-87, 88]``, checked against float64
``exp`` by the tests (``tests/test_kernels.py``) over 2·10⁶ points of the range; a weight ``e^x``
with ``x ≤ -87`` (below float32's smallest normal, 1.2e-38) is 0, as is ``-inf`` (a masked key);
NaN stays NaN; ``x`` above 88 is taken as 88 (the fast path's shifted scores stay below 60, and
a row whose sum says otherwise is redone exactly: :data:`attnsym.numeric._fast.MAX_ROW_SUM`).
Those clamps and the select cost a quarter of the exp's time (its 8-wide loop runs short of
AVX2's 16 registers); the forward's rows skip them where a bound proves them idle
(:data:`CLAMP_REACH`), with the same bits.
No loop that inlines the exp is compiled with ``reassoc``: it would be free to fold
``(y + 1.5·2²³) − 1.5·2²³`` back to ``y``; the row sums are taken by separate loops that are.
The kernels are float32 only: a float64 loop over the compiled libm ``exp`` ran at
0.23 G elements/s here against NumPy's 1.18 G/s (its SIMD ``exp``), so float64 stays on NumPy.
Measured on 16 × 256 to 512 × 256 blocks, one thread, a copy of the block subtracted (2-core
AMD EPYC, LLVM target ``znver1``, the other core busy): NumPy's float32 ``exp`` 3.7-4.1 ns an
element, :func:`exp_rowsum` 1.8 ns with the row sums before this exp, and 1.5 ns with it.

The loops are compiled with ``nogil=True`` (the fast path's worker threads run them side by
side), without ``parallel`` (the worker pool gives the parallelism) and with the fast-math
flags that cannot change a result here (``contract``, ``arcp``, ``nsz``; no ``nnan``/``ninf``:
``-inf`` scores must give 0; ``reassoc`` only where a row sum is taken). They take C-contiguous
float32 NumPy arrays. :func:`available` says whether they are used: Numba importable, not
:func:`disabled`, and ``ATTNSYM_NUMBA`` not ``0`` in the environment (tests and benchmarks set it
to run the NumPy path). Numba is imported on the first call of :func:`compiled`, never by
``import attnsym``; compiled code is cached on disk (Numba's ``cache=True``): the first process
on a machine compiles a kernel on its first call, later ones load it (:func:`load` does that for
the forward pass's kernels up front).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import BackendError, ShapeError
from . import _pool
from .activations import ERF_P, ERF_Q

__all__ = ["CLAMP_REACH", "EXP_MAX", "EXP_MIN", "EXP_POLY", "EXP_RTOL", "NO_TILES", "attend_rows", "available", "bias_gelu",
           "compiled", "disabled", "exp_and_dscores", "exp_rowsum", "exp_rowsum_moment", "load", "residual_layernorm",
           "rows_kernel", "softmax_rows"]

#: weights e^x with x at or below this are 0 (float32's smallest normal is e^-87.3)
EXP_MIN = -87.0
#: arguments above this are taken as this (e^88 = 1.65e38 < float32's largest, 3.4e38)
EXP_MAX = 88.0
#: the float32 exp's relative error bound on [EXP_MIN, EXP_MAX], checked by the tests
EXP_RTOL = 2e-7
#: a forward row whose scores' reach ``c·‖q_i‖·max_j ‖k_j‖ + |t_i|`` (``t_i`` its shift) is below this takes the
#: exp without clamps (:func:`attend_rows`): every ``s_ij − t_i`` then lies in (EXP_MIN, EXP_MAX] with 7 to spare
#: for the rounding of the scores and norms (relative 1e-5 at d = 64), where the clamps change nothing. Measured on
#: a 1024 × 256 block, one thread: 1.11-1.13 ns an element against 1.51-1.52 with the clamps.
CLAMP_REACH = np.float32(80.0)
#: the compiled forward rows' ``tiles`` when they keep nothing (:func:`rows_kernel`): no key block
NO_TILES = np.empty((0, 1, 1), np.float32)

#: the compiled kernels (key "kernels", once compiled; None without Numba) and the depth of :func:`disabled` ("off")
_STATE: dict[str, Any] = {"off": 0}
_LOCK = threading.Lock()  # guards the one compilation

#: float32 constants of the kernels (Numba freezes module globals into the compiled code)
_F = np.float32
_LOG2E, _LN2_HI, _LN2_LO = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
#: p(f) of e^f = 1 + f + f²·p(f), highest power first: the minimax polynomial of the relative error on
#: |f| ≤ ln2/2 (linear programming on a grid: 3.1e-9, 3.8e-9 with the coefficients rounded to float32, in exact
#: arithmetic; tests/test_kernels.py refits it)
EXP_POLY = tuple(_F(c) for c in (1.381461275741458e-3, 8.368710055947304e-3, 4.166838899254799e-2,
                                 1.666652113199234e-1, 4.999999403953552e-1))
_P4E, _P3E, _P2E, _P1E, _P0E = EXP_POLY
#: 1.5·2²³: y + _ROUND rounds y to an integer held in the sum's low bits (|y| < 2²²), whose float32 bits are _ROUND_BITS + k
_ROUND, _ROUND_BITS = _F(12582912.0), np.int32(0x4B400000)
_LO32, _HI32 = _F(EXP_MIN), _F(EXP_MAX)
_INV_SQRT2 = _F(1 / math.sqrt(2.0))
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = (_F(c) for c in ERF_P)
_Q0, _Q1, _Q2, _Q3, _Q4 = (_F(c) for c in ERF_Q)

#: the compiled float32 exp, set by :func:`_compile`. The kernels reach it as a module global:
#: Numba keys its disk cache on a function's closure cells, and a dispatcher in a cell pickles
#: with a new uuid in every process, so as a closure each process compiled the kernels again
#: (1.1-1.6 s on its first call here) and added a file to the cache.
_expf: Any = None
#: e^t's two factors (e^f, 2^k) with no clamp, shared by _expf and _expf_in_range (set by :func:`_compile` too)
_exp_factors: Any = None
#: the same exp without its clamps, for arguments known to lie in (EXP_MIN, EXP_MAX] (set by :func:`_compile` too)
_expf_in_range: Any = None
#: a float32's bits as an int32 and back (LLVM bitcasts, in registers), set by :func:`_compile` (module globals too)
_float32_bits: Any = None
_bits_float32: Any = None
#: the sum of a row, set by :func:`_compile`: compiled with 'reassoc' (the sum vectorises), which the exp must not be
_row_sum: Any = None
#: the sum of a row's squares, set by :func:`_compile` (as _row_sum)
_squares: Any = None
#: a row's sum and its first moment against another row (masked entries 0), set by :func:`_compile` (as _row_sum)
_sum_moment: Any = None
#: the largest entry of a row of finite numbers, set by :func:`_compile` ('nnan', 'ninf', 'reassoc': it vectorises)
_row_max: Any = None
#: column-major ``C ← α·op(A)·op(B) + β·C`` through SciPy's BLAS ``sgemm`` (the function is an argument: its
#: address changes from process to process, and the disk cache must not hold it), set by :func:`_compile`
_gemm: Any = None
#: ``ord("N")``, ``ord("T")``: sgemm's no-transpose and transpose flags
_NO, _TRANSPOSED = np.uint8(78), np.uint8(84)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """NumPy's operations everywhere inside the block, no compiled kernel (to compare the two, in tests and benchmarks).

    >>> with disabled():
    ...     available()
    False
    """
    with _LOCK:
        _STATE["off"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["off"] -= 1


def available() -> bool:
    """Whether the kernels are used: Numba importable, not :func:`disabled`, ``ATTNSYM_NUMBA`` not ``0``."""
    if _STATE["off"] or os.environ.get("ATTNSYM_NUMBA", "1") == "0":
        return False
    return compiled() is not None


def compiled() -> dict[str, Any] | None:
    """The compiled kernels by name (each compiled by signature on its first call), or None without Numba."""
    if "kernels" not in _STATE:
        with _LOCK:
            if "kernels" not in _STATE:
                try:
                    import numba
                except ImportError:
                    _STATE["kernels"] = None
                else:
                    _STATE["kernels"] = _compile(numba)
    return _STATE["kernels"]


def load() -> bool:
    """Load (or, the first time on a machine, compile) the forward pass's kernels for the signatures it uses.

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


def _compile(numba) -> dict[str, Any]:
    """Every kernel by name: the exp and row-sum primitives first (module globals), then the loops built on them."""
    flags = {"contract", "arcp", "nsz"}
    jit = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags)
    jit_sum = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags | {"reassoc"})
    inline = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy", fastmath=flags,
                        inline="always")
    jit_max = numba.njit(nogil=True, cache=True, boundscheck=False, error_model="numpy",
                         fastmath=flags | {"reassoc", "nnan", "ninf"})
    _compile_primitives(numba, jit_sum, inline)
    return {**_compile_exp_loops(jit), **_compile_forward_loops(jit_sum), **_compile_attention(jit, jit_max, inline)}


def _compile_primitives(numba, jit_sum, inline) -> None:
    """The float32 exp, its bit casts and the row sums, set as module globals (see :data:`_expf`)."""
    int32, float32 = numba.types.int32, numba.types.float32

    # module globals, not closure cells: see _expf
    global _float32_bits, _bits_float32, _exp_factors, _expf, _expf_in_range, _row_sum, _squares, _sum_moment

    @numba.extending.intrinsic
    def _float32_bits(typingctx, x):  # pragma: no cover - compiled
        return int32(float32), lambda context, builder, sig, args: builder.bitcast(args[0], context.get_value_type(int32))

    @numba.extending.intrinsic
    def _bits_float32(typingctx, bits):  # pragma: no cover - compiled
        return float32(int32), lambda context, builder, sig, args: builder.bitcast(args[0], context.get_value_type(float32))

    @inline
    def _exp_factors(t):  # pragma: no cover - compiled
        """``e^t = e^f · 2^k`` in float32 as the pair (e^f, 2^k), for ``EXP_MIN < t <= EXP_MAX`` (garbage outside)."""
        rounded = t * _LOG2E + _ROUND  # k = round(t·log₂e) in the low bits
        k = rounded - _ROUND
        f = t - k * _LN2_HI - k * _LN2_LO
        p = (((_P4E * f + _P3E) * f + _P2E) * f + _P1E) * f + _P0E
        return p * f * f + f + _F(1.0), _bits_float32((_float32_bits(rounded) - _ROUND_BITS + np.int32(127)) << 23)

    @inline
    def _expf(t):  # pragma: no cover - compiled
        """e^t in float32: 0 at or below -87 and for -inf, NaN for NaN, e^88 above 88."""
        keep = t > _LO32
        mantissa, power = _exp_factors(min(max(t, _LO32), _HI32))
        return mantissa * (power if keep else _F(0.0))  # NaN · 0 stays NaN

    @inline
    def _expf_in_range(t):  # pragma: no cover - compiled
        """e^t in float32 for ``EXP_MIN < t <= EXP_MAX`` (garbage outside): :func:`_expf` without its clamps, bit for bit."""
        mantissa, power = _exp_factors(t)
        return mantissa * power

    @jit_sum
    def _squares(x):  # pragma: no cover - compiled
        total = _F(0.0)
        for j in range(x.shape[0]):
            total += x[j] * x[j]
        return total

    @jit_sum
    def _row_sum(x):  # pragma: no cover - compiled
        total = _F(0.0)
        for j in range(x.shape[0]):
            total += x[j]
        return total

    @jit_sum
    def _sum_moment(x, xs):  # pragma: no cover - compiled
        total = _F(0.0)
        moment = _F(0.0)
        for j in range(x.shape[0]):
            total += x[j]
            moment += x[j] * xs[j]
        return total, moment


def _compile_exp_loops(jit) -> dict[str, Any]:
    """The loops over score blocks built on the exp: never 'reassoc' (see the module docstring)."""
    @jit
    def exp_rowsum(S, sums, in_range):  # pragma: no cover - compiled
        rows, n = S.shape
        for r in range(rows):
            x = S[r]
            if in_range:  # the caller knows every entry lies in (EXP_MIN, EXP_MAX]
                for j in range(n):
                    x[j] = _expf_in_range(x[j])
            else:
                for j in range(n):
                    x[j] = _expf(x[j])
            sums[r] += _row_sum(x)

    @jit
    def exp_rowsum_moment(S, sums, moments, maxima):  # pragma: no cover - compiled
        rows, n = S.shape
        xs = np.empty(n, np.float32)
        for r in range(rows):
            x = S[r]
            top = maxima[r]
            for j in range(n):
                v = x[j]
                top = max(top, v)
                x[j] = _expf(v)
                xs[j] = v if v > _LO32 else _F(0.0)  # a weight of 0 (masked: -inf) adds nothing to the moment
            total, moment = _sum_moment(x, xs)
            sums[r] += total
            moments[r] += moment
            maxima[r] = top

    @jit
    def exp_and_dscores(A, dS):  # pragma: no cover - compiled
        rows, n = A.shape
        for r in range(rows):
            a, d = A[r], dS[r]
            for j in range(n):
                e = _expf(a[j])
                a[j] = e
                d[j] *= e

    @jit
    def softmax_rows(S, A):  # pragma: no cover - compiled
        rows, n = S.shape
        for r in range(rows):
            s, p = S[r], A[r]
            top = s[0]
            for j in range(1, n):
                top = max(top, s[j])
            if top == -np.inf:  # no allowed key: the row stays 0
                top = _F(0.0)
            for j in range(n):
                p[j] = _expf(s[j] - top)
            total = _row_sum(p)
            inv = _F(1.0) / total if total > _F(0.0) else _F(0.0)
            for j in range(n):
                p[j] *= inv
    return {"exp_rowsum": exp_rowsum, "exp_and_dscores": exp_and_dscores, "softmax_rows": softmax_rows,
            "exp_rowsum_moment": exp_rowsum_moment}


def _compile_forward_loops(jit_sum) -> dict[str, Any]:
    """The real-model forward's two loops."""
    # the forward's two loops take every flag but 'nnan'/'ninf' ('reassoc' lets the LayerNorm's row sums vectorise)
    @jit_sum
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

    @jit_sum
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
    return {"bias_gelu": bias_gelu, "residual_layernorm": residual_layernorm}


@functools.cache
def _sgemm() -> Any:
    """SciPy's BLAS ``sgemm`` (``scipy.linalg.cython_blas``, Fortran's arguments: all pointers) as a ctypes function."""
    import ctypes

    from numba.extending import get_cython_function_address

    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 13)(get_cython_function_address("scipy.linalg.cython_blas", "sgemm"))


def _compile_attention(jit, jit_max, inline) -> dict[str, Any]:
    """The lean forward's compiled rows (:func:`attend_rows`) and the product that warms SciPy's BLAS buffers."""
    global _row_max, _gemm

    @jit_max
    def _row_max(x):  # pragma: no cover - compiled
        top = x[0]
        for j in range(1, x.shape[0]):
            top = max(top, x[j])
        return top

    @inline
    def _gemm(sgemm, transpose_a, transpose_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):  # pragma: no cover
        ints = np.empty(6, np.int32)
        reals = np.empty(2, np.float32)
        flags = np.empty(2, np.uint8)
        flags[0], flags[1] = transpose_a, transpose_b
        ints[0], ints[1], ints[2], ints[3], ints[4], ints[5] = m, n, k, lda, ldb, ldc
        reals[0], reals[1] = alpha, beta
        i, r, f = ints.ctypes.data, reals.ctypes.data, flags.ctypes.data
        sgemm(f, f + 1, i, i + 4, i + 8, r, A, i + 12, B, i + 16, r + 4, C, i + 20)

    @jit
    def gemm_product(sgemm, A, B, C):  # pragma: no cover - compiled
        """Row-major ``C ← A B``: column-major ``Cᵀ = Bᵀ Aᵀ``."""
        m, k = A.shape
        n = B.shape[1]
        _gemm(sgemm, _NO, _NO, n, m, k, _F(1.0), B.ctypes.data, n, A.ctypes.data, k, _F(0.0), C.ctypes.data, n)

    @jit
    def attend_rows(sgemm, Q, K, V, Z, L, sums, i0, i1, columns, scale, causal, S, acc, shift, reach,
                    clamp_reach, tiles):  # pragma: no cover - compiled
        d, dv = Q.shape[1], V.shape[1]
        rows = i1 - i0
        end = i1 if causal else K.shape[0]
        key_norm = _F(0.0)
        for j in range(end):
            key_norm = max(key_norm, _squares(K[j]))
        key_norm = math.sqrt(key_norm) * abs(scale)
        for r in range(rows):  # |c·q_i·k_j| <= c·‖q_i‖·max_j ‖k_j‖ (Cauchy–Schwarz): the reach of row i's scores
            reach[r] = math.sqrt(_squares(Q[i0 + r])) * key_norm
        for j0 in range(0, end, columns):
            cols = min(end, j0 + columns) - j0
            # the block's exponentials go to its kept tile (a C-contiguous (rows, cols) start of it), or to scratch
            flat = tiles[j0 // columns].reshape(tiles.shape[1] * tiles.shape[2]) if tiles.shape[0] else S
            block = flat[:rows * cols].reshape(rows, cols)
            # block = c·Q_i K_jᵀ: column-major blockᵀ (cols × rows) = c·K_j Q_iᵀ
            _gemm(sgemm, _TRANSPOSED, _NO, cols, rows, d, scale, K[j0:].ctypes.data, d, Q[i0:].ctypes.data, d,
                  _F(0.0), block.ctypes.data, cols)
            for r in range(rows):
                x = block[r]
                allowed = min(cols, i0 + r - j0 + 1) if causal else cols  # keys j <= i (causal); may be <= 0
                if j0 == 0:
                    shift[r] = _row_max(x[:allowed])  # the first key block's maximum: every row's sum is >= 1
                    reach[r] += abs(shift[r])  # |s_ij − t_i| <= this for every key j
                t = shift[r]
                if reach[r] < clamp_reach:  # every s_ij − t_i lies in (EXP_MIN, EXP_MAX]: the same exp, unclamped
                    for j in range(max(allowed, 0)):
                        x[j] = _expf_in_range(x[j] - t)
                else:
                    for j in range(max(allowed, 0)):
                        x[j] = _expf(x[j] - t)
                for j in range(max(allowed, 0), cols):
                    x[j] = _F(0.0)
                total = _row_sum(x)
                sums[i0 + r] = total if j0 == 0 else sums[i0 + r] + total
            # acc (+)= P V_j: column-major accᵀ (dv × rows) (+)= V_jᵀ Pᵀ, accumulated by BLAS itself
            _gemm(sgemm, _NO, _NO, dv, rows, cols, _F(1.0), V[j0:].ctypes.data, dv, block.ctypes.data, cols,
                  _F(0.0) if j0 == 0 else _F(1.0), acc.ctypes.data, dv)
        for r in range(rows):
            ell = sums[i0 + r]
            for q in range(dv):
                Z[i0 + r, q] = acc[r, q] / ell
            L[i0 + r] = shift[r] + math.log(ell)

    return {"attend_rows": attend_rows, "gemm_product": gemm_product}


def attend_rows(Q: np.ndarray, K: np.ndarray, V: np.ndarray, scale: float, *, causal: bool = False,
                rows: tuple[int, int] | None = None, columns: int = 256,
                clamp_reach: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Z = softmax(c·Q Kᵀ) V``, the row log-sum-exp ``L`` and the shifted row sums ``ℓ`` of one head, float32.

    The lean forward's compiled rows (:mod:`attnsym.numeric._fast`): for each block of
    ``columns`` keys, one BLAS product ``c·Q Kᵀ`` (SciPy's ``sgemm``, called from the compiled
    loop), one pass ``P = exp(S − t)`` with the row sums (``t``: each row's maximum over the
    first key block), and one product ``acc += P V`` that BLAS accumulates itself (``β = 1``).
    No padded operands, no per-block Python call. ``ℓ`` is at least 1 (the first block holds
    ``e^0``); a row with ``ℓ`` above :data:`attnsym.numeric._fast.MAX_ROW_SUM` had a later score
    far above ``t``, and its caller redoes it exactly. ``causal``: key ``j`` only for queries
    ``i >= j``. ``rows``: only query rows ``i0:i1`` (the rest of ``Z``, ``L``, ``ℓ`` are zeros).

    The exp skips its clamps on a row whose scores cannot leave its range: the row's reach
    ``c·‖q_i‖·max_j ‖k_j‖ + |t_i|`` bounds every ``|s_ij − t_i|`` (Cauchy–Schwarz), and below
    ``clamp_reach`` (default :data:`CLAMP_REACH`) every argument lies inside ``(EXP_MIN, EXP_MAX]``,
    where the clamped exp computes the same bits. ``clamp_reach=0`` clamps every row (the tests
    compare the two).

    >>> Q = np.array([[0.0], [1.0]], np.float32); K = V = np.array([[1.0], [2.0]], np.float32)
    >>> Z, L, ell = attend_rows(Q, K, V, 1.0)
    >>> np.round(Z[:, 0], 5), np.round(L, 5)   # row 1: softmax(1, 2) = (0.269, 0.731)
    (array([1.5    , 1.73106], dtype=float32), array([0.69315, 2.31326], dtype=float32))
    """
    if (Q.ndim != 2 or V.ndim != 2 or K.shape != (K.shape[0], Q.shape[1]) or V.shape[0] != K.shape[0]
            or (causal and Q.shape[0] != K.shape[0])):
        raise ShapeError(f"attend_rows: Q has shape {Q.shape}, K {K.shape}, V {V.shape}; expected (n, d), (m, d), "
                         "(m, d_v), with n = m when causal")
    i0, i1 = rows if rows is not None else (0, Q.shape[0])
    if not 0 <= i0 < i1 <= Q.shape[0]:
        raise ShapeError(f"attend_rows: rows must be (i0, i1) with 0 <= i0 < i1 <= n = {Q.shape[0]} (got {rows})")
    Z = np.zeros((Q.shape[0], V.shape[1]), np.float32)
    L, sums = np.zeros(Q.shape[0], np.float32), np.zeros(Q.shape[0], np.float32)
    kernel = _checked("attend_rows", Q, K, V)
    S, acc, shift, reach = (np.empty(size, np.float32)
                            for size in ((i1 - i0) * columns, (i1 - i0) * V.shape[1], i1 - i0, i1 - i0))
    kernel(_sgemm(), Q, K, V, Z, L, sums, i0, i1, columns, np.float32(scale), causal, S,
           acc.reshape(i1 - i0, V.shape[1]), shift, reach, CLAMP_REACH if clamp_reach is None else _F(clamp_reach),
           NO_TILES)
    return Z, L, sums


def rows_kernel() -> Any:
    """The compiled forward rows as the lean forward calls them — ``kernel(Q, K, V, Z, L, sums, i0, i1, columns,
    scale, causal, S, acc, shift, reach, clamp_reach, tiles)`` (``reach``: scratch of ``i1 − i0`` floats;
    ``clamp_reach``: :data:`CLAMP_REACH`; ``tiles``: the task's row of kept tiles, (key blocks, rows, columns),
    each block's exponentials written to the start of its tile, or :data:`NO_TILES`), SciPy's ``sgemm`` bound —
    or None when :func:`available` is False.

    The first call loads (or compiles) them and the product that warms SciPy's BLAS buffers,
    which it hands to :func:`attnsym.numeric._pool.warm_also`: the next
    :func:`~attnsym.numeric._pool.one_blas_thread` entry runs it on every worker
    (:func:`attnsym.numeric._fast.session` asks for the kernel before it enters).
    """
    kernels = compiled() if available() else None
    if kernels is None:
        return None
    if "rows" not in _STATE:
        with _LOCK:
            if "rows" not in _STATE:
                sgemm, product = _sgemm(), kernels["gemm_product"]
                one = np.ones((1, 1), np.float32)
                attend_rows(one, one, one, 1.0)  # load both now: not inside the warming products, which run together
                product(sgemm, one, one, np.empty((1, 1), np.float32))
                _pool.warm_also("scipy", lambda a, b: product(sgemm, a, b, np.empty((a.shape[0], b.shape[1]), np.float32)))
                _STATE["rows"] = functools.partial(kernels["attend_rows"], sgemm)
    return _STATE["rows"]


def _checked(name: str, *arrays: np.ndarray | None):
    """The kernel ``name``, once ``arrays`` (None: an omitted term) are C-contiguous float32 NumPy arrays."""
    kernels = compiled()
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


def _rows(M: np.ndarray) -> np.ndarray:
    """A C-contiguous array as 2-D rows (last axis kept; a scalar or vector as one row)."""
    return M.reshape(-1, M.shape[-1] if M.ndim else 1)


def exp_rowsum(S: np.ndarray, sums: np.ndarray, *, in_range: bool = False) -> np.ndarray:
    """``S ← exp(S)`` in place and ``sums += S.sum(axis=1)`` in the same pass, for float32 ``S`` (rows, n) and ``sums`` (rows,).

    The forward's pass over a score block when the row sums are not taken by the product
    (its ``V`` without the column of ones: the product is then 64 wide, not 65). Returns ``S``.
    ``in_range=True``: the caller knows every entry lies in ``(EXP_MIN, EXP_MAX]`` — the exp
    without its clamps, as the compiled rows take it (:data:`CLAMP_REACH`): the same bits there,
    garbage outside.

    >>> S = np.log(np.array([[0.25, 0.5], [1.0, 2.0]], np.float32))
    >>> sums = np.ones(2, np.float32)
    >>> np.round(exp_rowsum(S, sums), 6), np.round(sums, 6)
    (array([[0.25, 0.5 ],
           [1.  , 2.  ]], dtype=float32), array([1.75, 4.  ], dtype=float32))
    """
    if S.ndim != 2 or sums.shape != S.shape[:1]:
        raise ShapeError(f"exp_rowsum: S has shape {S.shape} and sums {sums.shape}; expected (rows, n) and (rows,)")
    _checked("exp_rowsum", S, sums)(S, sums, bool(in_range))
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
    >>> np.round(sums, 6), np.round(moments, 4), np.round(maxima, 5)   # 0.25 ln 0.25 + 0.75 ln 0.75 = -0.562335
    (array([1.], dtype=float32), array([-0.5623], dtype=float32), array([-0.28768], dtype=float32))
    """
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
    if A.shape != dS.shape:
        raise ShapeError(f"exp_and_dscores: A has shape {A.shape} and dS {dS.shape}; expected the same shape")
    _checked("exp_and_dscores", A, dS)(_rows(A), _rows(dS))


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
    _checked("softmax_rows", S, A)(S.reshape(-1, S.shape[-1]), A.reshape(-1, A.shape[-1]))
    return A


def bias_gelu(h: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``h ← GELU(h + b)`` in place for ``h`` ``(rows, f)`` and ``b`` ``(f,)``; returns ``h``.

    >>> h = np.array([[-1.0, 0.0, 2.0]], np.float32)
    >>> np.round(bias_gelu(h, np.zeros(3, np.float32)), 4)
    array([[-0.1587,  0.    ,  1.9545]], dtype=float32)
    """
    _checked("bias_gelu", h, b)(h, b)
    return h


def residual_layernorm(a: np.ndarray, bias: np.ndarray | None, residual: np.ndarray | None,
                       weight: np.ndarray, beta: np.ndarray, eps: float, out: np.ndarray) -> np.ndarray:
    """``a ← a + bias + residual`` in place (each term optional), then ``out ← LayerNorm(a)``; returns ``out``.

    ``out`` may be ``a`` itself. LayerNorm over the last axis with the biased variance, as
    :func:`attnsym.numeric.layer_norm`.
    """
    _checked("residual_layernorm", a, bias, residual, weight, beta, out)(a, bias, residual, weight, beta,
                                                                         np.float32(eps), out)
    return out
