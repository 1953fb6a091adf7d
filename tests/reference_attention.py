"""Self-attention written directly from its definition in NumPy, for tests only.

Deliberately independent of attnsym (no import of attnsym.numeric or attnsym.symbolic), so
tests that compare attnsym with it are real cross-checks.
"""

from __future__ import annotations

import math

import numpy as np


def ref_positions(n, d, base=10000):
    pe = np.zeros((n, d))
    for pos in range(n):
        for col in range(d):
            angle = pos / base ** ((col - col % 2) / d)
            pe[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


def ref_attention(spec_kwargs, v):
    """Self-attention written directly from the definitions, in float64."""
    n, d = spec_kwargs["n"], spec_kwargs["d_model"]
    heads = spec_kwargs.get("heads", 1)
    d_k = spec_kwargs.get("d_k") or d // heads
    d_v = spec_kwargs.get("d_v") or d_k
    X = v["X"] + (ref_positions(n, d) if spec_kwargs.get("positions") else 0)
    zero = lambda k: np.zeros((1, k))
    Q = X @ v["W_Q"] + v.get("b_Q", zero(heads * d_k))
    K = X @ v["W_K"] + v.get("b_K", zero(heads * d_k))
    V = X @ v["W_V"] + v.get("b_V", zero(heads * d_v))
    scale = spec_kwargs.get("scale", "sqrt")
    c = 1 / math.sqrt(d_k) if scale == "sqrt" else 1.0 if scale == "none" else float(scale)
    allowed = np.ones((n, n), dtype=bool)
    if spec_kwargs.get("causal"):
        allowed &= np.tril(np.ones((n, n), dtype=bool))
    if spec_kwargs.get("mask") is not None:
        allowed &= np.array(spec_kwargs["mask"], dtype=bool)
    S_heads, A_heads, Z_heads = [], [], []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        S = c * Q[:, cols] @ K[:, cols].T
        S = np.where(allowed, S, -np.inf)
        A = np.zeros((n, n))
        for i in range(n):
            if allowed[i].any():
                e = np.exp(S[i] - S[i][allowed[i]].max()) * allowed[i]
                A[i] = e / e.sum()
        S_heads.append(S)
        A_heads.append(A)
        Z_heads.append(A @ V[:, h * d_v:(h + 1) * d_v])
    Z = np.hstack(Z_heads)
    Y = Z
    if "W_O" in v:
        Y = Z @ v["W_O"] + v.get("b_O", zero(d))
    return {"Q": Q, "K": K, "V": V, "S_heads": S_heads, "A_heads": A_heads, "Z": Z, "Y": Y}
