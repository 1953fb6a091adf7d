"""Families whose configs scale RoPE (YaRN, LongRoPE, dynamic NTK, LLaMA 3.1) against transformers eager in float64.

Small random checkpoints whose scaling bites on the 9-token texts: LLaMA and Qwen2 with YaRN
(factor 4, ``original_max_position_embeddings`` 4096 so the ramp mixes planes, attention factor
``0.1 ln 4 + 1``), LLaMA with YaRN's ``mscale`` / ``mscale_all_dim``, Phi-3 with LongRoPE
(``original_max_position_embeddings`` 4 at the config's top level, as Phi-3 writes it: the 9-token
batch takes the long factors, a 4-token one the short ones; attention factor
``sqrt(1 + ln 16 / ln 4)`` from ``max_position_embeddings`` 64), LLaMA with dynamic NTK beyond
``max_position_embeddings`` 6, LLaMA 3.1's rule, and gpt-oss with YaRN as it ships (factor 32,
``truncate`` false, beside its sinks and windows).

The bar: attention within 1e-12, hidden states within 1e-10, against transformers with its float32
steps (RoPE's frequencies and angles, RMSNorm, softmax) made float64 — as
``tests/test_models_float64_reference.py`` explains, the model as shipped agrees only to float32
rounding. Here the frequencies transformers recomputes during the forward (LongRoPE's long set,
dynamic NTK's base, a float tensor) are built the same way, with float64 as torch's default dtype.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from models_support import padded_gaps, save_random, scratch_folder
from test_models_float64_reference import _float32_steps_in_float64

from attnsym import models
from attnsym.cli import main
from attnsym.models.errors import TextError
from attnsym.models.forward import forward

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

ATTENTION_TOL, HIDDEN_TOL = 1e-12, 1e-10

KW = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, vocab_size=100,
          max_position_embeddings=64, pad_token_id=1, num_hidden_layers=2)
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "rope_theta": 10000.0}
LONG = {"rope_type": "longrope", "short_factor": [1.0, 1.3], "long_factor": [2.0, 5.0], "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16, "rope_theta": 500000.0}
VARIANTS = {
    "llama-yarn": ("LlamaConfig", "LlamaModel", dict(rope_parameters=YARN)),
    "llama-yarn-mscale": ("LlamaConfig", "LlamaModel",
                          dict(rope_parameters=dict(YARN, mscale=0.8, mscale_all_dim=0.5, beta_fast=8))),
    "qwen2-yarn": ("Qwen2Config", "Qwen2Model", dict(rope_parameters=YARN)),
    "phi3-longrope": ("Phi3Config", "Phi3Model", dict(rope_parameters=LONG, original_max_position_embeddings=4)),
    "llama-dynamic": ("LlamaConfig", "LlamaModel",
                      dict(rope_parameters={"rope_type": "dynamic", "factor": 3.0, "rope_theta": 10000.0},
                           max_position_embeddings=6)),
    "llama-llama3": ("LlamaConfig", "LlamaModel", dict(rope_parameters=LLAMA3)),
    "gpt_oss-yarn": ("GptOssConfig", "GptOssModel",  # as gpt-oss ships it: YaRN x32, untruncated ramp
                     dict(head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=3,
                          rope_parameters=dict(YARN, factor=32.0, beta_fast=32.0, beta_slow=1.0, truncate=False,
                                               rope_theta=150000.0))),
}
IDS = np.array([[2, 3, 4, 5, 6, 20, 12, 13, 14], [7, 8, 9, 10, 11, 1, 1, 1, 1]])
MASK = (IDS != 1).astype(np.int64)


@functools.cache
def checkpoint(name: str):
    """``(folder, hf)``: the random checkpoint of ``name`` saved with transformers, noise on every parameter."""
    config_cls, model_cls, extra = VARIANTS[name]
    return save_random(getattr(transformers, config_cls)(**{**KW, **extra}), model_cls, seed=0, noise=0.2,
                       prefix=f"attnsym-{name}-")


def reference(name: str, ids, mask):
    """transformers' attentions and hidden states of the checkpoint ``name`` (:func:`float64_reference`)."""
    return float64_reference(*checkpoint(name), ids, mask)


def float64_reference(folder: Path, hf, ids, mask):
    """transformers' attentions and hidden states in float64, its float32 steps promoted (module docstring)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    default = torch.get_default_dtype()
    with _float32_steps_in_float64() as constructors, torch.no_grad():
        ref = type(hf).from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                       experts_implementation="eager").eval()
        rotary = ref.rotary_emb
        kind = rotary.rope_type
        init = rotary.compute_default_rope_parameters if kind == "default" else ROPE_INIT_FUNCTIONS[kind]
        with constructors():
            inv_freq, _ = init(rotary.config)
            if kind == "longrope":  # the long set, made as transformers makes it on the first long input
                original = rotary.config.rope_parameters["original_max_position_embeddings"]
                rotary.long_inv_freq = init(rotary.config, seq_len=original + 1)[0].to(torch.float64)
        rotary.inv_freq = rotary.original_inv_freq = inv_freq.to(torch.float64)
        with constructors():
            torch.set_default_dtype(torch.float64)  # dynamic NTK's base: a float tensor made from the length
            try:
                out = ref(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), output_attentions=True,
                          output_hidden_states=True)
            finally:
                torch.set_default_dtype(default)
        assert rotary.inv_freq.dtype == torch.float64
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


errors = padded_gaps  # the largest attention and hidden-state gaps over the real tokens


@pytest.mark.parametrize("name", list(VARIANTS))
def test_float64_matches_transformers(name):
    """Every scaled family equals transformers in float64 (module docstring: the bar and why)."""
    folder, _ = checkpoint(name)
    m = models.load(folder, dtype="float64")
    batches = [(IDS, MASK)]
    if name == "phi3-longrope":  # 4 tokens: no longer than original_max_position_embeddings, the short factors
        batches.append((IDS[:, :4], MASK[:, :4]))
    for ids, mask in batches:
        if name == "llama-dynamic":  # a Model refuses a text beyond max_position_embeddings; the plan's pass runs it
            with pytest.raises(TextError, match="more than the 6 positions"):
                m.forward(ids, mask)
            out = forward(m.config, m.weights, ids, mask)
        else:
            out = m.forward(ids, mask)
        worst_a, worst_h = errors(out, reference(name, ids, mask), mask)
        print(f"{name} ({ids.shape[1]} tokens): attention {worst_a:.3g}, hidden states {worst_h:.3g}")
        assert worst_a <= ATTENTION_TOL and worst_h <= HIDDEN_TOL


def test_the_reference_sees_the_scaling():
    """Without the scaling the same weights give other attention: each test above measures the rule."""
    folder, _ = checkpoint("phi3-longrope")
    plain = json.loads((folder / "config.json").read_text())
    plain["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    other = scratch_folder("attnsym-phi3-plain-")
    for f in folder.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    (other / "config.json").write_text(json.dumps(plain))
    A = reference("phi3-longrope", IDS, MASK)[0]
    B = np.asarray(models.load(other, dtype="float64").forward(IDS, MASK).attention)
    assert np.abs(A[:, 0] - B[:, 0]).max() > 1e-3


@pytest.mark.parametrize("name", ["llama-yarn", "phi3-longrope", "llama-dynamic"])
def test_layers_json_reports_the_scaling(name, capsys):
    folder, hf = checkpoint(name)
    assert main(["layers", "--model", str(folder), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layers"]
    scaling = rows[0]["rope_scaling"]
    if name == "llama-yarn":
        assert scaling["type"] == "yarn" and scaling["factor"] == 4.0
        assert scaling["original_max_position_embeddings"] == 4096
        assert scaling["attention_factor"] == pytest.approx(hf.rotary_emb.attention_scaling, rel=1e-15)
    if name == "phi3-longrope":
        assert scaling["type"] == "longrope" and scaling["original_max_position_embeddings"] == 4
        assert scaling["factor"] == 16.0 and scaling["long_factor"] == [2.0, 5.0]
        assert scaling["short_factor"] == [1.0, 1.3] and rows[0]["rotary_dims"] == 4
        assert scaling["attention_factor"] == pytest.approx(hf.rotary_emb.attention_scaling, rel=1e-15)
    if name == "llama-dynamic":
        assert scaling == {"type": "dynamic", "factor": 3.0, "original_max_position_embeddings": 6}


def test_an_unsupported_rope_type_is_refused_by_key_and_value(tmp_path):
    folder, _ = checkpoint("llama-yarn")
    raw = json.loads((folder / "config.json").read_text())
    raw["rope_parameters"] = {"rope_type": "proportional", "factor": 2.0, "rope_theta": 10000.0}
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(models.UnsupportedModelError, match=r"rope_scaling\.rope_type='proportional' is not supported"):
        models.load(tmp_path)
