"""DeepSeek V2/V3 (``deepseek2``) and Qwen3-Next (``qwen3next``) GGUF files against transformers on the original folder.

transformers has no GGUF loader for these architectures, so the files are written here from
small random checkpoints the way llama.cpp's converter writes them (``convert_hf_to_gguf.py``:
``DeepseekV2Model``, ``Qwen3NextModel``), and the reference is transformers eager on the
Hugging Face folder the file was made from:

* deepseek2 — the latent attention in the converter's "MQA form" (``head_count_kv`` 1,
  ``key_length`` = ``kv_lora_rank + rope``, the per-head widths in ``*_length_mla``) with
  ``kv_b_proj`` split into ``attn_k_b`` (transposed per head) and ``attn_v_b``, or in the older
  form (per-head ``key_length``, ``attn_kv_b`` whole); the experts stacked into 3-D
  ``ffn_{gate,up,down}_exps``; the correction bias as ``exp_probs_b.bias``; YaRN's
  ``yarn_log_multiplier`` = ``0.1 · mscale_all_dim`` (the checkpoint's two mscales equal, the only
  YaRN a GGUF file can state). Three layers: one dense, two with 8 experts in 4 groups (best 2
  groups, 3 experts per token), two shared experts, a correction bias large enough to move the choice.
* qwen3next — every layer full attention (``full_attention_interval`` 1), the ``1 + w`` norms
  stored whole, the output gate beside each head's query, 4 experts (top 2) and a gated shared
  expert on every layer; a file with linear-attention layers is refused by the key.

The bar (F32 storage, float32): attention and hidden states (each layer's relative to its largest
entry, at least 1) within 1e-5 of transformers; the plan and its layer schedule equal the
folder's; every array equal to the folder's, byte for byte (the split and the stacks moved values,
rounded none). A Q8_0 file reads each expert's row of a quantized stack as the row of the
dequantized stack. Hostile metadata: a missing key named, an unknown key refused, contradicting
sizes and shapes refused.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from models_support import add_gguf_metadata, family_tokenizer, finish_gguf, scratch_folder
from test_models_gguf import _eps32, _gap

from attnsym import models
from attnsym.models import CorruptWeightsError, ModelError, UnsupportedModelError

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

pytestmark = pytest.mark.oracle

Q = gguf.GGMLQuantizationType
TOL = 1e-5
IDS = np.array([[2, 3, 4, 5, 6, 20, 12, 13, 14]])

DEEPSEEK = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4, intermediate_size=64, vocab_size=100,
                max_position_embeddings=64, pad_token_id=1, num_hidden_layers=3, kv_lora_rank=16, qk_rope_head_dim=4,
                qk_nope_head_dim=8, v_head_dim=6, moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=3,
                n_group=4, topk_group=2, first_k_dense_replace=1, n_shared_experts=2, routed_scaling_factor=2.5,
                rms_norm_eps=1e-5, rope_interleave=True)
VARIANTS = {
    # a query latent, YaRN biting at 9 tokens (original length 4) with mscale = mscale_all_dim, normalised top k
    "q_latent_yarn": dict(q_lora_rank=24, norm_topk_prob=True,
                          rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "mscale": 0.7,
                                           "mscale_all_dim": 0.7, "original_max_position_embeddings": 4}),
    # q_proj (no query latent, V2-Lite's form), unscaled RoPE, top k not normalised
    "q_proj": dict(q_lora_rank=None, norm_topk_prob=False, rope_parameters={"rope_type": "default",
                                                                             "rope_theta": 10000.0}),
}


@functools.cache
def deepseek(name: str) -> Path:
    """The random DeepSeek V3 folder of ``name`` (an LM head of its own), noise on every parameter and on the bias."""
    config = transformers.DeepseekV3Config(**DEEPSEEK, **VARIANTS[name])
    config._attn_implementation = "eager"
    torch.manual_seed(5)
    hf = transformers.DeepseekV3ForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.2 * torch.randn_like(p))
        for key, b in hf.named_buffers():
            if key.endswith("e_score_correction_bias"):
                b.copy_(0.3 * torch.randn_like(b))
    folder = scratch_folder(f"attnsym-gguf-deepseek-{name}-")
    hf.save_pretrained(folder, safe_serialization=True)
    family_tokenizer(folder)
    return folder


def _store(writer, name: str, W: np.ndarray, storage) -> None:
    """``W`` as ``storage`` when its rows are whole blocks of that type (the converter's fallback: F32 otherwise)."""
    block = gguf.GGML_QUANT_SIZES[storage][0]
    if storage == Q.F32 or W.ndim == 1 or W.shape[-1] % block:
        writer.add_tensor(name, W.astype(np.float32))
    else:
        writer.add_tensor(name, gguf.quants.quantize(W.astype(np.float32), storage), raw_dtype=storage)


def write_file(path: Path, arch: str, keys: dict, tensors: dict[str, np.ndarray], storage=Q.F32, *,
               meta: dict | None = None, drop: tuple[str, ...] = (), change: dict | None = None) -> Path:
    """A GGUF file of ``arch``: ``keys`` (without the prefix) updated by ``meta`` less ``drop``; ``tensors`` with
    ``change`` (name -> array, or None to leave the tensor out)."""
    writer = gguf.GGUFWriter(str(path), arch)
    add_gguf_metadata(writer, arch, keys | (meta or {}), drop)
    for name, W in (tensors | (change or {})).items():
        if W is not None:
            _store(writer, name, W, storage)
    return finish_gguf(writer, path)


def _named(folder: Path, arch) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    """``(config.json, {GGUF name: array} of the non-expert tensors, the expert tensors' names)`` of a folder."""
    raw = json.loads((folder / "config.json").read_text())
    state = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    names = gguf.get_tensor_name_map(arch, raw["num_hidden_layers"])
    out, experts = {}, []
    for name, W in state.items():
        if ".mlp.experts." in name:
            experts.append(name)
            continue
        hf = name.replace("e_score_correction_bias", "e_score_correction.bias")  # as the converter renames it
        hf = hf if hf.startswith(("model.", "lm_head")) else "model." + hf
        gname = names.get_name(hf, try_suffixes=(".weight", ".bias"))
        assert gname is not None, name
        out[gname] = W.astype(np.float32)
    return raw, out, experts


def _stacked(folder: Path, raw: dict, state_names: list[str], count: int) -> dict[str, np.ndarray]:
    """The experts of every mixture layer stacked as the converter does: ``blk.{i}.ffn_{part}_exps.weight`` (E, out, in)."""
    state = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    prefix = "model." if any(n.startswith("model.") for n in state_names) else ""
    layers = sorted({int(n.removeprefix(prefix).split(".")[1]) for n in state_names})
    return {f"blk.{i}.ffn_{part}_exps.weight": np.stack([state[f"{prefix}layers.{i}.mlp.experts.{e}.{part}_proj.weight"]
                                                          for e in range(count)]).astype(np.float32)
            for i in layers for part in ("gate", "up", "down")}


def deepseek_file(path: Path, name: str, *, split: bool = True, storage=Q.F32, **edits) -> Path:
    """The GGUF file of :func:`deepseek` ``name`` as llama.cpp's converter writes it (module docstring)."""
    folder = deepseek(name)
    raw, tensors, expert_names = _named(folder, gguf.MODEL_ARCH.DEEPSEEK2)
    H, r, rope, nope, v = (raw[k] for k in ("num_attention_heads", "kv_lora_rank", "qk_rope_head_dim",
                                             "qk_nope_head_dim", "v_head_dim"))
    tensors |= _stacked(folder, raw, expert_names, raw["n_routed_experts"])
    if split:
        for key in [k for k in tensors if k.endswith("attn_kv_b.weight")]:
            kv_b = tensors.pop(key).reshape(H, nope + v, r)
            tensors[key.replace("kv_b", "k_b")] = np.ascontiguousarray(kv_b[:, :nope].transpose(0, 2, 1))
            tensors[key.replace("kv_b", "v_b")] = np.ascontiguousarray(kv_b[:, nope:])
    keys = {"block_count": raw["num_hidden_layers"], "context_length": raw["max_position_embeddings"],
            "embedding_length": raw["hidden_size"], "feed_forward_length": raw["intermediate_size"],
            "attention.head_count": H, "rope.freq_base": float(raw["rope_parameters"]["rope_theta"]),
            "attention.layer_norm_rms_epsilon": float(raw["rms_norm_eps"]), "expert_count": raw["n_routed_experts"],
            "expert_used_count": raw["num_experts_per_tok"], "expert_group_count": raw["n_group"],
            "expert_group_used_count": raw["topk_group"], "expert_gating_func": 2,
            "leading_dense_block_count": raw["first_k_dense_replace"], "vocab_size": raw["vocab_size"],
            "attention.kv_lora_rank": r, "expert_feed_forward_length": raw["moe_intermediate_size"],
            "expert_shared_count": raw["n_shared_experts"], "expert_weights_scale": float(raw["routed_scaling_factor"]),
            "rope.dimension_count": rope, "tokenizer.ggml.padding_token_id": raw["pad_token_id"]}
    keys |= ({"attention.head_count_kv": 1, "attention.key_length": r + rope, "attention.value_length": r,
              "attention.key_length_mla": nope + rope, "attention.value_length_mla": v} if split else
             {"attention.head_count_kv": H, "attention.key_length": nope + rope, "attention.value_length": v})
    if raw.get("q_lora_rank") is not None:
        keys["attention.q_lora_rank"] = raw["q_lora_rank"]
    if raw.get("norm_topk_prob"):
        keys["expert_weights_norm"] = True
    params = raw["rope_parameters"]
    if params["rope_type"] == "yarn":
        keys |= {"rope.scaling.type": "yarn", "rope.scaling.factor": float(params["factor"]),
                 "rope.scaling.original_context_length": params["original_max_position_embeddings"],
                 "rope.scaling.yarn_log_multiplier": 0.1 * params["mscale_all_dim"]}
    return write_file(path, "deepseek2", keys, tensors, storage, **edits)


@functools.cache
def transformers_reference(folder: Path):
    """transformers eager on the folder, float32: ``(attentions, hidden states)`` of :data:`IDS`."""
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                           experts_implementation="eager").eval()
    with torch.no_grad():
        out = hf(input_ids=torch.as_tensor(IDS), output_attentions=True, output_hidden_states=True)
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


def _same_plan(gguf_model, folder_model) -> None:
    """The same plan (epsilons as float32, the layouts aside) and the same layer schedule."""
    assert replace(_eps32(gguf_model.config), layout=None) == replace(_eps32(folder_model.config), layout=None)
    assert gguf_model.layers().to_dict() == folder_model.layers().to_dict()


# ------------------------------------------------------------------------------------------------ deepseek2
@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("split", [True, False], ids=["k_b-v_b", "kv_b"])
def test_deepseek2_matches_transformers_on_the_folder(name, split, tmp_path):
    path = deepseek_file(tmp_path / "deepseek.gguf", name, split=split)
    m, folder_model = models.load(path), models.load(deepseek(name))
    assert m.config.model_type == "deepseek_v3" and [b.experts is None for b in m.config.blocks] == [True, False, False]
    s = m.spec(0)
    assert (s.d_k, s.d_v, s.kv_latent_rank, s.rotary_dims, s.rope_pairing) == (12, 6, 16, 4, "interleaved")
    assert s.q_latent_rank == (24 if name == "q_latent_yarn" else None)
    _same_plan(m, folder_model)
    for a, b in zip(m.weights.layers, folder_model.weights.layers, strict=True):
        assert a.digest() == b.digest()  # the split merged, the stacks sliced: the very same bytes
    gap = _gap(m.forward(IDS), transformers_reference(deepseek(name)))
    print(f"deepseek2 {name} ({'split' if split else 'whole'} kv_b) F32 float32: max |attnsym - transformers| = "
          f"{gap:.2g}")
    assert gap <= TOL


def test_deepseek2_yarn_scale_comes_from_the_log_multiplier(tmp_path):
    """The score scale carries m(4, 0.7)² (mscale_all_dim read back from 0.1 · 0.7): without it the attention moves."""
    m = models.load(deepseek_file(tmp_path / "d.gguf", "q_latent_yarn"))
    s = m.spec(0)
    assert s.rope_scaling.mscale == s.rope_scaling.mscale_all_dim == 0.7
    assert s.scale == pytest.approx(12 ** -0.5 * (0.1 * 0.7 * np.log(4.0) + 1) ** 2, rel=1e-12)
    wrong = models.load(deepseek_file(tmp_path / "w.gguf", "q_latent_yarn",
                                      meta={"rope.scaling.yarn_log_multiplier": 0.07 * 3}))
    reference = transformers_reference(deepseek("q_latent_yarn"))
    assert _gap(wrong.forward(IDS), reference) > 100 * TOL


def test_deepseek2_q8_0_reads_each_expert_row_of_the_quantized_stack(tmp_path):
    """Quantized 3-D stacks: expert e's matrix is row e of the dequantized stack (only its bytes are read)."""
    path = deepseek_file(tmp_path / "q8.gguf", "q_proj", storage=Q.Q8_0)
    m = models.load(path)
    reader = gguf.GGUFReader(path)
    stacks = {t.name: t for t in reader.tensors}
    for part, field in (("gate", "W_experts_gate"), ("up", "W_experts_up"), ("down", "W_experts_down")):
        t = stacks[f"blk.2.ffn_{part}_exps.weight"]
        assert t.tensor_type == Q.Q8_0
        whole = gguf.quants.dequantize(t.data, t.tensor_type)  # (E, out, in)
        np.testing.assert_array_equal(getattr(m.weights.layers[2], field), whole.transpose(0, 2, 1))


@pytest.mark.parametrize(("edits", "error", "match"), [
    ({"drop": ("attention.kv_lora_rank",)}, ModelError, r"no 'deepseek2\.attention\.kv_lora_rank'"),
    ({"drop": ("leading_dense_block_count",)}, ModelError, r"no 'deepseek2\.leading_dense_block_count'"),
    ({"drop": ("attention.value_length_mla",)}, ModelError, r"no 'deepseek2\.attention\.value_length_mla'"),
    ({"drop": ("rope.scaling.yarn_log_multiplier",)}, ModelError, r"no 'deepseek2\.rope\.scaling\.yarn_log_multiplier'"),
    ({"meta": {"nextn_predict_layers": 1}}, UnsupportedModelError,
     r"deepseek2\.nextn_predict_layers=1 is not supported \(attnsym does not read it"),
    ({"meta": {"rope.scaling.yarn_attn_factor": 1.5}}, UnsupportedModelError,
     r"deepseek2\.rope\.scaling\.yarn_attn_factor=1\.5 is not supported"),
    ({"drop": ("expert_gating_func",)}, UnsupportedModelError,
     r"deepseek2\.expert_gating_func=None is not supported \(llama\.cpp routes with softmax"),
    ({"meta": {"expert_gating_func": 1}}, UnsupportedModelError, r"deepseek2\.expert_gating_func=1 is not supported"),
    ({"meta": {"rope.scaling.type": "linear"}}, UnsupportedModelError, r"deepseek2\.rope\.scaling\.type='linear'"),
    ({"meta": {"attention.key_length": 21}}, ModelError,
     r"deepseek2\.attention\.key_length = 21 contradicts deepseek2\.attention\.key_length_mla"),
    ({"meta": {"expert_count": 4}}, ModelError,
     r"tensor 'blk\.1\.ffn_gate_exps\.weight' of shape \(8, 32, 32\) contradicts deepseek2\.expert_count = 4"),
    ({"meta": {"attention.key_length_mla": 14}}, CorruptWeightsError,
     r"'blk\.0\.attn_k_b\.weight' \(4, 16, 8\) and 'blk\.0\.attn_v_b\.weight' \(4, 6, 16\) must split "
     r"'blk\.0\.attn_kv_b\.weight'"),
    ({"change": {"blk.0.attn_v_b.weight": None}}, CorruptWeightsError, r"has no tensor 'blk\.0\.attn_kv_b\.weight'"),
    ({"change": {"blk.2.ffn_up_exps.weight": np.zeros((8, 32, 31), np.float32)}}, CorruptWeightsError,
     r"'blk\.2\.ffn_exps\.0\.up_proj\.weight' must have shape \(32, 32\)"),
])
def test_deepseek2_hostile_metadata(tmp_path, edits, error, match):
    with pytest.raises(error, match=match):
        models.load(deepseek_file(tmp_path / "hostile.gguf", "q_latent_yarn", **edits))


def test_deepseek2_older_form_with_grouped_heads_contradicts_itself(tmp_path):
    """Without the ``*_length_mla`` keys the widths are per head, so ``head_count_kv`` must be ``head_count``."""
    with pytest.raises(ModelError, match=r"deepseek2\.attention\.head_count_kv = 2 contradicts "
                       r"deepseek2\.attention\.head_count = 4"):
        models.load(deepseek_file(tmp_path / "old.gguf", "q_proj", split=False, meta={"attention.head_count_kv": 2}))


def test_deepseek2_extra_tensor_is_refused(tmp_path):
    """A tensor the plan does not read (here a stale whole kv_b beside its split halves) is refused, not ignored."""
    kv_b = np.zeros((4 * 14, 16), np.float32)
    with pytest.raises(UnsupportedModelError, match=r"holds tensors the deepseek_v3 plan does not use"):
        models.load(deepseek_file(tmp_path / "extra.gguf", "q_proj", change={"blk.0.attn_kv_b.weight": kv_b}))


# ------------------------------------------------------------------------------------------------ qwen3next
QWEN3_NEXT = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, vocab_size=100,
                  max_position_embeddings=64, pad_token_id=1, num_hidden_layers=2, head_dim=8,
                  layer_types=["full_attention"] * 2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                  shared_expert_intermediate_size=32, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})


@functools.cache
def qwen3_next() -> Path:
    config = transformers.Qwen3NextConfig(**QWEN3_NEXT)
    config._attn_implementation = "eager"
    torch.manual_seed(6)
    hf = transformers.Qwen3NextForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.3 * torch.randn_like(p))
    folder = scratch_folder("attnsym-gguf-qwen3next-")
    hf.save_pretrained(folder, safe_serialization=True)
    family_tokenizer(folder)
    return folder


def qwen3next_file(path: Path, **edits) -> Path:
    """The GGUF file of :func:`qwen3_next` as llama.cpp's converter writes it: norms ``1 + w``, experts stacked."""
    folder = qwen3_next()
    raw, tensors, expert_names = _named(folder, gguf.MODEL_ARCH.QWEN3NEXT)
    tensors = {k: W + np.float32(1.0) if k.endswith("norm.weight") else W for k, W in tensors.items()}
    tensors |= _stacked(folder, raw, expert_names, raw["num_experts"])
    params = raw["rope_parameters"]
    keys = {"block_count": raw["num_hidden_layers"], "context_length": raw["max_position_embeddings"],
            "embedding_length": raw["hidden_size"], "feed_forward_length": raw["intermediate_size"],
            "attention.head_count": raw["num_attention_heads"], "attention.head_count_kv": raw["num_key_value_heads"],
            "rope.freq_base": float(params["rope_theta"]), "attention.layer_norm_rms_epsilon": float(raw["rms_norm_eps"]),
            "expert_count": raw["num_experts"], "expert_used_count": raw["num_experts_per_tok"],
            "attention.key_length": raw["head_dim"], "attention.value_length": raw["head_dim"],
            "expert_feed_forward_length": raw["moe_intermediate_size"],
            "expert_shared_feed_forward_length": raw["shared_expert_intermediate_size"],
            "ssm.conv_kernel": raw["linear_conv_kernel_dim"], "ssm.state_size": raw["linear_key_head_dim"],
            "ssm.group_count": raw["linear_num_key_heads"], "ssm.time_step_rank": raw["linear_num_value_heads"],
            "ssm.inner_size": raw["linear_value_head_dim"] * raw["linear_num_value_heads"],
            "rope.dimension_count": int(raw["head_dim"] * params["partial_rotary_factor"]),
            "full_attention_interval": 1, "tokenizer.ggml.padding_token_id": raw["pad_token_id"]}
    return write_file(path, "qwen3next", keys, tensors, **edits)


def test_qwen3next_full_attention_matches_transformers_on_the_folder(tmp_path):
    m, folder_model = models.load(qwen3next_file(tmp_path / "q.gguf")), models.load(qwen3_next())
    assert m.config.model_type == "qwen3_next" and m.spec(0).output_gate and m.spec(0).rotary_dims == 4
    assert all(b.experts is not None for b in m.config.blocks)
    # the file holds 1 + w: the plan's norms and QK-norm gains have no offset left, the folder's have 1
    norm = replace(folder_model.config.final_norm, offset=0.0)
    expected = replace(folder_model.config, final_norm=norm, blocks=tuple(
        replace(b, norm=norm, attention=b.attention.replace(qk_norm_offset=0.0)) for b in folder_model.config.blocks))
    assert replace(_eps32(m.config), layout=None) == replace(_eps32(expected), layout=None)
    gap = _gap(m.forward(IDS), transformers_reference(qwen3_next()))
    print(f"qwen3next F32 float32: max |attnsym - transformers| = {gap:.2g}")
    assert gap <= TOL


@pytest.mark.parametrize("edits", [{"drop": ("full_attention_interval",)}, {"meta": {"full_attention_interval": 4}}])
def test_qwen3next_linear_attention_layers_are_refused_by_name(tmp_path, edits):
    with pytest.raises(UnsupportedModelError, match=r"qwen3next\.full_attention_interval=4 is not supported \(every "
                       r"layer i with \(i \+ 1\) % interval != 0 is a linear_attention \(Gated DeltaNet\) layer"):
        models.load(qwen3next_file(tmp_path / "linear.gguf", **edits))


@pytest.mark.parametrize(("edits", "error", "match"), [
    ({"drop": ("expert_shared_feed_forward_length",)}, ModelError,
     r"no 'qwen3next\.expert_shared_feed_forward_length'"),
    ({"meta": {"attention.sliding_window": 4}}, UnsupportedModelError, r"qwen3next\.attention\.sliding_window=4"),
    ({"meta": {"expert_count": 3}}, ModelError, r"contradicts qwen3next\.expert_count = 3"),
])
def test_qwen3next_hostile_metadata(tmp_path, edits, error, match):
    with pytest.raises(error, match=match):
        models.load(qwen3next_file(tmp_path / "hostile.gguf", **edits))
