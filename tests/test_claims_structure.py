"""Structure claims: qk-asymmetry, permutation-equivariance, no-locality-bias.

Each claim is verified through the engine, and each check is run with a deliberately false
statement that it must report as failing.
"""

import pytest

from attnsym.claims import CheckContext, verify
from attnsym.claims.builtin import structure

QUICK = CheckContext(seed=0, quick=True)


@pytest.mark.parametrize("claim_id", ["qk-asymmetry", "permutation-equivariance", "no-locality-bias"])
def test_claim_verdicts(claim_id):
    ev = verify(claim_id, quick=True, strict=True)
    assert ev.verdict == "holds-under-conditions" and ev.as_expected
    assert ev.conditions and ev.summary


def test_permutation_conditions_name_positions_and_mask():
    ev = structure.check_permutation_equivariance(QUICK)
    text = " ".join(ev.conditions)
    assert "sinusoidal positions" in text and "causal mask" in text
    rows = {(r.positions, r.causal): r.holds for r in ev.details["configurations"]}
    assert rows == {(None, False): True, ("sinusoidal", False): False, (None, True): False}


def test_locality_profiles():
    ev = structure.check_locality(QUICK)
    conv, att = ev.details["profiles"][:2]
    assert conv.local and conv.shift_equivariant and not conv.permutation_equivariant
    assert not att.local and att.permutation_equivariant
    assert att.global_dependency
    assert ev.details["banded mask |i − j| ≤ 1: dependency window"] == 1  # restricted attention is local again


def test_qk_cases():
    ev = structure.check_qk_symmetry(QUICK)
    cases = {c["weights"]: c["QKᵀ symmetric for all X"] for c in ev.details["cases"]}
    assert cases["W_K = W_Q"] and cases["W_K = W_Q R, R symmetric"] and not cases["generic symbolic W_Q, W_K"]


@pytest.mark.parametrize(("check", "wrong"), [
    # "Q Kᵀ is symmetric exactly when W_Q = W_K" (misses W_K = W_Q R with R symmetric)
    (structure.check_qk_symmetry, {"criterion": lambda a, b: a == b, "criterion_text": "W_Q = W_K"}),
    # "attention stays permutation-equivariant with sinusoidal positions" / "with a causal mask"
    (structure.check_permutation_equivariance, {"positions": "sinusoidal", "explore": False}),
    (structure.check_permutation_equivariance, {"causal": True, "explore": False}),
    # "a convolution has no locality bias either"
    (structure.check_locality, {"layer": "conv"}),
])
def test_false_statements_fail(check, wrong):
    assert check(QUICK, **wrong).verdict == "fails"


def test_bad_arguments():
    with pytest.raises(ValueError, match="layer must be 'attention', 'banded-attention' or 'conv'"):
        structure.check_locality(QUICK, layer="rnn")
    with pytest.raises(ValueError, match="positions must be None or 'sinusoidal'"):
        structure.check_locality(QUICK, positions="rotary")


def test_qk_symmetry_condition_names_the_biases():
    # S = (X W_Q + 1 b_Q)(X W_K + 1 b_K)ᵀ: symmetric for all X iff M = W_Q W_Kᵀ symmetric and W_Q b_Kᵀ = W_K b_Qᵀ
    import numpy as np

    ev = structure.check_qk_symmetry(QUICK)
    assert ev.verdict == "holds-under-conditions"
    biased = ev.details["QKᵀ symmetric for all X, with biases (exact)"]
    assert biased == {"W_K = W_Q, separate biases b_Q, b_K": False, "W_K = W_Q, shared bias b_K = b_Q": True}
    assert any("W_Q b_Kᵀ = W_K b_Qᵀ" in c for c in ev.conditions)
    rng = np.random.default_rng(3)
    X, W = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    R = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 1.0]])  # symmetric
    b_Q, b_K = rng.standard_normal(3), rng.standard_normal(3)

    def asym(WQ, WK, bq, bk):
        S = (X @ WQ + bq) @ (X @ WK + bk).T
        return np.abs(S - S.T).max()

    assert asym(W, W, b_Q, b_K) > 1e-3                # tied weights, different biases: not symmetric
    assert asym(W, W @ R, b_Q, b_Q @ R) < 1e-12       # M symmetric and W_Q b_Kᵀ = W_K b_Qᵀ with b_K ≠ b_Q
    assert asym(W, W @ R, b_Q, b_Q) > 1e-3            # M symmetric alone is not enough
