"""A real layer's spec in the symbolic view: Qwen3-Next's gated attention and DeepSeek V3's latent attention.

Two tiny random checkpoints (saved by transformers, noise on every weight): ``m.spec(0)`` at the text's
length is built by :func:`attnsym.symbolic.attention`, the checkpoint's own tensors are substituted (for
DeepSeek V3 split and permuted into the symbolic names: ``kv_a_proj_with_mqa`` = ``[W_DKV | W_KR]``,
``kv_b_proj`` per head ``[W_UK | W_UV]``, each query head's rotary part moved first), and its weights must
equal the model's forward pass (itself checked against transformers eager in tests/test_models_qwen3_next.py
and tests/test_models_deepseek.py) within 1e-12 in float64; its output equals the gate and projections
applied by hand to the model's weights. Then the spec is derived (Markdown and LaTeX).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from models_support import save_random

import attnsym as at
from attnsym import models
from attnsym.numeric.norms import rms_norm

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

TOL = 1e-12
IDS = np.array([[2, 3, 4]])
ROPE = {"rope_type": "default", "rope_theta": 10000.0}


@functools.cache
def qwen3_next():
    config = transformers.Qwen3NextConfig(
        hidden_size=4, num_attention_heads=1, num_key_value_heads=1, head_dim=4, intermediate_size=8, vocab_size=100,
        max_position_embeddings=64, pad_token_id=1, num_hidden_layers=1, layer_types=["full_attention"],
        num_experts=2, num_experts_per_tok=1, moe_intermediate_size=4, shared_expert_intermediate_size=4,
        decoder_sparse_step=1, mlp_only_layers=[0], rope_parameters={**ROPE, "partial_rotary_factor": 0.5})
    folder, _ = save_random(config, "Qwen3NextModel", seed=0, noise=0.3, prefix="attnsym-symbolic-qwen3_next-")
    return models.load(folder, dtype="float64")


@functools.cache
def deepseek_v3():
    config = transformers.DeepseekV3Config(
        hidden_size=4, num_attention_heads=2, num_key_value_heads=2, intermediate_size=8, vocab_size=100,
        max_position_embeddings=64, pad_token_id=1, num_hidden_layers=1, kv_lora_rank=2, q_lora_rank=2,
        qk_rope_head_dim=2, qk_nope_head_dim=1, v_head_dim=1, moe_intermediate_size=4, n_routed_experts=2,
        num_experts_per_tok=1, n_group=1, topk_group=1, first_k_dense_replace=1, n_shared_experts=1,
        rms_norm_eps=1e-5, rope_interleave=True,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "mscale": 0.9,
                         "mscale_all_dim": 0.7, "original_max_position_embeddings": 4})
    folder, _ = save_random(config, "DeepseekV3Model", seed=0, noise=0.3, prefix="attnsym-symbolic-deepseek-")
    return models.load(folder, dtype="float64")


def _layer_input(m):
    """The first block's normed input ``(n, d)`` and the forward pass of the text."""
    out = m.forward(IDS)
    block, lw = m.config.blocks[0], m.weights.layers[0]
    x = np.asarray(out.hidden_states[0][0])
    return rms_norm(x, lw.attn_norm, block.norm.eps, block.norm.offset), out


def _check(m, spec, values, out, **kwargs):
    sym = at.symbolic.attention(spec, **kwargs)
    got = sym.lambdify("A_heads", "Y")(**values)
    A = np.asarray(out.attention[0, 0])  # (H, n, n)
    assert np.abs(got["A_heads"] - A).max() < TOL
    return got


def test_qwen3_next_layer_is_derived_and_equals_the_model():
    m = qwen3_next()
    spec = m.spec(0).replace(n=IDS.shape[1])
    assert spec.output_gate and spec.qk_norm and spec.qk_norm_offset == 1.0
    X, out = _layer_input(m)
    lw = m.weights.layers[0]
    values = {"X": X, "W_Q": lw.W_Q, "W_K": lw.W_K, "W_V": lw.W_V, "W_G": lw.W_G,
              "g_Q": lw.g_Q.reshape(1, -1), "g_K": lw.g_K.reshape(1, -1)}
    if spec.output_projection:
        values["W_O"] = lw.W_O
    got = _check(m, spec, values, out)
    A = np.asarray(out.attention[0, 0, 0])
    Z = (A @ (X @ lw.W_V)) * (1 / (1 + np.exp(-(X @ lw.W_G))))  # the heads, gated
    Y = Z @ lw.W_O if spec.output_projection else Z
    assert np.abs(got["Y"] - Y).max() < TOL
    d = at.derive(spec)
    assert "Output gate" in [s.title for s in d] and "QK-norm" in [s.title for s in d]
    assert "\\Gamma" in d.to_latex() and "(1 + g^Q)" in d.to_markdown()


def test_deepseek_v3_layer_is_derived_and_equals_the_model():
    m = deepseek_v3()
    spec = m.spec(0).replace(n=IDS.shape[1])
    assert spec.kv_latent_rank == 2 and spec.q_latent_rank == 2 and spec.rope_scaling.rope_type == "yarn"
    X, out = _layer_input(m)
    lw = m.weights.layers[0]
    H, r, rho, nope, dv = spec.heads, spec.kv_latent_rank, spec.rotary_dims, spec.d_k - spec.rotary_dims, spec.d_v
    W_UQ = lw.W_Q_up.reshape(-1, H, nope + rho)  # (r_q, H, [nope | rope]) as the checkpoint stores it
    up = lw.W_KV_up.reshape(r, H, nope + dv)
    values = {"X": X, "W_DQ": lw.W_Q, "g_CQ": lw.g_Q_latent.reshape(1, -1),
              "W_UQ": np.concatenate([W_UQ[..., nope:], W_UQ[..., :nope]], axis=-1).reshape(-1, H * spec.d_k),
              "W_DKV": lw.W_K[:, :r], "g_CKV": lw.g_KV_latent.reshape(1, -1), "W_KR": lw.W_K[:, r:],
              "W_UK": up[..., :nope].reshape(r, H * nope), "W_UV": up[..., nope:].reshape(r, H * dv), "W_O": lw.W_O}
    eps = m.config.blocks[0].latent_norm.eps
    got = _check(m, spec, values, out, latent_eps=eps)
    C = rms_norm(X @ lw.W_K[:, :r], lw.g_KV_latent, eps)
    V = (C @ lw.W_KV_up).reshape(-1, H, nope + dv)[..., nope:]  # (n, H, d_v)
    A = np.asarray(out.attention[0, 0])
    Z = np.concatenate([A[h] @ V[:, h] for h in range(H)], axis=-1)
    assert np.abs(got["Y"] - Z @ lw.W_O).max() < TOL
    assert eps == at.symbolic.parameters.DEFAULT_LATENT_EPS  # what derive's steps write
    d = at.derive(spec)
    assert [s.title for s in d][1:6] == ["Latent", "Query latent", "Queries", "Keys", "Values"]
    assert "W_{UK}" in d.to_latex()
