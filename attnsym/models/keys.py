"""Readers of ``config.json`` keys, shared by every family of :mod:`attnsym.models.families`.

Each reads one key of the parsed JSON object, checks its JSON type and range, and names the key,
the value and the file (``a gemma2 config.json``) in a :class:`~attnsym.models.ModelError`
when it is wrong; :func:`refuse` names an option attnsym does not implement
(:class:`~attnsym.models.UnsupportedModelError`). No reader tests a family's name.

>>> from pathlib import Path
>>> positive_size({"hidden_size": 64}, "hidden_size", Path("config.json"))
64
>>> positive_size({"hidden_size": True}, "hidden_size", Path("config.json"))
Traceback (most recent call last):
...
attnsym.models.errors.ModelError: config.json: 'hidden_size' must be an integer (got True in a config.json)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .errors import ModelError, UnsupportedModelError

__all__ = ["ACTIVATIONS", "MAX_SIZE", "activation_name", "as_finite", "config_name", "finite_number", "flag", "norm_eps",
           "positive_size", "read_key", "refuse", "short_repr", "token_id"]


#: activation names of ``config.json`` -> the function used (:mod:`attnsym.numeric`)
ACTIVATIONS: dict[str, str] = {
    "gelu": "gelu",  # exact, x Φ(x)
    "gelu_new": "gelu_tanh",  # the tanh approximation (GPT-2)
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",  # the same tanh formula, written differently
    "relu": "relu",
}


#: the largest size field accepted (a width, a vocabulary, a number of positions)
MAX_SIZE = 1 << 24


#: how a JSON type is named in a message
_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", dict: "a JSON object", list: "a JSON list"}


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "a number" if float in kinds else " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def config_name(raw: dict[str, Any]) -> str:
    """``"a gemma2 config.json"``: what a message calls the file (its own family, never another's)."""
    kind = raw.get("model_type")
    return f"a {kind} config.json" if isinstance(kind, str) else "a config.json"


def read_key(raw: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, default: Any = ...) -> Any:
    """``raw[key]`` of the JSON type ``kind`` (a bool is no number); ``default`` when absent or null, required without one."""
    if key not in raw or raw[key] is None:
        if default is ...:
            raise ModelError(f"{path} has no {key!r}; {config_name(raw)} must give it")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, kind):  # True is no size
        raise ModelError(f"{path}: {key!r} must be {_kind_name(kind)} (got {short_repr(value)} in {config_name(raw)})")
    return value


def as_finite(value: int | float) -> float | None:
    """``value`` as a finite float, or None (NaN, ±inf, an integer too large for a float such as 10**400)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def finite_number(raw: dict[str, Any], key: str, path: Path, default: Any = ..., *, positive: bool = False,
            at_most: float | None = None) -> Any:
    """A finite JSON number (None when absent and ``default`` is None); ``positive``: > 0; ``at_most``: <= it."""
    value = read_key(raw, key, (int, float), path, default)
    if value is None:
        return None
    number = as_finite(value)
    if number is None or (positive and number <= 0) or (at_most is not None and number > at_most):
        what = "a finite number" + (" > 0" if positive else "") + (f" and at most {at_most:g}" if at_most else "")
        raise ModelError(f"{path}: {key!r} must be {what} (got {short_repr(value)} in {config_name(raw)})")
    return number


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 60 characters, for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def flag(raw: dict[str, Any], key: str, path: Path, default: bool) -> bool:
    """A JSON boolean (``"false"`` as a string is refused, not read as true)."""
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ModelError(f"{path}: {key!r} must be a JSON boolean true or false (got {short_repr(value)} in "
                         f"{config_name(raw)})")
    return value


def norm_eps(raw: dict[str, Any], key: str, path: Path, default: float) -> float:
    """A normalisation epsilon, the one reader of every family: a finite number in (0, 1).

    NaN, ±Infinity, 0, negatives, 1 and above, and integers too large for a float (``10**400``)
    are refused by name; a string or a list is refused as not a number.
    """
    value = read_key(raw, key, (int, float), path, default)
    number = as_finite(value)
    if number is None or not 0 < number < 1:
        raise ModelError(f"{path}: {key!r} must be a finite number between 0 and 1, exclusive (got {short_repr(value)} "
                         f"in {config_name(raw)})")
    return number


def token_id(raw: dict[str, Any], key: str, path: Path, vocab_size: int, default: int | None) -> int | None:
    """A token id in ``[0, vocab_size)`` (None when absent and ``default`` is None)."""
    value = read_key(raw, key, int, path, default)
    if value is not None and not 0 <= value < vocab_size:
        raise ModelError(f"{path}: {key!r} must be a token id in [0, vocab_size={vocab_size}) (got {short_repr(value)} in "
                         f"{config_name(raw)})")
    return value


def positive_size(raw: dict[str, Any], key: str, path: Path, default: Any = ...) -> int:
    """A size: an integer in ``1 … MAX_SIZE``."""
    value = read_key(raw, key, int, path, default)
    if not 1 <= value <= MAX_SIZE:
        raise ModelError(f"{path}: {key!r} must be a positive integer at most {MAX_SIZE} (got {short_repr(value)} in "
                         f"{config_name(raw)})")
    return value


def refuse(path: Path, key: str, value: Any, what: str) -> None:
    """Raise :class:`~attnsym.models.UnsupportedModelError`: ``key=value`` is not supported, and ``what`` attnsym runs."""
    raise UnsupportedModelError(f"{path}: {key}={short_repr(value)} is not supported ({what})")


def activation_name(raw: dict[str, Any], key: str, path: Path, default: str) -> str:
    """An activation name of :data:`ACTIVATIONS` (any other refused by name)."""
    act = raw.get(key, default)
    if not isinstance(act, str) or act not in ACTIVATIONS:
        refuse(path, key, act, f"attnsym implements {', '.join(map(repr, ACTIVATIONS))}")
    return act
