"""Which symmetries does a token-mixing layer have? Permutations and shifts, for attention and a convolution.

* :func:`permutation_study` — ``A(PX) = P A(X) Pᵀ`` and ``Y(PX) = P Y(X)`` for a layer with given
  positions and mask: symbolically (:func:`attnsym.symbolic.equivariance.check_attention_equivariance`,
  n = 3) and in float64 (multi-head :func:`attnsym.numeric.attention`, a random permutation);
* :func:`layer_profile` — the locality and translation profile of attention (with or without
  sinusoidal positions) or a circular convolution: exact shift- and permutation-equivariance, the
  dependency window of ``∂Y/∂X``, the float64 shift error and how far a perturbed token reaches;
* :func:`banded_window` — the dependency window of attention under the mask ``|i − j| ≤ 1``.

The claims ``permutation-equivariance`` and ``no-locality-bias`` judge them.

>>> banded_window(5)
1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import attention
from ..numeric.conv import conv1d, shift_tokens
from ..spec import AttentionSpec
from ..symbolic.equivariance import check_attention_equivariance, check_conv_equivariance, cyclic_shift, dependency_pattern
from ..symbolic.equivariance import conv1d as sym_conv1d
from ..symbolic.matrices import attention as sym_attention
from ..symbolic.naming import input_symbols
from ..tolerances import TOLERANCES
from ._streams import Streams

__all__ = ["CONV_WIDTH", "LayerProfile", "PermutationRow", "banded_window", "layer_profile", "permutation_study"]

_TOL = TOLERANCES["float64"]
#: the width k of the convolution
CONV_WIDTH = 3


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=_TOL.rtol, atol=_TOL.atol))


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


@dataclass(frozen=True)
class PermutationRow:
    """One configuration: the exact identities (None: not derived), the float64 gaps and whether both float64 sides
    agree within the float64 tolerances."""

    positions: str | None
    causal: bool
    symbolic_A: bool | None
    symbolic_Y: bool | None
    A_gap: float
    Y_gap: float
    numeric_close: bool

    @property
    def holds(self) -> bool:
        """Float64 agrees, and so does the exact view where it was derived."""
        return self.numeric_close and self.symbolic_A is not False and self.symbolic_Y is not False


def permutation_study(rng: Streams, seed: int, *, quick: bool, positions: str | None, causal: bool,
                      symbolic: bool) -> PermutationRow:
    """One configuration, exact (``symbolic``: n = 3, d_model 1 quick or 2 full) and in float64 (2 heads, n = 8 or
    24). ``rng(str(positions), int(causal))`` draws the tokens, weights and permutation."""
    sym_A = sym_Y = None
    if symbolic:
        spec = AttentionSpec(n=3, d_model=1 if quick else 2, positions=positions, causal=causal)
        checks = check_attention_equivariance(spec, perm=(2, 0, 1), seed=seed)
        sym_A, sym_Y = checks["A"].holds, checks["Y"].holds
    generator = rng(str(positions), int(causal))
    n, d, heads = (8, 4, 2) if quick else (24, 8, 2)
    X = generator.standard_normal((n, d))
    W_Q, W_K, W_V, W_O = (generator.standard_normal((d, d)) / np.sqrt(d) for _ in range(4))
    perm = generator.permutation(n)
    while np.all(perm == np.arange(n)):
        perm = generator.permutation(n)
    Y, A = attention(X, W_Q, W_K, W_V, W_O, heads=heads, positions=positions, causal=causal)
    Yp, Ap = attention(X[perm], W_Q, W_K, W_V, W_O, heads=heads, positions=positions, causal=causal)
    A_expected = A[:, perm][:, :, perm]  # (heads, n, n): P A Pᵀ per head
    return PermutationRow(positions, causal, sym_A, sym_Y, _max_abs(Ap, A_expected), _max_abs(Yp, Y[perm]),
                          _close(Ap, A_expected) and _close(Yp, Y[perm]))


@dataclass(frozen=True)
class LayerProfile:
    """The symmetry and locality profile of one layer (``"attention"`` or ``"conv"``, with ``positions``).

    Exact: shift- and permutation-equivariance, the dependency ``window`` (tokens either side),
    whether every output depends on every token; float64: the shift error, whether it is within
    tolerance, and the largest change of outputs farther than k//2 from a perturbed token.
    """

    layer: str
    positions: str | None
    shift_equivariant: bool
    permutation_equivariant: bool
    window: int
    global_dependency: bool
    shift_error: float
    numeric_shift_equivariant: bool
    far_change: float

    @property
    def local(self) -> bool:
        """Each output depends on a window of k//2 tokens either side, and far outputs do not move at all."""
        return self.window <= CONV_WIDTH // 2 and self.far_change == 0.0

    @property
    def translation_biased(self) -> bool:
        """Commutes with shifts but not with every permutation (order kept, positions alike)."""
        return self.shift_equivariant and not self.permutation_equivariant


def _exact_profile(layer: str, positions: str | None, n_sym: int, seed: int) -> tuple[bool, bool, sp.Matrix]:
    k = CONV_WIDTH
    if layer == "conv":
        swap = (1, 0, *range(2, n_sym))  # a permutation that is not a shift
        X = input_symbols("X", (n_sym, 1))
        return (check_conv_equivariance(n_sym, k, seed=seed).holds,
                check_conv_equivariance(n_sym, k, perm=swap, seed=seed).holds,
                dependency_pattern(sym_conv1d(X, sp.symbols(f"w_0:{k}"), padding="circular"), X))
    spec = AttentionSpec(n=n_sym if positions is None else 3, d_model=2, positions=positions)
    shift_ok = all(c.holds for c in check_attention_equivariance(spec, perm=cyclic_shift(spec.n), seed=seed).values())
    swap_n = (1, 0, *range(2, spec.n))
    perm_ok = all(c.holds for c in check_attention_equivariance(spec, perm=swap_n, seed=seed).values())
    sym = sym_attention(spec)
    return shift_ok, perm_ok, dependency_pattern(sym.Y, sym.X)


def layer_profile(rng: Streams, seed: int, *, quick: bool, layer: str, positions: str | None) -> LayerProfile:
    """The profile of ``layer``: exact at n = 4 (5) tokens, float64 at n = 12 (32). ``rng(layer, str(positions))``."""
    shift_ok, perm_ok, D = _exact_profile(layer, positions, 4 if quick else 5, seed)
    window = max(abs(i - j) if abs(i - j) <= D.rows // 2 else D.rows - abs(i - j)
                 for i in range(D.rows) for j in range(D.cols) if D[i, j])
    generator = rng(layer, str(positions))
    n, d, k = (12, 4, CONV_WIDTH) if quick else (32, 8, CONV_WIDTH)
    X = generator.standard_normal((n, d))
    if layer == "conv":
        w = generator.standard_normal(k)
        f = lambda Z: conv1d(Z, w)
    else:
        W_Q, W_K, W_V = (generator.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
        f = lambda Z: attention(Z, W_Q, W_K, W_V, positions=positions, return_weights=False)
    shift_err = _max_abs(f(shift_tokens(X)), shift_tokens(f(X)))
    j = n - 1
    X2 = X.copy()
    X2[j] += 1.0
    moved = np.max(np.abs(f(X2) - f(X)), axis=1)  # how much each output row changed
    far = [i for i in range(n) if min(abs(i - j), n - abs(i - j)) > k // 2]
    return LayerProfile(layer, positions, shift_ok, perm_ok, window,
                        all(D[i, j] for i in range(D.rows) for j in range(D.cols)), shift_err,
                        shift_err <= _TOL.atol * 10 + _TOL.rtol * float(np.max(np.abs(f(X)))), float(np.max(moved[far])))


def banded_window(n: int) -> int:
    """The dependency window of exact attention (n tokens, d_model = 1) under the mask ``|i − j| ≤ 1``."""
    band = [[abs(i - j) <= 1 for j in range(n)] for i in range(n)]
    banded = sym_attention(AttentionSpec(n=n, d_model=1, mask=band))
    D = dependency_pattern(banded.Y, banded.X)
    return max(abs(i - j) for i in range(n) for j in range(n) if D[i, j])
