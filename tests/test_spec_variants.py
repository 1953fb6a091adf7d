"""The attention options of modern model families: kv_heads, window, softcap, qk_norm, rope_scaling, bias="qkv".

Each field against an eager PyTorch formula written here independently (``repeat_interleave``
for grouped-query heads, ``torch.tanh`` soft-capping, a banded mask, RMSNorm, Hugging Face's
``rotate_half``), the frequencies of ``rope_scaling`` against transformers' own functions, and the
gradients against torch autograd.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import modern_attention_specs

import attnsym as at
from attnsym.errors import ShapeError, SpecError
from attnsym.spec import AttentionSpec, RopeScaling
from attnsym.tolerances import TOLERANCES

torch = pytest.importorskip("torch")

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 32}

VARIANTS = {
    "gqa": dict(heads=4, kv_heads=2),
    "mqa-causal": dict(heads=4, kv_heads=1, causal=True),
    "window-causal": dict(heads=2, causal=True, window=2),
    "window-bidirectional": dict(heads=2, window=2),
    "softcap": dict(heads=2, softcap=0.7),
    "qk-norm-rope": dict(heads=2, kv_heads=1, qk_norm=True, qk_norm_eps=1e-5, positions="rope"),
    "gemma2-like": dict(heads=4, kv_heads=2, causal=True, window=3, softcap=1.5, scale=6.0 ** -0.5,
                        positions="rope", position_base=10000.0),
    "llama3-rope": dict(heads=4, kv_heads=2, causal=True, positions="rope", position_base=500000.0,
                        rope_scaling=LLAMA3),
    "linear-rope-interleaved-partial": dict(heads=2, positions="rope", rope_pairing="interleaved", rotary_pct=0.5,
                                            rope_scaling={"type": "linear", "factor": 4.0}, d_k=4),
    "qwen2-bias": dict(heads=4, kv_heads=2, causal=True, bias="qkv", positions="rope"),
    "alibi-gqa-softcap": dict(heads=3, kv_heads=1, d_k=2, causal=True, positions="alibi", softcap=0.5),
}


def _spec(name: str, n: int = 5, d_model: int = 8) -> AttentionSpec:
    return AttentionSpec(n=n, d_model=d_model, **VARIANTS[name])


def _inputs(spec: AttentionSpec, seed: int, dtype=np.float64, batch=(2,)):
    rng = np.random.default_rng(seed)
    shapes = spec.shapes
    arrays = {"X": rng.standard_normal((*batch, spec.n, spec.d_model))}
    for name in spec.parameter_names:
        arrays[name] = rng.standard_normal(shapes[name]) * (0.5 if name.startswith("W") else 1.0)
        if name.startswith("g_"):
            arrays[name] = 1.0 + 0.3 * arrays[name]
    return {k: v.astype(dtype) for k, v in arrays.items()}


# ---------------------------------------------------------------------------- the independent reference
def _inv_freq(spec: AttentionSpec):
    """Inverse frequencies as Hugging Face writes them, in float64, scaled by the published rules."""
    dim = spec.rotary_dims
    inv = 1.0 / (float(spec.position_base) ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    rs = spec.rope_scaling
    if rs is None:
        return inv
    if rs.rope_type == "linear":
        return inv / rs.factor
    L = rs.original_max_position_embeddings
    low_wl, high_wl = L / rs.low_freq_factor, L / rs.high_freq_factor
    wavelen = 2 * math.pi / inv
    out = torch.where(wavelen > low_wl, inv / rs.factor, inv)
    smooth = (L / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor)
    smoothed = (1 - smooth) * out / rs.factor + smooth * out
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return torch.where(medium, smoothed, out)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def _torch_rope(x, spec: AttentionSpec, positions):
    rot = spec.rotary_dims
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    freqs = positions.to(torch.float64)[:, None] * _inv_freq(spec)[None, :]  # (n, rot/2)
    if spec.rope_pairing == "rotate_half":
        emb = torch.cat((freqs, freqs), dim=-1)
        x_rot = x_rot * emb.cos() + _rotate_half(x_rot) * emb.sin()
    else:
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
        x_rot = x_rot * emb.cos() + _rotate_every_two(x_rot) * emb.sin()
    return torch.cat((x_rot, x_pass), dim=-1)


def _alibi_slopes(heads: int):
    closest = 2 ** math.floor(math.log2(heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest != heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** (2 * i + 1) for i in range(heads - closest)]
    return torch.tensor(slopes, dtype=torch.float64)


def torch_reference(spec: AttentionSpec, t: dict, allowed=None):
    """Eager attention with torch ops: ``(Y, A)``; ``t`` holds torch tensors named as the spec's parameters."""
    X = t["X"]
    B, n, _ = X.shape
    H, Hkv, dk, dv = spec.heads, spec.kv_heads, spec.d_k, spec.d_v

    def proj(name, heads, width):
        M = X @ t[f"W_{name}"] + (t[f"b_{name}"] if f"b_{name}" in t else 0)
        return M.view(B, n, heads, width).transpose(1, 2)  # (B, h, n, w)

    q, k, v = proj("Q", H, dk), proj("K", Hkv, dk), proj("V", Hkv, dv)
    if spec.qk_norm:
        q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + spec.qk_norm_eps) * t["g_Q"].reshape(dk)
        k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + spec.qk_norm_eps) * t["g_K"].reshape(dk)
    pos = torch.arange(n)
    if spec.positions == "rope":
        q, k = _torch_rope(q, spec, pos), _torch_rope(k, spec, pos)
    k = torch.repeat_interleave(k, H // Hkv, dim=1)
    v = torch.repeat_interleave(v, H // Hkv, dim=1)
    S = (q @ k.transpose(-1, -2)) * spec.scale_float  # (B, H, n, n)
    if spec.positions == "alibi":
        S = S - _alibi_slopes(H)[:, None, None] * (pos[:, None] - pos[None, :]).abs().to(S.dtype)
    if spec.softcap is not None:
        S = torch.tanh(S / spec.softcap) * spec.softcap
    ok = torch.ones(n, n, dtype=torch.bool)
    if spec.causal:
        ok = ok & torch.tril(torch.ones(n, n, dtype=torch.bool))
    if spec.window is not None:
        dist = pos[:, None] - pos[None, :]
        ok = ok & ((dist < spec.window) if spec.causal else (dist.abs() < spec.window))
    ok = ok.expand(B, 1, n, n)
    if allowed is not None:
        ok = ok & allowed[:, None]
    A = torch.softmax(S.masked_fill(~ok, float("-inf")), dim=-1)
    A = torch.where(ok.any(-1, keepdim=True), A, torch.zeros_like(A))  # fully masked rows: 0
    Z = (A @ v).transpose(1, 2).reshape(B, n, H * dv)
    Y = Z @ t["W_O"] + (t["b_O"] if "b_O" in t else 0) if "W_O" in t else Z
    return Y, A


def _ours(spec, a):
    params = {k: v for k, v in a.items() if k != "X"}
    W = [params.pop(k) for k in ("W_Q", "W_K", "W_V")]
    return at.numeric.attention(a["X"], *W, params.pop("W_O", None), spec=spec, **params)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_matches_torch_reference(name, dtype):
    spec = _spec(name)
    a = _inputs(spec, seed=len(name), dtype=np.dtype(dtype))
    Y, A = _ours(spec, a)
    Y_t, A_t = torch_reference(spec, {k: torch.from_numpy(v.astype(np.float64)) for k, v in a.items()})
    tol = TOLERANCES[dtype]
    A = A if spec.heads > 1 else A[..., None, :, :]
    np.testing.assert_allclose(A, A_t.numpy(), rtol=tol.rtol, atol=tol.atol)
    np.testing.assert_allclose(Y, Y_t.numpy(), rtol=tol.rtol, atol=tol.atol * 10)
    assert Y.dtype == np.dtype(dtype)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_gradients_match_torch_autograd(name):
    spec = _spec(name, n=4)
    a = _inputs(spec, seed=7 + len(name))
    G = np.random.default_rng(3).standard_normal((2, spec.n, spec.d_out))
    params = {k: v for k, v in a.items() if k != "X"}
    W = [params.pop(k) for k in ("W_Q", "W_K", "W_V")]
    ours = at.numeric.attention_vjp(a["X"], *W, G, params.pop("W_O", None), spec=spec, **params)
    t = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in a.items()}
    Y, _ = torch_reference(spec, t)
    (Y * torch.from_numpy(G)).sum().backward()
    assert sorted(ours) == sorted(t)
    for k, tensor in t.items():
        np.testing.assert_allclose(ours[k], tensor.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=k)


def test_gradients_of_qk_norm_gains_match_finite_differences():
    spec = _spec("qk-norm-rope", n=3)
    a = _inputs(spec, seed=11, batch=())
    G = np.random.default_rng(5).standard_normal((spec.n, spec.d_out))
    rest = {k: v for k, v in a.items() if k not in ("X", "W_Q", "W_K", "W_V")}
    grads = at.numeric.attention_vjp(a["X"], a["W_Q"], a["W_K"], a["W_V"], G, rest.pop("W_O"), spec=spec, **rest)

    def loss(g_K):
        Y = at.numeric.attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], spec=spec, g_Q=a["g_Q"], g_K=g_K,
                                 return_weights=False)
        return float(np.sum(G * Y))

    E = np.zeros_like(a["g_K"])
    E[0, 1] = 1e-6
    fd = (loss(a["g_K"] + E) - loss(a["g_K"] - E)) / 2e-6
    assert abs(fd - grads["g_K"][0, 1]) < 1e-7


# ---------------------------------------------------------------------------- head_attention
@pytest.mark.parametrize("name", ["gemma2-like", "llama3-rope", "qk-norm-rope", "alibi-gqa-softcap", "qwen2-bias"])
def test_head_attention_equals_the_layer_and_honours_padding(name):
    spec = _spec(name)
    a = _inputs(spec, seed=2)
    Y, A = _ours(spec, a)
    X = a["X"]

    def heads(name_, h, w):
        M = X @ a[f"W_{name_}"] + a.get(f"b_{name_}", 0)
        return M.reshape(2, spec.n, h, w).transpose(0, 2, 1, 3)

    Q, K, V = heads("Q", spec.heads, spec.d_k), heads("K", spec.kv_heads, spec.d_k), heads("V", spec.kv_heads, spec.d_v)
    gains = {k: a[k] for k in ("g_Q", "g_K") if k in a}
    Z, A2 = at.numeric.head_attention(Q, K, V, spec=spec, **gains)
    np.testing.assert_allclose(A2, A, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Z @ a["W_O"] + a.get("b_O", 0), Y, rtol=1e-12, atol=1e-12)
    # a padded batch: the second sequence has its first token padded away
    pad = np.ones((2, spec.n, spec.n), dtype=bool)
    pad[1, :, 0] = False
    _, A_p = at.numeric.head_attention(Q, K, V, pad, spec=spec, **gains)
    t = {k: torch.from_numpy(v) for k, v in a.items()}
    _, A_t = torch_reference(spec, t, allowed=torch.from_numpy(pad))
    np.testing.assert_allclose(A_p, A_t.numpy(), rtol=1e-12, atol=1e-14)
    assert np.all(A_p[1, :, :, 0] == 0)


def test_head_attention_positions_shift_rope_and_alibi_consistently():
    """Positions p + 3 give the same weights as p (both schemes depend on differences only)."""
    for name in ("llama3-rope", "alibi-gqa-softcap"):
        spec = _spec(name, n=4)
        rng = np.random.default_rng(0)
        Q = rng.standard_normal((1, spec.heads, 4, spec.d_k))
        K, V = rng.standard_normal((2, 1, spec.kv_heads, 4, spec.d_k))
        _, A0 = at.numeric.head_attention(Q, K, V, spec=spec)
        _, A3 = at.numeric.head_attention(Q, K, V, spec=spec, positions=np.arange(3, 7)[None])
        np.testing.assert_allclose(A3, A0, rtol=1e-10, atol=1e-12)


def test_head_attention_refuses_bad_shapes():
    spec = _spec("gqa")
    Q = np.zeros((1, 4, 5, 2))
    with pytest.raises(ShapeError, match=r"K must have shape \(\.\.\., kv_heads, n, d_k\)"):
        at.numeric.head_attention(Q, Q, Q, spec=spec)
    with pytest.raises(ShapeError, match="g_Q is required"):
        at.numeric.head_attention(np.zeros((2, 5, 4)), np.zeros((1, 5, 4)), np.zeros((1, 5, 4)),
                                  spec=_spec("qk-norm-rope"))


# ---------------------------------------------------------------------------- rope scaling against transformers
@pytest.mark.parametrize("scaling", [{"rope_type": "linear", "factor": 4.0}, LLAMA3,
                                     dict(LLAMA3, original_max_position_embeddings=8192, factor=8.0)])
def test_rope_scaling_frequencies_match_transformers(scaling):
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    d_k, base = 64, 500000.0
    config = transformers.LlamaConfig(hidden_size=d_k * 2, num_attention_heads=2, head_dim=d_k, rope_theta=base,
                                      rope_scaling=dict(scaling))
    inv_hf, _ = ROPE_INIT_FUNCTIONS[scaling["rope_type"]](config, "cpu")  # float32
    spec = AttentionSpec(n=1, d_model=2 * d_k, heads=2, positions="rope", position_base=base, rope_scaling=scaling)
    ours = at.numeric.rope_frequencies(spec)
    np.testing.assert_allclose(ours, inv_hf.double().numpy(), rtol=2e-6, atol=0)
    if scaling == LLAMA3:  # every band of the rule occurs
        bands = {spec.rope_scaling.llama3_band(float(f)) for f in at.numeric.rope_frequencies(spec.replace(
            rope_scaling=None))}
        assert bands == {"low", "medium", "high"}


# ---------------------------------------------------------------------------- the spec fields
def test_fields_shapes_and_parameters():
    spec = AttentionSpec(n=3, d_model=8, heads=4, kv_heads=2, bias="qkv", qk_norm=True)
    assert spec.shapes["W_K"] == (8, 4) and spec.shapes["W_V"] == (8, 4) and spec.shapes["b_K"] == (1, 4)
    assert spec.parameter_names == ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "g_Q", "g_K")
    assert spec.parameter_count == 64 + 32 + 32 + 64 + 8 + 4 + 4 + 2 + 2
    assert [spec.kv_head_of(h) for h in range(4)] == [0, 0, 1, 1]
    assert "kv_heads=2" in spec.describe() and "q/k/v biases" in spec.describe()
    assert AttentionSpec(n=1, d_model=4, heads=2, bias=True).bias_names == ("b_Q", "b_K", "b_V", "b_O")
    assert AttentionSpec(n=2, d_model=4) == AttentionSpec(n=2, d_model=4, kv_heads=1)


def test_window_pattern_and_fully_masked_rows():
    causal = AttentionSpec(n=4, d_model=2, causal=True, window=2)
    allowed = causal.allowed_array()
    i, j = np.indices((4, 4))
    np.testing.assert_array_equal(allowed, (i - j >= 0) & (i - j < 2))
    both = AttentionSpec(n=4, d_model=2, window=1)
    np.testing.assert_array_equal(both.allowed_array(), np.eye(4, dtype=bool))
    mask = np.ones((4, 4), dtype=bool)
    mask[3, 3] = False
    masked = AttentionSpec(n=4, d_model=2, causal=True, window=1, mask=mask)
    assert masked.fully_masked_rows == (3,)


def test_position_base_floats():
    assert AttentionSpec(n=1, d_model=2, positions="rope", position_base=500000.0).position_base == 500000
    assert type(AttentionSpec(n=1, d_model=2, positions="rope", position_base=1e6).position_base) is int
    odd = AttentionSpec(n=1, d_model=2, positions="rope", position_base=12345.5)
    assert odd.position_base == 12345.5
    with pytest.raises(SpecError, match="integer for sinusoidal"):
        AttentionSpec(n=1, d_model=2, positions="sinusoidal", position_base=12345.5)


def test_with_is_replace_and_keeps_gqa():
    spec = AttentionSpec(n=8, d_model=16, heads=4, kv_heads=2, causal=True, window=4)
    small = spec.with_(n=3, d_model=4, heads=2, kv_heads=1, window=2)
    assert (small.heads, small.kv_heads, small.d_k, small.window) == (2, 1, 2, 2)
    assert spec.with_(n=3) == spec.replace(n=3)
    plain = AttentionSpec(n=2, d_model=8, heads=2)
    assert plain.with_(heads=4).kv_heads == 4


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(heads=4, kv_heads=3, d_model=8), r"kv_heads must divide heads \(got heads=4, kv_heads=3\)"),
    (dict(kv_heads=0), r"kv_heads must be a positive integer \(got 0\)"),
    (dict(window=0), r"window must be a positive integer \(got 0\)"),
    (dict(window=2.0), r"window must be a positive integer \(got 2.0\)"),
    (dict(softcap=0.0), r"softcap must be a positive finite number or None \(got 0.0\)"),
    (dict(softcap=float("inf")), r"softcap must be a finite real number \(got inf\)"),
    (dict(softcap="50"), r"softcap must be a finite real number"),
    (dict(qk_norm=1), r"qk_norm must be True or False \(got 1\)"),
    (dict(qk_norm_eps=1e-5), r"qk_norm_eps=1e-05 only applies with qk_norm=True"),
    (dict(bias="qk"), r"bias must be True \(every projection\), False or 'qkv'"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), r"rope_scaling=.* only applies with positions='rope'"),
    (dict(positions="rope", rope_scaling={"rope_type": "proportional", "factor": 2.0}),
     r"rope_scaling type 'proportional' is not supported \(supported: 'linear', 'dynamic', 'llama3', 'yarn', "
     r"'longrope'\)"),
    (dict(positions="rope", rope_scaling={"rope_type": "linear", "factor": 2.0, "beta": 1}),
     r"unknown keys 'beta'"),
    (dict(positions="rope", rope_scaling={"rope_type": "llama3", "factor": 2.0}),
     r"rope_scaling of type 'llama3' needs low_freq_factor, high_freq_factor, original_max_position_embeddings"),
    (dict(positions="rope", rope_scaling={"factor": 2.0}), r"rope_scaling needs a 'rope_type'"),
    (dict(positions="rope", rope_scaling={"rope_type": "linear", "factor": -1.0}),
     r"rope_scaling factor must be a positive finite number"),
])
def test_bad_fields_name_the_argument(kwargs, message):
    base = dict(n=2, d_model=4)
    with pytest.raises(SpecError, match=message):
        AttentionSpec(**{**base, **kwargs})


def test_rope_scaling_is_normalised_and_hashable():
    a = AttentionSpec(n=2, d_model=4, positions="rope", rope_scaling={"type": "linear", "factor": 4})
    b = AttentionSpec(n=2, d_model=4, positions="rope", rope_scaling=RopeScaling("linear", 4.0))
    assert a == b and hash(a) == hash(b) and isinstance(a.rope_scaling, RopeScaling)
    assert AttentionSpec(n=2, d_model=4, positions="rope", rope_scaling={"rope_type": "default"}).rope_scaling is None


def test_blockwise_refuses_softcap_and_routes_it_dense():
    spec = _spec("softcap")
    a = _inputs(spec, seed=0)
    with pytest.raises(SpecError, match="does not implement softcap"):
        at.numeric.attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], spec=spec, return_weights=False,
                             block_size=2)
    Y = at.numeric.attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], spec=spec, return_weights=False)
    np.testing.assert_allclose(Y, _ours(spec, a)[0], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["gqa", "window-causal", "llama3-rope", "qk-norm-rope"])
def test_blockwise_path_agrees_for_fields_it_supports(name):
    spec = _spec(name, n=7)
    a = _inputs(spec, seed=4)
    params = {k: v for k, v in a.items() if k not in ("X", "W_Q", "W_K", "W_V", "W_O")}
    args = (a["X"], a["W_Q"], a["W_K"], a["W_V"], a.get("W_O"))
    Y_plain, _ = at.numeric.attention(*args, spec=spec, **params)
    Y_block = at.numeric.attention(*args, spec=spec, return_weights=False, block_size=3, **params)
    np.testing.assert_allclose(Y_block, Y_plain, rtol=1e-12, atol=1e-12)
    G = np.random.default_rng(1).standard_normal(Y_plain.shape)
    g_plain = at.numeric.attention_vjp(*args[:4], G, args[4], spec=spec, **params)
    g_block = at.numeric.attention_vjp(*args[:4], G, args[4], spec=spec, block_size=3, **params)
    for k in g_plain:
        np.testing.assert_allclose(g_block[k], g_plain[k], rtol=1e-10, atol=1e-11, err_msg=k)


# ---------------------------------------------------------------------------- symbolic ⇄ numeric
SMALL = {
    "gqa": dict(n=3, d_model=4, heads=2, kv_heads=1),
    "window-causal": dict(n=3, d_model=2, causal=True, window=2),
    "window-bidirectional": dict(n=3, d_model=2, window=1),
    "softcap": dict(n=2, d_model=2, softcap=0.5),
    "qk-norm": dict(n=2, d_model=2, qk_norm=True, qk_norm_eps=1e-3),
    "linear-rope": dict(n=3, d_model=2, positions="rope", rope_scaling={"type": "linear", "factor": 2.0}),
    "llama3-rope": dict(n=2, d_model=4, positions="rope", position_base=500000.0, rope_scaling=dict(
        LLAMA3, original_max_position_embeddings=16)),
    "qwen2-alibi-softcap": dict(n=2, d_model=4, heads=2, kv_heads=1, bias="qkv", causal=True, softcap=1.0,
                                positions="alibi"),
    "float-base": dict(n=2, d_model=2, positions="rope", position_base=12345.5),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_symbolic_and_numeric_views_agree(name):
    """Forward (Y and every head's A) and every gradient: lambdified SymPy == attnsym.numeric (attnsym.validate)."""
    report = at.testing.assert_views_agree(AttentionSpec(**SMALL[name]), seed=1)
    assert report.passed and len(report.rows) >= 3


def test_symbolic_equations_of_the_new_fields():
    import sympy as sp

    sym = at.symbolic.attention(AttentionSpec(n=3, d_model=4, heads=2, kv_heads=1, causal=True, window=2, softcap=50.0))
    assert sym.W_K.shape == (4, 2) and sym.K_heads[0] == sym.K_heads[1]  # both query heads read key block 1
    S = sym.S_heads[0]
    assert S[2, 0] == -sp.oo and S[2, 1] != -sp.oo  # outside the band: masked
    assert sym.A_heads[0][2, 0] == 0
    t = sp.Integer(50)
    raw = sp.Rational(1, 2) * sp.sqrt(2) * sp.Add(*[sym.Q_heads[0][1, c] * sym.K_heads[0][0, c] for c in range(2)])
    assert sp.simplify(S[1, 0] - t * sp.tanh(raw / t)) == 0
    qk = at.symbolic.attention(AttentionSpec(n=1, d_model=2, qk_norm=True))
    assert [str(s) for s in qk.g_Q] == ["g^{Q}_{1}", "g^{Q}_{2}"]
    assert "g_Q" in qk.inputs and qk.Q_norm_heads is not None


def test_symbolic_rope_scaling_frequencies_are_exact_and_match_numeric():
    import sympy as sp

    spec = AttentionSpec(n=1, d_model=8, positions="rope", position_base=10000.0, rope_scaling=dict(
        LLAMA3, original_max_position_embeddings=64))
    exact = at.symbolic.rope_frequencies(spec)
    assert any(e.has(sp.pi) for e in exact)  # the smoothed band
    np.testing.assert_allclose([float(e) for e in exact], at.numeric.rope_frequencies(spec), rtol=1e-14)
    linear = AttentionSpec(n=1, d_model=4, positions="rope", rope_scaling={"rope_type": "linear", "factor": 4.0})
    assert at.symbolic.rope_frequencies(linear) == (sp.Rational(1, 4), sp.Rational(1, 400))


def test_gradient_methods_refuse_what_they_do_not_implement():
    with pytest.raises(SpecError, match="method='closed_form' has no QK-norm step"):
        at.symbolic.gradients(AttentionSpec(n=2, d_model=2, qk_norm=True))
    with pytest.raises(SpecError, match=r"method=.matrix. .* without kv_heads=1"):
        at.symbolic.gradients(AttentionSpec(n=2, d_model=4, heads=2, kv_heads=1), method="matrix")


def test_derive_a_real_layer_at_a_small_size():
    big = AttentionSpec(n=128, d_model=512, heads=8, kv_heads=2, causal=True, window=64, softcap=50.0,
                        positions="rope", position_base=500000.0, rope_scaling=dict(LLAMA3), bias="qkv")
    d = at.derive(big.with_(n=3, d_model=4, heads=2, kv_heads=1, window=2))
    titles = [s.title for s in d.steps]
    assert "Rotary position embedding" in titles and "Scores" in titles
    text = d.to_markdown()
    assert r"50 \tanh" in text and "sliding window of 2 keys" in text
    q = at.derive(AttentionSpec(n=2, d_model=2, qk_norm=True, positions="rope"))
    assert "QK-norm" in [s.title for s in q.steps]


def test_symbolic_functions_refuse_fields_they_do_not_model():
    from attnsym.symbolic._backward_steps import gradient_steps

    gqa = AttentionSpec(n=2, d_model=4, heads=2, kv_heads=1)
    with pytest.raises(SpecError, match="kv_heads=1"):
        gradient_steps(gqa)
    with pytest.raises(SpecError, match=r"softcap=1\.0"):
        at.symbolic.attention_input_jacobian(AttentionSpec(n=2, d_model=1, softcap=1.0))
    with pytest.raises(SpecError, match="qk_norm=True"):
        at.symbolic.prove_shift_invariance(AttentionSpec(n=2, d_model=2, positions="sinusoidal", qk_norm=True))
    assert at.symbolic.prove_shift_invariance(AttentionSpec(n=2, d_model=4, heads=2, kv_heads=1, positions="rope",
                                                            softcap=2.0)).holds


# ---------------------------------------------------------------------------- properties over drawn specs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=modern_attention_specs(), seed=st.integers(0, 2**16))
def test_drawn_specs_match_torch_and_respect_the_pattern(spec, seed):
    a = _inputs(spec, seed=seed)
    Y, A = _ours(spec, a)
    A = A if spec.heads > 1 else A[..., None, :, :]
    Y_t, A_t = torch_reference(spec, {k: torch.from_numpy(v) for k, v in a.items()})
    np.testing.assert_allclose(A, A_t.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Y, Y_t.numpy(), rtol=1e-10, atol=1e-11)
    allowed = np.ones((spec.n, spec.n), bool) if spec.allowed is None else spec.allowed_array()
    assert np.all(A[..., ~allowed] == 0)  # masked (window included): exactly 0
    sums = A.sum(axis=-1)
    rows = np.array([i not in spec.fully_masked_rows for i in range(spec.n)])
    np.testing.assert_allclose(sums[..., rows], 1.0, rtol=1e-12)
    assert np.all(sums[..., ~rows] == 0)
    if spec.softcap is not None:  # the capped scores are bounded, so no weight is below exp(-2 cap) / n of the max
        live = A[..., allowed]
        assert np.all(live >= np.exp(-2 * spec.softcap) / spec.n * live.max() - 1e-15)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=modern_attention_specs(max_n=4), seed=st.integers(0, 2**16))
def test_drawn_specs_float32_agrees_with_float64_and_gradients_with_autograd(spec, seed):
    a = _inputs(spec, seed=seed)
    Y64, _ = _ours(spec, a)
    Y32, _ = _ours(spec, {k: v.astype(np.float32) for k, v in a.items()})
    tol = TOLERANCES["float32"]
    np.testing.assert_allclose(Y32, Y64, rtol=tol.rtol * 10, atol=tol.atol * 10)
    G = np.random.default_rng(seed).standard_normal(Y64.shape)
    params = {k: v for k, v in a.items() if k != "X"}
    W = [params.pop(k) for k in ("W_Q", "W_K", "W_V")]
    ours = at.numeric.attention_vjp(a["X"], *W, G, params.pop("W_O", None), spec=spec, **params)
    t = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in a.items()}
    (torch_reference(spec, t)[0] * torch.from_numpy(G)).sum().backward()
    for k, tensor in t.items():
        np.testing.assert_allclose(ours[k], tensor.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


def test_routing_graph_of_a_windowed_layer_has_only_the_band_edges():
    spec = AttentionSpec(n=6, d_model=4, heads=2, kv_heads=1, causal=True, window=3)
    a = _inputs(spec, seed=9, batch=())
    _, A = _ours(spec, a)
    G = at.graphs.routing_graph(A, head=0)
    edges = {(u, v) for u, v in G.edges()}
    band = {(j, i) for i in range(6) for j in range(6) if 0 <= i - j < 3}  # key j -> query i
    assert edges == band  # edge j -> i carries A[i, j] (graphs.routing.DIRECTION)


def test_torch_tensors_and_causal_decode_run_the_same_fields():
    spec = AttentionSpec(n=5, d_model=8, heads=4, kv_heads=2, causal=True, window=2, softcap=1.5, positions="rope",
                         rope_scaling={"type": "linear", "factor": 2.0})
    a = _inputs(spec, seed=5, batch=())
    Y, A = _ours(spec, a)
    t = {k: torch.from_numpy(v) for k, v in a.items()}
    Y_t, A_t = at.numeric.attention(t["X"], t["W_Q"], t["W_K"], t["W_V"], t["W_O"], spec=spec)
    assert isinstance(Y_t, torch.Tensor)
    np.testing.assert_allclose(Y_t.numpy(), Y, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A_t.numpy(), A, rtol=1e-13, atol=1e-14)
    for cache in (True, False):
        decoded = at.numeric.causal_decode(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], spec=spec, cache=cache)
        np.testing.assert_allclose(decoded.Y, Y, rtol=1e-12, atol=1e-13)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=modern_attention_specs(max_n=3, max_heads=2, qk_norm=False), seed=st.integers(0, 2**16))
def test_drawn_specs_symbolic_and_numeric_views_agree(spec, seed):
    small = spec.replace(d_model=min(spec.d_model, 3))
    assert at.testing.assert_views_agree(small, seed=seed).passed
