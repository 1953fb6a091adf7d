"""Is the softmax Jacobian ``diag(a) − a aᵀ``? Derived exactly, against central differences, and the twins paired.

:func:`study` returns a :class:`SoftmaxJacobianResult` for a formula under test ``claimed(a)``
(applied to a SymPy column and to a NumPy vector alike; default ``diag(a) − a aᵀ``):

* exactly, for small n (:func:`attnsym.symbolic.jacobians.derive_softmax_jacobian`): whether the
  derivative of softmax equals the claimed formula at ``a = softmax(z)``, the closed form's rank at
  an exact rational point of the open simplex, its row sums and its leading minor;
* in float64, for n up to 16 (64 in full mode): the claimed formula at ``a = softmax(z)`` against
  central differences of :func:`attnsym.numeric.softmax` (step :data:`FD_STEP`), its numeric rank
  and ``max|J·1|``, and for n ≤ 4 the symbolic closed form against the numeric twin
  :func:`attnsym.numeric.softmax_jacobian`.

The claim ``softmax-jacobian`` judges it.

>>> r = study(lambda: np.random.default_rng(0), quick=True)
>>> [p.rank for p in r.proofs], r.rows[-1].n
([1, 2], 16)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..numeric import softmax
from ..numeric import softmax_jacobian as num_jacobian
from ..symbolic.jacobians import derive_softmax_jacobian, softmax_output_symbols
from ..symbolic.jacobians import softmax_jacobian as sym_jacobian
from ..tolerances import TOLERANCES
from ._streams import Streams

__all__ = ["FD_STEP", "FiniteDifferenceRow", "JacobianProof", "SoftmaxJacobianResult", "closed_form", "study"]

#: central differences with step h: truncation O(h^2) + rounding O(eps/h); h = 1e-5 gives ~1e-10
FD_STEP = 1e-5


def closed_form(a: Any) -> Any:
    """``diag(a) − a aᵀ`` of a SymPy column or a NumPy vector ``a``."""
    if isinstance(a, np.ndarray):
        return np.diag(a) - np.outer(a, a)
    return sp.diag(*a) - a * a.T


@dataclass(frozen=True)
class JacobianProof:
    """Size ``n``: the derivative of softmax (``derived``) equals the claimed formula (``equal``, and the derivation's
    own check passed); the closed form, its rank at a rational point of the simplex, zero row sums, the leading minor."""

    n: int
    equal: bool
    derived: sp.Matrix
    closed_form: sp.Matrix
    rank: int
    row_sums_zero: bool
    minor: sp.Expr


@dataclass(frozen=True)
class FiniteDifferenceRow:
    """Size ``n`` in float64: ``max|J − FD|`` of the claimed ``J``, its numeric rank, ``max|J·1|``, and for n ≤ 4 the
    largest excess of ``|symbolic − twin|`` over ``rtol·|twin|`` (None above 4)."""

    n: int
    fd_error: float
    rank: int
    null: float
    twin_excess: float | None


@dataclass(frozen=True)
class SoftmaxJacobianResult:
    """What :func:`study` found: one :class:`JacobianProof` per exact size, one :class:`FiniteDifferenceRow` per
    float64 size."""

    proofs: tuple[JacobianProof, ...]
    rows: tuple[FiniteDifferenceRow, ...]


def _proof(n: int, claimed: Callable[[Any], Any]) -> JacobianProof:
    jac = derive_softmax_jacobian(n)
    claimed_here = sp.Matrix(claimed(sp.Matrix(jac.softmax)))  # the claimed formula at a = softmax(z)
    equal = all(sp.cancel(sp.together(u - v)) == 0 for u, v in zip(jac.derived, claimed_here, strict=True))
    # the rank computed, not assumed: diag(a) − a aᵀ at an exact rational point of the open simplex
    a_syms = sorted(jac.closed_form.free_symbols, key=lambda v: v.name)
    a_point = {v: sp.Rational(2 * k + 1, n * n) for k, v in enumerate(a_syms)}  # Σ (2k + 1) = n², all > 0
    return JacobianProof(n, bool(jac.proven and equal), sp.Matrix(jac.derived), sp.Matrix(jac.closed_form),
                         int(sp.Matrix(jac.closed_form).xreplace(a_point).rank()), all(v == 0 for v in jac.row_sums),
                         jac.minor_determinant)


def _row(z: np.ndarray, claimed: Callable[[Any], Any]) -> FiniteDifferenceRow:
    n = z.size
    a = np.asarray(softmax(z))
    J = np.asarray(claimed(a), dtype=float)  # (n, n)
    fd = np.empty((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = FD_STEP
        fd[:, j] = (np.asarray(softmax(z + e)) - np.asarray(softmax(z - e))) / (2 * FD_STEP)
    excess = None
    if n <= 4:  # the symbolic closed form, evaluated at a, against the numeric twin
        values = {sym: float(a[i]) for i, sym in enumerate(softmax_output_symbols(n))}  # a_1 is a[0]
        sym_num = np.array(sym_jacobian(n).xreplace(values).evalf(), dtype=float)
        twin = np.asarray(num_jacobian(a))
        excess = float(np.max(np.abs(sym_num - twin) - TOLERANCES["float64"].rtol * np.abs(twin)))
    return FiniteDifferenceRow(n, float(np.max(np.abs(J - fd))), int(np.linalg.matrix_rank(J, tol=1e-10)),
                               float(np.max(np.abs(J @ np.ones(n)))), excess)


def study(rng: Streams, *, quick: bool, claimed: Callable[[Any], Any] = closed_form) -> SoftmaxJacobianResult:
    """Exact n = 2, 3 (and 4), float64 n = 2, 5, 16 (and 64). ``rng()`` draws the logits ``z`` (scale 2)."""
    proofs = tuple(_proof(n, claimed) for n in ((2, 3) if quick else (2, 3, 4)))
    generator = rng()
    rows = tuple(_row(generator.standard_normal(n) * 2.0, claimed) for n in ((2, 5, 16) if quick else (2, 5, 16, 64)))
    return SoftmaxJacobianResult(proofs, rows)
