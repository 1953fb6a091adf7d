"""Derivations: every step's equation checked against a hand-written NumPy computation."""

from __future__ import annotations

import io
import random
import re
import runpy
import shutil
import subprocess
import sys
import types
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from reference_attention import ref_attention, ref_positions

import attnsym as at
from attnsym.derivation import Derivation, Step, concatenate, derive
from attnsym.errors import SizeLimitError, SpecError
from attnsym.render import deriving_page, escape_latex_text
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

SPECS = [
    dict(n=2, d_model=2),
    dict(n=3, d_model=2, causal=True),
    dict(n=2, d_model=4, heads=2, bias=True),
    dict(n=3, d_model=4, heads=2, causal=True),
    dict(n=2, d_model=2, positions="sinusoidal", scale="none"),
    dict(n=3, d_model=2, mask=[[False, False, False], [True, False, True], [True, True, True]], bias=True,
         output_projection=True),
]


def _random_inputs(spec, rng):
    shapes = {"X": (spec.n, spec.d_model)}
    shapes.update({name: spec.shapes[name] for name in spec.parameter_names})
    exact = {name: [[Fraction(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(c)] for _ in range(r)]
             for name, (r, c) in shapes.items()}
    return exact, {name: np.array(rows, dtype=float) for name, rows in exact.items()}


def _symbol(name):
    return sp.Symbol(name, real=True)


def _environment(spec, exact, floats, ref, W_mlp):
    """Values of every symbol a derivation uses, from the reference computation."""
    env = {}
    letters = {"X": "x", "W_Q": "W^{Q}", "W_K": "W^{K}", "W_V": "W^{V}", "W_O": "W^{O}"}
    for name, rows in exact.items():
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                if name.startswith("b_"):
                    key = f"b^{{{name[2]}}}_{{{j + 1}}}"
                else:
                    key = f"{letters[name]}_{{{i + 1},{j + 1}}}"
                env[_symbol(key)] = sp.Rational(value.numerator, value.denominator)
    for i in range(W_mlp.shape[0]):
        for j in range(W_mlp.shape[1]):
            env[_symbol(f"W_{{{i + 1},{j + 1}}}")] = sp.Float(W_mlp[i, j], 30)
    for letter, matrix in (("q", ref["Q"]), ("k", ref["K"]), ("v", ref["V"]), ("z", ref["Z"])):
        for (i, j), value in np.ndenumerate(matrix):
            env[_symbol(f"{letter}_{{{i + 1},{j + 1}}}")] = sp.Float(value, 30)
    multi = spec.heads > 1
    tokens = [sp.Symbol(rf"\mathbf{{x}}_{{{i + 1}}}") for i in range(spec.n)]
    for h in range(spec.heads):
        tag = f"^{{({h + 1})}}" if multi else ""
        for (i, j), value in np.ndenumerate(ref["S_heads"][h]):
            if np.isfinite(value):
                env[_symbol(f"s{tag}_{{{i + 1},{j + 1}}}")] = sp.Float(value, 30)
                env[sp.Function(f"s{tag}_{{{i + 1},{j + 1}}}")(*tokens)] = sp.Float(value, 30)
        for (i, j), value in np.ndenumerate(ref["A_heads"][h]):
            env[_symbol(rf"\alpha{tag}_{{{i + 1},{j + 1}}}")] = sp.Float(value, 30)
            env[sp.Function(rf"\alpha{tag}_{{{i + 1},{j + 1}}}")(*tokens)] = sp.Float(value, 30)
        cols = slice(h * spec.d_v, (h + 1) * spec.d_v)
        for j in range(spec.n):
            env[sp.MatrixSymbol(rf"\mathbf{{v}}{tag}_{{{j + 1}}}", 1, spec.d_v)] = sp.ImmutableMatrix(ref["V"][j:j + 1, cols])
    return env


def _expected(spec, name, floats, ref, W_mlp):
    """The reference value of the left-hand side called ``name``."""
    heads = re.fullmatch(r"([SAZ])\^\{\((\d+)\)\}", name)
    if heads:
        letter, h = heads.group(1), int(heads.group(2)) - 1
        if letter == "Z":
            return ref["A_heads"][h] @ ref["V"][:, h * spec.d_v:(h + 1) * spec.d_v]
        return ref[f"{letter}_heads"][h]
    row = re.fullmatch(r"\\mathbf\{([yz])\}(?:\^\{\((\d+)\)\})?_\{(\d+)\}", name)
    if row:
        h = int(row.group(2) or 1) - 1
        i = int(row.group(3)) - 1
        return ref["A_heads"][h][i:i + 1] @ ref["V"][:, h * spec.d_v:(h + 1) * spec.d_v]
    pe = ref_positions(spec.n, spec.d_model) if spec.positions else 0
    table = {
        "X": floats["X"], "PE": pe, r"\tilde{X}": floats["X"] + pe,
        "Q": ref["Q"], "K": ref["K"], "V": ref["V"], "S": ref["S_heads"][0], "A": ref["A_heads"][0],
        "Z": ref["Z"], "Y": ref["Y"], "Y_{attn}": ref["A_heads"][0] @ ref["V"], "Y_{MLP}": floats["X"] @ W_mlp,
    }
    table.update({name_: floats[name_] for name_ in floats if name_ != "X"})
    return table[name]


def _to_array(value):
    if isinstance(value, (sp.MatrixBase, sp.MatrixExpr)):
        value = sp.ImmutableMatrix(value.doit()) if not isinstance(value, sp.MatrixBase) else value
        return np.array([[float(sp.N(e, 30)) for e in row] for row in value.tolist()])
    return float(sp.N(value, 30))


@pytest.mark.parametrize("kwargs", SPECS, ids=str)
def test_every_step_matches_numpy_at_rational_points(kwargs):
    spec = at.AttentionSpec(**kwargs)
    rng = random.Random(str(kwargs))
    exact, floats = _random_inputs(spec, rng)
    spec_kwargs = {k: v for k, v in kwargs.items() if k != "output_projection"}
    ref = ref_attention(spec_kwargs, floats)
    if not spec.output_projection:
        ref["Y"] = ref["Z"]
    W_mlp = np.array([[rng.randint(-5, 5) / 3 for _ in range(spec.d_model)] for _ in range(spec.d_model)])
    env = _environment(spec, exact, floats, ref, W_mlp)
    checked = 0
    for step in derive(spec):
        for equation in step.equations:
            lhs, rhs = equation.lhs, equation.rhs
            if isinstance(lhs, sp.MatrixSymbol):
                expected = _expected(spec, lhs.name, floats, ref, W_mlp)
            else:  # alpha_ij(x_1, ..., x_n) or s_ij(x_1, ..., x_n): compare with the reference weight or score
                match = re.fullmatch(r"(\\alpha|s)(?:\^\{\((\d+)\)\})?_\{(\d+),(\d+)\}", str(lhs.func))
                h, i, j = int(match.group(2) or 1) - 1, int(match.group(3)) - 1, int(match.group(4)) - 1
                expected = ref["S_heads" if match.group(1) == "s" else "A_heads"][h][i, j]
            got = _to_array(rhs.xreplace(env))
            expected = np.broadcast_to(expected, np.shape(got))
            finite = np.isfinite(expected)
            np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=f"{step.title}: {lhs}")
            np.testing.assert_allclose(np.asarray(got)[finite], expected[finite], rtol=TOL64.rtol, atol=TOL64.atol,
                                       err_msg=f"{step.title}: {lhs}")
            checked += 1
    assert checked >= 10


def test_steps_titles_and_explanations():
    d = derive(at.AttentionSpec(n=2, d_model=2))
    titles = [s.title for s in d]
    assert titles == ["Inputs", "Queries", "Keys", "Values", "Scores", "Attention weights", "Output",
                      "Elementwise form", "Attention weights as functions of the input", "Two views: MLP and attention"]
    for step in d:
        assert step.explanation and "\n" not in step.explanation
    multi = [s.title for s in derive(at.AttentionSpec(n=2, d_model=4, heads=2, positions="sinusoidal"))]
    assert "Positions" in multi and "Head outputs" in multi and "Concatenate and project" in multi
    assert d.step("Scores").formula == r"S = \frac{1}{\sqrt{d_k}} Q K^{\top}"
    with pytest.raises(KeyError, match="Queries"):
        d.step("Nope")


def test_elementwise_form_reads_as_weighted_sum_of_value_rows():
    d = derive(at.AttentionSpec(n=2, d_model=2))
    first = d.step("Elementwise form").equations[0]
    assert sp.latex(first) == r"\mathbf{y}_{1} = \alpha_{1,1} \mathbf{v}_{1} + \alpha_{1,2} \mathbf{v}_{2}"
    functions = d.step("Attention weights as functions of the input").equations
    score, alpha = functions[0], functions[4]
    assert sp.latex(score.lhs) == r"s_{1,1}{\left(\mathbf{x}_{1},\mathbf{x}_{2} \right)}"
    assert _symbol("x_{1,2}") in score.rhs.free_symbols and _symbol("W^{K}_{2,1}") in score.rhs.free_symbols
    assert sp.latex(alpha.lhs) == r"\alpha_{1,1}{\left(\mathbf{x}_{1},\mathbf{x}_{2} \right)}"
    s11, s12 = (sp.Function(f"s_{{1,{j}}}")(*sp.symbols(r"\mathbf{x}_{1} \mathbf{x}_{2}")) for j in (1, 2))
    assert alpha.rhs == sp.exp(s11) / (sp.exp(s11) + sp.exp(s12))
    causal = derive(at.AttentionSpec(n=2, d_model=2, causal=True)).step("Elementwise form").equations[0]
    assert sp.latex(causal) == r"\mathbf{y}_{1} = \alpha_{1,1} \mathbf{v}_{1}"


def test_markdown_rendering():
    d = derive(at.AttentionSpec(n=2, d_model=2, causal=True))
    md = d.to_markdown()
    assert md.startswith("# Self-attention, step by step\n")
    assert d._repr_markdown_() == md
    blocks = re.findall(r"^\$\$\n(.*?)\n\$\$$", md, flags=re.S | re.M)
    assert len(blocks) == sum(len(s.equations) + bool(s.formula) for s in d)
    assert md.count("$$") == 2 * len(blocks)
    assert r"-\infty" in md and "## 5. Scores" in md
    assert r"W^{Q}_{1,1} x_{1,1}" in md  # names render as W^{Q}_{i,j}, x_{i,j}


def _balanced(text):
    depth = 0
    for i, ch in enumerate(text):
        if ch == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif ch == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def test_latex_document_is_standalone_and_balanced():
    d = derive(at.AttentionSpec(n=2, d_model=4, heads=2, causal=True, bias=True))
    tex = d.to_latex()
    assert tex.startswith(r"\documentclass") and tex.rstrip().endswith(r"\end{document}")
    boxes = sum(len(s.equations) + bool(s.formula) for s in d)
    assert tex.count(r"\begin{lrbox}{\eqbox}") == tex.count(r"\end{lrbox}\showeq") == boxes
    assert r"\begin{document}" in tex and r"\usepackage{amsmath" in tex
    assert _balanced(tex)
    assert "d\\_model=4" in tex  # plain text escaped
    latex = d._repr_latex_()
    assert latex.startswith("$$") and latex.endswith("$$") and _balanced(latex)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
@pytest.mark.parametrize("kwargs", [dict(n=2, d_model=2, causal=True, positions="sinusoidal"),
                                    dict(n=3, d_model=4, heads=2, bias=True, scale=0.5,
                                         mask=[[False, False, False], [True, True, False], [True, True, True]])],
                         ids=str)
def test_latex_document_compiles(tmp_path, kwargs):
    tex = derive(at.AttentionSpec(**kwargs)).to_latex()
    (tmp_path / "d.tex").write_text(tex)
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "d.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tmp_path / "d.pdf").exists()


def test_escape_latex_text_keeps_math():
    assert escape_latex_text("a_b $x_1$ 100% & #") == r"a\_b $x_1$ 100\% \& \#"


def test_fully_masked_row_is_explained_and_zero():
    spec = at.AttentionSpec(n=2, d_model=2, mask=[[False, False], [True, True]])
    d = derive(spec)
    assert "all-zero row" in d.step("Attention weights").explanation
    A = d.step("Attention weights").equation.rhs
    assert list(A[0, :]) == [0, 0]
    y1 = d.step("Elementwise form").equations[0]
    assert y1.rhs == sp.ZeroMatrix(1, 2)


def test_size_guard_and_bad_arguments():
    with pytest.raises(SizeLimitError, match="max_terms"):
        derive(at.AttentionSpec(n=16, d_model=16))
    with pytest.raises(SpecError, match="what must be 'forward' or 'gradients'"):
        derive(at.AttentionSpec(n=2, d_model=2), what="backward")
    with pytest.raises(SpecError, match="spec must be an AttentionSpec"):
        derive((2, 2))
    with pytest.raises(SpecError, match="title"):
        Step(1, sp.Integer(1), "x")
    with pytest.raises(SpecError, match="equation"):
        Step("t", "y = x", "x")
    with pytest.raises(SpecError, match="equation"):
        Step("t", (), "x")
    with pytest.raises(SpecError, match="explanation"):
        Step("t", sp.Integer(1), None)
    with pytest.raises(SpecError, match=r"steps\[0\]"):
        Derivation("t", ["not a step"])


def test_gradients_are_the_steps_of_symbolic_gradient_steps():
    spec = at.AttentionSpec(n=2, d_model=2)
    d = derive(spec, what="gradients")
    assert d.steps == tuple(at.symbolic.gradient_steps(spec))
    both = concatenate("Both", [derive(spec), d])
    assert both[-1].title == "Input" and len(both) == len(derive(spec)) + len(d)
    with pytest.raises(at.SizeLimitError):
        derive(spec, what="gradients", max_terms=10)


def test_docs_page_comes_from_the_code(monkeypatch):
    page = deriving_page(derive(at.AttentionSpec(n=2, d_model=2)))
    assert page.startswith("# Deriving attention")
    example = derive(at.AttentionSpec(n=2, d_model=2))
    for step in example:
        assert f"### {example.steps.index(step) + 1}. {step.title}" in page
        for equation in step.equations:
            assert f"$$\n{sp.latex(equation)}\n$$" in page
    assert f"{at.symbolic.DEFAULT_MAX_TERMS:,}" in page
    written = {}

    class FakeFile(io.StringIO):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def __exit__(self, *exc):
            written[self.name] = self.getvalue()
            return super().__exit__(*exc)

    fake = types.ModuleType("mkdocs_gen_files")
    fake.open = lambda name, mode="r": FakeFile(name)
    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", fake)
    script = Path(__file__).resolve().parents[1] / "docs" / "gen" / "deriving.py"
    runpy.run_path(str(script), run_name="__main__")
    assert written == {"deriving.md": page}


def test_each_query_head_of_a_grouped_layer_mixes_its_shared_value_block():
    """With kv_heads < heads, every step reads the value block of the head's key/value group (never an empty one)."""
    spec = at.AttentionSpec(n=2, d_model=4, heads=2, kv_heads=1)
    d = derive(spec)
    v = d.step("Values").equation.lhs  # V is (n, kv_heads·d_v): one shared block
    assert v.shape == (2, 2)
    for step_title in ("Head outputs", "Two views: MLP and attention"):
        heads = [e for e in d.step(step_title).equations if str(e.lhs).startswith("Z")]
        assert len(heads) == 2
        for e in heads:
            rhs = e.rhs if step_title == "Head outputs" else e.rhs.args[1]  # A(X) · V_h in the views
            symbols = {s.name for s in rhs.free_symbols if s.name.startswith("v_")}
            assert symbols == {"v_{1,1}", "v_{1,2}", "v_{2,1}", "v_{2,2}"}, (step_title, e)
