"""What QK-norm bounds: every logit in ``[−g, g]``, so the top weight and the entropy are bounded at every length.

:func:`study` returns a :class:`QKNormResult`:

* exactly (symbolic ``q, k, γ`` through :func:`attnsym.symbolic.matrices.rms_norm_rows` and the
  scores): the QK-normed score ``s``, its gain ``g = √d_k γ²``, Lagrange's form of ``g² − s²``
  and the scores at ``k = ±q``; in full mode the limits of the dispersion bound with ``Δ = 2g``;
* numerically (:func:`attnsym.numeric.attention` with ``qk_norm=True``): half the largest logit
  range of a row for weights scaled ×1 … 1000 (with and without QK-norm), and, at every length,
  rows built to reach the top-weight bound and random rows, their top weight and least entropy.

The claim ``qk-norm-bound`` judges it against the claimed bound;
:func:`attnsym.plots.literature_structure.qk_norm_figure` draws it.

>>> exact_scores(2).identity
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._checks import positive_int
from ..numeric import attention as numeric_attention
from ..numeric import random_inputs
from ..numeric import scores as numeric_scores
from ..numeric.entropy import row_entropy
from ..spec import AttentionSpec
from ..symbolic.matrices import rms_norm_rows
from ..symbolic.operations import scores as symbolic_scores
from ..symbolic.softmax_limits import dispersion_top_weight, entropy_lower_bound
from ._streams import Streams

__all__ = ["QK_GAIN", "SCALES", "LengthRow", "QKNormExact", "QKNormResult", "exact_scores", "study"]

#: the gain of the rows built to reach the bound: logits in [−2, 2]
QK_GAIN = 2
#: the factors the weights are scaled by
SCALES = (1.0, 10.0, 100.0, 1000.0)


@dataclass(frozen=True)
class QKNormExact:
    """The symbolic QK-normed score ``s`` of ``q, k`` (width ``d``, equal gains ``γ``), its gain ``g``, Lagrange's form."""

    d: int
    s: sp.Expr
    g: sp.Expr
    lagrange_form: sp.Expr
    identity: bool
    at_q: sp.Expr
    at_minus_q: sp.Expr


@dataclass(frozen=True)
class LengthRow:
    """One length ``n``: the built row's top weight and its bound, the largest weight and least entropy of all rows,
    the entropy floor ``log(1 + (n − 1)e^(−2g))`` and Zhai et al.'s bound at ``σ = g√n``."""

    n: int
    top_built: float
    top_bound: float
    largest: float
    least_entropy: float
    floor: float
    zhai: float


@dataclass(frozen=True)
class QKNormResult:
    """What :func:`study` found (``limits`` is None in quick mode: the dispersion claim takes them there)."""

    exact: QKNormExact
    limits: tuple[sp.Expr, sp.Expr] | None
    gain: float
    half_range: tuple[float, ...]
    half_range_plain: tuple[float, ...]
    lengths: tuple[LengthRow, ...]


def exact_scores(d: int) -> QKNormExact:
    """The exact half: ``g² − s² = g² Σ_{i<j}(q_i k_j − q_j k_i)²/(‖q‖²‖k‖²)`` and ``s`` at ``k = ±q``."""
    d = positive_int("d", d)
    q = sp.Matrix([list(sp.symbols(f"q_1:{d + 1}", real=True))])
    k = sp.Matrix([list(sp.symbols(f"k_1:{d + 1}", real=True))])
    gamma = sp.Symbol("gamma", positive=True)
    spec = AttentionSpec(n=1, d_model=d, qk_norm=True, qk_norm_eps=0.0)
    gains = sp.Matrix([[gamma] * d])
    s = symbolic_scores(rms_norm_rows(q, gains, 0), rms_norm_rows(k, gains, 0), spec.scale_expr)[0, 0]
    g = sp.sqrt(d) * gamma**2  # (1/√d)·d·γ²: the RMS norm is √d times the ℓ2 norm
    nq, nk = sum(x**2 for x in q), sum(x**2 for x in k)
    lagrange = sum((q[i] * k[j] - q[j] * k[i]) ** 2 for i in range(d) for j in range(i + 1, d))
    form = g**2 * lagrange / (nq * nk)
    return QKNormExact(d=d, s=s, g=g, lagrange_form=form,
                       identity=sp.cancel(sp.expand(g**2 - s**2 - form)) == 0,  # s² is rational in q, k
                       at_q=sp.cancel(s.xreplace(dict(zip(k, q, strict=True)))),
                       at_minus_q=sp.cancel(s.xreplace({kk: -qq for kk, qq in zip(k, q, strict=True)})))


def _half_ranges(rng: np.random.Generator, seed: int) -> tuple[float, list[float], list[float]]:
    """Half the largest logit range of a row, with and without QK-norm, for weights scaled by :data:`SCALES`."""
    d_k, width = 8, 16
    g_Q, g_K = rng.uniform(0.5, 1.5, (2, d_k))
    spec64 = AttentionSpec(n=64, d_model=width, d_k=d_k, qk_norm=True)
    values = random_inputs(spec64, seed=seed)
    normed, plain = [], []
    for lam in SCALES:
        W_Q, W_K = lam * values["W_Q"], lam * values["W_K"]
        _, A = numeric_attention(values["X"], W_Q, W_K, values["W_V"], spec=spec64, g_Q=g_Q, g_K=g_K)
        A = np.asarray(A)
        with np.errstate(divide="ignore", over="ignore"):
            normed.append(float(np.max(np.log(A.max(-1) / A.min(-1)))) / 2)  # the largest logit range, halved
        S = np.asarray(numeric_scores(values["X"] @ W_Q, values["X"] @ W_K, 1 / math.sqrt(d_k)))
        plain.append(float(np.max(S.max(-1) - S.min(-1))) / 2)
    return math.sqrt(d_k) * float(np.max(np.abs(g_Q * g_K))), normed, plain


def _length_rows(rng: np.random.Generator, lengths: tuple[int, ...]) -> tuple[LengthRow, ...]:
    """At every length: rows built to reach the top-weight bound (gain :data:`QK_GAIN`) and random rows."""
    d_k, width = 8, 16
    sigma_s, T_s = sp.symbols("sigma T", positive=True)
    zhai_bound = sp.lambdify((sigma_s, T_s), entropy_lower_bound(sigma_s, T_s), "math")
    ones = np.full(d_k, math.sqrt(QK_GAIN / math.sqrt(d_k)))
    u = rng.standard_normal(width) * 10
    W = rng.standard_normal((width, d_k))
    rows = []
    for m in lengths:
        spec_m = AttentionSpec(n=m, d_model=width, d_k=d_k, qk_norm=True)
        X = np.vstack([u, -np.tile(u, (m - 1, 1))])  # token 1 against m − 1 opposite tokens
        _, A = numeric_attention(X, W, W, np.eye(width)[:, :d_k], spec=spec_m, g_Q=ones, g_K=ones)
        A = np.asarray(A)
        Xr = rng.standard_normal((m, width)) * 100
        _, Ar = numeric_attention(Xr, W, rng.standard_normal((width, d_k)), np.eye(width)[:, :d_k], spec=spec_m,
                                  g_Q=ones, g_K=ones)
        both = np.concatenate([A, np.asarray(Ar)])
        rows.append(LengthRow(m, float(A[0].max()), float(dispersion_top_weight(m, 2 * sp.Integer(int(QK_GAIN)))),
                              float(both.max()), float(row_entropy(both).min()),
                              math.log(1 + (m - 1) * math.exp(-2 * QK_GAIN)), float(zhai_bound(QK_GAIN * math.sqrt(m), m))))
    return tuple(rows)


def study(rng: Streams, seed: int = 0, *, quick: bool) -> QKNormResult:
    """The exact score bound (d_k = 2; 3 in full mode), the dispersion limits (full mode), and the float64 layer.

    ``rng()`` draws the gains, the built rows and the random rows; ``seed`` the layer's inputs.
    """
    gap, n = sp.Symbol("g", positive=True), sp.Symbol("n", positive=True)
    limits = None if quick else (sp.limit(dispersion_top_weight(n, 2 * gap), n, sp.oo),
                                 sp.limit(sp.log(1 + (n - 1) * sp.exp(-2 * gap)), n, sp.oo))
    generator = rng()
    gain, normed, plain = _half_ranges(generator, seed)
    lengths = _length_rows(generator, (8, 64, 256) if quick else (8, 64, 512, 2048))
    return QKNormResult(exact=exact_scores(2 if quick else 3), limits=limits, gain=gain, half_range=tuple(normed),
                        half_range_plain=tuple(plain), lengths=lengths)
