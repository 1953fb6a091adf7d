"""The 2026 variants in every view: the sink, the chunk, QK-norm over the whole projection with a 1 + w gain.

numeric forward and VJP against torch autograd (float64, 1e-12: two implementations of the same
float64 arithmetic), the symbolic layer against the numeric one at random numbers, and every view
that does not implement a variant refusing it by name.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from attnsym import AttentionSpec
from attnsym.derivation import derive
from attnsym.errors import SpecError
from attnsym.numeric import attention, attention_vjp, causal_decode, head_attention
from attnsym.numeric.layer import BoundLayer, head_rows, sink_softmax
from attnsym.symbolic import gradients
from attnsym.symbolic.matrices import attention as symbolic_attention

torch = pytest.importorskip("torch")

SPEC = AttentionSpec(n=6, d_model=8, heads=4, kv_heads=2, d_k=3, causal=True, window=4, chunk=3, sink=True,
                     output_projection=True)


def _torch_layer(T, X, spec):
    """The reference: gpt-oss's eager rule, softmax over [scores, sink] with the sink column dropped."""
    B, n, _ = X.shape
    g = spec.kv_group
    q = (T["X"] @ T["W_Q"]).reshape(B, n, spec.heads, spec.d_k).transpose(1, 2)
    k = (T["X"] @ T["W_K"]).reshape(B, n, spec.kv_heads, spec.d_k).transpose(1, 2).repeat_interleave(g, dim=1)
    v = (T["X"] @ T["W_V"]).reshape(B, n, spec.kv_heads, spec.d_v).transpose(1, 2).repeat_interleave(g, dim=1)
    S = (q @ k.transpose(-1, -2) / np.sqrt(spec.d_k)).masked_fill(~torch.tensor(np.array(spec.allowed)), -torch.inf)
    sink = T["s_sink"].reshape(1, spec.heads, 1, 1).expand(B, spec.heads, n, 1)
    P = torch.softmax(torch.cat([S, sink], -1), -1)[..., :-1]
    return (P @ v).transpose(1, 2).reshape(B, n, -1) @ T["W_O"], P


def test_sink_forward_and_vjp_match_torch_autograd():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, SPEC.n, SPEC.d_model))
    W = {k: rng.standard_normal(SPEC.shapes[k]) for k in ("W_Q", "W_K", "W_V", "W_O")}
    s, G = rng.standard_normal((1, SPEC.heads)) + 1.0, rng.standard_normal((2, SPEC.n, SPEC.d_model))
    Y, A = attention(X, W["W_Q"], W["W_K"], W["W_V"], W["W_O"], spec=SPEC, s_sink=s)
    grads = attention_vjp(X, W["W_Q"], W["W_K"], W["W_V"], G, W["W_O"], spec=SPEC, s_sink=s)
    T = {k: torch.tensor(v, requires_grad=True) for k, v in dict(X=X, s_sink=s, **W).items()}
    Yt, At = _torch_layer(T, X, SPEC)
    (Yt * torch.tensor(G)).sum().backward()
    assert np.abs(Yt.detach().numpy() - Y).max() < 1e-12 and np.abs(At.detach().numpy() - A).max() < 1e-12
    assert set(grads) == set(T)
    for name, t in T.items():
        assert np.abs(t.grad.numpy() - grads[name]).max() < 1e-12, name
    sums = A.sum(-1)
    assert sums.mean() < 0.9 and sums.max() <= 1.0  # the sink keeps visible mass: rows are not renormalised
    assert np.array_equal(A[..., 1, 3] == 0, np.ones_like(A[..., 1, 3], dtype=bool))  # another chunk: never seen


def test_sink_mass_and_the_shift():
    """π = 1 − Σ A, and the shift (sink inside the max or not) changes nothing; a fully masked row is all sink."""
    rng = np.random.default_rng(1)
    S = rng.standard_normal((2, 3, 4)) * 3
    S[0, 1, :] = -np.inf
    s = rng.standard_normal(2)
    A, pi = sink_softmax(np, S, s)
    assert np.allclose(A.sum(-1, keepdims=True) + pi, 1.0, rtol=0, atol=1e-15)
    assert pi[0, 1, 0] == 1.0 and not A[0, 1].any()
    outside = np.exp(np.where(np.isfinite(S), S, -np.inf)) / (np.exp(s)[:, None, None] + np.exp(S).sum(-1,
                                                                                                      keepdims=True))
    assert np.abs(outside - A).max() < 1e-15


@pytest.mark.parametrize("scope, offset", [("per_head", 1.0), ("whole_projection", 1.0)])
def test_symbolic_qk_norm_and_sink_equal_numeric(scope, offset):
    spec = AttentionSpec(n=2, d_model=2, heads=2, d_k=2, causal=True, sink=True, qk_norm=True, qk_norm_scope=scope,
                         qk_norm_offset=offset, qk_norm_eps=1e-6, output_projection=True)
    sym = symbolic_attention(spec)
    rng = np.random.default_rng(2)
    values = {name: rng.standard_normal(spec.shapes[name]) for name in ("X", *spec.parameter_names)}
    symbols = [x for k in values for x in sym.inputs[k]]
    numbers = [float(x) for k in values for x in values[k].reshape(-1)]
    outputs = [[M.tolist() for M in sym.A_heads], [M.tolist() for M in sym.sink_mass_heads]]
    evaluate = sp.lambdify(symbols, outputs, modules="math")
    A_sym, pi_sym = (np.array(m, dtype=float) for m in evaluate(*numbers))
    layer = BoundLayer(spec=spec, xp=np, batch_shape=(), dtype="float64", device="cpu",
                       mask=None, sinks=values["s_sink"])
    X = values["X"]
    gains = {"g_Q": values["g_Q"], "g_K": values["g_K"]}
    Q, K = head_rows(layer, gains, X @ values["W_Q"], "Q"), head_rows(layer, gains, X @ values["W_K"], "K")
    S = np.where(np.array(spec.allowed), Q @ K.transpose(0, 2, 1) * spec.scale_float, -np.inf)
    A, pi = sink_softmax(np, S, values["s_sink"])
    assert np.abs(A - A_sym).max() < 1e-12 and np.abs(pi - pi_sym).max() < 1e-12


def test_views_that_do_not_implement_a_variant_refuse_it():
    X, W = np.ones((6, 8)), np.ones((8, 12))
    with pytest.raises(SpecError, match="causal_decode does not implement sink=True"):
        causal_decode(X, W, W[:, :6], W[:, :6], np.ones((12, 8)), spec=SPEC)
    with pytest.raises(SpecError, match="head_attention does not implement sink=True"):
        head_attention(np.ones((4, 6, 3)), np.ones((2, 6, 3)), np.ones((2, 6, 3)), spec=SPEC)
    with pytest.raises(SpecError, match=r"attnsym\.numeric\.attention does not implement query_temperature"):
        spec = AttentionSpec(n=2, d_model=4, query_temperature=(2.0, 0.5))
        attention(np.ones((2, 4)), np.eye(4), np.eye(4), np.eye(4), spec=spec)
    with pytest.raises(SpecError, match=r"attnsym\.symbolic\.attention does not implement query_temperature"):
        symbolic_attention(AttentionSpec(n=2, d_model=2, query_temperature=(2.0, 0.5)))
    with pytest.raises(SpecError, match=r"attnsym\.derive does not implement query_temperature"):
        derive(AttentionSpec(n=2, d_model=2, query_temperature=(2.0, 0.5)))
    with pytest.raises(SpecError, match="method='matrix'"):
        gradients(AttentionSpec(n=2, d_model=2, sink=True), method="matrix")
    with pytest.raises(SpecError, match="block_size selects the blockwise path, which does not implement sink"):
        attention(X, W, W[:, :6], W[:, :6], np.ones((12, 8)), spec=SPEC, s_sink=np.zeros(4), return_weights=False,
                  block_size=2)
    with pytest.raises(SpecError, match=r"qk_norm_scope='per_head' and qk_norm_offset=1\.0 only apply"):
        AttentionSpec(n=2, d_model=2, qk_norm_offset=1.0)
