"""Mutations of the implementation under test (not of the claim): each must turn its claim's verdict to "fails".

Where :mod:`tests.test_claims_false_variants` feeds a check a false *statement*, these tests
break the *code* a claim checks (a slope rule, a scale, a wiring) with ``monkeypatch`` and run
the registered check in quick mode: a check that compares attnsym only with itself would not
notice. One entry per mutation; the report's table of mutations is this list.
"""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import attnsym.numeric.positions as numeric_positions
import attnsym.spec as spec_module
from attnsym.claims import CLAIMS, CheckContext
from attnsym.claims.builtin import softmax_limits
from attnsym.numeric import backward as numeric_backward
from attnsym.numeric import blockwise as numeric_blockwise
from attnsym.numeric import forward as numeric_forward
from attnsym.numeric import kvcache as numeric_kvcache
from attnsym.numeric import layer as numeric_layer
from attnsym.numeric import rank_collapse as numeric_rank_collapse
from attnsym.numeric import sink as numeric_sink
from attnsym.spec import AttentionSpec
from attnsym.studies import alibi as studies_alibi
from attnsym.studies import equivariance as studies_equivariance
from attnsym.studies import gelu as studies_gelu
from attnsym.studies import length_scaling as studies_length_scaling
from attnsym.studies import positions as studies_positions
from attnsym.studies import rank_collapse as studies_rank_collapse
from attnsym.studies import routing as studies_routing
from attnsym.studies import sinusoidal as studies_sinusoidal
from attnsym.studies import softmax_jacobian as studies_softmax_jacobian
from attnsym.studies import softmax_limits as studies_softmax_limits
from attnsym.studies import symmetry as studies_symmetry
from attnsym.studies import table1 as studies_table1
from attnsym.symbolic import sink as symbolic_sink
from attnsym.symbolic import softcap as softcap_module

QUICK = CheckContext(quick=True)


def _wrong_alibi_rule(monkeypatch):
    """ALiBi slopes 2^(−4h/H) instead of the paper's rule, everywhere attnsym reads it."""
    rule = lambda heads: tuple(Fraction(4 * (h + 1), heads) for h in range(heads))
    for module in (numeric_positions, spec_module, studies_alibi):
        monkeypatch.setattr(module, "alibi_slope_exponents", rule)


def _power_of_two_rule_everywhere(monkeypatch):
    """ALiBi slopes 2^(−8h/H) for every H (the statement's old formula, wrong for H not a power of two)."""
    rule = lambda heads: tuple(Fraction(8 * (h + 1), heads) for h in range(heads))
    for module in (numeric_positions, spec_module, studies_alibi):
        monkeypatch.setattr(module, "alibi_slope_exponents", rule)


def _symbolic_scale_dropped(monkeypatch):
    """The symbolic layer without 1/√d_k (the numeric layer keeps it)."""
    monkeypatch.setattr(AttentionSpec, "scale_expr", property(lambda self: sp.Integer(1)))


def _mlp_with_a_skip(monkeypatch):
    """The attention + MLP stack wired with a residual connection (so it no longer collapses)."""
    original = numeric_rank_collapse.collapse_run

    def run(architecture, X, depth, rng, **kw):
        return original("attention+skip" if architecture == "attention+mlp" else architecture, X, depth, rng, **kw)

    monkeypatch.setattr(studies_rank_collapse, "collapse_run", run)


def _skip_dropped(monkeypatch):
    """The skip connection dropped from the attention + skip stack."""
    original = numeric_rank_collapse.collapse_run

    def run(architecture, X, depth, rng, **kw):
        return original("attention" if architecture == "attention+skip" else architecture, X, depth, rng, **kw)

    monkeypatch.setattr(studies_rank_collapse, "collapse_run", run)


def _two_point_norm_linear(monkeypatch):
    """The derived two-point norm replaced by p (no critical point: the check used to crash)."""
    monkeypatch.setattr(studies_softmax_limits, "two_point_jacobian_norm", lambda p: p)


def _entropy_bound_scaled(monkeypatch):
    """Zhai et al.'s bound implemented 10% too high."""
    original = softmax_limits.entropy_lower_bound
    monkeypatch.setattr(softmax_limits, "entropy_lower_bound", lambda s, T: original(s, T) * sp.Rational(11, 10))


def _rope_bound_flat(monkeypatch):
    """RoPE's relative bound computed as a constant (no decay)."""
    original = studies_positions.rope_decay_bound
    monkeypatch.setattr(studies_positions, "rope_decay_bound", lambda spec, distance: np.full(np.shape(distance),
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
    from attnsym.numeric.forward import softmax

    monkeypatch.setattr(studies_length_scaling, "scalable_softmax",
                        lambda z, s: np.asarray(softmax(s * np.log(np.shape(z)[-1] + 1) * np.asarray(z))))


def _dispersion_softmax_sharpened(monkeypatch):
    """The softmax the dispersion check evaluates, with logits scaled by 1.01."""
    original = studies_softmax_limits.softmax
    monkeypatch.setattr(studies_softmax_limits, "softmax", lambda z, *a, **kw: original(np.asarray(z) * 1.01, *a, **kw))


def _numeric_jacobian_diagonal(monkeypatch):
    """The numeric softmax Jacobian as diag(a) (the −a aᵀ term dropped)."""
    monkeypatch.setattr(studies_softmax_jacobian, "num_jacobian",
                        lambda a: np.eye(np.shape(a)[-1]) * np.asarray(a)[..., None, :])


def _gelu_tanh_coefficient(monkeypatch):
    """The numeric tanh approximation of GELU with 0.05 instead of 0.044715."""
    monkeypatch.setattr(studies_gelu, "num_gelu_tanh",
                        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.05 * np.asarray(x) ** 3))))


def _dot_products_over_d_plus_one(monkeypatch):
    """The Monte Carlo sampler of q·k summing d + 1 component products (an off-by-one in the loop bound)."""
    dot_products = importlib.import_module("attnsym.numeric.montecarlo.dot_products")  # the module, not the function
    original = dot_products.dot_products
    monkeypatch.setattr(dot_products, "dot_products", lambda rng, size, d, **kw: original(rng, size, d + 1, **kw))


def _scale_resolves_to_one(monkeypatch):
    """The library's 1/√d_k resolves to 1 (no scaling in the "scaled" arm of the training run, nor anywhere numeric)."""
    monkeypatch.setattr(AttentionSpec, "scale_float", property(lambda self: 1.0))


def _memoised_weights(monkeypatch, module):
    """``module``'s numeric attention returns the weights of its first call for every later input (a stale cache)."""
    original, memo = module.attention, {}

    def attention(X, *args, **kw):
        Y, A = original(X, *args, **kw)
        return Y, memo.setdefault("A", A)

    monkeypatch.setattr(module, "attention", attention)


def _contrast_weights_cached(monkeypatch):
    """The routing contrast computes the attention map once and reuses it for the second input."""
    _memoised_weights(monkeypatch, importlib.import_module("attnsym.graphs.contrast"))


def _routing_weights_cached(monkeypatch):
    """The numeric attention of the routing checks reuses the first input's map for every input."""
    _memoised_weights(monkeypatch, studies_routing)


def _queries_projected_with_w_k(monkeypatch):
    """The numeric layer of the routing checks projects the queries with W_K (a wiring bug)."""
    original = studies_routing.attention

    def attention(X, *args, **kw):
        if args:
            args = (args[1], *args[1:])
        else:
            kw = {**kw, "W_Q": kw["W_K"]}
        return original(X, *args, **kw)

    monkeypatch.setattr(studies_routing, "attention", attention)


def _softmax_over_queries(monkeypatch):
    """The numeric layer's softmax normalises each key's column (over queries) instead of each query's row."""
    def shifted_exp(xp, S):
        m = xp.max(S, axis=-2, keepdims=True)
        P = xp.exp(S - m)
        return P, xp.sum(P, axis=-2, keepdims=True), m

    monkeypatch.setattr(numeric_layer, "shifted_exp", shifted_exp)


def _uncached_table1(monkeypatch):
    """Table 1 recomputed on every call (the claims' cache would keep a mutated graph for later tests)."""
    architectures = importlib.import_module("attnsym.graphs.architectures")
    monkeypatch.setattr(studies_table1, "_table1", studies_table1._table1.__wrapped__)
    return architectures


def _self_attention_wired_locally(monkeypatch):
    """Each self-attention output reads only its neighbours (the graph of a window of 1, not all n positions)."""
    architectures = _uncached_table1(monkeypatch)
    original = architectures._sources
    monkeypatch.setattr(architectures, "_sources", lambda arch, i, n, level, k, r: original(
        "restricted_self_attention" if arch == "self_attention" else arch, i, n, level, k, 1))


def _self_attention_as_a_scan(monkeypatch):
    """One self-attention layer computed as a recurrence: output p waits for output p − 1."""
    architectures = _uncached_table1(monkeypatch)
    original = architectures.layer_graph
    monkeypatch.setattr(architectures, "layer_graph", lambda arch, n, **kw: original(
        "recurrent" if arch == "self_attention" else arch, n, **kw))


def _blockwise_falls_back_to_the_map(monkeypatch):
    """The memory-lean path silently runs the plain core (it stores the n×n map)."""
    monkeypatch.setattr(numeric_forward.blockwise, "blockwise_core", lambda layer, Q, K, V, size, *a: (
        numeric_layer.plain_core(layer, Q, K, V, want_weights=True)[0], None))


def _cached_values_are_keys(monkeypatch):
    """The decoder writes the key projection into the value cache (and recomputes values as keys)."""
    original = numeric_kvcache.project
    monkeypatch.setattr(numeric_kvcache, "project", lambda layer, a, x, which, *rest: original(
        layer, a, x, "K" if which == "V" else which, *rest))


def _blockwise_mask_with_block_local_keys(monkeypatch):
    """The generic blockwise loop masks each key block as if it started at key 0 (block-local indices)."""
    original = numeric_blockwise.block_scores
    monkeypatch.setattr(numeric_blockwise._fast, "usable", lambda *a, **k: False)  # the generic loop, not _fast
    monkeypatch.setattr(numeric_blockwise, "block_scores", lambda layer, Qi, Kb, i0, i1, j0, j1: original(
        layer, Qi, Kb, i0, i1, 0, j1 - j0))


def _keys_projected_with_w_q(monkeypatch):
    """The numeric scores of the qk-asymmetry check take Q for K (keys projected with W_Q)."""
    original = studies_symmetry.scores
    monkeypatch.setattr(studies_symmetry, "scores", lambda Q, K, *a, **kw: original(Q, Q, *a, **kw))


def _positions_added_when_none(monkeypatch):
    """The numeric layer adds sinusoidal positions even when ``positions=None``."""
    original = studies_equivariance.attention
    monkeypatch.setattr(studies_equivariance, "attention", lambda *a, **kw: original(
        *a, **{**kw, "positions": kw.get("positions") or "sinusoidal"}))


def _attention_with_a_window(monkeypatch):
    """Attention (symbolic and numeric) restricted to |i − j| ≤ 1 when no mask is asked for."""
    band = lambda n: [[abs(i - j) <= 1 for j in range(n)] for i in range(n)]
    sym, num = studies_equivariance.sym_attention, studies_equivariance.attention
    monkeypatch.setattr(studies_equivariance, "sym_attention", lambda spec, *a, **kw: sym(
        spec if spec.mask is not None else AttentionSpec(n=spec.n, d_model=spec.d_model, positions=spec.positions,
                                                          mask=band(spec.n)), *a, **kw))
    monkeypatch.setattr(studies_equivariance, "attention",
                        lambda Z, *a, **kw: num(Z, *a, **({"mask": np.array(band(len(Z)))} | kw)))


def _sinusoid_exponent_halved(monkeypatch):
    """The symbolic sinusoidal encoding with frequencies base^(−i/d) instead of base^(−2i/d)."""
    original = studies_sinusoidal.sym_pe
    monkeypatch.setattr(studies_sinusoidal, "sym_pe", lambda n, d, *a, **kw: original(n, 2 * d, *a, **kw)[:, :d])


def _softmax_vjp_without_rowsum(monkeypatch):
    """The backward's softmax VJP dS = A ⊙ dA (the − rowsum(dA ⊙ A) term dropped)."""
    monkeypatch.setattr(numeric_backward, "dscores", lambda A, dA, rowsum: A * dA)


def _rope_angles_squared(monkeypatch):
    """Numeric RoPE rotating position p by p²θ instead of pθ (absolute, not relative)."""
    original = numeric_positions._angles
    monkeypatch.setattr(numeric_positions, "_angles", lambda xp, spec, p, device=None: original(xp, spec, p * p, device))


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
    ("variance-scaling", _dot_products_over_d_plus_one, "Monte Carlo q·k over d + 1 components"),
    ("softmax-saturation", _scale_resolves_to_one, "1/√d_k resolves to 1 (the scaled arm unscaled)"),
    ("dynamic-routing", _contrast_weights_cached, "contrast reuses the first input's map"),
    ("hypernetwork-view", _queries_projected_with_w_k, "numeric queries projected with W_K"),
    ("two-token-example", _softmax_over_queries, "softmax normalised over queries, not keys"),
    ("weights-not-preset", _routing_weights_cached, "numeric attention reuses the first input's map"),
    ("global-path-length", _self_attention_wired_locally, "self-attention reads only its neighbours"),
    ("parallelism", _self_attention_as_a_scan, "self-attention layer computed as a recurrence"),
    ("quadratic-cost", _blockwise_falls_back_to_the_map, "memory-lean path stores the n×n map"),
    ("kv-cache", _cached_values_are_keys, "value cache filled with keys"),
    ("blockwise-exact", _blockwise_mask_with_block_local_keys, "blockwise mask with block-local key indices"),
    ("qk-asymmetry", _keys_projected_with_w_q, "keys projected with W_Q"),
    ("permutation-equivariance", _positions_added_when_none, "positions added when none are asked for"),
    ("no-locality-bias", _attention_with_a_window, "attention restricted to |i − j| ≤ 1"),
    ("sinusoidal-positions", _sinusoid_exponent_halved, "frequencies base^(−i/d)"),
    ("key-bias-invariance", _softmax_vjp_without_rowsum, "softmax VJP without − rowsum"),
    ("rank-one-input", _softmax_vjp_without_rowsum, "softmax VJP without − rowsum"),
    ("rope-relative", _rope_angles_squared, "RoPE angle p²θ"),
    ("rope-shift-invariance", _rope_angles_squared, "RoPE angle p²θ"),
]


@pytest.mark.parametrize(("claim_id", "mutate", "what"), MUTATIONS, ids=[f"{c}: {w}" for c, _, w in MUTATIONS])
def test_mutation_fails_the_claim(monkeypatch, claim_id, mutate, what):
    assert CLAIMS[claim_id].check(QUICK).verdict != "fails"  # unmutated, the claim holds
    mutate(monkeypatch)
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "fails", f"{claim_id} under the mutation '{what}' came out {ev.verdict}: {ev.summary}"
    assert "FAILED: " in ev.summary, ev.summary  # the summary names what failed, it never reads as a pass


def test_every_registered_claim_has_a_mutation_that_fails_it():
    """Each claim of the registry is covered by at least one mutation test (this file and its three siblings)."""
    from test_claims_mutations_structure import MUTATIONS as STRUCTURE
    from test_claims_mutations_theory import MUTATIONS as THEORY
    from test_claims_mutations_variants import MUTATIONS as VARIANTS

    from attnsym.claims import ordered_ids

    covered = {claim for claim, _, _ in [*MUTATIONS, *STRUCTURE, *THEORY, *VARIANTS]}
    ids = set(ordered_ids())
    assert ids - covered == set(), "claims no mutation test breaks"
    assert covered - ids == set(), "mutation tests of claims that do not exist"
