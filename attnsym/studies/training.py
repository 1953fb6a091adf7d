"""A seeded training run: one attention layer learning a retrieval task, scaled by ``1/√d`` or not.

The second half of the claim ``softmax-saturation`` ("… slowing learning") measured, not assumed.

Task (associative recall). A sequence holds ``keys`` key–value tokens ``x_j = [k_j; v_j]``
(``k_j, v_j ∈ R^w`` independent standard normal, each token ``[k_j; v_j; 0]``) and, last, one
query token ``x_q = [0; 0; k_{j*} + ε]`` (``j*`` uniform, ``ε ~ N(0, noise² I)``): the query
carries its key in its own slot, so that matching it to itself is no solution. The layer is single-head
self-attention, read at the query row:

.. math::

    s_j = c\\, x_q^\\top W_Q W_K^\\top x_j,\\quad a = \\operatorname{softmax}(s),\\quad
    y = \\sum_j a_j\\, x_j^\\top W_V,\\qquad L = \\frac{1}{B w}\\sum_b \\lVert y_b - v_{j^*_b}\\rVert^2,

over all ``keys + 1`` tokens (the query attends to itself too; its value slot is 0). ``W_V``
is fixed and reads the value slot; ``W_Q, W_K`` (``3w × d``, LeCun-initialised: entries of
variance ``1/(3w)``) are trained by plain SGD; the minimum, ``W_Q W_K^T`` a large multiple of
the query-slot-to-key-slot identity, has loss near 0. ``c`` is the arm's
score scale as the library resolves it (``AttentionSpec(scale="sqrt" | "none").scale_float``:
``1/√d`` or 1). With ``M = W_Q W_K^T`` and the query row only, the backward is

.. math::

    dy = \\tfrac{2}{Bw}(y - v),\\quad da_j = dy\\cdot V_j,\\quad ds = a \\odot (da - a\\cdot da),\\quad
    dM = c \\sum_b x_q\\, (ds^\\top X),\\quad dW_Q = dM\\, W_K,\\quad dW_K = dM^\\top W_Q,

vectorised over every (arm, ``d``, learning rate, seed) at once. The updates keep the rows of
``W_Q, W_K`` in the span of their initial ``2·3w`` rows, so the run trains their coordinates in
an orthonormal basis of that span (``W = A · basis``, ``A`` the Cholesky factor of the initial
Gram matrix; exact in exact arithmetic): its cost does
not grow with ``d``, and ``d`` enters through the initial weights alone. The first run of each arm, at the
smallest and the largest ``d``, has its gradients at its first and last step (on
:data:`VJP_SEQUENCES` sequences of the batch) recomputed at full ``d`` by
:func:`attnsym.numeric.attention_vjp` (the library's backward of the whole layer, ``G`` nonzero
on the query row only) and its output by :func:`attnsym.numeric.attention`; the largest
relative difference is reported.

Arms share, seed by seed, the initial weights and every training batch (common random
numbers), so their losses are paired. :func:`train_retrieval` returns the held-out loss curve
of every run and, per arm and learning rate, the final loss with a 95 % t-interval over seeds.

>>> r = train_retrieval(np.random.default_rng(0), dims=[256], steps=40, seeds=3, learning_rates=(1.0,))
>>> final = r.per_d[0].final
>>> final["sqrt"][0].loss.value < final["none"][0].loss.value
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..numeric.backward import attention_vjp
from ..numeric.forward import attention, softmax
from ..spec import AttentionSpec
from .intervals import Estimate, t_interval

__all__ = ["ARMS", "VJP_SEQUENCES", "RateLoss", "TrainingAtD", "TrainingRun", "retrieval_batch", "retrieval_gradients",
           "t_interval", "train_retrieval"]

#: sequences of a batch on which :func:`attention_vjp` recomputes the gradients (at full ``d``)
VJP_SEQUENCES = 4

#: the two arms: the spec's scale names (``"sqrt"`` = 1/√d, ``"none"`` = 1)
ARMS = ("sqrt", "none")


@dataclass(frozen=True)
class RateLoss:
    """The held-out loss after the last step at one learning rate, with its t-interval over seeds."""

    rate: float
    loss: Estimate


@dataclass(frozen=True)
class TrainingAtD:
    """One ``d`` of the run: per arm (:data:`ARMS`) the final loss at every rate, the best rate, the start.

    ``difference`` is the unscaled arm's final loss at its best rate minus the scaled arm's at its
    own, seed by seed (paired: same data and initial weights), with its t-interval; ``start`` the
    held-out loss of each arm's best-rate mean curve before any update.
    """

    d: int
    final: dict[str, tuple[RateLoss, ...]]
    best_rate: dict[str, float]
    difference: Estimate
    start: dict[str, float]

    def best(self, arm: str) -> RateLoss:
        """The final loss of ``arm`` at its best rate."""
        return next(r for r in self.final[arm] if r.rate == self.best_rate[arm])


@dataclass(frozen=True)
class TrainingRun:
    """What :func:`train_retrieval` measured: the sizes, the curves, the result per ``d``, the backward check.

    ``steps`` are the checkpoint steps; ``curves[arm]`` has shape (dims, rates, seeds,
    checkpoints); ``vjp_difference`` is the largest relative difference of the run's gradients
    against :func:`attnsym.numeric.attention_vjp` at full ``d``.
    """

    dims: tuple[int, ...]
    steps: tuple[int, ...]
    seeds: int
    batch: int
    keys: int
    width: int
    noise: float
    evaluate: int
    learning_rates: tuple[float, ...]
    scales: dict[str, tuple[float, ...]]
    curves: dict[str, np.ndarray]
    per_d: tuple[TrainingAtD, ...]
    vjp_difference: float

    def best_curve(self, arm: str, j: int) -> np.ndarray:
        """The held-out loss curves (seeds, checkpoints) of ``arm`` at its best rate for the ``j``-th ``d``."""
        return self.curves[arm][j, self.learning_rates.index(self.per_d[j].best_rate[arm])]

    def steps_to(self, loss: float, arm: str, j: int) -> int | None:
        """The first checkpoint step where the mean best-rate curve of ``arm`` (``j``-th ``d``) is at most ``loss``."""
        below = np.flatnonzero(self.best_curve(arm, j).mean(axis=0) <= loss)
        return int(self.steps[below[0]]) if below.size else None


def retrieval_batch(rng: np.random.Generator, shape: tuple[int, ...], keys: int, width: int,
                    noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Sequences ``X`` (*shape, keys + 1, 3·width) of the recall task and their targets (*shape, width).

    Rows ``0 … keys − 1`` are ``[k_j; v_j; 0]``; the last row is ``[0; 0; k_{j*} + ε]``; the target is ``v_{j*}``.
    """
    K = rng.standard_normal((*shape, keys, width))
    V = rng.standard_normal((*shape, keys, width))
    j = rng.integers(0, keys, size=shape)
    pick = lambda T: np.take_along_axis(T, j[..., None, None], axis=-2)[..., 0, :]  # (*shape, width)
    X = np.zeros((*shape, keys + 1, 3 * width))
    X[..., :keys, :width], X[..., :keys, width:2 * width] = K, V
    X[..., keys, 2 * width:] = pick(K) + noise * rng.standard_normal((*shape, width))
    return X, pick(V)


def retrieval_gradients(X: np.ndarray, target: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray,
                        scale) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Loss, query-row output and ``dW_Q, dW_K`` of the recall layer (module docstring), vectorised.

    ``X`` (S, B, m, 3w) and ``target`` (S, B, w) hold each seed's batch; the weights
    ``W_Q, W_K`` (*L, S, 3w, d) one layer per setting ``*L`` and seed, all settings of a seed
    sharing its batch; ``scale`` broadcasts against ``*L``. Returns the loss (*L, S), the output
    ``y`` (*L, S, B, w) and the two gradients (*L, S, 3w, d), each summed over the batch. The
    settings ride in the last axis of every product, so each is one BLAS call per sequence.
    """
    lead, (S, B, _, p), w = W_Q.shape[:-3], X.shape, target.shape[-1]
    L = math.prod(lead)
    WQ, WK = W_Q.reshape(L, S, p, -1), W_K.reshape(L, S, p, -1)
    c = np.broadcast_to(np.asarray(scale, dtype=float), lead).reshape(L)
    M = WQ @ np.swapaxes(WK, -1, -2)  # (L, S, p, p)
    x_q = X[:, :, -1, :]  # (S, B, p)
    qM = np.transpose(x_q[None] @ M, (1, 2, 3, 0))  # (S, B, p, L)
    a = np.asarray(softmax(c * (X @ qM), axis=-2))  # (S, B, m, L): the query row's weights per setting
    V = X[..., w:2 * w]  # (S, B, m, w): W_V reads the value slot
    y = np.swapaxes(a, -1, -2) @ V  # (S, B, L, w)
    err = y - target[:, :, None, :]
    loss = np.mean(err * err, axis=(1, 3))  # (S, L)
    da = V @ np.swapaxes(2.0 * err / (B * w), -1, -2)  # (S, B, m, L)
    ds = a * (da - np.sum(a * da, axis=-2, keepdims=True))
    u = np.swapaxes(ds, -1, -2) @ X  # (S, B, L, p)
    dM = np.swapaxes(x_q, -1, -2) @ u.reshape(S, B, L * p)  # (S, p, L·p): sum over the batch
    dM = c[:, None, None, None] * np.transpose(dM.reshape(S, p, L, p), (2, 0, 1, 3))  # (L, S, p, p)
    gq, gk = dM @ WK, np.swapaxes(dM, -1, -2) @ WQ
    return (loss.T.reshape(*lead, S), np.transpose(y, (2, 0, 1, 3)).reshape(*lead, S, B, w),
            gq.reshape(W_Q.shape), gk.reshape(W_K.shape))


def _value_reader(width: int) -> np.ndarray:
    """``W_V`` (3w, w): the value slot of a token."""
    W_V = np.zeros((3 * width, width))
    W_V[width:2 * width] = np.eye(width)
    return W_V


def _vjp_difference(X, target, A_Q, A_K, basis, arm: str, width: int) -> float:
    """Largest relative difference of output and ``dW_Q, dW_K`` against :func:`attention` / :func:`attention_vjp`.

    The layer's full weights are ``W = A · basis`` (``basis`` (r, d), orthonormal rows); the
    reduced gradients, mapped back by ``· basis``, must equal the library's full-``d`` ones.
    """
    _, y, gq, gk = (r[0] for r in retrieval_gradients(X[None], target[None], A_Q[None], A_K[None],
                                                       _arm_scale(arm, basis.shape[-1])))
    W_Q, W_K, W_V = A_Q @ basis, A_K @ basis, _value_reader(width)
    Y = np.asarray(attention(X, W_Q, W_K, W_V, scale=arm, return_weights=False))
    G = np.zeros_like(Y)
    G[:, -1] = 2.0 * (Y[:, -1] - target) / (X.shape[0] * width)
    ref = attention_vjp(X, W_Q, W_K, W_V, G, scale=arm)
    rel = lambda mine, theirs: float(np.abs(mine - theirs).max()) / max(float(np.abs(theirs).max()), 1e-300)
    return max(rel(y, Y[:, -1]), rel(gq @ basis, np.asarray(ref["W_Q"])), rel(gk @ basis, np.asarray(ref["W_K"])))


def _arm_scale(arm: str, d: int) -> float:
    """The score scale of an arm as the library resolves it (``AttentionSpec.scale_float``)."""
    return AttentionSpec(n=2, d_model=d, d_k=d, d_v=d, scale=arm).scale_float


def train_retrieval(rng: np.random.Generator, *, dims: Sequence[int], steps: int, seeds: int,
                    learning_rates: Sequence[float], batch: int = 16, keys: int = 8, width: int = 8,
                    noise: float = 0.1, evaluate: int = 128, checkpoints: int = 10) -> TrainingRun:
    """Train the recall layer with both arms (:data:`ARMS`) for ``steps`` SGD steps, ``seeds`` runs per setting.

    A setting is (arm, ``d`` in ``dims``, learning rate); all run at once. Every run of a seed
    starts, for a given ``d``, from the same weights whatever its arm and rate, and every run of
    a seed sees the same batches; each seed has its own held-out set of ``evaluate`` sequences,
    on which the loss is measured at ``checkpoints + 1`` evenly spaced steps (the first before
    any update). ``d`` must be at least ``6·width`` (the span of the initial rows).

    Returns a :class:`TrainingRun`: the sizes, the checkpoint steps, the curves of every run,
    and per ``d`` (:class:`TrainingAtD`) each arm's final held-out loss per rate (t-interval over
    seeds), its best rate and the paired best-rate difference, unscaled minus scaled.
    """
    for name, value, least in (("steps", steps, 1), ("seeds", seeds, 2), ("batch", batch, 1),
                               ("keys", keys, 1), ("width", width, 1), ("evaluate", evaluate, 1),
                               ("checkpoints", checkpoints, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SpecError(f"{name} must be an integer >= {least} (got {value!r})")
    if isinstance(noise, bool) or not isinstance(noise, int | float) or not math.isfinite(noise) or noise < 0:
        raise SpecError(f"noise must be a finite number >= 0 (got {noise!r})")
    p = 3 * width
    dims = list(dims)
    if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 2 * p for d in dims):
        raise SpecError(f"dims must be integers >= 6·width = {2 * p}, at least one (got {dims!r})")
    rates = np.asarray([float(r) for r in learning_rates])
    if rates.size == 0 or not np.all(np.isfinite(rates)) or np.any(rates <= 0):
        raise SpecError(f"learning_rates must be positive finite numbers, at least one (got {learning_rates!r})")
    scales = {arm: [_arm_scale(arm, d) for d in dims] for arm in ARMS}
    c = np.array([scales[arm] for arm in ARMS])[:, :, None]  # (arms, dims, 1)
    lr = rates[None, None, :, None, None, None]  # (1, 1, rates, 1, 1, 1)
    A0, bases = [], []
    for d in dims:
        W0 = rng.standard_normal((seeds, 2 * p, d)) / math.sqrt(p)  # rows: W_Q then W_K, per seed, LeCun
        # SGD keeps the rows of W_Q, W_K in the span of their initial rows (dW_Q = dM W_K, dW_K = dMᵀ W_Q):
        # train their coordinates in an orthonormal basis of that span (exact, and d-free): with the
        # Cholesky factor of the Gram matrix, W0 W0ᵀ = L Lᵀ, the coordinates are L, the basis L⁻¹ W0
        L = np.linalg.cholesky(W0 @ np.swapaxes(W0, -1, -2))  # (seeds, 2p, 2p)
        A0.append(L)
        bases.append(np.linalg.solve(L[0], W0[0]))  # the first seed's basis (2p, d), for the check at full d
    A = np.broadcast_to(np.stack(A0)[None, :, None], (len(ARMS), len(dims), rates.size, seeds, 2 * p, 2 * p))
    A_Q, A_K = A[..., :p, :].copy(), A[..., p:, :].copy()  # (arms, dims, rates, seeds, p, 2p)
    X_eval, t_eval = retrieval_batch(rng, (seeds, evaluate), keys, width, noise)
    marks = sorted({round(i * steps / checkpoints) for i in range(checkpoints + 1)})
    curves = np.empty((len(ARMS), len(dims), rates.size, seeds, len(marks)))
    vjp = 0.0
    for step in range(steps + 1):
        if step in marks:
            curves[..., marks.index(step)] = retrieval_gradients(X_eval, t_eval, A_Q, A_K, c)[0]
        if step == steps:
            break
        X, target = retrieval_batch(rng, (seeds, batch), keys, width, noise)
        if step in (0, steps - 1):  # the library's backward at full d: first run of each arm, first and last d
            vjp = max(vjp, *(_vjp_difference(X[0, :VJP_SEQUENCES], target[0, :VJP_SEQUENCES], A_Q[i, j, 0, 0],
                                             A_K[i, j, 0, 0], bases[j], arm, width)
                             for i, arm in enumerate(ARMS) for j in sorted({0, len(dims) - 1})))
        _, _, gq, gk = retrieval_gradients(X, target, A_Q, A_K, c)
        A_Q -= lr * gq
        A_K -= lr * gk
    per_d = []
    for j, d in enumerate(dims):
        last = curves[:, j, :, :, -1]  # (arms, rates, seeds)
        final = {arm: tuple(RateLoss(float(rate), t_interval(last[i, r])) for r, rate in enumerate(rates))
                 for i, arm in enumerate(ARMS)}
        best = [int(np.argmin(last[i].mean(axis=-1))) for i in range(len(ARMS))]
        per_d.append(TrainingAtD(
            d=d, final=final, best_rate={arm: float(rates[best[i]]) for i, arm in enumerate(ARMS)},
            difference=t_interval(last[1, best[1]] - last[0, best[0]]),
            start={arm: float(curves[i, j, best[i]].mean(axis=0)[0]) for i, arm in enumerate(ARMS)}))
    return TrainingRun(dims=tuple(dims), steps=tuple(marks), seeds=seeds, batch=batch, keys=keys, width=width,
                       noise=noise, evaluate=evaluate, learning_rates=tuple(float(r) for r in rates),
                       scales={arm: tuple(v) for arm, v in scales.items()},
                       curves={arm: curves[i] for i, arm in enumerate(ARMS)}, per_d=tuple(per_d), vjp_difference=vjp)
