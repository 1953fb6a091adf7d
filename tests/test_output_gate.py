"""The output gate (``AttentionSpec(output_gate=True)``, Qwen3-Next): ``Y = (Z ⊙ σ(X W_G)) W_O``.

The numeric forward and its VJP against the same layer written in PyTorch and differentiated by
autograd (float64; forward within 1e-13, gradients within 1e-12 relative to their size), with
grouped-query heads, a causal mask and YaRN-scaled RoPE (whose attention factor multiplies the
rotated coordinates) so that every step the gate sits beside is live; and the gate's bad inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnsym as at
from attnsym import AttentionSpec
from attnsym.errors import ShapeError, SpecError

torch = pytest.importorskip("torch")

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
SPEC = AttentionSpec(n=6, d_model=16, heads=4, kv_heads=2, d_k=8, causal=True, positions="rope",
                     rope_scaling=YARN, output_gate=True, output_projection=True)


def _weights(spec: AttentionSpec, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = {name: 0.5 * rng.standard_normal(shape) for name, shape in spec.shapes.items()
         if name in spec.parameter_names}
    w["X"] = rng.standard_normal((2, spec.n, spec.d_model))
    return w


def _torch_layer(spec: AttentionSpec, t: dict):
    """The layer in PyTorch: projections, rotate-half RoPE times the attention factor, causal softmax, gate, W_O."""
    B, n, H, H_kv, d = 2, spec.n, spec.heads, spec.kv_heads, spec.d_k
    theta = torch.as_tensor(np.asarray(at.numeric.rope_frequencies(spec)))
    angle = torch.arange(n, dtype=torch.float64)[:, None] * theta[None, :]  # (n, d/2)
    factor = spec.rope_scaling.attention_scale
    cos, sin = torch.cat([angle.cos()] * 2, -1) * factor, torch.cat([angle.sin()] * 2, -1) * factor

    def rope(M):
        half = M.shape[-1] // 2
        return M * cos + torch.cat([-M[..., half:], M[..., :half]], -1) * sin

    Q = rope((t["X"] @ t["W_Q"]).view(B, n, H, d).transpose(1, 2))
    K = rope((t["X"] @ t["W_K"]).view(B, n, H_kv, d).transpose(1, 2)).repeat_interleave(H // H_kv, 1)
    V = (t["X"] @ t["W_V"]).view(B, n, H_kv, d).transpose(1, 2).repeat_interleave(H // H_kv, 1)
    S = (Q @ K.transpose(-1, -2)) * d ** -0.5
    S = S.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    Z = (torch.softmax(S, -1) @ V).transpose(1, 2).reshape(B, n, H * d)
    return (Z * torch.sigmoid(t["X"] @ t["W_G"])) @ t["W_O"]


def test_forward_and_vjp_equal_torch_autograd():
    w = _weights(SPEC)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in w.items()}
    Y_ref = _torch_layer(SPEC, t)
    G = np.random.default_rng(1).standard_normal(tuple(Y_ref.shape))
    (Y_ref * torch.as_tensor(G)).sum().backward()
    args = {k: v for k, v in w.items() if k not in ("X", "W_Q", "W_K", "W_V", "W_O")}
    Y = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=SPEC, return_weights=False, **args)
    np.testing.assert_allclose(Y, Y_ref.detach().numpy(), rtol=0, atol=1e-13)
    grads = at.numeric.attention_vjp(w["X"], w["W_Q"], w["W_K"], w["W_V"], G, w["W_O"], spec=SPEC, **args)
    assert sorted(grads) == sorted(["X", *SPEC.parameter_names])
    for name, g in grads.items():
        ref = t[name].grad.numpy()
        assert np.abs(g - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), name
    assert np.abs(grads["W_G"]).max() > 1e-2  # the gate's gradient is there to measure


def test_the_gate_changes_the_output_and_a_zero_gate_weight_halves_it():
    w = _weights(SPEC)
    plain = SPEC.replace(output_gate=False)
    Y_plain = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=plain, return_weights=False)
    Y = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=SPEC, W_G=w["W_G"],
                             return_weights=False)
    assert np.abs(Y - Y_plain).max() > 1e-2
    W_open = np.zeros_like(w["W_G"])
    half = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=SPEC, W_G=W_open,
                                return_weights=False)
    np.testing.assert_allclose(half, 0.5 * Y_plain, rtol=1e-14, atol=1e-15)  # σ(0) = 1/2 on every coordinate


def test_gate_inputs_are_checked_by_name():
    w = _weights(SPEC)
    base = (w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"])
    with pytest.raises(ShapeError, match=r"W_G is required by the spec \(output_gate=True, shape \(16, 32\)\)"):
        at.numeric.attention(*base, spec=SPEC)
    with pytest.raises(ShapeError, match=r"W_G must have shape \(d_model, heads\*d_v\) = \(16, 32\) \(got \(16, 8\)\)"):
        at.numeric.attention(*base, spec=SPEC, W_G=w["W_G"][:, :8])
    with pytest.raises(ShapeError, match=r"W_G was given but the spec has output_gate=False"):
        at.numeric.attention(*base, spec=SPEC.replace(output_gate=False), W_G=w["W_G"])
    with pytest.raises(SpecError, match=r"W_G \(the output gate's weights\) needs spec=AttentionSpec"):
        at.numeric.attention(w["X"], w["W_Q"], w["W_Q"], w["W_Q"], W_G=w["W_G"])
    assert "W_G" in at.symbolic.attention(AttentionSpec(n=2, d_model=2, output_gate=True)).inputs  # the symbolic twin
    with pytest.raises(SpecError, match=r"output_gate must be"):
        AttentionSpec(n=2, d_model=2, output_gate="yes")
    assert "sigmoid output gate" in SPEC.describe() and SPEC.variants == ("output_gate",)


def test_the_blockwise_path_gates_alike():
    w = _weights(SPEC)
    args = {"W_G": w["W_G"]}
    plain = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=SPEC, return_weights=False,
                                 **args)
    lean = at.numeric.attention(w["X"], w["W_Q"], w["W_K"], w["W_V"], w["W_O"], spec=SPEC, return_weights=False,
                                block_size=2, **args)
    np.testing.assert_allclose(lean, plain, rtol=0, atol=1e-13)
    G = np.random.default_rng(2).standard_normal(plain.shape)
    g_plain = at.numeric.attention_vjp(w["X"], w["W_Q"], w["W_K"], w["W_V"], G, w["W_O"], spec=SPEC, **args)
    g_lean = at.numeric.attention_vjp(w["X"], w["W_Q"], w["W_K"], w["W_V"], G, w["W_O"], spec=SPEC, block_size=2,
                                      **args)
    for name in g_plain:
        np.testing.assert_allclose(g_lean[name], g_plain[name], rtol=0, atol=1e-12, err_msg=name)
