"""RoPE and ALiBi in the numeric layer: every path (plain, blockwise, backward, decoding) against references.

References: the symbolic layer (``validate``: exact forward and closed-form gradients), a PyTorch
layer built from Hugging Face's LLaMA ``apply_rotary_pos_emb`` / BLOOM's ``build_alibi_tensor``
with ``scaled_dot_product_attention`` and autograd, and the plain path for the blockwise one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnsym as at
from attnsym.errors import SpecError
from attnsym.numeric.kvcache import causal_decode
from attnsym.numeric.positions import apply_rope, rope_tables
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

SPECS = [
    dict(n=5, d_model=8, heads=2, positions="rope"),
    dict(n=6, d_model=8, heads=2, positions="rope", causal=True, rope_pairing="interleaved"),
    dict(n=5, d_model=8, heads=1, positions="rope", rotary_pct=0.5, bias=True),
    dict(n=6, d_model=6, heads=3, positions="alibi", causal=True),
    dict(n=5, d_model=8, heads=2, positions="alibi"),
]


def _inputs(spec: at.AttentionSpec, seed: int, batch=()):
    rng = np.random.default_rng(seed)
    values = {"X": rng.standard_normal((*batch, spec.n, spec.d_model))}
    for name in spec.parameter_names:
        shape = spec.shapes[name]
        values[name] = rng.standard_normal(shape) / math.sqrt(shape[0])
    return values


@pytest.mark.parametrize("kwargs", [
    dict(n=3, d_model=2, positions="rope"),
    dict(n=3, d_model=4, heads=2, positions="rope", causal=True),
    dict(n=3, d_model=4, positions="rope", rope_pairing="interleaved", rotary_pct=0.5),
    dict(n=3, d_model=2, heads=2, positions="alibi", causal=True),
    dict(n=3, d_model=3, heads=3, positions="alibi", bias=True),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_numeric_agrees_with_the_symbolic_layer(kwargs, dtype):
    report = at.validate(at.AttentionSpec(**kwargs), seed=3, dtype=dtype)
    assert report.passed, report


def test_keywords_build_the_same_layer_as_the_spec():
    spec = at.AttentionSpec(n=4, d_model=4, positions="rope")
    v = _inputs(spec, 0)
    Y1, A1 = at.numeric.attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], positions="rope")
    Y2, A2 = at.numeric.attention(v["X"], v["W_Q"], v["W_K"], v["W_V"], spec=spec)
    np.testing.assert_array_equal(Y1, Y2)
    np.testing.assert_array_equal(A1, A2)
    Y0, _ = at.numeric.attention(v["X"], v["W_Q"], v["W_K"], v["W_V"])
    assert np.max(np.abs(Y0 - Y1)) > 1e-3  # the rotation changes the output
    with pytest.raises(SpecError, match="must be even"):
        at.numeric.attention(v["X"][:, :3], v["W_Q"][:3, :3], v["W_K"][:3, :3], v["W_V"][:3, :3], positions="rope")


def test_alibi_adds_nothing_to_x_and_rope_rotates_no_values():
    spec = at.AttentionSpec(n=4, d_model=4, positions="rope")
    v = _inputs(spec, 1)
    Y, A = at.numeric.attention(spec=spec, **v)
    np.testing.assert_allclose(Y, A @ (v["X"] @ v["W_V"]), rtol=TOL64.rtol)  # values unrotated, X unchanged
    alibi = spec.replace(positions="alibi")
    Y, A = at.numeric.attention(spec=alibi, **v)
    np.testing.assert_allclose(Y, A @ (v["X"] @ v["W_V"]), rtol=TOL64.rtol)


@pytest.mark.parametrize("kwargs", SPECS)
def test_blockwise_forward_and_backward_equal_the_plain_path(kwargs):
    spec = at.AttentionSpec(**kwargs)
    v = _inputs(spec, 2, batch=(2,))
    Y_plain, _ = at.numeric.attention(spec=spec, **v)
    Y_block = at.numeric.attention(spec=spec, **v, return_weights=False, block_size=2)
    np.testing.assert_allclose(Y_block, Y_plain, rtol=TOL64.rtol, atol=TOL64.atol)
    G = np.random.default_rng(9).standard_normal(Y_plain.shape)
    plain = at.numeric.attention_vjp(spec=spec, G=G, **v)
    block = at.numeric.attention_vjp(spec=spec, G=G, **v, block_size=2)
    for name in plain:
        np.testing.assert_allclose(block[name], plain[name], rtol=TOL64.rtol, atol=TOL64.atol, err_msg=name)


@pytest.mark.parametrize("kwargs", [s for s in SPECS if s.get("causal")] + [
    dict(n=7, d_model=4, heads=1, positions="rope", causal=True)])
@pytest.mark.parametrize("cache", [True, False])
def test_causal_decoding_equals_full_causal_attention(kwargs, cache):
    spec = at.AttentionSpec(**kwargs)
    v = _inputs(spec, 4)
    Y, _ = at.numeric.attention(spec=spec, **v)
    params = {k: val for k, val in v.items() if k != "X"}
    out = causal_decode(v["X"], spec=spec, cache=cache, **params)
    np.testing.assert_allclose(out.Y, Y, rtol=TOL64.rtol, atol=TOL64.atol)


# ----------------------------------------------------------------------------- against PyTorch + Hugging Face
torch = pytest.importorskip("torch")


def _torch_layer(spec: at.AttentionSpec, v: dict, t: dict):
    """The layer in PyTorch: HF LLaMA's RoPE or BLOOM's ALiBi around scaled_dot_product_attention."""
    import torch.nn.functional as F

    n, H = spec.n, spec.heads
    split = lambda M: M.reshape(n, H, -1).transpose(0, 1)[None]  # (1, H, n, w)
    proj = lambda name: t["X"] @ t[f"W_{name}"] + (t[f"b_{name}"] if spec.bias else 0)
    Q, K, V = split(proj("Q")), split(proj("K")), split(proj("V"))
    mask = None
    if spec.positions == "rope":
        from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

        assert spec.rope_pairing == "rotate_half"
        d = spec.rotary_dims
        inv_freq = 1.0 / (spec.position_base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        freqs = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)[None]  # (1, n, d): the HF LLaMA/NeoX layout, in float64
        Q, K = apply_rotary_pos_emb(Q, K, emb.cos(), emb.sin())  # NeoX's: handles rotary_pct < 1
    else:
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        mask = build_alibi_tensor(torch.ones(1, n), H, torch.float64)[None]  # (1, H, 1, n): m_h j
    if spec.causal:
        causal = torch.full((n, n), -math.inf, dtype=torch.float64).triu(1)
        mask = causal if mask is None else mask + causal
    Z = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)  # (1, H, n, d_v)
    Z = Z[0].transpose(0, 1).reshape(n, -1)
    if spec.output_projection:
        Z = Z @ t["W_O"] + (t["b_O"] if spec.bias else 0)
    return Z


@pytest.mark.parametrize("kwargs", [s for s in SPECS if s.get("rope_pairing") != "interleaved"
                                    and (s["positions"] == "rope" or s.get("causal"))] + [
    dict(n=9, d_model=16, heads=2, positions="rope", position_base=500, causal=True),
    dict(n=9, d_model=20, heads=5, positions="alibi", causal=True)])
def test_forward_and_gradients_match_pytorch_with_hugging_face_positions(kwargs):
    pytest.importorskip("transformers")
    """ALiBi only causal: BLOOM's m_h·j equals −m_h|i − j| up to a row constant on the causal part only."""
    spec = at.AttentionSpec(**kwargs)
    v = _inputs(spec, 5)
    t = {k: torch.tensor(val, requires_grad=True) for k, val in v.items()}
    Y_torch = _torch_layer(spec, v, t)
    Y, _ = at.numeric.attention(spec=spec, **v)
    np.testing.assert_allclose(Y, Y_torch.detach().numpy(), rtol=TOL64.rtol, atol=TOL64.atol)
    G = np.random.default_rng(6).standard_normal(Y.shape)
    (Y_torch * torch.tensor(G)).sum().backward()
    grads = at.numeric.attention_vjp(spec=spec, G=G, **v)
    for name, value in grads.items():
        np.testing.assert_allclose(value, t[name].grad.numpy().reshape(value.shape), rtol=TOL64.rtol, atol=TOL64.atol,
                                   err_msg=name)


def test_torch_tensors_run_the_same_rope_and_alibi_code():
    for kwargs in (dict(n=5, d_model=8, heads=2, positions="rope"), dict(n=5, d_model=4, heads=2, positions="alibi")):
        spec = at.AttentionSpec(**kwargs)
        v = _inputs(spec, 7)
        Y, _ = at.numeric.attention(spec=spec, **v)
        Yt, _ = at.numeric.attention(spec=spec, **{k: torch.tensor(val) for k, val in v.items()})
        assert isinstance(Yt, torch.Tensor)
        np.testing.assert_allclose(Yt.numpy(), Y, rtol=TOL64.rtol, atol=TOL64.atol)


# ----------------------------------------------------------------------------- the graph view
@pytest.mark.parametrize("positions", ["rope", "alibi"])
def test_routing_graphs_of_rope_and_alibi_layers(positions):
    spec = at.AttentionSpec(n=6, d_model=4, heads=2, positions=positions, causal=True)
    rng = np.random.default_rng(8)
    weights = {name: rng.standard_normal(spec.shapes[name]) for name in spec.parameter_names}
    X1, X2 = rng.standard_normal((2, 6, 4))
    c = at.graphs.contrast(spec, X1, X2, weights)
    assert c.mlp_identical and not c.attention_identical
    _, A = at.numeric.attention(X1, spec=spec, **weights)
    for h, G in enumerate(c.attention1):
        np.testing.assert_allclose(at.graphs.attention_matrix(G), A[h], atol=TOL64.atol)
        assert G.number_of_edges() == 6 * 7 // 2  # every causal edge: ALiBi and RoPE keep all keys reachable


@pytest.mark.parametrize("pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("rotary_pct", [1.0, 0.5])
def test_rope_with_tables_made_once_equals_rope_from_positions(pairing, rotary_pct):
    """apply_rope with rope_tables made by the caller (a forward pass's, shared by its layers) rotates the rows as
    apply_rope computing the angles itself, for either pairing, partial rotary and the adjoint, bit for bit."""
    spec = at.AttentionSpec(n=5, d_model=16, heads=2, positions="rope", rope_pairing=pairing, rotary_pct=rotary_pct)
    M = np.random.default_rng(0).standard_normal((3, 2, 5, 8)).astype(np.float32)  # (B, H, n, d_k)
    p = np.arange(3, 8)[None, None, :].repeat(3, 0)  # (B, 1, n): every head
    tables = rope_tables(spec, p, rows=5, xp=np, dtype=np.float32)
    for inverse in (False, True):
        np.testing.assert_array_equal(apply_rope(M, spec, tables=tables, inverse=inverse),
                                      apply_rope(M, spec, p, inverse=inverse))
