r"""Non-identifiable attention in float64: the twin of :mod:`attnsym.symbolic.identifiability`.

* :func:`null_directions` — an orthonormal basis of :math:`\{d : V^\top d = 0,\ \mathbf 1^\top d = 0\}`
  (from the SVD of :math:`[V\ \mathbf 1]^\top`; singular values below ``rtol·σ_max`` count as zero);
* :func:`alternative_attention` — :math:`A' = A + \operatorname{diag}(t)\, \mathbf 1 d^\top`, each row
  moved along ``d`` by half its largest non-negative step: row-stochastic, :math:`A'V = AV`;
* :func:`effective_attention` — :math:`A P_V` with :math:`P_V` the projector onto the column space of ``V``.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError

__all__ = ["alternative_attention", "effective_attention", "null_directions"]


def _matrix(name: str, M) -> np.ndarray:
    """``M`` as a finite 2-d float64 array, or a ShapeError naming ``name``."""
    try:
        out = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"{name} must be a 2-d array of numbers (got {type(M).__name__})") from None
    if out.ndim != 2 or not out.size or not np.all(np.isfinite(out)):
        raise ShapeError(f"{name} must be a non-empty finite 2-d array (got shape {out.shape})")
    return out


def null_directions(V, rtol: float = 1e-10) -> np.ndarray:
    """``(T, k)``: an orthonormal basis of the null space of ``[V 1]ᵀ`` (``k = 0`` when ``A`` is identifiable).

    >>> null_directions(np.array([[1.0], [2.0], [3.0]])).shape
    (3, 1)
    """
    V = _matrix("V", V)
    M = np.hstack([V, np.ones((V.shape[0], 1))]).T  # (d_v + 1, T)
    _, s, vt = np.linalg.svd(M)
    rank = int(np.sum(s > rtol * s[0])) if s.size else 0
    return vt[rank:].T


def alternative_attention(A, V, rtol: float = 1e-10, *, directions: np.ndarray | None = None) -> np.ndarray | None:
    """Another row-stochastic ``A′ ≠ A`` with ``A′V = AV`` (``None`` when there is none).

    Row ``i`` moves along the null direction ``±d`` (of the basis) that moves it farthest, by
    ``t_i = ½ min_{j: d_j<0} A_ij/|d_j|``: half the largest step that keeps the row non-negative.

    >>> A = np.full((3, 3), 1 / 3)
    >>> V = np.array([[1.0], [2.0], [3.0]])
    >>> B = alternative_attention(A, V)
    >>> bool(np.allclose(B @ V, A @ V)), bool(np.allclose(B.sum(1), 1)), bool(np.abs(B - A).max() > 0.1)
    (True, True, True)
    """
    A = _matrix("A", A)
    if A.shape[1] != np.shape(V)[0]:
        raise ShapeError(f"A must have as many columns as V has rows (got A {A.shape}, V {np.shape(V)})")
    D = null_directions(V, rtol) if directions is None else directions  # ``directions``: null_directions(V), computed
    if D.shape[1] == 0:
        return None
    D = np.hstack([D, -D])  # (T, 2k): both signs of every direction
    with np.errstate(divide="ignore"):
        ratios = np.where(D[None] < 0, A[:, :, None] / np.where(D < 0, -D, 1.0)[None], np.inf)  # (rows, T, 2k)
    t = 0.5 * np.min(ratios, axis=1)  # (rows, 2k): the step each direction allows each row
    best = np.argmax(t * np.abs(D).sum(axis=0)[None], axis=1)  # (rows,): the direction moving the row farthest
    rows = np.arange(A.shape[0])
    return A + t[rows, best][:, None] * D[:, best].T


def effective_attention(A, V) -> np.ndarray:
    """Brunner et al.'s effective attention ``A V V⁺``: the component of each row of ``A`` in the column space of ``V``."""
    A, V = _matrix("A", A), _matrix("V", V)
    if A.shape[1] != V.shape[0]:
        raise ShapeError(f"A must have as many columns as V has rows (got A {A.shape}, V {V.shape})")
    return A @ V @ np.linalg.pinv(V)
