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

Shape legend: ``n`` tokens, ``d`` = ``d_model``, ``H`` heads, ``d_k``/``d_v`` per-head widths.
Written against the array API (NumPy, CuPy, PyTorch); ``X`` is one sequence ``(n, d)``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from ..errors import ShapeError, SpecError
from ..spec import _check_scale
from .backend import array_namespace
from .positions import sinusoidal_positions

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


def _stable_softmax(xp, S):
    """Row softmax over the last axis, shifted by the row maximum; ``-inf`` entries give 0."""
    m = xp.max(S, axis=-1, keepdims=True)
    E = xp.exp(S - m)
    return E / xp.sum(E, axis=-1, keepdims=True)


def _mm(xp, A, B, counter: list[int]):
    """``A @ B`` (batched), adding the multiplications ``prod(batch)·p·q·r`` to ``counter``."""
    *batch, p, q = A.shape
    r = B.shape[-1]
    counter[0] += math.prod(batch) * p * q * r
    return xp.matmul(A, B)


def causal_decode(X, W_Q, W_K, W_V, W_O=None, *, b_Q=None, b_K=None, b_V=None, b_O=None, heads: int = 1,
                  scale: Any = "sqrt", positions: str | None = None, cache: bool = True) -> DecodeResult:
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
    heads : int, default 1
    scale : {"sqrt", "none"} or float, default "sqrt"
        As in :class:`~attnsym.AttentionSpec`.
    positions : {None, "sinusoidal"}
        Add sinusoidal positions (absolute: position ``t`` is known at step ``t``).
    cache : bool, default True
        Keep keys and values of past tokens (linear cost per step) or recompute the prefix
        (quadratic cost per step).

    Returns
    -------
    DecodeResult

    Raises
    ------
    ShapeError
        ``X`` not 2-D, or weights whose shapes do not fit ``X`` and ``heads``.
    SpecError
        Invalid ``heads``, ``scale`` or ``positions``.

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
    xp = array_namespace(X, W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O)
    X = xp.asarray(X)
    if X.ndim != 2:
        raise ShapeError(f"X must have shape (n, d_model) (got shape {tuple(X.shape)})")
    n, d = X.shape
    if not isinstance(heads, numbers.Integral) or isinstance(heads, bool) or heads < 1:
        raise SpecError(f"heads must be a positive integer (got {heads!r})")
    H = int(heads)
    W_Q, W_K, W_V = (xp.asarray(W) for W in (W_Q, W_K, W_V))
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if W.ndim != 2 or W.shape[0] != d or W.shape[1] % H:
            raise ShapeError(
                f"{name} must have shape (d_model, heads*k) = ({d}, {H}*k) (got {tuple(W.shape)})"
            )
    if W_Q.shape != W_K.shape:
        raise ShapeError(f"W_Q and W_K must have the same shape (got {tuple(W_Q.shape)} and {tuple(W_K.shape)})")
    d_k, d_v = W_Q.shape[1] // H, W_V.shape[1] // H
    if W_O is not None:
        W_O = xp.asarray(W_O)
        if W_O.ndim != 2 or W_O.shape[0] != H * d_v:
            raise ShapeError(f"W_O must have shape (heads*d_v, d_out) = ({H * d_v}, d_out) (got {tuple(W_O.shape)})")
    bias = {}
    for name, b, k in (("b_Q", b_Q, H * d_k), ("b_K", b_K, H * d_k), ("b_V", b_V, H * d_v),
                       ("b_O", b_O, None if W_O is None else W_O.shape[1])):
        if b is None:
            continue
        if k is None:
            raise SpecError("b_O needs an output projection W_O")
        b = xp.reshape(xp.asarray(b), (-1,))
        if b.shape[0] != k:
            raise ShapeError(f"{name} must have {k} entries (got shape {tuple(b.shape)})")
        bias[name] = b
    scale = _check_scale(scale)
    c = 1.0 / math.sqrt(d_k) if scale == "sqrt" else 1.0 if scale == "none" else float(scale)
    if positions not in (None, "sinusoidal"):
        raise SpecError(f"positions must be None or 'sinusoidal' (got {positions!r})")
    if positions == "sinusoidal":
        X = X + xp.astype(sinusoidal_positions(n, d, xp=xp), X.dtype)

    def project(rows, W, name, counter):
        out = _mm(xp, rows, W, counter)
        return out + bias[name] if name in bias else out

    def split(M, k):  # (r, H*k) -> (H, r, k)
        return xp.permute_dims(xp.reshape(M, (M.shape[0], H, k)), (1, 0, 2))

    def finish(Z, counter):  # (H, r, d_v) -> (r, d_out)
        Zc = xp.reshape(xp.permute_dims(Z, (1, 0, 2)), (Z.shape[1], H * d_v))
        if W_O is None:
            return Zc
        out = _mm(xp, Zc, W_O, counter)
        return out + bias["b_O"] if "b_O" in bias else out

    rows_out, steps = [], []
    if cache:
        K_cache = xp.zeros((H, n, d_k), dtype=X.dtype)
        V_cache = xp.zeros((H, n, d_v), dtype=X.dtype)
    for i in range(n):
        t = i + 1
        counter = [0]
        if cache:
            x = X[i:i + 1, :]  # (1, d)
            q = split(project(x, W_Q, "b_Q", counter), d_k)  # (H, 1, d_k)
            K_cache[:, i:i + 1, :] = split(project(x, W_K, "b_K", counter), d_k)
            V_cache[:, i:i + 1, :] = split(project(x, W_V, "b_V", counter), d_v)
            S = _mm(xp, q, xp.permute_dims(K_cache[:, :t, :], (0, 2, 1)), counter) * c  # (H, 1, t)
            A = _stable_softmax(xp, S)
            Z = _mm(xp, A, V_cache[:, :t, :], counter)  # (H, 1, d_v)
            y = finish(Z, counter)  # (1, d_out)
            exps = H * t
        else:
            P = X[:t, :]  # (t, d): the whole prefix again
            Q = split(project(P, W_Q, "b_Q", counter), d_k)  # (H, t, d_k)
            K = split(project(P, W_K, "b_K", counter), d_k)
            V = split(project(P, W_V, "b_V", counter), d_v)
            S = _mm(xp, Q, xp.permute_dims(K, (0, 2, 1)), counter) * c  # (H, t, t)
            rows = xp.reshape(xp.arange(t), (t, 1))
            allowed = xp.reshape(xp.arange(t), (1, t)) <= rows  # causal, True = may attend
            S = xp.where(allowed, S, xp.asarray(-math.inf, dtype=S.dtype))
            A = _stable_softmax(xp, S)
            Z = _mm(xp, A, V, counter)  # (H, t, d_v)
            y = finish(Z, counter)[t - 1:t, :]
            exps = H * t * t
        rows_out.append(y)
        steps.append({"t": t, "mul": counter[0], "exp": exps})
    Y = xp.concat(rows_out, axis=0)
    return DecodeResult(Y, tuple(steps), bool(cache), (H, n, d_k) if cache else None)
