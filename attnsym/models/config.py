"""The architecture of a model, read from its Hugging Face ``config.json``.

:func:`read_config` reads the JSON (size cap, strict types) and hands it to the family of its
``model_type`` in the family table (:data:`PLANNERS`, filled by :mod:`attnsym.models.families`:
BERT-style encoders, GPT-2, LLaMA, Mistral, Qwen 2/3, Gemma 2, GPT-NeoX, BLOOM), which builds
the :class:`~attnsym.models.plan.ModelPlan` and refuses, naming the key and value, every option
the forward pass does not implement (relative position embeddings, cross-attention, an unknown
activation, ...). This module holds the readers the families share (:func:`_positive`,
:func:`_flag`, :func:`_eps`, ...); it never tests a family's name.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .._io import read_capped
from .errors import CorruptWeightsError, ModelError, UnsupportedModelError
from .plan import ModelPlan

__all__ = ["ACTIVATIONS", "SUPPORTED", "ModelConfig", "read_config"]

#: ``model_type`` values attnsym runs, with what they are
SUPPORTED: dict[str, str] = {
    "bert": "BERT-family encoder (post-LayerNorm, bidirectional; MiniLM, BERT, ...)",
    "gpt2": "GPT-2-family decoder (pre-LayerNorm, causal, packed c_attn Conv1D weights)",
}

#: every family, registered by :mod:`attnsym.models.families`: model_type -> plan builder (plan with its layout)
PLANNERS: dict[str, Any] = {}

#: activation names of ``config.json`` -> the function used (:mod:`attnsym.numeric`)
ACTIVATIONS: dict[str, str] = {
    "gelu": "gelu",  # exact, x Φ(x)
    "gelu_new": "gelu_tanh",  # the tanh approximation (GPT-2)
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",  # the same tanh formula, written differently
    "relu": "relu",
}


#: the parsed configuration of a model is its plan (the name :class:`ModelConfig` kept for existing code)
ModelConfig = ModelPlan


#: the largest ``config.json`` read (bytes); a real one is a few kilobytes
MAX_CONFIG_BYTES = 1 << 20


def _read_json(path: Path) -> Any:
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


#: how a JSON type is named in a message
_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", dict: "a JSON object", list: "a JSON list"}


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "a number" if float in kinds else " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def _family(raw: dict[str, Any]) -> str:
    """``"a gemma2 config.json"``: what a message calls the file (its own family, never another's)."""
    kind = raw.get("model_type")
    return f"a {kind} config.json" if isinstance(kind, str) else "a config.json"


def _get(raw: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, default: Any = ...) -> Any:
    if key not in raw or raw[key] is None:
        if default is ...:
            raise ModelError(f"{path} has no {key!r}; {_family(raw)} must give it")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, kind):  # True is no size
        raise ModelError(f"{path}: {key!r} must be {_kind_name(kind)} (got {_short(value)} in {_family(raw)})")
    return value


def _finite(value: int | float) -> float | None:
    """``value`` as a finite float, or None (NaN, ±inf, an integer too large for a float such as 10**400)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number(raw: dict[str, Any], key: str, path: Path, default: Any = ..., *, positive: bool = False,
            at_most: float | None = None) -> Any:
    """A finite JSON number (None when absent and ``default`` is None); ``positive``: > 0; ``at_most``: <= it."""
    value = _get(raw, key, (int, float), path, default)
    if value is None:
        return None
    number = _finite(value)
    if number is None or (positive and number <= 0) or (at_most is not None and number > at_most):
        what = "a finite number" + (" > 0" if positive else "") + (f" and at most {at_most:g}" if at_most else "")
        raise ModelError(f"{path}: {key!r} must be {what} (got {_short(value)} in {_family(raw)})")
    return number


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: the largest size field accepted (a width, a vocabulary, a number of positions)
MAX_SIZE = 1 << 24


def _flag(raw: dict[str, Any], key: str, path: Path, default: bool) -> bool:
    """A JSON boolean (``"false"`` as a string is refused, not read as true)."""
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ModelError(f"{path}: {key!r} must be a JSON boolean true or false (got {_short(value)} in "
                         f"{_family(raw)})")
    return value


def _eps(raw: dict[str, Any], key: str, path: Path, default: float) -> float:
    """A normalisation epsilon, the one reader of every family: a finite number in (0, 1).

    NaN, ±Infinity, 0, negatives, 1 and above, and integers too large for a float (``10**400``)
    are refused by name; a string or a list is refused as not a number.
    """
    value = _get(raw, key, (int, float), path, default)
    number = _finite(value)
    if number is None or not 0 < number < 1:
        raise ModelError(f"{path}: {key!r} must be a finite number between 0 and 1, exclusive (got {_short(value)} "
                         f"in {_family(raw)})")
    return number


def _token_id(raw: dict[str, Any], key: str, path: Path, vocab_size: int, default: int | None) -> int | None:
    value = _get(raw, key, int, path, default)
    if value is not None and not 0 <= value < vocab_size:
        raise ModelError(f"{path}: {key!r} must be a token id in [0, vocab_size={vocab_size}) (got {_short(value)} in "
                         f"{_family(raw)})")
    return value


def _positive(raw: dict[str, Any], key: str, path: Path, default: Any = ...) -> int:
    value = _get(raw, key, int, path, default)
    if not 1 <= value <= MAX_SIZE:
        raise ModelError(f"{path}: {key!r} must be a positive integer at most {MAX_SIZE} (got {_short(value)} in "
                         f"{_family(raw)})")
    return value


def _refuse(path: Path, key: str, value: Any, what: str) -> None:
    raise UnsupportedModelError(f"{path}: {key}={_short(value)} is not supported ({what})")


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
    'bert' (BERT-family encoder ...), 'gpt2' (GPT-2-family decoder ...)
    """
    path = Path(path)
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise ModelError(f"{path} must hold a JSON object (got {type(raw).__name__})")
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in PLANNERS:
        known = ", ".join(f"{k!r} ({v})" for k, v in SUPPORTED.items())
        known += f", and the decoder families ({', '.join(repr(k) for k in PLANNERS if k not in SUPPORTED)})"
        raise UnsupportedModelError(f"{path}: model_type {_short(model_type)} is not supported; attnsym runs {known}")
    if stored_layers is not None:  # before planning: building one block per claimed layer is the costly part
        for key in LAYER_KEYS:
            value = raw.get(key)
            if type(value) is int and value > stored_layers:
                raise CorruptWeightsError(f"{path}: {key}={_short(value)}, but the weights hold tensors of "
                                          f"{stored_layers} layer(s); a {model_type} config.json and its weights must "
                                          "describe the same model")
    return PLANNERS[model_type](raw, path)


def _activation(raw: dict[str, Any], key: str, path: Path, default: str) -> str:
    act = raw.get(key, default)
    if not isinstance(act, str) or act not in ACTIVATIONS:
        _refuse(path, key, act, f"attnsym implements {', '.join(map(repr, ACTIVATIONS))}")
    return act
