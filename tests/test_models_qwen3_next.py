"""Qwen3-Next with full-attention layers only against transformers eager in float64.

A small random checkpoint whose options bite: the output gate that ``q_proj`` makes beside each
head's query (noise on every weight, so ``σ`` is far from 1/2), per-head QK-norm and every RMSNorm
with ``1 + w`` gains, half the head dimensions rotated, a mixture of 4 experts (top 2, the softmax
over every expert, renormalised or not) with a sigmoid-gated shared expert of another width on
layer 0 and a dense MLP on layer 1 (``mlp_only_layers``). The bar: attention within 1e-12, hidden
states within 1e-10, against transformers with its float32 steps made float64
(``tests/test_models_rope_scaling.py``: the same reference). A config with linear-attention
(Gated DeltaNet) layers is refused with one message naming the layer type.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from models_support import save_random
from test_models_rope_scaling import IDS, KW, MASK, errors, float64_reference

from attnsym import models
from attnsym.cli import main

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

ATTENTION_TOL, HIDDEN_TOL = 1e-12, 1e-10
QWEN3_NEXT = dict(head_dim=8, layer_types=["full_attention"] * 2, num_experts=4, num_experts_per_tok=2,
                  moe_intermediate_size=16, shared_expert_intermediate_size=24, decoder_sparse_step=1,
                  mlp_only_layers=[1], rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                        "partial_rotary_factor": 0.5})


@functools.cache
def checkpoint(norm_topk_prob: bool):
    """``(folder, hf)``: a random Qwen3-Next saved with transformers, noise on every parameter."""
    return save_random(transformers.Qwen3NextConfig(**KW, **QWEN3_NEXT, norm_topk_prob=norm_topk_prob), "Qwen3NextModel",
                       seed=0, noise=0.3, prefix="attnsym-qwen3_next-")


@pytest.mark.parametrize("norm_topk_prob", [True, False])
def test_float64_matches_transformers(norm_topk_prob):
    folder, hf = checkpoint(norm_topk_prob)
    m = models.load(folder, dtype="float64")
    assert m.config.model_type == "qwen3_next" and m.spec(0).output_gate and m.config.blocks[1].experts is None
    worst_a, worst_h = errors(m.forward(IDS, MASK), float64_reference(folder, hf, IDS, MASK), MASK)
    print(f"qwen3_next (norm_topk_prob={norm_topk_prob}): attention {worst_a:.3g}, hidden states {worst_h:.3g}")
    assert worst_a <= ATTENTION_TOL and worst_h <= HIDDEN_TOL


def test_the_gate_bites():
    """Without the gate (W_G = +large: σ = 1) the hidden states move: the test above measures the gate."""
    folder, hf = checkpoint(True)
    m = models.load(folder, dtype="float64")
    H = float64_reference(folder, hf, IDS, MASK)[1]
    for layer in m.weights.layers:
        layer.W_G[...] = 0.0  # σ(0) = 1/2 on every coordinate
    out = np.asarray(m.forward(IDS, MASK).hidden_states)
    assert np.abs(out[:, 0] - H[:, 0]).max() > 1e-2


def test_layers_report_the_output_gate(capsys):
    folder, _ = checkpoint(True)
    assert main(["layers", "--model", str(folder), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layers"]
    assert [r["output_gate"] for r in rows] == [True, True]
    assert rows[0]["qk_norm"] == "per_head" and rows[0]["qk_norm_gain"] == "1+w" and rows[0]["rotary_dims"] == 4


@pytest.mark.parametrize("changes", [{"layer_types": ["linear_attention", "full_attention"]},
                                     {"layer_types": None, "full_attention_interval": 4}])
def test_linear_attention_layers_are_refused_by_name(tmp_path, changes):
    folder, _ = checkpoint(True)
    raw = json.loads((folder / "config.json").read_text())
    raw.update(changes)
    if raw["layer_types"] is None:
        del raw["layer_types"]
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(models.UnsupportedModelError,
                       match=r"layer_types='linear_attention' is not supported \(attnsym runs qwen3_next whose "):
        models.read_config(tmp_path / "config.json")
