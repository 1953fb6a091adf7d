"""Causal decoding token by token, with and without a key/value cache.

A decoder generates token ``t`` from the ``t`` tokens so far. Without a cache each step reruns
causal attention over the whole prefix (``t × t`` scores); with a cache it projects only the
new token, appends its key and value to the cache, and scores the one new query against the
``t`` cached keys:

.. math::

    k_t = x_t W_K,\\; v_t = x_t W_V \\;\\text{(appended)},\\qquad
    y_t = \\operatorname{softmax}\\big(c\\, q_t K_{1:t}^\\top\\big)\\, V_{1:t}\\, [W_O].

Both routes give, token by token, the rows of full causal attention
(:func:`attnsym.numeric.attention` with ``causal=True``). Each step records the
multiplications of the matrix products it performs and the exponentials, read from the
shapes it actually multiplies; :func:`attnsym.symbolic.opcount.decode_step_opcount` is the
closed form of the same counts.

The layer is bound once (:func:`attnsym.numeric.layer.bind`, from ``spec=`` or the keywords,
``causal`` always), and every step uses the same projections, position hooks, scores and
softmax as :func:`~attnsym.numeric.attention`. Before the first step the whole sequence is
projected once, outside the step counts, only to refuse inputs whose scores would overflow
(:func:`attnsym.numeric.layer.guard_logits`).

Shape legend: ``n`` tokens, ``d`` = ``d_model``, ``H`` heads, ``d_k``/``d_v`` per-head widths.
Written against the array API (NumPy, CuPy, PyTorch); ``X`` is one sequence ``(n, d)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._checks import boolean
from ..errors import ShapeError, SpecError
from ..spec import AttentionSpec
from .binding import bind
from .layer import (
    BoundLayer,
    block_scores,
    output,
    project,
    projections,
    safe_divide,
    shifted_exp,
)

__all__ = ["DecodeResult", "causal_decode"]


@dataclass(frozen=True)
class DecodeResult:
    """Outputs of causal decoding and what each step cost.

    Attributes
    ----------
    Y : (n, d_out) array
        Row ``t`` is the output produced at step ``t`` (from tokens ``0..t``).
    steps : tuple of dict
        Per step ``{"t": t (1-based), "mul": multiplications in matrix products, "exp": exponentials}``.
    cached : bool
        Whether the K/V cache was used.
    cache_shape : tuple or None
        ``(H, n, d_k)`` of the key cache at the end (``None`` without a cache).
    """

    Y: Any
    steps: tuple[dict, ...]
    cached: bool
    cache_shape: tuple[int, ...] | None

    @property
    def total_mul(self) -> int:
        """Multiplications over all steps."""
        return sum(s["mul"] for s in self.steps)


def _mul(A, B) -> int:
    """Multiplications of the (batched) product ``A @ B``: ``prod(batch)·p·q·r``, read from the shapes."""
    *batch, p, q = A.shape
    return math.prod(batch) * p * q * int(B.shape[-1])


def _attend(layer: BoundLayer, Q, K, V, i0: int):
    """Rows ``i0 : i0+r`` of causal attention over the keys ``0 : t``: ``Z`` (H, r, d_v) and the multiplications."""
    xp = layer.xp
    r, t = int(Q.shape[-2]), int(K.shape[-2])
    Qs = Q * layer.scale
    S = block_scores(layer, Qs, K, i0, i0 + r, 0, t)  # (H, r, t), the shared score code (scale, bias, masks)
    P, total, _ = shifted_exp(xp, S)
    A = safe_divide(xp, P, total, inplace=True)  # the shared softmax: fully masked rows give 0
    return xp.matmul(A, V), _mul(Qs, xp.matrix_transpose(K)) + _mul(A, V)


def causal_decode(X, W_Q, W_K, W_V, W_O=None, *, b_Q=None, b_K=None, b_V=None, b_O=None,
                  spec: AttentionSpec | None = None, heads: int = 1, mask=None, scale: Any = "sqrt",
                  positions: str | None = None, cache: bool = True) -> DecodeResult:
    """Generate the outputs of causal self-attention one token at a time.

    Parameters
    ----------
    X : (n, d_model) array
        The token vectors, in generation order.
    W_Q, W_K : (d_model, heads*d_k) arrays
    W_V : (d_model, heads*d_v) array
    W_O : (heads*d_v, d_out) array, optional
        Output projection of the concatenated heads.
    b_Q, b_K, b_V, b_O : (k,) or (1, k) arrays, optional
        Biases added after each projection.
    spec : AttentionSpec, optional
        A causal spec deciding heads, mask, scale and positions (``position_base`` included)
        and checking every shape, as in :func:`~attnsym.numeric.attention`; then the keywords
        ``heads, mask, scale, positions`` stay at their defaults.
    heads, mask, scale, positions
        Without a spec, as in :func:`~attnsym.numeric.attention` (``causal`` is implied):
        ``mask`` is an (n, n) bool array ANDed with the causal pattern; sinusoidal positions
        are absolute, so position ``t`` is known at step ``t``.
    cache : bool, default True
        Keep keys and values of past tokens (linear cost per step) or recompute the prefix
        (quadratic cost per step).

    Returns
    -------
    DecodeResult

    Raises
    ------
    ShapeError
        ``X`` not 2-D, weights whose shapes do not fit ``X`` and ``heads``, bad dtypes or
        non-finite values, as :func:`~attnsym.numeric.attention`.
    SpecError
        Invalid ``heads``, ``scale``, ``positions`` or ``cache``; a spec that is not causal.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, W = rng.standard_normal((4, 2)), rng.standard_normal((3, 2, 2))
    >>> fast = causal_decode(X, *W)
    >>> slow = causal_decode(X, *W, cache=False)
    >>> bool(np.allclose(fast.Y, slow.Y, rtol=1e-12, atol=1e-12))
    True
    >>> [s["mul"] for s in fast.steps], [s["mul"] for s in slow.steps]
    ([16, 20, 24, 28], [16, 40, 72, 112])
    """
    cache = boolean("cache", cache)
    if spec is not None and isinstance(spec, AttentionSpec) and not spec.causal:
        raise SpecError("causal_decode needs a causal spec (got causal=False); pass spec.replace(causal=True)")
    biases = {"b_Q": b_Q, "b_K": b_K, "b_V": b_V, "b_O": b_O}
    layer, a = bind(X, W_Q, W_K, W_V, W_O, biases, spec=spec, heads=heads, causal=False if spec is not None else True,
                    mask=mask, scale=scale, positions=positions, backend=None, caller="attnsym.numeric.causal_decode")
    xp, n, H = layer.xp, layer.n, layer.heads
    if layer.batch_shape:
        raise ShapeError(f"X must have shape (n, d_model), one sequence (got shape {tuple(a['X'].shape)})")
    X_in, *_ = projections(layer, a)  # (n, d): hook (a), absolute positions; refuses overflowing scores
    d = layer.d_model

    def proj_mul(rows: int, which: str) -> int:
        return rows * d * int(a[f"W_{which}"].shape[1])

    def finish(Z) -> tuple[Any, int]:  # (H, r, d_v) -> (r, d_out) and its multiplications
        W_O = a.get("W_O")
        return output(layer, a, Z), 0 if W_O is None else int(Z.shape[-2]) * int(W_O.shape[0]) * int(W_O.shape[1])

    rows_out, steps = [], []
    if cache:
        K_cache = xp.zeros((H, n, layer.d_k), dtype=a["X"].dtype, device=layer.device)
        V_cache = xp.zeros((H, n, layer.d_v), dtype=a["X"].dtype, device=layer.device)
    for i in range(n):
        t = i + 1
        if cache:
            x = X_in[i:i + 1, :]  # (1, d)
            q = project(layer, a, x, "Q", i)  # (H, 1, d_k), rotated at position i (hook (b))
            K_cache[:, i:i + 1, :] = project(layer, a, x, "K", i)
            V_cache[:, i:i + 1, :] = project(layer, a, x, "V", i)
            Z, mul = _attend(layer, q, K_cache[:, :t, :], V_cache[:, :t, :], i)  # (H, 1, d_v)
            y, mul_o = finish(Z)  # (1, d_out)
            mul += proj_mul(1, "Q") + proj_mul(1, "K") + proj_mul(1, "V") + mul_o
            exps = H * t
        else:
            P = X_in[:t, :]  # (t, d): the whole prefix again
            Q, K, V = (project(layer, a, P, w) for w in "QKV")  # (H, t, ·)
            Z, mul = _attend(layer, Q, K, V, 0)  # (H, t, d_v)
            y, mul_o = finish(Z)
            y = y[t - 1:t, :]
            mul += proj_mul(t, "Q") + proj_mul(t, "K") + proj_mul(t, "V") + mul_o
            exps = H * t * t
        rows_out.append(y)
        steps.append({"t": t, "mul": mul, "exp": exps})
    Y = xp.concat(rows_out, axis=0)
    return DecodeResult(Y, tuple(steps), cache, (H, n, layer.d_k) if cache else None)
