"""QK-norm over the whole projection (OLMo 2) and with a gain offset (Gemma 3's ``1 + g``) in the numeric view.

:func:`attnsym.numeric.attention` and :func:`attnsym.numeric.attention_vjp` against the same layer written
in PyTorch and differentiated by autograd, in float64, forward and every gradient (the gains included)
within 1e-10 — SymPy-free and NumPy-free on the reference side, so they share only the spec. The specs make
every step bite: grouped-query heads (a whole-projection ``g_K`` then has ``kv_heads·d_k`` entries, not
``heads·d_k``), rotate-half RoPE after the norm, qkv biases before it, a causal mask, batch dimensions;
the plain and the blockwise paths are both checked. Then ``attnsym.validate`` (symbolic ⇄ numeric) on such
specs, and the gain shapes each scope requires.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnsym as at
from attnsym import AttentionSpec
from attnsym.errors import ShapeError

torch = pytest.importorskip("torch")

BAR = 1e-10  # float64; the two computations differ only in rounding (observed ~1e-15)

BASE = dict(n=5, d_model=8, heads=4, kv_heads=2, d_k=4, causal=True, positions="rope", bias="qkv",
            output_projection=True, qk_norm=True)
SPECS = {
    "whole": AttentionSpec(**BASE, qk_norm_scope="whole_projection"),
    "offset": AttentionSpec(**BASE, qk_norm_offset=1.0),
    "whole-offset": AttentionSpec(**BASE, qk_norm_scope="whole_projection", qk_norm_offset=1.0, qk_norm_eps=1e-5),
}


def _values(spec: AttentionSpec, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = {name: 0.5 * rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}
    w["X"] = rng.standard_normal((2, spec.n, spec.d_model))
    return w


def _torch_layer(spec: AttentionSpec, t: dict):
    """The layer in PyTorch: biased projections, RMSNorm per head or over the whole row with gains ``o + g``,
    rotate-half RoPE, grouped-query heads, causal softmax, ``W_O``."""
    B, n, H, H_kv, d = 2, spec.n, spec.heads, spec.kv_heads, spec.d_k
    whole = spec.qk_norm_scope == "whole_projection"
    theta = torch.as_tensor(np.asarray(at.numeric.rope_frequencies(spec)))
    angle = torch.arange(n, dtype=torch.float64)[:, None] * theta[None, :]  # (n, d/2)
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)

    def norm(M, g):
        return M * torch.rsqrt(M.pow(2).mean(-1, keepdim=True) + spec.qk_norm_eps) * (spec.qk_norm_offset + g.reshape(-1))

    def heads(which: str, h: int):
        M = t["X"] @ t[f"W_{which}"] + t[f"b_{which}"]  # (B, n, h·w)
        if which != "V" and whole:
            M = norm(M, t[f"g_{which}"])
        M = M.view(B, n, h, -1).transpose(1, 2)  # (B, h, n, w)
        if which != "V":
            if not whole:
                M = norm(M, t[f"g_{which}"])
            half = d // 2
            M = M * cos + torch.cat([-M[..., half:], M[..., :half]], -1) * sin
        return M

    Q, K, V = heads("Q", H), heads("K", H_kv), heads("V", H_kv)
    K, V = K.repeat_interleave(H // H_kv, 1), V.repeat_interleave(H // H_kv, 1)
    S = (Q @ K.transpose(-1, -2)) * d ** -0.5
    S = S.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    A = torch.softmax(S, -1)
    Z = (A @ V).transpose(1, 2).reshape(B, n, H * spec.d_v)
    return Z @ t["W_O"], A  # bias="qkv": no b_O


@pytest.mark.parametrize("block_size", [None, 2], ids=["plain", "blockwise"])
@pytest.mark.parametrize("name", list(SPECS))
def test_forward_and_vjp_equal_torch_autograd(name, block_size):
    spec = SPECS[name]
    w = _values(spec)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in w.items()}
    Y_ref, A_ref = _torch_layer(spec, t)
    G = np.random.default_rng(1).standard_normal(tuple(Y_ref.shape))
    (Y_ref * torch.as_tensor(G)).sum().backward()
    params = {k: w[k] for k in spec.parameter_names}
    if block_size is None:
        Y, A = at.numeric.attention(w["X"], spec=spec, **params)
        assert np.abs(A - A_ref.detach().numpy()).max() < BAR
    else:
        Y = at.numeric.attention(w["X"], spec=spec, return_weights=False, block_size=block_size, **params)
    assert np.abs(Y - Y_ref.detach().numpy()).max() < BAR
    grads = at.numeric.attention_vjp(w["X"], spec=spec, G=G, block_size=block_size, **params)
    assert sorted(grads) == sorted(["X", *spec.parameter_names])
    for key, g in grads.items():
        ref = t[key].grad.numpy()
        assert g.shape == ref.shape, key
        assert np.abs(g - ref).max() < BAR * max(1.0, np.abs(ref).max()), key
    assert min(np.abs(grads["g_Q"]).max(), np.abs(grads["g_K"]).max()) > 1e-3  # the gains' gradients are live


def test_the_scope_and_the_offset_change_the_output():
    """Neither field may be ignored: each gives a different layer than per-head, offset-0 QK-norm."""
    spec = SPECS["whole-offset"]
    w = _values(spec)
    per_head = spec.replace(qk_norm_scope="per_head", qk_norm_offset=0.0, qk_norm_eps=1e-6)
    params = {k: w[k] for k in spec.parameter_names if k not in ("g_Q", "g_K")}
    d_k = spec.d_k
    Y = at.numeric.attention(w["X"], spec=spec, return_weights=False, **params, g_Q=w["g_Q"], g_K=w["g_K"])
    # per head with the first head's gains and offset 0: the norm's denominators and gains differ
    Y_head = at.numeric.attention(w["X"], spec=per_head, return_weights=False, **params,
                                  g_Q=w["g_Q"][:, :d_k], g_K=w["g_K"][:, :d_k])
    assert np.abs(Y - Y_head).max() > 1e-3
    zero = spec.replace(qk_norm_offset=0.0)
    Y_zero = at.numeric.attention(w["X"], spec=zero, return_weights=False, **params, g_Q=w["g_Q"], g_K=w["g_K"])
    Y_one = at.numeric.attention(w["X"], spec=zero, return_weights=False, **params, g_Q=w["g_Q"] + 1.0,
                                 g_K=w["g_K"] + 1.0)
    assert np.abs(Y - Y_zero).max() > 1e-3
    assert np.abs(Y - Y_one).max() < 1e-13  # the offset is exactly a shift of the gains


def test_head_attention_norms_the_whole_projection_too():
    spec = SPECS["whole-offset"]
    w = _values(spec)
    X = w["X"]

    def per_head(which: str, h: int):
        M = X @ w[f"W_{which}"] + w[f"b_{which}"]
        return M.reshape(2, spec.n, h, -1).transpose(0, 2, 1, 3)

    Z, A = at.numeric.head_attention(per_head("Q", spec.heads), per_head("K", spec.kv_heads),
                                     per_head("V", spec.kv_heads), spec=spec, g_Q=w["g_Q"], g_K=w["g_K"])
    Y_ref, A_ref = at.numeric.attention(X, spec=spec, **{k: w[k] for k in spec.parameter_names})
    assert np.abs(A - A_ref).max() < 1e-13
    assert np.abs(Z @ w["W_O"] - Y_ref).max() < 1e-13


@pytest.mark.parametrize("spec", [
    AttentionSpec(n=2, d_model=2, heads=2, d_k=1, causal=True, qk_norm=True, qk_norm_scope="whole_projection",
                  qk_norm_offset=1.0),
    AttentionSpec(n=2, d_model=2, d_k=2, causal=True, qk_norm=True, qk_norm_offset=1.0),
], ids=["whole-offset", "per-head-offset"])
def test_validate_runs_the_whole_projection_and_the_offset(spec):
    report = at.validate(spec, seed=2)
    assert report.passed, report.to_markdown()
    assert [row.quantity for row in report][-2:] == ["dg_Q", "dg_K"]


@pytest.mark.parametrize("scope, good, bad", [("per_head", 4, 16), ("whole_projection", 16, 4)])
def test_gains_have_the_length_of_their_scope(scope, good, bad):
    spec = SPECS["whole"].replace(qk_norm_scope=scope)
    w = _values(spec)
    params = {k: w[k] for k in spec.parameter_names if k not in ("g_Q", "g_K")}
    g_K = np.ones(8 if scope == "whole_projection" else 4)  # kv_heads·d_k or d_k
    at.numeric.attention(w["X"], spec=spec, **params, g_Q=np.ones(good), g_K=g_K)
    length = "heads\\*d_k" if scope == "whole_projection" else "d_k"
    with pytest.raises(ShapeError, match=fr"g_Q must have shape \(1, {length}\) or \({length},\) = \(1, {good}\) "
                                         fr"for qk_norm_scope='{scope}' \(got \({bad},\)\)"):
        at.numeric.attention(w["X"], spec=spec, **params, g_Q=np.ones(bad), g_K=g_K)
    with pytest.raises(ShapeError, match=fr"g_Q is required by the spec .*qk_norm_scope='{scope}', shape \(1, {good}\)"):
        at.numeric.attention_vjp(w["X"], spec=spec, G=np.ones((2, spec.n, spec.d_model)), **params, g_K=g_K)
