"""What is GELU, and how far is its tanh approximation? Exactly (SymPy) and in float64 against SciPy's normal CDF.

:func:`study` returns a :class:`GeluResult`: :func:`attnsym.symbolic.prove_gelu` (``GELU = x·Φ(x)``
with Φ certified by ``Φ′ = φ``, ``Φ(−∞) = 0``; the derivative, limits and minimum); the numeric twin
:func:`attnsym.numeric.gelu` against ``x·ndtr(x)`` on [−10, 10] and against the exact form at a few
points; the largest error of :func:`attnsym.numeric.gelu_tanh` (a grid, refined around its peak by
:func:`refine_peak`) and the same error at that point in 30-digit arithmetic; the figure's curves.

The claim ``gelu`` judges it; :func:`attnsym.plots.gelu_figure` draws :attr:`GeluResult.figure`.

>>> value, at = refine_peak(lambda t: -(t - 0.3) ** 2, 0.0, 1.0, xatol=1e-9)
>>> round(at, 6), value
(0.3, -0.0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import gelu as num_gelu
from ..numeric import gelu_tanh as num_gelu_tanh
from ..symbolic import gelu, gelu_tanh, prove_gelu
from ..symbolic.activations import GeluProof

__all__ = ["GeluResult", "refine_peak", "study"]

#: exact points where the symbolic and numeric GELU are compared
SYMBOLIC_POINTS = (-3, -1, sp.Rational(1, 2), 2)


@dataclass(frozen=True)
class GeluResult:
    """What :func:`study` found: the proof; ``twin_error`` (numeric vs ``x·ndtr(x)``), ``symbolic_error`` (numeric vs
    exact at :data:`SYMBOLIC_POINTS`); the tanh approximation's largest error ``max_error`` at ``at_x`` and the same
    error in 30 digits (``exact_at``); ``figure``: x, GELU and its tanh approximation on [−5, 5]."""

    proof: GeluProof
    twin_error: float
    symbolic_error: float
    max_error: float
    at_x: float
    exact_at: float
    figure: tuple[np.ndarray, np.ndarray, np.ndarray]


def refine_peak(f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, *, xatol: float,
                points: int = 201) -> tuple[float, float]:
    """The largest value of ``f`` (vectorised) on ``[lo, hi]`` and where: a grid, narrowed around its best point.

    Each round evaluates ``points`` equally spaced points and keeps the two cells around the
    best one (a 100-fold narrowing), until the interval is narrower than ``xatol``; for a peak
    that is the only maximum of the interval (the grid search bracketed it) this converges to it
    as SciPy's bounded Brent search did, in four rounds here, without importing scipy.optimize.
    """
    while True:
        t = np.linspace(lo, hi, points)
        values = f(t)
        best = int(np.argmax(values))
        if hi - lo <= xatol:
            return float(values[best]), float(t[best])
        lo, hi = t[max(best - 1, 0)], t[min(best + 1, points - 1)]


def study(*, quick: bool) -> GeluResult:
    """The proof and the float64 checks on 20 001 grid points (200 001 in full mode); nothing is sampled."""
    # SciPy's normal CDF is an independent implementation of Φ; imported here, not at module top: scipy.special is
    # about 0.2 s CPU of importing attnsym.claims
    from scipy.special import ndtr

    grid = np.linspace(-10.0, 10.0, 20001 if quick else 200001)
    exact = np.asarray(num_gelu(grid))
    twin = float(np.max(np.abs(exact - grid * ndtr(grid))))
    sym = max(abs(float(gelu(v)) - float(num_gelu(np.array([float(v)]))[0])) for v in SYMBOLIC_POINTS)
    i = int(np.argmax(np.abs(np.asarray(num_gelu_tanh(grid)) - exact)))  # the grid's peak, then refined around it
    step = grid[1] - grid[0]
    max_err, at_x = refine_peak(lambda t: np.abs(np.asarray(num_gelu_tanh(t)) - t * ndtr(t)),
                                grid[i] - step, grid[i] + step, xatol=1e-10)
    exact_at = abs(float((gelu_tanh(sp.Float(at_x, 30)) - gelu(sp.Float(at_x, 30))).evalf(30)))
    x = np.linspace(-5.0, 5.0, 801)
    return GeluResult(prove_gelu(), twin, sym, max_err, at_x, exact_at,
                      (x, np.asarray(num_gelu(x)), np.asarray(num_gelu_tanh(x))))
