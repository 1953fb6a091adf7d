"""``AttentionSpec.latent_norm_eps``: the one place MLA's latent RMSNorm epsilon is written, read by every view.

The symbolic layer and the deepseek_v3 plan both take it from the spec (DeepSeek V3's ``kv_a_layernorm`` is
built with transformers' default 1e-6, not ``rms_norm_eps``); the spec refuses it where it means nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnsym as at
from attnsym.errors import SpecError
from attnsym.models.families_mla import FAMILIES_MLA
from attnsym.spec import DEFAULT_LATENT_NORM_EPS
from attnsym.symbolic.parameters import parameter_shapes

MLA = at.AttentionSpec(n=2, d_model=2, heads=1, d_k=3, d_v=1, causal=True, positions="rope", rotary_pct=2 / 3,
                       kv_latent_rank=1)


def test_the_default_is_written_once_and_the_symbolic_default_is_it():
    assert MLA.latent_norm_eps == DEFAULT_LATENT_NORM_EPS == at.symbolic.parameters.DEFAULT_LATENT_EPS == 1e-6


def test_the_spec_refuses_a_latent_eps_without_a_latent_or_below_zero():
    with pytest.raises(SpecError, match=r"latent_norm_eps=0\.001 only applies with kv_latent_rank set"):
        at.AttentionSpec(n=2, d_model=2, latent_norm_eps=1e-3)
    with pytest.raises(SpecError, match=r"latent_norm_eps must be a non-negative finite number \(got -1\.0\)"):
        MLA.replace(latent_norm_eps=-1.0)
    with pytest.raises(SpecError, match="latent_norm_eps"):
        MLA.replace(latent_norm_eps=float("nan"))


def test_the_symbolic_layer_reads_the_eps_from_the_spec():
    """A large eps (0.5) changes the latent; the spec's field and the explicit keyword give the same layer."""
    spec = MLA.replace(latent_norm_eps=0.5)
    rng = np.random.default_rng(0)
    values = {k: rng.standard_normal(s) for k, s in {"X": (spec.n, spec.d_model), **parameter_shapes(spec)}.items()}

    def run(s, **kw):
        sym = at.symbolic.attention(s, **kw)
        return sym.lambdify("Y")(**values)["Y"]

    from_spec = run(spec)
    assert np.abs(from_spec - run(MLA, latent_eps=0.5)).max() < 1e-14
    assert np.abs(from_spec - run(MLA)).max() > 1e-3


def test_the_deepseek_plan_norms_its_latents_with_the_spec_eps():
    raw = {"model_type": "deepseek_v3", "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
           "moe_intermediate_size": 16, "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 64,
           "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8,
           "v_head_dim": 6, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
           "first_k_dense_replace": 1, "rms_norm_eps": 1e-5}
    plan = FAMILIES_MLA["deepseek_v3"](raw, Path("config.json"))
    for block in plan.blocks:
        assert block.latent_norm.eps == block.attention.latent_norm_eps == 1e-6  # not rms_norm_eps
        assert block.norm.eps == 1e-5
