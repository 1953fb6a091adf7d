r"""Jacobians behind the gradients: the softmax Jacobian and the hypernetwork view of ∂Y/∂X.

The softmax Jacobian :math:`J = \operatorname{diag}(a) - a a^\top` (with
:math:`a = \operatorname{softmax}(z)`) is what turns ``dA`` into ``dS`` in backpropagation.
It is derived here by differentiating softmax, proven equal to the closed form, and shown to
have rank :math:`n - 1` (its kernel is the all-ones vector: adding a constant to every score
of a row changes nothing).

The *hypernetwork view*: an MLP layer ``Y = X W`` has the input Jacobian
:math:`\partial Y_{ic} / \partial X_{kj} = \delta_{ik} W_{jc}`, the same for every ``X``.
Attention ``Y = A(X) V(X)`` (with ``V = X W_V`` and an output map ``W_O``) has

.. math::

    \frac{\partial Y_{ic}}{\partial X_{kj}}
      = \underbrace{A_{ik}\,(W_V W_O)_{jc}}_{\text{frozen routing}}
      + \underbrace{\sum_{l} \frac{\partial A_{il}}{\partial X_{kj}}\,(V W_O)_{lc}}_{\text{from } \partial A / \partial X},

the first term being an MLP-like mixing with the data-generated weights ``A(X)`` held fixed,
the second the extra term an MLP lacks: the weights themselves move with the input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from .._checks import positive_int
from ..errors import SpecError
from ..spec import AttentionSpec
from .cost import enforce_limit, estimate_cost
from .matrices import SymbolicAttention, attention
from .mlp import _sizes, mlp
from .position_hooks import PositionHooks, position_hooks

__all__ = [
    "InputJacobian",
    "SoftmaxJacobian",
    "attention_input_jacobian",
    "derive_softmax_jacobian",
    "mlp_input_jacobian",
    "softmax_jacobian",
    "softmax_output_symbols",
]

Matrix = sp.ImmutableMatrix


def _check_n(n, name: str = "n", largest: int = 12) -> int:
    n = positive_int(name, n)
    if n > largest:
        raise SpecError(f"{name} must be at most {largest} for a symbolic softmax Jacobian (got {name}={n}); "
                        "use attnsym.numeric.softmax_jacobian for numbers")
    return int(n)


def softmax_output_symbols(n: int) -> list[sp.Symbol]:
    """The softmax outputs ``a_1 … a_n`` (positive), counted from 1 like every symbol of attnsym.

    ``a_i`` is entry ``i - 1`` of a NumPy vector (see the numbering convention in :mod:`attnsym.spec`).

    >>> softmax_output_symbols(3)
    [a_1, a_2, a_3]
    """
    return [sp.Symbol(f"a_{i}", positive=True) for i in range(1, _check_n(n) + 1)]


_a_symbols = softmax_output_symbols


def softmax_jacobian(n: int) -> sp.ImmutableMatrix:
    r"""The softmax Jacobian :math:`\partial a_i / \partial z_j = a_i(\delta_{ij} - a_j)` as ``diag(a) - a aᵀ``.

    Parameters
    ----------
    n : int
        Length of the softmax vector (1 to 12).

    Returns
    -------
    sympy.ImmutableMatrix
        ``n x n``, in the symbols ``a_1, …, a_n`` (the softmax outputs, positive).

    See Also
    --------
    derive_softmax_jacobian : the derivation, the proof, and the rank.

    Examples
    --------
    >>> softmax_jacobian(2)
    Matrix([
    [-a_1**2 + a_1,      -a_1*a_2],
    [     -a_1*a_2, -a_2**2 + a_2]])
    """
    n = _check_n(n)
    a = Matrix(_a_symbols(n))
    return Matrix(sp.diag(*a) - a * a.T)


@dataclass(frozen=True)
class SoftmaxJacobian:
    r"""The softmax Jacobian, derived by differentiation and proven equal to ``diag(a) - a aᵀ``.

    Attributes
    ----------
    n : int
    z : sympy.ImmutableMatrix
        The scores ``z_1 … z_n`` (column).
    softmax : sympy.ImmutableMatrix
        :math:`e^{z_i} / \sum_k e^{z_k}` (column).
    derived : sympy.ImmutableMatrix
        :math:`\partial\,\mathrm{softmax}_i / \partial z_j` as SymPy differentiates it.
    closed_form : sympy.ImmutableMatrix
        ``diag(a) - a aᵀ`` in ``a_1 … a_n``.
    proven : bool
        ``derived - closed_form(a = softmax(z))`` cancels to the zero matrix.
    row_sums : sympy.ImmutableMatrix
        ``closed_form @ 1`` with ``a_n = 1 - a_1 - … - a_{n-1}``: all zeros, so the
        all-ones vector is in the kernel (rank at most ``n - 1``).
    minor_determinant : sympy.Expr
        Determinant of the leading ``(n-1) x (n-1)`` block on the simplex, which factors as
        ``a_1 ⋯ a_n``: positive, so the rank is at least ``n - 1``.
    rank : int
        ``n - 1`` (from the two facts above; also checked with SymPy's ``rank`` for ``n <= 4``).
    """

    n: int
    z: sp.ImmutableMatrix
    softmax: sp.ImmutableMatrix
    derived: sp.ImmutableMatrix
    closed_form: sp.ImmutableMatrix
    proven: bool
    row_sums: sp.ImmutableMatrix
    minor_determinant: sp.Expr
    rank: int


def derive_softmax_jacobian(n: int) -> SoftmaxJacobian:
    r"""Differentiate softmax, prove :math:`J = \operatorname{diag}(a) - a a^\top`, show rank ``n - 1``.

    Parameters
    ----------
    n : int
        Length of the vector (1 to 6: the proof cancels rational functions of ``n`` exponentials).

    Returns
    -------
    SoftmaxJacobian

    Examples
    --------
    >>> jac = derive_softmax_jacobian(3)
    >>> jac.proven, jac.rank
    (True, 2)
    >>> jac.row_sums.T
    Matrix([[0, 0, 0]])
    >>> jac.minor_determinant          # a_1 a_2 a_3 with a_3 = 1 - a_1 - a_2
    -a_1*a_2*(a_1 + a_2 - 1)
    """
    n = _check_n(n, largest=6)
    z = Matrix([sp.Symbol(f"z_{i}", real=True) for i in range(1, n + 1)])
    exps = [sp.exp(zi) for zi in z]
    total = sp.Add(*exps)
    s = Matrix([e / total for e in exps])
    derived = Matrix(n, n, lambda i, j: s[i].diff(z[j]))
    closed = softmax_jacobian(n)
    a = _a_symbols(n)
    on_softmax = closed.xreplace(dict(zip(a, s, strict=True)))
    proven = all(sp.cancel(sp.together(d - c)) == 0 for d, c in zip(derived, on_softmax, strict=True))
    simplex = {a[-1]: 1 - sp.Add(*a[:-1])}
    on_simplex = closed.xreplace(simplex)
    row_sums = Matrix(n, 1, [sp.expand(sp.Add(*on_simplex[i, :])) for i in range(n)])
    minor = sp.factor(on_simplex[: n - 1, : n - 1].det()) if n > 1 else sp.Integer(1)
    rank = n - 1
    if n <= 4:  # an independent confirmation on the simplex at a generic rational point
        point = {sym: sp.Rational(k + 1, 2 * n + 3) for k, sym in enumerate(a[:-1])}
        rank_here = on_simplex.xreplace(point).rank()
        if rank_here != n - 1:  # pragma: no cover - would mean the algebra above is wrong
            raise ArithmeticError(f"softmax Jacobian rank {rank_here} != {n - 1} at {point}")
    return SoftmaxJacobian(n=n, z=z, softmax=s, derived=derived, closed_form=closed, proven=proven,
                           row_sums=row_sums, minor_determinant=minor, rank=rank)


# ---------------------------------------------------------------------------------------------- hypernetwork view
@dataclass(frozen=True)
class InputJacobian:
    r"""The Jacobian ∂vec(Y)/∂vec(X) of attention, split into its two terms.

    Rows are indexed ``i * d_out + c`` (entry ``Y[i, c]``), columns ``k * d_model + j``
    (entry ``X[k, j]``), both row-major.

    Attributes
    ----------
    spec : AttentionSpec
    frozen : sympy.ImmutableMatrix
        :math:`\sum_h A_h[i,k]\,(W_V^{(h)} W_O^{(h)})[j,c]`: the data-generated weights held fixed
        (the same form as an MLP's Jacobian, with ``A(X)`` in place of the identity).
    routing : sympy.ImmutableMatrix
        :math:`\sum_h \sum_{l,m} A_h[i,l](\delta_{lm} - A_h[i,m])\,\partial S_h[i,m]/\partial X_{kj}\,(V_h W_O^{(h)})[l,c]`:
        the extra term from :math:`\partial A/\partial X`, written with the softmax Jacobian.
    total : sympy.ImmutableMatrix
        SymPy's own ``jacobian`` of the forward pass (an independent computation).
    """

    spec: AttentionSpec
    frozen: sp.ImmutableMatrix
    routing: sp.ImmutableMatrix
    total: sp.ImmutableMatrix


def attention_input_jacobian(spec: AttentionSpec, *, weights: str = "explicit",
                             max_terms: float | None = None) -> InputJacobian:
    r"""∂Y/∂X of attention as *frozen routing* + *the term from ∂A/∂X* (and SymPy's total).

    Parameters
    ----------
    spec : AttentionSpec
        Any layer; sizes are bounded by the size guard of :func:`attnsym.symbolic.attention`.
    weights : {"explicit", "symbols"}, default "explicit"
        ``"explicit"``: every attention weight is written out in the inputs (``exp(…)/(…)``).
        ``"symbols"``: ``frozen`` and ``routing`` use the symbols ``\alpha_{i,j}`` (``\alpha^{(h)}_{i,j}``
        for head ``h``) for the weights, which shows their structure; substitute ``alpha = A``
        to compare with ``total`` (always explicit).
    max_terms : float, optional
        Size guard: the forward pass's terms (:func:`~attnsym.symbolic.estimate_cost`) times the
        number of input entries must not exceed it (default
        :data:`~attnsym.symbolic.DEFAULT_MAX_TERMS`; ``float("inf")`` disables it).

    Returns
    -------
    InputJacobian

    Raises
    ------
    SpecError
        ``spec`` is not an AttentionSpec, or ``weights`` is not a choice.
    SizeLimitError
        The layer is too large (raised before anything is built).
        ``frozen + routing == total`` (see :func:`attnsym.symbolic.check_gradients` for how
        such identities are proven; the tests do it).

    Examples
    --------
    >>> jac = attention_input_jacobian(AttentionSpec(n=2, d_model=1, scale="none"))
    >>> jac.total.shape
    (2, 2)
    >>> x = {s: v for s, v in zip(sp.symbols("x_{1,1} x_{2,1}", real=True), (1, 2))}
    >>> w = {s: 1 for s in sp.symbols("W^{Q}_{1,1} W^{K}_{1,1} W^{V}_{1,1}", real=True)}
    >>> sp.simplify((jac.frozen + jac.routing - jac.total).xreplace({**x, **w}))
    Matrix([
    [0, 0],
    [0, 0]])
    """
    _check_input_jacobian(spec, weights, max_terms)
    sym = attention(spec, max_terms=float("inf"))
    hooks = position_hooks(spec)
    n, m, d_out = spec.n, spec.d_model, spec.d_out
    frozen = [[sp.Integer(0)] * (n * m) for _ in range(n * d_out)]
    routing = [[sp.Integer(0)] * (n * m) for _ in range(n * d_out)]
    for h in range(spec.heads):
        _add_head(spec, sym, hooks, h, weights, frozen, routing)
    x, Y = list(sym.X), list(sym.Y)
    total = Matrix(n * d_out, n * m, lambda r, q: Y[r].diff(x[q]))
    return InputJacobian(spec=spec, frozen=Matrix(frozen), routing=Matrix(routing), total=total)


def _check_input_jacobian(spec: AttentionSpec, weights: str, max_terms: float | None) -> None:
    """Refuse, before anything is built, what :func:`attention_input_jacobian` cannot write or is too large."""
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if weights not in ("explicit", "symbols"):
        raise SpecError(f"weights must be 'explicit' or 'symbols' (got {weights!r})")
    # ``total`` differentiates every output entry's tree once per input entry: guard that, not only the forward
    enforce_limit(estimate_cost(spec).total * spec.n * spec.d_model, max_terms,
                  what=f"the input Jacobian of {spec.describe()}", alternative="attnsym.numeric.attention_vjp")
    unsupported = [f"{name}={value!r}" for name, value, plain in (
        ("kv_heads", spec.kv_heads, spec.heads), ("softcap", spec.softcap, None), ("qk_norm", spec.qk_norm, False))
        if value != plain]
    if unsupported:
        raise SpecError(f"attention_input_jacobian writes dS/dX for plain bilinear scores, one key block per head "
                        f"(got {', '.join(unsupported)}); differentiate attnsym.symbolic.attention(spec).Y elementwise")
    spec.refuse_variants("attention_input_jacobian", implemented=("chunk",))


def _head_weights(spec: AttentionSpec, A: sp.ImmutableMatrix, h: int, weights: str) -> sp.ImmutableMatrix:
    r"""Head ``h``'s weights: ``A`` written out, or the symbols ``\alpha_{i,j}`` where ``A`` is not 0."""
    if weights != "symbols":
        return A
    n, tag = spec.n, "" if spec.heads == 1 else f"^{{({h + 1})}}"
    return Matrix(n, n, lambda i, j: sp.Symbol(rf"\alpha{tag}_{{{i + 1},{j + 1}}}", positive=True) if A[i, j] != 0 else 0)


def _score_derivative(spec: AttentionSpec, sym: SymbolicAttention, hooks: PositionHooks,
                      h: int) -> Callable[[int, int, int, int], sp.Expr]:
    r"""``dS(i, l, k, j)`` = :math:`\partial S_h[i, l] / \partial X[k, j]` of ``S_h = c \tilde Q_h \tilde K_h^\top``.

    Row ``p`` of ``\tilde Q_h`` is the rotated (hook (b)) row ``x_p W_Q^{(h)}``, so its derivative in
    ``x_p`` is ``W_Q^{(h)}`` with every row rotated as at position ``p``; the score bias (hook (c)) and
    added vectors (hook (a)) are constant in ``X``.
    """
    n, m, d_k, c = spec.n, spec.d_model, spec.d_k, spec.scale_expr
    cols = list(range(h * d_k, (h + 1) * d_k))
    W_Qh, W_Kh = sym.weight("W_Q")[:, cols], sym.weight("W_K")[:, cols]
    W_Q_at = [hooks.rotate(W_Qh, [p] * m) for p in range(n)]  # ∂(Q~ row p)/∂(x_p): (m, d_k)
    W_K_at = [hooks.rotate(W_Kh, [p] * m) for p in range(n)]
    Qh = sym.Q_rot_heads[h] if sym.Q_rot_heads is not None else sym.Q_heads[h]
    Kh = sym.K_rot_heads[h] if sym.K_rot_heads is not None else sym.K_heads[h]

    def dS(i: int, mm: int, k: int, j: int) -> sp.Expr:
        term = sp.Integer(0)
        if i == k:
            term += sp.Add(*[W_Q_at[i][j, t] * Kh[mm, t] for t in range(d_k)])
        if mm == k:
            term += sp.Add(*[Qh[i, t] * W_K_at[mm][j, t] for t in range(d_k)])
        return c * term

    return dS


def _add_head(spec: AttentionSpec, sym: SymbolicAttention, hooks: PositionHooks, h: int, weights: str,
              frozen: list[list[sp.Expr]], routing: list[list[sp.Expr]]) -> None:
    """Add head ``h``'s share of the frozen and the routing term to ``frozen`` and ``routing`` (in place)."""
    n, m, d_out, d_v = spec.n, spec.d_model, spec.d_out, spec.d_v
    allowed = spec.allowed
    A = _head_weights(spec, sym.A_heads[h], h, weights)
    vcols = list(range(h * d_v, (h + 1) * d_v))
    W_O = sym.W_O
    W_Oh = sp.eye(d_v) if W_O is None else W_O[vcols, :]
    out_cols = range(d_out) if W_O is not None else vcols  # columns of Y this head writes to
    VW = sym.V_heads[h] * W_Oh  # (n, d_out or d_v)
    WVW = sym.weight("W_V")[:, vcols] * W_Oh  # (m, d_out or d_v)
    dS = _score_derivative(spec, sym, hooks, h)
    for i in range(n):
        keys = [key for key in range(n) if allowed is None or allowed[i][key]]
        for oc_index, oc in enumerate(out_cols):
            row = i * d_out + oc
            for k in range(n):
                for j in range(m):
                    col = k * m + j
                    frozen[row][col] += A[i, k] * WVW[j, oc_index]
                    dA = [sp.Add(*[A[i, key] * ((1 if key == mm else 0) - A[i, mm]) * dS(i, mm, k, j) for mm in keys])
                          for key in keys]
                    routing[row][col] += sp.Add(*[da * VW[key, oc_index] for da, key in zip(dA, keys, strict=True)])


def mlp_input_jacobian(spec_or_sizes, *, bias: bool = False, max_terms: float | None = None) -> sp.ImmutableMatrix:
    r"""∂vec(Y)/∂vec(X) of the MLP layer ``Y = X W (+ 1 b)``: ``I_n ⊗ Wᵀ``, the same for every ``X``.

    Parameters
    ----------
    spec_or_sizes : AttentionSpec or tuple
        As for :func:`attnsym.symbolic.mlp`.
    bias : bool, default False

    Returns
    -------
    sympy.ImmutableMatrix
        Entries are weights ``W_{j,c}`` or 0; no ``x`` appears (constant in ``X``).

    Examples
    --------
    >>> J = mlp_input_jacobian((2, 1))
    >>> J
    Matrix([
    [W_{1,1},       0],
    [      0, W_{1,1}]])
    >>> any(str(s).startswith("x") for s in J.free_symbols)
    False
    """
    n, d_in, d_out = _sizes(spec_or_sizes)
    # (n d_out) x (n d_in) entries, each a derivative of a d_in-term sum
    enforce_limit(n * d_out * n * d_in * (d_in + 1), max_terms,
                  what=f"the symbolic MLP input Jacobian for n={n}, d_in={d_in}, d_out={d_out}")
    layer = mlp(spec_or_sizes, bias=bias, max_terms=float("inf"))
    Y, X = list(layer.Y), list(layer.X)
    return Matrix(len(Y), len(X), lambda r, q: Y[r].diff(X[q]))
