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

from .errors import ModelError, UnsupportedModelError
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
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise ModelError(f"{path} cannot be read ({type(error).__name__}: {error})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ModelError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes; a config.json is a few kilobytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ModelError(f"{path} is not UTF-8 text ({error})") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError) as error:  # ValueError: an integer of too many digits
        raise ModelError(f"{path} is not valid JSON ({str(error)[:200]})") from None


def _get(raw: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, default: Any = ...) -> Any:
    if key not in raw or raw[key] is None:
        if default is ...:
            raise ModelError(f"{path} has no {key!r}; a {raw.get('model_type')} config.json must give it")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, kind):  # True is no size
        raise ModelError(f"{path}: {key!r} must be {getattr(kind, '__name__', kind)} (got {_short(value)})")
    return value


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
        raise ModelError(f"{path}: {key!r} must be a JSON boolean true or false (got {_short(value)})")
    return value


def _eps(raw: dict[str, Any], key: str, path: Path, default: float) -> float:
    """A normalisation epsilon: a finite number in (0, 1)."""
    value = float(_get(raw, key, (int, float), path, default))
    if not (math.isfinite(value) and 0 < value < 1):
        raise ModelError(f"{path}: {key!r} must be a finite number between 0 and 1 (got {_short(raw.get(key))})")
    return value


def _token_id(raw: dict[str, Any], key: str, path: Path, vocab_size: int, default: int | None) -> int | None:
    value = _get(raw, key, int, path, default)
    if value is not None and not 0 <= value < vocab_size:
        raise ModelError(f"{path}: {key!r} must be a token id in [0, vocab_size={vocab_size}) (got {_short(value)})")
    return value


def _positive(raw: dict[str, Any], key: str, path: Path, default: Any = ...) -> int:
    value = _get(raw, key, int, path, default)
    if not 1 <= value <= MAX_SIZE:
        raise ModelError(f"{path}: {key!r} must be a positive integer at most {MAX_SIZE} (got {_short(value)})")
    return value


def _refuse(path: Path, key: str, value: Any, what: str) -> None:
    raise UnsupportedModelError(f"{path}: {key}={_short(value)} is not supported ({what})")


def read_config(path: str | Path) -> ModelPlan:
    """Parse ``config.json`` into the :class:`~attnsym.models.plan.ModelPlan` of its family.

    Parameters
    ----------
    path : str or Path
        The ``config.json`` file of a Hugging Face model folder.

    Raises
    ------
    ModelError
        The file is not JSON, or a size is missing or not a positive integer.
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
    return PLANNERS[model_type](raw, path)


def _activation(raw: dict[str, Any], key: str, path: Path, default: str) -> str:
    act = raw.get(key, default)
    if not isinstance(act, str) or act not in ACTIVATIONS:
        _refuse(path, key, act, f"attnsym implements {', '.join(map(repr, ACTIVATIONS))}")
    return act
