"""Phi-3 and Gemma 3 GGUF files (``phi3``, ``gemma3``) written with ``gguf.GGUFWriter`` from random checkpoints.

Against transformers' own GGUF loader (full rotary: transformers' GGUF mapping for phi3 does not
read ``phi3.rope.dimension_count``, so it runs every file with full rotary) in float32, within
the float32 bar of ``tests/test_models_gguf.py``; and with half the dimensions rotated, the same
plan and the very same arrays as attnsym's load of the Hugging Face folder. LongRoPE factor
tensors are refused by name.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from test_models_gguf import IDS, KW, Q, _gap, _reference, write_gguf

from attnsym import models
from attnsym.models import UnsupportedModelError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle


def _phi3(partial: float):
    config = transformers.Phi3Config(**{k: v for k, v in KW.items() if k != "rope_theta"},
                                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                      "partial_rotary_factor": partial}, pad_token_id=0)
    torch.manual_seed(2)
    hf = transformers.Phi3ForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return hf


def test_float32_matches_transformers_gguf_loader():
    folder = Path(tempfile.mkdtemp(prefix="attnsym-gguf-phi3-"))
    path = write_gguf(folder / "phi3.gguf", _phi3(1.0), "phi3")
    m = models.load(path)
    assert m.config.model_type == "phi3" and m.spec(0).rotary_dims == 16
    gap = _gap(m.forward(IDS), _reference(path))
    print(f"phi3 F32 float32: max |attnsym - transformers GGUF| = {gap:.2g}")
    assert gap <= 2e-5


def test_partial_rotary_gguf_equals_the_folder(tmp_path):
    hf = _phi3(0.5)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    path = write_gguf(tmp_path / "phi3.gguf", hf, "phi3")
    folder_model, gguf_model = models.load(tmp_path), models.load(path)
    assert gguf_model.spec(0).rotary_dims == folder_model.spec(0).rotary_dims == 8
    for a, b in zip(gguf_model.weights.layers, folder_model.weights.layers, strict=True):
        assert a.digest() == b.digest()
    np.testing.assert_array_equal(gguf_model.forward(IDS).hidden_states, folder_model.forward(IDS).hidden_states)


def test_longrope_factor_tensors_are_refused(tmp_path):
    factors = np.ones(8, dtype=np.float32)
    path = write_gguf(tmp_path / "phi3.gguf", _phi3(1.0), "phi3",
                      extra_tensors={"rope_factors_long.weight": (factors, Q.F32)})
    with pytest.raises(UnsupportedModelError, match=r"'rope_factors_long.weight' tensor \(Phi-3's LongRoPE factors\)"):
        models.load(path)


def test_gemma3_gguf_matches_transformers_gguf_loader_and_the_folder(tmp_path):
    """Gemma 3 (text), six layers (five local at base 10 000, one global at 1 000 000), 1 + w norms stored whole.

    llama.cpp scales queries by ``head_dim^-1/2`` (the checkpoints' ``query_pre_attn_scalar`` but for the 27B) and
    transformers' GGUF loader by its default 256: the checkpoint has ``head_dim = query_pre_attn_scalar = 256``.
    """
    config = transformers.Gemma3TextConfig(**{k: v for k, v in KW.items() if k not in ("rope_theta", "num_hidden_layers")},
                                           num_hidden_layers=6, head_dim=256, query_pre_attn_scalar=256,
                                           sliding_window=3, pad_token_id=0)  # llama.cpp scales by head_dim^-1/2
    torch.manual_seed(3)
    hf = transformers.Gemma3ForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.2 * torch.randn_like(p))
    hf.save_pretrained(tmp_path, safe_serialization=True)
    path = write_gguf(tmp_path / "gemma3.gguf", hf, "gemma3_text")
    m, folder_model = models.load(path), models.load(tmp_path)
    rows = m.layers().to_dict()["layers"]
    assert [r["rope_base"] for r in rows] == [10000.0] * 5 + [1000000.0]
    assert [r["window"] for r in rows] == [3] * 5 + [None]
    gap = _gap(m.forward(IDS), _reference(path))
    print(f"gemma3 F32 float32: max |attnsym - transformers GGUF| = {gap:.2g}")
    assert gap <= 2e-5
    folder_out, gguf_out = folder_model.forward(IDS), m.forward(IDS)  # the +1 moved from the spec into the gains
    np.testing.assert_allclose(gguf_out.hidden_states, folder_out.hidden_states, rtol=0, atol=1e-5)
