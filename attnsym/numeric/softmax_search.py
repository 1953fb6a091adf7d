"""Numeric searches for the extremes of softmax: least entropy on a logit sphere, largest Jacobian norm.

The exact answers are in :mod:`attnsym.symbolic.softmax_limits`; these searches are the
independent side: random draws plus local optimisation from many starts (SciPy), seeded, with
the best point found returned so that a claim can say where the extreme sits.

>>> import numpy as np
>>> best = max_jacobian_norm(4, np.random.default_rng(0), samples=200, restarts=4)
>>> round(best.value, 6), sorted(np.round(best.point, 3).tolist())[-2:]
(0.5, [0.5, 0.5])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .entropy import softmax_entropy  # re-exported: it was defined here
from .jacobians import softmax_jacobian

__all__ = ["SearchResult", "entropy_on_sphere", "entropy_on_sphere_and_gradient", "max_jacobian_norm",
           "min_entropy_on_sphere", "softmax_entropy"]


@dataclass(frozen=True)
class SearchResult:
    """The best value a search found, the point where (logits or weights) and how many points it tried."""

    value: float
    point: np.ndarray
    evaluations: int


def _on_sphere(u: np.ndarray, sigma: float) -> np.ndarray:
    return sigma * u / np.linalg.norm(u, axis=-1, keepdims=True)


def entropy_on_sphere_and_gradient(u: np.ndarray, sigma: float) -> tuple[float, np.ndarray]:
    """``H(softmax(z))`` at ``z = σ u/‖u‖`` and its gradient in ``u`` (1-D ``u``).

    ``∂H/∂z = −a ⊙ (z − aᵀz)`` (from ``H = lse(z) − aᵀz`` and ``∂a/∂z = diag(a) − a aᵀ``), and
    ``∂z/∂u = (σ/‖u‖)(I − û ûᵀ)``, so ``∇_u = (σ/‖u‖)(g − û (ûᵀg))`` with ``g = ∂H/∂z``.
    """
    r = float(np.linalg.norm(u))
    unit = u / r
    z = sigma * unit
    e = np.exp(z - z.max())
    a = e / e.sum()
    g = -a * (z - a @ z)
    return float(softmax_entropy(z)), (sigma / r) * (g - unit * (unit @ g))


def entropy_on_sphere(T: int, sigma: float, rng: np.random.Generator, samples: int) -> np.ndarray:
    """Entropies of ``softmax(z)`` for ``samples`` logit vectors drawn uniformly on ``‖z‖₂ = σ`` (``T`` keys)."""
    return softmax_entropy(_on_sphere(rng.standard_normal((samples, T)), sigma))


def min_entropy_on_sphere(T: int, sigma: float, rng: np.random.Generator, *, samples: int = 2000,
                          restarts: int = 8) -> SearchResult:
    """The least entropy of ``softmax(z)`` found over ``‖z‖₂ = σ``: random draws, then BFGS from the best starts.

    The sphere suffices: the bound of Zhai et al. decreases in ``σ``, so the ball's minimum lies
    on its boundary. BFGS gets the analytic gradient (:func:`entropy_on_sphere_and_gradient`;
    finite differences cost ~T + 1 evaluations per gradient). Returns the logits ``z`` of the
    best point (on the sphere).
    """
    from scipy.optimize import minimize  # lazy: scipy.special + scipy.optimize are ~0.6 s CPU of importing attnsym.claims

    Z = _on_sphere(rng.standard_normal((samples, T)), sigma)
    H = softmax_entropy(Z)
    best_i = np.argsort(H)[:restarts]
    value, point, evaluations = float(H[best_i[0]]), Z[best_i[0]], samples
    for i in best_i:
        res = minimize(entropy_on_sphere_and_gradient, Z[i], args=(sigma,), jac=True, method="BFGS")
        evaluations += int(res.nfev)
        if res.fun < value:
            value, point = float(res.fun), _on_sphere(res.x, sigma)
    return SearchResult(value, point, evaluations)


def _top_eigenvalue(a: np.ndarray) -> float:
    return float(np.linalg.eigvalsh(np.asarray(softmax_jacobian(a)))[-1])  # symmetric PSD: spectral norm


def _negative_norm_and_gradient(a: np.ndarray) -> tuple[float, np.ndarray]:
    """``−λ_max(diag(a) − a aᵀ)`` and its gradient in ``a``.

    With ``v`` the top eigenvector, ``λ = Σ a_i v_i² − (aᵀv)²``, so ``∂λ/∂a_i = v_i² − 2 v_i aᵀv``.
    """
    w, vecs = np.linalg.eigh(np.asarray(softmax_jacobian(a)))
    v = vecs[:, -1]
    return -float(w[-1]), -(v**2 - 2 * v * (a @ v))


def max_jacobian_norm(n: int, rng: np.random.Generator, *, samples: int = 2000, restarts: int = 8) -> SearchResult:
    """The largest ``‖diag(a) − a aᵀ‖₂`` found over the simplex (``n`` keys): Dirichlet draws, then SLSQP.

    Draws mix flat and sparse Dirichlet concentrations (the maximum sits on an edge of the
    simplex); the best ``restarts`` of them are refined by SciPy's SLSQP on the simplex
    (``a ≥ 0``, ``Σ a = 1``) with the analytic gradient. Returns the weights ``a`` of the best point.
    """
    from scipy.optimize import minimize  # lazy, as in min_entropy_on_sphere

    alphas = rng.choice([0.1, 0.5, 1.0, 3.0], size=samples)
    A = np.array([rng.dirichlet(np.full(n, al)) for al in alphas])
    norms = np.linalg.eigvalsh(np.asarray(softmax_jacobian(A)))[:, -1]
    best_i = np.argsort(norms)[::-1][:restarts]
    value, point, evaluations = float(norms[best_i[0]]), A[best_i[0]], samples
    simplex = {"type": "eq", "fun": lambda a: a.sum() - 1.0, "jac": lambda a: np.ones_like(a)}
    for i in best_i:
        res = minimize(_negative_norm_and_gradient, A[i], jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * n,
                       constraints=[simplex], options={"ftol": 1e-15, "maxiter": 200})
        evaluations += int(res.nfev)
        a = np.clip(res.x, 0.0, None)
        a = a / a.sum()
        found = _top_eigenvalue(a)
        if found > value:
            value, point = found, a
    return SearchResult(value, point, evaluations)
