"""Several heads of one layer, measured: the study behind ``multi-head`` and its figure.

:func:`study` asks four questions of the engines and returns one :class:`MultiHeadResult`:

* **the parameter count** of ``h`` heads of width ``d_k_of(d_model, h)`` with ``W_O``, for
  ``h = 1, 2, 4, 8`` (:attr:`attnsym.AttentionSpec.parameter_count`), and, with the PyTorch
  reference, ``torch.nn.MultiheadAttention``'s count (:mod:`attnsym.references`);
* **the per-head maps** of one input: their pairwise routing distances
  (:func:`attnsym.graphs.routing_distance`), and whether the layer equals its heads run one by one
  on their weight columns, concatenated in ``head_order``, times ``W_O``
  (:func:`attnsym.numeric.attention`), against PyTorch too when it is used;
* **exactly**, each head of a 2-head SymPy layer is the 1-head layer on its own columns
  (:func:`attnsym.symbolic.attention`);
* **the symbolic layer lambdified** against an outside reference (PyTorch, or the paper's formula
  written apart, :func:`attnsym.numeric.paper_formulas.multihead_attention_formula`), and the
  numeric layer against that formula.

The claim ``multi-head`` judges the result; its figure draws :attr:`MultiHeadResult.weights`.

>>> from attnsym.studies import streams
>>> r = study(streams(0), quick=True, torch=False)
>>> [c.parameters for c in r.counts], r.concat_close, r.symbolic_per_head
([256, 256, 256, 256], True, True)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import sympy as sp

from ..graphs import routing_distance
from ..numeric import attention
from ..numeric.paper_formulas import multihead_attention_formula
from ..references import torch_multihead_attention, torch_multihead_parameter_count, torch_version
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as symbolic_attention
from ._streams import Streams
from .compare import close, max_abs, random_weights

__all__ = ["HEAD_COUNTS", "HeadCount", "LambdifiedLayer", "MultiHeadResult", "MultiHeadSizes", "TorchAgreement",
           "study", "symbolic_heads_identity"]

#: the numbers of heads whose parameter counts are compared
HEAD_COUNTS = (1, 2, 4, 8)


@dataclass(frozen=True)
class MultiHeadSizes:
    """The width ``d_model`` of every layer, the length ``n`` and the heads of the measured layer."""

    d_model: int
    n: int
    heads: int

    @classmethod
    def of(cls, quick: bool) -> MultiHeadSizes:
        """Quick: ``d_model = 8, n = 6``; full: ``d_model = 16, n = 16``; 4 heads either way."""
        return cls(8, 6, 4) if quick else cls(16, 16, 4)


@dataclass(frozen=True)
class HeadCount:
    """Parameters of ``heads`` heads of width ``d_k`` with ``W_O``; ``torch``: PyTorch's count (None: not asked)."""

    heads: int
    d_k: int
    parameters: int
    torch: int | None


@dataclass(frozen=True)
class TorchAgreement:
    """``torch.nn.MultiheadAttention`` with the same weights: largest gaps and whether all agree (float64)."""

    version: str
    output_gap: float  # max |Y − Y_torch|
    concat_gap: float  # max |concat(heads)·W_O − Y_torch|
    weights_gap: float  # max |A − A_torch| over the heads
    agrees: bool


@dataclass(frozen=True)
class LambdifiedLayer:
    """The symbolic 2-head layer (n = 2, d_model = 4), lambdified, against ``reference`` ("torch" or "formula")."""

    reference: Literal["torch", "formula"]
    gap: float
    agrees: bool


@dataclass(frozen=True)
class MultiHeadResult:
    """What :func:`study` found.

    ``weights`` are the per-head maps ``(heads, n, n)`` of one input, ``head_distances`` their
    routing distances pair by pair; ``concat_gap`` is ``max |concat(heads)·W_O − Y|`` (``concat_close``
    within the float64 tolerance); ``torch`` is None without the PyTorch reference;
    ``symbolic_per_head`` the exact identity; ``formula_gap`` ``max |Y − Y_formula|`` of the
    numeric layer against the paper's formula written apart.
    """

    sizes: MultiHeadSizes
    counts: tuple[HeadCount, ...]
    weights: np.ndarray
    head_distances: tuple[float, ...]
    concat_gap: float
    concat_close: bool
    torch: TorchAgreement | None
    symbolic_per_head: bool
    lambdified: LambdifiedLayer
    formula_gap: float

    @property
    def counts_kept(self) -> bool:
        """Every count is ``4·d_model²``, that of one head with ``W_O``."""
        return all(c.parameters == 4 * self.sizes.d_model**2 for c in self.counts)

    @property
    def counts_match_torch(self) -> bool:
        """Every count equals PyTorch's (true without the reference: nothing to compare)."""
        return all(c.torch is None or c.torch == c.parameters for c in self.counts)


def _counts(d_model: int, d_k_of: Callable[[int, int], int], torch: bool) -> tuple[HeadCount, ...]:
    specs = [AttentionSpec(n=4, d_model=d_model, heads=h, d_k=d_k_of(d_model, h), output_projection=True)
             for h in HEAD_COUNTS]
    return tuple(HeadCount(s.heads, s.d_k, s.parameter_count,
                           torch_multihead_parameter_count(d_model, s.heads, bias=False) if torch else None)
                 for s in specs)


def _heads_one_by_one(X: np.ndarray, w: dict[str, np.ndarray], d_k: int, order: Sequence[int], scale: Any
                      ) -> np.ndarray:
    """Each head of ``order`` run alone on its weight columns (width ``d_k``), concatenated, times ``W_O``."""
    Z = []
    for h in order:
        cols = slice(h * d_k, (h + 1) * d_k)
        Zh, _ = attention(X, w["W_Q"][:, cols], w["W_K"][:, cols], w["W_V"][:, cols], scale=scale)  # (n, d_k)
        Z.append(Zh)
    return np.concatenate(Z, axis=1) @ w["W_O"]  # (n, d_model)


def symbolic_heads_identity() -> bool:
    """Each head of the 2-head SymPy layer (n = 2, d_model = 2) is the 1-head layer on its columns; Y = [Z₁ Z₂] W_O.

    >>> symbolic_heads_identity()
    True
    """
    multi = symbolic_attention(AttentionSpec(n=2, d_model=2, heads=2))
    single = symbolic_attention(AttentionSpec(n=2, d_model=2, d_k=1))
    for h in range(2):
        rename = {single.inputs[name][i, 0]: multi.inputs[name][i, h] for name in ("W_Q", "W_K", "W_V")
                  for i in range(2)}
        if not all(e == 0 for e in (single.Y.xreplace(rename) - multi.Z_heads[h])):
            return False
    return all(e == 0 for e in (sp.Matrix.hstack(*multi.Z_heads) * multi.W_O - multi.Y))


def _lambdified(rng: np.random.Generator, torch: bool) -> LambdifiedLayer:
    """The symbolic layer (its 1/√d_k included: d_k = 2), compiled, against PyTorch or the formula written apart."""
    spec = AttentionSpec(n=2, d_model=4, heads=2, output_projection=True)
    layer = symbolic_attention(spec).lambdify("Y")
    w = {name: rng.standard_normal(spec.shapes[name]) for name in ("X", "W_Q", "W_K", "W_V", "W_O")}
    Y = np.asarray(layer(**w)["Y"], dtype=float)
    if torch:
        Y_ref, _ = torch_multihead_attention(w["X"], {k: v for k, v in w.items() if k != "X"}, heads=2)
    else:
        Y_ref = multihead_attention_formula(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=2)
    return LambdifiedLayer("torch" if torch else "formula", max_abs(Y, Y_ref), close(Y, Y_ref))


def study(rng: Streams, *, quick: bool, torch: bool, d_k_of: Callable[[int, int], int] | None = None,
          head_order: Sequence[int] | None = None, scale: Any = "sqrt") -> MultiHeadResult:
    """Parameter counts, per-head maps, concatenation with ``W_O``, the exact identity and the lambdified layer.

    Parameters
    ----------
    rng : callable
        ``rng()`` draws the weights and the input of the measured layer, then the lambdified
        layer's inputs (one stream, in that order).
    quick : bool
        The sizes of :meth:`MultiHeadSizes.of`.
    torch : bool
        Compare with ``torch.nn.MultiheadAttention`` (PyTorch must be installed).
    d_k_of : callable ``(d_model, h) -> d_k``, optional
        The head width of the counted layers (default ``d_model // h``).
    head_order : sequence of int, optional
        The order the heads are concatenated in before ``W_O`` (default 0, 1, …).
    scale : "sqrt" or float, default "sqrt"
        The score scale of the numeric layers (``"sqrt"``: ``1/√d_k`` of each head).
    """
    sizes = MultiHeadSizes.of(quick)
    d_k_of = (lambda d, h: d // h) if d_k_of is None else d_k_of
    order = list(range(sizes.heads)) if head_order is None else [int(h) for h in head_order]
    generator = rng()
    spec = AttentionSpec(n=sizes.n, d_model=sizes.d_model, heads=sizes.heads)
    w = random_weights(generator, spec)
    X = generator.standard_normal((sizes.n, sizes.d_model))
    Y, A = attention(X, w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=sizes.heads, scale=scale)  # (n, d_model), (heads, n, n)
    concat = _heads_one_by_one(X, w, spec.d_k, order, scale)
    agreement = None
    if torch:
        Y_t, A_t = torch_multihead_attention(X, w, heads=sizes.heads)
        agreement = TorchAgreement(torch_version(), max_abs(Y, Y_t), max_abs(concat, Y_t), max_abs(A, A_t),
                                   close(Y, Y_t) and close(concat, Y_t) and close(A, A_t))
    symbolic_ok = symbolic_heads_identity()
    formula = multihead_attention_formula(X, w["W_Q"], w["W_K"], w["W_V"], w["W_O"], heads=sizes.heads)
    return MultiHeadResult(
        sizes=sizes, counts=_counts(sizes.d_model, d_k_of, torch), weights=A,
        head_distances=tuple(routing_distance(A[a], A[b]) for a, b in itertools.combinations(range(sizes.heads), 2)),
        concat_gap=max_abs(concat, Y), concat_close=close(concat, Y), torch=agreement, symbolic_per_head=symbolic_ok,
        lambdified=_lambdified(generator, torch), formula_gap=max_abs(formula, Y))

