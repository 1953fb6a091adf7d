"""The input Jacobian split into the routing term (∂A/∂X)V and the value term A ∂V/∂X."""

import numpy as np
import pytest
import sympy as sp

from attnsym import AttentionSpec
from attnsym.errors import SpecError
from attnsym.numeric import attention
from attnsym.symbolic.routing_jacobian import mlp_input_jacobian, split_input_jacobian


def test_value_term_by_hand_d1():
    """d_model = 1: Y_i = Σ_j A_ij x_j w_V, so with A frozen ∂Y_i/∂x_j = A_ij w_V."""
    J = split_input_jacobian(AttentionSpec(n=2, d_model=1))
    from attnsym.symbolic import attention as sym_attention

    sym = sym_attention(AttentionSpec(n=2, d_model=1))
    w = sym.W_V[0, 0]
    assert J.value_term == sym.A * w
    assert J.depends_on_input("routing_term")


def test_total_matches_finite_differences():
    spec = AttentionSpec(n=2, d_model=2)
    J = split_input_jacobian(spec)
    from attnsym.symbolic import attention as sym_attention

    sym = sym_attention(spec)
    rng = np.random.default_rng(0)
    vals = {name: rng.standard_normal(spec.shapes[name]) for name in ("X", "W_Q", "W_K", "W_V")}
    point = {s: v for name, M in sym.inputs.items() for s, v in zip(M, vals[name].ravel(), strict=True)}
    total = np.array(J.total.evalf(20, subs=point), dtype=float)
    f = lambda X: attention(X, vals["W_Q"], vals["W_K"], vals["W_V"], return_weights=False).ravel()
    h, fd = 1e-6, np.zeros((4, 4))
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        fd[:, k] = (f(vals["X"] + e.reshape(2, 2)) - f(vals["X"] - e.reshape(2, 2))) / (2 * h)
    np.testing.assert_allclose(total, fd, rtol=1e-6, atol=1e-8)
    routing = total - np.array(J.value_term.evalf(20, subs=point), dtype=float)
    assert np.max(np.abs(routing)) > 1e-6


def test_mlp_jacobian_is_kron():
    X, J = mlp_input_jacobian(2, 2, 3)
    from attnsym.symbolic.naming import input_symbols

    W = input_symbols("W", (2, 3))
    # row-major vec(X W) = (I ⊗ Wᵀ) vec(X)
    assert J == sp.kronecker_product(sp.eye(2), W.T)
    assert not (J.free_symbols & set(X))


@pytest.mark.parametrize("spec", [AttentionSpec(n=2, d_model=2, heads=2), AttentionSpec(n=4, d_model=3),
                                  AttentionSpec(n=2, d_model=1, output_projection=True)])
def test_errors(spec):
    with pytest.raises(SpecError):
        split_input_jacobian(spec)
