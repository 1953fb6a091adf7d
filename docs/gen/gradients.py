"""Generate the documentation page "Gradients of attention" (gradients.md) at build time.

Every equation and every verdict on the page is computed by attnsym while the docs build:
the closed forms come from ``matrix_gradients``, the softmax Jacobian from
``derive_softmax_jacobian``, the backward derivation from ``derive(spec, what="gradients")``,
the agreement of the two routes from ``check_gradients``, and the hypernetwork contrast from
``attention_input_jacobian`` / ``mlp_input_jacobian``.
"""

import mkdocs_gen_files
import sympy as sp

from attnsym import AttentionSpec, derive
from attnsym.symbolic import (
    attention_input_jacobian,
    check_gradients,
    derive_softmax_jacobian,
    input_symbols,
    matrix_gradients,
    mlp_input_jacobian,
)


def _display(latex: str) -> str:
    return f"$$\n{latex}\n$$\n"


def _closed_forms() -> str:
    mg = matrix_gradients(output_projection=True, bias=True)
    rows = [mg.latex(name).replace(" = ", " &= ", 1) for name in mg.gradients]
    body = " \\\\\n".join(rows)
    return (
        "With sizes left symbolic (`n`, `d`, `d_k`, `d_v` are SymPy symbols and every matrix a `MatrixSymbol`), "
        "`attnsym.symbolic.matrix_gradients()` returns the backpropagation identities of one head with an output "
        "projection and biases. $\\bar M$ is $\\partial L / \\partial M$, $A$ stands for the row softmax of "
        "$S = c\\, Q K^\\top$ (SymPy has no matrix softmax, and `MatrixSymbol.diff` cannot differentiate through one), "
        "$\\mathbf{1}$ is a column of ones and $\\circ$ the elementwise product. A mask changes nothing here: it enters only "
        "through the zeros of $A$.\n\n"
        + _display("\\begin{aligned}\n" + body + "\n\\end{aligned}")
        + "\nThe line for $\\bar S$ is the softmax Jacobian applied row by row, without forming it: "
        "$\\bar s_i = (\\operatorname{diag}(a_i) - a_i a_i^\\top)\\,\\bar a_i = a_i \\circ (\\bar a_i - "
        "\\langle \\bar a_i, a_i\\rangle)$.\n"
    )


def _softmax_jacobian() -> str:
    jac = derive_softmax_jacobian(3)
    text = [
        "For $a = \\operatorname{softmax}(z)$ with $n = 3$, SymPy differentiates the definition; the first row of "
        "$\\partial a_i / \\partial z_j$ is",
        _display(sp.latex(jac.derived[0, :])),
        f"and `derive_softmax_jacobian(3)` proves (by cancelling the difference) that this equals "
        f"(proven: **{jac.proven}**)",
        _display(r"J = \operatorname{diag}(a) - a a^\top = " + sp.latex(jac.closed_form)),
        "On the simplex ($a_3 = 1 - a_1 - a_2$) every row sums to "
        f"${sp.latex(jac.row_sums.T)}$ — the all-ones vector is in the kernel, so the rank is at most $n - 1$ — "
        "and the leading $2 \\times 2$ minor is",
        _display(sp.latex(jac.minor_determinant) + r" = a_1 a_2 a_3 > 0,"),
        f"so the rank is exactly $n - 1 = {jac.rank}$: adding the same constant to every score of a row changes "
        "no weight, and that is the one direction the gradient cannot see.",
    ]
    return "\n".join(text) + "\n"


def _backward_derivation() -> str:
    spec = AttentionSpec(n=2, d_model=2)
    markdown = derive(spec, what="gradients").to_markdown()
    lines = []
    for line in markdown.splitlines():
        if line.startswith("#"):
            line = "##" + line  # nest the derivation's headings under this page's section
        lines.append(line)
    return "\n".join(lines) + "\n"


def _two_routes() -> str:
    specs = [
        (AttentionSpec(n=2, d_model=2), "identity", "elementwise"),
        (AttentionSpec(n=2, d_model=2, causal=True, bias=True), "points", "elementwise"),
        (AttentionSpec(n=2, d_model=2, heads=2), "points", "elementwise"),
        (AttentionSpec(n=3, d_model=2, scale="none"), "points", "elementwise"),
        (AttentionSpec(n=3, d_model=4, heads=2, causal=True, bias=True), "points", "matrix"),
    ]
    rows = ["| layer | closed form against | compared | how | equal |", "|---|---|---|---|---|"]
    for spec, how, against in specs:
        check = check_gradients(spec, how=how, points=2, against=against)
        what = "identity (polynomial)" if check.how == "identity" else f"{check.points} random rational points, exactly"
        rows.append(f"| {spec.describe()} | `{against}` | {check.entries} gradient entries | {what} | **{check.equal}** |")
    return (
        "`attnsym.gradients(spec, method=...)` derives every gradient two independent ways: `\"closed_form\"` applies "
        "the identities above entry by entry (a straight-line program with shared subexpressions), "
        "`\"elementwise\"` calls SymPy's `.diff` on the loss built from the forward pass (and `\"matrix\"` evaluates "
        "the identities above on the written-out forward pass, head by head). `check_gradients` proves "
        "two of them equal: each `exp(·)` becomes an independent symbol (so does each inverse row sum), and the difference "
        "must expand to the zero polynomial — either with every input symbolic (*identity*) or after substituting "
        "random rationals for the inputs (*points*). Checked while this page was built:\n\n" + "\n".join(rows) + "\n"
    )


def _hypernetwork() -> str:
    J_mlp = mlp_input_jacobian((2, 1))
    spec = AttentionSpec(n=2, d_model=1, scale="none")
    jac = attention_input_jacobian(spec, weights="symbols")
    x = set(input_symbols("X", spec.shapes["X"]))
    routing_has_x = any(e.free_symbols & x for e in jac.routing)
    return "\n".join([
        "An MLP layer $Y = X W$ has the input Jacobian $\\partial\\,\\mathrm{vec}(Y) / \\partial\\,\\mathrm{vec}(X) = "
        "I_n \\otimes W^\\top$; for $n = 2$ tokens of width 1 (`mlp_input_jacobian((2, 1))`):",
        _display(sp.latex(J_mlp)),
        "No $x$ appears: the same matrix for every input. For attention, `attention_input_jacobian(spec)` splits "
        "the Jacobian into the *frozen routing* term $A_{ik}(X)\\,(W_V W_O)_{jc}$ — an MLP-like map whose "
        "mixing weights were generated by the data — and the term from $\\partial A / \\partial X$, written with "
        "the softmax Jacobian. For $n = 2$, $d = 1$, unscaled, with the weights written $\\alpha_{i,j}$ "
        "(`weights=\"symbols\"`), the entry $\\partial y_1 / \\partial x_2$ is",
        _display(r"\underbrace{" + sp.latex(jac.frozen[0, 1]) + r"}_{\text{frozen routing}} + \underbrace{"
                 + sp.latex(jac.routing[0, 1]) + r"}_{\text{from } \partial A / \partial X}"),
        "Both terms depend on the input: the frozen term through $\\alpha(X)$, the routing term also directly "
        f"(it contains $x$: {routing_has_x}) and it vanishes for an MLP. The tests prove *frozen + routing = SymPy's "
        "own Jacobian* of the forward pass exactly. This is the `y = W(x) x` view made explicit: the extra term is "
        "the weights moving with the data.",
    ]) + "\n"


PAGE = f"""# Gradients of attention

*This page is generated from the code by `docs/gen/gradients.py` every time the documentation is built.*

attnsym derives the exact gradients of a self-attention layer. The loss is
$L = \\langle G, Y \\rangle = \\sum_{{ij}} G_{{ij}} Y_{{ij}}$ with a *symbolic* upstream gradient $G$ (entries
$g_{{i,j}}$), so each gradient is the full vector-Jacobian product; a scalar SymPy loss of $Y$ is accepted too.

```python
import numpy as np
import attnsym as at

spec = at.AttentionSpec(n=2, d_model=2)
g = at.gradients(spec, wrt=("X", "W_Q", "W_K", "W_V"))   # closed form, exact
g["W_Q"]                                                 # SymPy Matrix of W_Q's shape
f = g.lambdify()                                         # NumPy function, common subexpressions shared
rng = np.random.default_rng(0)
values = {{name: rng.standard_normal(m.shape) for name, m in g.arguments.items()}}   # X, W_Q, W_K, W_V, G
f(**values)["X"]                                         # dL/dX at these values
at.symbolic.check_gradients(spec)                        # closed form == SymPy .diff, proven
at.derive(spec, what="gradients").to_latex()             # the backward pass, step by step
```

## Closed forms for any size

{_closed_forms()}
## The softmax Jacobian

{_softmax_jacobian()}
## The backward pass, step by step (n = 2, d = 2)

{_backward_derivation()}
## Two derivations that prove each other

{_two_routes()}
## The hypernetwork view: ∂Y/∂X

{_hypernetwork()}
## Speed

Building the closed form as a straight-line program keeps expression swell away: at (n, d) = (5, 5) all of
$\\bar X, \\bar W_Q, \\bar W_K, \\bar W_V$ are derived and compiled in about a second, where SymPy's `.diff` of the
written-out loss takes over a minute. The measured numbers, and the choices behind them, are in the
*Symbolic gradients* section of [Benchmarks](benchmarks.md).
"""

with mkdocs_gen_files.open("gradients.md", "w") as page:
    page.write(PAGE)
