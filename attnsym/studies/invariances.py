"""Which gradients vanish exactly? The key bias (softmax's shift invariance) and equal tokens (rank-one input).

* :func:`key_bias_study` — for a family of specs (heads 1 and 2, no mask and causal, 1/√d_k and no
  scaling, with and without sinusoidal positions) whether ``∂S/∂b_K`` and ``∂S/∂b_Q`` are constant
  along every attended part of a row (:func:`attnsym.symbolic.invariances.bias_score_derivatives`),
  and the numeric loss along a line through each bias, its backward and central differences
  (:func:`attnsym.numeric.invariances.bias_loss_slices`);
* :func:`rank_one_study` — the exact weight gradients at ``X = 1 xᵀ``
  (:func:`attnsym.symbolic.invariances.equal_token_gradients`) and the numeric ones from equal to
  distinct tokens (:func:`attnsym.numeric.invariances.gradients_near_equal_tokens`).

The claims ``key-bias-invariance`` and ``rank-one-input`` judge them;
:func:`attnsym.plots.bias_slices_figure` and :func:`attnsym.plots.equal_tokens_figure` draw them.

>>> r = key_bias_study(lambda *k: np.random.default_rng(0), quick=True)
>>> [row.row_constant["b_K"] for row in r.family], [row.row_constant["b_Q"] for row in r.family]
([True, True], [False, False])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numeric.invariances import BiasSlices, EqualTokenGradients, bias_loss_slices, gradients_near_equal_tokens
from ..spec import AttentionSpec
from ..symbolic.invariances import bias_score_derivatives, equal_token_gradients, rows_constant
from ._streams import Streams

__all__ = ["BIASES", "WEIGHTS", "BiasFamilyRow", "EqualTokenRow", "KeyBiasResult", "RankOneResult", "key_bias_study",
           "rank_one_study"]

#: the biases and the weights whose gradients are asked about
BIASES, WEIGHTS = ("b_K", "b_Q"), ("W_Q", "W_K", "W_V")


@dataclass(frozen=True)
class BiasFamilyRow:
    """One spec of the family (described) and, per bias, whether ``∂S/∂b`` is constant along every attended row part."""

    spec: str
    row_constant: dict[str, bool]


@dataclass(frozen=True)
class KeyBiasResult:
    """What :func:`key_bias_study` found: the family rows, the numeric spec and its loss slices."""

    family: tuple[BiasFamilyRow, ...]
    numeric_spec: str
    slices: BiasSlices

    def loss_change(self, which: str) -> float:
        """The largest change of the loss along the line through bias ``which``."""
        return float(np.max(np.abs(self.slices.loss_change[which])))


def key_bias_study(rng: Streams, *, quick: bool) -> KeyBiasResult:
    """The exact family (2 specs quick, 5 full) and the numeric slices (n = 6, 2 heads). ``rng()`` seeds the slices."""
    family = [AttentionSpec(n=3, d_model=2, heads=1, bias=True), AttentionSpec(n=3, d_model=2, heads=1, bias=True, causal=True)]
    if not quick:
        family += [AttentionSpec(n=3, d_model=2, heads=2, bias=True), AttentionSpec(n=3, d_model=2, bias=True, scale="none"),
                   AttentionSpec(n=3, d_model=2, bias=True, positions="sinusoidal")]
    rows = []
    for spec in family:
        allowed = [[(not spec.causal) or j <= i for j in range(spec.n)] for i in range(spec.n)]
        rows.append(BiasFamilyRow(spec.describe(), {which: all(rows_constant(D, allowed) for head in
                                                               bias_score_derivatives(spec, which) for D in head)
                                                    for which in BIASES}))
    num_spec = AttentionSpec(n=6, d_model=4, heads=2, bias=True)
    return KeyBiasResult(tuple(rows), num_spec.describe(), bias_loss_slices(num_spec, int(rng().integers(2**32))))


@dataclass(frozen=True)
class EqualTokenRow:
    """One spec (described) and, per weight, whether its exact gradient at ``X = 1 xᵀ`` is zero."""

    spec: str
    zero: dict[str, bool]


@dataclass(frozen=True)
class RankOneResult:
    """What :func:`rank_one_study` found: the exact rows, the numeric spec, its sweep from equal (ε = 0) to distinct
    (ε = 1) tokens, and the growth exponent of the query/key gradients for 0 < ε ≤ 1e-2."""

    exact: tuple[EqualTokenRow, ...]
    numeric_spec: str
    sweep: EqualTokenGradients
    growth: dict[str, float]

    def largest(self, weight: str, *, distinct: bool) -> float:
        """The largest ``|∂L/∂weight|`` at equal (ε = 0) or distinct (ε = 1) tokens."""
        return float(self.sweep.max_gradient[weight][len(self.sweep.epsilons) - 1 if distinct else 0])


def rank_one_study(rng: Streams, *, quick: bool) -> RankOneResult:
    """The exact gradients (2 specs quick, 3 full) and the numeric sweep (n = 8, 2 heads). ``rng()`` seeds the sweep."""
    specs = [AttentionSpec(n=3, d_model=2), AttentionSpec(n=3, d_model=2, heads=2, causal=True)]
    if not quick:
        specs.append(AttentionSpec(n=3, d_model=2, bias=True))
    exact = tuple(EqualTokenRow(spec.describe(), {k: all(e == 0 for e in g) for k, g in equal_token_gradients(spec).items()})
                  for spec in specs)
    num_spec = AttentionSpec(n=8, d_model=4, heads=2)
    sweep = gradients_near_equal_tokens(num_spec, int(rng().integers(2**32)))
    small = (sweep.epsilons > 0) & (sweep.epsilons <= 1e-2)
    growth = {k: float(np.polyfit(np.log(sweep.epsilons[small]), np.log(sweep.max_gradient[k][small]), 1)[0])
              for k in ("W_Q", "W_K")}
    return RankOneResult(exact, num_spec.describe(), sweep, growth)
