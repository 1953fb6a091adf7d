"""Symbolic gradients: the two routes against each other, against finite differences of an
independent NumPy forward pass, against PyTorch autograd, and the matrix-level identities."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_attention import ref_attention
from strategies import attention_specs, random_arrays

import attnsym as at
from attnsym import AttentionSpec, SizeLimitError, SpecError
from attnsym.errors import ShapeError
from attnsym.symbolic import (
    attention,
    attention_input_jacobian,
    check_gradients,
    derive_softmax_jacobian,
    gradient_steps,
    gradients,
    input_symbols,
    matrix_gradients,
    mlp_input_jacobian,
    sinusoidal_positions,
    softmax_jacobian,
)
from attnsym.symbolic._rewrite import AtomRewriter
from attnsym.symbolic.jacobians import softmax_output_symbols
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


def _kwargs(spec: AttentionSpec) -> dict:
    return dict(n=spec.n, d_model=spec.d_model, heads=spec.heads, d_k=spec.d_k, d_v=spec.d_v, causal=spec.causal,
                mask=spec.mask, scale=spec.scale, positions=spec.positions)


def _loss(spec, values, G):
    return float(np.sum(ref_attention(_kwargs(spec), values)["Y"] * G))


def _central_differences(spec, values, G, h=1e-6):
    """∂⟨G, Y⟩/∂(each input) by central differences of the independent reference forward pass."""
    grads = {}
    for name, array in values.items():
        grad = np.zeros_like(array)
        for idx in np.ndindex(array.shape):
            plus = {k: v.copy() for k, v in values.items()}
            minus = {k: v.copy() for k, v in values.items()}
            plus[name][idx] += h
            minus[name][idx] -= h
            grad[idx] = (_loss(spec, plus, G) - _loss(spec, minus, G)) / (2 * h)
        grads[name] = grad
    return grads


def _rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


# ------------------------------------------------------------------------------ the two routes agree exactly
@pytest.mark.parametrize(
    ("spec", "wrt", "how"),
    [
        (AttentionSpec(n=2, d_model=2), None, "identity"),
        (AttentionSpec(n=2, d_model=1, causal=True, scale="none", bias=True, output_projection=True), None, "identity"),
        (AttentionSpec(n=3, d_model=3), ("W_V",), "points"),
        (AttentionSpec(n=2, d_model=2, heads=2, bias=True), None, "points"),
        (AttentionSpec(n=3, d_model=2, causal=True, scale="none"), None, "points"),
        (AttentionSpec(n=2, d_model=2, positions="sinusoidal"), ("X", "W_K"), "points"),
        (AttentionSpec(n=3, d_model=1, mask=[[False, False, False], [True, True, False], [True, False, True]]), None,
         "points"),
    ],
    ids=["plain-2x2", "causal-unscaled-bias-WO", "plain-3x3", "two-heads-bias", "causal-unscaled-3", "positions",
         "mask-with-empty-row"],
)
def test_closed_form_equals_elementwise(spec, wrt, how):
    check = check_gradients(spec, wrt, how=how, points=1)
    assert check.equal, check.mismatches
    assert check.how == how
    assert check.entries == sum(len(input_symbols(k, spec.shapes[k])) for k in (wrt or ("X", *spec.parameter_names)))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=attention_specs(max_n=2, max_d=2), data=st.data())
def test_two_routes_agree_for_any_small_spec(spec, data):
    """Every variant the strategy draws (masks, float scale, positions, biases, heads), one input at a time."""
    wrt = data.draw(st.sampled_from(("X", *spec.parameter_names)))
    check = check_gradients(spec, wrt, how="points", points=1)
    assert check.equal, (spec, wrt, check.mismatches)


@pytest.mark.parametrize(
    "spec",
    [AttentionSpec(n=2, d_model=2, heads=2, bias=True),
     AttentionSpec(n=3, d_model=2, causal=True, bias=True, positions="sinusoidal", scale="none"),
     AttentionSpec(n=2, d_model=2, output_projection=True, mask=[[False, False], [True, True]])],
    ids=["two-heads-bias", "causal-bias-positions", "WO-empty-row"],
)
def test_closed_form_equals_matrix_identities(spec):
    check = check_gradients(spec, how="points", points=1, against="matrix")
    assert check.equal and check.routes == ("closed_form", "matrix"), check.mismatches


def test_custom_loss_two_routes_and_value():
    spec = AttentionSpec(n=2, d_model=1, scale="none")
    loss = lambda Y: sum(Y) ** 2 / 2
    assert check_gradients(spec, loss=loss, how="identity")
    g = gradients(spec, loss=loss)
    assert g.G == sp.ImmutableMatrix([[sum(g.Y)], [sum(g.Y)]])  # d/dy of (y1 + y2)^2 / 2
    values = {"X": np.array([[0.3], [-1.1]]), "W_Q": np.array([[0.7]]), "W_K": np.array([[1.3]]), "W_V": np.array([[-0.4]])}
    got = g.lambdify()(**values)
    h = 1e-6
    for name, array in values.items():
        for idx in np.ndindex(array.shape):
            plus = {k: v.copy() for k, v in values.items()}
            minus = {k: v.copy() for k, v in values.items()}
            plus[name][idx] += h
            minus[name][idx] -= h
            f = lambda vals: np.sum(ref_attention(_kwargs(spec), vals)["Y"]) ** 2 / 2
            assert abs(got[name][idx] - (f(plus) - f(minus)) / (2 * h)) < 1e-7


def test_checker_detects_a_wrong_gradient(monkeypatch):
    """The check must be able to fail: compare against the elementwise gradients of a different layer."""
    import attnsym.symbolic.backward as bp

    real = bp._elementwise
    monkeypatch.setattr(bp, "_elementwise", lambda spec, *a: real(spec.replace(scale="none"), *a))
    spec = AttentionSpec(n=2, d_model=1, scale=2)
    assert not check_gradients(spec, how="identity")
    result = check_gradients(spec, wrt="W_Q", how="points", points=1)
    assert not result and result.mismatches == (("W_Q", 0, 0),)


# ------------------------------------------------------------------------------ against numbers
@pytest.mark.parametrize(
    "spec",
    [
        AttentionSpec(n=4, d_model=3),
        AttentionSpec(n=3, d_model=4, heads=2, causal=True, bias=True, positions="sinusoidal"),
        AttentionSpec(n=3, d_model=2, scale="none", output_projection=True),
        AttentionSpec(n=3, d_model=2, mask=[[False, False, False], [True, True, False], [True, True, True]]),
    ],
    ids=["plain", "heads-causal-bias-positions", "unscaled-WO", "mask-empty-row"],
)
def test_lambdified_matches_central_differences(spec):
    arrays = random_arrays(spec, seed=3)
    G = arrays.pop("G")
    got = gradients(spec).lambdify()(G=G, **arrays)
    expected = _central_differences(spec, arrays, G)
    for name in arrays:
        assert got[name].shape == arrays[name].shape
        assert _rel_err(got[name], expected[name]) < 1e-6, name


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=attention_specs(max_n=3, max_d=3), seed=st.integers(0, 10**6))
def test_lambdified_matches_finite_differences_any_spec(spec, seed):
    arrays = random_arrays(spec, seed=seed)
    G = arrays.pop("G")
    got = gradients(spec).lambdify()(G=G, **arrays)
    expected = _central_differences(spec, arrays, G)
    for name in arrays:
        assert _rel_err(got[name], expected[name]) < 1e-6, (name, spec)


def test_batched_evaluation_equals_one_at_a_time():
    spec = AttentionSpec(n=3, d_model=2, causal=True)
    f = gradients(spec, wrt=("X", "W_Q")).lambdify()
    rng = np.random.default_rng(0)
    X, G = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 2))
    W = {k: rng.standard_normal((2, 2)) for k in ("W_Q", "W_K", "W_V")}
    batched = f(X=X, G=G, **W)
    assert batched["X"].shape == (4, 3, 2) and batched["W_Q"].shape == (4, 2, 2)
    for b in range(4):
        single = f(X=X[b], G=G[b], **W)
        np.testing.assert_allclose(batched["X"][b], single["X"], rtol=TOL64.rtol, atol=TOL64.atol)
        np.testing.assert_allclose(batched["W_Q"][b], single["W_Q"], rtol=TOL64.rtol, atol=TOL64.atol)


def test_large_scores_stay_finite():
    """Scores in the thousands: the compiled softmax is max-shifted, as the numeric backend's is."""
    from attnsym.numeric import attention_vjp

    spec = AttentionSpec(n=3, d_model=4, heads=2, causal=True, bias=True)
    arrays = {k: 30 * v for k, v in random_arrays(spec, seed=11).items()}
    f = gradients(spec).lambdify()
    reference = attention_vjp(spec=spec, **arrays)
    for got in (f(**arrays), {k: v[0] for k, v in f(**{**arrays, "X": arrays["X"][None], "G": arrays["G"][None]}).items()}):
        for name in got:
            assert np.isfinite(got[name]).all(), name
            np.testing.assert_allclose(got[name], reference[name], rtol=1e-9, atol=1e-9 * np.abs(reference[name]).max())


def test_exact_evaluation_by_hand():
    """n=2, d=1, unscaled: X = (0, 1), W_Q = W_K = 1, W_V = 2, G = (1, 1).

    Scores: S = [[0, 0], [0, 1]], so A = [[1/2, 1/2], [1/(1+e), e/(1+e)]] and V = (0, 2).
    dW_V = Xᵀ Aᵀ G = sum over i, j of x_j A_ij g_i = A_12 + A_22 = 1/2 + e/(1+e).
    """
    g = gradients(AttentionSpec(n=2, d_model=1, scale="none"), wrt=("W_V",))
    value = g.evaluate({"X": [[0], [1]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[2]], "G": [[1], [1]]})["W_V"][0]
    assert sp.simplify(value - (sp.Rational(1, 2) + sp.E / (1 + sp.E))) == 0


def test_evaluate_matches_lambdify():
    spec = AttentionSpec(n=2, d_model=2, bias=True, output_projection=True)
    g = gradients(spec)
    arrays = random_arrays(spec, seed=1)
    exact = g.evaluate({k: np.round(v, 2) for k, v in arrays.items()})
    numeric = g.lambdify()(**{k: np.round(v, 2) for k, v in arrays.items()})
    for name in g:
        np.testing.assert_allclose(np.array(exact[name].evalf(30), dtype=float), numeric[name], rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.oracle
@pytest.mark.parametrize(
    "spec",
    [
        AttentionSpec(n=5, d_model=5),
        AttentionSpec(n=4, d_model=4, heads=2, causal=True, bias=True),
        AttentionSpec(n=3, d_model=4, positions="sinusoidal", scale="none", output_projection=True, bias=True),
    ],
    ids=["5x5", "heads-causal-bias", "positions-unscaled-WO"],
)
def test_matches_pytorch_autograd(spec):
    torch = pytest.importorskip("torch")
    arrays = random_arrays(spec, seed=7)
    got = gradients(spec).lambdify()(**arrays)
    t = {k: torch.tensor(v, requires_grad=k != "G") for k, v in arrays.items()}
    X = t["X"]
    if spec.positions:
        X = X + torch.tensor(np.array(sinusoidal_positions(spec.n, spec.d_model).evalf(), dtype=float))
    zero = torch.zeros(())
    Q = X @ t["W_Q"] + t.get("b_Q", zero)
    K = X @ t["W_K"] + t.get("b_K", zero)
    V = X @ t["W_V"] + t.get("b_V", zero)
    Zs = []
    for h in range(spec.heads):
        qk, vv = slice(h * spec.d_k, (h + 1) * spec.d_k), slice(h * spec.d_v, (h + 1) * spec.d_v)
        mask = None if spec.allowed is None else torch.tensor(spec.allowed)
        Zs.append(torch.nn.functional.scaled_dot_product_attention(
            Q[None, :, qk], K[None, :, qk], V[None, :, vv], attn_mask=mask, scale=spec.scale_float)[0])
    Y = torch.cat(Zs, dim=1)
    if spec.output_projection:
        Y = Y @ t["W_O"] + t.get("b_O", zero)
    (Y * t["G"]).sum().backward()
    for name in got:
        np.testing.assert_allclose(got[name], t[name].grad.numpy(), rtol=TOL64.rtol, atol=TOL64.atol, err_msg=name)


# ------------------------------------------------------------------------------ matrix-level closed forms
@pytest.mark.parametrize(
    "spec",
    [AttentionSpec(n=2, d_model=2), AttentionSpec(n=2, d_model=1, bias=True, output_projection=True, causal=True),
     AttentionSpec(n=2, d_model=2, positions="sinusoidal", scale="none")],
    ids=["plain", "bias-WO-causal", "positions-unscaled"],
)
def test_matrix_closed_forms_made_explicit_equal_entry_route(spec):
    mg = matrix_gradients(spec)
    sym = attention(spec)
    values = {**sym.inputs, "A": sym.A, "G": input_symbols("G", spec.shapes["Y"])}
    if spec.positions:
        values["PE"] = sym.PE
    entry = gradients(spec)
    rng = np.random.default_rng(0)  # exact at a random rational point (exp, sin, cos -> independent symbols)
    point = {s: sp.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 6)))
             for m in (*sym.inputs.values(), values["G"]) for s in m}
    rewrite = AtomRewriter(point)
    for name in entry:
        explicit = mg.explicit(name, values)
        assert explicit.shape == entry[name].shape
        for a, b in zip(explicit, entry[name], strict=True):
            assert sp.expand(rewrite(a) - rewrite(b)) == 0, name


def test_matrix_closed_forms_have_symbolic_shapes():
    mg = matrix_gradients(AttentionSpec(n=2, d_model=2, bias=True, output_projection=True))
    n, d, dk, dv = (mg.sizes[k] for k in ("n", "d_model", "d_k", "d_v"))
    expected = {"X": (n, d), "W_Q": (d, dk), "W_K": (d, dk), "W_V": (d, dv), "W_O": (dv, d), "b_Q": (1, dk),
                "b_O": (1, d), "dS": (n, n), "dA": (n, n)}
    for name, shape in expected.items():
        assert mg.gradients[name].shape == shape, name
        assert mg.inlined(name).shape == shape
    assert mg.inlined("W_V") == mg.inputs["X"].T * mg.forward["A"].T * mg.inputs["G"] * mg.inputs["W_O"].T


# ------------------------------------------------------------------------------ softmax Jacobian
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_softmax_jacobian_derived_rank_and_rows(n):
    jac = derive_softmax_jacobian(n)
    assert jac.proven and jac.rank == n - 1
    assert jac.row_sums == sp.zeros(n, 1)
    a = softmax_output_symbols(n)
    if n > 1:  # the leading minor is the product of all a_i on the simplex: positive, so rank >= n - 1
        product = sp.Mul(*a[:-1]) * (1 - sp.Add(*a[:-1]))
        assert sp.expand(jac.minor_determinant - product) == 0


def test_softmax_jacobian_against_numbers():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(4)
    softmax = lambda v: np.exp(v - v.max()) / np.exp(v - v.max()).sum()
    a = softmax(z)
    J = np.array(softmax_jacobian(4).xreplace(dict(zip(softmax_output_symbols(4), a, strict=True))), dtype=float)
    fd = np.column_stack([(softmax(z + 1e-6 * e) - softmax(z - 1e-6 * e)) / 2e-6 for e in np.eye(4)])
    np.testing.assert_allclose(J, fd, atol=1e-9)
    assert np.linalg.matrix_rank(J) == 3
    np.testing.assert_allclose(J.sum(axis=1), 0, atol=TOL64.atol)


def test_softmax_jacobian_twins_agree():
    from attnsym.numeric import softmax_jacobian as numeric_softmax_jacobian

    a = np.array([0.1, 0.2, 0.3, 0.4])
    symbolic = softmax_jacobian(4).xreplace(dict(zip(softmax_output_symbols(4), map(sp.Float, a), strict=True)))
    np.testing.assert_allclose(np.array(symbolic, dtype=float), numeric_softmax_jacobian(a), rtol=TOL64.rtol, atol=TOL64.atol)


def test_softmax_jacobian_bad_n():
    with pytest.raises(SpecError, match="n must be a positive integer"):
        softmax_jacobian(0)
    with pytest.raises(SpecError, match="at most 12"):
        softmax_jacobian(50)


# ------------------------------------------------------------------------------ hypernetwork view
@pytest.mark.parametrize(
    "spec", [AttentionSpec(n=2, d_model=2), AttentionSpec(n=2, d_model=2, heads=2, causal=True),
             AttentionSpec(n=2, d_model=2, positions="rope"), AttentionSpec(n=2, d_model=2, positions="alibi"),
             AttentionSpec(n=2, d_model=2, positions="sinusoidal")],
    ids=["one", "two-heads", "rope", "alibi", "sinusoidal"],
)
def test_attention_jacobian_is_frozen_plus_routing(spec):
    # with RoPE the scores read rotated queries and keys: dS/dX rotates W_Q, W_K as at each row's position
    jac = attention_input_jacobian(spec)
    rewrite = AtomRewriter()
    for f, r, t in zip(jac.frozen, jac.routing, jac.total, strict=True):
        assert sp.expand(rewrite(f) + rewrite(r) - rewrite(t)) == 0
    x = set(input_symbols("X", spec.shapes["X"]))
    assert any(e.free_symbols & x for e in jac.routing), "the extra term depends on the input"
    assert any(e != 0 for e in jac.routing)
    # the readable form (weights as symbols alpha) is the same Jacobian once alpha = A(X)
    readable = attention_input_jacobian(spec, weights="symbols")
    A_heads = attention(spec).A_heads
    tags = [""] if spec.heads == 1 else [f"^{{({h + 1})}}" for h in range(spec.heads)]
    alpha = {sp.Symbol(rf"\alpha{tag}_{{{i + 1},{j + 1}}}", positive=True): A[i, j]
             for tag, A in zip(tags, A_heads, strict=True) for i in range(spec.n) for j in range(spec.n)}
    for sym_form, explicit in zip(readable.routing, jac.routing, strict=True):
        assert sp.expand(rewrite(sym_form.xreplace(alpha)) - rewrite(explicit)) == 0


def test_mlp_jacobian_is_constant_in_x():
    J = mlp_input_jacobian((3, 2))
    W = input_symbols("W", (2, 2))
    assert J == sp.ImmutableMatrix(sp.kronecker_product(sp.eye(3), W.T))
    assert not any(str(s).startswith("x") for s in J.free_symbols)


# ------------------------------------------------------------------------------ derivation steps
def test_backward_steps_evaluate_to_the_gradients():
    """Chain the explicit step equations numerically (single head, no W_O) and compare with lambdify."""
    spec = AttentionSpec(n=2, d_model=2)
    steps = {s.title: s for s in gradient_steps(spec)}
    arrays = random_arrays(spec, seed=5)
    ref = ref_attention(_kwargs(spec), arrays)
    env = {}

    def put(letter, M):
        for i in range(M.shape[0]):
            for j in range(M.shape[1]):
                env[sp.Symbol(f"{letter}_{{{i + 1},{j + 1}}}", real=True)] = M[i, j]

    for name in ("X", "W_Q", "W_K", "W_V"):
        env.update(zip(input_symbols(name, spec.shapes[name]), arrays[name].ravel(), strict=True))
    put("g", arrays["G"])
    put(r"\alpha", ref["A_heads"][0])
    put("v", ref["V"])
    put("q", ref["Q"])
    put("k", ref["K"])

    def rhs(title, index=0):
        return np.array(steps[title].equations[index].rhs.xreplace(env), dtype=float)

    put(r"\bar{a}", rhs("Attention weights"))
    put(r"\bar{s}", rhs("Scores"))
    put(r"\bar{q}", rhs("Queries and keys", 0))
    put(r"\bar{k}", rhs("Queries and keys", 1))
    put(r"\bar{v}", rhs("Values"))
    got = gradients(spec).lambdify()(**arrays)
    np.testing.assert_allclose(rhs("Projection weights", 0), got["W_Q"], rtol=TOL64.rtol)
    np.testing.assert_allclose(rhs("Projection weights", 2), got["W_V"], rtol=TOL64.rtol)
    np.testing.assert_allclose(rhs("Input"), got["X"], rtol=TOL64.rtol)


def test_derive_gradients_renders():
    d = at.derive(AttentionSpec(n=2, d_model=2, heads=2, bias=True), what="gradients")
    titles = [s.title for s in d]
    assert titles[:3] == ["Loss and upstream gradient", "Output projection", "Values"]
    assert "Softmax Jacobian" in titles and titles[-1] == "Input"
    assert r"\operatorname{diag}(a) - a a^\top" in d.to_latex()


# ------------------------------------------------------------------------------ guard and errors
def test_size_guard_refuses_before_building():
    huge = AttentionSpec(n=4096, d_model=4096)  # building anything at this size would never finish
    for call in (lambda: gradients(huge), lambda: gradients(huge, method="elementwise"),
                 lambda: check_gradients(huge), lambda: gradient_steps(huge)):
        with pytest.raises(SizeLimitError, match=r"attnsym\.numeric\.attention_vjp") as info:
            call()
        assert "terms" in str(info.value) and "max_terms" in str(info.value)
    with pytest.raises(SizeLimitError, match="input Jacobian"):
        attention_input_jacobian(AttentionSpec(n=5, d_model=5))
    with pytest.raises(SizeLimitError, match="elementwise"):
        gradients(AttentionSpec(n=5, d_model=5), method="elementwise")
    assert gradients(AttentionSpec(n=3, d_model=2), max_terms=float("inf"))["X"].shape == (3, 2)


def test_result_is_a_mapping_of_input_shapes():
    spec = AttentionSpec(n=3, d_model=4, heads=2, bias=True)
    g = gradients(spec)
    assert list(g) == ["X", *spec.parameter_names]
    for name, matrix in g.items():
        assert matrix.shape == spec.shapes[name]
    assert g.G == input_symbols("G", (3, 4))
    with pytest.raises(KeyError, match="no gradient for 'W_X'"):
        g["W_X"]
    assert list(gradients(spec, wrt="W_V")) == ["W_V"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(wrt="W_O"), "'W_O', which is not an input"),
        (dict(wrt=()), "at least one input"),
        (dict(method="naive"), "method must be one of"),
        (dict(loss="sum(Y)"), "strings are never parsed"),
        (dict(loss=lambda Y: Y), "scalar SymPy expression"),
        (dict(loss=sp.Symbol("x_{1,1}", real=True)), "input symbols"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(SpecError, match=match):
        gradients(AttentionSpec(n=2, d_model=2), **kwargs)


def test_lambdified_bad_arguments():
    f = gradients(AttentionSpec(n=2, d_model=2), wrt="X").lambdify()
    ok = dict(X=np.ones((2, 2)), W_Q=np.eye(2), W_K=np.eye(2), W_V=np.eye(2), G=np.ones((2, 2)))
    with pytest.raises(SpecError, match=r"missing \['G'\]"):
        f(**{k: v for k, v in ok.items() if k != "G"})
    with pytest.raises(ShapeError, match=r"W_Q must have shape \(\.\.\., 2, 2\) \(got \(3, 2\)\)"):
        f(**{**ok, "W_Q": np.ones((3, 2))})
    with pytest.raises(SpecError, match="modules must be"):
        gradients(AttentionSpec(n=2, d_model=2), wrt="X").lambdify(modules="jax")
    with pytest.raises(SpecError, match="spec must be an AttentionSpec"):
        gradients({"n": 2})


@pytest.mark.gpu
def test_cupy_lambdify_matches_numpy():
    cp = pytest.importorskip("cupy")
    try:
        cp.zeros(1)
    except Exception:  # CuPy installed but no usable device
        pytest.skip("no CUDA device")
    spec = AttentionSpec(n=3, d_model=2, causal=True)
    g = gradients(spec)
    arrays = random_arrays(spec, seed=2, batch=(2,))
    on_gpu = g.lambdify(modules="cupy")(**{k: cp.asarray(v) for k, v in arrays.items()})
    on_cpu = g.lambdify()(**arrays)
    for name in g:
        np.testing.assert_allclose(cp.asnumpy(on_gpu[name]), on_cpu[name], rtol=TOL64.rtol, atol=TOL64.atol)


def test_docs_page_generates(tmp_path, monkeypatch):
    """docs/gen/gradients.py builds the "Gradients of attention" page; every verdict on it holds."""
    import builtins
    import runpy
    import sys
    import types
    from pathlib import Path

    stub = types.ModuleType("mkdocs_gen_files")
    stub.open = lambda name, mode="r": builtins.open(tmp_path / name, mode)
    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", stub)
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "docs" / "gen" / "gradients.py"), run_name="__main__")
    page = (tmp_path / "gradients.md").read_text(encoding="utf-8")
    assert page.startswith("# Gradients of attention")
    assert "**False**" not in page and page.count("**True**") >= 6
    assert r"\operatorname{diag}(a) - a a^\top" in page
