r"""Exact gradients of self-attention, derived two independent ways that check each other.

The scalar loss is :math:`L = \langle G, Y\rangle = \sum_{ij} G_{ij} Y_{ij}` with a symbolic
upstream gradient ``G`` (entries ``g_{i,j}``), so each gradient is the full vector-Jacobian
product of the layer; a user-supplied scalar loss :math:`\ell(Y)` is accepted too (then
:math:`G = \partial \ell / \partial Y`).

``method="closed_form"`` (default) applies the matrix rules of backpropagation entry by entry,
per head :math:`h` (shapes: ``n`` tokens, ``c`` the score scale)::

    dZ  = G W_Oᵀ            dW_O = Zᵀ G           db_O = 1ᵀ G
    dV_h = A_hᵀ dZ_h        dA_h = dZ_h V_hᵀ
    dS_h = A_h ⊙ (dA_h − rowsum(dA_h ⊙ A_h) 1ᵀ)          (the softmax Jacobian diag(a) − a aᵀ, row by row)
    dQ_h = c dS_h K_h       dK_h = c dS_hᵀ Q_h
    dW_Q = X_inᵀ dQ         db_Q = 1ᵀ dQ          (likewise K, V)
    dX   = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ

Every intermediate entry is written once as an assignment of a straight-line program
(:class:`~attnsym.symbolic._tape.Tape`), so the derivation costs a few SymPy constructor
calls per entry and ``lambdify`` gets the common subexpressions for free. No ``expand``, no
``simplify``.

``method="elementwise"`` is the independent route: SymPy's ``.diff`` of the loss built from
the forward pass of :func:`attnsym.symbolic.attention`, one input entry at a time. It walks
the whole written-out expression once per input entry, is far slower, and is guarded to
small sizes (see :func:`gradient_cost`).

:func:`check_gradients` proves the two equal (see there for how, exactly).
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy as sp

from .._exact import exact_entries
from ..errors import SpecError
from ..spec import AttentionSpec
from ._tape import Tape
from .cost import DEFAULT_MAX_TERMS, enforce_limit, estimate_cost
from .jacobians import (
    InputJacobian,
    SoftmaxJacobian,
    attention_input_jacobian,
    derive_softmax_jacobian,
    mlp_input_jacobian,
    softmax_jacobian,
)
from .matrix_calculus import MatrixGradients, matrix_gradients
from .naming import input_symbols

__all__ = [  # the jacobians and matrix-level names are re-exported: the backprop API in one place
    "DEFAULT_MAX_GRADIENT_TERMS",
    "GradientCheck",
    "GradientResult",
    "InputJacobian",
    "MatrixGradients",
    "SoftmaxJacobian",
    "attention_input_jacobian",
    "check_gradients",
    "derive_softmax_jacobian",
    "gradient_cost",
    "gradient_steps",
    "gradients",
    "matrix_gradients",
    "mlp_input_jacobian",
    "softmax_jacobian",
]

Matrix = sp.ImmutableMatrix

#: default ceiling on the estimated terms of the closed-form program (about (12, 12) single-head)
DEFAULT_MAX_GRADIENT_TERMS = 60_000

_METHODS = ("closed_form", "elementwise", "matrix")
_ALTERNATIVE = "attnsym.numeric.attention_vjp"


# ---------------------------------------------------------------------------------------------- inputs
def _check_spec(spec: Any, method: str = "closed_form") -> AttentionSpec:
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if spec.positions in ("rope", "alibi") and method != "elementwise":
        raise SpecError(f"{method} gradients do not support positions={spec.positions!r} yet; "
                        "use method='elementwise'")
    return spec


def _input_matrices(spec: AttentionSpec) -> dict[str, sp.ImmutableMatrix]:
    """``X`` then the parameters, as symbol matrices (the names of :mod:`attnsym.symbolic.naming`)."""
    shapes = spec.shapes
    return {name: input_symbols(name, shapes[name]) for name in ("X", *spec.parameter_names)}


def _resolve_wrt(spec: AttentionSpec, wrt: Any) -> tuple[str, ...]:
    names = ("X", *spec.parameter_names)
    if wrt is None:
        return names
    chosen = (wrt,) if isinstance(wrt, str) else wrt
    try:
        chosen = tuple(chosen)
    except TypeError:
        raise SpecError(f"wrt must be an input name or a sequence of them, from {list(names)} (got {wrt!r})") from None
    if not chosen:
        raise SpecError(f"wrt must name at least one input from {list(names)} (got an empty sequence)")
    for name in chosen:
        if name not in names:
            raise SpecError(f"wrt has {name!r}, which is not an input of this layer; choose from {list(names)}")
    return tuple(dict.fromkeys(chosen))


@dataclass(frozen=True)
class _Loss:
    expr: sp.Expr  # scalar, in the output placeholders y_{i,j} (and g_{i,j} or extra symbols)
    y: sp.ImmutableMatrix  # output placeholders
    G: sp.ImmutableMatrix  # dL/dY in the placeholders
    upstream: sp.ImmutableMatrix | None  # the g_{i,j} matrix of the default loss
    extra: tuple[sp.Symbol, ...]  # other free symbols of a user loss (targets, …)


def _resolve_loss(spec: AttentionSpec, loss: Any, inputs: Mapping[str, sp.ImmutableMatrix]) -> _Loss:
    shape = (spec.n, spec.d_out)
    y = input_symbols("Y", shape)
    if loss is None:
        G = input_symbols("G", shape)
        expr = sp.Add(*[g * v for g, v in zip(G, y, strict=True)])
        return _Loss(expr=expr, y=y, G=G, upstream=G, extra=())
    if isinstance(loss, str):
        raise SpecError(
            "loss must be None (L = <G, Y>), a SymPy expression in the output symbols y_{i,j}, or a callable "
            f"taking the output Matrix and returning one; strings are never parsed (got {loss!r})"
        )
    if callable(loss) and not isinstance(loss, sp.Basic):
        expr = loss(y)
    else:
        expr = loss
    if isinstance(expr, sp.MatrixBase) and expr.shape == (1, 1):
        expr = expr[0, 0]
    if isinstance(expr, numbers.Number) and not isinstance(expr, bool):
        expr = sp.sympify(expr)
    if not isinstance(expr, sp.Expr) or isinstance(expr, sp.MatrixExpr):
        raise SpecError(f"loss must give a scalar SymPy expression of the outputs y_{{i,j}} (got {expr!r})")
    taken = {s for m in inputs.values() for s in m.free_symbols}
    clash = sorted(map(str, expr.free_symbols & taken))
    if clash:
        raise SpecError(
            f"loss must be a function of the outputs y_{{i,j}} only; it contains input symbols {clash[:5]} "
            "(add such terms, e.g. weight decay, to the gradients yourself)"
        )
    extra = tuple(sorted(expr.free_symbols - set(y), key=str))
    G = Matrix(shape[0], shape[1], lambda i, j: expr.diff(y[i, j]))
    return _Loss(expr=expr, y=y, G=G, upstream=None, extra=extra)


# ---------------------------------------------------------------------------------------------- cost
def gradient_cost(spec: AttentionSpec, method: str = "closed_form") -> int:
    r"""Estimated size, in expression terms, of a gradient derivation (checked by the size guard).

    ``"closed_form"``: the leaves of the straight-line program (forward and backward), about
    :math:`18\, n\, d_{model}\, h d_k + h n^2 (6 d_k + 8 d_v + 12)` plus the output projection's
    share (with ``d_v = d_k``) — a polynomial of low degree, unlike the trees of the elementwise route.
    ``"elementwise"``: the terms of the unexpanded forward pass
    (:func:`~attnsym.symbolic.estimate_cost`) times the number of input entries
    differentiated, since ``.diff`` walks the whole tree once per entry. ``"matrix"``: four
    times the terms of the forward pass (the identities multiply written-out matrices).

    Examples
    --------
    >>> gradient_cost(AttentionSpec(n=2, d_model=2)) < gradient_cost(AttentionSpec(n=8, d_model=8))
    True
    >>> gradient_cost(AttentionSpec(n=3, d_model=3), "elementwise") > gradient_cost(AttentionSpec(n=3, d_model=3))
    True
    """
    spec = _check_spec(spec, method)
    if method not in _METHODS:
        raise SpecError(f"method must be one of {list(_METHODS)} (got {method!r})")
    n, m, h, dk, dv = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    if method == "elementwise":
        entries = sum(r * c for r, c in (spec.shapes[k] for k in ("X", *spec.parameter_names)))
        return estimate_cost(spec).total * entries
    if method == "matrix":  # the written-out forward pass, then a few matrix products over it
        return 4 * estimate_cost(spec).total
    qkv = n * (2 * h * dk + h * dv) * (2 * m + 1)
    scores = h * n * n * (2 * dk + 6)
    mixing = h * n * dv * 2 * n
    out = n * spec.d_out * 2 * h * dv if spec.output_projection else 0
    backward = 2 * (qkv + out) + h * n * n * (4 * dv + 6) + 2 * h * n * n * (2 * dk) + h * n * dv * 2 * n
    return qkv + scores + mixing + out + backward


def _guard(spec: AttentionSpec, method: str, max_terms: float | None) -> None:
    terms = gradient_cost(spec, method)
    limit = max_terms
    if limit is None:
        limit = DEFAULT_MAX_GRADIENT_TERMS if method == "closed_form" else DEFAULT_MAX_TERMS
    enforce_limit(terms, limit, what=f"{method} gradients for {spec.describe()}", alternative=_ALTERNATIVE)


# ---------------------------------------------------------------------------------------------- closed form
def _closed_form_program(spec: AttentionSpec, inputs: Mapping[str, sp.ImmutableMatrix], loss: _Loss,
                         wrt: Sequence[str]) -> tuple[Tape, dict[str, sp.ImmutableMatrix], dict[str, Any]]:
    """Forward and backward passes as one straight-line program; returns tape, gradients, forward."""
    tape = Tape()
    n, m, h, dk, dv = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    allowed = spec.allowed
    ok = (lambda i, j: True) if allowed is None else (lambda i, j: allowed[i][j])
    X = inputs["X"]
    W_Q, W_K, W_V = inputs["W_Q"], inputs["W_K"], inputs["W_V"]
    W_O = inputs.get("W_O")
    b = {k: inputs.get(f"b_{k}") for k in "QKVO"}
    add = sp.Add

    # ---- forward
    if spec.positions == "sinusoidal":
        from .positions import sinusoidal_positions

        PE = sinusoidal_positions(n, m, spec.position_base)
        X_in = tape.emit_matrix(n, m, lambda i, j: X[i, j] + PE[i, j])
    else:
        X_in = X

    def project(W, bias):
        cols = W.shape[1]
        return tape.emit_matrix(n, cols, lambda i, j: add(*[X_in[i, k] * W[k, j] for k in range(m)],
                                                          *([bias[0, j]] if bias is not None else [])))

    Q, K, V = project(W_Q, b["Q"]), project(W_K, b["K"]), project(W_V, b["V"])
    c = tape.emit(spec.scale_expr)
    zero = sp.Integer(0)
    heads = []
    for hh in range(h):
        qk = range(hh * dk, (hh + 1) * dk)
        vc = range(hh * dv, (hh + 1) * dv)
        S = [[tape.emit(c * add(*[Q[i, k] * K[j, k] for k in qk])) if ok(i, j) else None for j in range(n)]
             for i in range(n)]
        E = [[tape.emit(sp.exp(S[i][j])) if ok(i, j) else None for j in range(n)] for i in range(n)]
        A = []
        for i in range(n):
            keys = [j for j in range(n) if ok(i, j)]
            r = tape.emit(add(*[E[i][j] for j in keys])) if keys else None
            if len(keys) > 1:
                tape.softmax_rows.append(([S[i][j] for j in keys], [E[i][j] for j in keys]))
            A.append([tape.emit(E[i][j] / r) if ok(i, j) else zero for j in range(n)])
        Z = [[tape.emit(add(*[A[i][j] * V[j, cc] for j in range(n) if ok(i, j)])) for cc in vc] for i in range(n)]
        heads.append({"qk": qk, "vc": vc, "S": S, "A": A, "Z": Z})
    Z = Matrix(n, h * dv, lambda i, j: heads[j // dv]["Z"][i][j % dv])
    if W_O is not None:
        Y = tape.emit_matrix(n, m, lambda i, j: add(*[Z[i, k] * W_O[k, j] for k in range(h * dv)],
                                                    *([b["O"][0, j]] if b["O"] is not None else [])))
    else:
        Y = Z

    # ---- upstream gradient dL/dY on the tape
    if loss.upstream is not None:
        G = loss.upstream
    else:
        to_tape = dict(zip(loss.y, Y, strict=True))
        G = tape.emit_matrix(n, spec.d_out, lambda i, j: loss.G[i, j].xreplace(to_tape))

    # ---- backward
    want = set(wrt)
    grads: dict[str, sp.ImmutableMatrix] = {}
    if "W_O" in want:
        grads["W_O"] = tape.emit_matrix(h * dv, m, lambda k, j: add(*[Z[i, k] * G[i, j] for i in range(n)]))
    if "b_O" in want:
        grads["b_O"] = tape.emit_matrix(1, m, lambda _, j: add(*[G[i, j] for i in range(n)]))
    need_v = bool(want & {"X", "W_V", "b_V"})
    need_qk = bool(want & {"X", "W_Q", "W_K", "b_Q", "b_K"})
    if need_v or need_qk:
        if W_O is not None:
            dZ = tape.emit_matrix(n, h * dv, lambda i, k: add(*[G[i, j] * W_O[k, j] for j in range(m)]))
        else:
            dZ = G
        dQ = [[zero] * (h * dk) for _ in range(n)]
        dK = [[zero] * (h * dk) for _ in range(n)]
        dV = [[zero] * (h * dv) for _ in range(n)]
        for hd in heads:
            qk, vc, A = hd["qk"], hd["vc"], hd["A"]
            if need_v:
                for j in range(n):
                    for cc in vc:
                        dV[j][cc] = tape.emit(add(*[A[i][j] * dZ[i, cc] for i in range(n) if ok(i, j)]))
            if need_qk:
                dA = [[tape.emit(add(*[dZ[i, cc] * V[j, cc] for cc in vc])) if ok(i, j) else zero for j in range(n)]
                      for i in range(n)]
                rho = [tape.emit(add(*[dA[i][j] * A[i][j] for j in range(n) if ok(i, j)])) for i in range(n)]
                dS = [[tape.emit(A[i][j] * (dA[i][j] - rho[i])) if ok(i, j) else zero for j in range(n)]
                      for i in range(n)]
                for i in range(n):
                    for k in qk:
                        dQ[i][k] = tape.emit(c * add(*[dS[i][j] * K[j, k] for j in range(n) if ok(i, j)]))
                for j in range(n):
                    for k in qk:
                        dK[j][k] = tape.emit(c * add(*[dS[i][j] * Q[i, k] for i in range(n) if ok(i, j)]))
        dQm, dKm, dVm = Matrix(dQ), Matrix(dK), Matrix(dV)
        for name, dP, W in (("Q", dQm, W_Q), ("K", dKm, W_K), ("V", dVm, W_V)):
            if f"W_{name}" in want:
                grads[f"W_{name}"] = tape.emit_matrix(
                    m, W.shape[1], lambda k, j, dP=dP: add(*[X_in[i, k] * dP[i, j] for i in range(n)]))
            if f"b_{name}" in want:
                grads[f"b_{name}"] = tape.emit_matrix(1, W.shape[1], lambda _, j, dP=dP: add(*[dP[i, j] for i in range(n)]))
        if "X" in want:
            grads["X"] = tape.emit_matrix(n, m, lambda i, k: add(
                *[dQm[i, j] * W_Q[k, j] for j in range(h * dk)] if need_qk else [],
                *[dKm[i, j] * W_K[k, j] for j in range(h * dk)] if need_qk else [],
                *[dVm[i, j] * W_V[k, j] for j in range(h * dv)]))
    forward = {"X_in": X_in, "Q": Q, "K": K, "V": V, "Z": Z, "Y": Y, "G": G,
               "A_heads": tuple(Matrix(hd["A"]) for hd in heads)}
    return tape, {name: grads[name] for name in wrt}, forward


# ---------------------------------------------------------------------------------------------- result
@dataclass(eq=False, repr=False)
class GradientResult(Mapping):
    """Gradients of a scalar loss with respect to the inputs of one attention layer.

    A read-only mapping ``name -> sympy.ImmutableMatrix`` (each of the input's shape), built by
    :func:`gradients`. With the closed form the explicit entries are assembled on first access
    from a straight-line program (:attr:`program`), which :meth:`lambdify` compiles directly.

    Attributes
    ----------
    spec : AttentionSpec
    method : str
        ``"closed_form"`` or ``"elementwise"``.
    wrt : tuple of str
        The input names, in order.
    inputs : dict
        Input name -> symbol matrix (``x_{i,j}``, ``W^{Q}_{i,j}``, …).
    loss : sympy.Expr
        The scalar loss in the output symbols ``y_{i,j}`` (``sum g_{i,j} y_{i,j}`` by default).
    G : sympy.ImmutableMatrix
        :math:`\\partial L/\\partial Y` in the output symbols (the ``g_{i,j}`` by default).
    Y : sympy.ImmutableMatrix
        The output placeholders ``y_{i,j}`` that ``loss`` and ``G`` are written in.
    """

    spec: AttentionSpec
    method: str
    wrt: tuple[str, ...]
    inputs: dict[str, sp.ImmutableMatrix]
    loss: sp.Expr
    G: sp.ImmutableMatrix
    Y: sp.ImmutableMatrix
    _loss: _Loss
    _tape: Tape | None = None
    _program_outputs: dict[str, sp.ImmutableMatrix] | None = None
    _explicit: dict[str, sp.ImmutableMatrix] = field(default_factory=dict)

    # -------------------------------------------------------------- Mapping
    def __getitem__(self, name: str) -> sp.ImmutableMatrix:
        if name not in self.wrt:
            raise KeyError(f"no gradient for {name!r}; this result has {list(self.wrt)}")
        if name not in self._explicit:
            program = self._program_outputs[name]
            self._explicit[name] = Matrix(*program.shape, self._tape.explicit(list(program)))
        return self._explicit[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.wrt)

    def __len__(self) -> int:
        return len(self.wrt)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {self.inputs[k].shape}" for k in self.wrt)
        return f"GradientResult({self.method}, {self.spec.describe()}; {shapes})"

    # -------------------------------------------------------------- program
    @property
    def program(self) -> list[tuple[sp.Symbol, sp.Expr]]:
        """The straight-line program ``[(t, expr), …]`` behind the closed form (empty for elementwise).

        Each ``expr`` uses input symbols and earlier ``t`` symbols; :attr:`program_outputs`
        gives the gradients in these symbols.
        """
        if self._tape is None:
            return []
        outs = [e for name in self.wrt for e in self._program_outputs[name]]
        return self._tape.needed(outs)

    @property
    def program_outputs(self) -> dict[str, sp.ImmutableMatrix]:
        """The gradients written in the program's symbols (the explicit ones for elementwise)."""
        if self._program_outputs is None:
            return {name: self[name] for name in self.wrt}
        return dict(self._program_outputs)

    @property
    def arguments(self) -> dict[str, sp.ImmutableMatrix]:
        """Keyword arguments of :meth:`lambdify`'s function: the inputs, ``G`` by default, extra loss symbols."""
        args = dict(self.inputs)
        if self._loss.upstream is not None:
            args["G"] = self._loss.upstream
        for s in self._loss.extra:
            args[str(s)] = Matrix([[s]])
        return args

    def evaluate(self, values: Mapping[str, Any]) -> dict[str, sp.ImmutableMatrix]:
        """Exact gradients at concrete values (ints, Fractions, SymPy numbers; floats become Float).

        Parameters
        ----------
        values : mapping
            One entry per name of :attr:`arguments` (array-likes of the right shape; a scalar
            for an extra loss symbol).

        Examples
        --------
        >>> spec = AttentionSpec(n=2, d_model=1, scale="none")
        >>> g = gradients(spec, wrt="W_V")
        >>> g.evaluate({"X": [[0], [1]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[2]], "G": [[1], [1]]})["W_V"]
        Matrix([[1/2 + E/(1 + E)]])
        """
        env = _exact_values(self.arguments, values)
        if self._tape is not None:
            outs = [e for name in self.wrt for e in self._program_outputs[name]]
            flat = self._tape.evaluate(outs, env)
        else:
            flat = [_memo_replace(e, env, {}) for name in self.wrt for e in self[name]]
        result, start = {}, 0
        for name in self.wrt:
            rows, cols = self.inputs[name].shape
            result[name] = Matrix(rows, cols, flat[start:start + rows * cols])
            start += rows * cols
        return result

    def lambdify(self, modules: str = "numpy") -> Callable[..., dict[str, Any]]:
        """Compile the gradients to a numeric function (common subexpressions shared).

        Parameters
        ----------
        modules : {"numpy", "cupy"}, default "numpy"
            ``"numpy"``: a single set of inputs is evaluated with Python floats (``math``),
            batches of inputs with NumPy arrays. ``"cupy"``: CuPy arrays (CuPy must be installed).
            The compiled program computes each softmax row as ``exp(s - max(s)) / sum``: the same
            weights as the derivation's ``exp(s) / sum``, without overflow for large scores.

        Returns
        -------
        callable
            ``f(**arrays) -> dict name -> array``: one keyword per name of :attr:`arguments`
            (``X``, ``W_Q``, …, ``G``), each of the input's shape, optionally with leading batch
            axes ``(..., rows, cols)``; the gradients come back with the same batch axes.

        Raises
        ------
        SpecError
            ``modules`` is not supported, or a free symbol (a symbolic scale) is not an argument.
        BackendError
            ``modules="cupy"`` without CuPy installed.

        Examples
        --------
        >>> spec = AttentionSpec(n=2, d_model=2)
        >>> f = gradients(spec, wrt=("W_V",)).lambdify()
        >>> out = f(X=np.eye(2), W_Q=np.zeros((2, 2)), W_K=np.zeros((2, 2)), W_V=np.eye(2), G=np.ones((2, 2)))
        >>> out["W_V"]                       # A = 1/2 everywhere: dW_V = Xᵀ Aᵀ G
        array([[1., 1.],
               [1., 1.]])
        """
        from ._compile import compile_gradients

        return compile_gradients(self, modules)


def _exact_values(arguments: Mapping[str, sp.ImmutableMatrix], values: Mapping[str, Any]) -> dict[sp.Symbol, sp.Expr]:
    if not isinstance(values, Mapping):
        raise SpecError(f"values must be a mapping from input name to values (got {type(values).__name__})")
    missing = [k for k in arguments if k not in values]
    unknown = [k for k in values if k not in arguments]
    if missing or unknown:
        raise SpecError(f"values must give exactly {list(arguments)} (missing {missing}, unexpected {unknown})")
    env: dict[sp.Symbol, sp.Expr] = {}
    for name, symbols in arguments.items():
        entries = exact_entries(name, values[name], symbols.shape)
        env.update(zip(symbols, entries, strict=True))
    return env


def _memo_replace(expr: sp.Basic, mapping: Mapping[sp.Basic, sp.Basic], memo: dict,
                  rebuild: Callable[[sp.Basic, tuple], sp.Basic] | None = None) -> sp.Basic:
    """``expr.xreplace(mapping)`` that visits each shared subtree once (a DAG walk, not a tree walk).

    ``rebuild(node, new_args)`` builds a node from its rewritten arguments; by default the
    node's own constructor (and the node itself when nothing changed).
    """
    stack = [expr]
    while stack:
        node = stack[-1]
        if node in memo:
            stack.pop()
            continue
        if node in mapping:
            memo[node] = mapping[node]
            stack.pop()
            continue
        pending = [a for a in node.args if a not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        new_args = tuple(memo[a] for a in node.args)
        if rebuild is not None:
            memo[node] = rebuild(node, new_args)
        else:
            memo[node] = node.func(*new_args) if new_args != node.args else node
    return memo[expr]


# ---------------------------------------------------------------------------------------------- entry point
def gradients(spec: AttentionSpec, wrt: str | Sequence[str] | None = None, *, loss: Any = None,
              method: str = "closed_form", max_terms: float | None = None) -> GradientResult:
    r"""Exact gradients of a scalar loss of the attention output with respect to its inputs.

    Parameters
    ----------
    spec : AttentionSpec
        The layer (heads, mask, scale, biases, positions).
    wrt : str or sequence of str, optional
        Inputs to differentiate with respect to: ``"X"``, ``"W_Q"``, ``"W_K"``, ``"W_V"``,
        and ``"W_O"``, ``"b_Q"``, … when the layer has them. Default: all of them. With
        positions, ``X`` is the token input (``X_in = X + PE`` and ``PE`` is constant).
    loss : None, sympy.Expr or callable, optional
        ``None``: :math:`L = \langle G, Y\rangle = \sum_{ij} g_{ij} Y_{ij}`, a symbolic upstream
        gradient, so the result is the vector-Jacobian product. Otherwise a scalar SymPy
        expression in the output symbols ``y_{i,j}`` (``attnsym.symbolic.input_symbols("Y", shape)``),
        or a callable taking that output Matrix and returning one, e.g.
        ``lambda Y: sum(Y) ** 2 / 2``. Other free symbols (targets) become arguments.
    method : {"closed_form", "elementwise", "matrix"}, default "closed_form"
        ``"closed_form"``: backpropagation's matrix rules applied entry by entry with shared
        subexpressions (fast). ``"elementwise"``: SymPy ``.diff`` of the loss of the forward
        pass, entry by entry (independent, slow, small sizes only). ``"matrix"``: the
        ``MatrixSymbol`` identities of :func:`~attnsym.symbolic.matrix_gradients` evaluated on
        the written-out forward pass of :func:`attnsym.symbolic.attention`, head by head.
    max_terms : float, optional
        Size guard (see :func:`gradient_cost`); default :data:`DEFAULT_MAX_GRADIENT_TERMS` for the
        closed form and :data:`~attnsym.symbolic.DEFAULT_MAX_TERMS` for elementwise;
        ``float("inf")`` disables it.

    Returns
    -------
    GradientResult
        Mapping name -> Matrix of the input's shape, with ``.lambdify()``, ``.loss``, ``.G``.

    Raises
    ------
    SpecError
        Unknown ``wrt`` name or ``method``, or an invalid ``loss``.
    SizeLimitError
        The estimated size exceeds ``max_terms`` (raised before anything is built; use
        :func:`attnsym.numeric.attention_vjp` for numbers at that size).

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=1, scale="none")
    >>> g = gradients(spec, wrt=("W_V",))
    >>> g["W_V"].shape, g.loss
    ((1, 1), g_{1,1}*y_{1,1} + g_{2,1}*y_{2,1})
    >>> e = gradients(spec, wrt="W_V", method="elementwise")
    >>> sp.simplify(g["W_V"][0] - e["W_V"][0])
    0
    >>> gradients(AttentionSpec(n=64, d_model=64))
    Traceback (most recent call last):
    ...
    attnsym.errors.SizeLimitError: closed_form gradients for n=64, ... use attnsym.numeric.attention_vjp for numbers at this size.
    """
    spec = _check_spec(spec, method)
    if method not in _METHODS:
        raise SpecError(f"method must be one of {list(_METHODS)} (got {method!r})")
    wrt = _resolve_wrt(spec, wrt)
    _guard(spec, method, max_terms)
    inputs = _input_matrices(spec)
    the_loss = _resolve_loss(spec, loss, inputs)
    common = dict(spec=spec, method=method, wrt=wrt, inputs=inputs, loss=the_loss.expr, G=the_loss.G, Y=the_loss.y,
                  _loss=the_loss)
    if method == "closed_form":
        tape, outs, _ = _closed_form_program(spec, inputs, the_loss, wrt)
        return GradientResult(**common, _tape=tape, _program_outputs=outs)
    if method == "matrix":
        return GradientResult(**common, _explicit=_matrix_route(spec, inputs, the_loss, wrt))
    return GradientResult(**common, _explicit=_elementwise(spec, inputs, the_loss, wrt))


def _matrix_route(spec: AttentionSpec, inputs, loss: _Loss, wrt) -> dict[str, sp.ImmutableMatrix]:
    """Evaluate the MatrixSymbol identities of :func:`matrix_gradients` on the written-out forward pass, head by head."""
    from .matrices import attention, matmul

    sym = attention(spec, max_terms=float("inf"))  # the guard above already bounded the size
    n, m, dk, dv = spec.n, spec.d_model, spec.d_k, spec.d_v
    G = loss.upstream if loss.upstream is not None else loss.G.xreplace(dict(zip(loss.y, sym.Y, strict=True)))
    grads: dict[str, sp.ImmutableMatrix] = {}
    if spec.output_projection:
        grads["W_O"] = matmul(sym.Z.T, G)
        if spec.bias:
            grads["b_O"] = Matrix(1, m, lambda _, j: sp.Add(*G[:, j]))
        dZ = matmul(G, sym.W_O.T)
    else:
        dZ = G
    identities = matrix_gradients(spec, output_projection=False)
    parts: dict[str, list] = {name: [] for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V")}
    dX = sp.zeros(n, m)
    for h in range(spec.heads):
        qk, vc = list(range(h * dk, (h + 1) * dk)), list(range(h * dv, (h + 1) * dv))
        values = {"X": sym.X, "W_Q": sym.W_Q[:, qk], "W_K": sym.W_K[:, qk], "W_V": sym.W_V[:, vc],
                  "A": sym.A_heads[h], "G": dZ[:, vc]}
        if spec.bias:
            values.update(b_Q=sym.b_Q[:, qk], b_K=sym.b_K[:, qk], b_V=sym.b_V[:, vc])
        if spec.positions:
            values["PE"] = sym.PE
        for name in parts:
            if name in wrt:
                parts[name].append(identities.explicit(name, values))
        if "X" in wrt:
            dX += identities.explicit("X", values)
    for name, blocks in parts.items():
        if blocks:
            grads[name] = Matrix(sp.Matrix.hstack(*blocks))
    grads["X"] = Matrix(dX)
    return {name: Matrix(grads[name]) for name in wrt}


def _elementwise(spec: AttentionSpec, inputs, loss: _Loss, wrt) -> dict[str, sp.ImmutableMatrix]:
    from .matrices import attention

    sym = attention(spec, max_terms=float("inf"))  # the guard above already bounded the size
    for name in wrt:  # the two builders must agree on the symbols
        if sym.inputs[name] != inputs[name]:
            raise SpecError(f"internal: the forward pass names {name} differently")
    L = loss.expr.xreplace(dict(zip(loss.y, sym.Y, strict=True)))
    return {name: Matrix(*inputs[name].shape, [L.diff(s) for s in inputs[name]]) for name in wrt}


# ---------------------------------------------------------------------------------------------- check
@dataclass(frozen=True)
class GradientCheck:
    """Outcome of :func:`check_gradients`.

    Attributes
    ----------
    spec : AttentionSpec
    equal : bool
        Whether every entry of the two routes agreed.
    how : str
        ``"identity"`` (each difference reduced to 0 as a polynomial) or ``"points"``
        (exact arithmetic at random rational points).
    entries : int
        Number of gradient entries compared.
    points : int
        Random points used (0 for ``"identity"``).
    mismatches : tuple
        ``(name, i, j)`` of entries that differ (empty when equal).
    routes : tuple of str
        The two methods compared.
    """

    spec: AttentionSpec
    equal: bool
    how: str
    entries: int
    points: int
    mismatches: tuple[tuple[str, int, int], ...] = ()
    routes: tuple[str, str] = ("closed_form", "elementwise")

    def __bool__(self) -> bool:
        return self.equal


class _Rewriter:
    """Rewrite an expression so that equality of the two routes becomes a polynomial identity.

    Walks the expression DAG once (memoised), replacing the input symbols found in ``env``
    (a random point, or nothing), and then the transcendental atoms by independent symbols:

    * ``exp(a)`` -> ``e_p ** c`` where ``a = c p`` with ``c`` rational and ``p`` primitive
      (so ``exp(2 S) = exp(S)**2``, which SymPy creates on its own, stays consistent);
    * ``sin(a)``, ``cos(a)`` (positions) -> a symbol keyed by ``a``;
    * ``(row sum)**(-k)`` -> ``u ** k`` with ``u`` keyed by the expanded row sum.

    Neither route uses a relation between these atoms (``sum_j A_ij = 1``, ``exp`` being
    an exponential), so the routes agree as functions of them exactly when they agree at all,
    and ``expand`` of the difference must give 0.
    """

    def __init__(self, env: Mapping[sp.Basic, sp.Basic] | None = None) -> None:
        self.env = dict(env or {})
        self.table: dict[tuple, sp.Symbol] = {}
        self.memo: dict = {}

    def _symbol(self, key: tuple) -> sp.Symbol:
        if key not in self.table:
            self.table[key] = sp.Symbol(f"_e{len(self.table)}")
        return self.table[key]

    def __call__(self, expr: sp.Basic) -> sp.Expr:
        return _memo_replace(expr, self.env, self.memo, self._rebuild)

    def _rebuild(self, node: sp.Basic, args: tuple) -> sp.Basic:
        if isinstance(node, sp.exp):
            content, prim = sp.expand(args[0]).as_content_primitive()
            if prim.could_extract_minus_sign():
                content, prim = -content, -prim
            return self._symbol(("exp", prim)) ** content
        if isinstance(node, (sp.sin, sp.cos)):
            return self._symbol((node.func.__name__, sp.expand(args[0])))
        if node.is_Pow and args[1].is_Integer and args[1] < 0 and args[0].is_Add:
            base = sp.expand(args[0])
            if base.free_symbols:
                return self._symbol(("inv", base)) ** (-args[1])
            return sp.radsimp(base ** args[1])
        return node.func(*args) if args != node.args else node


def check_gradients(spec: AttentionSpec, wrt: str | Sequence[str] | None = None, *, loss: Any = None,
                    how: str = "auto", points: int = 3, seed: int = 0, against: str = "elementwise",
                    max_terms: float | None = None) -> GradientCheck:
    r"""Prove that the closed-form and the elementwise gradients are equal.

    Both ways are exact (no floating point anywhere):

    * ``how="identity"``: every ``exp(·)`` (and ``sin``/``cos`` of positions) is replaced by an
      independent symbol, every inverse row sum by another (see below), and the difference of
      the two routes is expanded to the zero polynomial in all symbols.
    * ``how="points"``: the same, after substituting random rationals for every input (``x``,
      ``W``, ``g``, …) — at ``points`` independent points; the difference must expand to 0.

    Replacing ``exp(a)`` by ``e_p ** c`` (``a = c p``, ``c`` rational) and ``1/sum_j e_j`` by ``u``
    turns both routes into polynomials; neither route may use a relation between the new
    symbols (``sum_j A_ij = 1``, or anything about ``exp``), so agreeing as polynomials is a
    stronger statement than the one wanted, and it is what each check establishes.

    ``how="auto"`` uses the identity when the layer is tiny (``n * d_model <= 4``, one head),
    else points. A float ``scale`` is checked as the exact rational number the float stores.

    Parameters
    ----------
    spec : AttentionSpec
    wrt, loss, max_terms
        As for :func:`gradients`.
    how : {"auto", "identity", "points"}
    points : int, default 3
    seed : int, default 0
    against : {"elementwise", "matrix"}, default "elementwise"
        The route the closed form is compared with: SymPy's ``.diff`` (independent of every
        backpropagation rule), or the ``MatrixSymbol`` identities evaluated on explicit matrices
        (cheap; it checks the entry-by-entry program against the matrix-level formulas).

    Returns
    -------
    GradientCheck
        Truthy when the routes agree.

    Examples
    --------
    >>> check_gradients(AttentionSpec(n=2, d_model=2, causal=True)).how
    'identity'
    >>> bool(check_gradients(AttentionSpec(n=2, d_model=2, causal=True)))
    True
    """
    spec = _check_spec(spec)
    if how not in ("auto", "identity", "points"):
        raise SpecError(f"how must be 'auto', 'identity' or 'points' (got {how!r})")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise SpecError(f"points must be a positive integer (got {points!r})")
    if against not in ("elementwise", "matrix"):
        raise SpecError(f"against must be 'elementwise' or 'matrix' (got {against!r})")
    if how == "auto":
        how = "identity" if spec.n * spec.d_model <= 4 and spec.heads == 1 else "points"
    if isinstance(spec.scale, float):  # check the formulas exactly: a float scale is the rational it stores
        spec = spec.replace(scale=sp.Rational(spec.scale))
    closed = gradients(spec, wrt, loss=loss, method="closed_form", max_terms=max_terms)
    element = gradients(spec, wrt, loss=loss, method=against, max_terms=max_terms)
    entries = sum(len(closed.inputs[k]) for k in closed.wrt)
    rng = random.Random(seed)
    envs = [{}] if how == "identity" else []
    for _ in range(points if how == "points" else 0):
        values = {name: [[Fraction(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(m.shape[1])]
                         for _ in range(m.shape[0])] for name, m in closed.arguments.items()}
        envs.append(_exact_values(closed.arguments, values))
    mismatches: list[tuple[str, int, int]] = []
    for env in envs:
        rewrite = _Rewriter(env)
        for name in closed.wrt:
            a, b = closed[name], element[name]
            for idx in range(len(a)):
                where = (name, *divmod(idx, a.shape[1]))
                if where not in mismatches and sp.expand(rewrite(a[idx]) - rewrite(b[idx])) != 0:
                    mismatches.append(where)
    return GradientCheck(spec, not mismatches, how, entries, len(envs) if how == "points" else 0, tuple(mismatches),
                         ("closed_form", against))


# ---------------------------------------------------------------------------------------------- derivation
def gradient_steps(spec: AttentionSpec, max_terms: float | None = None) -> list:
    r"""The backward pass as derivation steps, rendered like the forward one.

    ``attnsym.derive(spec, what="gradients")`` wraps these in a
    :class:`~attnsym.derivation.Derivation`. Each step is an explicit matrix equation in the
    entries of the previous steps (adjoints :math:`\bar M = \partial L/\partial M`), with its
    general matrix formula and one line of explanation: loss, output projection, values,
    attention weights, the softmax Jacobian, scores, queries and keys, projection weights, input.

    Parameters
    ----------
    spec : AttentionSpec
    max_terms : float, optional
        Size guard, as for :func:`gradients`.

    Returns
    -------
    list of attnsym.derivation.Step

    Examples
    --------
    >>> steps = gradient_steps(AttentionSpec(n=2, d_model=2))
    >>> [s.title for s in steps][:4]
    ['Loss and upstream gradient', 'Values', 'Attention weights', 'Softmax Jacobian']
    >>> steps[4].equation.rhs[0, 0]
    \alpha_{1,1}*(-\alpha_{1,1}*\bar{a}_{1,1} - \alpha_{1,2}*\bar{a}_{1,2} + \bar{a}_{1,1})
    """
    from ._backward_steps import backward_steps

    spec = _check_spec(spec)
    return backward_steps(spec, max_terms)
