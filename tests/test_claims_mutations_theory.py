"""The theory claims of :mod:`attnsym.claims.builtin.literature_theory`: each holds, and each fails on a mutation.

A mutation breaks the *code* a claim checks (a layer's scores, a feature map, a recurrence, a
moment) with ``monkeypatch`` and runs the registered check in quick mode: a check that compared
attnsym only with itself would not notice. One entry per mutation.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import sympy as sp
from figure_checks import layout_problems

from attnsym.claims import CLAIMS, CheckContext
from attnsym.numeric import performer as numeric_performer
from attnsym.spec import AttentionSpec
from attnsym.symbolic import kernel_smoother as symbolic_kernel
from attnsym.symbolic import linear_attention as symbolic_linear
from attnsym.symbolic import lipschitz as symbolic_lipschitz
from attnsym.symbolic import mup as symbolic_mup
from attnsym.symbolic import performer as symbolic_performer
from attnsym.symbolic.matrices import attention as symbolic_attention

QUICK = CheckContext(quick=True)
THEORY = ("not-lipschitz", "kernel-smoother", "performer-unbiased", "linear-attention-rnn", "mup-scaling")


def _kim_l2_scores(monkeypatch):
    """Kim et al.'s L2 attention scores −c‖x_i W_Q − x_j W_Q‖², W_K tied to W_Q (the variant they prove Lipschitz)."""

    def layer(spec):
        real = symbolic_attention(spec)
        Q, V = real.X * real.W_Q, real.X * real.W_V
        n = spec.n
        S = sp.Matrix(n, n, lambda i, j: -spec.scale_expr * sum((Q[i, c] - Q[j, c]) ** 2 for c in range(Q.shape[1])))
        E = S.applyfunc(sp.exp)
        A = sp.Matrix(n, n, lambda i, j: E[i, j] / sum(E[i, :]))
        return types.SimpleNamespace(X=real.X, W_Q=real.W_Q, W_K=real.W_K, W_V=real.W_V, Y=A * V)

    monkeypatch.setattr(symbolic_lipschitz, "attention", layer)


def _scale_one_over_d(monkeypatch):
    """The score scale 1/d_k instead of 1/√d_k (equal at d = 1: quick mode must look at d > 1)."""
    monkeypatch.setattr(AttentionSpec, "scale_expr", property(lambda self: sp.Integer(1) / self.d_k))
    monkeypatch.setattr(AttentionSpec, "scale_float", property(lambda self: 1.0 / self.d_k))


def _kernel_weights_swapped(monkeypatch):
    """The symbolic kernel built as exp(c·x_i W_K (x_j W_Q)ᵀ): query and key weights swapped."""
    original = symbolic_kernel.log_kernel_matrix
    monkeypatch.setattr(symbolic_kernel, "log_kernel_matrix", lambda X, W_Q, W_K, scale: original(X, W_K, W_Q, scale))


def _feature_normaliser_symbolic(monkeypatch):
    """The symbolic positive feature exp(ωᵀx − ‖x‖²) (normaliser squared: a biased estimate)."""
    monkeypatch.setattr(symbolic_performer, "positive_feature",
                        lambda x, omega: sp.exp(sp.Matrix(omega).dot(sp.Matrix(x)) - sp.Matrix(x).dot(sp.Matrix(x))))


def _feature_normaliser_numeric(monkeypatch):
    """The float64 positive features exp(Ωx − ‖x‖²)/√m (the symbolic one stays right)."""
    def features(X, omega):
        X, omega = np.asarray(X, dtype=float), np.asarray(omega, dtype=float)
        return np.exp(X @ np.swapaxes(omega, -1, -2) - np.sum(X * X, axis=-1, keepdims=True)) / np.sqrt(omega.shape[-2])

    monkeypatch.setattr(numeric_performer, "positive_random_features", features)


def _state_read_before_update(monkeypatch):
    """The symbolic recurrence reading (S_{i−1}, z_{i−1}) for token i and adding token i afterwards."""
    def recurrent(Phi_Q, Phi_K, V):
        Phi_Q, Phi_K, V = sp.Matrix(Phi_Q), sp.Matrix(Phi_K), sp.Matrix(V)
        S, z = Phi_K[0, :].T * V[0, :], Phi_K[0, :].T  # token 1 reads itself (else 0/0); later tokens lag by one
        rows = []
        for i in range(Phi_Q.shape[0]):
            rows.append((Phi_Q[i, :] * S) / (Phi_Q[i, :] * z)[0, 0])
            if i:
                S, z = S + Phi_K[i, :].T * V[i, :], z + Phi_K[i, :].T
        return sp.Matrix.vstack(*rows)

    monkeypatch.setattr(symbolic_linear, "recurrent_linear_attention", recurrent)


def _fourth_moment_one(monkeypatch):
    """Standard-normal moments with E[z⁴] = 1 (every even moment 1, as for a Rademacher variable)."""
    monkeypatch.setattr(symbolic_mup, "normal_moment", lambda k: 0 if k % 2 else 1)


#: (claim id, mutation, what it breaks)
MUTATIONS = [
    ("not-lipschitz", _kim_l2_scores, "Kim et al.'s L2 scores (W_K tied to W_Q) in the symbolic layer"),
    ("not-lipschitz", _scale_one_over_d, "score scale 1/d instead of 1/√d"),
    ("kernel-smoother", _kernel_weights_swapped, "kernel with W_K W_Qᵀ"),
    ("performer-unbiased", _feature_normaliser_symbolic, "symbolic feature normaliser exp(−‖x‖²)"),
    ("performer-unbiased", _feature_normaliser_numeric, "numeric feature normaliser exp(−‖x‖²)"),
    ("linear-attention-rnn", _state_read_before_update, "state read before adding token i"),
    ("mup-scaling", _fourth_moment_one, "Gaussian fourth moment 1 instead of 3"),
]


@pytest.mark.parametrize("claim_id", THEORY)
def test_each_theory_claim_holds_with_a_measured_summary(claim_id):
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "holds", ev.summary
    assert "FAILED" not in ev.summary and ev.figures


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", THEORY)
def test_each_theory_claim_holds_in_full_mode(claim_id):
    ev = CLAIMS[claim_id].check(CheckContext(quick=False))
    assert ev.verdict == "holds", ev.summary


@pytest.mark.parametrize(("claim_id", "mutate", "what"), MUTATIONS, ids=[f"{c}: {w}" for c, _, w in MUTATIONS])
def test_mutation_fails_the_claim(monkeypatch, claim_id, mutate, what):
    mutate(monkeypatch)
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "fails", f"{claim_id} under the mutation '{what}' came out {ev.verdict}: {ev.summary}"
    assert "FAILED" in ev.summary  # the summary says which measured fact broke


def test_every_theory_claim_has_a_mutation():
    assert set(THEORY) == {c for c, _, _ in MUTATIONS}


@pytest.mark.parametrize("claim_id", THEORY)
def test_theory_figures_read_cleanly(claim_id):
    ev = CLAIMS[claim_id].check(QUICK)
    for name, build in ev.figures.items():
        assert layout_problems(build(), f"{claim_id}: {name}") == []


def test_not_lipschitz_witness_matches_a_hand_computed_number():
    """At t = 2, unit weights: ½ + 2²/4 = 3/2 from the symbolic layer, and the numeric layer agrees."""
    from attnsym.numeric.lipschitz import input_jacobians

    assert symbolic_lipschitz.witness_jacobian(1, 2, weights={"W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]})[0, 0] == \
        sp.Rational(3, 2)
    X = np.array([[[0.0], [2.0]]])
    assert input_jacobians(X, np.eye(1), np.eye(1), np.eye(1))[0, 0, 0] == pytest.approx(1.5, rel=1e-7)


# ----------------------------------------------------------------------------- the twins agree
def test_numeric_linear_attention_forms_match_the_exact_ones():
    from attnsym.numeric import linear_attention as numeric_linear

    Phi, Psi, V = [[1, 2], [3, 1], [2, 2]], [[2, 1], [1, 1], [1, 3]], [[1, -1], [0, 2], [5, 1]]
    exact = np.array(symbolic_linear.causal_linear_attention(Phi, Psi, V), dtype=float)
    for form in (numeric_linear.causal_linear_attention, numeric_linear.recurrent_linear_attention):
        np.testing.assert_allclose(form(np.array(Phi, float), np.array(Psi, float), np.array(V, float)), exact,
                                   rtol=1e-14)
    assert symbolic_linear.causal_linear_attention(Phi, Psi, V)[1, 0] == sp.Rational(7 * 1 + 4 * 0, 11)


def test_numeric_kernel_smoother_matches_the_exact_one():
    from attnsym.numeric import kernel_smoother as numeric_kernel

    X, W_Q, W_K = [[1, 0], [0, 1], [1, -1]], [[1, 2], [0, 1]], [[0, 1], [1, 1]]
    exact = np.array(symbolic_kernel.kernel_smoother_weights(X, W_Q, W_K, sp.Rational(1, 2)).evalf(), dtype=float)
    numeric = numeric_kernel.kernel_smoother_weights(np.array(X, float), np.array(W_Q, float), np.array(W_K, float), 0.5)
    np.testing.assert_allclose(numeric, exact, rtol=1e-13)


def test_numeric_positive_features_match_the_exact_ones():
    x, omega = [0.5, -0.25], [[1.0, 2.0], [-0.5, 0.75]]
    numeric = numeric_performer.positive_random_features(np.array([x]), np.array(omega))[0]
    exact = [float(symbolic_performer.positive_feature(x, w)) / np.sqrt(2) for w in omega]
    np.testing.assert_allclose(numeric, exact, rtol=1e-14)


def test_normal_moments_are_the_double_factorials():
    z = sp.Symbol("z", real=True)
    assert [symbolic_mup.normal_moment(k) for k in (0, 2, 4, 6, 8)] == [1, 1, 3, 15, 105]
    assert symbolic_mup.normal_expectation((1 + z) ** 4, (z,)) == 1 + 6 + 3


# ----------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_errors_naming_the_argument():
    from attnsym.errors import AttnsymError

    with pytest.raises(AttnsymError, match="weights may name W_Q, W_K, W_V"):
        symbolic_lipschitz.witness_jacobian(1, 2, weights={"X": [[1]]})
    w = sp.symbols("w_1:3", real=True)
    with pytest.raises(AttnsymError, match="not affine"):
        symbolic_performer.gaussian_exp_expectation(sp.exp(w[0] ** 2), w)
    with pytest.raises(AttnsymError, match="Phi_Q, Phi_K must be"):
        symbolic_linear.causal_linear_attention([[1, 2]], [[1]], [[1]])
    with pytest.raises(AttnsymError, match="variables must be SymPy symbols"):
        symbolic_mup.normal_expectation(1, [1])


def test_numeric_bad_inputs_raise_errors_naming_the_argument():
    from attnsym.errors import AttnsymError
    from attnsym.numeric import kernel_smoother as numeric_kernel
    from attnsym.numeric import linear_attention as numeric_linear
    from attnsym.numeric import mup as numeric_mup

    with pytest.raises(AttnsymError, match="W_Q and W_K must both be"):
        numeric_kernel.kernel_matrix(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 1.0)
    with pytest.raises(AttnsymError, match="omega"):
        numeric_performer.positive_random_features(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(AttnsymError, match="Phi_Q, Phi_K must be"):
        numeric_linear.recurrent_linear_attention(np.ones((2, 2)), np.ones((3, 2)), np.ones((2, 1)))
    with pytest.raises(AttnsymError, match="X contains non-finite"):
        numeric_kernel.kernel_smoother_weights(np.full((2, 2), np.nan), np.eye(2), np.eye(2), 1.0)
    with pytest.raises(AttnsymError, match="rho must lie in"):
        numeric_mup.correlated_logits(np.random.default_rng(0), 4, 10, 1.5, 1.0)
