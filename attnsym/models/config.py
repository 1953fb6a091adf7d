"""The architecture of a model, read from its Hugging Face ``config.json``.

:func:`read_config` reads the JSON (size cap, strict types) and hands it to the family of its
``model_type`` in the family table (:func:`attnsym.models.families.read_plan`: BERT-style
encoders, GPT-2, LLaMA, Mistral, Qwen 2/3, Gemma 2, GPT-NeoX, BLOOM and the families of 2026),
which builds the :class:`~attnsym.models.plan.ModelPlan` and refuses, naming the key and value,
every option the forward pass does not implement (relative position embeddings, cross-attention,
an unknown activation, ...). The readers of single keys the families share are
:mod:`attnsym.models.keys`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._io import read_capped
from .errors import CorruptWeightsError, ModelError
from .families import family_of, read_plan
from .keys import short_repr
from .plan import ModelPlan

__all__ = ["MAX_CONFIG_BYTES", "read_config", "read_json"]


#: the largest ``config.json`` read (bytes); a real one is a few kilobytes
MAX_CONFIG_BYTES = 1 << 20


def read_json(path: Path) -> Any:
    """The JSON object of ``path``, read with a size cap; every failure a :class:`ModelError`."""
    data = read_capped(path, MAX_CONFIG_BYTES, error=ModelError)  # a regular file (a FIFO never blocks), size capped
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ModelError(f"{path} is not UTF-8 text ({error})") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError) as error:  # ValueError: an integer of too many digits
        raise ModelError(f"{path} is not valid JSON ({str(error)[:200]})") from None


#: the keys a family reads its layer count from (checked against the weights before any plan is built)
LAYER_KEYS = ("num_hidden_layers", "n_layer")


def read_config(path: str | Path, *, stored_layers: int | None = None) -> ModelPlan:
    """Parse ``config.json`` into the :class:`~attnsym.models.plan.ModelPlan` of its family.

    Parameters
    ----------
    path : str or Path
        The ``config.json`` file of a Hugging Face model folder.
    stored_layers : int, optional
        How many layers the weights hold (:func:`attnsym.models.weights.stored_layers`, from
        the safetensors header): a layer count above it is refused before a block is built.

    Raises
    ------
    ModelError
        The file is not JSON, or a size is missing or not a positive integer.
    CorruptWeightsError
        The layer count exceeds ``stored_layers``.
    UnsupportedModelError
        A ``model_type`` not in the family table (the message lists them), or an option of a
        supported type that is not implemented.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "config.json").write_text(json.dumps({"model_type": "t5"}))
    >>> read_config(folder / "config.json")
    Traceback (most recent call last):
    ...
    attnsym.models.errors.UnsupportedModelError: .../config.json: model_type 't5' is not supported; attnsym runs
    'bert', 'gpt2', ...
    """
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise ModelError(f"{path} must hold a JSON object (got {type(raw).__name__})")
    model_type = family_of(raw, path)
    if stored_layers is not None:  # before planning: building one block per claimed layer is the costly part
        for key in LAYER_KEYS:
            value = raw.get(key)
            if type(value) is int and value > stored_layers:
                raise CorruptWeightsError(f"{path}: {key}={short_repr(value)}, but the weights hold tensors of "
                                          f"{stored_layers} layer(s); a {model_type} config.json and its weights must "
                                          "describe the same model")
    return read_plan(raw, path)
