"""Does the output of attention determine its weights? Brunner et al.'s question, exactly and in float64.

:func:`study` returns an :class:`IdentifiabilityResult`:

* exactly (``d_v = 2``, rational softmax weights of integer-log scores, integer ``V``): another
  row-stochastic ``A′`` from :func:`attnsym.symbolic.identifiability.alternative_attention` at
  ``T = d_v + 1 + margin``, checked from the definition (``A′V``, row sums, signs), the effective
  attention, and whether one exists at ``T = d_v + 1`` with ``[V 1]`` invertible;
* in float64 (:func:`attnsym.numeric.attention`'s weights and values at ``T = 40``, and 128 in full
  mode): an :class:`Alternative` per layer — its null dimension and how far it moved;
* the figure's case (``T = 12``, ``d_v = 3``) as arrays.

:func:`real_model` asks the same of every head of a loaded model on one real text. The claim
``non-identifiable`` judges both; :func:`attnsym.plots.literature_structure.identifiability_figure`
draws :attr:`IdentifiabilityResult.figure`.

>>> r = alternative(np.full((4, 4), 0.25), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]]))
>>> r.found, r.null_dimension, r.output_gap < 1e-12
(True, 1, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..numeric import attention as numeric_attention
from ..numeric import identifiability as numeric_id
from ..numeric import random_inputs
from ..spec import AttentionSpec
from ..symbolic import identifiability as exact_id
from ..symbolic.operations import row_softmax
from ._streams import Streams

__all__ = ["D_V", "Alternative", "ExactAlternative", "FigureCase", "HeadAlternative", "IdentifiabilityResult",
           "RealModelAlternatives", "alternative", "real_model", "study"]

#: the value width of the exact case
D_V = 2


@dataclass(frozen=True)
class ExactAlternative:
    """The exact case: rational ``A`` (T × T), integer ``V`` (T × d_v), the alternative ``A′`` (None: none found) and
    what it satisfies; ``unique_below`` says no alternative exists at ``T = d_v + 1`` (a second integer ``V``)."""

    T: int
    d_v: int
    A: sp.Matrix
    V: sp.Matrix
    alternative: sp.Matrix | None
    same_output: bool
    stochastic: bool
    differs: bool
    effective_reproduces: bool
    unique_below: bool

    @property
    def exists(self) -> bool:
        """An alternative ``A′`` was found."""
        return self.alternative is not None


@dataclass(frozen=True)
class Alternative:
    """Another row-stochastic ``A′`` for one float64 ``(A, V)`` (``found`` False: none, and the gaps are NaN).

    ``output_gap`` is ``max|A′V − AV| / max|AV|``, ``row_sum_gap`` the largest change of a row sum,
    ``moved`` the largest total variation ``½Σ_j|A′ − A|`` of a row, ``effective_gap`` the relative
    gap of the effective attention's output ``A_eff V`` from ``AV``.
    """

    T: int
    d_v: int
    found: bool
    null_dimension: int
    output_gap: float
    row_sum_gap: float
    min_entry: float
    moved: float
    effective_gap: float


@dataclass(frozen=True)
class FigureCase:
    """The figure's weights ``A``, an alternative ``A′`` and the effective attention, with ``max|A′V − AV|``."""

    A: np.ndarray
    alternative: np.ndarray
    effective: np.ndarray
    output_gap: float


@dataclass(frozen=True)
class IdentifiabilityResult:
    """What :func:`study` found: the exact case, one :class:`Alternative` per float64 layer, the figure's case."""

    exact: ExactAlternative
    layers: tuple[Alternative, ...]
    figure: FigureCase


@dataclass(frozen=True)
class HeadAlternative:
    """One head of a real model (1-based layer and head) and its :class:`Alternative`."""

    layer: int
    head: int
    alternative: Alternative


@dataclass(frozen=True)
class RealModelAlternatives:
    """:func:`real_model`'s answer: the model, the text's length, the head width, one row per head, and the largest gap
    between the scores recomputed here and the model's own."""

    model: str
    tokens: int
    d_v: int
    heads: tuple[HeadAlternative, ...]
    score_gap: float


def alternative(A: np.ndarray, V: np.ndarray) -> Alternative:
    """Another row-stochastic ``A′`` with ``A′V = AV`` for float64 weights ``A`` (T × T) and values ``V`` (T × d_v)."""
    A, V = np.asarray(A, dtype=np.float64), np.asarray(V, dtype=np.float64)
    T, d_v = V.shape
    D = numeric_id.null_directions(V)
    alt = numeric_id.alternative_attention(A, V, directions=D)
    if alt is None:
        nan = math.nan
        return Alternative(T, d_v, False, int(D.shape[1]), nan, nan, nan, nan, nan)
    AV = A @ V  # (T, d_v)
    scale = float(np.max(np.abs(AV)))
    eff = numeric_id.effective_attention(A, V)
    return Alternative(T, d_v, True, int(D.shape[1]), output_gap=float(np.max(np.abs(alt @ V - AV))) / scale,
                       row_sum_gap=float(np.max(np.abs(alt.sum(1) - A.sum(1)))), min_entry=float(alt.min()),
                       moved=float(np.max(0.5 * np.abs(alt - A).sum(1))),
                       effective_gap=float(np.max(np.abs(eff @ V - AV))) / scale)


def _generic_values(rng: np.random.Generator, T: int, d_v: int) -> sp.Matrix:
    """Integer values ``V`` (T × d_v) with ``[V 1]`` of the largest rank ``min(T, d_v + 1)``."""
    while True:
        V = sp.Matrix(rng.integers(-3, 4, size=(T, d_v)).tolist())
        if sp.Matrix.hstack(V, sp.ones(T, 1)).rank() == min(T, d_v + 1):
            return V


def _exact(rng: np.random.Generator, margin: int) -> ExactAlternative:
    T = D_V + 1 + margin
    V = _generic_values(rng, T, D_V)
    W = rng.integers(1, 6, size=(T, T))
    A = row_softmax(sp.Matrix(T, T, lambda i, j: sp.log(int(W[i, j]))))  # e^{log w} = w: rational weights
    alt = exact_id.alternative_attention(A, V)
    same = stochastic = differs = effective = False
    if alt is not None:
        same = bool((alt * V - A * V).is_zero_matrix)
        stochastic = all(sum(alt.row(i)) == 1 for i in range(T)) and all(bool(x >= 0) for x in alt)
        differs = alt != A
        effective = bool((exact_id.effective_attention(A, V) * V - A * V).applyfunc(sp.simplify).is_zero_matrix)
    unique_below = not exact_id.null_directions(_generic_values(rng, D_V + 1, D_V))
    return ExactAlternative(T, D_V, sp.Matrix(A), V, alt, same, stochastic, differs, effective, unique_below)


def _layer(spec: AttentionSpec, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The float64 weights ``A`` and values ``V`` of attnsym's layer for ``spec`` on its seeded random inputs."""
    values = random_inputs(spec, seed=seed)
    _, A = numeric_attention(values["X"], values["W_Q"], values["W_K"], values["W_V"], spec=spec)
    return np.asarray(A), values["X"] @ values["W_V"]


def study(rng: Streams, seed: int, *, quick: bool, margin: int = 1) -> IdentifiabilityResult:
    """The exact case at ``T = d_v + 1 + margin``, float64 layers at ``T = 40`` (and 128), and the figure's case.

    ``rng()`` draws the exact case's integers; ``seed`` the float64 layers' inputs.
    """
    exact = _exact(rng(), margin)
    sizes = ((40, 8),) if quick else ((40, 8), (128, 32))
    layers = tuple(alternative(*_layer(AttentionSpec(n=n, d_model=w, d_k=w), seed)) for n, w in sizes)
    A, V = _layer(AttentionSpec(n=12, d_model=3, d_k=3), seed)
    alt = numeric_id.alternative_attention(A, V)
    if alt is None:  # a 12 × 3 layer with positive weights always has one (null dimension 8)
        alt = np.full_like(A, math.nan)
    figure = FigureCase(A, alt, numeric_id.effective_attention(A, V), float(np.max(np.abs(alt @ V - A @ V))))
    return IdentifiabilityResult(exact, layers, figure)


def real_model(model: Any, text: str) -> RealModelAlternatives:
    """Every head of a loaded encoder (``attnsym.models``) on ``text``: its scores recomputed in float64 from the layer
    input, and an :class:`Alternative` for its weights and values."""
    route = model.route(text)
    d_k, heads = model.config.d_k, model.config.heads
    rows, score_gap = [], 0.0
    for layer, lw in enumerate(model.weights.layers):
        H_in = np.asarray(route.hidden_states[layer], dtype=np.float64)  # (T, d): the input of this layer
        Q, K, V = (H_in @ np.asarray(W, dtype=np.float64) + np.asarray(b, dtype=np.float64)
                   for W, b in ((lw.W_Q, lw.b_Q), (lw.W_K, lw.b_K), (lw.W_V, lw.b_V)))  # (T, d) each
        for h in range(heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            S = Q[:, cols] @ K[:, cols].T / math.sqrt(d_k)  # (T, T)
            score_gap = max(score_gap, float(np.max(np.abs(S - route.scores[layer, h]))))
            rows.append(HeadAlternative(layer + 1, h + 1, alternative(route.attention[layer, h], V[:, cols])))
    return RealModelAlternatives(model.name, int(route.n), int(d_k), tuple(rows), score_gap)
