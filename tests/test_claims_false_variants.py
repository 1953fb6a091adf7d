"""Every claim of the shipped list, fed a deliberately false variant of itself, must come out "fails".

One entry per claim id: the check function of the claim and the keywords that turn its statement
into a false one. A claim without an entry fails ``test_every_claim_has_a_false_variant``, so a
new claim cannot land with a check that has never been seen to fail.
"""

from __future__ import annotations

import pytest
import sympy as sp

from attnsym.claims import CheckContext, catalogue
from attnsym.claims.builtin import (
    cost,
    invariances,
    literature,
    literature_structure,
    literature_theory,
    multi_head,
    positions,
    primitives,
    rank_collapse,
    routing,
    saturation,
    softmax_limits,
    structure,
    table1,
    variance,
    variants_2026,
)
from attnsym.symbolic.softmax_limits import entropy_lower_bound
from attnsym.symbolic.stats import d

QUICK = CheckContext(quick=True)

#: claim id -> (check, keywords of a false variant, what the false variant says)
FALSE_VARIANTS = {
    "variance-scaling": (variance.variance_scaling_evidence, {"claimed_variance": d**2}, "Var[q·k] = d²"),
    "softmax-saturation": (saturation.check_softmax_saturation, {"saturating": "scaled"}, "1/√d scaling saturates too"),
    "dynamic-routing": (routing.check_dynamic_routing, {"mlp_changes": True}, "the MLP graph changes with X"),
    "hypernetwork-view": (routing.check_hypernetwork_view, {"routing_term": False}, "∂Y/∂X has no ∂A/∂X term"),
    "two-token-example": (routing.check_two_token, {"static_changes": True}, "the static mixer adapts"),
    "global-path-length": (table1.check_table1_column, {"column": "path", "claimed": {"self_attention": "O(n)"}},
                           "self-attention path length O(n)"),
    "parallelism": (table1.check_table1_column, {"column": "sequential", "claimed": {"recurrent": "O(1)"}},
                    "an RNN needs O(1) sequential steps"),
    "quadratic-cost": (cost.check_quadratic_cost, {"time_degree": (1, 1)}, "attention is linear in n"),
    "qk-asymmetry": (structure.check_qk_symmetry, {"criterion": lambda a, b: a == b, "criterion_text": "W_Q = W_K"},
                     "QKᵀ symmetric exactly when W_Q = W_K"),
    "permutation-equivariance": (structure.check_permutation_equivariance, {"positions": "sinusoidal", "explore": False},
                                 "equivariant with sinusoidal positions"),
    "sinusoidal-positions": (primitives.check_sinusoidal_positions, {"claimed_ratio": sp.Rational(1, 2)},
                             "frequencies halve"),
    "multi-head": (multi_head.check_multi_head, {"d_k_of": lambda dm, h: dm}, "full-width heads keep the count"),
    "weights-not-preset": (routing.check_weights_not_preset, {"preset": True}, "the weights are preset"),
    "softmax-jacobian": (primitives.check_softmax_jacobian,
                         {"claimed": lambda a: (sp.diag(*a) if isinstance(a, sp.MatrixBase) else __import__("numpy").diag(a))},
                         "the Jacobian is diag(a)"),
    "kv-cache": (cost.check_kv_cache, {"cached_degree": 0}, "constant cost per token"),
    "blockwise-exact": (cost.check_blockwise_exact, {"rescale": False}, "merge without rescaling"),
    "no-locality-bias": (structure.check_locality, {"layer": "banded-attention"}, "banded attention lacks locality"),
    "gelu": (primitives.check_gelu, {"claimed_max_error": 1e-4}, "tanh approximation within 1e-4"),
    "rank-collapse": (rank_collapse.check_rank_collapse, {"collapses": {"attention": True, "attention+skip": True}},
                      "skip connections collapse too"),
    "entropy-lower-bound": (softmax_limits.check_entropy_lower_bound,
                            {"claimed_bound": lambda s, T: entropy_lower_bound(s, T) + sp.Rational(1, 20)},
                            "the bound is 0.05 higher"),
    "key-bias-invariance": (invariances.check_key_bias_invariance, {"claimed_zero": "b_Q"}, "the query bias has no gradient"),
    "softmax-jacobian-norm": (softmax_limits.check_softmax_jacobian_norm, {"claimed_bound": 0.25}, "‖J‖ ≤ 1/4"),
    "dispersion": (softmax_limits.check_dispersion, {"claimed": {1000: 0.5}}, "top weight 0.5 at n = 1000"),
    "rank-one-input": (invariances.check_rank_one_input, {"claimed_zero": ("W_Q", "W_K", "W_V")}, "W_V gets no gradient"),
    "rope-relative": (positions.check_rope_relative, {"positions": "sinusoidal"}, "absolute sinusoids are relative"),
    "rope-shift-invariance": (positions.check_rope_shift_invariance, {"positions": "sinusoidal"},
                              "absolute sinusoids are shift invariant"),
    "rope-long-range-decay": (positions.check_rope_long_range_decay, {"subject": "monotone"},
                              "the relative score itself decays monotonically"),
    "alibi-recency": (positions.check_alibi_recency, {"cuts_off_far_tokens": True}, "ALiBi cuts far tokens off"),
    "length-scaling": (literature.check_length_scaling, {"claimed_limits": (1, 1, 0)}, "the top weight tends to 1 at sΔ = 1"),
    "off-by-one-sink": (literature.check_off_by_one_sink, {"extra_logit": 1}, "softmax₁ is softmax with an extra logit 1"),
    "softcap-facts": (literature.check_softcap_facts, {"claimed_bound": lambda a, c: a**4 / (3 * c**3)},
                      "the error is at most |ℓ|⁴/(3c³)"),
    "non-identifiable": (literature_structure.check_non_identifiable, {"margin": 0},
                         "another A′ exists already at T = d_v + 1"),
    "low-rank-bottleneck": (literature_structure.check_low_rank_bottleneck, {"below": 1},
                            "softmax(3I) is out of reach for every d_k < n"),
    "qk-norm-bound": (literature_structure.check_qk_norm_bound, {"claimed_bound": lambda g: g / 2},
                      "QK-normed logits lie in [−g/2, g/2]"),
    "icl-gradient-descent": (literature_structure.check_icl_gradient_descent, {"rate_factor": sp.Rational(1, 2)},
                             "the layer is a GD step with learning rate η/2"),
    "gqa-equals-repeated-kv": (literature_structure.check_gqa_equals_repeated_kv, {"grouping": "tile"},
                               "query head h reads key/value head h mod H_kv"),
    "rope-pairing-permutation": (literature_structure.check_rope_pairing_permutation, {"claimed_order": [0, 1, 2, 3]},
                                 "the pairings agree without a permutation"),
    "window-banded-mask": (literature_structure.check_window_banded_mask, {"extra": 1},
                           "a window of w sees w + 1 keys"),
    "not-lipschitz": (literature_theory.check_not_lipschitz, {"claimed_growth": 1}, "the witness grows linearly in t"),
    "kernel-smoother": (literature_theory.check_kernel_smoother, {"claimed_symmetric_when": "always"},
                        "the kernel is always symmetric"),
    "performer-unbiased": (literature_theory.check_performer_unbiased,
                           {"claimed_mean": lambda x, y: sp.exp(x.dot(y) / 2)}, "the features estimate exp(xᵀy/2)"),
    "linear-attention-rnn": (literature_theory.check_linear_attention_rnn, {"claimed_keys": "all"},
                             "the recurrence equals non-causal linear attention"),
    "sink-semantics": (variants_2026.check_sink_semantics, {"claimed_row_sum": "1"},
                       "the rows with a sink sum to 1"),
    "mla-absorbed": (variants_2026.check_mla_absorbed, {"rope_in_bound": False}, "each head's W_QK has rank ≤ d_c"),
    "nope-position-blind": (variants_2026.check_nope_position_blind, {"claimed_queries": "all"},
                            "every query of a causal NoPE layer is order-blind"),
    "mup-scaling": (literature_theory.check_mup_scaling, {"claimed_variance": lambda rho, d: d},
                    "Var[q·k] = d whatever the correlation"),
}


def test_every_claim_has_a_false_variant():
    missing = [e.id for e in catalogue() if e.id not in FALSE_VARIANTS]
    assert not missing, f"claims without a false variant in {__file__}: {missing}"


@pytest.mark.parametrize("claim_id", sorted(FALSE_VARIANTS))
def test_false_variant_fails(claim_id):
    check, wrong, what = FALSE_VARIANTS[claim_id]
    ev = check(QUICK, **wrong)
    assert ev.verdict == "fails", f"{claim_id}: the false variant '{what}' came out {ev.verdict}: {ev.summary}"
    assert "FAILED: " in ev.summary, ev.summary  # the summary names what failed
