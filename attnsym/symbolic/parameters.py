r"""The learned parameters of the symbolic layer: names and shapes, the one list every symbolic builder reads.

For every spec but multi-head latent attention these are :attr:`AttentionSpec.parameter_names
<attnsym.AttentionSpec.parameter_names>` with :attr:`~attnsym.AttentionSpec.shapes` (``W_G``, the
output gate's ``(d_model, heads·d_v)`` weights, included). A spec with ``kv_latent_rank = r``
(DeepSeek V2 / V3) has no ``W_K``, ``W_V``: its keys and values come from the latent, with the names
of the DeepSeek-V2 paper (``ρ = rotary_dims``, ``d_n = d_k − ρ`` the non-rotary width, ``H`` heads)::

    W_DKV  (d_model, r)     the latent c = RMSNorm(X_in W_DKV) ⊙ g_CKV      g_CKV (1, r)
    W_KR   (d_model, ρ)     the one rotary key k^R = X_in W_KR, shared by every head
    W_UK   (r, H·d_n)       each head's non-rotary key  k^C_h = c W_UK,h
    W_UV   (r, H·d_v)       each head's value           v_h  = c W_UV,h

and, with ``q_latent_rank = r_q``, ``W_DQ (d_model, r_q)``, ``g_CQ (1, r_q)``, ``W_UQ (r_q, H·d_k)`` in place
of ``W_Q``: ``Q = RMSNorm(X_in W_DQ) ⊙ g_CQ · W_UQ``. Each head's key is ``[k^R | k^C_h]`` and each head's
query has its rotary coordinates first (the spec rotates the first ``ρ`` coordinates of every head).
A Hugging Face checkpoint stores ``[W_DKV | W_KR]`` as one ``kv_a_proj_with_mqa``, ``[W_UK,h | W_UV,h]``
per head as ``kv_b_proj`` and each query head non-rotary part first: splitting and permuting columns
gives these matrices.
"""

from __future__ import annotations

from ..errors import SpecError
from ..spec import DEFAULT_LATENT_NORM_EPS, AttentionSpec

__all__ = ["DEFAULT_LATENT_EPS", "parameter_shapes"]

#: the default epsilon of multi-head latent attention's latent RMSNorm: the spec's ``latent_norm_eps`` default
DEFAULT_LATENT_EPS = DEFAULT_LATENT_NORM_EPS


def parameter_shapes(spec: AttentionSpec) -> dict[str, tuple[int, int]]:
    """The symbolic layer's parameters by name, in a fixed order, with their shapes.

    Examples
    --------
    >>> parameter_shapes(AttentionSpec(n=2, d_model=4, output_gate=True))
    {'W_Q': (4, 4), 'W_K': (4, 4), 'W_V': (4, 4), 'W_G': (4, 4)}
    >>> spec = AttentionSpec(n=2, d_model=4, heads=2, d_k=3, d_v=2, positions="rope", rotary_pct=2 / 3,
    ...                      kv_latent_rank=2, q_latent_rank=3)
    >>> parameter_shapes(spec)  # doctest: +NORMALIZE_WHITESPACE
    {'W_DQ': (4, 3), 'g_CQ': (1, 3), 'W_UQ': (3, 6), 'W_DKV': (4, 2), 'g_CKV': (1, 2), 'W_KR': (4, 2),
     'W_UK': (2, 2), 'W_UV': (2, 4), 'W_O': (4, 4)}
    """
    shapes = spec.shapes
    if spec.kv_latent_rank is None:
        return {name: shapes[name] for name in spec.parameter_names}
    if spec.bias:
        raise SpecError(f"multi-head latent attention has no biases in the symbolic view (got bias={spec.bias!r} "
                        f"with kv_latent_rank={spec.kv_latent_rank})")
    d, r, rho, H = spec.d_model, spec.kv_latent_rank, spec.rotary_dims, spec.heads
    nope = spec.d_k - rho
    if rho == 0 or nope == 0:
        raise SpecError(f"multi-head latent attention needs a rotary and a non-rotary part of d_k (got d_k={spec.d_k}, "
                        f"rotary_dims={rho})")
    out: dict[str, tuple[int, int]] = {}
    if spec.q_latent_rank is None:
        out["W_Q"] = shapes["W_Q"]
    else:
        rq = spec.q_latent_rank
        out.update(W_DQ=(d, rq), g_CQ=(1, rq), W_UQ=(rq, H * spec.d_k))
    out.update(W_DKV=(d, r), g_CKV=(1, r), W_KR=(d, rho), W_UK=(r, H * nope), W_UV=(r, spec.inner_v))
    out.update({name: shapes[name] for name in spec.parameter_names if name not in ("W_Q", "W_K", "W_V")})
    return out
