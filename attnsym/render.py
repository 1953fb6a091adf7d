r"""Formatting of derivations: Markdown with ``$$`` math, standalone LaTeX, Jupyter.

Functions here turn :class:`~attnsym.derivation.Derivation` objects into text; they print
nothing and write no files (the command line and :func:`attnsym._io.atomic_write` do).

Conventions of the text: step explanations are plain text in which ``$...$`` marks inline
math. In LaTeX output the plain text is escaped (``_``, ``%``, ``&`` …) and the math kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._limits import DEFAULT_MAX_TERMS
from .symbolic.steps import latex_expression

if TYPE_CHECKING:  # pragma: no cover
    from .derivation import Derivation

__all__ = [
    "derivation_latex_document",
    "derivation_latex_math",
    "derivation_markdown",
    "deriving_page",
    "escape_latex_text",
    "latex_expression",
]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_MATH = re.compile(r"(\$[^$]+\$)")


def escape_latex_text(text: str) -> str:
    r"""Escape plain text for LaTeX, keeping ``$...$`` math segments as they are.

    Examples
    --------
    >>> escape_latex_text("50% of d_model, $\\alpha_{i,j}$ & more")
    '50\\% of d\\_model, $\\alpha_{i,j}$ \\& more'
    """
    parts = _MATH.split(text)
    out = []
    for part in parts:
        if _MATH.fullmatch(part):
            out.append(part)
        else:
            out.append("".join(_LATEX_SPECIALS.get(ch, ch) for ch in part))
    return "".join(out)


def derivation_markdown(derivation: Derivation, *, heading_level: int = 1) -> str:
    """Markdown text: a heading per step, explanation, then display math in ``$$`` blocks.

    Parameters
    ----------
    derivation : Derivation
    heading_level : int, default 1
        Level of the title heading; steps are one level below.

    Examples
    --------
    >>> from attnsym.derivation import Derivation, Step
    >>> d = Derivation("Demo", [Step("Square", sp.Eq(sp.Symbol("y"), sp.Symbol("x") ** 2), "Squares $x$.")])
    >>> print(derivation_markdown(d))
    # Demo
    <BLANKLINE>
    ## 1. Square
    <BLANKLINE>
    Squares $x$.
    <BLANKLINE>
    $$
    y = x^{2}
    $$
    <BLANKLINE>
    """
    hashes = "#" * heading_level
    lines = [f"{hashes} {derivation.title}", ""]
    if derivation.description:
        lines += [derivation.description, ""]
    for number, step in enumerate(derivation.steps, 1):
        lines += [f"{hashes}# {number}. {step.title}", "", step.explanation, ""]
        if step.formula:
            lines += ["$$", step.formula, "$$", ""]
        for equation in step.equations:
            lines += ["$$", latex_expression(equation), "$$", ""]
    return "\n".join(lines)


def derivation_latex_document(derivation: Derivation) -> str:
    r"""A standalone LaTeX document (``article`` + ``amsmath``) that compiles with ``pdflatex``.

    Matrices of up to 64 columns are allowed (``MaxMatrixCols``). Each equation is set in a
    box and shrunk to the width of the (landscape) page when it is wider, so long
    expressions stay whole, if small.

    Examples
    --------
    >>> from attnsym.derivation import Derivation, Step
    >>> doc = derivation_latex_document(Derivation("Demo", [Step("A", sp.Eq(sp.Symbol("y"), 1), "One.")]))
    >>> doc.splitlines()[0], doc.rstrip().splitlines()[-1]
    ('\\documentclass[11pt]{article}', '\\end{document}')
    """
    body = []
    for number, step in enumerate(derivation.steps, 1):
        body.append(rf"\section*{{{number}. {escape_latex_text(step.title)}}}")
        body.append(escape_latex_text(step.explanation))
        if step.formula:
            body += [r"\begin{lrbox}{\eqbox}$\displaystyle", step.formula, r"$\end{lrbox}\showeq"]
        for equation in step.equations:
            body += [r"\begin{lrbox}{\eqbox}$\displaystyle", latex_expression(equation), r"$\end{lrbox}\showeq"]
        body.append("")
    description = escape_latex_text(derivation.description)
    return "\n".join([
        r"\documentclass[11pt]{article}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[a4paper,landscape,margin=1.5cm]{geometry}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage{graphicx}",
        r"\setcounter{MaxMatrixCols}{64}",
        r"\setlength{\parindent}{0pt}",
        r"% each equation is set in a box, shrunk to the line width when it is wider",
        r"\newsavebox{\eqbox}",
        r"\newcommand{\showeq}{\par\begin{center}\ifdim\wd\eqbox>\linewidth"
        r"\resizebox{\linewidth}{!}{\usebox{\eqbox}}\else\usebox{\eqbox}\fi\end{center}}",
        rf"\title{{{escape_latex_text(derivation.title)}}}",
        rf"\author{{{description}}}" if description else r"\author{}",
        r"\date{}",
        r"\begin{document}",
        r"\maketitle",
        "",
        *body,
        r"\end{document}",
        "",
    ])


def derivation_latex_math(derivation: Derivation) -> str:
    r"""One display-math string (``$$ \begin{array}{l} … $$``) for Jupyter's ``_repr_latex_``.

    Plain text goes into ``\text{}``; the ``$...$`` segments of explanations stay math, so
    no nested math delimiters are needed (MathJax 2 and 3 render it alike).

    Examples
    --------
    >>> from attnsym.derivation import Derivation, Step
    >>> derivation_latex_math(Derivation("Demo", [Step("A", sp.Eq(sp.Symbol("y"), 1), "Sets $y$ to one.")]))
    '$$\\begin{array}{l}\\textbf{Demo}\\\\ \\textbf{1. A: }\\text{Sets }y\\text{ to one.}\\\\ \\displaystyle y = 1\\end{array}$$'
    """
    rows = [rf"\textbf{{{_text(derivation.title)}}}"]
    for number, step in enumerate(derivation.steps, 1):
        rows.append(rf"\textbf{{{number}. {_text(step.title)}: }}" + _text_and_math(step.explanation))
        if step.formula:
            rows.append(rf"\displaystyle {step.formula}")
        rows.extend(rf"\displaystyle {latex_expression(e)}" for e in step.equations)
    return r"$$\begin{array}{l}" + r"\\ ".join(rows) + r"\end{array}$$"


def _text(text: str) -> str:
    return escape_latex_text(text.replace("$", ""))


def _text_and_math(text: str) -> str:
    """``"a $x$ b"`` -> ``\text{a }x\text{ b}`` (for use inside display math)."""
    out = []
    for part in _MATH.split(text):
        if not part:
            continue
        out.append(part[1:-1] if _MATH.fullmatch(part) else rf"\text{{{escape_latex_text(part)}}}")
    return "".join(out)


_PAGE_INTRO = r"""# Deriving attention

`attnsym.derive(spec)` writes the forward pass of a self-attention layer as an ordered list
of titled steps, each a SymPy equation you can inspect, substitute numbers into, or render.
Everything on this page below the line was produced by that function when the
documentation was built; nothing was typed by hand.

## Conventions

* Tokens are the **rows** of $X$ ($n \times d_{model}$); projections multiply on the right,
  $Q = X W_Q$ (as in Vaswani et al., 2017). Symbols are 1-based: $x_{i,j}$, $W^{Q}_{i,j}$,
  biases $b^{Q}_{j}$.
* Scores are $S = c\, Q K^\top$ with $c = 1/\sqrt{d_k}$ by default; a mask marks with `True`
  the keys a query **may** attend to. Masked scores are $-\infty$ and their weights exactly 0;
  a query that may attend to nothing gets a zero row.
* Each step is explicit in the entries of the step before it ($q_{i,j}$, $k_{i,j}$,
  $s_{i,j}$, $\alpha_{i,j}$, $v_{i,j}$), so each can be checked on its own; the step
  *Attention weights as functions of the input* writes every score
  $s_{i,j}(\mathbf{x}_1, \dots, \mathbf{x}_n)$ out in the inputs and every weight
  $\alpha_{i,j}$ in those scores.

## From Python

```python
import attnsym as at

spec = at.AttentionSpec(n=2, d_model=2)          # add heads=2, causal=True, bias=True, positions="sinusoidal"
d = at.derive(spec)
d.step("Scores").equation                         # a SymPy Eq
print(d.to_markdown())                            # Markdown with $$ math
tex = d.to_latex()                                # a standalone LaTeX document
sym = at.symbolic.attention(spec)                 # the matrices themselves
sym.subs({"X": [[1, 0], [0, 1]], "W_Q": 1, "W_K": 1, "W_V": 1}).A   # exact numbers
```

In Jupyter a `Derivation` displays itself.

## From the command line

```console
$ attnsym derive --n 2 --d 2 --format md
$ attnsym derive --n 3 --d 4 --heads 2 --causal --format tex -o attention.tex
```

`-o FILE` refuses to replace an existing file unless `--force` is given.

## The size guard

Symbolic expressions grow fast: one output entry of a single head already holds
$n\,(n+1)\,2 d_k d_{model}$ products. Before building anything, attnsym estimates the
number of terms in $A$ and $Y$ (`attnsym.symbolic.estimate_cost(spec)`); above
`attnsym.symbolic.DEFAULT_MAX_TERMS` = {limit:,} it raises `SizeLimitError` with the estimate and
the way out: pass `max_terms=` to go further, or use `attnsym.numeric` for numbers. The
default admits $n = d_{model} = 6$ (one or two heads) and refuses $n = d_{model} = 8$.

---

"""


def deriving_page(example: Derivation) -> str:
    """The text of the documentation page "Deriving attention" (``deriving.md``).

    Prose on conventions and usage followed by ``example``, the rendered derivation (the
    page uses ``attnsym.derive(AttentionSpec(n=2, d_model=2))``, produced at build time).

    Examples
    --------
    >>> page = deriving_page(at.derive(at.AttentionSpec(n=2, d_model=2)))
    >>> page.startswith("# Deriving attention"), "## 1. Inputs" in page
    (True, True)
    """
    intro = _PAGE_INTRO.replace("{limit:,}", f"{DEFAULT_MAX_TERMS:,}")
    return intro + derivation_markdown(example, heading_level=2).replace(
        f"## {example.title}", f"## Example: {example.title} (n = 2, d_model = 2)", 1
    )
