"""Does attention route by input while its weights stay fixed? Graph contrasts, the input Jacobian, the weights.

* :func:`contrast_study` — one layer's weights, several random input pairs through
  :func:`attnsym.graphs.contrast` (routing distance of the attention graphs, whether the MLP graph
  changes), and the control ``X₁ = X₂``;
* :func:`hypernetwork_study` — ``Y = A(X) V`` exactly, the frozen-routing and ``∂A/∂X`` terms of
  :func:`attnsym.symbolic.attention_input_jacobian` against its total at random points and against
  central differences of :func:`attnsym.numeric.attention`, and the MLP's constant Jacobian;
* :func:`weights_study` — rows of A positive and summing to 1 (exact), softmax's shift invariance
  (exact and float64), and how far A moves between inputs with one set of parameters.

The claims ``dynamic-routing``, ``hypernetwork-view`` and ``weights-not-preset`` judge them.

>>> r = weights_study(lambda *k: np.random.default_rng(0), quick=True)
>>> r.rows_sum_one, r.positive, min(r.distances) > 0
(True, True, True)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ..graphs import contrast, routing_distance
from ..graphs.contrast import Contrast
from ..numeric import attention, random_inputs, softmax
from ..spec import AttentionSpec
from ..symbolic import attention_input_jacobian, mlp_input_jacobian
from ..symbolic.matrices import attention as sym_attention
from ..symbolic.operations import row_softmax
from ._streams import Streams

__all__ = ["ContrastResult", "HypernetworkResult", "WeightsResult", "contrast_study", "hypernetwork_study",
           "weights_study"]


def _weights(rng: np.random.Generator, spec: AttentionSpec) -> dict[str, Any]:
    """Random parameters of ``spec`` (its parameter names), seeded from ``rng``."""
    values = random_inputs(spec, seed=int(rng.integers(2**32)))
    return {name: values[name] for name in spec.parameter_names}


def _max_abs(a: Any, b: Any) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


@dataclass(frozen=True)
class ContrastResult:
    """What :func:`contrast_study` found: one :class:`~attnsym.graphs.contrast.Contrast` per random pair, the control
    (``X₁ = X₂``) and the pair the figure draws."""

    pairs: tuple[Contrast, ...]
    same: Contrast
    first: Contrast


def contrast_study(rng: Streams, *, quick: bool) -> ContrastResult:
    """3 (10) random pairs through one layer (n = 4, 2 heads; n = 8 full). ``rng()`` draws weights and inputs."""
    generator = rng()
    spec = AttentionSpec(n=4, d_model=4, heads=2) if quick else AttentionSpec(n=8, d_model=8, heads=2)
    weights = _weights(generator, spec)
    pairs = []
    for _ in range(3 if quick else 10):
        X1, X2 = generator.standard_normal((2, *spec.shapes["X"]))
        pairs.append(contrast(spec, X1, X2, weights))
    X1 = generator.standard_normal(spec.shapes["X"])
    same = contrast(spec, X1, X1.copy(), weights)
    X1, X2 = generator.standard_normal((2, *spec.shapes["X"]))
    return ContrastResult(tuple(pairs), same, contrast(spec, X1, X2, weights))


@dataclass(frozen=True)
class HypernetworkResult:
    """What :func:`hypernetwork_study` found: the spec (described), whether it has ``W_O``, ``Y = A V (W_O)`` exactly;
    over the random points the largest ``∂A/∂X`` term, ``|frozen + routing − total|``, ``|frozen − total|`` and
    ``|total − central differences|``; whether the total and routing terms depend on X; the MLP Jacobian."""

    spec: str
    has_output: bool
    y_equals_av: bool
    routing_norm: float
    sum_error: float
    frozen_error: float
    fd_error: float
    depends_on_x: bool
    mlp_jacobian: sp.Matrix

    @property
    def mlp_constant(self) -> bool:
        """The MLP Jacobian has no input symbol."""
        return not any(str(s).startswith("x_") for s in self.mlp_jacobian.free_symbols)


def hypernetwork_study(rng: Streams, *, quick: bool) -> HypernetworkResult:
    """The exact Jacobian (n = 2, d_model 1; 2 and 2 heads in full mode) at 3 random points. ``rng()`` draws them."""
    spec = AttentionSpec(n=2, d_model=1) if quick else AttentionSpec(n=2, d_model=2, heads=2)
    sym = sym_attention(spec)
    Z = sp.Matrix.hstack(*[A * V for A, V in zip(sym.A_heads, sym.V_heads, strict=True)])
    Y_expected = Z if sym.W_O is None else Z * sym.W_O
    J = attention_input_jacobian(spec)
    generator = rng()
    routing_norm = sum_error = frozen_error = fd_error = 0.0
    for _ in range(3):  # a few random points: the routing term is non-zero at (almost) every one
        values = {name: generator.standard_normal(spec.shapes[name]) for name in sym.inputs}
        point = {s: sp.Float(v, 30) for name, M in sym.inputs.items() for s, v in zip(M, values[name].ravel(), strict=True)}
        frozen, routing, total = (np.array(M.xreplace(point).evalf(20), dtype=float) for M in (J.frozen, J.routing, J.total))
        routing_norm = max(routing_norm, float(np.max(np.abs(routing))))
        sum_error = max(sum_error, _max_abs(frozen + routing, total))
        frozen_error = max(frozen_error, _max_abs(frozen, total))
        weights = {k: v for k, v in values.items() if k != "X"}
        f = lambda X, weights=weights: attention(X, **weights, heads=spec.heads, return_weights=False).ravel()
        X0, h = values["X"], 1e-6  # independent numbers: central differences of the numeric forward pass
        fd = np.zeros_like(total)
        for idx in range(X0.size):
            e = np.zeros(X0.size)
            e[idx] = h
            fd[:, idx] = (f(X0 + e.reshape(X0.shape)) - f(X0 - e.reshape(X0.shape))) / (2 * h)
        fd_error = max(fd_error, float(np.max(np.abs(fd - total))))
    x_symbols = set(sym.X)
    return HypernetworkResult(spec.describe(), sym.W_O is not None, all(sp.expand(e) == 0 for e in (sym.Y - Y_expected)),
                              routing_norm, sum_error, frozen_error, fd_error,
                              bool(J.total.free_symbols & x_symbols) and bool(J.routing.free_symbols & x_symbols),
                              mlp_input_jacobian((spec.n, spec.d_model)))


@dataclass(frozen=True)
class WeightsResult:
    """What :func:`weights_study` found: exact rows summing to 1, positive entries and shift invariance; the float64
    maps for four input scales, the routing distances between them, and ``max|softmax(S + c) − softmax(S)|``."""

    rows_sum_one: bool
    positive: bool
    shift_invariant: bool
    maps: tuple[np.ndarray, ...]
    distances: tuple[float, ...]
    shift_error: float


def weights_study(rng: Streams, *, quick: bool) -> WeightsResult:
    """Exact at n = 2 (3), float64 at n = 6 (16) with one set of parameters. ``rng()`` draws parameters and inputs."""
    n_sym = 2 if quick else 3
    A = sym_attention(AttentionSpec(n=n_sym, d_model=1)).A
    S = sp.Matrix(n_sym, n_sym, lambda i, j: sp.Symbol(f"s_{{{i + 1},{j + 1}}}", real=True))
    c = sp.symbols(f"c_1:{n_sym + 1}", real=True)
    shifted = sp.Matrix(n_sym, n_sym, lambda i, j: S[i, j] + c[i])
    generator = rng()
    spec = AttentionSpec(n=6, d_model=4) if quick else AttentionSpec(n=16, d_model=8)
    weights = _weights(generator, spec)
    maps = tuple(np.asarray(attention(generator.standard_normal(spec.shapes["X"]) * scale, **weights)[1])
                 for scale in (0.5, 1.0, 3.0, 10.0))
    S_num = generator.standard_normal((spec.n, spec.n)) * 5
    shift = generator.standard_normal((spec.n, 1)) * 100
    return WeightsResult(all(sp.simplify(sum(A[i, :])) == 1 for i in range(n_sym)), all(e.is_positive for e in A),
                         all(sp.simplify(e) == 0 for e in (row_softmax(shifted) - row_softmax(S))), maps,
                         tuple(routing_distance(a, b) for a, b in itertools.combinations(maps, 2)),
                         _max_abs(softmax(S_num + shift), softmax(S_num)))
