"""Softmax saturation without the 1/√d scaling, measured: the study behind ``softmax-saturation`` and its figures.

:func:`study` asks three questions and returns one :class:`SaturationResult`:

* **exactly**, for two keys with score gap ``s``: the Jacobian entry ``∂a₁/∂s = a₁(1 − a₁)``
  and its limit 0 as the gap grows (:func:`two_key_limit`, SymPy);
* **by sampling**, per ``d``: score rows ``q·k_j`` (``q, k_j`` with independent unit-variance
  components, :func:`attnsym.numeric.montecarlo.score_rows`), unscaled and scaled by ``1/√d`` on
  the same draws: the largest weight, the row entropy and the Frobenius norm of the softmax
  Jacobian — each mean with a 95 % confidence interval, the Jacobian's median with a
  distribution-free interval (:func:`softmax_saturation`); and the gradient reaching ``W_Q`` for
  one query's loss, unscaled over scaled, per draw, its typical size the geometric mean with a
  t-interval on the log scale (:func:`gradient_ratio`);
* **by training**: whether learning slows, a seeded SGD run of one attention layer on a
  retrieval task, scaled vs unscaled (:func:`attnsym.studies.training.train_retrieval`).

The claim ``softmax-saturation`` judges the result; ``attnsym.plots.saturation_entropy_figure``,
``saturation_jacobian_figure`` and ``training_run_figure`` draw the same object.

>>> rows = softmax_saturation(np.random.default_rng(0), [1, 256], rows=400, n=16)
>>> rows[-1].unscaled.max_weight.value > 0.8 > rows[-1].scaled.max_weight.value
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import montecarlo as mc
from ..numeric.backward import attention_vjp
from ..numeric.entropy import softmax_entropy
from ..numeric.forward import softmax
from ..numeric.jacobians import softmax_jacobian
from ..numeric.montecarlo import score_rows
from ..symbolic.operations import row_softmax
from ._streams import Streams
from .intervals import Estimate, binomial_half_quantile, mean_interval, median_interval, t_interval, wilson_interval
from .training import TrainingRun, train_retrieval

__all__ = ["VJP_CHECKED_DRAWS", "GradientRow", "SaturationResult", "SaturationRow", "SaturationSizes", "SoftmaxStats",
           "TwoKeyLimit", "binomial_half_quantile", "gradient_ratio", "mean_interval", "median_interval",
           "softmax_saturation", "study", "t_interval", "two_key_limit", "w_q_gradients", "wilson_interval"]

#: the scorings compared: unscaled (c = 1) and scaled (c = 1/√d)
SCORINGS = ("unscaled", "scaled")


@dataclass(frozen=True)
class SoftmaxStats:
    """One scoring at one ``d``: the softmax rows' largest weight, entropy (nats), Jacobian norm, flat rows.

    ``flat_rows`` is the fraction of rows whose ``‖J‖_F`` is below 1 % of the uniform row's
    (Wilson interval); the others are means with normal intervals, ``jacobian_median`` a median
    with an order-statistics interval.
    """

    max_weight: Estimate
    entropy: Estimate
    jacobian_mean: Estimate
    jacobian_median: Estimate
    flat_rows: Estimate


@dataclass(frozen=True)
class SaturationRow:
    """The softmax statistics at one ``d``, unscaled and scaled on the same score draws."""

    d: int
    unscaled: SoftmaxStats
    scaled: SoftmaxStats

    def of(self, scoring: str) -> SoftmaxStats:
        """The statistics of ``scoring`` (``"unscaled"`` or ``"scaled"``)."""
        return self.unscaled if scoring == "unscaled" else self.scaled


@dataclass(frozen=True)
class GradientRow:
    """The gradient reaching ``W_Q`` at one ``d``, unscaled over scaled, over ``draws`` layers.

    ``vjp_difference``: largest relative difference of the vectorised gradients against
    :func:`attnsym.numeric.attention_vjp` on the first ``vjp_draws`` draws.
    """

    d: int
    draws: int
    geometric_mean_ratio: Estimate
    median_ratio: float
    below_one_percent: Estimate
    mean_norm_unscaled: float
    mean_norm_scaled: float
    vjp_difference: float
    vjp_draws: int

#: rows per block of :func:`_jacobian_norms`: (rows, n, n) temporaries of about 1 MiB at n = 16, in cache
_JACOBIAN_ROWS = 512


def _jacobian_norms(A: np.ndarray) -> np.ndarray:
    """``‖diag(a) − a aᵀ‖_F`` per row of ``A`` (rows, n): :func:`softmax_jacobian` on blocks of rows.

    The same numbers as one call on all rows (each norm is a reduction over its own row's
    matrix); blocks keep the (rows, n, n) temporaries in cache, ~3x faster at 20000 rows.
    """
    out = np.empty(A.shape[0])
    for start in range(0, A.shape[0], _JACOBIAN_ROWS):
        block = np.asarray(softmax_jacobian(A[start:start + _JACOBIAN_ROWS]))  # (b, n, n)
        out[start:start + block.shape[0]] = np.linalg.norm(block, axis=(-2, -1))
    return out


def softmax_saturation(rng: np.random.Generator, dims: Sequence[int], *, rows: int,
                       n: int = 16) -> tuple[SaturationRow, ...]:
    """Per ``d``: largest weight, entropy and ``‖J‖_F`` of softmax rows, unscaled and scaled, with 95 % intervals.

    The same score draws are used for both scalings; a fresh draw for every ``d`` (never one
    weight matrix shared by all rows).
    """
    uniform = math.sqrt(n - 1) / n  # ||diag(a) - a a^T||_F at a = 1/n
    table = []
    for d in dims:
        S = score_rows(rng, rows, n, int(d))  # (rows, n)
        stats = []
        for c in (1.0, 1 / math.sqrt(d)):
            A = np.asarray(softmax(c * S))  # (rows, n)
            J = _jacobian_norms(A)  # (rows,)
            stats.append(SoftmaxStats(max_weight=mean_interval(A.max(axis=1)), entropy=mean_interval(softmax_entropy(c * S)),
                                      jacobian_mean=mean_interval(J), jacobian_median=median_interval(J),
                                      flat_rows=wilson_interval(int(np.sum(J < 0.01 * uniform)), rows)))
        table.append(SaturationRow(int(d), *stats))
    return tuple(table)


#: per-draw weight entries held at once by :func:`gradient_ratio` (3 · draws · d² floats): at most 16 MiB
_GRADIENT_WEIGHTS = 1 << 21
#: draws per d whose gradient is recomputed one at a time by :func:`attention_vjp` (the engine's own backward)
VJP_CHECKED_DRAWS = 4


def w_q_gradients(X: np.ndarray, W: np.ndarray, G: np.ndarray, scale: float) -> np.ndarray:
    """``∂⟨G, Y⟩/∂W_Q`` for a batch of single-head layers, each with its own weights, vectorised.

    ``X`` (b, n, d), ``W`` (3, b, d, d) the layers' W_Q, W_K, W_V, ``G`` (b, n, d); ``scale`` the
    factor of the scores. The textbook backward of ``Y = softmax(c Q Kᵀ) V``: ``dA = G Vᵀ``,
    ``dS = A ⊙ (dA − rowsum(dA ⊙ A))``, ``dQ = c dS K``, ``dW_Q = Xᵀ dQ``, as batched matmuls
    (:func:`attention_vjp` sums weight gradients over a batch, so it takes one layer per call;
    :func:`gradient_ratio` recomputes its first draws with it and reports the difference).
    Returns (b, d, d).
    """
    Q, K, V = (X @ W[i] for i in range(3))  # (b, n, d) each
    S = scale * (Q @ np.swapaxes(K, -1, -2))  # (b, n, n)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A /= A.sum(axis=-1, keepdims=True)  # (b, n, n)
    dA = G @ np.swapaxes(V, -1, -2)  # (b, n, n)
    dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True))  # (b, n, n)
    return np.swapaxes(X, -1, -2) @ (scale * (dS @ K))  # (b, d, d)


def gradient_ratio(rng: np.random.Generator, d: int, *, draws: int, n: int = 16) -> GradientRow:
    """``‖∇W_Q‖`` unscaled over scaled for one query's loss, ``draws`` independent layers (LeCun weights).

    Returns the geometric mean of the ratio with a 95 % t-interval on the log scale, the median,
    the fraction of draws with a ratio below 1 % (Wilson interval), the mean norms, and the
    largest relative difference between the vectorised gradients (:func:`w_q_gradients`) and
    :func:`attention_vjp` on the first :data:`VJP_CHECKED_DRAWS` draws. The draws are taken one
    layer at a time in a fixed order (X, W_Q, W_K, W_V, then the first query's upstream gradient).
    """
    per_block = max(1, min(draws, _GRADIENT_WEIGHTS // (3 * d * d)))
    norms_u, norms_s = np.empty(draws), np.empty(draws)
    vjp_difference = 0.0
    for start in range(0, draws, per_block):
        b = min(per_block, draws - start)
        X, W, G = np.empty((b, n, d)), np.empty((3, b, d, d)), np.zeros((b, n, d))
        for i in range(b):
            rng.standard_normal(out=X[i])  # (n, d): unit-variance tokens
            for w in range(3):
                rng.standard_normal(out=W[w, i])
                W[w, i] /= math.sqrt(d)  # LeCun: unit-variance q, k
            G[i, 0] = rng.standard_normal(d)  # loss on the first query's output only
        for key, c, norms in (("none", 1.0, norms_u), ("sqrt", 1 / math.sqrt(d), norms_s)):
            grads = w_q_gradients(X, W, G, c)  # (b, d, d)
            norms[start:start + b] = np.linalg.norm(grads, axis=(-2, -1))
            for i in range(max(0, min(b, VJP_CHECKED_DRAWS - start))):
                ref = np.asarray(attention_vjp(X[i], W[0, i], W[1, i], W[2, i], G[i], scale=key)["W_Q"])
                scale_of = max(float(np.abs(ref).max()), np.finfo(float).tiny)
                vjp_difference = max(vjp_difference, float(np.abs(grads[i] - ref).max()) / scale_of)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(norms_s > 0, norms_u / norms_s, math.nan)
    r = np.array(ratios)
    logs = np.log(np.maximum(r[np.isfinite(r)], np.finfo(float).tiny))
    ratio = t_interval(logs)  # the t-interval of the logarithm
    return GradientRow(d=int(d), draws=draws,
                       geometric_mean_ratio=Estimate(*(float(np.exp(v)) for v in ratio)),
                       median_ratio=float(np.median(r)), below_one_percent=wilson_interval(int(np.sum(r < 0.01)), draws),
                       mean_norm_unscaled=float(np.mean(norms_u)), mean_norm_scaled=float(np.mean(norms_s)),
                       vjp_difference=vjp_difference, vjp_draws=min(draws, VJP_CHECKED_DRAWS))


@dataclass(frozen=True)
class TwoKeyLimit:
    """Softmax of two scores with gap ``s``: the weight ``a₁``, its derivative, the derivative's limit ``s → ∞``.

    ``identity`` is True when the derivative equals ``a₁(1 − a₁)`` exactly (``sympy.cancel``).
    """

    s: sp.Symbol
    weight: sp.Expr
    derivative: sp.Expr
    limit: sp.Expr
    identity: bool

    @property
    def vanishes(self) -> bool:
        """The Jacobian entry is ``a₁(1 − a₁)`` and tends to 0 as the gap grows."""
        return self.identity and self.limit == 0


def two_key_limit() -> TwoKeyLimit:
    """The exact half of the study: ``∂a₁/∂s = a₁(1 − a₁) → 0`` as the score gap ``s`` grows.

    >>> two_key_limit().vanishes
    True
    """
    s = sp.Symbol("s", real=True)
    a = row_softmax(sp.Matrix([[s, 0]]))[0, 0]
    # a rational function of e^s: cancel decides it exactly (simplify reached the same, ~10x slower)
    da = sp.factor(sp.cancel(sp.diff(a, s)))
    return TwoKeyLimit(s=s, weight=a, derivative=da, limit=sp.limit(da, s, sp.oo),
                       identity=sp.cancel(da - a * (1 - a)) == 0)


@dataclass(frozen=True)
class SaturationSizes:
    """The sizes of the study: keys per row, the ``d`` of the score and gradient parts, rows and draws per ``d``,
    and the training run's ``d``, steps, seeds and learning-rate grid."""

    n: int
    dims: tuple[int, ...]
    gradient_dims: tuple[int, ...]
    rows: int
    draws: int
    training_dims: tuple[int, ...]
    steps: int
    seeds: int
    learning_rates: tuple[float, ...]

    @classmethod
    def of(cls, quick: bool) -> SaturationSizes:
        """The full sizes, or the quick ones (fewer rows and draws, one training ``d``, fewer steps and rates)."""
        if quick:
            return cls(16, (1, 4, 16, 64, 256, 1024, 4096), (1, 16, 256), 2000, 48, (1024,), 40, 4, (0.03, 0.3, 3.0))
        return cls(16, tuple(2**k for k in range(13)), (1, 4, 16, 64, 256), 20000, 256, (256, 1024, 4096), 200, 6,
                   (0.01, 0.03, 0.1, 0.3, 1.0, 3.0))


@dataclass(frozen=True)
class SaturationResult:
    """Everything :func:`study` measured, for the claim to judge and the figures to draw.

    ``jacobian_slope`` is the exponent of a power-law fit of the unscaled mean ``‖J‖`` against
    ``d`` for ``d ≥ 64``.
    """

    sizes: SaturationSizes
    exact: TwoKeyLimit
    table: tuple[SaturationRow, ...]
    jacobian_slope: float
    gradients: tuple[GradientRow, ...]
    training: TrainingRun

    @property
    def largest(self) -> SaturationRow:
        """The statistics at the largest ``d``."""
        return self.table[-1]

    @property
    def smallest(self) -> SaturationRow:
        """The statistics at the smallest ``d``."""
        return self.table[0]


def study(rng: Streams, *, quick: bool,
          progress: Callable[[int, int], None] | None = None) -> SaturationResult:
    """Saturation of softmax against ``d``, unscaled vs scaled: exact limit, sampled statistics, gradient, training.

    Parameters
    ----------
    rng : callable
        A key -> an independent ``numpy.random.Generator`` (:func:`attnsym.studies.streams`); the
        parts draw from ``rng("scores")``, ``rng("gradient", d)`` and ``rng("training")``.
    quick : bool
        The small sizes of :meth:`SaturationSizes.of`.
    progress : callable, optional
        Called with ``(done, total)`` after each ``d``.

    Examples
    --------
    >>> SaturationSizes.of(quick=True).dims   # the d of the quick study's score part
    (1, 4, 16, 64, 256, 1024, 4096)
    """
    sizes = SaturationSizes.of(quick)
    total = len(sizes.dims) + len(sizes.gradient_dims)
    table = softmax_saturation(rng("scores"), sizes.dims, rows=sizes.rows, n=sizes.n)
    if progress is not None:
        progress(len(sizes.dims), total)
    half = [r for r in table if r.d >= 64]
    slope = float(np.polyfit(np.log([r.d for r in half]), np.log([r.unscaled.jacobian_mean.value for r in half]), 1)[0])
    gradients = []
    with mc.blas_single_thread():
        for d in sizes.gradient_dims:
            gradients.append(gradient_ratio(rng("gradient", d), d, draws=sizes.draws, n=sizes.n))
            if progress is not None:
                progress(len(sizes.dims) + len(gradients), total)
        training = train_retrieval(rng("training"), dims=list(sizes.training_dims), steps=sizes.steps,
                                   seeds=sizes.seeds, learning_rates=sizes.learning_rates)
    return SaturationResult(sizes=sizes, exact=two_key_limit(), table=table, jacobian_slope=slope,
                            gradients=tuple(gradients), training=training)
