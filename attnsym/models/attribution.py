r"""Where a position's attention output comes from: the norm of what each head writes there.

Attention weights alone do not say how much a head moves a token's representation: a head
may put all its weight on a key whose value vector is nearly zero (the "attention sink" of
decoders). Kobayashi et al. 2020 ("Attention is not only a weight") measure instead the norm
of what head ``h`` of layer ``ℓ`` adds to position ``i``:

.. math::

    c_{\ell h}(i) = \Big\| \sum_j A^{(\ell h)}_{ij}\, v^{(h)}_j\, W_O^{(h)} \Big\|_2,
    \qquad v^{(h)}_j = N_1\big(x^{(\ell)}_j\big)\, W_V^{(h)} + b_V^{(h)},

with ``W_O^{(h)}`` the rows of the output projection that read head ``h`` (grouped-query heads
read their shared key/value head). The route's own hidden states and attention are used, the
values recomputed from the block's input with the block's norm and ``W_V`` (the forward pass's
primitives, :class:`~attnsym.models.forward.ArrayPrimitives` and
:func:`~attnsym.models.forward.projections`, which expands multi-head latent attention's values). A
post-norm block (BERT) reads its input unnormed; Gemma 2's norm after the attention output is not included (the contributions are
those of the heads' sum before it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..numeric.backend import array_namespace, asarray_in
from .errors import TokenNotFoundError
from .forward import ArrayPrimitives, projections
from .plan import ModelPlan
from .weights import Weights

__all__ = ["head_contributions"]


def head_contributions(plan: ModelPlan, weights: Weights, route: Any, position: int = -1) -> np.ndarray:
    """The ``(layers, heads)`` norms ``c_{ℓh}(i)`` of what each head writes at ``position`` (module docstring).

    Parameters
    ----------
    plan, weights
        The model that made ``route``.
    route : Route
        Its hidden states (the block inputs) and attention.
    position : int, default -1
        The position ``i`` (negative counts from the end).

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> r = m.route("I like to eat apples")
    >>> c = head_contributions(m.config, m.weights, r, position=0)
    >>> c.shape, bool((c >= 0).all())
    ((6, 12), True)
    """
    n = route.n
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not -n <= position < n:
        raise TokenNotFoundError(f"position must be an integer in [-{n}, {n}) (got {position!r})")
    i = int(position) % n
    np_xp, ops = array_namespace(backend="numpy"), ArrayPrimitives()
    out = np.zeros((plan.layers, plan.heads), dtype=np.float64)
    for layer, (block, lw) in enumerate(zip(plan.blocks, weights.layers, strict=True)):
        s = block.attention
        if not isinstance(lw.W_QKV, np.ndarray):  # CuPy or torch weights: their NumPy copies
            lw = type(lw)(**{k: np.asarray(asarray_in(np_xp, v)) for k, v in lw.arrays().items()})
        x = route.hidden_states[layer]  # (n, d): the block's input
        h = ops.norm(np, x, block.norm, lw.attn_norm, lw.attn_norm_bias) if block.placement == "pre" else x
        V = projections(np, block, lw, h[None])[2][0]  # (n, kv·d_v): the pass's own values (MLA's from its latent)
        V = V.reshape(n, s.kv_heads, s.d_v).astype(np.float64)
        for head in range(s.heads):
            z = route.attention[layer, head, i].astype(np.float64) @ V[:, head // s.kv_group]  # (d_v,)
            rows = lw.W_O[head * s.d_v:(head + 1) * s.d_v].astype(np.float64)  # (d_v, d)
            out[layer, head] = float(np.linalg.norm(z @ rows))
    return out
