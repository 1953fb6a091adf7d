"""RoPE and ALiBi against independent references: Hugging Face's modules, the RoFormer formula, BLOOM's ALiBi.

Hugging Face builds its rotary frequencies and angles in float32, so it is itself exact only to
about 1e-7 for angles up to a few hundred radians: it is compared within 1e-6 (relative to the
size of the vectors). In float64 ours is compared with the same formula evaluated in float64,
within 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym.numeric.positions import alibi_bias_block
from attnsym.tolerances import TOLERANCES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # noqa: E402
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding  # noqa: E402
from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb as neox_apply  # noqa: E402
from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_apply  # noqa: E402
from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)

CASES = [(2, 10000, 7), (8, 10000, 64), (16, 500, 33), (64, 10000, 300), (128, 500000, 257)]
EPS32 = float(np.finfo(np.float32).eps)


def _llama(d_k: int, base: int, positions, q, k):
    config = transformers.LlamaConfig(hidden_size=d_k, num_attention_heads=1, head_dim=d_k,
                                      rope_parameters={"rope_type": "default", "rope_theta": float(base)})
    rotary = LlamaRotaryEmbedding(config)
    cos, sin = rotary(q, torch.as_tensor(positions)[None])  # (1, n, d_k), float32
    return apply_rotary_pos_emb(q, k, cos, sin)


def _compare_with_llama(d_k, base, positions, seed):
    rng = np.random.default_rng(seed)
    n = len(positions)
    q, k = rng.standard_normal((2, 1, 1, n, d_k)).astype(np.float32)  # (batch, heads, n, d_k)
    q_hf, k_hf = _llama(d_k, base, positions, torch.from_numpy(q), torch.from_numpy(k))
    spec = at.AttentionSpec(n=n, d_model=d_k, positions="rope", position_base=base)
    ours_q = at.numeric.apply_rope(q.astype(np.float64), spec, positions)
    ours_k = at.numeric.apply_rope(k.astype(np.float64), spec, positions)
    error = max(np.abs(ours_q - q_hf.double().numpy()).max(), np.abs(ours_k - k_hf.double().numpy()).max())
    return error, float(max(np.abs(q).max(), np.abs(k).max())), q, q_hf


@pytest.mark.parametrize(("d_k", "base"), [(2, 10000), (8, 10000), (16, 500), (64, 10000), (128, 500000)])
def test_rope_matches_hugging_face_llama_within_1e_6(d_k, base):
    """Positions 0 … 7: Hugging Face's float32 angles p·θ are then good to well under 1e-6."""
    for positions in (np.arange(8), np.array([7, 0, 3, 5, 1])):
        error, _, _, _ = _compare_with_llama(d_k, base, positions, seed=d_k)
        assert error <= 1e-6, (d_k, base, positions, error)


@pytest.mark.parametrize(("d_k", "base", "n"), CASES)
def test_rope_matches_hugging_face_llama_at_long_positions(d_k, base, n):
    """Far positions (up to 4n): Hugging Face rounds the angle p·θ to float32, an error of about
    eps32·p·θ radians that grows with p; ours (float64 angles) must agree within that rounding."""
    positions = np.random.default_rng(n).permutation(4 * n)[:n]
    error, size, q, q_hf = _compare_with_llama(d_k, base, positions, seed=d_k + n)
    assert error <= 1e-6 + EPS32 * int(positions.max()) * size, error
    # float32 in, float32 out, same library: torch tensors run through the same code
    spec = at.AttentionSpec(n=n, d_model=d_k, positions="rope", position_base=base)
    ours_t = at.numeric.apply_rope(torch.from_numpy(q), spec, torch.as_tensor(positions))
    assert ours_t.dtype == torch.float32 and isinstance(ours_t, torch.Tensor)
    assert float((ours_t - q_hf).abs().max()) <= 1e-6 + 2 * EPS32 * int(positions.max()) * size


def _llama_formula_float64(x, base, positions):
    """Hugging Face's formula (inv_freq, cat(freqs, freqs), rotate_half) evaluated in float64."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.as_tensor(positions, dtype=torch.float64)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


@pytest.mark.parametrize(("d_k", "base", "n"), CASES)
def test_rope_float64_matches_the_same_formula_in_float64(d_k, base, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n, d_k))
    positions = np.arange(n) + 1000
    spec = at.AttentionSpec(n=n, d_model=d_k, positions="rope", position_base=base)
    reference = _llama_formula_float64(torch.from_numpy(x), base, positions).numpy()
    np.testing.assert_allclose(at.numeric.apply_rope(x, spec, positions), reference, atol=TOL64.atol, rtol=0)


@pytest.mark.parametrize(("head_size", "pct"), [(8, 0.5), (16, 0.25), (64, 0.25), (12, 1.0)])
def test_partial_rotary_matches_gpt_neox(head_size, pct):
    n = 20
    config = transformers.GPTNeoXConfig(hidden_size=head_size, num_attention_heads=1,
                                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                         "partial_rotary_factor": pct})
    rng = np.random.default_rng(head_size)
    q, k = (torch.from_numpy(a) for a in rng.standard_normal((2, 1, 1, n, head_size)).astype(np.float32))
    cos, sin = GPTNeoXRotaryEmbedding(config)(q, torch.arange(n)[None])
    q_hf, k_hf = neox_apply(q, k, cos, sin)
    spec = at.AttentionSpec(n=n, d_model=head_size, positions="rope", rotary_pct=pct)
    assert spec.rotary_dims == cos.shape[-1]
    np.testing.assert_allclose(at.numeric.apply_rope(q.double().numpy(), spec), q_hf.double().numpy(), atol=1e-6)
    np.testing.assert_allclose(at.numeric.apply_rope(k.double().numpy(), spec), k_hf.double().numpy(), atol=1e-6)


def _roformer(x, base, positions):
    """The RoFormer paper's formula (eq. 34): pairs (x_{2i}, x_{2i+1}) turned by p·base^(-2i/d), written out."""
    n, d = x.shape
    out = x.copy()
    for r in range(n):
        for i in range(d // 2):
            angle = positions[r] * base ** (-2.0 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            out[r, 2 * i] = x[r, 2 * i] * c - x[r, 2 * i + 1] * s
            out[r, 2 * i + 1] = x[r, 2 * i + 1] * c + x[r, 2 * i] * s
    return out


@pytest.mark.parametrize(("d_k", "base", "n"), CASES[:4])
def test_interleaved_rope_matches_the_roformer_formula_and_gpt_j(d_k, base, n):
    rng = np.random.default_rng(7 * d_k)
    x = rng.standard_normal((n, d_k))
    positions = np.arange(n) * 3
    spec = at.AttentionSpec(n=n, d_model=d_k, positions="rope", position_base=base, rope_pairing="interleaved")
    ours = at.numeric.apply_rope(x, spec, positions)
    np.testing.assert_allclose(ours, _roformer(x, base, positions), atol=TOL64.atol, rtol=0)
    if base == 10000:  # GPT-J's table has the default base
        table = create_sinusoidal_positions(int(positions.max()) + 1, d_k)  # (positions, d_k): [sin | cos], float32
        sin, cos = torch.split(table[torch.as_tensor(positions)][None], d_k // 2, dim=-1)
        hf = gptj_apply(torch.from_numpy(x).float()[None, :, None, :], sin, cos)[0, :, 0, :]
        # GPT-J's table is float32: its angles are rounded to about eps32·p (see the LLaMA test above)
        bound = 1e-6 + EPS32 * int(positions.max()) * float(np.abs(x).max())
        assert float(np.abs(ours - hf.double().numpy()).max()) <= bound


def test_symbolic_rotation_matches_hugging_face_numbers():
    spec = at.AttentionSpec(n=4, d_model=8, positions="rope")
    x = np.random.default_rng(2).standard_normal((4, 8))
    exact = at.symbolic.apply_rope(sp.Matrix(x), spec)
    reference = _llama_formula_float64(torch.from_numpy(x), 10000, np.arange(4)).numpy()
    np.testing.assert_allclose(np.array(exact.evalf(30), dtype=float), reference, atol=TOL64.atol)


# ----------------------------------------------------------------------------- ALiBi vs BLOOM
@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 20, 32])
def test_alibi_slopes_match_bloom(heads):
    mask = torch.ones(1, 4)
    bloom = build_alibi_tensor(mask, heads, torch.float64)  # (heads, 1, 4): slope_h * j
    bloom_slopes = (bloom[:, 0, 1] - bloom[:, 0, 0]).numpy()
    np.testing.assert_allclose(at.numeric.alibi_slopes(heads), bloom_slopes, rtol=1e-6)  # BLOOM: float32 powers


@pytest.mark.parametrize("heads", [1, 3, 4, 6, 8, 12])
def test_alibi_weights_match_bloom_after_the_softmax(heads):
    """BLOOM adds m_h·j per key; ours −m_h·(i − j). They differ by the per-row constant −m_h·i, which the
    softmax removes: the causal weights must agree."""
    n, d_k = 9, 4
    rng = np.random.default_rng(heads)
    Q, K = rng.standard_normal((2, heads, n, d_k))
    S = np.einsum("hid,hjd->hij", Q, K) / math.sqrt(d_k)
    causal = np.tril(np.ones((n, n), dtype=bool))
    bloom = build_alibi_tensor(torch.ones(1, n), heads, torch.float64).numpy()  # (heads, 1, n)
    A_bloom = at.numeric.softmax(S + bloom, allowed=causal)
    spec = at.AttentionSpec(n=n, d_model=heads * d_k, heads=heads, positions="alibi", causal=True)
    ours_bias = alibi_bias_block(spec, 0, n, 0, n, xp=at.numeric.array_namespace(), dtype=None)
    A_ours = at.numeric.softmax(S + ours_bias, allowed=causal)
    np.testing.assert_allclose(A_ours, A_bloom, atol=1e-7)  # BLOOM's slopes are float32
    # before the softmax the two biases differ, on the allowed keys, by the row constant −m_h·i
    slopes = at.numeric.alibi_slopes(heads)
    row_constant = -slopes[:, None, None] * np.arange(n)[None, :, None]  # (heads, n, 1)
    diff = ours_bias - bloom
    np.testing.assert_allclose(np.where(causal, diff - row_constant, 0.0), 0.0, atol=1e-5)


def test_alibi_bias_block_equals_the_per_head_matrices():
    spec = at.AttentionSpec(n=6, d_model=6, heads=3, positions="alibi")
    full = alibi_bias_block(spec, 0, 6, 0, 6, xp=at.numeric.array_namespace(), dtype=None)
    for h in range(3):
        np.testing.assert_array_equal(full[h], at.numeric.alibi_bias(spec, h))
        exact = np.array(at.symbolic.alibi_bias(spec, h), dtype=float)
        np.testing.assert_allclose(full[h], exact, rtol=TOL64.rtol)
    block = alibi_bias_block(spec, 2, 5, 1, 3, xp=at.numeric.array_namespace(), dtype=None)
    np.testing.assert_array_equal(block, full[:, 2:5, 1:3])
