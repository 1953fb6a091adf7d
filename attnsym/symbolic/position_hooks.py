r"""Where a position scheme enters the exact passes: the symbolic twin of ``BoundLayer``'s three hooks.

:func:`position_hooks` is the one place of :mod:`attnsym.symbolic` that reads ``spec.positions``:
it maps the scheme to a :class:`PositionHooks` object, and every builder (the forward pass of
:func:`~attnsym.symbolic.attention`, the gradient program of :func:`~attnsym.symbolic.gradients`,
the derivation steps, the size estimate, the shift proofs) asks that object instead of testing the
scheme's name. As in :mod:`attnsym.numeric.layer`, a scheme plugs in at exactly one of three places
(the exact matrices themselves come from :mod:`attnsym.symbolic.positions`):

(a) :meth:`PositionHooks.position_vectors` / :meth:`~PositionHooks.encode_inputs` — vectors added to
    the tokens before the projections, ``X_in = X + PE`` (``"sinusoidal"``); the backward pass
    passes gradients through unchanged (``PE`` is constant).
(b) :meth:`PositionHooks.rotate` — each head's query and key rows turned by their position right after
    the projections, row ``p`` by ``R(p θ)`` (``"rope"``); ``adjoint=True`` applies the transpose
    ``R(p θ)ᵀ = R(−p θ)``, as the backward pass does. :meth:`~PositionHooks.rotation_planes` gives the
    same rotation as column pairs, for the straight-line gradient program.
(c) :meth:`PositionHooks.score_bias` — a constant per-head bias added to the scaled scores
    (``"alibi"``); it carries no gradient.

Each hook is the identity (or ``None``) in the base class, which is also the layer without
positions. A new scheme is a subclass that overrides its hook (and its term counts, used by
:func:`~attnsym.symbolic.estimate_cost`) plus one entry of :data:`_SCHEMES`.

Examples
--------
>>> hooks = position_hooks(AttentionSpec(n=2, d_model=2, positions="rope"))
>>> hooks.rotates, hooks.adds_vectors, hooks.biases_scores
(True, False, False)
>>> hooks.rotate(sp.Matrix([[1, 0], [1, 0]]))
Matrix([
[     1,      0],
[cos(1), sin(1)]])
>>> position_hooks(AttentionSpec(n=2, d_model=2)).rotate(sp.Matrix([[1, 0], [1, 0]]))
Matrix([
[1, 0],
[1, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import sympy as sp

from .._exact import exact_matrix
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from .positions import alibi_bias, apply_rope, rope_frequencies, sinusoidal_positions

__all__ = ["AlibiHooks", "PositionHooks", "RopeHooks", "SinusoidalHooks", "position_hooks"]

Matrix = sp.ImmutableMatrix
#: a rotation plane of the gradient program: columns ``a``, ``b`` of a (n, heads·d_k) matrix turn by ``p θ``
Plane = tuple[int, int, sp.Expr]


class PositionHooks:
    """The hooks of one spec; this base class is the layer without positions (every hook the identity).

    Parameters
    ----------
    spec : AttentionSpec
        The layer; its ``positions`` chose the class (see :func:`position_hooks`).

    Attributes
    ----------
    adds_vectors, rotates, biases_scores : bool
        Which hook the scheme uses: (a) vectors added to ``X``, (b) rotated queries and keys,
        (c) a score bias.
    """

    adds_vectors: ClassVar[bool] = False
    rotates: ClassVar[bool] = False
    biases_scores: ClassVar[bool] = False

    def __init__(self, spec: AttentionSpec) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(positions={self.spec.positions!r})"

    # ------------------------------------------------------------------ (a) vectors added to the tokens
    def position_vectors(self, offset: int | sp.Expr = 0) -> sp.ImmutableMatrix | None:
        """The ``(n, d_model)`` matrix ``PE`` added to ``X`` (rows at positions ``offset, offset + 1, …``), or None."""
        return None

    def encode_inputs(self, X: sp.MatrixBase, offset: int | sp.Expr = 0) -> sp.ImmutableMatrix:
        """The projections' input ``X_in``: ``X + PE`` when the scheme adds vectors, else ``X``.

        ``X`` is an ``(n, d_model)`` SymPy matrix or array-like of numbers (a string is refused, never parsed).
        """
        X = exact_matrix("X", X)
        shape = (self.spec.n, self.spec.d_model)
        if X.shape != shape:
            raise ShapeError(f"X must have shape (n, d_model) = {shape} (got {X.shape})")
        PE = self.position_vectors(offset)
        return Matrix(X) if PE is None else Matrix(X + PE)

    # ------------------------------------------------------------------ (b) rotated queries and keys
    def rotate(self, M: sp.MatrixBase, positions: Sequence[int | sp.Expr] | None = None, *,
               adjoint: bool = False) -> sp.MatrixBase:
        """One head's query or key rows ``M`` (rows, d_k) at ``positions`` (default ``0, 1, …``), rotated.

        ``adjoint=True`` applies the transpose of the rotation (the backward pass). The base
        class returns ``M`` itself.
        """
        return M

    def rotation_planes(self, heads: int) -> list[Plane]:
        """The rotation of ``heads`` heads as column planes ``(a, b, θ)`` of a (n, heads·d_k) matrix (empty: none)."""
        return []

    def query_key_terms(self, terms: int) -> int:
        """Expression terms of a query or key entry the scores read, from ``terms`` of a projected entry."""
        return terms

    # ------------------------------------------------------------------ (c) a bias on the scores
    def score_bias(self, head: int, positions: Sequence[int | sp.Expr] | None = None) -> sp.ImmutableMatrix | None:
        """The ``(n, n)`` bias head ``head`` adds to its scaled scores (tokens at ``positions``), or None."""
        return None

    def score_biases(self) -> tuple[sp.ImmutableMatrix, ...] | None:
        """Every head's :meth:`score_bias` at the default positions, or None without a bias."""
        if not self.biases_scores:
            return None
        return tuple(Matrix(self.score_bias(hh)) for hh in range(self.spec.heads))

    def score_terms(self) -> int:
        """Expression terms the bias adds to one score."""
        return 0

    def input_terms(self, d_model: int) -> int:
        """Expression terms of one projected entry, from the ``d_model`` products ``x w``."""
        return d_model


class SinusoidalHooks(PositionHooks):
    """``"sinusoidal"``: hook (a), ``PE`` of :func:`~attnsym.symbolic.sinusoidal_positions` added to ``X``."""

    adds_vectors = True

    def position_vectors(self, offset: int | sp.Expr = 0) -> sp.ImmutableMatrix:
        spec = self.spec
        return sinusoidal_positions(spec.n, spec.d_model, int(spec.position_base), offset=offset)

    def input_terms(self, d_model: int) -> int:
        return 2 * d_model  # each x becomes x + PE


class RopeHooks(PositionHooks):
    """``"rope"``: hook (b), each head's query and key rows turned by :func:`~attnsym.symbolic.apply_rope`."""

    rotates = True

    def rotate(self, M: sp.MatrixBase, positions: Sequence[int | sp.Expr] | None = None, *,
               adjoint: bool = False) -> sp.ImmutableMatrix:
        if adjoint:  # R(p θ)ᵀ = R(−p θ)
            positions = [-p for p in (range(M.shape[0]) if positions is None else positions)]
        return apply_rope(M, self.spec, positions)

    def rotation_planes(self, heads: int) -> list[Plane]:
        spec = self.spec
        theta = rope_frequencies(spec)
        return [(hh * spec.d_k + a, hh * spec.d_k + b, theta[i]) for hh in range(heads) for a, b, i in spec.rope_pairs]

    def query_key_terms(self, terms: int) -> int:
        return 2 * terms + 2  # q_a cos − q_b sin


class AlibiHooks(PositionHooks):
    """``"alibi"``: hook (c), the bias ``−m_h |i − j|`` of :func:`~attnsym.symbolic.alibi_bias` on every head's scores."""

    biases_scores = True

    def score_bias(self, head: int, positions: Sequence[int | sp.Expr] | None = None) -> sp.ImmutableMatrix:
        return alibi_bias(self.spec, head, positions)

    def score_terms(self) -> int:
        return 1


#: the one map from ``spec.positions`` to its hooks
_SCHEMES: dict[str | None, type[PositionHooks]] = {
    None: PositionHooks, "sinusoidal": SinusoidalHooks, "rope": RopeHooks, "alibi": AlibiHooks,
}


def position_hooks(spec: AttentionSpec) -> PositionHooks:
    """The position hooks of ``spec`` (see the module docstring).

    Parameters
    ----------
    spec : AttentionSpec

    Returns
    -------
    PositionHooks
        :class:`SinusoidalHooks`, :class:`RopeHooks`, :class:`AlibiHooks`, or the base class
        without positions.

    Raises
    ------
    SpecError
        ``spec`` is not an :class:`~attnsym.AttentionSpec`, or its scheme has no symbolic hooks.

    Examples
    --------
    >>> position_hooks(AttentionSpec(n=3, d_model=2, positions="alibi")).score_bias(0)
    Matrix([
    [     0, -1/256, -1/128],
    [-1/256,      0, -1/256],
    [-1/128, -1/256,      0]])
    >>> position_hooks(AttentionSpec(n=2, d_model=2, positions="sinusoidal")).encode_inputs(sp.zeros(2, 2))
    Matrix([
    [     0, 1],
    [sin(1), cos(1)]])
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    try:
        return _SCHEMES[spec.positions](spec)
    except KeyError:  # the spec knows a scheme this view does not implement
        raise SpecError(f"attnsym.symbolic has no position hooks for positions={spec.positions!r} "
                        f"(it implements {', '.join(repr(k) for k in _SCHEMES)})") from None
