r"""Derivations: the forward pass of attention as ordered, titled, explained equations.

:func:`derive` turns an :class:`~attnsym.AttentionSpec` into a :class:`Derivation`, a list
of :class:`Step` objects. Each step's ``equation`` is a SymPy ``Eq`` (or a tuple of them)
whose right-hand side is explicit in the previous step's entries, so every step can be
checked on its own by substituting numbers:

1. inputs ``X``, ``W_Q``, ``W_K``, ``W_V`` (``W_O``, biases);
2. positions ``PE`` and ``X~ = X + PE`` (sinusoidal positions);
3. ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` in the inputs ``x_{i,j}``, ``W^{Q}_{i,j}``, …;
   with RoPE the rotated ``Q~``, ``K~`` and the identity ``R(mθ)q · R(nθ)k = qᵀR((n−m)θ)k``;
   with ALiBi the bias matrices ``B_h`` (:mod:`attnsym.symbolic.position_steps`);
4. scores ``S = c Q Kᵀ (+ B)`` in the entries ``q_{i,j}``, ``k_{i,j}`` (``-oo`` where masked);
5. weights ``A = softmax_row(S)`` in the scores ``s_{i,j}`` (exactly 0 where masked);
6. outputs ``Y = A V`` (per head, concatenated, ``W_O``) in ``alpha_{i,j}``, ``v_{i,j}``, ``z_{i,j}``;
7. the elementwise form ``y_i = sum_j alpha_ij(x_1, …, x_n) v_j``, then every score
   ``s_ij(x_1, …, x_n)`` written out in the inputs and every ``alpha_ij(x_1, …, x_n)`` in
   those scores;
8. the two views: an MLP ``y = W x`` (fixed ``W``) against attention ``y = W(x) x``.

Rendering (Markdown with ``$$`` math, a standalone LaTeX document, Jupyter) lives in
:mod:`attnsym.render`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import sympy as sp

from .errors import SpecError
from .render import derivation_latex_document, derivation_latex_math, derivation_markdown
from .spec import AttentionSpec
from .symbolic._backward_steps import gradient_steps
from .symbolic.matrices import attention, softcap_scores
from .symbolic.mlp import mlp
from .symbolic.operations import matmul, row_softmax
from .symbolic.position_steps import alibi_steps, qk_norm_steps, rope_steps, softcap_step_words
from .symbolic.steps import Step

__all__ = ["Derivation", "Step", "derive"]


@dataclass(frozen=True)
class Derivation:
    """An ordered list of :class:`Step` objects with a title.

    Renders itself as Markdown (:meth:`to_markdown`), as a standalone LaTeX document
    (:meth:`to_latex`) and in Jupyter (``_repr_markdown_``, ``_repr_latex_``).

    Parameters
    ----------
    title : str
    steps : sequence of Step
    description : str, optional
        One line under the title (e.g. the spec's :meth:`~attnsym.AttentionSpec.describe`).

    Examples
    --------
    >>> d = derive(at.AttentionSpec(n=2, d_model=2))
    >>> [step.title for step in d][:4]
    ['Inputs', 'Queries', 'Keys', 'Values']
    >>> d.to_markdown().splitlines()[0]
    '# Self-attention, step by step'
    """

    title: str
    steps: tuple[Step, ...]
    description: str = ""
    spec: AttentionSpec | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.title, str):
            raise SpecError(f"title must be a string (got {self.title!r})")
        steps = tuple(self.steps)
        for i, step in enumerate(steps):
            if not isinstance(step, Step):
                raise SpecError(f"steps must contain Step objects; steps[{i}] is {step!r}")
        object.__setattr__(self, "steps", steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    def step(self, title: str) -> Step:
        """The first step with this title (KeyError listing the titles otherwise)."""
        for step in self.steps:
            if step.title == title:
                return step
        raise KeyError(f"no step titled {title!r}; the steps are {[s.title for s in self.steps]}")

    def __add__(self, other: Derivation) -> Derivation:
        if not isinstance(other, Derivation):
            return NotImplemented
        return Derivation(self.title, self.steps + other.steps, self.description, self.spec)

    def to_markdown(self) -> str:
        """Markdown: a ``#`` title, a ``##`` heading per step, display math in ``$$`` blocks."""
        return derivation_markdown(self)

    def to_latex(self) -> str:
        """A standalone LaTeX document (``article``, amsmath) with one section per step."""
        return derivation_latex_document(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        return derivation_latex_math(self)

    def __repr__(self) -> str:
        return f"Derivation({self.title!r}, {len(self.steps)} steps: {', '.join(s.title for s in self.steps)})"


# ---------------------------------------------------------------------------------- building
def _entries(letter: str, shape: tuple[int, int], head: int | None = None, *, col_offset: int = 0) -> sp.ImmutableMatrix:
    """Entry symbols ``letter_{i,j}`` (``letter^{(h)}_{i,j}`` for head h), 1-based."""
    tag = "" if head is None else f"^{{({head})}}"
    return sp.ImmutableMatrix(
        shape[0], shape[1], lambda i, j: sp.Symbol(f"{letter}{tag}_{{{i + 1},{j + 1 + col_offset}}}", real=True)
    )


def _msym(name: str, shape: tuple[int, int]) -> sp.MatrixSymbol:
    return sp.MatrixSymbol(name, *shape)


def _eq(lhs, rhs) -> sp.Eq:
    return sp.Eq(lhs, rhs, evaluate=False)


def _scale_latex(spec: AttentionSpec) -> tuple[str, str]:
    """(formula of the scaled product, words for the explanation)."""
    if spec.scale == "sqrt":
        return r"\frac{1}{\sqrt{d_k}}", f"scaled by $1/\\sqrt{{d_k}} = 1/\\sqrt{{{spec.d_k}}}$"
    if spec.scale == "none":
        return "", "unscaled"
    return sp.latex(spec.scale_expr) + r"\,", f"scaled by ${sp.latex(spec.scale_expr)}$"


def _mask_words(spec: AttentionSpec) -> str:
    if spec.allowed is None:
        return ""
    words = " Masked entries (query $i$ may not attend to key $j$"
    words += ", here $j > i$: causal)" if spec.causal and spec.mask is None and spec.window is None else ")"
    if spec.window is not None:
        words += f" (the sliding window of {spec.window} keys masks $" + ("i - j" if spec.causal else "|i - j|") + \
            rf" \ge {spec.window}$)"
    words += r" are $-\infty$."
    return words


def _forward_steps(spec: AttentionSpec, max_terms) -> list[Step]:
    spec.refuse_variants("attnsym.derive", implemented=("chunk",))  # its steps have no sink, no whole-row QK-norm
    sym = attention(spec, max_terms=max_terms)
    n, m, h, d_k, d_v = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    multi = h > 1
    steps: list[Step] = []

    # 1. inputs
    inputs = [_eq(_msym("X", sym.X.shape), sym.X)]
    labels = {"W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V", "W_O": "W_O", "b_Q": "b_Q", "b_K": "b_K", "b_V": "b_V",
              "b_O": "b_O", "g_Q": "g_Q", "g_K": "g_K"}
    for name in spec.parameter_names:
        matrix = getattr(sym, name)
        inputs.append(_eq(_msym(labels[name], matrix.shape), matrix))
    learned = "weights and biases" if spec.bias else "weights"
    steps.append(Step(
        "Inputs", tuple(inputs),
        f"The {n} tokens, each of width $d_{{model}} = {m}$, are the rows of $X$; the learned {learned} are "
        "matrices of symbols.",
    ))

    # 2. positions
    x_name = "X"
    if sym.PE is not None:
        x_name = r"\tilde{X}"
        steps.append(Step(
            "Positions",
            (_eq(_msym("PE", sym.PE.shape), sym.PE), _eq(_msym(x_name, sym.X_in.shape), sym.X_in)),
            "Sinusoidal encodings of the positions $0, \\dots, n-1$ are added to the tokens before any projection.",
            formula=rf"PE_{{pos,2i}} = \sin\left(pos / {spec.position_base}^{{2i/d_{{model}}}}\right),\quad "
                    rf"PE_{{pos,2i+1}} = \cos\left(pos / {spec.position_base}^{{2i/d_{{model}}}}\right)",
        ))

    # 3. projections
    for title, letter, matrix, bias, words in (
        ("Queries", "Q", sym.Q, "b_Q", "what each token looks for"),
        ("Keys", "K", sym.K, "b_K", "what each token offers to be found by"),
        ("Values", "V", sym.V, "b_V", "what each token passes on when attended to"),
    ):
        formula = f"{letter} = {x_name} W_{letter}" + (rf" + \mathbf{{1}} {bias}" if spec.bias else "")
        heads_words = f" Columns split into {h} heads of width {d_k if letter != 'V' else d_v}." if multi else ""
        steps.append(Step(
            title, _eq(_msym(letter, matrix.shape), matrix),
            f"Each row of ${letter}$ is a linear function of one token: {words}.{heads_words}",
            formula=formula,
        ))

    # entry symbols of the previous steps
    q, k, v = _entries("q", sym.Q.shape), _entries("k", sym.K.shape), _entries("v", sym.V.shape)
    qk_tex, bias_tex = "", ""
    score_bias: tuple[sp.ImmutableMatrix, ...] | None = None  # the ALiBi biases B_h
    if spec.qk_norm:  # normalised queries and keys (before any rotation)
        steps.extend(Step(**fields) for fields in qk_norm_steps(spec, q, k))
        q, k = _entries(r"\hat{q}", sym.Q.shape), _entries(r"\hat{k}", sym.K.shape)
    if spec.positions == "rope":  # rotated queries and keys, then the scores in their entries
        steps.extend(Step(**fields) for fields in rope_steps(spec, q, k))
        q, k, qk_tex = _entries(r"\tilde{q}", sym.Q.shape), _entries(r"\tilde{k}", sym.K.shape), r"\tilde "
    elif spec.positions == "alibi":
        steps.extend(Step(**fields) for fields in alibi_steps(spec))
        score_bias, bias_tex = sym.B_heads, " + B" + ("_h" if multi else "")
    scale = spec.scale_expr
    allowed = spec.allowed
    scale_tex, scale_words = _scale_latex(spec)

    def head_name(letter: str, head: int) -> str:
        return f"{letter}^{{({head + 1})}}" if multi else letter

    # 4. scores
    score_eqs, s_entries = [], []
    for hh in range(h):
        kv = spec.kv_head_of(hh)  # grouped-query attention: the key block this head reads
        qh, kh = q[:, hh * d_k:(hh + 1) * d_k], k[:, kv * d_k:(kv + 1) * d_k]
        S = sp.ImmutableMatrix(n, n, lambda i, j, qh=qh, kh=kh, hh=hh: -sp.oo if allowed is not None and not allowed[i][j]
                               else scale * sp.Add(*[qh[i, c] * kh[j, c] for c in range(d_k)])
                               + (score_bias[hh][i, j] if score_bias is not None else 0))
        score_eqs.append(_eq(_msym(head_name("S", hh), (n, n)), S if spec.softcap is None else softcap_scores(S, spec.softcap)))
        s_entries.append(_entries("s", (n, n), hh + 1 if multi else None))
    head_suffix = "_h" if multi else ""
    steps.append(Step(
        "Scores", tuple(score_eqs),
        f"Score $s_{{i,j}}$ is the dot product of query $i$ with key $j$, {scale_words}.{softcap_step_words(spec)}"
        f"{_mask_words(spec)}",
        formula=f"S{head_suffix} = {scale_tex} {qk_tex}Q{head_suffix} {qk_tex}K{head_suffix}^{{\\top}}{bias_tex}",
    ))

    # 5. weights
    weight_eqs, alphas = [], []
    for hh in range(h):
        A = row_softmax(sp.ImmutableMatrix(n, n, lambda i, j, hh=hh: -sp.oo if score_eqs[hh].rhs[i, j] == -sp.oo
                                           else s_entries[hh][i, j]), allowed)
        weight_eqs.append(_eq(_msym(head_name("A", hh), (n, n)), A))
        tag = f"^{{({hh + 1})}}" if multi else ""
        alphas.append(sp.ImmutableMatrix(n, n, lambda i, j, tag=tag: sp.Symbol(rf"\alpha{tag}_{{{i + 1},{j + 1}}}",
                                                                               real=True)))
    zero_words = " Masked weights are exactly 0." if allowed is not None else ""
    if spec.fully_masked_rows:
        zero_words += " A query that may attend to nothing gets an all-zero row."
    steps.append(Step(
        "Attention weights", tuple(weight_eqs),
        "Each row of scores goes through a softmax, so the weights $\\alpha_{i,j}$ of every query are positive and "
        f"sum to 1.{zero_words}",
        formula=rf"A{head_suffix} = \operatorname{{softmax}}_{{row}}(S{head_suffix}),\quad "
                rf"\alpha_{{i,j}} = \frac{{e^{{s_{{i,j}}}}}}{{\sum_{{k}} e^{{s_{{i,k}}}}}}",
    ))

    # 6. outputs
    def alpha_matrix(hh):
        return sp.ImmutableMatrix(n, n, lambda i, j: alphas[hh][i, j] if weight_eqs[hh].rhs[i, j] != 0 else 0)

    z = _entries("z", sym.Z.shape)
    if not spec.output_projection:
        Y = matmul(alpha_matrix(0), v)
        steps.append(Step(
            "Output", _eq(_msym("Y", Y.shape), Y),
            "Each output row is the weighted average of the value rows, with the attention weights of its query.",
            formula="Y = A V",
        ))
    else:
        head_eqs = [_eq(_msym(head_name("Z", hh), (n, d_v)), matmul(alpha_matrix(hh), v[:, spec.kv_head_of(hh) * d_v:
                                                                                      (spec.kv_head_of(hh) + 1) * d_v]))
                    for hh in range(h)]
        steps.append(Step(
            "Head outputs" if multi else "Weighted values", tuple(head_eqs),
            "Each head averages its own slice of the value columns with its own weights." if multi
            else "Each row is the weighted average of the value rows.",
            formula=r"Z^{(h)} = A^{(h)} V^{(h)}" if multi else "Z = A V",
        ))
        Y = matmul(z, sym.W_O)
        if sym.b_O is not None:
            Y = sp.ImmutableMatrix(n, m, lambda i, j: Y[i, j] + sym.b_O[0, j])
        concat = rf"Z = \left[Z^{{(1)}} \cdots Z^{{({h})}}\right],\quad " if multi else ""
        steps.append(Step(
            "Concatenate and project" if multi else "Output projection", _eq(_msym("Y", Y.shape), Y),
            (f"The head outputs are placed side by side, $Z = [Z^{{(1)}} \\cdots Z^{{({h})}}]$ with entries "
             "$z_{i,j}$, and mixed by the output projection $W_O$.") if multi
            else "The averaged values $z_{i,j}$ are mixed by the output projection $W_O$.",
            formula=concat + "Y = Z W_O" + (r" + \mathbf{1} b_O" if sym.b_O is not None else ""),
        ))

    # 7. elementwise form with alpha_ij(x_1, ..., x_n) written out
    tokens = [sp.Symbol(rf"\mathbf{{x}}_{{{i + 1}}}") for i in range(n)]
    row_eqs: list[sp.Eq] = []
    alpha_eqs: list[sp.Eq] = []
    score_fns: list[sp.Eq] = []
    out_letter = "z" if spec.output_projection else "y"
    for hh in range(h):
        tag = f"^{{({hh + 1})}}" if multi else ""
        values = [sp.MatrixSymbol(rf"\mathbf{{v}}{tag}_{{{j + 1}}}", 1, d_v) for j in range(n)]
        for i in range(n):
            terms = [alphas[hh][i, j] * values[j] for j in range(n) if weight_eqs[hh].rhs[i, j] != 0]
            rhs = sp.MatAdd(*terms) if len(terms) > 1 else terms[0] if terms else sp.ZeroMatrix(1, d_v)
            row_eqs.append(_eq(sp.MatrixSymbol(rf"\mathbf{{{out_letter}}}{tag}_{{{i + 1}}}", 1, d_v), rhs))
        S = sym.S_heads[hh]  # explicit in the inputs, -oo where masked
        s_of_x = sp.ImmutableMatrix(n, n, lambda i, j, tag=tag, S=S: -sp.oo if S[i, j] == -sp.oo
                                    else sp.Function(rf"s{tag}_{{{i + 1},{j + 1}}}")(*tokens))
        score_fns.extend(_eq(s_of_x[i, j], S[i, j]) for i in range(n) for j in range(n) if S[i, j] != -sp.oo)
        A_of_x = row_softmax(s_of_x, allowed)
        for i in range(n):
            for j in range(n):
                name = sp.Function(rf"\alpha{tag}_{{{i + 1},{j + 1}}}")
                alpha_eqs.append(_eq(name(*tokens), A_of_x[i, j]))
    token_list = ", ".join(rf"\mathbf{{x}}_{{{i + 1}}}" for i in range(n))
    steps.append(Step(
        "Elementwise form", tuple(row_eqs),
        f"Row by row: output ${out_letter}_i$ is a combination of the value rows $\\mathbf{{v}}_j$ whose coefficients "
        "depend on the input.",
        formula=rf"\mathbf{{{out_letter}}}_i = \sum_j \alpha_{{i,j}}({token_list})\, \mathbf{{v}}_j",
    ))
    steps.append(Step(
        "Attention weights as functions of the input", tuple(score_fns + alpha_eqs),
        "Every score written out in the inputs, and every weight in those scores: the mixing coefficients "
        "$\\alpha_{i,j}$ are computed from the tokens themselves.",
        formula=rf"\alpha_{{i,j}}({token_list}) = \frac{{e^{{s_{{i,j}}({token_list})}}}}"
                rf"{{\sum_k e^{{s_{{i,k}}({token_list})}}}}",
    ))

    # 8. the two views
    layer = mlp((n, m, m))
    views = [_eq(_msym(r"Y_{MLP}", layer.Y.shape), sp.MatMul(layer.X, layer.W, evaluate=False))]
    for hh in range(h):
        tag = f"^{{({hh + 1})}}" if multi else ""
        alpha_fn = sp.ImmutableMatrix(
            n, n, lambda i, j, tag=tag, hh=hh: sp.Function(rf"\alpha{tag}_{{{i + 1},{j + 1}}}")(*tokens)
            if sym.A_heads[hh][i, j] != 0 else 0)
        lhs = head_name("Z", hh) if spec.output_projection else r"Y_{attn}"
        views.append(_eq(_msym(lhs, (n, d_v)), sp.MatMul(alpha_fn, v[:, hh * d_v:(hh + 1) * d_v], evaluate=False)))
    steps.append(Step(
        "Two views: MLP and attention", tuple(views),
        "An MLP applies the same fixed weights $W$ to every token ($y = W x$); attention first computes its mixing "
        "matrix $A(X)$ from the data and then applies it to the values ($y = W(x)\\, x$).",
        formula=r"Y_{MLP} = X W \qquad\text{vs.}\qquad Y_{attn} = A(X)\, V = A(X)\, X W_V",
    ))
    return steps


def derive(spec: AttentionSpec, what: Literal["forward", "gradients"] = "forward", *,
           max_terms: float | None = None) -> Derivation:
    """Derive the forward pass (or, with ``what="gradients"``, the backward pass) step by step.

    Parameters
    ----------
    spec : AttentionSpec
        The layer. Symbolic derivations are meant for small sizes (``n, d_model <= 4-6``).
    what : {"forward", "gradients"}, default "forward"
        ``"gradients"`` returns the steps of :func:`attnsym.symbolic.gradient_steps`.
    max_terms : float, optional
        Size guard passed to :func:`attnsym.symbolic.attention` or
        :func:`attnsym.symbolic.gradient_steps`.

    Returns
    -------
    Derivation

    Raises
    ------
    SpecError
        ``spec`` is not an AttentionSpec, or ``what`` is not one of the choices.
    SizeLimitError
        The layer is too large to derive symbolically.

    Examples
    --------
    >>> d = derive(at.AttentionSpec(n=2, d_model=2))
    >>> d.step("Queries").equation.rhs[0, 0]
    W^{Q}_{1,1}*x_{1,1} + W^{Q}_{2,1}*x_{1,2}
    >>> d.step("Attention weights").equation.rhs[0, 0]
    exp(s_{1,1})/(exp(s_{1,1}) + exp(s_{1,2}))
    >>> d.step("Output").equation.rhs[0, 0]
    \\alpha_{1,1}*v_{1,1} + \\alpha_{1,2}*v_{2,1}
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if what == "forward":
        return Derivation("Self-attention, step by step", tuple(_forward_steps(spec, max_terms)),
                          description=spec.describe(), spec=spec)
    if what == "gradients":
        steps = gradient_steps(spec, max_terms=max_terms)
        return Derivation("Gradients of self-attention, step by step", tuple(steps),
                          description=spec.describe(), spec=spec)
    raise SpecError(f"what must be 'forward' or 'gradients' (got {what!r})")


def concatenate(title: str, derivations: Sequence[Derivation]) -> Derivation:
    """One derivation made of the steps of several (e.g. forward, then gradients).

    >>> spec = at.AttentionSpec(n=2, d_model=1)
    >>> len(concatenate("Both", [derive(spec), derive(spec)])) == 2 * len(derive(spec))
    True
    """
    steps = tuple(step for d in derivations for step in d.steps)
    first = derivations[0] if derivations else None
    return Derivation(title, steps, first.description if first else "", first.spec if first else None)
