"""Sampled logits of correlated queries and keys (Yang et al. 2022, Tensor Programs V): the twin of :mod:`attnsym.symbolic.mup`.

``q_i = z_1``, ``k_i = ρ z_1 + √(1 − ρ²) z_2`` per coordinate, ``d`` coordinates, logit ``c·q·k``.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import finite_real, positive_int
from ..errors import SpecError

__all__ = ["correlated_logits"]


def correlated_logits(rng: np.random.Generator, d: int, samples: int, rho: float, scale: float) -> np.ndarray:
    """``samples`` draws of ``scale · q·k`` for ``d``-dimensional correlated ``q``, ``k`` (correlation ``rho``).

    >>> x = correlated_logits(np.random.default_rng(0), 256, 4000, 0.5, 1 / 256)
    >>> bool(abs(x.mean() - 0.5) < 0.01)
    True
    """
    d, samples = positive_int("d", d), positive_int("samples", samples)
    rho, scale = finite_real("rho", rho), finite_real("scale", scale)
    if not -1 <= rho <= 1:
        raise SpecError(f"rho must lie in [-1, 1] (got {rho})")
    q = rng.standard_normal((samples, d))
    k = rho * q + math.sqrt(1 - rho * rho) * rng.standard_normal((samples, d))
    return scale * np.einsum("sd,sd->s", q, k)
