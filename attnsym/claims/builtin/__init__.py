"""The built-in claims of CLAIMS.md, one module per claim group.

Importing this package registers every built-in claim in :data:`attnsym.claims.CLAIMS`.
``attnsym verify`` reports them in the order of CLAIMS.md (``attnsym.claims.CLAIM_ORDER``),
whatever the import order below.
"""

# one line per claim-group module, so each group owner edits only its own line
# ruff: noqa: I001
from . import primitives  # noqa: F401  softmax-jacobian, sinusoidal-positions, gelu
from . import scaling  # noqa: F401  variance-scaling, softmax-saturation
from . import routing  # noqa: F401  dynamic-routing, hypernetwork-view, two-token-example, weights-not-preset, multi-head
from . import complexity  # noqa: F401  global-path-length, parallelism, quadratic-cost, kv-cache, blockwise-exact
from . import structure  # noqa: F401  qk-asymmetry, permutation-equivariance, no-locality-bias
