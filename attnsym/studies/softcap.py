"""What does soft-capping ``c·tanh(ℓ/c)`` (Gemma 2) do to a logit? Exactly and on a float64 grid.

:func:`study` returns a :class:`SoftcapResult`: the symbolic capped logit
(:func:`attnsym.symbolic.softcap.softcap`) and its slope, the limits at ``±∞``, the certificate
``g′ = x² − tanh² x`` of the cubic bound (:func:`attnsym.symbolic.softcap.cubic_gap_certificate`),
and the capped logit evaluated in float64 on a grid of ``ℓ`` up to 10⁴·c (and on the figure's
range ±4c).

The claim ``softcap-facts`` judges it against the claimed error bound;
:func:`attnsym.plots.literature.softcap_figure` draws it.

>>> r = study(quick=True, cap=50)
>>> float(r.limits[0].subs(r.c, 50)), r.grid.size
(50.0, 4003)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..symbolic import softcap as capping

__all__ = ["SoftcapResult", "study"]


@dataclass(frozen=True)
class SoftcapResult:
    """What :func:`study` found: the symbols ``ell``, ``c``, the capped logit ``f`` and its ``slope``, the limits at
    ``+∞`` and ``−∞``, the certificate's ``g``, ``g′`` and whether ``g′ = x² − tanh² x``; the float64 values on the
    grid and on the figure's range, for the cap ``cap``."""

    ell: sp.Symbol
    c: sp.Symbol
    f: sp.Expr
    slope: sp.Expr
    limits: tuple[sp.Expr, sp.Expr]
    g: sp.Expr
    dg: sp.Expr
    certificate: bool
    cap: float
    grid: np.ndarray
    values: np.ndarray
    shown: np.ndarray
    shown_values: np.ndarray

    @property
    def g_at_zero(self) -> sp.Expr:
        """``g(0)``."""
        return self.g.subs(sp.Symbol("x", nonnegative=True), 0)


def study(*, quick: bool, cap: float = 50) -> SoftcapResult:
    """The exact facts and the capped logits at 4003 (40 003) grid points; nothing is sampled."""
    ell, c = sp.Symbol("ell", real=True), sp.Symbol("c", positive=True)
    f = capping.softcap(ell, c)
    g, dg, certificate = capping.cubic_gap_certificate()
    numeric = sp.lambdify((ell, c), f, "numpy")
    count = 2001 if quick else 20001
    grid = np.concatenate([-np.logspace(-3, 4, count)[::-1] * cap, [0.0], np.logspace(-3, 4, count) * cap])
    shown = np.linspace(-4 * cap, 4 * cap, 401)
    return SoftcapResult(ell, c, f, capping.softcap_slope(ell, c), (sp.limit(f, ell, sp.oo), sp.limit(f, ell, -sp.oo)),
                         g, dg, bool(certificate), float(cap), grid, np.asarray(numeric(grid, cap), dtype=float),
                         shown, np.asarray(numeric(shown, cap), dtype=float))
