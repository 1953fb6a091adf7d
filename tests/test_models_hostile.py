"""Hostile model folders and texts (issue 26, items 3, 4, 6): each reproduction is a clear AttnsymError."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from models_support import minilm

from attnsym.errors import AttnsymError
from attnsym.models import CorruptWeightsError, ModelError, TextError, UnsupportedModelError, load
from attnsym.models.config import MAX_CONFIG_BYTES, read_config
from attnsym.models.model import Model
from attnsym.models.weights import _Tensors, read_weights

BERT = {"model_type": "bert", "num_hidden_layers": 1, "num_attention_heads": 2, "hidden_size": 8,
        "intermediate_size": 16, "max_position_embeddings": 16, "vocab_size": 30, "type_vocab_size": 2}
GPT2 = {"model_type": "gpt2", "n_layer": 1, "n_head": 2, "n_embd": 8, "n_positions": 16, "vocab_size": 30}


def _config(tmp_path, raw):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw) if not isinstance(raw, str) else raw)
    return path


def test_the_base_configs_read(tmp_path):
    assert read_config(_config(tmp_path, BERT)).width == 8
    gpt2 = read_config(_config(tmp_path, GPT2))
    assert gpt2.blocks[0].attention.scale == "sqrt" and gpt2.causal and gpt2.final_norm is not None  # scale_attn_weights
    off = read_config(_config(tmp_path, {**GPT2, "scale_attn_weights": False, "scale_attn_by_inverse_layer_idx": True,
                                         "n_layer": 2}))
    assert [float(b.attention.scale) for b in off.blocks] == [1.0, 0.5]  # 1/(l + 1), no 1/sqrt(d_k)


@pytest.mark.parametrize(("base", "key", "value", "match"), [
    (BERT, "model_type", ["bert"], "model_type"),
    (BERT, "hidden_act", ["gelu"], "hidden_act"),
    (GPT2, "activation_function", {"a": 1}, "activation_function"),
    (BERT, "pad_token_id", 10**9, "pad_token_id.*vocab_size=30"),
    (BERT, "pad_token_id", -1, "pad_token_id"),
    (BERT, "layer_norm_eps", -1e-5, "layer_norm_eps"),
    (GPT2, "layer_norm_epsilon", 0, "layer_norm_epsilon"),
    (GPT2, "scale_attn_weights", "false", "scale_attn_weights.*boolean"),
    (BERT, "is_decoder", "no", "is_decoder.*boolean"),
    (BERT, "hidden_size", 2**40, "hidden_size.*at most"),
    (BERT, "num_hidden_layers", 2.0, "num_hidden_layers"),
])
def test_a_field_of_the_wrong_type_or_range_is_refused_by_name(tmp_path, base, key, value, match):
    with pytest.raises(ModelError, match=match):
        read_config(_config(tmp_path, {**base, key: value}))


@pytest.mark.parametrize(("text", "match"), [
    ('{"model_type": "bert", "hidden_size": ' + "9" * 5000 + "}", "not valid JSON"),
    ('{"model_type": "bert", "num_hidden_layers": 1, "num_attention_heads": 2, "hidden_size": 8, '
     '"intermediate_size": 16, "max_position_embeddings": 16, "vocab_size": 30, "layer_norm_eps": 1e400}', "layer_norm_eps"),
    ('{"model_type": "bert", "layer_norm_eps": Infinity}', "layer_norm_eps|hidden_layers"),
    ("[" * 100000, "not valid JSON"),
])
def test_nonsense_numbers_and_json_are_refused(tmp_path, text, match):
    with pytest.raises(ModelError, match=match):
        read_config(_config(tmp_path, text))


def test_a_non_utf8_or_huge_config_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "\xff\xfe"}')
    with pytest.raises(ModelError, match="not UTF-8"):
        read_config(path)
    with path.open("wb") as handle:  # sparse: large on disk, nothing to hold
        handle.truncate(MAX_CONFIG_BYTES * 3000)
    with pytest.raises(ModelError, match="larger than"):
        read_config(path)


def _safetensors(path, tensors):
    """A safetensors file written by hand: name -> (dtype name, shape, raw bytes)."""
    header, blobs, offset = {}, [], 0
    for name, (kind, shape, data) in tensors.items():
        header[name] = {"dtype": kind, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_bfloat16_is_widened_exactly_and_f8_is_refused_by_name(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 1e-30, 65280.0], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")
    _safetensors(tmp_path / "w.safetensors", {"a": ("BF16", (5,), bits.tobytes()), "b": ("F8_E4M3", (4,), b"\0" * 4),
                                              "c": ("F16", (2,), np.array([0.5, -3], "<f2").tobytes())})
    t = _Tensors(tmp_path / "w.safetensors", ("",), np.dtype(np.float64))
    got = t("a", (5,))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
    np.testing.assert_array_equal(t("c", (2,)), [0.5, -3.0])
    with pytest.raises(CorruptWeightsError, match="F8_E4M3"):
        t("b", (4,))
    with pytest.raises(CorruptWeightsError, match="shape"):
        t("a", (4,))


def test_an_unused_tensor_is_never_read(tmp_path):
    """A 1.5 GB tensor the header claims but the file lacks is never touched: the used one still reads."""
    used = np.arange(6, dtype="<f4")
    text = json.dumps({"used": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "unused": {"dtype": "F32", "shape": [375_000_000], "data_offsets": [24, 1_500_000_024]}}).encode()
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + used.tobytes())
    t = _Tensors(path, ("",), np.dtype(np.float32))
    np.testing.assert_array_equal(t("used", (2, 3)), used.reshape(2, 3))
    with pytest.raises(CorruptWeightsError, match="truncated"):
        t("unused", (375_000_000,))


def test_read_weights_matches_the_packaged_model():
    m = minilm()
    again = read_weights(m.folder / "model.safetensors", m.config)
    assert [lw.digest() for lw in again.layers] == [lw.digest() for lw in m.weights.layers]
    np.testing.assert_array_equal(again.word, m.weights.word)


def test_a_sharded_folder_loads_the_same_weights(tmp_path):
    m = minilm()
    src = _Tensors(m.folder / "model.safetensors", ("",), np.dtype(np.float32))
    names = sorted(k for k, (_, entry, _) in src.entries.items() if entry["dtype"] == "F32")
    shards = {}
    for k, part in enumerate((names[::2], names[1::2])):
        file = f"model-0000{k + 1}-of-00002.safetensors"
        tensors = {}
        for name in part:
            _, entry, _ = src.entries[name]
            array = src(name, tuple(entry["shape"]))  # F32 read as float32: the stored values
            tensors[name] = (entry["dtype"], array.shape, np.ascontiguousarray(array).tobytes())
            shards[name] = file
        _safetensors(tmp_path / file, tensors)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": shards}))
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).symlink_to(m.folder / name)
    sharded = load(tmp_path)
    np.testing.assert_array_equal(sharded.route("a sharded folder").attention, m.route("a sharded folder").attention)


@pytest.mark.parametrize("text", [None, 5, 3.5, {"a": 1}, "\ud800 lone", "\u200b\u200b\u200d", "\x00\x01\x02", ["ok", None]])
def test_bad_texts_are_text_errors(text):
    with pytest.raises(TextError):
        minilm().route(text)


def test_a_huge_text_is_refused_before_it_is_encoded_whole():
    m = minilm()
    with pytest.raises(TextError, match=r"more than 512 tokens.*first"):
        m.route("apple " * 1_500_000)  # 9 MB


def test_an_id_past_the_vocabulary_is_refused():
    m = minilm()
    small = Model(m.name, m.folder, replace(m.config, vocab_size=1000), m.weights, m.tokenizer)
    with pytest.raises(ModelError, match=r"past config\.json's vocab_size 1000"):
        small.route("zebra crossing")


def test_every_error_is_an_attnsym_error():
    for cls in (ModelError, TextError, CorruptWeightsError, UnsupportedModelError):
        assert issubclass(cls, AttnsymError)


@pytest.mark.parametrize("raw", [{**GPT2, "model_type": ["gpt2"]}, {**GPT2, "layer_norm_epsilon": -1},
                                 {**GPT2, "scale_attn_weights": "false"}])
def test_the_cli_prints_one_line_and_no_internal_error_for_a_bad_folder(tmp_path, raw):
    _config(tmp_path, raw)
    _safetensors(tmp_path / "model.safetensors", {"h.0.ln_1.weight": ("F32", (8,), bytes(32))})  # the config's fault only
    (tmp_path / "tokenizer.json").write_text("{}")
    command = [sys.executable, "-m", "attnsym", "route", "--model", str(tmp_path), "-o", str(tmp_path / "out"), "a text"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert ("model_type" in done.stderr or "layer_norm_epsilon" in done.stderr or "scale_attn_weights" in done.stderr)


def _folder_without_tokenizer(tmp_path):
    m = minilm()
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).symlink_to(m.folder / name)
    return m


def test_without_a_tokenizer_forward_works_and_route_names_the_files(tmp_path):
    m = _folder_without_tokenizer(tmp_path)
    bare = load(tmp_path)
    ids = np.array([m.route("apples").ids])
    np.testing.assert_allclose(bare.forward(ids).attention, m.forward(ids).attention)
    with pytest.raises(ModelError, match=r"no tokenizer.*vocab\.txt"):
        bare.route("apples")


def test_forward_past_the_positions_is_a_clear_error(tmp_path):
    with pytest.raises(TextError, match="more than the 512 positions"):
        minilm().forward(np.zeros((1, 513), dtype=np.int64))


def test_a_vocab_txt_folder_tokenizes_as_wordpiece(tmp_path):
    m = _folder_without_tokenizer(tmp_path)
    vocab = m.tokenizer.get_vocab()
    (tmp_path / "vocab.txt").write_text("\n".join(sorted(vocab, key=vocab.get)) + "\n", encoding="utf-8")
    r = load(tmp_path).route("I like to eat apples")
    assert r.tokens == m.route("I like to eat apples").tokens


def test_the_reader_agrees_with_the_safetensors_library(tmp_path):
    """The reader against the references: ``safetensors.numpy`` for F16/F32/F64, PyTorch's widening for BF16."""
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(0)
    arrays = {"f16": rng.normal(size=(3, 4)).astype(np.float16), "f32": rng.normal(size=(5,)).astype(np.float32),
              "f64": rng.normal(size=(2, 2, 3))}
    save_file(arrays, str(tmp_path / "n.safetensors"))
    expected = load_file(str(tmp_path / "n.safetensors"))
    t = _Tensors(tmp_path / "n.safetensors", ("",), np.dtype(np.float64))
    for name, value in expected.items():
        np.testing.assert_array_equal(t(name, value.shape), value.astype(np.float64))
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    bf16 = torch.tensor(rng.normal(size=(4, 3)) * 100, dtype=torch.bfloat16)
    save_torch({"w": bf16}, str(tmp_path / "b.safetensors"))
    got = _Tensors(tmp_path / "b.safetensors", ("",), np.dtype(np.float32))("w", (4, 3))
    np.testing.assert_array_equal(got, bf16.float().numpy())


def test_bfloat16_is_widened_blockwise_exactly(tmp_path, monkeypatch):
    """Read a block at a time, the widening equals the whole-array one, across block edges and for special bits."""
    from attnsym.models import weights as weights_module

    monkeypatch.setattr(weights_module, "_WIDEN_ELEMENTS", 7)  # many blocks, the last one short
    bits = np.random.default_rng(0).integers(0, 2**16, size=(5, 9), dtype=np.uint16)
    bits[0, :4] = [0x7F80, 0xFF80, 0x0001, 0x8000]  # inf, -inf, a subnormal, -0
    _safetensors(tmp_path / "w.safetensors", {"w": ("BF16", bits.shape, bits.tobytes())})
    t = _Tensors(tmp_path / "w.safetensors", ("",), np.dtype(np.float32))
    file, begin, kind = t._locate("w", bits.shape)
    widened = weights_module._read(file, begin, bits.shape, kind)
    assert widened.dtype == np.float32 and widened.shape == bits.shape
    np.testing.assert_array_equal(widened.view(np.uint32), bits.astype(np.uint32) << 16)
