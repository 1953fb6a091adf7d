r"""The position steps of a derivation (RoPE, ALiBi) as plain data, for :func:`attnsym.derive`.

Each function returns dictionaries with the fields of :class:`attnsym.derivation.Step`
(``title``, ``equation``, ``explanation``, ``formula``); :mod:`attnsym.derivation` turns
them into steps, so this module needs nothing above :mod:`attnsym.symbolic`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from .._exact import exact_matrix
from ..spec import AttentionSpec
from .matrices import exact_number, rms_norm_rows
from .naming import input_symbols
from .position_hooks import position_hooks
from .positions import alibi_bias, alibi_slopes, apply_rope, rope_frequencies
from .rope_proofs import prove_rope_relative

__all__ = ["ScorePositions", "alibi_steps", "qk_norm_steps", "rope_steps", "score_positions", "softcap_step_words"]


def _head(letter: str, head: int, multi: bool) -> str:
    return f"{letter}^{{({head + 1})}}" if multi else letter


def _pairing_words(spec: AttentionSpec) -> str:
    half = spec.rotary_dims // 2
    if spec.rope_pairing == "interleaved":
        pairs = "coordinates $2i$ and $2i+1$ are rotated together (interleaved pairs, GPT-J / RoFormer)"
    else:
        pairs = (f"coordinate $i$ is rotated together with $i + {half}$ (split halves, `rotate_half` as in "
                 "Hugging Face LLaMA / GPT-NeoX)")
    rest = "" if spec.rotary_dims == spec.d_k else (
        f"; only the first {spec.rotary_dims} of the {spec.d_k} coordinates of each head are rotated "
        f"(rotary_pct = {spec.rotary_pct}), the others pass through")
    return pairs + rest


@dataclass(frozen=True)
class ScorePositions:
    r"""What a position scheme puts between the projections and the scores of a forward derivation.

    Attributes
    ----------
    steps : tuple of dict
        The scheme's steps (fields of :class:`attnsym.derivation.Step`): the rotation and the
        relative-position identity (RoPE), the bias matrices (ALiBi), none otherwise.
    q, k : SymPy matrices
        The entry symbols the scores read: the given ones, or ``\tilde{q}_{i,j}``,
        ``\tilde{k}_{i,j}`` after a rotation.
    qk_tex : str
        Written before ``Q`` and ``K`` in the scores' formula (``"\tilde "`` after a rotation).
    bias_tex : str
        Written after ``Q Kᵀ`` in the scores' formula (``" + B"``, ``" + B_h"`` with a bias).
    biases : tuple of SymPy matrices or None
        Each head's score bias ``B_h`` (the ``B_heads`` of :func:`~attnsym.symbolic.attention`).
    """

    steps: tuple[dict[str, Any], ...]
    q: sp.ImmutableMatrix
    k: sp.ImmutableMatrix
    qk_tex: str = ""
    bias_tex: str = ""
    biases: tuple[sp.ImmutableMatrix, ...] | None = None


def _entry_symbols(letter: str, shape: tuple[int, int]) -> sp.ImmutableMatrix:
    return sp.ImmutableMatrix(*shape, lambda i, j: sp.Symbol(f"{letter}_{{{i + 1},{j + 1}}}", real=True))


def score_positions(spec: AttentionSpec, q: sp.MatrixBase, k: sp.MatrixBase) -> ScorePositions:
    r"""The position steps between a derivation's projections (or QK-norm) and its scores, by the spec's hooks.

    Hook (b) (a rotation, RoPE) gives :func:`rope_steps` and scores in the rotated entries;
    hook (c) (a score bias, ALiBi) gives :func:`alibi_steps` and the bias matrices; hook (a)
    (vectors added to ``X``) acts before the projections, so it adds nothing here. See
    :mod:`attnsym.symbolic.position_hooks`.

    Parameters
    ----------
    spec : AttentionSpec
    q, k : (n, heads·d_k), (n, kv_heads·d_k) SymPy matrices
        The entry symbols of the previous steps' ``Q`` and ``K``.

    Examples
    --------
    >>> q = sp.Matrix(2, 2, sp.symbols("q1:3(1:3)")); k = sp.Matrix(2, 2, sp.symbols("k1:3(1:3)"))
    >>> rope = score_positions(AttentionSpec(n=2, d_model=2, positions="rope"), q, k)
    >>> [s["title"] for s in rope.steps], rope.q[0, 0], rope.qk_tex
    (['Rotary position embedding', 'Scores depend on relative positions'], \tilde{q}_{1,1}, '\\tilde ')
    >>> alibi = score_positions(AttentionSpec(n=2, d_model=4, heads=2, positions="alibi"), q, k)
    >>> [s["title"] for s in alibi.steps], alibi.bias_tex, alibi.biases[1]
    (['Linear biases (ALiBi)'], ' + B_h', Matrix([
    [     0, -1/256],
    [-1/256,      0]]))
    >>> score_positions(AttentionSpec(n=2, d_model=2), q, k).steps
    ()
    """
    hooks = position_hooks(spec)
    q, k = exact_matrix("q", q), exact_matrix("k", k)
    steps: list[dict[str, Any]] = []
    qk_tex = bias_tex = ""
    if hooks.rotates:
        steps += rope_steps(spec, q, k)
        q, k, qk_tex = _entry_symbols(r"\tilde{q}", q.shape), _entry_symbols(r"\tilde{k}", k.shape), r"\tilde "
    biases = hooks.score_biases()
    if biases is not None:
        steps += alibi_steps(spec)
        bias_tex = " + B" + ("_h" if spec.heads > 1 else "")
    return ScorePositions(steps=tuple(steps), q=q, k=k, qk_tex=qk_tex, bias_tex=bias_tex, biases=biases)


def rope_steps(spec: AttentionSpec, q: sp.MatrixBase, k: sp.MatrixBase) -> list[dict]:
    r"""The RoPE steps: rotated queries and keys, then the relative-position identity.

    Parameters
    ----------
    spec : AttentionSpec
        With ``positions="rope"``.
    q, k : (n, heads·d_k) SymPy matrices
        The entry symbols of the previous steps' ``Q`` and ``K``.

    Returns
    -------
    list of dict
        Two steps; the rotated entries are in ``steps[0]["equation"]`` (one ``Eq`` per head,
        queries first).

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=2, positions="rope")
    >>> q = sp.Matrix(2, 2, sp.symbols("q1:3(1:3)")); k = sp.Matrix(2, 2, sp.symbols("k1:3(1:3)"))
    >>> steps = rope_steps(spec, q, k)
    >>> [s["title"] for s in steps]
    ['Rotary position embedding', 'Scores depend on relative positions']
    >>> steps[0]["equation"][0].rhs[1, :]
    Matrix([[q21*cos(1) - q22*sin(1), q21*sin(1) + q22*cos(1)]])
    """
    n, dk = spec.n, spec.d_k
    q, k = exact_matrix("q", q), exact_matrix("k", k)
    rotated_q: list[sp.Eq] = []
    rotated_k: list[sp.Eq] = []
    for letter, M, out, count in (("Q", q, rotated_q, spec.heads), ("K", k, rotated_k, spec.kv_heads)):
        for hh in range(count):  # keys: one block per key/value head (grouped-query attention)
            cols = slice(hh * dk, (hh + 1) * dk)
            rot = apply_rope(sp.ImmutableMatrix(M[:, cols]), spec)
            out.append(sp.Eq(sp.MatrixSymbol(rf"\tilde{{{_head(letter, hh, count > 1)}}}", n, dk), rot, evaluate=False))
    scaling = "" if spec.rope_scaling is None else (
        f" The frequencies are scaled by the {spec.rope_scaling.rope_type} rule ({spec.rope_scaling.describe()}).")
    theta = rope_frequencies(spec)
    thetas = ", ".join(rf"\theta_{{{i}}} = {sp.latex(t)}" for i, t in enumerate(theta))
    proof = prove_rope_relative(spec)
    lhs = sp.Symbol(r"(R(m\theta)\, \mathbf{q})^{\top} (R(n\theta)\, \mathbf{k})")
    return [
        dict(
            title="Rotary position embedding",
            equation=tuple(rotated_q + rotated_k),
            explanation=(f"RoPE adds nothing to the tokens: after the projections the query and key of position $p$ "
                         f"(row $p$, counted from 0) are rotated by the angles $p\\theta_i$, ${thetas}$; "
                         f"{_pairing_words(spec)}. Values are not rotated.{scaling}"),
            formula=(rf"\tilde{{\mathbf q}}_p = R(p\theta)\, \mathbf q_p,\quad \tilde{{\mathbf k}}_p = R(p\theta)\, "
                     rf"\mathbf k_p,\quad \theta_i = {spec.position_base}^{{-2i/{spec.rotary_dims}}}"),
        ),
        dict(
            title="Scores depend on relative positions",
            equation=sp.Eq(lhs, proof.rhs, evaluate=False),
            explanation=("For a query $\\mathbf q$ at position $m$ and a key $\\mathbf k$ at position $n$ (symbols), "
                         "$R(m\\theta)^\\top R(n\\theta) = R((n-m)\\theta)$, so the score is a function of $n - m$ only; "
                         "the difference of the two sides expands to exactly "
                         f"{'0' if proof.holds else 'a non-zero remainder'}."),
            formula=r"\tilde{\mathbf q}_m^{\top} \tilde{\mathbf k}_n = \mathbf q^{\top} R\big((n-m)\theta\big)\, \mathbf k",
        ),
    ]


def alibi_steps(spec: AttentionSpec) -> list[dict]:
    r"""The ALiBi step: every head's bias matrix :math:`B^{(h)}_{ij} = -m_h |i - j|` and its slope.

    Examples
    --------
    >>> step = alibi_steps(AttentionSpec(n=2, d_model=2, heads=2, positions="alibi"))[0]
    >>> step["equation"][1].rhs
    Matrix([
    [     0, -1/256],
    [-1/256,      0]])
    """
    multi = spec.heads > 1
    slopes = alibi_slopes(spec.heads)
    eqs = tuple(sp.Eq(sp.MatrixSymbol(_head("B", hh, multi), spec.n, spec.n), alibi_bias(spec, hh), evaluate=False)
                for hh in range(spec.heads))
    listed = ", ".join(f"$m_{{{hh + 1}}} = {sp.latex(s)}$" for hh, s in enumerate(slopes))
    causal = (" With the causal mask only $j \\le i$ counts, where the bias is $-m_h (i - j)$ as in the paper."
              if spec.causal else " Without a causal mask the bias is the symmetric extension $-m_h |i - j|$.")
    return [dict(
        title="Linear biases (ALiBi)",
        equation=eqs,
        explanation=("ALiBi adds no vectors to the tokens and rotates nothing: each head adds a penalty proportional "
                     f"to the distance between query and key to its scaled scores, with slopes {listed} "
                     f"(the geometric sequence of Press et al. 2022 for {spec.heads} heads).{causal}"),
        formula=r"B^{(h)}_{i,j} = -m_h\, |i - j|",
    )]


def qk_norm_steps(spec: AttentionSpec, q: sp.MatrixBase, k: sp.MatrixBase) -> list[dict]:
    r"""The QK-norm step: each head's query and key rows divided by their RMS, times the gains ``g_Q``, ``g_K``.

    Parameters
    ----------
    spec : AttentionSpec
        With ``qk_norm=True``.
    q, k : (n, heads·d_k), (n, kv_heads·d_k) SymPy matrices
        The entry symbols of the previous steps' ``Q`` and ``K``.

    Examples
    --------
    >>> spec = AttentionSpec(n=1, d_model=2, qk_norm=True, qk_norm_eps=0.0)
    >>> q = sp.Matrix([sp.symbols("q1 q2", real=True)]); k = sp.Matrix([sp.symbols("k1 k2", real=True)])
    >>> qk_norm_steps(spec, q, k)[0]["equation"][0].rhs
    Matrix([[g^{Q}_{1}*q1/sqrt(q1**2/2 + q2**2/2), g^{Q}_{2}*q2/sqrt(q1**2/2 + q2**2/2)]])
    """
    n, dk = spec.n, spec.d_k
    q, k = exact_matrix("q", q), exact_matrix("k", k)
    whole = spec.qk_norm_scope == "whole_projection"
    offset = exact_number(spec.qk_norm_offset, "qk_norm_offset")
    eqs = []
    for letter, M, count in (("Q", q, spec.heads), ("K", k, spec.kv_heads)):
        g = input_symbols(f"g_{letter}", (1, count * dk if whole else dk))
        gain = sp.ImmutableMatrix(g + offset * sp.ones(*g.shape)) if offset else g
        rows = rms_norm_rows(M, gain, spec.qk_norm_eps) if whole else None  # OLMo 2: one norm over the whole row
        for hh in range(count):
            block = slice(hh * dk, (hh + 1) * dk)
            normed = sp.ImmutableMatrix(rows[:, block]) if rows is not None else \
                rms_norm_rows(sp.ImmutableMatrix(M[:, block]), gain, spec.qk_norm_eps)
            eqs.append(sp.Eq(sp.MatrixSymbol(rf"\hat{{{_head(letter, hh, count > 1)}}}", n, dk), normed, evaluate=False))
    gain_tex = rf"({offset} + g^Q)" if offset else "g^Q"
    gain_words = f" (the gain is ${offset} + g$, Gemma 3's convention)" if offset else ""
    if whole:
        return [dict(
            title="QK-norm",
            equation=tuple(eqs),
            explanation=("Each query and key row is divided by its root mean square over the whole projection, "
                         f"all {spec.heads}·{dk} query (and {spec.kv_heads}·{dk} key) coordinates together (plus "
                         f"$\\epsilon = {spec.qk_norm_eps:g}$ under the root), and multiplied by learned gains $g^Q$, "
                         f"$g^K$ of that width{gain_words}, before the row is split into heads (OLMo 2's q_norm / "
                         "k_norm) and before any rotation."),
            formula=(r"\hat{Q} = \frac{Q}{\sqrt{\tfrac{1}{H d_k}\sum_c Q_{\cdot c}^2 + \epsilon}} \odot " + gain_tex),
        )]
    return [dict(
        title="QK-norm",
        equation=tuple(eqs),
        explanation=("Each head's query and key vectors are divided by their root mean square over the "
                     f"$d_k = {dk}$ coordinates (plus $\\epsilon = {spec.qk_norm_eps:g}$ under the root) and multiplied "
                     f"by learned gains $g^Q$, $g^K$ shared by all heads{gain_words} (Qwen3's q_norm / k_norm), before any "
                     "rotation."),
        formula=r"\hat{\mathbf q} = \frac{\mathbf q}{\sqrt{\tfrac{1}{d_k}\sum_c q_c^2 + \epsilon}} \odot " + gain_tex,
    )]


def softcap_step_words(spec: AttentionSpec) -> str:
    r"""The sentence a derivation adds to its scores step for ``spec.softcap`` (empty without it).

    >>> softcap_step_words(AttentionSpec(n=1, d_model=1, softcap=50.0))
    ' Each allowed score is then soft-capped, $s \\mapsto 50 \\tanh(s / 50)$ (Gemma 2), so $|s| < 50$.'
    """
    if spec.softcap is None:
        return ""
    t = f"{spec.softcap:g}"
    return f" Each allowed score is then soft-capped, $s \\mapsto {t} \\tanh(s / {t})$ (Gemma 2), so $|s| < {t}$."
