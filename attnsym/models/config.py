"""The architecture of a model, read from its Hugging Face ``config.json``.

Two families are implemented (:data:`SUPPORTED`): BERT-style encoders (``model_type: bert``;
all-MiniLM-L6-v2 is one) and GPT-2-style decoders (``model_type: gpt2``). :func:`read_config`
turns the JSON into one :class:`ModelConfig` with the same field names for both, and refuses,
naming the key and value, every option the forward passes of :mod:`attnsym.models.forward` do
not implement (relative position embeddings, cross-attention, an unknown activation, ...).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ModelError, UnsupportedModelError

__all__ = ["ACTIVATIONS", "SUPPORTED", "ModelConfig", "read_config"]

#: ``model_type`` values attnsym runs, with what they are
SUPPORTED: dict[str, str] = {
    "bert": "BERT-family encoder (post-LayerNorm, bidirectional; MiniLM, BERT, ...)",
    "gpt2": "GPT-2-family decoder (pre-LayerNorm, causal, packed c_attn Conv1D weights)",
}

#: the decoder families, registered by :mod:`attnsym.models.families`: model_type -> plan builder
PLANNERS: dict[str, Any] = {}

#: activation names of ``config.json`` -> the function used (:mod:`attnsym.numeric`)
ACTIVATIONS: dict[str, str] = {
    "gelu": "gelu",  # exact, x Φ(x)
    "gelu_new": "gelu_tanh",  # the tanh approximation (GPT-2)
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",  # the same tanh formula, written differently
    "relu": "relu",
}


@dataclass(frozen=True)
class ModelConfig:
    """The sizes and conventions of one model, shared by both families.

    Attributes
    ----------
    model_type : {"bert", "gpt2"}
    layers, heads, width : int
        Number of transformer layers, attention heads per layer, and the model width ``d``
        (``heads`` divides ``width``; each head has ``d_k = width / heads``).
    ffn_width : int
        Width of the feed-forward hidden layer (``intermediate_size`` / ``n_inner``).
    max_positions : int
        Learned position embeddings: the longest token sequence the model accepts.
    vocab_size, type_vocab_size : int
        Vocabulary size; number of token types (BERT segment ids; 0 for GPT-2).
    activation : str
        The feed-forward activation's name in ``config.json`` (a key of :data:`ACTIVATIONS`).
    eps : float
        LayerNorm epsilon.
    causal : bool
        Decoder (each token attends to itself and earlier tokens) or encoder.
    scale_by_layer : bool
        GPT-2's ``scale_attn_by_inverse_layer_idx``: layer ``l`` (from 0) divides its scores by
        ``l + 1`` as well.
    scale_scores : bool
        Divide the scores by ``sqrt(d_k)`` (GPT-2's ``scale_attn_weights``; always for BERT).
    pad_token_id : int or None
    """

    model_type: str
    layers: int
    heads: int
    width: int
    ffn_width: int
    max_positions: int
    vocab_size: int
    type_vocab_size: int
    activation: str
    eps: float
    causal: bool
    scale_by_layer: bool = False
    scale_scores: bool = True
    pad_token_id: int | None = None

    @property
    def d_k(self) -> int:
        """Width of one head."""
        return self.width // self.heads

    def describe(self) -> str:
        """One line: family, layers, heads, width.

        >>> ModelConfig("bert", 6, 12, 384, 1536, 512, 30522, 2, "gelu", 1e-12, False).describe()
        'bert: 6 layers, 12 heads of width 32, d_model 384, feed-forward 1536, up to 512 tokens'
        """
        return (f"{self.model_type}: {self.layers} layers, {self.heads} heads of width {self.d_k}, d_model {self.width}, "
                f"feed-forward {self.ffn_width}, up to {self.max_positions} tokens")


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


def read_config(path: str | Path) -> ModelConfig:
    """Parse ``config.json`` into a :class:`ModelConfig`.

    Parameters
    ----------
    path : str or Path
        The ``config.json`` file of a Hugging Face model folder.

    Raises
    ------
    ModelError
        The file is not JSON, or a size is missing or not a positive integer.
    UnsupportedModelError
        A ``model_type`` other than those of :data:`SUPPORTED` (the message lists them), or an
        option of a supported type that is not implemented.

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
    if isinstance(model_type, str) and model_type in PLANNERS:  # a decoder family of attnsym.models.families
        return PLANNERS[model_type](raw, path)  # a ModelPlan: it answers what Model asks of a config
    if not isinstance(model_type, str) or model_type not in SUPPORTED:
        known = ", ".join(f"{k!r} ({v})" for k, v in SUPPORTED.items())
        known += f", and the decoder families ({', '.join(map(repr, PLANNERS))})"
        raise UnsupportedModelError(f"{path}: model_type {_short(model_type)} is not supported; attnsym runs {known}")
    if model_type == "bert":
        config = _bert(raw, path)
    else:
        config = _gpt2(raw, path)
    if config.width % config.heads:
        raise ModelError(f"{path}: the heads ({config.heads}) must divide the width ({config.width})")
    return config


def _activation(raw: dict[str, Any], key: str, path: Path, default: str) -> str:
    act = raw.get(key, default)
    if not isinstance(act, str) or act not in ACTIVATIONS:
        _refuse(path, key, act, f"attnsym implements {', '.join(map(repr, ACTIVATIONS))}")
    return act


def _bert(raw: dict[str, Any], path: Path) -> ModelConfig:
    if raw.get("position_embedding_type") not in (None, "absolute"):
        _refuse(path, "position_embedding_type", raw["position_embedding_type"], "only learned 'absolute' positions")
    for key in ("is_decoder", "add_cross_attention"):
        if _flag(raw, key, path, False):
            _refuse(path, key, raw[key], "attnsym runs BERT as an encoder")
    return ModelConfig(
        model_type="bert",
        layers=_positive(raw, "num_hidden_layers", path),
        heads=_positive(raw, "num_attention_heads", path),
        width=_positive(raw, "hidden_size", path),
        ffn_width=_positive(raw, "intermediate_size", path),
        max_positions=_positive(raw, "max_position_embeddings", path),
        vocab_size=_positive(raw, "vocab_size", path),
        type_vocab_size=_positive(raw, "type_vocab_size", path, 2),
        activation=_activation(raw, "hidden_act", path, "gelu"),
        eps=_eps(raw, "layer_norm_eps", path, 1e-12),
        causal=False,
        pad_token_id=_token_id(raw, "pad_token_id", path, _positive(raw, "vocab_size", path), 0),
    )


def _gpt2(raw: dict[str, Any], path: Path) -> ModelConfig:
    if _flag(raw, "add_cross_attention", path, False):
        _refuse(path, "add_cross_attention", raw["add_cross_attention"], "attnsym runs GPT-2 as a decoder-only model")
    width = _positive(raw, "n_embd", path)
    return ModelConfig(
        model_type="gpt2",
        layers=_positive(raw, "n_layer", path),
        heads=_positive(raw, "n_head", path),
        width=width,
        ffn_width=_positive(raw, "n_inner", path, 4 * width),
        max_positions=_positive(raw, "n_positions", path),
        vocab_size=_positive(raw, "vocab_size", path),
        type_vocab_size=0,
        activation=_activation(raw, "activation_function", path, "gelu_new"),
        eps=_eps(raw, "layer_norm_epsilon", path, 1e-5),
        causal=True,
        scale_by_layer=_flag(raw, "scale_attn_by_inverse_layer_idx", path, False),
        scale_scores=_flag(raw, "scale_attn_weights", path, True),
        pad_token_id=_token_id(raw, "pad_token_id", path, _positive(raw, "vocab_size", path), None),
    )
