r"""Experiments on relative positions, shared by the claims and their figures.

* :func:`rope_decay_bound` — RoFormer's long-range bound (Su et al. 2021, §3.4.3). With
  :math:`h_i = \bar q_{(i)} k_{(i)}` the complex product of plane ``i`` of ``q`` and ``k``
  (``q_{(i)} = q_a + \mathrm{i}\, q_b`` for the plane ``(a, b, i)`` of ``spec.rope_pairs``) and
  :math:`S_j = \sum_{i<j} e^{\mathrm{i}\Delta\theta_i}`, Abel summation gives

  .. math::

      \Big|\,q^\top R(\Delta\theta)\, k\,\Big| \le \Big|\sum_i h_i e^{\mathrm{i}\Delta\theta_i}\Big|
      \le \max_i |h_{i+1} - h_i| \sum_{j=1}^{d/2} |S_j| \qquad (h_{d/2} = 0),

  and the paper plots the *relative upper bound* :math:`\frac{1}{d/2}\sum_{j=1}^{d/2} |S_j|`
  against the distance :math:`\Delta`.
* :func:`rope_relative_scores`, :func:`rope_abel_bound` — the actual score
  :math:`q^\top R(\Delta\theta) k` and its bound for given ``q, k`` (to see where it is only a bound).
* :func:`alibi_weights`, :func:`weight_by_distance` — ALiBi's attention weights from per-head
  queries and keys, and the mean weight a query gives the key ``k`` positions back.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from .forward import scores, softmax
from .positions import alibi_bias_block, rope_frequencies

__all__ = ["alibi_weights", "rope_abel_bound", "rope_decay_bound", "rope_relative_scores", "weight_by_distance"]


def _rope(spec) -> AttentionSpec:
    if not isinstance(spec, AttentionSpec) or spec.positions != "rope":
        raise SpecError(f"spec must be an AttentionSpec with positions='rope' (got {spec!r})")
    return spec


def _distances(distances) -> np.ndarray:
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 1 or not np.all(np.isfinite(d)):
        raise ShapeError(f"distances must be a 1-d array of finite numbers (got shape {d.shape})")
    return d


def _partial_sums(spec: AttentionSpec, distances: np.ndarray) -> np.ndarray:
    """``S_j = Σ_{i<j} exp(i Δ θ_i)`` for ``j = 1 … d/2``: shape ``(len(distances), d/2)`` complex."""
    theta = np.asarray(rope_frequencies(spec))  # (d/2,)
    return np.cumsum(np.exp(1j * distances[:, None] * theta[None, :]), axis=1)


def rope_decay_bound(spec: AttentionSpec, distances) -> np.ndarray:
    r"""RoFormer's relative upper bound :math:`\frac{1}{d/2}\sum_{j=1}^{d/2}|S_j|` at each distance ``Δ``.

    ``d = spec.rotary_dims`` and ``θ_i`` are the spec's frequencies. At ``Δ = 0`` every
    ``|S_j| = j``, so the bound is ``(d/2 + 1) / 2``.

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=128, positions="rope")
    >>> bound = rope_decay_bound(spec, [0, 10, 100, 250])
    >>> float(bound[0]), bool(bound[0] > bound[1] > bound[3])
    (32.5, True)
    """
    spec = _rope(spec)
    return np.mean(np.abs(_partial_sums(spec, _distances(distances))), axis=1)


def _planes(spec: AttentionSpec, x: np.ndarray) -> np.ndarray:
    """``x_a + i x_b`` for every plane ``(a, b, i)``: ``(..., d/2)`` complex."""
    a = [p[0] for p in spec.rope_pairs]
    b = [p[1] for p in spec.rope_pairs]
    return x[..., a] + 1j * x[..., b]


def _check_qk(spec: AttentionSpec, q, k) -> tuple[np.ndarray, np.ndarray]:
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if q.shape[-1:] != (spec.d_k,) or q.shape != k.shape:
        raise ShapeError(f"q and k must have the same shape (..., d_k) with d_k = {spec.d_k} "
                         f"(got {q.shape} and {k.shape})")
    return q, k


def rope_relative_scores(q, k, spec: AttentionSpec, distances) -> np.ndarray:
    r"""The RoPE score :math:`q^\top R(\Delta\theta)\, k` of a query and a key ``Δ`` positions apart.

    By :func:`attnsym.symbolic.prove_rope_relative` this is the score of ``q`` at position
    ``m`` and ``k`` at ``n = m + Δ`` for every ``m``. Computed plane by plane as
    :math:`\operatorname{Re}\sum_i h_i e^{\mathrm{i}\Delta\theta_i}` plus the pass-through
    coordinates' ``q·k`` (one small matrix product; the tests tie it to :func:`rope_rotation`).

    Parameters
    ----------
    q, k : (..., d_k) arrays
    spec : AttentionSpec with positions="rope"
    distances : (D,) array

    Returns
    -------
    (..., D) array

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=2, positions="rope")
    >>> rope_relative_scores(np.array([1.0, 0.0]), np.array([1.0, 0.0]), spec, [0, np.pi]).round(12)
    array([ 1., -1.])
    """
    spec = _rope(spec)
    q, k = _check_qk(spec, q, k)
    d = _distances(distances)
    h = np.conj(_planes(spec, q)) * _planes(spec, k)  # (..., d/2)
    phase = np.exp(1j * d[:, None] * np.asarray(rope_frequencies(spec))[None, :])  # (D, d/2)
    rest = spec.rotary_dims
    passthrough = np.sum(q[..., rest:] * k[..., rest:], axis=-1, keepdims=True)  # (..., 1)
    return np.real(h @ phase.T) + passthrough


def rope_abel_bound(q, k, spec: AttentionSpec, distances) -> np.ndarray:
    r"""The bound :math:`\max_i |h_{i+1} - h_i| \sum_j |S_j|` on :math:`|q^\top R(\Delta\theta) k|` (rotated part).

    Only the rotated coordinates are bounded; with ``rotary_pct < 1`` the pass-through
    coordinates add the distance-independent term ``q_pass · k_pass``.

    Returns
    -------
    (..., D) array

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=8, positions="rope")
    >>> rng = np.random.default_rng(0); q, k = rng.standard_normal((2, 8))
    >>> d = np.arange(50)
    >>> bool(np.all(np.abs(rope_relative_scores(q, k, spec, d)) <= rope_abel_bound(q, k, spec, d) + 1e-12))
    True
    """
    spec = _rope(spec)
    q, k = _check_qk(spec, q, k)
    h = np.conj(_planes(spec, q)) * _planes(spec, k)  # (..., d/2)
    h_next = np.concatenate([h[..., 1:], np.zeros_like(h[..., :1])], axis=-1)  # h_{d/2} = 0
    step = np.max(np.abs(h_next - h), axis=-1, keepdims=True)  # (..., 1)
    return step * np.sum(np.abs(_partial_sums(spec, _distances(distances))), axis=-1)


def alibi_weights(Q, K, spec: AttentionSpec):
    """ALiBi attention weights ``softmax(c Q_h K_hᵀ − m_h |i − j|)`` per head, with the spec's mask.

    Parameters
    ----------
    Q, K : (..., H, n, d_k) arrays
        Per-head queries and keys (leading batch axes allowed).
    spec : AttentionSpec with positions="alibi"

    Returns
    -------
    (..., H, n, n) array

    Examples
    --------
    >>> spec = AttentionSpec(n=3, d_model=2, heads=2, positions="alibi", causal=True)
    >>> A = alibi_weights(np.zeros((2, 3, 1)), np.zeros((2, 3, 1)), spec)
    >>> A[0, 2].round(4)  # zero scores: weights ∝ exp(−m (i − j)), m = 1/16
    array([0.3127, 0.3329, 0.3544])
    """
    if not isinstance(spec, AttentionSpec) or spec.positions != "alibi":
        raise SpecError(f"spec must be an AttentionSpec with positions='alibi' (got {spec!r})")
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    want = (spec.heads, spec.n, spec.d_k)
    if Q.shape[-3:] != want or K.shape != Q.shape:
        raise ShapeError(f"Q and K must have shape (..., heads, n, d_k) = (..., {want[0]}, {want[1]}, {want[2]}) "
                         f"(got {Q.shape} and {K.shape})")
    n = spec.n
    S = scores(Q, K, spec.scale_float) + alibi_bias_block(spec, 0, n, 0, n, xp=np, dtype=None)
    return softmax(S, allowed=spec.allowed_array())


def weight_by_distance(A) -> np.ndarray:
    """Mean weight ``A[i, i − k]`` over the queries ``i ≥ k``, for ``k = 0 … n − 1``: shape ``(..., n)``.

    Examples
    --------
    >>> weight_by_distance(np.array([[1.0, 0.0], [0.25, 0.75]]))
    array([0.875, 0.25 ])
    """
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[-1]
    return np.stack([np.mean(np.diagonal(A, offset=-k, axis1=-2, axis2=-1), axis=-1) for k in range(n)], axis=-1)
