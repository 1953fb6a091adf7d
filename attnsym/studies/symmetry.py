"""When is ``Q Kᵀ`` symmetric? The exact criterion on weight pairs, a float64 counter-example, and the biases.

:func:`study` returns a :class:`SymmetryResult`: for generic symbolic weights, ``W_K = W_Q``,
``W_K = W_Q R`` (R symmetric, not I) and random integer weights,
:func:`attnsym.symbolic.symmetry.prove_qk_symmetry_condition` (is ``Q Kᵀ`` symmetric for every X,
and does the proved equivalence hold); :func:`attnsym.symbolic.symmetry.prove_gram_symmetric`;
the float64 scores ``X Xᵀ``, with separate random ``W_Q, W_K`` and with ``W_K = W_Q``; and whether
``Q Kᵀ`` stays symmetric with separate or shared biases (``W_K = W_Q``).

The claim ``qk-asymmetry`` judges a symmetry criterion against it.

>>> r = study(lambda *k: np.random.default_rng(0), quick=True)
>>> [c.name for c in r.cases][1], r.cases[1].truth
('W_K = W_Q', True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import scores
from ..symbolic.symmetry import prove_gram_symmetric, prove_qk_symmetry_condition
from ._streams import Streams

__all__ = ["SymmetryCase", "SymmetryResult", "study"]


@dataclass(frozen=True)
class SymmetryCase:
    """A weight pair (None: generic symbols): is ``Q Kᵀ`` symmetric for every X (``truth``), does the proved
    equivalence hold, and do the coefficients of ``S₁₂ − S₂₁`` equal those of ``M − Mᵀ``."""

    name: str
    W_Q: sp.Matrix | None
    W_K: sp.Matrix | None
    truth: bool
    equivalence_holds: bool
    coefficients_match: bool


@dataclass(frozen=True)
class SymmetryResult:
    """What :func:`study` found: the cases, ``X Xᵀ`` symmetric (exact), the float64 scores (n × n) of ``X Xᵀ``, of
    separate random weights and of tied ones, and whether ``Q Kᵀ`` is symmetric with separate / shared biases."""

    cases: tuple[SymmetryCase, ...]
    gram: bool
    S_gram: np.ndarray
    S_separate: np.ndarray
    S_tied: np.ndarray
    separate_biases_symmetric: bool
    shared_bias_symmetric: bool


def _random_integer(rng: np.random.Generator, d: int) -> sp.Matrix:
    return sp.Matrix(d, d, [int(v) for v in rng.integers(-3, 4, d * d)])


def _biased_symmetric(W: sp.Matrix, shared: bool) -> bool:
    """``Q Kᵀ`` of two symbolic tokens with ``W_K = W_Q = W`` and biases ``b_Q``, ``b_K`` (``shared``: ``b_K = b_Q``)."""
    d = W.shape[0]
    Xs = sp.Matrix(2, d, lambda i, j: sp.Symbol(f"x_{{{i + 1},{j + 1}}}"))
    b_Q, b_K = (sp.Matrix(1, d, lambda _, j, name=name: sp.Symbol(f"b^{{{name}}}_{{{j + 1}}}")) for name in ("Q", "K"))
    ones = sp.ones(2, 1)
    S = (Xs * W + ones * b_Q) * (Xs * W + ones * (b_Q if shared else b_K)).T
    return sp.expand(S[0, 1] - S[1, 0]) == 0


def study(rng: Streams, *, quick: bool) -> SymmetryResult:
    """Width d = 2 (3 in full mode); n = 6 (16) float64 tokens. ``rng()`` draws the integer weights and the tokens."""
    generator = rng()
    d = 2 if quick else 3
    W = _random_integer(generator, d)
    while W.det() == 0:
        W = _random_integer(generator, d)
    R = sp.Matrix(d, d, lambda i, j: 1 + i + j)  # symmetric, not the identity
    pairs = {"generic symbolic W_Q, W_K": (None, None), "W_K = W_Q": (W, W), "W_K = W_Q R, R symmetric": (W, W * R),
             "random integer W_Q, W_K": (W, _random_integer(generator, d))}
    cases = []
    for name, (WQ, WK) in pairs.items():
        proof = prove_qk_symmetry_condition(WQ, WK, d_model=d, d_k=d)
        cases.append(SymmetryCase(name, WQ, WK, proof.scores_symmetric, proof.equivalence_holds,
                                  proof.coefficients_match))
    n = 6 if quick else 16
    X = generator.standard_normal((n, d))
    WQn, WKn = (generator.standard_normal((d, d)) / np.sqrt(d) for _ in range(2))
    return SymmetryResult(tuple(cases), prove_gram_symmetric(3 if quick else 4, 2), np.asarray(scores(X, X)),
                          np.asarray(scores(X @ WQn, X @ WKn)), np.asarray(scores(X @ WQn, X @ WQn)),
                          _biased_symmetric(W, shared=False), _biased_symmetric(W, shared=True))
