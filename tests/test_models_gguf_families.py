"""GGUF files of the 2026 families (``olmo2``, ``smollm3``, ``llama4``, ``gpt-oss``) and GGUF YaRN.

Each file is written here with ``gguf.GGUFWriter`` from a random seeded transformers checkpoint,
its tensors transformed as llama.cpp's converter does (SmolLM3's q/k rows permuted as LLaMA's;
Llama 4's ``gate_up_proj`` split into ``ffn_gate_exps`` / ``ffn_up_exps`` and every expert matrix
stored as its ``nn.Linear``; gpt-oss's interleaved gate|up columns split the same way, its sinks
as ``attn_sinks.weight``), its metadata as the converter writes it. transformers has no GGUF loader
for three of the four, and its ``gpt_oss`` one fails on these files (transformers 5.25 reads each
``rope.scaling.*`` field's first part, the key's length, as its value: ``TypeError`` in
``load_gguf_checkpoint``), so the reference is transformers eager on the ORIGINAL folder: attention
and hidden states (each layer's relative to its largest entry, at least 1) within 1e-5 in float32
from F32 storage, and the layer schedule (``m.layers()``) equal to the folder's.

The options that bite: OLMo 2's whole-projection QK-norm and output norms; SmolLM3's NoPE layer 3
(llama.cpp's step 4) with the permuted rows; Llama 4's NoPE layer 3 (no temperature below 8 192
tokens: llama.cpp fixes floor 8 192 and chunks of 8 192, so the checkpoint uses them too), its
weightless QK-norm, experts (2 of 4) on every second layer and a shared expert; gpt-oss's sinks
near ``e``, experts, a window of 3 on even layers and YaRN x4 over 4 096 original positions, where
``truncate = false`` moves the ramp (planes 1.31 … 2.81 instead of 1 … 3: plane 2 takes 0.46, not 0.5). Hostile metadata: a
missing required key is named, an unknown key of the architecture is refused, a schedule key of
the wrong type or length is an error.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from models_support import add_gguf_metadata, finish_gguf, save_random
from test_models_gguf import IDS as LLAMA_IDS
from test_models_gguf import KW as LLAMA_KW
from test_models_gguf import write_gguf

from attnsym import models
from attnsym.models import CorruptWeightsError, ModelError, UnsupportedModelError

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

TOL = 1e-5
KW = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, vocab_size=100,
          max_position_embeddings=64, rms_norm_eps=1e-5, pad_token_id=1)
_DEFAULT = {"rope_type": "default", "rope_theta": 10000.0}
_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
         "beta_slow": 1.0, "truncate": False, "rope_theta": 10000.0}
#: family -> (config class, model class, options, GGUF architecture)
FAMILIES = {
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", dict(num_hidden_layers=2, rope_parameters=_DEFAULT), "OLMO2"),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", dict(num_hidden_layers=4, rope_parameters=_DEFAULT,
                                                            tie_word_embeddings=False), "SMOLLM3"),
    "llama4_text": ("Llama4TextConfig", "Llama4ForCausalLM",
                    dict(num_hidden_layers=4, head_dim=8, intermediate_size_mlp=48, num_local_experts=4,
                         num_experts_per_tok=2, interleave_moe_layer_step=2, rope_parameters=_DEFAULT), "LLAMA4"),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM",
                dict(num_hidden_layers=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=3,
                     rope_parameters=_YARN), "GPT_OSS"),
}
IDS = np.array([[2, 3, 4, 5, 6, 20, 12, 13, 14]])


@functools.cache
def checkpoint(family: str):
    """``(folder, hf)``: the random checkpoint of ``family``, noise 0.2 on every parameter, sinks about ``e``."""
    config_cls, model_cls, extra, _ = FAMILIES[family]
    folder, hf = save_random(getattr(transformers, config_cls)(**KW, **extra), model_cls, seed=7, noise=0.2,
                             prefix=f"attnsym-gguf-{family}-")
    if family == "gpt_oss":  # sinks that take a visible share of each row
        with torch.no_grad():
            for key, p in hf.named_parameters():
                if key.endswith("sinks"):
                    p.copy_(torch.randn_like(p) + 1.0)
        hf.save_pretrained(folder, safe_serialization=True)
    return folder, hf


def _arch(family: str) -> str:
    return gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[FAMILIES[family][3]]]


def _metadata(family: str, c) -> dict:
    """The keys (without the architecture prefix) llama.cpp's converter writes for ``family``."""
    rope = c.rope_parameters
    out = {"block_count": c.num_hidden_layers, "context_length": c.max_position_embeddings,
           "embedding_length": c.hidden_size, "feed_forward_length": c.intermediate_size,
           "attention.head_count": c.num_attention_heads, "attention.head_count_kv": c.num_key_value_heads,
           "rope.freq_base": float(rope["rope_theta"]), "attention.layer_norm_rms_epsilon": float(c.rms_norm_eps),
           "vocab_size": c.vocab_size, "rope.dimension_count": getattr(c, "head_dim", None)
           or c.hidden_size // c.num_attention_heads}
    if family in ("llama4_text", "gpt_oss"):
        out |= {"attention.key_length": c.head_dim, "attention.value_length": c.head_dim,
                "expert_count": c.num_local_experts, "expert_used_count": c.num_experts_per_tok,
                "expert_feed_forward_length": c.intermediate_size}
    if family == "llama4_text":
        out |= {"feed_forward_length": c.intermediate_size_mlp, "interleave_moe_layer_step": c.interleave_moe_layer_step}
    if family == "gpt_oss":
        out |= {"attention.sliding_window": c.sliding_window, "rope.scaling.type": "yarn",
                "rope.scaling.factor": float(rope["factor"]),
                "rope.scaling.original_context_length": rope["original_max_position_embeddings"],
                "rope.scaling.yarn_beta_fast": float(rope["beta_fast"]),
                "rope.scaling.yarn_beta_slow": float(rope["beta_slow"])}
    return out


def _permute_rows(W: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's LLaMA converter: GGUF row ``2i + t`` of a head = original row ``i + t·d/2``."""
    d = W.shape[0] // heads
    return W.reshape(heads, 2, d // 2, *W.shape[1:]).swapaxes(1, 2).reshape(W.shape)


def _tensors(family: str, hf):
    """``(GGUF name, float32 array)`` of every parameter, transformed as llama.cpp's converter does."""
    c = hf.config
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[FAMILIES[family][3]], c.num_hidden_layers)
    for name, tensor in hf.state_dict().items():
        W = tensor.detach().numpy().astype(np.float32)
        block = name.split(".")[2] if name.startswith("model.layers.") else None
        if name == "lm_head.weight":
            if not c.tie_word_embeddings:
                yield "output.weight", W
            continue
        if name.endswith("experts.gate_up_proj"):  # (E, d, 2f) -> gate, up as (E, f, d) each
            f = W.shape[-1] // 2
            gate, up = (W[..., ::2], W[..., 1::2]) if family == "gpt_oss" else (W[..., :f], W[..., f:])
            yield f"blk.{block}.ffn_gate_exps.weight", np.ascontiguousarray(gate.swapaxes(-1, -2))
            yield f"blk.{block}.ffn_up_exps.weight", np.ascontiguousarray(up.swapaxes(-1, -2))
            continue
        if name.endswith("experts.gate_up_proj_bias"):  # gpt-oss (E, 2f), interleaved
            yield f"blk.{block}.ffn_gate_exps.bias", np.ascontiguousarray(W[..., ::2])
            yield f"blk.{block}.ffn_up_exps.bias", np.ascontiguousarray(W[..., 1::2])
            continue
        if name.endswith("experts.down_proj"):  # (E, f, d) -> (E, d, f)
            yield f"blk.{block}.ffn_down_exps.weight", np.ascontiguousarray(W.swapaxes(-1, -2))
            continue
        if name.endswith("experts.down_proj_bias"):
            yield f"blk.{block}.ffn_down_exps.bias", W
            continue
        gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gname is not None, name
        if name.endswith("self_attn.sinks"):
            gname = f"blk.{block}.attn_sinks.weight"
        if family == "smollm3" and (".attn_q." in gname or ".attn_k." in gname):
            W = _permute_rows(W, c.num_attention_heads if ".attn_q." in gname else c.num_key_value_heads)
        yield gname, W


def write_family(path, family: str, *, meta: dict | None = None, drop: tuple[str, ...] = (),
                 extra: dict | None = None, experts: str = "F32"):
    """The GGUF file of ``family``'s checkpoint, F32 (the experts' 3-D stacks as ``experts``, quantized by
    ``gguf.quants``); ``meta`` keys added or replaced, ``drop`` keys and tensors left out, ``extra`` tensors added."""
    _, hf = checkpoint(family)
    arch = _arch(family)
    writer = gguf.GGUFWriter(str(path), arch)
    keys = {**_metadata(family, hf.config), "tokenizer.ggml.padding_token_id": 1, **(meta or {})}
    add_gguf_metadata(writer, arch, keys, drop)
    kind = gguf.GGMLQuantizationType[experts]
    for gname, W in [*_tensors(family, hf), *(extra or {}).items()]:
        if gname in drop:
            continue
        if W.ndim == 3 and kind != gguf.GGMLQuantizationType.F32:
            writer.add_tensor(gname, gguf.quants.quantize(W, kind), raw_dtype=kind)
        else:
            writer.add_tensor(gname, W)
    return finish_gguf(writer, path)


@functools.cache
def reference(family: str):
    """transformers eager on the original folder, float32: stacked attentions and hidden states of :data:`IDS`."""
    folder, hf = checkpoint(family)
    ref = type(hf).from_pretrained(folder, attn_implementation="eager", experts_implementation="eager").eval()
    with torch.no_grad():
        out = ref(input_ids=torch.as_tensor(IDS), output_attentions=True, output_hidden_states=True)
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


def _gaps(out, ref) -> tuple[float, float]:
    A, H = ref
    ours = np.asarray(out.hidden_states)
    scale = np.maximum(1.0, np.abs(H).reshape(len(H), -1).max(axis=1))
    hidden = float((np.abs(ours - H).reshape(len(H), -1).max(axis=1) / scale).max())
    return float(np.abs(np.asarray(out.attention) - A).max()), hidden


def _schedule(m) -> dict:
    return json.loads(m.layers().to_json())


@pytest.mark.parametrize("family", list(FAMILIES))
def test_gguf_matches_transformers_on_the_folder(family, tmp_path):
    """Attention and hidden states within 1e-5 of transformers eager on the original folder; the same schedule."""
    folder, _ = checkpoint(family)
    m = models.load(write_family(tmp_path / f"{family}.gguf", family))
    assert m.config.model_type == family
    attention, hidden = _gaps(m.forward(IDS), reference(family))
    print(f"{family} F32 float32: attention {attention:.2g}, hidden states {hidden:.2g}")
    assert attention <= TOL and hidden <= TOL
    assert _schedule(m) == _schedule(models.load(folder))


def test_the_schedules_bite(tmp_path):
    """What the files cannot state is llama.cpp's schedule, and it is the folder's: NoPE every fourth layer
    (SmolLM3, Llama 4), chunks of 8 192 and QK-norm on Llama 4's RoPE layers, windows and YaRN in gpt-oss."""
    smol = _schedule(models.load(write_family(tmp_path / "s.gguf", "smollm3")))["layers"]
    assert [r["positions"] for r in smol] == ["rope", "rope", "rope", "none"]
    llama4 = models.load(write_family(tmp_path / "l.gguf", "llama4_text"))
    assert [llama4.spec(i).chunk for i in range(4)] == [8192, 8192, 8192, None]
    assert [llama4.spec(i).qk_norm for i in range(4)] == [True, True, True, False]
    assert [b.experts is not None for b in llama4.config.blocks] == [False, True, False, True]
    oss = models.load(write_family(tmp_path / "o.gguf", "gpt_oss"))
    assert [oss.spec(i).window for i in range(2)] == [3, None]
    scaling = oss.spec(0).rope_scaling
    assert scaling.rope_type == "yarn" and scaling.truncate is False
    assert np.round(scaling.yarn_bounds(10000.0, 8), 2).tolist() == [1.31, 2.81]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_weights_are_the_folders(family, tmp_path):
    """Every array equals the folder's, bit for bit (F32 storage): SmolLM3's q/k rows back in the checkpoint's
    order, the experts' gate|up and down stacks assembled back from the files' per-projection tensors."""
    folder, _ = checkpoint(family)
    ours, theirs = models.load(write_family(tmp_path / "m.gguf", family)), models.load(folder)
    for a, b in zip(ours.weights.layers, theirs.weights.layers, strict=True):
        assert a.digest() == b.digest()
    assert ours.weights.arrays().keys() == theirs.weights.arrays().keys()


@pytest.mark.parametrize("storage", ["Q8_0", "MXFP4"])
def test_quantized_experts_are_the_dequantized_stacks(storage, tmp_path):
    """gpt-oss's experts quantized (MXFP4 as the released files store them, Q8_0): each expert stack attnsym
    reads is exactly ``gguf.quants.dequantize`` of the stored tensors, transposed and interleaved back."""
    path = write_family(tmp_path / "q.gguf", "gpt_oss", experts=storage)
    m = models.load(path)
    stored = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in gguf.GGUFReader(path).tensors}
    for i, lw in enumerate(m.weights.layers):
        np.testing.assert_array_equal(lw.W_experts_gate, stored[f"blk.{i}.ffn_gate_exps.weight"].swapaxes(-1, -2))
        np.testing.assert_array_equal(lw.W_experts_up, stored[f"blk.{i}.ffn_up_exps.weight"].swapaxes(-1, -2))
        np.testing.assert_array_equal(lw.W_experts_down, stored[f"blk.{i}.ffn_down_exps.weight"].swapaxes(-1, -2))
    assert np.isfinite(m.forward(IDS).hidden_states).all()


def test_yarn_gguf_equals_the_folder(tmp_path):
    """A LLaMA file with YaRN keys (as the converter writes them) gives the folder's plan and outputs."""
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 16.0,
            "beta_slow": 2.0, "attention_factor": 1.25, "rope_theta": 10000.0}
    folder, hf = save_random(transformers.LlamaConfig(**{k: v for k, v in LLAMA_KW.items() if k != "rope_theta"},
                                                      rope_parameters=yarn), "LlamaForCausalLM", seed=3, noise=0.2,
                             prefix="attnsym-gguf-llama-yarn-")
    meta = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 16,
            "rope.scaling.yarn_beta_fast": 16.0, "rope.scaling.yarn_beta_slow": 2.0,
            "rope.scaling.yarn_attn_factor": 1.25, "rope.scaling.yarn_ext_factor": 1.0}
    m = models.load(write_gguf(tmp_path / "yarn.gguf", hf, "llama", meta=meta))
    theirs = models.load(folder)
    assert m.spec(0).rope_scaling == theirs.spec(0).rope_scaling
    assert m.spec(0).rope_scaling.attention_scale == 1.25
    np.testing.assert_allclose(m.forward(LLAMA_IDS).attention, theirs.forward(LLAMA_IDS).attention, rtol=0, atol=1e-6)


def _rope_freqs(base: float, dim: int, rule: dict) -> np.ndarray:
    """llama.cpp's converter for a llama3 ``rope_scaling`` (its float32 arithmetic): one divisor per plane."""
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    L, low, high, factor = (rule["original_max_position_embeddings"], rule["low_freq_factor"],
                            rule["high_freq_factor"], rule["factor"])
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < L / high:
            out.append(1)
        elif wavelen > L / low:
            out.append(factor)
        else:
            smooth = (L / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32).numpy()


#: a llama3 rule with two smoothed planes at 16 rotary dims, base 10 000 (λ = 199 and 628 between 1024/8 and 1024)
_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 8.0,
           "original_max_position_embeddings": 1024}


def test_llama3_frequency_divisors_are_read_back_as_the_rule(tmp_path):
    """``rope_freqs.weight`` (llama3 scaling baked into divisors by the converter) gives the folder's rule and plan,
    and its outputs within 1e-5 of transformers eager on the folder."""
    folder, hf = save_random(transformers.LlamaConfig(**{k: v for k, v in LLAMA_KW.items() if k != "rope_theta"},
                                                      rope_parameters={**_LLAMA3, "rope_theta": 10000.0}),
                             "LlamaForCausalLM", seed=4, noise=0.2, prefix="attnsym-gguf-llama3-")
    divisors = _rope_freqs(10000.0, 16, _LLAMA3)
    assert ((divisors != 1) & (divisors != 8)).sum() == 2
    path = write_gguf(tmp_path / "llama3.gguf", hf, "llama",
                      extra_tensors={"rope_freqs.weight": (divisors, gguf.GGMLQuantizationType.F32)})
    m = models.load(path)
    assert m.spec(0).rope_scaling == models.load(folder).spec(0).rope_scaling
    assert _schedule(m) == _schedule(models.load(folder))
    ref = type(hf).from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = ref(input_ids=torch.as_tensor(LLAMA_IDS), output_attentions=True, output_hidden_states=True)
    attention, hidden = _gaps(m.forward(LLAMA_IDS), (torch.stack(out.attentions).numpy(),
                                                     torch.stack(out.hidden_states).numpy()))
    print(f"llama3 rope_freqs F32 float32: attention {attention:.2g}, hidden states {hidden:.2g}")
    assert attention <= TOL and hidden <= TOL


@pytest.mark.parametrize(("family", "divisors", "meta", "match"), [
    ("gpt_oss", [1.0, 2.0, 4.0, 8.0], {}, "reads for llama, smollm3, llama4"),
    ("smollm3", [1.0, 2.0, 4.0, 8.0], {"rope.scaling.type": "linear", "rope.scaling.factor": 2.0},
     "scales the frequencies already"),
    ("smollm3", [1.0, 1.0, 2.0, 8.0], {}, "fewer than two smoothed planes"),
    ("smollm3", [1.0, 0.5, 2.0, 8.0], {}, "at least 1"),
    ("llama4_text", [1.0, 1.5, 3.0, 8.0], {}, "not those of a llama3"),
])
def test_rope_freqs_that_are_no_llama3_rule_are_refused(family, divisors, meta, match, tmp_path):
    path = write_family(tmp_path / "m.gguf", family, meta=meta,
                        extra={"rope_freqs.weight": np.array(divisors, np.float32)})
    with pytest.raises(UnsupportedModelError, match=match):
        models.load(path)


def test_rope_freqs_of_the_wrong_length_is_an_error(tmp_path):
    path = write_family(tmp_path / "m.gguf", "smollm3", extra={"rope_freqs.weight": np.ones(3, np.float32)})
    with pytest.raises(ModelError, match="one divisor per rotation plane"):
        models.load(path)


# ------------------------------------------------------------------------------------------ hostile metadata
@pytest.mark.parametrize(("family", "key"), [("llama4_text", "interleave_moe_layer_step"),
                                             ("llama4_text", "expert_feed_forward_length"),
                                             ("gpt_oss", "attention.sliding_window"),
                                             ("gpt_oss", "rope.scaling.original_context_length"),
                                             ("olmo2", "attention.layer_norm_rms_epsilon")])
def test_a_missing_key_is_named(family, key, tmp_path):
    path = write_family(tmp_path / "m.gguf", family, drop=(key,))
    with pytest.raises(ModelError, match=rf"no '{_arch(family)}\.{key}'"):
        models.load(path)


@pytest.mark.parametrize(("family", "key", "value"), [("smollm3", "attention.sliding_window", 4),
                                                      ("gpt_oss", "expert_shared_count", 1),
                                                      ("llama4_text", "rope.scaling.yarn_log_multiplier", 0.1),
                                                      ("olmo2", "attention.clamp_kqv", 8.0)])
def test_an_unknown_key_is_refused(family, key, value, tmp_path):
    path = write_family(tmp_path / "m.gguf", family, meta={key: value})
    with pytest.raises(UnsupportedModelError, match=rf"GGUF key {_arch(family)}\.{key}="):
        models.load(path)


@pytest.mark.parametrize(("family", "meta", "error", "match"), [
    ("olmo2", {"attention.sliding_window_pattern": [False]}, ModelError, "one true/false per layer"),
    ("olmo2", {"attention.sliding_window_pattern": [1, 0]}, ModelError, "one true/false per layer"),
    ("olmo2", {"attention.sliding_window_pattern": [True, False]}, UnsupportedModelError, "no sliding-window layers"),
    ("olmo2", {"attention.sliding_window": 4}, UnsupportedModelError, "no pattern says none slides"),
    ("llama4_text", {"interleave_moe_layer_step": "2"}, ModelError, "interleave_moe_layer_step' must be a int"),
    ("llama4_text", {"attention.sliding_window": 1024}, UnsupportedModelError, "chunks of 8192"),
    ("gpt_oss", {"attention.sliding_window": 0}, ModelError, "sliding_window' must be a positive integer"),
    ("gpt_oss", {"expert_feed_forward_length": 32}, UnsupportedModelError, "experts only"),
    ("gpt_oss", {"rope.scaling.yarn_ext_factor": 0.5}, UnsupportedModelError, "yarn_ext_factor=0.5"),
    ("gpt_oss", {"rope.scaling.type": "longrope"}, UnsupportedModelError, "'none', 'linear' and 'yarn'"),
])
def test_a_bad_schedule_key_is_an_error(family, meta, error, match, tmp_path):
    path = write_family(tmp_path / "m.gguf", family, meta=meta)
    with pytest.raises(error, match=match):
        models.load(path)


def test_an_all_false_olmo3_pattern_is_read(tmp_path):
    path = write_family(tmp_path / "m.gguf", "olmo2", meta={"attention.sliding_window_pattern": [False, False],
                                                             "attention.sliding_window": 4})
    assert models.load(path).spec(0).window is None


def test_a_llama4_file_without_chunks(tmp_path):
    """``attention.sliding_window = 0`` (MobileLLM): llama.cpp rotates every layer, no chunks, no temperature."""
    m = models.load(write_family(tmp_path / "m.gguf", "llama4_text", meta={"attention.sliding_window": 0}))
    specs = [m.spec(i) for i in range(4)]
    assert [s.positions for s in specs] == ["rope"] * 4
    assert all(s.chunk is None and s.query_temperature is None and s.qk_norm for s in specs)


def test_yarn_keys_on_a_linear_file_are_refused(tmp_path):
    path = write_family(tmp_path / "m.gguf", "smollm3", meta={"rope.scaling.type": "linear",
                                                               "rope.scaling.factor": 2.0,
                                                               "rope.scaling.yarn_beta_fast": 8.0})
    with pytest.raises(UnsupportedModelError, match="only a 'yarn' scaling reads it"):
        models.load(path)


def test_fused_expert_tensors_are_refused(tmp_path):
    fused = {f"blk.{i}.ffn_gate_up_exps.weight": np.zeros((4, 128, 32), np.float32) for i in (1, 3)}
    path = write_family(tmp_path / "m.gguf", "llama4_text", extra=fused)
    with pytest.raises(UnsupportedModelError, match="fused"):
        models.load(path)


def test_a_missing_expert_tensor_is_named(tmp_path):
    path = write_family(tmp_path / "m.gguf", "gpt_oss", drop=("blk.1.ffn_up_exps.weight",))
    with pytest.raises(CorruptWeightsError, match=r"no tensor 'blk\.1\.ffn_up_exps\.weight'"):
        models.load(path)
