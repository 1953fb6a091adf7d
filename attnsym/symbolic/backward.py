r"""Exact gradients of self-attention (:func:`gradients`), by three routes that check each other.

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

with a sink logit ``s_h`` in every denominator (mass ``π_i``) ``ds_h = −Σ_i π_i rowsum(dA_h ⊙ A_h)_i`` (the
``dS`` rule is unchanged), and with an output gate ``Γ = σ(X_in W_G)`` (``Y = (Z ⊙ Γ) W_O``) the upstream
``dZ' = G W_Oᵀ`` becomes ``dZ = dZ' ⊙ Γ`` and ``dW_G = X_inᵀ (dZ' ⊙ Z ⊙ Γ ⊙ (1 − Γ))`` (its share of ``dX``
through ``W_Gᵀ``).

Every intermediate entry is written once as an assignment of a straight-line program
(:class:`~attnsym.symbolic._tape.Tape`), so the derivation costs a few SymPy constructor
calls per entry and ``lambdify`` gets the common subexpressions for free. No ``expand``, no
``simplify``.

``method="elementwise"`` is the independent route: SymPy's ``.diff`` of the loss built from
the forward pass of :func:`attnsym.symbolic.attention`, one input entry at a time. It walks
the whole written-out expression once per input entry, is far slower, and is guarded to
small sizes (see :func:`gradient_cost`).

``method="matrix"`` evaluates the ``MatrixSymbol`` identities of
:func:`~attnsym.symbolic.matrix_gradients` on the written-out forward pass, head by head.

:func:`~attnsym.symbolic.check_gradients` proves the routes equal (see there for how, exactly);
the result type is :class:`~attnsym.symbolic.GradientResult`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..spec import AttentionSpec
from ._loss import Loss, input_matrices, resolve_loss, resolve_wrt
from ._tape import Tape
from .cost import check_gradient_size, check_gradient_spec
from .gradient_result import GradientResult
from .matrices import attention, exact_number
from .matrix_calculus import matrix_gradients
from .operations import matmul
from .position_hooks import Plane, PositionHooks, position_hooks

__all__ = ["gradients"]

Matrix = sp.ImmutableMatrix


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
    spec = check_gradient_spec(spec, method)
    wrt = resolve_wrt(spec, wrt)
    check_gradient_size(spec, method, max_terms)
    inputs = input_matrices(spec)
    the_loss = resolve_loss(spec, loss, inputs)
    common = dict(spec=spec, method=method, wrt=wrt, inputs=inputs, loss=the_loss.expr, G=the_loss.G, Y=the_loss.y,
                  _loss=the_loss)
    if method == "closed_form":
        tape, outs, _ = _closed_form_program(spec, inputs, the_loss, wrt)
        return GradientResult(**common, _tape=tape, _program_outputs=outs)
    if method == "matrix":
        return GradientResult(**common, _explicit=_matrix_route(spec, inputs, the_loss, wrt))
    return GradientResult(**common, _explicit=_elementwise(spec, inputs, the_loss, wrt))


# ---------------------------------------------------------------------------------------------- closed form
@dataclass
class _Forward:
    """The forward values of the gradient program, tape symbols or inputs (shapes as in the module docstring)."""

    X_in: sp.ImmutableMatrix
    Q: sp.ImmutableMatrix  # rotated, with RoPE: what the scores read
    K: sp.ImmutableMatrix
    V: sp.ImmutableMatrix
    Q_pre: sp.ImmutableMatrix  # before the rotation (the projections)
    K_pre: sp.ImmutableMatrix
    c: sp.Expr  # the score scale
    cap: sp.Expr | None  # the soft cap t, or None
    heads: list[_Head]
    Z: sp.ImmutableMatrix
    Y: sp.ImmutableMatrix
    gate: sp.ImmutableMatrix | None = None  # σ(X_in W_G) = 1 / (1 + E) with an output gate
    gate_exp: sp.ImmutableMatrix | None = None  # E = exp(−X_in W_G)
    Z_gated: sp.ImmutableMatrix | None = None  # Z ⊙ gate, what W_O reads


@dataclass
class _Head:
    """One head of the program: its columns of ``Q`` (``qk``), ``K`` (``kc``), ``V`` (``vc``) and its ``S``, ``A``, ``Z``."""

    qk: range
    kc: range
    vc: range
    S: list[list[Any]]  # None where masked
    A: list[list[Any]]  # 0 where masked
    Z: list[list[Any]]
    pi: list[Any] | None = None  # with a sink: its mass π_i per row


def _closed_form_program(spec: AttentionSpec, inputs: Mapping[str, sp.ImmutableMatrix], loss: Loss,
                         wrt: Sequence[str]) -> tuple[Tape, dict[str, sp.ImmutableMatrix], dict[str, Any]]:
    """Forward and backward passes as one straight-line program; returns tape, gradients, forward."""
    tape = Tape()
    hooks = position_hooks(spec)
    fwd = _forward_program(tape, spec, inputs, hooks)
    if loss.upstream is not None:  # the upstream gradient dL/dY on the tape
        G = loss.upstream
    else:
        to_tape = dict(zip(loss.y, fwd.Y, strict=True))
        G = tape.emit_matrix(spec.n, spec.d_out, lambda i, j: loss.G[i, j].xreplace(to_tape))
    grads = _backward_program(tape, spec, inputs, hooks, fwd, G, set(wrt))
    forward = {"X_in": fwd.X_in, "Q": fwd.Q_pre, "K": fwd.K_pre, "V": fwd.V, "Z": fwd.Z, "Y": fwd.Y, "G": G,
               "A_heads": tuple(Matrix(hd.A) for hd in fwd.heads)}
    return tape, {name: grads[name] for name in wrt}, forward


def _allowed(spec: AttentionSpec) -> Callable[[int, int], bool]:
    """``ok(i, j)``: may query ``i`` attend to key ``j``."""
    allowed = spec.allowed
    return (lambda i, j: True) if allowed is None else (lambda i, j: allowed[i][j])


def _forward_program(tape: Tape, spec: AttentionSpec, inputs: Mapping[str, sp.ImmutableMatrix],
                     hooks: PositionHooks) -> _Forward:
    """The forward pass on the tape: ``X_in`` (hook (a)), projections, rotation (hook (b)), heads, output."""
    n, m, h, dv = spec.n, spec.d_model, spec.heads, spec.d_v
    X = inputs["X"]
    PE = hooks.position_vectors()
    X_in = X if PE is None else tape.emit_matrix(n, m, lambda i, j: X[i, j] + PE[i, j])

    def project(W, bias):
        return tape.emit_matrix(n, W.shape[1], lambda i, j: sp.Add(*[X_in[i, k] * W[k, j] for k in range(m)],
                                                                   *([bias[0, j]] if bias is not None else [])))

    Q_pre, K_pre, V = (project(inputs[f"W_{t}"], inputs.get(f"b_{t}")) for t in "QKV")
    # hook (b): each head's queries and keys rotated by their position
    Q = _rotate(tape, Q_pre, hooks.rotation_planes(spec.heads), adjoint=False)
    K = _rotate(tape, K_pre, hooks.rotation_planes(spec.kv_heads), adjoint=False)
    c = tape.emit(spec.scale_expr)
    cap = None if spec.softcap is None else exact_number(spec.softcap)
    biases = hooks.score_biases()  # hook (c)
    sinks = inputs.get("s_sink")
    heads = [_head_forward(tape, spec, hh, Q, K, V, c, cap, None if biases is None else biases[hh],
                           None if sinks is None else sinks[0, hh]) for hh in range(h)]
    Z = Matrix(n, h * dv, lambda i, j: heads[j // dv].Z[i][j % dv])
    gate = gate_exp = Z_gated = None
    W_G = inputs.get("W_G")
    if W_G is not None:  # the output gate: Z ⊙ σ(X_in W_G), σ(u) = 1 / (1 + e^{−u})
        gate_exp = tape.emit_matrix(n, h * dv, lambda i, j: sp.exp(-sp.Add(*[X_in[i, k] * W_G[k, j] for k in range(m)])))
        gate = tape.emit_matrix(n, h * dv, lambda i, j: 1 / (1 + gate_exp[i, j]))
        Z_gated = tape.emit_matrix(n, h * dv, lambda i, j: Z[i, j] * gate[i, j])
    Zo = Z if Z_gated is None else Z_gated
    W_O, b_O = inputs.get("W_O"), inputs.get("b_O")
    Y = Zo if W_O is None else tape.emit_matrix(n, m, lambda i, j: sp.Add(
        *[Zo[i, k] * W_O[k, j] for k in range(h * dv)], *([b_O[0, j]] if b_O is not None else [])))
    return _Forward(X_in=X_in, Q=Q, K=K, V=V, Q_pre=Q_pre, K_pre=K_pre, c=c, cap=cap, heads=heads, Z=Z, Y=Y,
                    gate=gate, gate_exp=gate_exp, Z_gated=Z_gated)


def _head_forward(tape: Tape, spec: AttentionSpec, hh: int, Q: sp.ImmutableMatrix, K: sp.ImmutableMatrix,
                  V: sp.ImmutableMatrix, c: sp.Expr, cap: sp.Expr | None, bias: sp.ImmutableMatrix | None,
                  sink: sp.Expr | None = None) -> _Head:
    """Scores (plus ``bias``, soft-capped), softmax weights and output of head ``hh``, each entry on the tape; with
    a ``sink`` logit, ``exp(sink)`` joins every row's denominator and its mass ``π`` is kept."""
    n, dk, dv = spec.n, spec.d_k, spec.d_v
    ok, add, zero = _allowed(spec), sp.Add, sp.Integer(0)
    kv = spec.kv_head_of(hh)  # grouped-query attention: the key/value block this head reads
    qk, kc, vc = range(hh * dk, (hh + 1) * dk), range(kv * dk, (kv + 1) * dk), range(kv * dv, (kv + 1) * dv)
    raw = [[tape.emit(c * add(*[Q[i, k] * K[j, kk] for k, kk in zip(qk, kc, strict=True)])
                      + (bias[i, j] if bias is not None else 0)) if ok(i, j) else None for j in range(n)]
           for i in range(n)]
    S = raw if cap is None else [[tape.emit(cap * sp.tanh(s / cap)) if s is not None else None for s in row]
                                 for row in raw]
    E = [[tape.emit(sp.exp(S[i][j])) if ok(i, j) else None for j in range(n)] for i in range(n)]
    A: list[list[Any]] = []
    pi: list[Any] = []
    for i in range(n):
        keys = [j for j in range(n) if ok(i, j)]
        if not keys:  # a query that may attend to nothing: an all-zero row (with a sink: all its mass on the sink)
            A.append([zero] * n)
            pi.append(sp.Integer(1))
            continue
        scores, exps = [S[i][j] for j in keys], [E[i][j] for j in keys]
        if sink is not None:  # the sink's term in the denominator, shifted with the row
            scores, exps = [*scores, tape.emit(sink)], [*exps, tape.emit(sp.exp(sink))]
        r = tape.emit(add(*exps))
        if len(exps) > 1:
            tape.softmax_rows.append((scores, exps))
        A.append([tape.emit(E[i][j] / r) if ok(i, j) else zero for j in range(n)])
        pi.append(tape.emit(exps[-1] / r) if sink is not None else zero)
    Z = [[tape.emit(add(*[A[i][j] * V[j, cc] for j in range(n) if ok(i, j)])) for cc in vc] for i in range(n)]
    return _Head(qk=qk, kc=kc, vc=vc, S=S, A=A, Z=Z, pi=pi if sink is not None else None)


def _backward_program(tape: Tape, spec: AttentionSpec, inputs: Mapping[str, sp.ImmutableMatrix],
                      hooks: PositionHooks, fwd: _Forward, G: sp.ImmutableMatrix, want: set[str]
                      ) -> dict[str, sp.ImmutableMatrix]:
    """The gradients named in ``want``, from the upstream gradient ``G``, on the tape."""
    n, m, h, dk, dv = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    add, zero = sp.Add, sp.Integer(0)
    W_O = inputs.get("W_O")
    Zo = fwd.Z if fwd.Z_gated is None else fwd.Z_gated
    grads: dict[str, sp.ImmutableMatrix] = {}
    if "W_O" in want:
        grads["W_O"] = tape.emit_matrix(h * dv, m, lambda k, j: add(*[Zo[i, k] * G[i, j] for i in range(n)]))
    if "b_O" in want:
        grads["b_O"] = tape.emit_matrix(1, m, lambda _, j: add(*[G[i, j] for i in range(n)]))
    need_v = bool(want & {"X", "W_V", "b_V"})
    need_qk = bool(want & {"X", "W_Q", "W_K", "b_Q", "b_K", "s_sink"})
    need_gate = fwd.gate is not None and bool(want & {"X", "W_G"})
    if not (need_v or need_qk or need_gate):
        return grads
    dZo = G if W_O is None else tape.emit_matrix(n, h * dv, lambda i, k: add(*[G[i, j] * W_O[k, j] for j in range(m)]))
    dZ, dU = dZo, None
    if fwd.gate is not None and fwd.gate_exp is not None:  # Z ⊙ σ(U): dZ = dZ' ⊙ σ, dU = dZ' ⊙ Z ⊙ σ'(U)
        gate, E = fwd.gate, fwd.gate_exp
        dZ = tape.emit_matrix(n, h * dv, lambda i, k: dZo[i, k] * gate[i, k])
        if need_gate:  # σ' = σ (1 − σ), written e^{−u} σ² as SymPy's own derivative (check_gradients compares them)
            dU = tape.emit_matrix(n, h * dv, lambda i, k: dZo[i, k] * fwd.Z[i, k] * E[i, k] * gate[i, k] ** 2)
    dQ = [[zero] * (h * dk) for _ in range(n)]
    dK = [[zero] * (spec.kv_heads * dk) for _ in range(n)]
    dV = [[zero] * (spec.kv_heads * dv) for _ in range(n)]
    d_sink = [zero] * h
    for hh, hd in enumerate(fwd.heads):
        d_sink[hh] = _head_backward(tape, spec, fwd, hd, range(hh * dv, (hh + 1) * dv), dZ, dQ, dK, dV,
                                    need_v=need_v, need_qk=need_qk)
    if "s_sink" in want:
        grads["s_sink"] = Matrix([d_sink])
    X_in = fwd.X_in
    if dU is not None and "W_G" in want:
        grads["W_G"] = tape.emit_matrix(m, h * dv, lambda k, j: add(*[X_in[i, k] * dU[i, j] for i in range(n)]))
    dQm, dKm, dVm = Matrix(dQ), Matrix(dK), Matrix(dV)
    if need_qk:  # hook (b) backwards: the transpose R(p θ)ᵀ, row by row
        dQm = _rotate(tape, dQm, hooks.rotation_planes(spec.heads), adjoint=True)
        dKm = _rotate(tape, dKm, hooks.rotation_planes(spec.kv_heads), adjoint=True)
    for name, dP in (("Q", dQm), ("K", dKm), ("V", dVm)):
        cols = inputs[f"W_{name}"].shape[1]
        if f"W_{name}" in want:
            grads[f"W_{name}"] = tape.emit_matrix(
                m, cols, lambda k, j, dP=dP: add(*[X_in[i, k] * dP[i, j] for i in range(n)]))
        if f"b_{name}" in want:
            grads[f"b_{name}"] = tape.emit_matrix(1, cols, lambda _, j, dP=dP: add(*[dP[i, j] for i in range(n)]))
    if "X" in want:
        W_Q, W_K, W_V, W_G = inputs["W_Q"], inputs["W_K"], inputs["W_V"], inputs.get("W_G")
        grads["X"] = tape.emit_matrix(n, m, lambda i, k: add(
            *[dQm[i, j] * W_Q[k, j] for j in range(h * dk)] if need_qk else [],
            *[dKm[i, j] * W_K[k, j] for j in range(spec.kv_heads * dk)] if need_qk else [],
            *[dVm[i, j] * W_V[k, j] for j in range(spec.kv_heads * dv)],
            *[dU[i, j] * W_G[k, j] for j in range(h * dv)] if dU is not None and W_G is not None else []))
    return grads


def _head_backward(tape: Tape, spec: AttentionSpec, fwd: _Forward, hd: _Head, zc: range, dZ: sp.ImmutableMatrix,
                   dQ: list[list[Any]], dK: list[list[Any]], dV: list[list[Any]], *, need_v: bool,
                   need_qk: bool) -> sp.Expr:
    """Add one head's share to ``dQ``, ``dK``, ``dV`` (in place); ``zc`` are its columns of ``Z`` (and ``dZ``).

    Returns the gradient of the head's sink logit, ``−Σ_i π_i ρ_i`` (``∂A_ij/∂s = −A_ij π_i``), 0 without one."""
    n, c, cap = spec.n, fwd.c, fwd.cap
    ok, add, zero = _allowed(spec), sp.Add, sp.Integer(0)
    Q, K, V, A = fwd.Q, fwd.K, fwd.V, hd.A
    if need_v:  # a key/value head sums the gradients of the query heads it serves
        for j in range(n):
            for cc, zz in zip(hd.vc, zc, strict=True):
                dV[j][cc] = tape.emit(dV[j][cc] + add(*[A[i][j] * dZ[i, zz] for i in range(n) if ok(i, j)]))
    if not need_qk:
        return zero
    dA = [[tape.emit(add(*[dZ[i, zz] * V[j, cc] for cc, zz in zip(hd.vc, zc, strict=True)])) if ok(i, j)
           else zero for j in range(n)] for i in range(n)]
    rho = [tape.emit(add(*[dA[i][j] * A[i][j] for j in range(n) if ok(i, j)])) for i in range(n)]
    d_sink = zero if hd.pi is None else tape.emit(-add(*[hd.pi[i] * rho[i] for i in range(n)]))
    dS = [[tape.emit(A[i][j] * (dA[i][j] - rho[i])) if ok(i, j) else zero for j in range(n)] for i in range(n)]
    if cap is not None:  # through t·tanh(s/t): times 1 − tanh²(s/t) = 1 − (S/t)²
        S = hd.S
        dS = [[tape.emit(dS[i][j] * (1 - (S[i][j] / cap) ** 2)) if ok(i, j) else zero for j in range(n)]
              for i in range(n)]
    for i in range(n):
        for k, kk in zip(hd.qk, hd.kc, strict=True):
            dQ[i][k] = tape.emit(c * add(*[dS[i][j] * K[j, kk] for j in range(n) if ok(i, j)]))
    for j in range(n):
        for k, kk in zip(hd.qk, hd.kc, strict=True):
            dK[j][kk] = tape.emit(dK[j][kk] + c * add(*[dS[i][j] * Q[i, k] for i in range(n) if ok(i, j)]))
    return d_sink


def _rotate(tape: Tape, M: sp.ImmutableMatrix, planes: list[Plane], *, adjoint: bool) -> sp.ImmutableMatrix:
    """Row ``p`` of ``M`` turned by ``R(p θ)`` (``adjoint``: by its transpose), each new entry on the tape.

    ``planes`` are :meth:`~attnsym.symbolic.position_hooks.PositionHooks.rotation_planes`; none: ``M`` itself.
    """
    if not planes:
        return M
    rows = [list(M.row(p)) for p in range(M.shape[0])]
    sign = -1 if adjoint else 1
    for p, row in enumerate(rows):
        for a, b, theta in planes:
            cos, sin = sp.cos(p * theta), sign * sp.sin(p * theta)
            x_a, x_b = M[p, a], M[p, b]
            row[a] = tape.emit(x_a * cos - x_b * sin)
            row[b] = tape.emit(x_b * cos + x_a * sin)
    return Matrix(rows)


# ---------------------------------------------------------------------------------------------- the other routes
def _matrix_route(spec: AttentionSpec, inputs, loss: Loss, wrt) -> dict[str, sp.ImmutableMatrix]:
    """Evaluate the MatrixSymbol identities of :func:`matrix_gradients` on the written-out forward pass, head by head."""
    sym = attention(spec, max_terms=float("inf"))  # the guard above already bounded the size
    n, m, dk, dv = spec.n, spec.d_model, spec.d_k, spec.d_v
    G = loss.upstream if loss.upstream is not None else loss.G.xreplace(dict(zip(loss.y, sym.Y, strict=True)))
    grads: dict[str, sp.ImmutableMatrix] = {}
    if sym.W_O is not None:
        grads["W_O"] = matmul(sym.Z.T, G)
        if "b_O" in spec.bias_names:
            grads["b_O"] = Matrix(1, m, lambda _, j: sp.Add(*G[:, j]))
        dZ = matmul(G, sym.W_O.T)
    else:
        dZ = G
    identities = matrix_gradients(spec, output_projection=False)
    parts: dict[str, list] = {name: [] for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V")}
    dX = sp.zeros(n, m)
    for h in range(spec.heads):
        qk, vc = list(range(h * dk, (h + 1) * dk)), list(range(h * dv, (h + 1) * dv))
        values = {"X": sym.X, "W_Q": sym.weight("W_Q")[:, qk], "W_K": sym.weight("W_K")[:, qk], "W_V": sym.weight("W_V")[:, vc],
                  "A": sym.A_heads[h], "G": dZ[:, vc]}
        if sym.b_Q is not None and sym.b_K is not None and sym.b_V is not None:  # spec.bias: all three
            values.update(b_Q=sym.b_Q[:, qk], b_K=sym.b_K[:, qk], b_V=sym.b_V[:, vc])
        if spec.adds_position_vectors:
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


def _elementwise(spec: AttentionSpec, inputs, loss: Loss, wrt) -> dict[str, sp.ImmutableMatrix]:
    sym = attention(spec, max_terms=float("inf"))  # the guard above already bounded the size
    for name in wrt:  # the two builders must agree on the symbols
        if sym.inputs[name] != inputs[name]:
            raise AssertionError(f"internal: the forward pass names {name} differently")
    L = loss.expr.xreplace(dict(zip(loss.y, sym.Y, strict=True)))
    return {name: Matrix(*inputs[name].shape, [L.diff(s) for s in inputs[name]]) for name in wrt}
