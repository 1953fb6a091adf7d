r"""The backpropagation identities of attention with *symbolic* sizes (SymPy matrix expressions).

Sizes ``n``, ``d`` (``d_model``), ``d_k``, ``d_v`` are symbols; every matrix is a
``MatrixSymbol`` and every gradient a matrix expression valid for all sizes:

.. math::

    dV = A^\top dZ,\quad dA = dZ\, V^\top,\quad
    dS = A \circ \bigl(dA - (dA \circ A)\,\mathbf 1_n \mathbf 1_n^\top\bigr),\quad
    dQ = c\, dS\, K,\quad dK = c\, dS^\top Q,

    dW_Q = X^\top dQ,\quad dW_K = X^\top dK,\quad dW_V = X^\top dV,\quad
    dX = dQ\, W_Q^\top + dK\, W_K^\top + dV\, W_V^\top,

with ``dZ = G W_Oᵀ`` and ``dW_O = Zᵀ G`` when there is an output projection, and
``db = 1ᵀ d(·)`` for the biases. ``A`` is a ``MatrixSymbol`` standing for the row softmax of
``S = c Q Kᵀ`` (SymPy has no matrix-level softmax, and ``MatrixSymbol.diff`` cannot
differentiate through one); a mask enters only through the zeros of ``A``, so the formulas
are the same for causal attention. ``1_n 1_nᵀ`` is SymPy's ``OneMatrix(n, n)`` (printed ``1``).
For several heads the same formulas hold per head (column blocks of ``Q``, ``K``, ``V`` and
row blocks of ``W_O``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions import HadamardProduct, MatAdd, MatMul, MatrixExpr, MatrixSymbol, OneMatrix, Transpose

from .._checks import one_of
from .._exact import exact_matrix
from ..errors import SpecError
from ..spec import AttentionSpec

__all__ = ["MatrixGradients", "matrix_gradients"]


@dataclass(frozen=True)
class MatrixGradients:
    """Closed-form gradients of attention as SymPy matrix expressions with symbolic sizes.

    Attributes
    ----------
    sizes : dict
        ``{"n": n, "d_model": d, "d_k": d_k, "d_v": d_v}`` (positive integer symbols).
    scale : sympy.Expr
        ``c`` (``1/sqrt(d_k)`` by default).
    inputs : dict
        ``X``, ``W_Q``, ``W_K``, ``W_V`` (``W_O``, ``b_*``, ``PE``) and the upstream ``G``.
    forward : dict
        ``X_in``, ``Q``, ``K``, ``V``, ``S``, ``A`` (a symbol for ``softmax(S)``), ``Z``, ``Y``.
    gradients : dict
        ``dZ``, ``dV``, ``dA``, ``dS``, ``dQ``, ``dK``, then one per input, named after it
        (``"X"``, ``"W_Q"``, …), each a matrix expression of that input's shape.
    """

    sizes: dict
    scale: sp.Expr
    inputs: dict
    forward: dict
    gradients: dict
    intermediates: dict

    def inlined(self, name: str) -> MatrixExpr:
        """Gradient ``name`` with the intermediates ``dZ, dA, dS, dQ, dK, dV`` substituted (inputs only).

        Examples
        --------
        >>> matrix_gradients().inlined("W_V")
        X.T*A.T*G
        """
        if name not in self.gradients:
            raise SpecError(f"no gradient named {name!r}; choose from {list(self.gradients)}")
        expr = self.gradients[name]
        for _ in range(len(self.intermediates) + 1):
            new = expr.xreplace(self.intermediates)
            if new == expr:
                return expr.doit()
            expr = new
        return expr  # pragma: no cover

    def equations(self) -> list[sp.Eq]:
        """``Eq(Symbol('dname'), expr)`` for every gradient, in backward order (for rendering)."""
        return [sp.Eq(sp.Symbol(f"d{name}" if not name.startswith("d") else name), expr)
                for name, expr in self.gradients.items()]

    def latex(self, name: str, *, inline: bool = False) -> str:
        r"""LaTeX of gradient ``name`` with adjoints written :math:`\bar M` and explicit parentheses.

        SymPy's printer drops the parentheses around a Hadamard product inside a product; this
        one keeps every grouping visible.

        Parameters
        ----------
        name : str
            A key of :attr:`gradients`.
        inline : bool, default False
            Print :meth:`inlined` (inputs only) instead of the form with intermediates.

        Examples
        --------
        >>> mg = matrix_gradients()
        >>> print(mg.latex("dS"))
        \bar{S} = A \circ \left(\bar{A} - \left(A \circ \bar{A}\right) \mathbf{1} \mathbf{1}^\top\right)
        >>> print(mg.latex("W_Q"))
        \bar{W}_{Q} = X^\top \bar{Q}
        """
        if name not in self.gradients:
            raise SpecError(f"no gradient named {name!r}; choose from {list(self.gradients)}")
        expr = self.inlined(name) if inline else self.gradients[name]
        return f"{_adjoint_name(name)} = {_latex(expr)}"

    def explicit(self, name: str, values: Mapping[str, sp.MatrixBase]) -> sp.ImmutableMatrix:
        """Evaluate gradient ``name`` on explicit matrices.

        Parameters
        ----------
        name : str
            A key of :attr:`gradients`.
        values : mapping
            Explicit SymPy matrices for every ``MatrixSymbol`` the expression uses (``"X"``,
            ``"W_Q"``, …, ``"G"``, ``"A"``, and ``"PE"`` with positions), of consistent sizes.

        Returns
        -------
        sympy.ImmutableMatrix

        Examples
        --------
        >>> mg = matrix_gradients()
        >>> mg.explicit("W_V", {"X": sp.eye(2), "A": sp.ones(2, 2) / 2, "G": sp.eye(2),
        ...                    "W_Q": sp.eye(2), "W_K": sp.eye(2), "W_V": sp.eye(2)})
        Matrix([
        [1/2, 1/2],
        [1/2, 1/2]])
        """
        name = one_of("name", name, tuple(self.gradients))
        if not isinstance(values, Mapping):
            raise SpecError(f"values must be a mapping from matrix name to matrix (got {type(values).__name__})")
        table = {}
        for key, value in values.items():
            if not isinstance(key, str | sp.MatrixSymbol):
                raise SpecError(f"values keys must be matrix names such as 'X' (got {key!r})")
            table[str(key)] = sp.ImmutableMatrix(exact_matrix(f"values[{str(key)!r}]", value))
        n = next(iter(table.values())).shape[0] if "X" not in table else table["X"].shape[0]
        sizes = {self.sizes["n"]: n}
        if "X" in table:
            sizes[self.sizes["d_model"]] = table["X"].shape[1]
        if "W_Q" in table:
            sizes[self.sizes["d_k"]] = table["W_Q"].shape[1]
        if "W_V" in table:
            sizes[self.sizes["d_v"]] = table["W_V"].shape[1]
        return sp.ImmutableMatrix(_evaluate(self.inlined(name), table, sizes, self.scale.xreplace(sizes)))


def _adjoint_name(name: str) -> str:
    base = name[1:] if name.startswith("d") and name[1:2].isupper() else name
    letter, _, tag = base.partition("_")
    return rf"\bar{{{letter}}}_{{{tag}}}" if tag else rf"\bar{{{letter}}}"


def _latex(expr, parent: str = "") -> str:
    """Matrix-expression LaTeX with parentheses wherever a sum or ⊙ sits inside a product."""
    if isinstance(expr, MatrixSymbol):
        name = str(expr.name)
        if name.startswith("d") and name[1:2].isupper():
            return _adjoint_name(name)
        letter, _, tag = name.partition("_")
        return f"{letter}_{{{tag}}}" if tag else letter
    if isinstance(expr, OneMatrix):
        return r"\mathbf{1}^\top" if expr.shape[0] == 1 and expr.shape[1] != 1 else r"\mathbf{1}"
    if isinstance(expr, Transpose):
        inner = _latex(expr.arg, "T")
        if isinstance(expr.arg, OneMatrix) and expr.arg.shape[1] == 1:
            return r"\mathbf{1}^\top"
        return rf"{inner}^\top"
    if isinstance(expr, MatMul):
        coeff, factors = sp.Integer(1), []
        for arg in expr.args:
            if isinstance(arg, MatrixExpr):
                if isinstance(arg, OneMatrix) and arg.shape[0] != 1 and arg.shape[1] != 1:  # 1 1ᵀ folded by SymPy
                    factors += [r"\mathbf{1}", r"\mathbf{1}^\top"]
                else:
                    factors.append(_latex(arg, "MatMul"))
            else:
                coeff *= arg
        text = " ".join(factors)
        if coeff == -1:
            return "-" + text
        if coeff != 1:
            return f"{sp.latex(coeff)}\\, {text}"
        return text
    if isinstance(expr, MatAdd):
        terms = sorted(expr.args, key=lambda a: _latex(a).startswith("-"))
        text = ""
        for k, term in enumerate(terms):
            piece = _latex(term, "MatAdd")
            text += piece if k == 0 else (f" - {piece[1:]}" if piece.startswith("-") else f" + {piece}")
        return rf"\left({text}\right)" if parent in ("MatMul", "Hadamard", "T") else text
    if isinstance(expr, HadamardProduct):
        text = r" \circ ".join(_latex(a, "Hadamard") for a in expr.args)
        return rf"\left({text}\right)" if parent in ("MatMul", "T") else text
    return sp.latex(expr)


def _evaluate(expr, table: dict, sizes: dict, scale) -> sp.Matrix:
    """Evaluate a matrix expression tree on explicit matrices (MatMul, MatAdd, ⊙, ᵀ, ones)."""
    if isinstance(expr, MatrixSymbol):
        name = str(expr.name)
        if name not in table:
            raise SpecError(f"values must give the matrix {name} (got {sorted(table)})")
        return sp.Matrix(table[name])
    if isinstance(expr, OneMatrix):
        rows, cols = (int(sp.sympify(s).xreplace(sizes)) for s in expr.shape)
        return sp.ones(rows, cols)
    if isinstance(expr, Transpose):
        return _evaluate(expr.arg, table, sizes, scale).T
    if isinstance(expr, MatMul):
        result = None
        coeff = sp.Integer(1)
        for arg in expr.args:
            if isinstance(arg, MatrixExpr):
                value = _evaluate(arg, table, sizes, scale)
                result = value if result is None else result * value
            else:
                coeff *= arg.xreplace(sizes)
        return result * coeff
    if isinstance(expr, MatAdd):
        parts = [_evaluate(a, table, sizes, scale) for a in expr.args]
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        return total
    if isinstance(expr, HadamardProduct):
        parts = [_evaluate(a, table, sizes, scale) for a in expr.args]
        total = parts[0]
        for p in parts[1:]:
            total = total.multiply_elementwise(p)
        return total
    raise SpecError(f"cannot evaluate {type(expr).__name__} {expr}")  # pragma: no cover


def matrix_gradients(spec: AttentionSpec | None = None, *, output_projection: bool | None = None,
                     bias: bool | None = None, positions: bool | None = None) -> MatrixGradients:
    r"""The closed-form gradients of attention for symbolic sizes ``n``, ``d``, ``d_k``, ``d_v``.

    Parameters
    ----------
    spec : AttentionSpec, optional
        Takes the scale, output projection, biases and positions from it (its sizes are not
        used: they stay symbolic). Without it: one head, scale ``1/sqrt(d_k)``, nothing else.
    output_projection, bias, positions : bool, optional
        Override what the spec says.

    Returns
    -------
    MatrixGradients

    Examples
    --------
    >>> mg = matrix_gradients()
    >>> mg.gradients["dS"]
    HadamardProduct(A, -(HadamardProduct(A, dA))*1 + dA)
    >>> mg.gradients["dQ"], mg.gradients["W_Q"]
    (1/sqrt(d_k)*dS*X*W_K, X.T*dQ)
    >>> mg.gradients["X"].shape
    (n, d)
    """
    if spec is not None and not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec or None (got {spec!r} of type {type(spec).__name__})")
    for name, value in (("output_projection", output_projection), ("bias", bias), ("positions", positions)):
        if value is not None and not isinstance(value, bool):
            raise SpecError(f"{name} must be True, False or None (got {value!r})")
    use_wo = output_projection if output_projection is not None else bool(spec and spec.output_projection)
    use_b = bias if bias is not None else bool(spec and spec.bias)
    use_pe = positions if positions is not None else bool(spec and spec.adds_position_vectors)
    n, d, dk, dv = sp.symbols("n d d_k d_v", integer=True, positive=True)
    if spec is None or spec.scale == "sqrt":
        c = 1 / sp.sqrt(dk)
    elif spec.scale == "none":
        c = sp.Integer(1)
    else:
        c = spec.scale_expr
    ones = OneMatrix(n, 1)
    X = MatrixSymbol("X", n, d)
    inputs = {"X": X}
    X_in = X
    if use_pe:
        PE = MatrixSymbol("PE", n, d)
        inputs["PE"] = PE
        X_in = X + PE
    W_Q, W_K, W_V = MatrixSymbol("W_Q", d, dk), MatrixSymbol("W_K", d, dk), MatrixSymbol("W_V", d, dv)
    inputs.update(W_Q=W_Q, W_K=W_K, W_V=W_V)
    Q, K, V = X_in * W_Q, X_in * W_K, X_in * W_V
    if use_b:
        b_Q, b_K, b_V = MatrixSymbol("b_Q", 1, dk), MatrixSymbol("b_K", 1, dk), MatrixSymbol("b_V", 1, dv)
        inputs.update(b_Q=b_Q, b_K=b_K, b_V=b_V)
        Q, K, V = Q + ones * b_Q, K + ones * b_K, V + ones * b_V
    S = c * Q * K.T
    A = MatrixSymbol("A", n, n)  # = softmax_row(S)
    Z = A * V
    d_out = d if use_wo else dv
    G = MatrixSymbol("G", n, d_out)
    forward = {"X_in": X_in, "Q": Q, "K": K, "V": V, "S": S, "A": A, "Z": Z}
    grads: dict = {}
    if use_wo:
        W_O = MatrixSymbol("W_O", dv, d)
        inputs["W_O"] = W_O
        Y = Z * W_O
        if use_b:
            b_O = MatrixSymbol("b_O", 1, d)
            inputs["b_O"] = b_O
            Y = Y + ones * b_O
        dZ = G * W_O.T
    else:
        Y = Z
        dZ = G
    forward["Y"] = Y
    inputs["G"] = G
    names = {"dZ": (n, dv), "dA": (n, n), "dS": (n, n), "dQ": (n, dk), "dK": (n, dk), "dV": (n, dv)}
    sym = {k: MatrixSymbol(k, *shape) for k, shape in names.items()}
    if use_wo:
        grads["dZ"] = dZ
        dZ = sym["dZ"]
    grads["dV"] = A.T * dZ
    grads["dA"] = dZ * V.T
    dA = sym["dA"]
    grads["dS"] = HadamardProduct(A, dA - HadamardProduct(dA, A) * ones * ones.T)
    grads["dQ"] = c * sym["dS"] * K
    grads["dK"] = c * sym["dS"].T * Q
    dQ, dK, dV = sym["dQ"], sym["dK"], sym["dV"]
    grads["W_Q"] = X_in.T * dQ
    grads["W_K"] = X_in.T * dK
    grads["W_V"] = X_in.T * dV
    grads["X"] = dQ * W_Q.T + dK * W_K.T + dV * W_V.T
    if use_b:
        grads.update(b_Q=ones.T * dQ, b_K=ones.T * dK, b_V=ones.T * dV)
    if use_wo:
        grads["W_O"] = Z.T * G
        if use_b:
            grads["b_O"] = ones.T * G
    intermediates = {sym[k]: grads[k] for k in sym if k in grads}
    return MatrixGradients(sizes={"n": n, "d_model": d, "d_k": dk, "d_v": dv}, scale=c, inputs=inputs,
                           forward=forward, gradients=grads, intermediates=intermediates)
