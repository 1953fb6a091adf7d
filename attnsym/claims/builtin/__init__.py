"""The built-in claims, one module per claim group; :data:`BUILTIN` lists them all, explicitly.

Each module defines its checks as plain functions and ends with a tuple ``CLAIMS`` of
:class:`~attnsym.claims.Claim` made by :func:`attnsym.claims.catalogue.builtin_claim` (statement,
expected verdict and source come from the shipped claims list, ``claims.toml``). Importing a
module registers nothing; the registry (:mod:`attnsym.claims._registry`) is built from
:data:`BUILTIN`. A new group module adds one import and one entry to ``MODULES`` below, and
its claims to ``claims.toml``.
"""

from . import complexity, limits, positions, primitives, routing, scaling, structure

__all__ = ["BUILTIN", "MODULES"]

#: the claim-group modules: scaling (variance-scaling, softmax-saturation); routing (dynamic-routing,
#: hypernetwork-view, two-token-example, weights-not-preset, multi-head); complexity (global-path-length,
#: parallelism, quadratic-cost, kv-cache, blockwise-exact); structure (qk-asymmetry, permutation-equivariance,
#: no-locality-bias); primitives (softmax-jacobian, sinusoidal-positions, gelu); limits (from the
#: literature: rank-collapse, entropy-lower-bound, key-bias-invariance, softmax-jacobian-norm, dispersion,
#: rank-one-input); positions (rope-relative, rope-shift-invariance, rope-long-range-decay, alibi-recency)
MODULES = (scaling, routing, complexity, structure, primitives, limits, positions)

#: every built-in claim (the registry orders them as the claims list does)
BUILTIN = tuple(c for module in MODULES for c in module.CLAIMS)
