"""The variants of 2026 the kernels argue over: a learned sink, multi-head latent attention, a layer without positions.

Three questions, each answered exactly where it can be and in float64 on random layers:

* :func:`sink` — a sink logit ``s`` in the softmax denominator (gpt-oss): equal to the softmax
  over ``[x, s]`` with the sink's column dropped; the output rescale ``σ(lse(x) − s)``;
  softmax₁ as ``s = 0``; the shift inside or outside the max; rows of a numeric layer summing to
  ``1 − π`` with ``π = σ(s − lse(x))`` (``sink-semantics``).
* :func:`mla` — multi-head latent attention (DeepSeek V2/V3): the absorbed scores
  ``(W_UKᵀ q)·c`` equal the expanded ones; each head's effective ``W_QK`` has rank at most
  ``d_c + d_rope``; the rotary key is one for all heads (``mla-absorbed``).
* :func:`nope` — a layer without positions: a causal layer's last output is invariant to
  permuting the earlier tokens, a bidirectional one is permutation-equivariant; with RoPE left
  on neither holds (``nope-position-blind``).

>>> r = nope(seed=0, quick=True)
>>> r.causal_last_invariant and r.bidirectional_equivariant and not r.rope_last_invariant
True
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._exact import exact_matrix
from ..numeric import attention as numeric_attention
from ..numeric import random_inputs
from ..spec import AttentionSpec
from ..symbolic.matrices import attention as symbolic_attention
from ..symbolic.operations import row_softmax
from ..symbolic.operations import sink_softmax as symbolic_sink_softmax

__all__ = ["MlaResult", "NopeResult", "SinkResult", "mla", "mla_keys", "nope", "sink"]


# ---------------------------------------------------------------------------------------------- sink
@dataclass(frozen=True)
class SinkResult:
    """What :func:`sink` found.

    Attributes
    ----------
    dropped_column, rescale, softmax_one, shift : bool
        Exact (SymPy, ``n`` symbolic scores): the sink softmax equals the softmax over ``[x, s]``
        without the last column; equals ``σ(lse(x) − s) · softmax(x)``; at ``s = 0`` equals
        ``e^{x_j} / (1 + Σ e^{x_k})``; the shift by ``m`` (any, e.g. ``max(x, s)``) cancels.
    rows_gap : float
        Numeric layer: ``max |Σ_j A_ij + π_i − 1|`` with ``π_i = σ(s − lse(x_i))`` computed apart.
    reference_gap : float
        Numeric layer: ``max |A − softmax([S, s])[:, :-1]|`` (the reference written here).
    least_mass : float
        The smallest ``π`` of the layer (the sink takes visible mass).
    weights, mass : ndarray
        One head's ``A`` (n, n) and ``π`` (n,), for the figure.
    """

    n: int
    dropped_column: bool
    rescale: bool
    softmax_one: bool
    shift: bool
    rows_gap: float
    reference_gap: float
    least_mass: float
    weights: np.ndarray
    mass: np.ndarray


def sink(seed: int = 0, *, quick: bool) -> SinkResult:
    """The sink's equivalences, exactly for 3 (quick) or 4 scores, and on a random causal layer with sinks (float64)."""
    n = 3 if quick else 4
    x, s, m = sp.symbols(f"x1:{n + 1}", real=True), sp.Symbol("s", real=True), sp.Symbol("m", real=True)
    row = sp.Matrix([list(x)])
    A, pi = symbolic_sink_softmax(row, s)
    full = row_softmax(sp.Matrix([[*x, s]]))  # softmax over [x, s]
    zero = lambda e: sp.simplify(e) == 0
    dropped = all(zero(A[0, j] - full[0, j]) for j in range(n)) and zero(pi[0, 0] - full[0, n])
    lse = sp.log(sp.Add(*[sp.exp(v) for v in x]))
    plain = row_softmax(row)
    rescale = all(zero(A[0, j] - plain[0, j] / (1 + sp.exp(s - lse))) for j in range(n))
    one = A.subs(s, 0)
    softmax_one = all(zero(one[0, j] - sp.exp(x[j]) / (1 + sp.Add(*[sp.exp(v) for v in x]))) for j in range(n))
    shifted = [sp.exp(x[j] - m) / (sp.exp(s - m) + sp.Add(*[sp.exp(v - m) for v in x])) for j in range(n)]
    shift = all(zero(shifted[j] - A[0, j]) for j in range(n))

    spec = AttentionSpec(n=16 if quick else 64, d_model=8, heads=4, causal=True, window=6, sink=True,
                         output_projection=True)
    v = random_inputs(spec, seed=seed)
    sinks = v["s_sink"][0] + 1.0  # about e: the sink takes a visible share
    _, A_num = numeric_attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], v["W_O"], spec=spec, s_sink=sinks)
    Q = (v["X"] @ v["W_Q"]).reshape(spec.n, spec.heads, spec.d_k).transpose(1, 0, 2)
    K = (v["X"] @ v["W_K"]).reshape(spec.n, spec.heads, spec.d_k).transpose(1, 0, 2)
    S = np.where(np.array(spec.allowed), Q @ K.transpose(0, 2, 1) * spec.scale_float, -np.inf)  # (H, n, n)
    with np.errstate(divide="ignore"):
        lse_num = np.log(np.exp(S).sum(-1))
    mass = 1.0 / (1.0 + np.exp(lse_num - sinks[:, None]))  # π = σ(s − lse)
    joined = np.concatenate([S, np.broadcast_to(sinks[:, None, None], (spec.heads, spec.n, 1))], axis=-1)
    ref = np.exp(joined - joined.max(-1, keepdims=True))
    ref = (ref / ref.sum(-1, keepdims=True))[..., :-1]
    return SinkResult(n=n, dropped_column=dropped, rescale=rescale, softmax_one=softmax_one, shift=shift,
                      rows_gap=float(np.abs(A_num.sum(-1) + mass - 1.0).max()),
                      reference_gap=float(np.abs(A_num - ref).max()), least_mass=float(mass.min()),
                      weights=A_num[0, :8, :8], mass=mass[0, :8])


# ---------------------------------------------------------------------------------------------- MLA
@dataclass(frozen=True)
class MlaResult:
    """What :func:`mla` found.

    Attributes
    ----------
    absorbed_exact : bool
        Integer weights, exactly: every head's non-rotary scores ``q·(W_UK c)`` equal ``(W_UKᵀ q)·c``.
    absorbed_gap : float
        float64, with the rotary part: the largest gap between the expanded and absorbed scores.
    ranks : tuple of int
        Exact rank of each head's effective ``W_QK = W_Q,nope (W_DKV W_UK)ᵀ + W_Q,rope W_KRᵀ`` (m × m).
    bound : int
        ``d_c + d_rope``.
    shared_rope_key : bool
        The rotary key of a token is one vector for all heads (its cache: ``d_c + d_rope`` numbers).
    """

    d_model: int
    heads: int
    d_c: int
    d_nope: int
    d_rope: int
    absorbed_exact: bool
    absorbed_gap: float
    ranks: tuple[int, ...]
    bound: int
    shared_rope_key: bool
    effective: tuple[np.ndarray, ...]


def mla_keys(X, W_DKV, W_UK, W_KR, heads: int, angles):
    """Per head, the keys ``[W_UK,h c_j | R(j) x_j W_KR]`` of MLA (one rotary key for all heads) and the latent ``c``."""
    c = X @ W_DKV  # (n, d_c)
    rope = _rotate(X @ W_KR, angles)  # (n, d_r): computed once
    d_n = W_UK.shape[1] // heads
    return [np.concatenate([c @ W_UK[:, h * d_n:(h + 1) * d_n], rope], axis=1) for h in range(heads)], c


def _rotate(M, angles):
    """Rotate each row's pairs (i, i + r/2) by ``angles[row] · θ_i`` (RoPE, rotate_half)."""
    r = M.shape[1] // 2
    theta = 10000.0 ** (-np.arange(r) / r)
    cos, sin = np.cos(angles[:, None] * theta), np.sin(angles[:, None] * theta)
    a, b = M[:, :r], M[:, r:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=1)


def mla(seed: int = 0, *, quick: bool) -> MlaResult:
    """Absorbed against expanded MLA scores (exact on integers, float64 with RoPE) and the rank of each head's W_QK."""
    m, H, d_c, d_n, d_r, n = (10, 2, 3, 4, 2, 6) if quick else (16, 4, 4, 6, 2, 12)
    rng = np.random.default_rng(seed)
    def ints(*shape: int) -> np.ndarray:
        return np.asarray(rng.integers(-3, 4, size=shape))

    W_Q, W_DKV, W_UK, W_KR, X = ints(m, H * (d_n + d_r)), ints(m, d_c), ints(d_c, H * d_n), ints(m, d_r), ints(n, m)
    exact = True
    sX, sW_Q, sW_DKV, sW_UK, sW_KR = (exact_matrix(name, M) for name, M in (
        ("X", X), ("W_Q", W_Q), ("W_DKV", W_DKV), ("W_UK", W_UK), ("W_KR", W_KR)))
    c = sX * sW_DKV
    for h in range(H):
        Wq = sW_Q[:, h * (d_n + d_r):h * (d_n + d_r) + d_n]
        Wuk = sW_UK[:, h * d_n:(h + 1) * d_n]
        q = sX * Wq
        expanded = q * (c * Wuk).T
        absorbed = (q * Wuk.T) * c.T  # (W_UKᵀ q)·c: the key never expanded
        exact &= expanded == absorbed
    angles = np.arange(n, dtype=float)
    keys, c_num = mla_keys(X.astype(float), W_DKV.astype(float), W_UK.astype(float), W_KR.astype(float), H, angles)
    gap, ranks, effective = 0.0, [], []
    for h in range(H):
        Wq = W_Q[:, h * (d_n + d_r):(h + 1) * (d_n + d_r)].astype(float)
        q = X @ Wq
        q_rot = np.concatenate([q[:, :d_n], _rotate(q[:, d_n:], angles)], axis=1)
        expanded = q_rot @ keys[h].T
        Wuk = W_UK[:, h * d_n:(h + 1) * d_n].astype(float)
        absorbed = (q_rot[:, :d_n] @ Wuk.T) @ c_num.T + q_rot[:, d_n:] @ keys[h][:, d_n:].T
        gap = max(gap, float(np.abs(expanded - absorbed).max() / np.abs(expanded).max()))
        W_eff = (sW_Q[:, h * (d_n + d_r):h * (d_n + d_r) + d_n] * (sW_DKV * sW_UK[:, h * d_n:(h + 1) * d_n]).T
                 + sW_Q[:, h * (d_n + d_r) + d_n:(h + 1) * (d_n + d_r)] * sW_KR.T)
        ranks.append(int(W_eff.rank()))
        effective.append(np.abs(np.array(W_eff, dtype=float)))
    shared = all(np.array_equal(keys[0][:, d_n:], k[:, d_n:]) for k in keys)
    return MlaResult(d_model=m, heads=H, d_c=d_c, d_nope=d_n, d_rope=d_r, absorbed_exact=bool(exact),
                     absorbed_gap=gap, ranks=tuple(ranks), bound=d_c + d_r, shared_rope_key=shared,
                     effective=tuple(e / e.max() for e in effective))


# ---------------------------------------------------------------------------------------------- NoPE
@dataclass(frozen=True)
class NopeResult:
    """What :func:`nope` found.

    Attributes
    ----------
    symbolic_last_invariant : bool
        Exact (n = 3, d = 1): the causal layer's last output is the same expression after swapping
        the first two tokens.
    causal_last_invariant, bidirectional_equivariant : bool
        float64 (every permutation of the earlier tokens; of all tokens): within 1e-12.
    causal_gap, bidirectional_gap : float
        The largest gaps.
    rope_last_invariant : bool
        The same causal check with RoPE left on (it must not hold: positions break the symmetry).
    rope_gap : float
    shifts : ndarray
        |ΔY| of every query under one swap, causal without positions and with RoPE (for the figure).
    """

    n: int
    symbolic_last_invariant: bool
    causal_last_invariant: bool
    causal_gap: float
    bidirectional_equivariant: bool
    bidirectional_gap: float
    rope_last_invariant: bool
    rope_gap: float
    shifts: np.ndarray


def _layer(spec: AttentionSpec, v: dict, X):
    return numeric_attention(X, v["W_Q"], v["W_K"], v["W_V"], v.get("W_O"), spec=spec, return_weights=False)


def nope(seed: int = 0, *, quick: bool, positions: str | None = None) -> NopeResult:
    """Permutations of the tokens through a layer without positions (``positions``: what the "no positions"
    layers get, ``None``; a study of the mutation passes ``"rope"``)."""
    n = 5 if quick else 6
    spec_c = AttentionSpec(n=n, d_model=8, heads=2, causal=True, positions=positions, output_projection=True)
    spec_b = spec_c.replace(causal=False)
    v = random_inputs(spec_c, seed=seed)
    X = v["X"]
    Y_c, Y_b = _layer(spec_c, v, X), _layer(spec_b, v, X)
    causal_gap = bidir_gap = 0.0
    for perm in itertools.permutations(range(n - 1)):
        P = [*perm, n - 1]
        causal_gap = max(causal_gap, float(np.abs(_layer(spec_c, v, X[P])[-1] - Y_c[-1]).max()))
    for perm in itertools.islice(itertools.permutations(range(n)), 0, None, 7 if quick else 1):
        P = list(perm)
        bidir_gap = max(bidir_gap, float(np.abs(_layer(spec_b, v, X[P]) - Y_b[P]).max()))
    rope = spec_c.replace(positions="rope")
    swap = [1, 0, *range(2, n)]
    Y_r = _layer(rope, v, X)
    rope_gap = float(np.abs(_layer(rope, v, X[swap])[-1] - Y_r[-1]).max())
    shifts = np.stack([np.abs(_layer(spec_c, v, X[swap])[swap] - Y_c).max(-1),
                       np.abs(_layer(rope, v, X[swap])[swap] - Y_r).max(-1)])
    sym = symbolic_attention(AttentionSpec(n=3, d_model=1, causal=True, positions=positions, scale="none"))
    x = sym.X
    last = sym.Y[2, 0]
    swapped = last.xreplace({x[0, 0]: x[1, 0], x[1, 0]: x[0, 0]})
    return NopeResult(n=n, symbolic_last_invariant=bool(sp.simplify(last - swapped) == 0),
                      causal_last_invariant=causal_gap <= 1e-12, causal_gap=causal_gap,
                      bidirectional_equivariant=bidir_gap <= 1e-12, bidirectional_gap=bidir_gap,
                      rope_last_invariant=rope_gap <= 1e-12, rope_gap=rope_gap, shifts=shifts)
