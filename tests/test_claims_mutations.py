"""Mutations of the implementation under test (not of the claim): each must turn its claim's verdict to "fails".

Where :mod:`tests.test_claims_false_variants` feeds a check a false *statement*, these tests
break the *code* a claim checks (a slope rule, a scale, a wiring) with ``monkeypatch`` and run
the registered check in quick mode: a check that compares attnsym only with itself would not
notice. One entry per mutation; the report's table of mutations is this list.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import attnsym.numeric.positions as numeric_positions
import attnsym.spec as spec_module
from attnsym.claims import CLAIMS, CheckContext
from attnsym.claims.builtin import positions, primitives, rank_collapse, softmax_limits
from attnsym.numeric import rank_collapse as numeric_rank_collapse
from attnsym.numeric import sink as numeric_sink
from attnsym.spec import AttentionSpec
from attnsym.symbolic import sink as symbolic_sink
from attnsym.symbolic import softcap as softcap_module

QUICK = CheckContext(quick=True)


def _wrong_alibi_rule(monkeypatch):
    """ALiBi slopes 2^(−4h/H) instead of the paper's rule, everywhere attnsym reads it."""
    rule = lambda heads: tuple(Fraction(4 * (h + 1), heads) for h in range(heads))
    for module in (numeric_positions, spec_module, positions):
        monkeypatch.setattr(module, "alibi_slope_exponents", rule)


def _power_of_two_rule_everywhere(monkeypatch):
    """ALiBi slopes 2^(−8h/H) for every H (the statement's old formula, wrong for H not a power of two)."""
    rule = lambda heads: tuple(Fraction(8 * (h + 1), heads) for h in range(heads))
    for module in (numeric_positions, spec_module, positions):
        monkeypatch.setattr(module, "alibi_slope_exponents", rule)


def _symbolic_scale_dropped(monkeypatch):
    """The symbolic layer without 1/√d_k (the numeric layer keeps it)."""
    monkeypatch.setattr(AttentionSpec, "scale_expr", property(lambda self: sp.Integer(1)))


def _mlp_with_a_skip(monkeypatch):
    """The attention + MLP stack wired with a residual connection (so it no longer collapses)."""
    original = numeric_rank_collapse.collapse_run

    def run(architecture, X, depth, rng, **kw):
        return original("attention+skip" if architecture == "attention+mlp" else architecture, X, depth, rng, **kw)

    monkeypatch.setattr(rank_collapse, "collapse_run", run)


def _skip_dropped(monkeypatch):
    """The skip connection dropped from the attention + skip stack."""
    original = numeric_rank_collapse.collapse_run

    def run(architecture, X, depth, rng, **kw):
        return original("attention" if architecture == "attention+skip" else architecture, X, depth, rng, **kw)

    monkeypatch.setattr(rank_collapse, "collapse_run", run)


def _two_point_norm_linear(monkeypatch):
    """The derived two-point norm replaced by p (no critical point: the check used to crash)."""
    monkeypatch.setattr(softmax_limits, "two_point_jacobian_norm", lambda p: p)


def _entropy_bound_scaled(monkeypatch):
    """Zhai et al.'s bound implemented 10% too high."""
    original = softmax_limits.entropy_lower_bound
    monkeypatch.setattr(softmax_limits, "entropy_lower_bound", lambda s, T: original(s, T) * sp.Rational(11, 10))


def _rope_bound_flat(monkeypatch):
    """RoPE's relative bound computed as a constant (no decay)."""
    original = positions.rope_decay_bound
    monkeypatch.setattr(positions, "rope_decay_bound", lambda spec, distance: np.full(np.shape(distance),
                                                                                      original(spec, distance)[0]))


def _softcap_rational(monkeypatch):
    """Soft-capping implemented as ℓc/(c + |ℓ|) (bounded, increasing, but not within |ℓ|³/(3c²))."""
    monkeypatch.setattr(softcap_module, "softcap", lambda logit, cap: logit * cap / (cap + sp.Abs(logit)))


def _softmax_one_without_the_one(monkeypatch):
    """softmax₁ implemented as plain softmax (the 1 of the denominator dropped), symbolic and numeric."""
    monkeypatch.setattr(symbolic_sink, "softmax_one", lambda x: x.applyfunc(sp.exp) / sum(x.applyfunc(sp.exp)))
    monkeypatch.setattr(numeric_sink, "softmax_one",
                        lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True))
                        / np.exp(x - x.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=True))


def _softmax_one_unshifted_zero(monkeypatch):
    """Numeric softmax₁ shifted by max x alone (the 1 not rescaled: wrong weights for large logits)."""
    monkeypatch.setattr(numeric_sink, "softmax_one",
                        lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True))
                        / (1 + np.exp(x - x.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=True)))


def _log_n_plus_one(monkeypatch):
    """Scalable softmax with log(n + 1) instead of log n."""
    from attnsym.claims.builtin import literature
    from attnsym.numeric.forward import softmax

    monkeypatch.setattr(literature, "scalable_softmax",
                        lambda z, s: np.asarray(softmax(s * np.log(np.shape(z)[-1] + 1) * np.asarray(z))))


def _dispersion_softmax_sharpened(monkeypatch):
    """The softmax the dispersion check evaluates, with logits scaled by 1.01."""
    original = softmax_limits.softmax
    monkeypatch.setattr(softmax_limits, "softmax", lambda z, *a, **kw: original(np.asarray(z) * 1.01, *a, **kw))


def _numeric_jacobian_diagonal(monkeypatch):
    """The numeric softmax Jacobian as diag(a) (the −a aᵀ term dropped)."""
    monkeypatch.setattr(primitives, "num_jacobian",
                        lambda a: np.eye(np.shape(a)[-1]) * np.asarray(a)[..., None, :])


def _gelu_tanh_coefficient(monkeypatch):
    """The numeric tanh approximation of GELU with 0.05 instead of 0.044715."""
    monkeypatch.setattr(primitives, "num_gelu_tanh",
                        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.05 * np.asarray(x) ** 3))))


#: (claim id, mutation, what it breaks)
MUTATIONS = [
    ("alibi-recency", _wrong_alibi_rule, "slopes 2^(−4h/H)"),
    ("alibi-recency", _power_of_two_rule_everywhere, "slopes 2^(−8h/H) for every H (no interleave)"),
    ("multi-head", _symbolic_scale_dropped, "symbolic layer without 1/√d_k"),
    ("rank-collapse", _mlp_with_a_skip, "MLP stack wired with a skip"),
    ("rank-collapse", _skip_dropped, "skip connection dropped"),
    ("dispersion", _dispersion_softmax_sharpened, "softmax of 1.01·z"),
    ("softmax-jacobian", _numeric_jacobian_diagonal, "numeric Jacobian diag(a)"),
    ("gelu", _gelu_tanh_coefficient, "tanh approximation with 0.05"),
    ("softmax-jacobian-norm", _two_point_norm_linear, "two-point norm without a critical point"),
    ("entropy-lower-bound", _entropy_bound_scaled, "bound 10% too high"),
    ("rope-long-range-decay", _rope_bound_flat, "flat relative bound"),
    ("length-scaling", _log_n_plus_one, "log(n + 1) instead of log n"),
    ("off-by-one-sink", _softmax_one_without_the_one, "softmax₁ without the 1"),
    ("off-by-one-sink", _softmax_one_unshifted_zero, "numeric softmax₁ with the 1 not rescaled by the shift"),
    ("softcap-facts", _softcap_rational, "capping ℓc/(c + |ℓ|)"),
]


@pytest.mark.parametrize(("claim_id", "mutate", "what"), MUTATIONS, ids=[f"{c}: {w}" for c, _, w in MUTATIONS])
def test_mutation_fails_the_claim(monkeypatch, claim_id, mutate, what):
    assert CLAIMS[claim_id].check(QUICK).verdict != "fails"  # unmutated, the claim holds
    mutate(monkeypatch)
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "fails", f"{claim_id} under the mutation '{what}' came out {ev.verdict}: {ev.summary}"
    assert ev.summary  # a summary built from the measured values, not a crash
