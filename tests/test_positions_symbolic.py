"""RoPE and ALiBi in the spec and the symbolic view: validation, exact rotations, proofs, derivation steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym.errors import ShapeError, SpecError
from attnsym.spec import alibi_slope_exponents
from attnsym.symbolic.position_hooks import position_hooks
from attnsym.symbolic.position_steps import score_positions
from attnsym.symbolic.positions import alibi_bias, alibi_slopes, apply_rope, rope_frequencies, rope_rotation
from attnsym.symbolic.rope_proofs import prove_rope_relative, prove_shift_invariance
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


# ----------------------------------------------------------------------------- spec
@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(positions="rope", rope_pairing="neox"), "rope_pairing must be 'rotate_half'"),
    (dict(positions="rope", rotary_pct=0.0), r"rotary_pct must be a number in \(0, 1\]"),
    (dict(positions="rope", rotary_pct=1.5), r"rotary_pct must be a number in \(0, 1\]"),
    (dict(positions="rope", rotary_pct=True), r"rotary_pct must be a number in \(0, 1\]"),
    (dict(positions="rope", rotary_pct="half"), r"rotary_pct must be a number in \(0, 1\]"),
    (dict(positions="rope", d_model=6, rotary_pct=0.5), r"int\(6 \* 0.5\) = 3 coordinates"),
    (dict(positions="rope", d_model=1), r"= 1 coordinates per head, which must be even"),
    (dict(positions="alibi", rotary_pct=0.5), "rotary_pct=0.5 only applies with positions='rope'"),
    (dict(positions=None, rope_pairing="interleaved"), "rope_pairing='interleaved' only applies"),
    (dict(positions="ALiBi"), "positions must be None, 'sinusoidal', 'rope' or 'alibi'"),
])
def test_invalid_position_fields_name_the_argument(kwargs, message):
    kwargs = {"n": 2, "d_model": 4, **kwargs}
    with pytest.raises(SpecError, match=message):
        at.AttentionSpec(**kwargs)


@pytest.mark.parametrize(("pairing", "d_model", "pct", "pairs"), [
    ("rotate_half", 4, 1.0, ((0, 2, 0), (1, 3, 1))),
    ("interleaved", 4, 1.0, ((0, 1, 0), (2, 3, 1))),
    ("rotate_half", 8, 0.5, ((0, 2, 0), (1, 3, 1))),
    ("interleaved", 8, 0.25, ((0, 1, 0),)),
])
def test_rope_pairs_follow_the_named_conventions(pairing, d_model, pct, pairs):
    spec = at.AttentionSpec(n=2, d_model=d_model, positions="rope", rope_pairing=pairing, rotary_pct=pct)
    assert spec.rope_pairs == pairs
    assert spec.rotary_dims == int(d_model * pct)
    planes = [c for a, b, _ in pairs for c in (a, b)]
    assert sorted(planes) == list(range(spec.rotary_dims))  # every rotated coordinate in exactly one plane


def test_rope_frequency_exponents_are_2i_over_d():
    spec = at.AttentionSpec(n=2, d_model=8, positions="rope")
    assert [float(e) for e in spec.rope_frequency_exponents] == [0, 0.25, 0.5, 0.75]
    assert at.AttentionSpec(n=2, d_model=8).rope_frequency_exponents == ()


def _paper_slopes(heads: int) -> list[float]:
    """The reference code of Press et al. (``get_slopes`` in their fairseq fork), written out independently."""
    def power_of_2(k):
        start = 2 ** (-2 ** -(math.log2(k) - 3))
        return [start * start**i for i in range(k)]
    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + _paper_slopes(2 * closest)[0::2][: heads - closest]


@pytest.mark.parametrize("heads", [1, 2, 3, 5, 6, 8, 12, 16, 24, 40])
def test_alibi_slopes_follow_the_paper_rule(heads):
    exact = [2.0 ** -float(e) for e in alibi_slope_exponents(heads)]
    np.testing.assert_allclose(exact, _paper_slopes(heads), rtol=TOL64.rtol)  # theirs: repeated products
    assert [float(s) for s in alibi_slopes(heads)] == pytest.approx(exact, rel=TOL64.rtol)


def test_alibi_slopes_of_8_heads_are_powers_one_half():
    assert alibi_slopes(8) == tuple(sp.Rational(1, 2**k) for k in range(1, 9))


def test_describe_names_the_position_scheme():
    assert "RoPE (interleaved, base 10000, 2 of 4 dims)" in at.AttentionSpec(
        n=2, d_model=4, positions="rope", rope_pairing="interleaved", rotary_pct=0.5).describe()
    assert at.AttentionSpec(n=2, d_model=2, positions="alibi").describe().endswith("ALiBi")


def test_only_sinusoids_add_vectors_to_x():
    kinds = {kind: at.AttentionSpec(n=2, d_model=2, positions=kind).adds_position_vectors
             for kind in (None, "sinusoidal", "rope", "alibi")}
    assert kinds == {None: False, "sinusoidal": True, "rope": False, "alibi": False}


# ----------------------------------------------------------------------------- exact rotations
@pytest.mark.parametrize("pairing", ["rotate_half", "interleaved"])
def test_rope_rotation_is_orthogonal_and_composes(pairing):
    spec = at.AttentionSpec(n=2, d_model=6, positions="rope", rope_pairing=pairing)
    m, n = sp.symbols("m n", integer=True)
    Rm, Rn = rope_rotation(spec, m), rope_rotation(spec, n)
    assert sp.simplify(Rm.T * Rm - sp.eye(6)) == sp.zeros(6)
    assert sp.simplify(sp.expand_trig(Rm.T * Rn - rope_rotation(spec, n - m))) == sp.zeros(6)


def test_apply_rope_rows_equal_rotation_times_column():
    spec = at.AttentionSpec(n=3, d_model=4, positions="rope", rotary_pct=0.5)
    M = sp.Matrix(3, 4, sp.symbols("a0:12"))
    rotated = apply_rope(M, spec)
    for p in range(3):
        assert sp.expand(rotated.row(p).T - rope_rotation(spec, p) * M.row(p).T) == sp.zeros(4, 1)
    assert rotated[:, 2:] == M[:, 2:]  # rotary_pct = 0.5: the second half passes through


def test_apply_rope_checks_shapes_and_positions():
    spec = at.AttentionSpec(n=2, d_model=2, positions="rope")
    with pytest.raises(ShapeError, match="d_k = 2 columns"):
        apply_rope(sp.Matrix([[1, 2, 3]]), spec)
    with pytest.raises(ShapeError, match="one position per row"):
        apply_rope(sp.Matrix([[1, 2]]), spec, positions=[0, 1])
    with pytest.raises(SpecError, match="integer or a real SymPy expression"):
        apply_rope(sp.Matrix([[1, 2]]), spec, positions=["m"])
    with pytest.raises(SpecError, match="positions='rope'"):
        rope_frequencies(at.AttentionSpec(n=2, d_model=2))


def test_rope_frequencies_are_exact_powers_of_the_base():
    spec = at.AttentionSpec(n=2, d_model=8, positions="rope", position_base=16)
    assert rope_frequencies(spec) == (1, sp.Rational(1, 2), sp.Rational(1, 4), sp.Rational(1, 8))


def test_alibi_bias_is_minus_slope_times_distance():
    spec = at.AttentionSpec(n=4, d_model=6, heads=3, positions="alibi", causal=True)
    for h, slope in enumerate(alibi_slopes(3)):
        B = alibi_bias(spec, h)
        assert all(B[i, j] == -slope * abs(i - j) for i in range(4) for j in range(4))
    with pytest.raises(SpecError, match="head must be an integer in 0 … 2"):
        alibi_bias(spec, 3)


# ----------------------------------------------------------------------------- the layer
def test_symbolic_rope_layer_rotates_queries_and_keys_only():
    spec = at.AttentionSpec(n=3, d_model=2, positions="rope", scale="none")
    sym = at.symbolic.attention(spec)
    assert sym.PE is None and sym.X_in == sym.X and sym.B_heads is None
    assert sym.Q_rot_heads[0] == apply_rope(sym.Q_heads[0], spec)
    assert sym.S == sym.Q_rot_heads[0] * sym.K_rot_heads[0].T
    assert "Q_rot_heads" in sym.outputs


def test_symbolic_alibi_layer_adds_the_bias_after_scaling():
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, positions="alibi", causal=True)
    sym = at.symbolic.attention(spec)
    plain = at.symbolic.attention(spec.replace(positions=None))
    for h in range(2):
        for i in range(3):
            for j in range(3):
                if j <= i:
                    assert sp.expand(sym.S_heads[h][i, j] - plain.S_heads[h][i, j] - sym.B_heads[h][i, j]) == 0
                else:
                    assert sym.S_heads[h][i, j] == -sp.oo


def test_symbolic_rope_layer_lambdifies_to_rotated_scores():
    spec = at.AttentionSpec(n=3, d_model=2, positions="rope")
    rng = np.random.default_rng(0)
    X, W_Q, W_K, W_V = (rng.standard_normal(s) for s in ((3, 2), (2, 2), (2, 2), (2, 2)))
    out = at.symbolic.attention(spec).lambdify("A")(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V)
    Q, K = X @ W_Q, X @ W_K
    rot = lambda M: np.stack([np.array([[np.cos(p), -np.sin(p)], [np.sin(p), np.cos(p)]]) @ M[p] for p in range(3)])
    S = rot(Q) @ rot(K).T / np.sqrt(2)
    A = np.exp(S - S.max(1, keepdims=True))
    np.testing.assert_allclose(out["A"], A / A.sum(1, keepdims=True), rtol=TOL64.rtol)


# ----------------------------------------------------------------------------- proofs
@pytest.mark.parametrize("kwargs", [
    dict(d_model=2), dict(d_model=4), dict(d_model=4, rope_pairing="interleaved"),
    dict(d_model=8, rotary_pct=0.5), dict(d_model=6, position_base=100),
])
def test_rope_scores_depend_on_the_difference_only(kwargs):
    proof = prove_rope_relative(at.AttentionSpec(n=2, positions="rope", **kwargs))
    assert proof.holds and proof.residual == 0
    m, n, t = sp.symbols("m n t", integer=True)
    assert proof.rhs.xreplace({m: m + t, n: n + t}) == proof.rhs  # a function of n - m: the shift cancels
    assert proof.lhs.xreplace({m: m + t, n: n + t}) != proof.lhs  # written in m and n separately


def test_rope_relative_proof_is_checked_numerically_too():
    spec = at.AttentionSpec(n=2, d_model=4, positions="rope")
    proof = prove_rope_relative(spec)
    m, n = sp.symbols("m n", integer=True)
    rng = np.random.default_rng(1)
    values = {s: float(v) for s, v in zip(sorted(proof.lhs.free_symbols - {m, n}, key=str), rng.standard_normal(8),
                                          strict=True)}
    for shift in (0, 7, 123):
        a = float(proof.lhs.xreplace({**values, m: 3 + shift, n: 11 + shift}))
        b = float(proof.lhs.xreplace({**values, m: 3, n: 11}))
        assert a == pytest.approx(b, rel=TOL64.rtol, abs=TOL64.atol)


@pytest.mark.parametrize(("kwargs", "holds"), [
    (dict(positions="rope"), True),
    (dict(positions="rope", heads=2, causal=True), True),
    (dict(positions="alibi", heads=2), True),
    (dict(positions=None), True),
    (dict(positions="sinusoidal"), False),
])
def test_shift_invariance_holds_for_relative_schemes_only(kwargs, holds):
    proof = prove_shift_invariance(at.AttentionSpec(n=3, d_model=4, **kwargs))
    assert proof.holds is holds
    assert (proof.residual == 0) is holds


# ----------------------------------------------------------------------------- derivation
def test_derivation_shows_rope_steps_and_rotated_scores():
    d = at.derive(at.AttentionSpec(n=2, d_model=4, heads=2, positions="rope"))
    titles = [s.title for s in d.steps]
    assert titles.index("Rotary position embedding") < titles.index("Scores depend on relative positions") \
        < titles.index("Scores")
    assert r"\tilde Q_h" in d.step("Scores").formula
    assert "tilde{q}" in str(d.step("Scores").equation[0].rhs[0, 1])
    assert "expands to exactly 0" in d.step("Scores depend on relative positions").explanation
    assert "Positions" not in titles


def test_derivation_shows_alibi_bias_in_the_scores():
    d = at.derive(at.AttentionSpec(n=3, d_model=2, heads=2, positions="alibi", causal=True))
    assert d.step("Scores").formula.endswith("+ B_h")
    assert d.step("Scores").equation[1].rhs[2, 0].has(sp.Rational(-1, 128))  # head 2: slope 2^-8, distance 2
    assert "$m_{1} = \\frac{1}{16}$" in d.step("Linear biases (ALiBi)").explanation
    assert d.to_markdown().count("## ") == len(d.steps)


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize(("kwargs", "against"), [
    pytest.param(dict(n=2, d_model=2, positions="rope"), "elementwise", marks=pytest.mark.slow),
    (dict(n=2, d_model=2, heads=2, positions="alibi", causal=True), "elementwise"),
    (dict(n=3, d_model=2, heads=2, positions="alibi", bias=True), "matrix"),
])
def test_closed_form_gradients_equal_the_independent_routes(kwargs, against):
    check = at.symbolic.check_gradients(at.AttentionSpec(**kwargs), how="points", points=1, against=against)
    assert check, check.mismatches


def test_closed_form_rope_gradients_match_finite_differences_of_the_symbolic_layer():
    spec = at.AttentionSpec(n=3, d_model=4, positions="rope", rope_pairing="interleaved", causal=True)
    grads = at.gradients(spec).lambdify()
    rng = np.random.default_rng(0)
    values = {name: rng.standard_normal(spec.shapes[name]) for name in ("X", *spec.parameter_names)}
    values["G"] = rng.standard_normal(spec.shapes["Y"])
    g = grads(**values)
    forward = at.symbolic.attention(spec).lambdify("Y")
    f = lambda v: float(np.sum(values["G"] * forward(**{k: v.get(k, values[k]) for k in ("X", *spec.parameter_names)})["Y"]))
    for name in ("X", "W_Q", "W_K"):
        E = np.zeros(spec.shapes[name])
        E[1, 0] = 1e-6
        fd = (f({name: values[name] + E}) - f({name: values[name] - E})) / 2e-6
        assert g[name][1, 0] == pytest.approx(fd, rel=1e-6, abs=1e-8), name


def test_matrix_route_refuses_rope_with_the_alternatives():
    with pytest.raises(SpecError, match="method='matrix' has no rotation"):
        at.gradients(at.AttentionSpec(n=2, d_model=2, positions="rope"), method="matrix")


def test_trig_zero_decides_rotation_identities_both_ways():
    """The exact zero test behind prove_sinusoidal_shift: true identities give 0, near misses do not."""
    import sympy as sp

    from attnsym.symbolic.positions import _trig_zero

    p, k = sp.symbols("p k", real=True)
    w = sp.Symbol("omega", positive=True)
    assert _trig_zero(sp.sin(w * (p + k)) - sp.sin(w * p) * sp.cos(w * k) - sp.cos(w * p) * sp.sin(w * k))
    assert _trig_zero(sp.cos(w * k) ** 2 + sp.sin(w * k) ** 2 - 1)
    assert _trig_zero(sp.sin(w * p) * sp.sin(w * (p + k)) + sp.cos(w * p) * sp.cos(w * (p + k)) - sp.cos(w * k))
    assert not _trig_zero(sp.cos(w * k) ** 2 + sp.sin(w * k) ** 2 - 2)
    assert not _trig_zero(sp.sin(w * (p + k)) - sp.sin(w * p) * sp.cos(w * k))
    assert not _trig_zero(sp.sin(w * p) * sp.sin(w * (p + k)) + sp.cos(w * p) * sp.cos(w * (p + k)) - sp.cos(2 * w * k))


def test_trig_reduction_with_constants_as_generators_agrees_with_the_exact_domain():
    """_reduce_trig first treats √2 (the scale) as a free generator; a nonzero result falls back to the exact one."""
    from attnsym.symbolic.rope_proofs import _reduce_trig

    t, u, a = sp.symbols("t u a", real=True)
    r2 = sp.sqrt(2)
    holds = r2 * a * (sp.cos(t + u) - sp.cos(t) * sp.cos(u) + sp.sin(t) * sp.sin(u)) + r2 * (sp.sin(t)**2 + sp.cos(t)**2 - 1)
    assert _reduce_trig(holds) == 0
    fails = r2 * a * sp.sin(t + 1) - a * sp.sin(t)
    residual = _reduce_trig(fails)
    assert residual != 0 and sp.simplify(residual - sp.expand(sp.expand_trig(fails))) == 0
    assert sp.sqrt(2) in residual.atoms(sp.Pow)  # the constant is back, not a generator symbol


# ----------------------------------------------------------------------------- the position hooks
@pytest.mark.parametrize("positions", [None, "sinusoidal", "rope", "alibi"])
def test_the_hooks_of_a_scheme_are_the_pieces_of_its_forward_pass(positions):
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, causal=True, positions=positions)
    hooks, sym = position_hooks(spec), at.symbolic.attention(spec)
    assert hooks.adds_vectors == spec.adds_position_vectors == (sym.PE is not None)
    assert hooks.encode_inputs(sym.X) == sym.X_in
    assert hooks.score_biases() == sym.B_heads
    assert hooks.rotates == (sym.Q_rot_heads is not None)
    rotated = [hooks.rotate(q) for q in sym.Q_heads]
    assert tuple(rotated) == (sym.Q_rot_heads or sym.Q_heads)
    # the adjoint undoes the rotation (checked on numbers, to 1e-12)
    M = sp.ImmutableMatrix([[1, 2], [3, -4], [sp.Rational(1, 2), 6]])
    back = hooks.rotate(hooks.rotate(M), adjoint=True)
    assert max(abs(float(e)) for e in (back - M).evalf(30)) < 1e-12
    assert bool(hooks.rotation_planes(spec.heads)) == hooks.rotates
    q, k = (sp.ImmutableMatrix(3, 4, lambda i, j, t=t: sp.Symbol(f"{t}_{{{i + 1},{j + 1}}}", real=True)) for t in "qk")
    pieces = score_positions(spec, q, k)
    titles = [s["title"] for s in pieces.steps]
    assert titles == {"rope": ["Rotary position embedding", "Scores depend on relative positions"],
                      "alibi": ["Linear biases (ALiBi)"]}.get(positions, [])
    assert pieces.biases == sym.B_heads and (pieces.q != q) == hooks.rotates
    assert pieces.bias_tex == (" + B_h" if hooks.biases_scores else "")


def test_position_hooks_refuse_what_is_not_a_spec():
    with pytest.raises(SpecError, match="spec must be an AttentionSpec"):
        position_hooks("rope")
