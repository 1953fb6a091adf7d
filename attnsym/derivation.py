r"""Derivations: the forward pass of attention as ordered, titled, explained equations.

:func:`derive` turns an :class:`~attnsym.AttentionSpec` into a :class:`Derivation`, a list
of :class:`Step` objects. Each step's ``equation`` is a SymPy ``Eq`` (or a tuple of them)
whose right-hand side is explicit in the previous step's entries, so every step can be
checked on its own by substituting numbers:

1. inputs ``X``, ``W_Q``, ``W_K``, ``W_V`` (``W_O``, biases);
2. positions ``PE`` and ``X~ = X + PE`` (sinusoidal positions);
3. ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` in the inputs ``x_{i,j}``, ``W^{Q}_{i,j}``, …;
   with RoPE the rotated ``Q~``, ``K~`` and the identity ``R(mθ)q · R(nθ)k = qᵀR((n−m)θ)k``;
   with ALiBi the bias matrices ``B_h`` (:mod:`attnsym.symbolic.position_steps`); with QK-norm the
   normed rows (per head, or over the whole projection); with multi-head latent attention the
   normed latent ``C``, the one rotary key ``K^R`` and ``Q``, ``K``, ``V`` expanded from them;
4. scores ``S = c Q Kᵀ (+ B)`` in the entries ``q_{i,j}``, ``k_{i,j}`` (``-oo`` where masked);
5. weights ``A = softmax_row(S)`` in the scores ``s_{i,j}`` (exactly 0 where masked); with a sink the
   logit ``s_h`` joins every denominator and its mass ``π_i`` is written out (rows sum to ``1 − π_i``);
6. outputs ``Y = A V`` (per head, concatenated, ``W_O``) in ``alpha_{i,j}``, ``v_{i,j}``, ``z_{i,j}``;
   with an output gate ``Γ = σ(X W_G)`` and ``Y = (Z ⊙ Γ) W_O``;
7. the elementwise form ``y_i = sum_j alpha_ij(x_1, …, x_n) v_j``, then every score
   ``s_ij(x_1, …, x_n)`` written out in the inputs and every ``alpha_ij(x_1, …, x_n)`` in
   those scores;
8. the two views: an MLP ``y = W x`` (fixed ``W``) against attention ``y = W(x) x``.

Each step has a small builder that reads the layer :func:`attnsym.symbolic.attention` built for
the spec: its inputs, positions and projections as they are; its score pieces
(:func:`attnsym.symbolic.operations.scores`, the ALiBi biases ``B_heads``, the soft cap) applied to
the entry symbols of the step before; which scores are masked and which weights are exactly 0 from
its ``S_heads`` and ``A_heads``; and each head's key/value block by
:meth:`~attnsym.AttentionSpec.kv_head_of`, as the layer reads it.

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
from .symbolic.matrices import SYMBOLIC_VARIANTS, SymbolicAttention, attention, sigmoid, softcap_scores
from .symbolic.mlp import mlp
from .symbolic.operations import matmul, ones_times, row_softmax, scores, sink_softmax
from .symbolic.position_steps import qk_norm_steps, score_positions, softcap_step_words
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


@dataclass(frozen=True)
class _Forward:
    """What every forward step reads: the spec and its symbolic layer (:func:`attnsym.symbolic.attention`)."""

    spec: AttentionSpec
    sym: SymbolicAttention

    @property
    def multi(self) -> bool:
        return self.spec.heads > 1

    def tag(self, head: int) -> str:
        """``^{(h)}`` for head ``head`` of several (1-based), else empty."""
        return f"^{{({head + 1})}}" if self.multi else ""

    def head_name(self, letter: str, head: int) -> str:
        return f"{letter}{self.tag(head)}"

    def kept(self, head: int, i: int, j: int) -> bool:
        """Whether query ``i`` of ``head`` gives key ``j`` a weight (the layer's ``A_heads`` is not exactly 0 there)."""
        return self.sym.A_heads[head][i, j] != 0

    def masked(self, head: int, i: int, j: int) -> bool:
        """Whether the layer's score of query ``i`` and key ``j`` is ``-oo`` (masked)."""
        return self.sym.S_heads[head][i, j] == -sp.oo

    def alphas(self, head: int) -> sp.ImmutableMatrix:
        r"""The weight symbols ``\alpha_{i,j}`` of ``head`` where it gives a weight, 0 elsewhere."""
        n = self.spec.n
        alpha = _entries(r"\alpha", (n, n), head + 1 if self.multi else None)
        return sp.ImmutableMatrix(n, n, lambda i, j: alpha[i, j] if self.kept(head, i, j) else 0)

    def value_block(self, v: sp.MatrixBase, head: int) -> sp.ImmutableMatrix:
        """The value columns query head ``head`` reads (grouped-query attention: its key/value head's block)."""
        return _block(v, self.spec.d_v, self.spec.kv_head_of(head))


def _block(M: sp.MatrixBase, width: int, index: int) -> sp.ImmutableMatrix:
    """Column block ``index`` of width ``width`` (the layout of heads in ``Q``, ``K``, ``V``)."""
    return sp.ImmutableMatrix(M[:, index * width:(index + 1) * width])


def _tokens(n: int) -> tuple[list[sp.Symbol], str]:
    r"""The token symbols ``\mathbf{x}_i`` and their list in LaTeX."""
    tokens = [sp.Symbol(rf"\mathbf{{x}}_{{{i + 1}}}") for i in range(n)]
    return tokens, ", ".join(rf"\mathbf{{x}}_{{{i + 1}}}" for i in range(n))


def _input_step(f: _Forward) -> Step:
    sym, spec = f.sym, f.spec
    inputs = [_eq(_msym(name, matrix.shape), matrix) for name, matrix in sym.inputs.items()]
    learned = "weights and biases" if spec.bias else "weights"
    return Step(
        "Inputs", tuple(inputs),
        f"The {spec.n} tokens, each of width $d_{{model}} = {spec.d_model}$, are the rows of $X$; the learned {learned} "
        "are matrices of symbols.",
    )


def _position_steps(f: _Forward) -> list[Step]:
    sym, spec = f.sym, f.spec
    if sym.PE is None:
        return []
    return [Step(
        "Positions",
        (_eq(_msym("PE", sym.PE.shape), sym.PE), _eq(_msym(r"\tilde{X}", sym.X_in.shape), sym.X_in)),
        "Sinusoidal encodings of the positions $0, \\dots, n-1$ are added to the tokens before any projection.",
        formula=rf"PE_{{pos,2i}} = \sin\left(pos / {spec.position_base}^{{2i/d_{{model}}}}\right),\quad "
                rf"PE_{{pos,2i+1}} = \cos\left(pos / {spec.position_base}^{{2i/d_{{model}}}}\right)",
    )]


def _projection_steps(f: _Forward) -> list[Step]:
    sym, spec = f.sym, f.spec
    x_name = "X" if sym.PE is None else r"\tilde{X}"
    if spec.kv_latent_rank is not None:
        return _latent_steps(f, x_name)
    steps = []
    for title, letter, matrix, words in (
        ("Queries", "Q", sym.Q, "what each token looks for"),
        ("Keys", "K", sym.K, "what each token offers to be found by"),
        ("Values", "V", sym.V, "what each token passes on when attended to"),
    ):
        formula = f"{letter} = {x_name} W_{letter}" + (rf" + \mathbf{{1}} b_{letter}" if spec.bias else "")
        width = spec.d_v if letter == "V" else spec.d_k
        heads_words = f" Columns split into {spec.heads} heads of width {width}." if f.multi else ""
        steps.append(Step(
            title, _eq(_msym(letter, matrix.shape), matrix),
            f"Each row of ${letter}$ is a linear function of one token: {words}.{heads_words}",
            formula=formula,
        ))
    return steps


def _latent_steps(f: _Forward, x_name: str) -> list[Step]:
    """Multi-head latent attention: the normed latents, the one rotary key, then ``Q``, ``K``, ``V`` expanded from them."""
    sym, spec, n = f.sym, f.spec, f.spec.n
    r, rho, nope, H = int(spec.kv_latent_rank or 0), spec.rotary_dims, spec.d_k - spec.rotary_dims, spec.heads
    c, k_r = _entries("c", (n, r)), _entries("k^{R}", (n, rho))
    steps = [Step(
        "Latent", (_eq(_msym("C", (n, r)), sym.C_KV), _eq(_msym("K^{R}", (n, rho)), sym.K_R)),
        f"Every token is compressed to one latent row of width $r = {r}$, RMS-normed with the gains $g^{{CKV}}$: the "
        "keys and values of every head are expanded from it. A second projection gives one rotary key $k^R$ of "
        f"width $\\rho = {rho}$, shared by all heads.",
        formula=rf"C = \operatorname{{RMSNorm}}({x_name} W_{{DKV}}) \odot g^{{CKV}},\quad K^R = {x_name} W_{{KR}}",
    )]
    if sym.C_Q is not None:
        rq = int(spec.q_latent_rank or 0)
        c_q = _entries("c^{Q}", (n, rq))
        steps.append(Step(
            "Query latent", _eq(_msym("C^{Q}", (n, rq)), sym.C_Q),
            f"The queries go through their own latent of width $r_q = {rq}$, RMS-normed with the gains $g^{{CQ}}$.",
            formula=rf"C^Q = \operatorname{{RMSNorm}}({x_name} W_{{DQ}}) \odot g^{{CQ}}"))
        Q, q_formula = matmul(c_q, sym.W_UQ), r"Q = C^Q W_{UQ}"
    else:
        Q, q_formula = sym.Q, f"Q = {x_name} W_Q"
    K_C = matmul(c, sym.W_UK)
    K = sp.ImmutableMatrix(sp.Matrix.hstack(*(sp.Matrix.hstack(k_r, K_C[:, h * nope:(h + 1) * nope]) for h in range(H))))
    heads_words = f" Columns split into {H} heads of width {spec.d_k}." if f.multi else ""
    return [
        *steps,
        Step("Queries", _eq(_msym("Q", Q.shape), Q),
             f"Each head's query has its {rho} rotary coordinates first, then its {nope} others.{heads_words}",
             formula=q_formula),
        Step("Keys", _eq(_msym("K", K.shape), K),
             f"Each head's key is the shared rotary key $k^R$ followed by the head's own {nope} coordinates expanded "
             "from the latent; the scores split into a rotary part shared by all heads' keys and a non-rotary part "
             "$q^C_h \\cdot k^C_h$.",
             formula=r"K^{(h)} = \left[K^R \;\middle|\; C\, W_{UK}^{(h)}\right]"),
        Step("Values", _eq(_msym("V", (n, spec.inner_v)), matmul(c, sym.W_UV)),
             f"Each head's value, of width $d_v = {spec.d_v}$ (not $d_k = {spec.d_k}$), is expanded from the latent.",
             formula=r"V^{(h)} = C\, W_{UV}^{(h)}"),
    ]


def _query_key_steps(f: _Forward) -> tuple[list[Step], sp.ImmutableMatrix, sp.ImmutableMatrix, str]:
    """The QK-norm and RoPE steps, and the query and key entries the scores are written in (with their accent)."""
    spec, shape_q, shape_k = f.spec, f.sym.Q.shape, f.sym.K.shape
    q, k = _entries("q", shape_q), _entries("k", shape_k)
    steps: list[Step] = []
    if spec.qk_norm:  # normalised queries and keys (before any rotation)
        steps.extend(Step(**fields) for fields in qk_norm_steps(spec, q, k))
        q, k = _entries(r"\hat{q}", shape_q), _entries(r"\hat{k}", shape_k)
    positions = score_positions(spec, q, k)  # the position hooks' steps: rotation (RoPE), score bias (ALiBi)
    steps.extend(Step(**fields) for fields in positions.steps)
    return steps, positions.q, positions.k, positions.qk_tex


def _score_step(f: _Forward, q: sp.MatrixBase, k: sp.MatrixBase, accent: str) -> Step:
    """``S_h = c Q_h K_hᵀ (+ B_h)``, soft-capped, in the query and key entries: the layer's own score pieces."""
    spec, sym = f.spec, f.sym
    equations = []
    for hh in range(spec.heads):
        S = scores(_block(q, spec.d_k, hh), _block(k, spec.d_k, spec.kv_head_of(hh)), spec.scale_expr, spec.allowed)
        if sym.B_heads is not None:  # ALiBi: -oo (masked) + bias stays -oo
            S = sp.ImmutableMatrix(S + sym.B_heads[hh])
        if spec.softcap is not None:
            S = softcap_scores(S, spec.softcap)
        equations.append(_eq(_msym(f.head_name("S", hh), (spec.n, spec.n)), S))
    suffix = "_h" if f.multi else ""
    bias_tex = " + B" + suffix if sym.B_heads is not None else ""
    scale_tex, scale_words = _scale_latex(spec)
    return Step(
        "Scores", tuple(equations),
        f"Score $s_{{i,j}}$ is the dot product of query $i$ with key $j$, {scale_words}.{softcap_step_words(spec)}"
        f"{_mask_words(spec)}",
        formula=f"S{suffix} = {scale_tex} {accent}Q{suffix} {accent}K{suffix}^{{\\top}}{bias_tex}",
    )


def _weight_step(f: _Forward) -> Step:
    """``A_h = softmax_row(S_h)`` in the score entries ``s_{i,j}``."""
    spec, n = f.spec, f.spec.n
    equations = []
    for hh in range(spec.heads):
        s = _entries("s", (n, n), hh + 1 if f.multi else None)
        S = sp.ImmutableMatrix(n, n, lambda i, j, hh=hh, s=s: -sp.oo if f.masked(hh, i, j) else s[i, j])
        if f.sym.s_sink is None:
            equations.append(_eq(_msym(f.head_name("A", hh), (n, n)), row_softmax(S, spec.allowed)))
            continue
        A, pi = sink_softmax(S, f.sym.s_sink[0, hh], spec.allowed)
        equations += [_eq(_msym(f.head_name("A", hh), (n, n)), A), _eq(_msym(f.head_name(r"\pi", hh), (n, 1)), pi)]
    zero_words = " Masked weights are exactly 0." if spec.allowed is not None else ""
    suffix = "_h" if f.multi else ""
    if f.sym.s_sink is not None:
        if spec.fully_masked_rows:
            zero_words += " A query that may attend to nothing gives all its mass to the sink."
        sink = "s_h" if f.multi else "s"
        return Step(
            "Attention weights", tuple(equations),
            f"Each row of scores goes through a softmax whose denominator also holds the learned sink logit ${sink}$ "
            "(gpt-oss): the sink takes its own mass $\\pi_i$, so the weights of query $i$ are positive and sum to "
            f"$1 - \\pi_i$, kept as they are, never renormalised.{zero_words}",
            formula=rf"\alpha_{{i,j}} = \frac{{e^{{s_{{i,j}}}}}}{{e^{{{sink}}} + \sum_{{k}} e^{{s_{{i,k}}}}}},\quad "
                    rf"\pi_i = \frac{{e^{{{sink}}}}}{{e^{{{sink}}} + \sum_{{k}} e^{{s_{{i,k}}}}}} = 1 - \sum_j \alpha_{{i,j}}",
        )
    if spec.fully_masked_rows:
        zero_words += " A query that may attend to nothing gets an all-zero row."
    return Step(
        "Attention weights", tuple(equations),
        "Each row of scores goes through a softmax, so the weights $\\alpha_{i,j}$ of every query are positive and "
        f"sum to 1.{zero_words}",
        formula=rf"A{suffix} = \operatorname{{softmax}}_{{row}}(S{suffix}),\quad "
                rf"\alpha_{{i,j}} = \frac{{e^{{s_{{i,j}}}}}}{{\sum_{{k}} e^{{s_{{i,k}}}}}}",
    )


def _output_steps(f: _Forward) -> list[Step]:
    """``Y = A V``, or the heads ``Z_h = A_h V_h`` and then ``Y = Z W_O (+ 1 b_O)``."""
    spec, sym, n, h = f.spec, f.sym, f.spec.n, f.spec.heads
    v = _entries("v", sym.V.shape)
    if sym.gate is not None:
        return _gated_output_steps(f, v)
    if not spec.output_projection:
        Y = matmul(f.alphas(0), f.value_block(v, 0))
        return [Step(
            "Output", _eq(_msym("Y", Y.shape), Y),
            "Each output row is the weighted average of the value rows, with the attention weights of its query.",
            formula="Y = A V",
        )]
    heads = tuple(_eq(_msym(f.head_name("Z", hh), (n, spec.d_v)), matmul(f.alphas(hh), f.value_block(v, hh)))
                  for hh in range(h))
    Y = matmul(_entries("z", sym.Z.shape), sym.W_O)
    if sym.b_O is not None:
        Y = sp.ImmutableMatrix(Y + ones_times(sym.b_O, n))
    concat = rf"Z = \left[Z^{{(1)}} \cdots Z^{{({h})}}\right],\quad " if f.multi else ""
    return [
        Step("Head outputs" if f.multi else "Weighted values", heads,
             "Each head averages its own slice of the value columns with its own weights." if f.multi
             else "Each row is the weighted average of the value rows.",
             formula=r"Z^{(h)} = A^{(h)} V^{(h)}" if f.multi else "Z = A V"),
        Step("Concatenate and project" if f.multi else "Output projection", _eq(_msym("Y", Y.shape), Y),
             (f"The head outputs are placed side by side, $Z = [Z^{{(1)}} \\cdots Z^{{({h})}}]$ with entries "
              "$z_{i,j}$, and mixed by the output projection $W_O$.") if f.multi
             else "The averaged values $z_{i,j}$ are mixed by the output projection $W_O$.",
             formula=concat + "Y = Z W_O" + (r" + \mathbf{1} b_O" if sym.b_O is not None else "")),
    ]


def _gated_output_steps(f: _Forward, v: sp.ImmutableMatrix) -> list[Step]:
    """With an output gate (Qwen3-Next): the heads ``Z``, the gate ``Γ = σ(X W_G)``, then ``Y = (Z ⊙ Γ) W_O``."""
    spec, sym, n, h = f.spec, f.sym, f.spec.n, f.spec.heads
    heads = tuple(_eq(_msym(f.head_name("Z", hh), (n, spec.d_v)), matmul(f.alphas(hh), f.value_block(v, hh)))
                  for hh in range(h))
    gate_shape = (n, spec.inner_v)
    x_name = "X" if sym.PE is None else r"\tilde{X}"
    gate = sigmoid(_entries("u", gate_shape))
    gated = _entries("z", sym.Z.shape).multiply_elementwise(_entries(r"\gamma", gate_shape))
    Y = gated if sym.W_O is None else matmul(gated, sym.W_O)
    if sym.b_O is not None:
        Y = sp.ImmutableMatrix(Y + ones_times(sym.b_O, n))
    concat = rf"Z = \left[Z^{{(1)}} \cdots Z^{{({h})}}\right],\quad " if f.multi else ""
    project = (" W_O" + (r" + \mathbf{1} b_O" if sym.b_O is not None else "")) if sym.W_O is not None else ""
    return [
        Step("Head outputs" if f.multi else "Weighted values", heads,
             "Each head averages its own slice of the value columns with its own weights." if f.multi
             else "Each row is the weighted average of the value rows.",
             formula=r"Z^{(h)} = A^{(h)} V^{(h)}" if f.multi else "Z = A V"),
        Step("Output gate", (_eq(_msym("U", gate_shape), matmul(sym.X_in, sym.W_G)),
                             _eq(_msym(r"\Gamma", gate_shape), gate)),
             "A sigmoid gate computed from the layer's input scales every coordinate of the concatenated head "
             "outputs between 0 and 1 (Qwen3-Next's gated attention), entry $\\gamma_{i,j} = \\sigma(u_{i,j})$.",
             formula=rf"\Gamma = \sigma({x_name} W_G),\quad \sigma(u) = \frac{{1}}{{1 + e^{{-u}}}}"),
        Step("Gate and project" if sym.W_O is not None else "Output", _eq(_msym("Y", Y.shape), Y),
             "The head outputs $z_{i,j}$ are multiplied entry by entry by the gate $\\gamma_{i,j}$"
             + (", then mixed by the output projection $W_O$." if sym.W_O is not None else "."),
             formula=concat + r"Y = \left(Z \odot \Gamma\right)" + project),
    ]


def _elementwise_steps(f: _Forward) -> list[Step]:
    """``y_i = Σ_j α_ij(x_1, …, x_n) v_j``, then every score in the inputs and every weight in those scores."""
    spec, sym, n, d_v = f.spec, f.sym, f.spec.n, f.spec.d_v
    tokens, token_list = _tokens(n)
    out_letter = "z" if spec.output_projection else "y"
    rows: list[sp.Eq] = []
    score_fns: list[sp.Eq] = []
    alpha_fns: list[sp.Eq] = []
    for hh in range(spec.heads):
        tag, alpha = f.tag(hh), f.alphas(hh)
        values = [sp.MatrixSymbol(rf"\mathbf{{v}}{tag}_{{{j + 1}}}", 1, d_v) for j in range(n)]
        for i in range(n):
            terms = [alpha[i, j] * values[j] for j in range(n) if f.kept(hh, i, j)]
            rhs = sp.MatAdd(*terms) if len(terms) > 1 else terms[0] if terms else sp.ZeroMatrix(1, d_v)
            rows.append(_eq(sp.MatrixSymbol(rf"\mathbf{{{out_letter}}}{tag}_{{{i + 1}}}", 1, d_v), rhs))
        S = sym.S_heads[hh]  # the layer's scores: explicit in the inputs, -oo where masked
        s_of_x = sp.ImmutableMatrix(n, n, lambda i, j, tag=tag, S=S: -sp.oo if S[i, j] == -sp.oo
                                    else sp.Function(rf"s{tag}_{{{i + 1},{j + 1}}}")(*tokens))
        score_fns.extend(_eq(s_of_x[i, j], S[i, j]) for i in range(n) for j in range(n) if S[i, j] != -sp.oo)
        A_of_x = row_softmax(s_of_x, spec.allowed) if sym.s_sink is None else \
            sink_softmax(s_of_x, sym.s_sink[0, hh], spec.allowed)[0]
        alpha_fns.extend(_eq(sp.Function(rf"\alpha{tag}_{{{i + 1},{j + 1}}}")(*tokens), A_of_x[i, j])
                         for i in range(n) for j in range(n))
    return [
        Step("Elementwise form", tuple(rows),
             f"Row by row: output ${out_letter}_i$ is a combination of the value rows $\\mathbf{{v}}_j$ whose "
             "coefficients depend on the input.",
             formula=rf"\mathbf{{{out_letter}}}_i = \sum_j \alpha_{{i,j}}({token_list})\, \mathbf{{v}}_j"),
        Step("Attention weights as functions of the input", tuple(score_fns + alpha_fns),
             "Every score written out in the inputs, and every weight in those scores: the mixing coefficients "
             "$\\alpha_{i,j}$ are computed from the tokens themselves.",
             formula=rf"\alpha_{{i,j}}({token_list}) = \frac{{e^{{s_{{i,j}}({token_list})}}}}"
                     rf"{{\sum_k e^{{s_{{i,k}}({token_list})}}}}"),
    ]


def _views_step(f: _Forward) -> Step:
    """An MLP's fixed ``Y = X W`` beside attention's ``A(X) V`` (per head, each on its own value block)."""
    spec, n = f.spec, f.spec.n
    tokens, _ = _tokens(n)
    v = _entries("v", f.sym.V.shape)
    layer = mlp((n, spec.d_model, spec.d_model))
    views = [_eq(_msym(r"Y_{MLP}", layer.Y.shape), sp.MatMul(layer.X, layer.W, evaluate=False))]
    for hh in range(spec.heads):
        tag = f.tag(hh)
        alpha_fn = sp.ImmutableMatrix(n, n, lambda i, j, tag=tag, hh=hh: sp.Function(
            rf"\alpha{tag}_{{{i + 1},{j + 1}}}")(*tokens) if f.kept(hh, i, j) else 0)
        lhs = f.head_name("Z", hh) if spec.output_projection else r"Y_{attn}"
        views.append(_eq(_msym(lhs, (n, spec.d_v)), sp.MatMul(alpha_fn, f.value_block(v, hh), evaluate=False)))
    return Step(
        "Two views: MLP and attention", tuple(views),
        "An MLP applies the same fixed weights $W$ to every token ($y = W x$); attention first computes its mixing "
        "matrix $A(X)$ from the data and then applies it to the values ($y = W(x)\\, x$).",
        formula=r"Y_{MLP} = X W \qquad\text{vs.}\qquad Y_{attn} = A(X)\, V = A(X)\, X W_V",
    )


def _forward_steps(spec: AttentionSpec, max_terms: float | None) -> list[Step]:
    """The forward steps in order, each read from the symbolic layer of ``spec``."""
    spec.refuse_variants("attnsym.derive", implemented=SYMBOLIC_VARIANTS)  # the symbolic layer's variants, each a step
    f = _Forward(spec, attention(spec, max_terms=max_terms))
    qk_steps, q, k, accent = _query_key_steps(f)
    return [_input_step(f), *_position_steps(f), *_projection_steps(f), *qk_steps, _score_step(f, q, k, accent),
            _weight_step(f), *_output_steps(f), *_elementwise_steps(f), _views_step(f)]


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
