"""Is causal linear attention an RNN? (Katharopoulos et al. 2020), exactly and in float64.

:func:`study` returns a :class:`LinearAttentionResult`:

* exactly (positive symbolic features ``Φ``, ``Ψ`` of width 2, symbolic values; ``n = 3`` quick,
  4 full): :func:`attnsym.symbolic.linear_attention.causal_linear_attention` and
  :func:`~attnsym.symbolic.linear_attention.recurrent_linear_attention` beside the symbols, so a
  claim can hold them against the definition it states;
* in float64 with ``φ = elu + 1`` on random q, k, v: the relative gap between the numeric parallel
  and recurrent forms, ``|y_1 − v_1|``, and with ``φ`` = identity the share of negative causal
  similarities and the smallest ``|denominator|``; the first 16 rows' weights and outputs for the figure.

The claim ``linear-attention-rnn`` judges it; :func:`attnsym.plots.literature_theory.linear_rnn_figure`
draws it.

>>> sp.cancel(exact_forms(2).recurrent[0, 0])  # the first query reads only itself
v_11
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import linear_attention as numeric_linear
from ..symbolic import linear_attention as exact_linear
from ._streams import Streams

__all__ = ["FEATURES", "SHOWN", "VALUE_WIDTH", "LinearAttentionExact", "LinearAttentionResult", "exact_forms", "study"]

#: the feature width r and value width d_v of the exact part
FEATURES, VALUE_WIDTH = 2, 2
#: the rows the figure shows
SHOWN = 16


@dataclass(frozen=True)
class LinearAttentionExact:
    """Positive symbolic features ``Phi``, ``Psi`` (n × r), symbolic values ``V`` (n × d_v), and the two forms."""

    Phi: sp.Matrix
    Psi: sp.Matrix
    V: sp.Matrix
    parallel: sp.Matrix
    recurrent: sp.Matrix

    @property
    def n(self) -> int:
        """The number of tokens."""
        return int(self.V.shape[0])


@dataclass(frozen=True)
class LinearAttentionResult:
    """What :func:`study` found: the exact forms; in float64 (``m`` tokens, width ``d``) the parallel-vs-recurrent
    relative gap, ``|y_1 − v_1|``, and with φ = identity the share of negative similarities and the smallest
    ``|denominator|``; the figure's weights and one output coordinate of each form."""

    exact: LinearAttentionExact
    m: int
    d: int
    numeric_gap: float
    first_gap: float
    negative_share: float
    smallest_denominator: float
    weights: np.ndarray
    parallel_shown: np.ndarray
    recurrent_shown: np.ndarray


def exact_forms(n: int) -> LinearAttentionExact:
    """The parallel and recurrent forms of ``n`` tokens with positive symbolic features and symbolic values."""
    Phi = sp.Matrix(n, FEATURES, lambda i, c: sp.Symbol(f"phi_{i + 1}{c + 1}", positive=True))
    Psi = sp.Matrix(n, FEATURES, lambda i, c: sp.Symbol(f"psi_{i + 1}{c + 1}", positive=True))
    V = sp.Matrix(n, VALUE_WIDTH, lambda i, c: sp.Symbol(f"v_{i + 1}{c + 1}", real=True))
    return LinearAttentionExact(Phi, Psi, V, exact_linear.causal_linear_attention(Phi, Psi, V),
                                exact_linear.recurrent_linear_attention(Phi, Psi, V))


def study(rng: Streams, *, quick: bool) -> LinearAttentionResult:
    """The exact forms and the float64 part (64 tokens, d = 8 quick; 512, d = 16 full). ``rng()`` draws q, k, v."""
    exact = exact_forms(3 if quick else 4)
    generator = rng()
    m, d = (64, 8) if quick else (512, 16)
    Q, K, V = (generator.standard_normal((m, d)) for _ in range(3))
    fq, fk = numeric_linear.elu_feature_map(Q), numeric_linear.elu_feature_map(K)
    par = numeric_linear.causal_linear_attention(fq, fk, V)  # (m, d)
    rec = numeric_linear.recurrent_linear_attention(fq, fk, V)  # (m, d)
    W_id = np.tril(Q @ K.T)  # φ = identity: the algebra holds, the "weights" are no distribution
    W = np.tril(fq[:SHOWN] @ fk[:SHOWN].T)
    return LinearAttentionResult(
        exact, m, d, numeric_gap=float(np.max(np.abs(par - rec)) / np.max(np.abs(par))),
        first_gap=float(np.max(np.abs(par[0] - V[0]))),  # the first query sees only itself
        negative_share=float(np.mean(W_id[np.tril_indices(m)] < 0)),
        smallest_denominator=float(np.min(np.abs(W_id.sum(axis=1)))), weights=W / W.sum(axis=1, keepdims=True),
        parallel_shown=par[:SHOWN, 0].copy(), recurrent_shown=rec[:SHOWN, 0].copy())
