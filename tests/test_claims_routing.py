"""Routing claims: dynamic-routing, hypernetwork-view, two-token-example, weights-not-preset, multi-head.

Each claim is verified through the engine, and each check is run with a deliberately false
statement that it must report as failing.
"""

import numpy as np
import pytest
import sympy as sp

from attnsym.claims import CheckContext, verify
from attnsym.claims.builtin import multi_head, routing
from attnsym.errors import SpecError

QUICK = CheckContext(seed=0, quick=True)


@pytest.mark.parametrize(("claim_id", "verdict"), [
    ("dynamic-routing", "holds"),
    ("hypernetwork-view", "holds"),
    ("two-token-example", "holds"),
    ("weights-not-preset", "holds"),
    ("multi-head", "holds-under-conditions"),
])
def test_claim_verdicts(claim_id, verdict):
    ev = verify(claim_id, quick=True, strict=True)
    assert ev.verdict == verdict and ev.as_expected
    assert ev.claim == claim_id and ev.summary and ev.method
    if verdict == "holds-under-conditions":
        assert ev.conditions


def test_dynamic_routing_evidence():
    ev = routing.check_dynamic_routing(QUICK)
    assert ev.details["control (X₁ = X₂) distance"] == 0.0
    assert all(p["attention distance"] > 0 and p["MLP graphs identical"] for p in ev.details["pairs"])


def test_two_token_numbers():
    ev = routing.check_two_token(QUICK)
    R = sp.Rational  # exact SymPy numbers, rendered as math by the report
    assert ev.details["exact routings"] == [(R(1, 10), R(9, 10)), (R(19, 20), R(1, 20))]
    assert ev.details["static mixer rows"] == [(R(7, 10), R(3, 10))] * 2
    other = routing.check_two_token(QUICK, routings=((0.3, 0.7), (0.6, 0.4)), mixing=(0.5, 0.5))
    assert other.verdict == "holds"


def test_multi_head_counts_are_four_d_squared():
    ev = multi_head.check_multi_head(QUICK)
    assert {r["parameters"] for r in ev.details["parameter counts"]} == {4 * 8**2}


def test_multi_head_against_torch_multihead_attention():
    pytest.importorskip("torch")
    ev = multi_head.check_multi_head(QUICK, reference="torch")
    assert ev.verdict == "holds-under-conditions"
    assert "against torch.nn.MultiheadAttention" in ev.method
    assert all(r["torch.nn.MultiheadAttention parameters"] == r["parameters"] == 4 * 8**2
               for r in ev.details["parameter counts"])
    for key in ("max |Y − Y_torch|", "max |concat·W_O − Y_torch|", "max |A − A_torch| (per head)"):
        assert ev.details[key] < 1e-13, key
    # what was true by construction is now checked against PyTorch: only the arithmetic identity and SymPy-vs-SymPy stay
    assert not any("single-head layer on weight columns" in t for t in ev.by_construction)
    assert any("h·(d/h) = d" in t for t in ev.by_construction)
    # full mode uses PyTorch by itself when it is installed
    full = multi_head.check_multi_head(CheckContext(seed=0, quick=False))
    assert "against torch.nn.MultiheadAttention" in full.method and full.verdict == "holds-under-conditions"


def test_only_the_torch_reference_sees_a_wrong_scale():
    """Scaling by 1/√d_model instead of 1/√d_k: attnsym against attnsym agrees with itself, PyTorch does not."""
    pytest.importorskip("torch")
    wrong = 1 / np.sqrt(8)
    # the paper's formula written apart (numeric.paper_formulas) sees it without PyTorch too
    apart = multi_head.check_multi_head(QUICK, scale=wrong, reference="none")
    assert apart.verdict == "fails" and apart.details["max |Y_numeric − Y_formula| (paper's formula written apart)"] > 1e-3
    ev = multi_head.check_multi_head(QUICK, scale=wrong, reference="torch")
    assert ev.verdict == "fails" and ev.details["max |Y − Y_torch|"] > 1e-3
    for wrong_claim in ({"d_k_of": lambda d, h: d}, {"head_order": [1, 0, 2, 3]}):
        assert multi_head.check_multi_head(QUICK, reference="torch", **wrong_claim).verdict == "fails"


def test_multi_head_without_torch_says_so(monkeypatch):
    monkeypatch.setattr(multi_head, "torch_installed", lambda: False)
    ev = multi_head.check_multi_head(CheckContext(seed=0, quick=False))
    assert ev.verdict == "holds-under-conditions" and "torch" not in ev.method
    assert "no independent reference: PyTorch is not installed" in ev.conditions
    assert any("single-head layer on weight columns" in t for t in ev.by_construction)
    quick = multi_head.check_multi_head(QUICK, reference="none")
    assert "no independent reference: reference='none'" in quick.conditions
    assert any("paper_formulas" in c for c in quick.conditions)
    with pytest.raises(SpecError, match="reference"):
        multi_head.check_multi_head(QUICK, reference="pytorch")


@pytest.mark.parametrize(("check", "wrong"), [
    (routing.check_dynamic_routing, {"mlp_changes": True}),         # "the MLP graph changes too"
    (routing.check_dynamic_routing, {"attention_changes": False}),  # "attention graphs stay the same"
    (routing.check_hypernetwork_view, {"routing_term": False}),     # "∂Y/∂X = A ∂V/∂X"
    (routing.check_two_token, {"static_changes": True}),            # "the static mixer adapts too"
    (routing.check_weights_not_preset, {"preset": True}),           # "the weights are preset"
    (multi_head.check_multi_head, {"d_k_of": lambda d, h: d}),         # "full-width heads keep the count"
])
def test_false_statements_fail(check, wrong):
    assert check(QUICK, **wrong).verdict == "fails"


def test_deterministic():
    a, b = verify("weights-not-preset", seed=3, quick=True), verify("weights-not-preset", seed=3, quick=True)
    assert a.summary == b.summary and a.details["numeric distances between inputs"] == b.details[
        "numeric distances between inputs"]
