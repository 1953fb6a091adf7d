"""Cross-checks against PyTorch, an independent implementation with its own conventions.

* ``F.scaled_dot_product_attention``: (…, L, E) queries/keys/values; bool ``attn_mask`` True =
  *takes part* (our polarity); fully masked rows give zeros (our policy).
* ``nn.MultiheadAttention``: ``in_proj_weight`` is (3E, E) and applies ``x Wᵀ``, so our
  ``W_Q = in_proj_weight[:E].T`` (and ``W_K``, ``W_V`` the next blocks), ``W_O = out_proj.weight.T``;
  its bool ``attn_mask`` True = *not allowed* (the opposite polarity).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import AttentionSpec
from attnsym import numeric as nm
from attnsym.testing import TOLERANCES

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.oracle

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _tol(dtype: str) -> dict:
    t = TOLERANCES[dtype]
    return {"rtol": t.rtol, "atol": t.atol}


def _close(ours, theirs, dtype):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), **_tol(dtype))


def _split(t, heads):  # (..., n, H·w) -> (..., H, n, w)
    *batch, n, width = t.shape
    return t.reshape(*batch, n, heads, width // heads).transpose(-3, -2)


def _merge(t):  # (..., H, n, w) -> (..., n, H·w)
    *batch, heads, n, width = t.shape
    return t.transpose(-3, -2).reshape(*batch, n, heads * width)


CASES = [
    # (heads, causal, with_mask, batch, d_model)
    (1, False, False, (), 4),
    (1, True, False, (3,), 4),
    (2, False, True, (2,), 6),
    (3, True, True, (2, 2), 6),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("heads", "causal", "with_mask", "batch", "d_model"), CASES)
def test_sdpa_forward_and_autograd(dtype, heads, causal, with_mask, batch, d_model):
    n = 5
    rng = np.random.default_rng(heads * 10 + causal)
    tdtype = DTYPES[dtype]
    X = rng.standard_normal((*batch, n, d_model)).astype(dtype)
    Ws = [(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype) for _ in range(4)]
    G = rng.standard_normal((*batch, n, d_model)).astype(dtype)
    mask = rng.random((n, n)) < 0.7 if with_mask else None
    if with_mask:
        mask[1] = False  # one query that may attend to nothing
    W_O = Ws[3] if heads > 1 else None

    Xt = torch.tensor(X, dtype=tdtype, requires_grad=True)
    Wt = [torch.tensor(W, dtype=tdtype, requires_grad=True) for W in Ws]
    q, k, v = (_split(Xt @ W, heads) for W in Wt[:3])
    allowed = None
    if causal or with_mask:
        allowed = torch.ones(n, n, dtype=torch.bool)
        if causal:
            allowed = torch.tril(allowed)
        if with_mask:
            allowed = allowed & torch.from_numpy(mask)
    Z = _merge(F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
    Y_t = Z @ Wt[3] if heads > 1 else Z
    (Y_t * torch.tensor(G, dtype=tdtype)).sum().backward()

    kwargs = {"heads": heads, "causal": causal, "mask": mask}
    Y, A = nm.attention(X, *Ws[:3], W_O, **kwargs)
    _close(Y, Y_t, dtype)
    Y_lean = nm.attention(X, *Ws[:3], W_O, return_weights=False, block_size=2, **kwargs)
    _close(Y_lean, Y_t, dtype)
    # the weights against torch.softmax of the masked, scaled scores (SDPA does not return them)
    S_t = (q @ k.transpose(-1, -2)) / np.sqrt(d_model // heads)
    if allowed is not None:
        S_t = S_t.masked_fill(~allowed, float("-inf"))
    A_t = torch.nan_to_num(torch.softmax(S_t, dim=-1), nan=0.0)  # torch.softmax gives NaN rows when fully masked
    _close(A if heads > 1 else A[..., None, :, :], A_t, dtype)

    for block in (None, 2):
        grads = nm.attention_vjp(X, *Ws[:3], G, W_O, block_size=block, **kwargs)
        _close(grads["X"], Xt.grad, dtype)
        for name, W in zip(("W_Q", "W_K", "W_V", "W_O"), Wt, strict=True):
            if name in grads:
                _close(grads[name], W.grad, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("heads", "causal", "bias", "batch"), [(1, False, True, (2,)), (2, True, True, (3,)),
                                                                (4, False, False, ()), (2, False, True, ())])
def test_multihead_attention_module(dtype, heads, causal, bias, batch):
    E, n = 8, 6
    torch.manual_seed(heads + 7 * causal)
    tdtype = DTYPES[dtype]
    mha = torch.nn.MultiheadAttention(E, heads, bias=bias, batch_first=True, dtype=tdtype)
    if bias:  # torch initialises biases to 0, which would test nothing
        with torch.no_grad():
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    rng = np.random.default_rng(heads)
    X = rng.standard_normal((*batch, n, E)).astype(dtype)
    G = rng.standard_normal((*batch, n, E)).astype(dtype)
    # an explicit mask too, with no fully masked row (MultiheadAttention would give NaN there)
    allowed = rng.random((n, n)) < 0.6
    allowed[np.arange(n), np.arange(n)] = True

    Xt = torch.tensor(X, dtype=tdtype, requires_grad=True)
    forbidden = torch.from_numpy(~allowed)
    if causal:
        forbidden = forbidden | torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    Xb = Xt if batch else Xt[None]
    Y_t, A_t = mha(Xb, Xb, Xb, attn_mask=forbidden, need_weights=True, average_attn_weights=False)
    Y_t, A_t = (Y_t, A_t) if batch else (Y_t[0], A_t[0])
    (Y_t * torch.tensor(G, dtype=tdtype)).sum().backward()

    W_in = mha.in_proj_weight.detach().numpy()
    W_Q, W_K, W_V = (W_in[i * E:(i + 1) * E].T.copy() for i in range(3))
    W_O = mha.out_proj.weight.detach().numpy().T.copy()
    b = {}
    if bias:
        b_in = mha.in_proj_bias.detach().numpy()
        b = {"b_Q": b_in[:E].copy(), "b_K": b_in[E:2 * E].copy(), "b_V": b_in[2 * E:].copy(),
             "b_O": mha.out_proj.bias.detach().numpy().copy()}
    spec = AttentionSpec(n=n, d_model=E, heads=heads, causal=causal, mask=allowed.tolist(), bias=bias,
                         output_projection=True)
    Y, A = nm.attention(X, W_Q, W_K, W_V, W_O, spec=spec, **b)
    _close(Y, Y_t, dtype)
    A_t = A_t if heads > 1 else A_t[..., 0, :, :]
    _close(A, A_t, dtype)

    grads = nm.attention_vjp(X, W_Q, W_K, W_V, G, W_O, spec=spec, **b)
    _close(grads["X"], Xt.grad, dtype)
    g_in = mha.in_proj_weight.grad
    for i, name in enumerate(("W_Q", "W_K", "W_V")):
        _close(grads[name], g_in[i * E:(i + 1) * E].T, dtype)
    _close(grads["W_O"], mha.out_proj.weight.grad.T, dtype)
    if bias:
        gb = mha.in_proj_bias.grad
        for i, name in enumerate(("b_Q", "b_K", "b_V")):
            _close(grads[name], gb[i * E:(i + 1) * E], dtype)
        _close(grads["b_O"], mha.out_proj.bias.grad, dtype)


def test_long_sequence_blockwise_matches_sdpa_in_float32():
    n, d = 700, 16
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(np.float32)
    W = np.eye(d, dtype=np.float32)
    Xt = torch.from_numpy(X)
    ref = F.scaled_dot_product_attention(Xt, Xt, Xt, is_causal=True)
    Y = nm.attention(X, W, W, W, causal=True, return_weights=False, block_size=128)
    _close(Y, ref, "float32")


@pytest.mark.parametrize("block_size", [None, 2])
def test_autograd_through_our_own_forward_equals_our_analytic_vjp(block_size):
    """Torch tensors with requires_grad run through the array-API forward; autograd then differentiates it."""
    torch.manual_seed(0)
    X = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    Ws = [torch.randn(4, 4, dtype=torch.float64, requires_grad=True) for _ in range(4)]
    G = torch.randn(2, 5, 4, dtype=torch.float64)
    mask = torch.rand(5, 5) < 0.7
    mask[2] = False
    kw = dict(heads=2, causal=True, mask=mask, positions="sinusoidal")
    if block_size is None:
        Y, _ = nm.attention(X, *Ws, **kw)
    else:
        Y = nm.attention(X, *Ws, return_weights=False, block_size=block_size, **kw)
    (Y * G).sum().backward()
    grads = nm.attention_vjp(X.detach(), *(W.detach() for W in Ws[:3]), G, Ws[3].detach(), **kw)
    _close(grads["X"], X.grad, "float64")
    for name, W in zip(("W_Q", "W_K", "W_V", "W_O"), Ws, strict=True):
        _close(grads[name], W.grad, "float64")
