"""Is attention a kernel smoother, and when is its kernel symmetric? (Tsai et al. 2019), exactly and in float64.

:func:`study` returns a :class:`KernelResult`:

* exactly (attnsym's symbolic layer, ``n = 2`` quick or 3 full, ``d = 2``, symbolic X and weights):
  whether its weights equal :func:`attnsym.symbolic.kernel_smoother.kernel_smoother_weights`, the
  log-asymmetry matrix ``B`` read off the kernel (with ``M = W_Q W_Kᵀ`` and the scale ``c`` beside
  it), and three integer weight cases (tied, ``W_K = W_Q S`` with S symmetric, untied): is ``M``
  symmetric, is the kernel, and ``k(e1, e2)/k(e2, e1)``;
* in float64: the gap between :func:`attnsym.numeric.attention`'s weights and the numeric smoother,
  and the kernel matrices for tied and untied weights with their relative asymmetry.

The claim ``kernel-smoother`` judges it; :func:`attnsym.plots.literature_theory.kernel_figure` draws
the two kernel matrices.

>>> [c.label for c in weight_cases(sp.Rational(1, 2))][0]
'W_K = W_Q'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import attention as numeric_attention
from ..numeric import kernel_smoother as numeric_kernel
from ..spec import AttentionSpec
from ..symbolic import kernel_smoother as exact_kernel
from ..symbolic.matrices import attention as symbolic_attention
from ._streams import Streams

__all__ = ["KernelCase", "KernelExact", "KernelResult", "study", "weight_cases"]

#: the query weights of the integer cases
W_Q_CASES = sp.Matrix([[1, 2], [-1, 3]])


@dataclass(frozen=True)
class KernelCase:
    """One integer weight case: is ``M = W_Q W_Kᵀ`` symmetric, is the kernel, and ``k(e1, e2)/k(e2, e1)``."""

    label: str
    m_symmetric: bool
    kernel_symmetric: bool
    swap_ratio: sp.Expr


@dataclass(frozen=True)
class KernelExact:
    """The symbolic layer (``n`` tokens, d = 2): weights = smoother (``weights_equal``), the log-asymmetry matrix ``B``
    (``bilinear``: it is a bilinear form), ``M = W_Q W_Kᵀ`` and the scale ``c``, and the integer cases."""

    n: int
    weights_equal: bool
    B: sp.Matrix
    bilinear: bool
    M: sp.Matrix
    c: sp.Expr
    cases: tuple[KernelCase, ...]


@dataclass(frozen=True)
class KernelResult:
    """What :func:`study` found: the exact part, and in float64 (``m`` tokens, width ``d``) the largest gap between
    the layer's weights and the smoother, the tied and untied kernel matrices and their ``‖K − Kᵀ‖/‖K‖``."""

    exact: KernelExact
    m: int
    d: int
    numeric_gap: float
    K_tied: np.ndarray
    K_untied: np.ndarray
    tied_asymmetry: float
    untied_asymmetry: float


def weight_cases(c: sp.Expr) -> tuple[KernelCase, ...]:
    """Tied, ``W_K = W_Q S`` (S symmetric) and untied integer weights with the scale ``c``."""
    W_Q = W_Q_CASES
    cases = {"W_K = W_Q": W_Q, "W_K = W_Q S, S = (2 1; 1 3)": W_Q * sp.Matrix([[2, 1], [1, 3]]),
             "W_K = (0 1; 2 −1)": sp.Matrix([[0, 1], [2, -1]])}
    rows = []
    for label, W_K in cases.items():
        Mc = W_Q * W_K.T
        Bc, _ = exact_kernel.log_asymmetry_matrix(W_Q, W_K, c)
        e1, e2 = [[1, 0]], [[0, 1]]
        swap = sp.powsimp(exact_kernel.attention_kernel(e1, e2, W_Q, W_K, c)
                          / exact_kernel.attention_kernel(e2, e1, W_Q, W_K, c))
        rows.append(KernelCase(label, Mc == Mc.T, bool(Bc.is_zero_matrix), swap))
    return tuple(rows)


def _exact(n: int) -> KernelExact:
    layer = symbolic_attention(AttentionSpec(n=n, d_model=2))
    c = layer.spec.scale_expr
    smoother = exact_kernel.kernel_smoother_weights(layer.X, layer.W_Q, layer.W_K, c)
    B, bilinear = exact_kernel.log_asymmetry_matrix(layer.W_Q, layer.W_K, c)
    return KernelExact(n, bool(exact_kernel.same_softmax_form(layer.A, smoother)), B, bool(bilinear),
                       layer.weight("W_Q") * layer.weight("W_K").T, c, weight_cases(c))


def _relative_asymmetry(K: np.ndarray) -> float:
    return float(np.linalg.norm(K - K.T) / np.linalg.norm(K))


def study(rng: Streams, *, quick: bool) -> KernelResult:
    """The exact part and the float64 part (8 tokens, d = 4 quick; 32, d = 8 full). ``rng()`` draws X and weights."""
    exact = _exact(2 if quick else 3)
    generator = rng()
    m, d = (8, 4) if quick else (32, 8)
    X = generator.standard_normal((m, d))
    Wq, Wk, Wv = (generator.standard_normal((d, d)) / math.sqrt(d) for _ in range(3))
    _, A = numeric_attention(X, Wq, Wk, Wv)
    c = 1 / math.sqrt(d)
    gap = float(np.max(np.abs(np.asarray(A) - numeric_kernel.kernel_smoother_weights(X, Wq, Wk, c))))
    K_tied, K_untied = numeric_kernel.kernel_matrix(X, Wq, Wq, c), numeric_kernel.kernel_matrix(X, Wq, Wk, c)
    return KernelResult(exact, m, d, gap, K_tied, K_untied, _relative_asymmetry(K_tied), _relative_asymmetry(K_untied))
