"""The built-in claims, one module per subject (under ~450 lines each); :data:`BUILTIN` lists them all, explicitly.

Each module defines its checks as plain functions and ends with a tuple ``CLAIMS`` of
:class:`~attnsym.claims.Claim` made by :func:`attnsym.claims.catalogue.builtin_claim` (statement,
expected verdict and source come from the shipped claims list, ``claims.toml``). Importing a
module registers nothing; the registry (:mod:`attnsym.claims._registry`) is built from
:data:`BUILTIN`. A new claim module adds one import and one entry to ``MODULES`` below, and
its claims to ``claims.toml``.
"""

from . import (
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

__all__ = ["BUILTIN", "MODULES"]

#: the claim modules, each named for what its claims are about (a group of claims.toml may span several):
#: variance (variance-scaling); saturation (softmax-saturation); routing (dynamic-routing, hypernetwork-view,
#: two-token-example, weights-not-preset); multi_head (multi-head); table1 (global-path-length, parallelism); cost
#: (quadratic-cost, kv-cache, blockwise-exact); structure (qk-asymmetry, permutation-equivariance,
#: no-locality-bias); primitives (softmax-jacobian, sinusoidal-positions, gelu); from the literature on the
#: limits of attention: rank_collapse (rank-collapse), softmax_limits (entropy-lower-bound,
#: softmax-jacobian-norm, dispersion), invariances (key-bias-invariance, rank-one-input); positions
#: (rope-relative, rope-shift-invariance, rope-long-range-decay, alibi-recency); literature (length-scaling,
#: off-by-one-sink, softcap-facts);
#: literature_structure (non-identifiable, low-rank-bottleneck, qk-norm-bound, icl-gradient-descent,
#: gqa-equals-repeated-kv, rope-pairing-permutation, window-banded-mask); literature_theory (not-lipschitz,
#: kernel-smoother, performer-unbiased, linear-attention-rnn, mup-scaling); variants_2026 (sink-semantics,
#: mla-absorbed, nope-position-blind)
MODULES = (variance, saturation, routing, multi_head, table1, cost, structure, primitives, rank_collapse, softmax_limits,
           invariances, positions, literature, literature_structure,
           literature_theory, variants_2026)

#: every built-in claim (the registry orders them as the claims list does)
BUILTIN = tuple(c for module in MODULES for c in module.CLAIMS)
