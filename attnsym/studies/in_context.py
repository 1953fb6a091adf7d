"""Does one linear self-attention layer do one step of gradient descent? (von Oswald et al. 2023, Prop. 1)

:func:`study` returns an :class:`InContextResult`: the layer
:func:`attnsym.symbolic.in_context.linear_self_attention` with the paper's weights
(:func:`~attnsym.symbolic.in_context.gd_weights`), on symbolic context tokens, query, ``W_0`` and ``η``,
against a gradient-descent step ``ΔW = −η·rate·∇L(W_0)`` whose gradient SymPy takes from the loss;
and the same layer in float64 on random regression tasks against a step whose gradient is a central
difference of the loss. ``rate`` is the learning-rate factor of the step compared (1: the paper's).

The claim ``icl-gradient-descent`` judges it; :func:`attnsym.plots.literature_structure.icl_gd_figure`
draws the predictions.

>>> numeric_gd_step(np.zeros((1, 2)), np.eye(2), np.ones((1, 2)), 0.5).tolist()
[[0.25, 0.25]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._exact import exact
from ..symbolic import in_context
from ._streams import Streams

__all__ = ["NUMERIC_TASKS", "InContextResult", "NumericTasks", "numeric_gd_step", "study"]


@dataclass(frozen=True)
class NumericTasks:
    """The float64 regression tasks: widths ``d_x``, ``d_y``, context tokens ``N`` and the learning rate ``eta``."""

    d_x: int = 5
    d_y: int = 1
    N: int = 20
    eta: float = 0.1


#: the float64 tasks
NUMERIC_TASKS = NumericTasks()


@dataclass(frozen=True)
class InContextResult:
    """What :func:`study` found.

    ``d_x, d_y, N``: the exact sizes; ``target_slots`` — every token's y-slot equals ``y_j − ΔW x_j``
    and its x-slot is unchanged; ``query_slot`` — with ``W_0 = 0`` the query's y-slot equals ``−ŷ``,
    ``ŷ = ΔW x_q`` (``prediction``); ``dW`` the symbolic step; ``tasks`` float64 tasks with the largest
    relative gap ``worst``; ``gd`` / ``lsa`` the predictions of the tasks with ``W_0 = 0``.
    """

    d_x: int
    d_y: int
    N: int
    rate: sp.Expr
    target_slots: bool
    query_slot: bool
    prediction: sp.Expr
    dW: sp.Matrix
    tasks: int
    worst: float
    gd: tuple[float, ...]
    lsa: tuple[float, ...]


def numeric_gd_step(W0: np.ndarray, X: np.ndarray, Y: np.ndarray, eta: float) -> np.ndarray:
    """``−η ∇L(W0)`` for ``L(W) = Σ_i ‖W x_i − y_i‖²/(2N)`` by central differences (exact for a quadratic, to rounding)."""
    N = X.shape[1]
    loss = lambda W: float(np.sum((W @ X - Y) ** 2)) / (2 * N)
    grad = np.zeros_like(W0)
    for idx in np.ndindex(*W0.shape):
        E = np.zeros_like(W0)
        E[idx] = 1.0
        grad[idx] = (loss(W0 + E) - loss(W0 - E)) / 2
    return -eta * grad


def _exact(d_x: int, d_y: int, N: int, rate: sp.Expr) -> tuple[bool, bool, sp.Expr, sp.Matrix]:
    X = sp.Matrix(d_x, N, lambda a, i: sp.Symbol(f"x_{{{a + 1},{i + 1}}}", real=True))
    Y = sp.Matrix(d_y, N, lambda a, i: sp.Symbol(f"y_{{{a + 1},{i + 1}}}", real=True))
    xq = sp.Matrix(d_x, 1, lambda a, _: sp.Symbol(f"x_{{{a + 1},q}}", real=True))
    W0 = sp.Matrix(d_y, d_x, lambda a, b: sp.Symbol(f"w_{{{a + 1},{b + 1}}}", real=True))
    eta = sp.Symbol("eta", positive=True)
    C = sp.Matrix.vstack(X, Y)
    tokens = sp.Matrix.hstack(C, sp.Matrix.vstack(xq, sp.zeros(d_y, 1)))
    out = in_context.linear_self_attention(C, tokens, *in_context.gd_weights(d_x, d_y, eta=eta, N=N, W0=W0))
    W = sp.Matrix(d_y, d_x, lambda a, b: sp.Symbol(f"W_{{{a + 1},{b + 1}}}", real=True))
    loss = sum(((W * X.col(i) - Y.col(i)).T * (W * X.col(i) - Y.col(i)))[0] for i in range(N)) / (2 * N)
    grad = sp.Matrix(d_y, d_x, lambda a, b: sp.diff(loss, W[a, b])).xreplace(dict(zip(W, W0, strict=True)))
    dW = -eta * rate * grad
    X_all, Y_all = sp.Matrix.hstack(X, xq), sp.Matrix.hstack(Y, sp.zeros(d_y, 1))
    expected = sp.Matrix.vstack(X_all, Y_all - dW * X_all)
    zero = {w: 0 for w in W0}
    prediction = (dW * xq).xreplace(zero)  # one GD step from W = 0 predicts ŷ = ΔW x_q
    return (bool((out - expected).applyfunc(sp.expand).is_zero_matrix),
            bool((out[d_x:, N].xreplace(zero) + prediction).applyfunc(sp.expand).is_zero_matrix), prediction[0], dW)


def study(rng: Streams, *, quick: bool, rate: object = 1) -> InContextResult:
    """The exact layer (d_x = 2, d_y = 1, N = 2 quick; d_y = 2, N = 3 full) and 40 (400) float64 tasks.

    ``rng()`` draws the tasks; half of them start from ``W_0 = 0``.
    """
    d_x, d_y, N = (2, 1, 2) if quick else (2, 2, 3)
    r = exact("rate_factor", rate, floats="rational")
    target_slots, query_slot, prediction, dW = _exact(d_x, d_y, N, r)
    generator = rng()
    tasks = 40 if quick else 400
    dxn, dyn, Nn, eta_n = NUMERIC_TASKS.d_x, NUMERIC_TASKS.d_y, NUMERIC_TASKS.N, NUMERIC_TASKS.eta
    worst, gd, lsa = 0.0, [], []
    for t in range(tasks):
        Wt = generator.standard_normal((dyn, dxn))
        Xn = generator.standard_normal((dxn, Nn))
        Yn = Wt @ Xn + 0.1 * generator.standard_normal((dyn, Nn))
        xqn = generator.standard_normal((dxn, 1))
        W0n = np.zeros((dyn, dxn)) if t % 2 == 0 else generator.standard_normal((dyn, dxn))
        Cn = np.vstack([Xn, Yn])
        tok = np.hstack([Cn, np.vstack([xqn, np.zeros((dyn, 1))])])
        outn = in_context.linear_self_attention(Cn, tok, *in_context.gd_weights(dxn, dyn, eta=eta_n, N=Nn, W0=W0n))
        step = float(r) * numeric_gd_step(W0n, Xn, Yn, eta_n)
        want = np.hstack([Yn, np.zeros((dyn, 1))]) - step @ np.hstack([Xn, xqn])
        worst = max(worst, float(np.max(np.abs(outn[dxn:] - want)) / max(1.0, float(np.max(np.abs(want))))),
                    float(np.max(np.abs(outn[:dxn] - np.hstack([Xn, xqn])))))
        if t % 2 == 0:
            gd.append(float((step @ xqn)[0, 0]))
            lsa.append(float(-outn[dxn, Nn]))
    return InContextResult(d_x, d_y, N, r, target_slots, query_slot, prediction, dW, tasks, worst, tuple(gd), tuple(lsa))
