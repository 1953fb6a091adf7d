r"""The backward pass of attention as derivation steps (rendered like the forward pass).

Each step is an explicit matrix equation whose right-hand side is written in the entries of
the previous steps: forward entries ``q_{i,j}``, ``k_{i,j}``, ``v_{i,j}``, ``\alpha_{i,j}``,
``z_{i,j}`` (the names of :func:`attnsym.derive`) and adjoints
:math:`\bar M = \partial L / \partial M` (``\bar{z}_{i,j}``, ``\bar{a}_{i,j}``, …), so each
step can be checked on its own.
"""

from __future__ import annotations

import sympy as sp

from ..errors import SpecError
from ..spec import AttentionSpec
from ._loss import input_matrices
from .cost import check_gradient_size, check_gradient_spec
from .jacobians import softmax_jacobian
from .position_hooks import position_hooks
from .steps import Step

__all__ = ["gradient_steps"]

Matrix = sp.ImmutableMatrix


def _entries(letter: str, shape: tuple[int, int], head: int | None = None) -> sp.ImmutableMatrix:
    tag = "" if head is None else f"^{{({head + 1})}}"
    return Matrix(shape[0], shape[1], lambda i, j: sp.Symbol(f"{letter}{tag}_{{{i + 1},{j + 1}}}", real=True))


def _name(base: str, head: int | None) -> str:
    return base if head is None else f"{base}^{{({head + 1})}}"


def _eq(name: str, value) -> sp.Eq:
    return sp.Eq(sp.MatrixSymbol(name, *value.shape), value, evaluate=False)


def _mm(A, B) -> sp.ImmutableMatrix:
    return Matrix(A.shape[0], B.shape[1], lambda i, j: sp.Add(*[A[i, k] * B[k, j] for k in range(A.shape[1])]))


def gradient_steps(spec: AttentionSpec, max_terms: float | None = None) -> list[Step]:
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
    list of Step

    Examples
    --------
    >>> steps = gradient_steps(AttentionSpec(n=2, d_model=2))
    >>> [s.title for s in steps][:4]
    ['Loss and upstream gradient', 'Values', 'Attention weights', 'Softmax Jacobian']
    >>> steps[4].equation.rhs[0, 0]
    \alpha_{1,1}*(-\alpha_{1,1}*\bar{a}_{1,1} - \alpha_{1,2}*\bar{a}_{1,2} + \bar{a}_{1,1})
    """
    spec = _check_steps_spec(spec, max_terms)
    inputs = input_matrices(spec)
    G = _entries("g", (spec.n, spec.d_out))
    steps = [_loss_step(spec, G)]
    if spec.output_projection:
        steps.append(_output_projection_step(spec, inputs, G))
    zbar = _entries(r"\bar{z}", (spec.n, spec.inner_v)) if spec.output_projection else G
    steps += _head_steps(spec, zbar)
    qbar, kbar, vbar = (_entries(r"\bar{q}", (spec.n, spec.inner_qk)), _entries(r"\bar{k}", (spec.n, spec.inner_qk)),
                        _entries(r"\bar{v}", (spec.n, spec.inner_v)))
    steps.append(_projection_weights_step(spec, inputs, qbar, kbar, vbar))
    steps.append(_input_step(spec, inputs, qbar, kbar, vbar))
    return steps


def _check_steps_spec(spec: AttentionSpec, max_terms: float | None) -> AttentionSpec:
    """``spec`` if the steps are written for it and within the size guard; a :class:`SpecError` otherwise."""
    spec = check_gradient_spec(spec)
    spec.refuse_variants("the gradient derivation steps (attnsym.derive(spec, 'gradients'))", implemented=("chunk",))
    unsupported = [f"{name}={value!r}" for name, value, plain in (
        ("kv_heads", spec.kv_heads, spec.heads), ("softcap", spec.softcap, None)) if value != plain]
    if unsupported:
        raise SpecError(f"the gradient derivation steps are written for one key/value block per head and uncapped "
                        f"scores (got {', '.join(unsupported)}); attnsym.gradients(spec) computes these gradients")
    check_gradient_size(spec, "closed_form", max_terms)
    return spec


def _loss_step(spec: AttentionSpec, G: sp.ImmutableMatrix) -> Step:
    y = _entries("y", (spec.n, spec.d_out))
    return Step(
        "Loss and upstream gradient",
        sp.Eq(sp.Symbol("L"), sp.Add(*[a * b for a, b in zip(G, y, strict=True)]), evaluate=False),
        "The scalar loss is the inner product of the output with a symbolic upstream gradient $G$, so every "
        "gradient below is the full vector-Jacobian product; $\\bar M$ denotes $\\partial L / \\partial M$.",
        formula=r"L = \langle G, Y\rangle = \sum_{i,j} G_{ij} Y_{ij}, \qquad \bar Y = G",
    )


def _output_projection_step(spec: AttentionSpec, inputs: dict[str, sp.ImmutableMatrix], G: sp.ImmutableMatrix) -> Step:
    z = _entries("z", (spec.n, spec.inner_v))
    eqs = [_eq(r"\bar{Z}", _mm(G, inputs["W_O"].T)), _eq(r"\bar{W}_O", _mm(z.T, G))]
    if "b_O" in spec.bias_names:
        eqs.append(_eq(r"\bar{b}_O", Matrix(1, spec.d_model, lambda _, j: sp.Add(*G[:, j]))))
    return Step(
        "Output projection", tuple(eqs),
        "Backpropagating through $Y = Z W_O (+ 1 b_O)$: a linear map, so its gradients are products with $G$.",
        formula=r"\bar Z = G\, W_O^\top, \qquad \bar W_O = Z^\top G"
        + (r", \qquad \bar b_O = 1^\top G" if "b_O" in spec.bias_names else ""),
    )


def _head_steps(spec: AttentionSpec, zbar: sp.ImmutableMatrix) -> list[Step]:
    """Values, attention weights, the softmax Jacobian, scores, queries and keys (and the rotation), every head."""
    n, dk, dv = spec.n, spec.d_k, spec.d_v
    allowed = spec.allowed
    ok = (lambda i, j: True) if allowed is None else (lambda i, j: allowed[i][j])
    c = spec.scale_expr
    hooks = position_hooks(spec)
    rope = hooks.rotates  # hook (b): the scores read rotated queries and keys
    heads: list[int | None] = [None] if spec.heads == 1 else list(range(spec.heads))
    v_eqs, a_eqs, s_eqs, qk_eqs, rot_eqs = [], [], [], [], []
    for h in heads:
        hh = 0 if h is None else h
        vc = slice(hh * dv, (hh + 1) * dv)
        alpha = Matrix(n, n, lambda i, j, h=h: _entries(r"\alpha", (n, n), h)[i, j] if ok(i, j) else 0)
        v = _entries("v", (n, dv), h)
        q, k = (_entries(rf"\tilde{{{t}}}" if rope else t, (n, dk), h) for t in ("q", "k"))
        Zb = Matrix(zbar[:, vc])
        v_eqs.append(_eq(_name(r"\bar{V}", h), _mm(alpha.T, Zb)))
        abar = Matrix(n, n, lambda i, j, Zb=Zb, v=v: sp.Add(*[Zb[i, t] * v[j, t] for t in range(dv)]) if ok(i, j) else 0)
        a_eqs.append(_eq(_name(r"\bar{A}", h), abar))
        ab = Matrix(n, n, lambda i, j, h=h: _entries(r"\bar{a}", (n, n), h)[i, j] if ok(i, j) else 0)
        sbar = Matrix(n, n, lambda i, j, ab=ab, alpha=alpha: alpha[i, j] * (ab[i, j] - sp.Add(
            *[ab[i, t] * alpha[i, t] for t in range(n)])) if ok(i, j) else 0)
        s_eqs.append(_eq(_name(r"\bar{S}", h), sbar))
        sb = Matrix(n, n, lambda i, j, h=h: _entries(r"\bar{s}", (n, n), h)[i, j] if ok(i, j) else 0)
        qk_eqs += [_eq(_name(r"\bar{\tilde{Q}}" if rope else r"\bar{Q}", h), c * _mm(sb, k)),
                   _eq(_name(r"\bar{\tilde{K}}" if rope else r"\bar{K}", h), c * _mm(sb.T, q))]
        if rope:  # back through q~_p = R(p θ) q_p: the transpose R(p θ)ᵀ = R(−p θ), row by row
            for letter in ("q", "k"):
                rotated = _entries(rf"\bar{{\tilde{{{letter}}}}}", (n, dk), h)
                rot_eqs.append(_eq(_name(rf"\bar{{{letter.upper()}}}", h), hooks.rotate(rotated, adjoint=True)))
    steps = [Step(
        "Values", tuple(v_eqs),
        "$Z = A V$ is linear in $V$: the gradient reaches each value through the weights that used it.",
        formula=r"\bar V_h = A_h^\top \bar Z_h",
    ), Step(
        "Attention weights", tuple(a_eqs),
        "$Z = A V$ is linear in $A$ too: weight $\\alpha_{ij}$ receives the dot product of $\\bar z_i$ with $v_j$"
        + (" (masked entries get nothing)." if allowed is not None else "."),
        formula=r"\bar A_h = \bar Z_h V_h^\top",
    ), Step(
        "Softmax Jacobian",
        _eq("J", softmax_jacobian(n)),
        "Each row $a$ of $A$ is the softmax of a row $s$ of $S$; $\\partial a_j/\\partial s_m = a_j(\\delta_{jm} - a_m)$. "
        "Its rows sum to zero and its rank is $n - 1$: adding a constant to a row of scores changes nothing.",
        formula=r"J = \frac{\partial a}{\partial s} = \operatorname{diag}(a) - a a^\top",
    ), Step(
        "Scores", tuple(s_eqs),
        "Multiplying $\\bar a_i$ by the softmax Jacobian of row $i$ gives $\\bar s_{ij} = \\alpha_{ij}(\\bar a_{ij} - "
        "\\sum_m \\bar a_{im} \\alpha_{im})$: no $n \\times n$ Jacobian is ever formed."
        + (" ALiBi's bias $B_h$ is a constant added to the scores: it shapes $A$ but receives no gradient."
           if hooks.biases_scores else ""),
        formula=r"\bar S_h = A_h \circ \bigl(\bar A_h - \operatorname{rowsum}(\bar A_h \circ A_h)\, 1^\top\bigr)",
    ), Step(
        "Queries and keys", tuple(qk_eqs),
        "$S = c\\, Q K^\\top$ is bilinear: the query gradient uses the keys and the key gradient the queries.",
        formula=(r"\bar{\tilde Q}_h = c\, \bar S_h \tilde K_h, \qquad \bar{\tilde K}_h = c\, \bar S_h^\top \tilde Q_h" if rope
                 else r"\bar Q_h = c\, \bar S_h K_h, \qquad \bar K_h = c\, \bar S_h^\top Q_h") + rf", \qquad c = {sp.latex(c)}",
    )]
    if rope:
        steps.append(Step(
            "Through the rotation (RoPE)", tuple(rot_eqs),
            "RoPE rotated query and key $p$ by $R(p\\theta)$ after the projections; the gradient goes back through the "
            "transpose, $R(p\\theta)^\\top = R(-p\\theta)$, the same rotation backwards (values were not rotated).",
            formula=r"\bar{\mathbf q}_p = R(p\theta)^\top \bar{\tilde{\mathbf q}}_p, \qquad "
                    r"\bar{\mathbf k}_p = R(p\theta)^\top \bar{\tilde{\mathbf k}}_p",
        ))
    return steps


def _projection_weights_step(spec: AttentionSpec, inputs: dict[str, sp.ImmutableMatrix], qbar: sp.ImmutableMatrix,
                             kbar: sp.ImmutableMatrix, vbar: sp.ImmutableMatrix) -> Step:
    # hook (a): the projections read X_in = X + PE, written \tilde{x}
    xin = _entries(r"\tilde{x}", (spec.n, spec.d_model)) if spec.adds_position_vectors else inputs["X"]
    w_eqs = [_eq(r"\bar{W}_Q", _mm(xin.T, qbar)), _eq(r"\bar{W}_K", _mm(xin.T, kbar)), _eq(r"\bar{W}_V", _mm(xin.T, vbar))]
    if spec.bias:
        w_eqs += [_eq(rf"\bar{{b}}_{t}", Matrix(1, M.shape[1], lambda _, j, M=M: sp.Add(*M[:, j])))
                  for t, M in (("Q", qbar), ("K", kbar), ("V", vbar))]
    return Step(
        "Projection weights", tuple(w_eqs),
        ("Heads are column blocks of $Q, K, V$, so their gradients are placed side by side; " if spec.heads > 1 else "")
        + "$Q = X_{in} W_Q$ gives $\\bar W_Q = X_{in}^\\top \\bar Q$" + (" and the biases sum the rows." if spec.bias else "."),
        formula=r"\bar W_Q = X_{in}^\top \bar Q, \quad \bar W_K = X_{in}^\top \bar K, \quad \bar W_V = X_{in}^\top \bar V"
        + (r", \quad \bar b = 1^\top \bar{(\cdot)}" if spec.bias else ""),
    )


def _input_step(spec: AttentionSpec, inputs: dict[str, sp.ImmutableMatrix], qbar: sp.ImmutableMatrix,
                kbar: sp.ImmutableMatrix, vbar: sp.ImmutableMatrix) -> Step:
    xbar = Matrix(spec.n, spec.d_model, lambda i, j: sp.Add(
        *[qbar[i, t] * inputs["W_Q"][j, t] for t in range(spec.inner_qk)],
        *[kbar[i, t] * inputs["W_K"][j, t] for t in range(spec.inner_qk)],
        *[vbar[i, t] * inputs["W_V"][j, t] for t in range(spec.inner_v)]))
    return Step(
        "Input", _eq(r"\bar{X}", xbar),
        "The input reaches the loss three ways, as queries, keys and values; the three contributions add"
        + (" (positions are constant, so $\\bar X = \\bar X_{in}$)." if spec.adds_position_vectors else "."),
        formula=r"\bar X = \bar Q W_Q^\top + \bar K W_K^\top + \bar V W_V^\top",
    )
