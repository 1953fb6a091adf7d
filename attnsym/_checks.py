"""Argument validators shared by every layer: one message per kind of mistake.

Each validator takes the argument's *name* (as the user typed it) and its *value*, returns the
value normalised (a plain ``int``, ``float`` or ``bool``), and otherwise raises an
:class:`~attnsym.errors.AttnsymError` subclass whose message names the argument, the value and
what was expected (the attrs ``validators`` pattern)::

    SpecError: n must be a positive integer (got 0)

The default error class is :class:`~attnsym.errors.SpecError`; pass ``error=`` to raise another
(e.g. :class:`~attnsym.errors.ShapeError`). Strings are never parsed: ``"3"`` is not an integer.

>>> positive_int("n", 3)
3
>>> positive_int("n", 0)
Traceback (most recent call last):
...
attnsym.errors.SpecError: n must be a positive integer (got 0)
>>> one_of("scale", "cube", ("sqrt", "none"))
Traceback (most recent call last):
...
attnsym.errors.SpecError: scale must be one of 'sqrt', 'none' (got 'cube')
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import AttnsymError, ShapeError, SpecError

__all__ = [
    "boolean",
    "check_index",
    "check_tokens",
    "finite_real",
    "instance_of",
    "integer_at_least",
    "is_int",
    "non_negative_int",
    "one_of",
    "positive_int",
    "positive_real",
]


def _describe(value: Any) -> str:
    """``repr`` of a value, with its type when the repr alone could mislead (``'3'`` vs ``3``)."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    if isinstance(value, bool | int | float):
        return text
    return f"{text} of type {type(value).__name__}"


def is_int(value: Any) -> bool:
    """True for integers (Python, NumPy, SymPy ``Integer``), never for ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def positive_int(name: str, value: Any, *, error: type[AttnsymError] = SpecError) -> int:
    """``value`` as an ``int`` ≥ 1, or ``error`` naming ``name``."""
    if not is_int(value) or value < 1:
        raise error(f"{name} must be a positive integer (got {_describe(value)})")
    return int(value)


def non_negative_int(name: str, value: Any, *, error: type[AttnsymError] = SpecError) -> int:
    """``value`` as an ``int`` ≥ 0, or ``error`` naming ``name``."""
    if not is_int(value) or value < 0:
        raise error(f"{name} must be a non-negative integer (got {_describe(value)})")
    return int(value)


def integer_at_least(name: str, value: Any, minimum: int, *, error: type[AttnsymError] = SpecError) -> int:
    """``value`` as an ``int`` ≥ ``minimum`` (e.g. a base of at least 2), or ``error`` naming ``name``.

    >>> integer_at_least("base", 1, 2)
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: base must be an integer >= 2 (got 1)
    """
    if not is_int(value) or value < minimum:
        raise error(f"{name} must be an integer >= {minimum} (got {_describe(value)})")
    return int(value)


def boolean(name: str, value: Any, *, error: type[AttnsymError] = SpecError) -> bool:
    """``value`` if it is a real ``bool`` (or NumPy ``bool_``); ``"no"`` and ``1`` are refused.

    >>> boolean("overwrite", "no")
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: overwrite must be True or False (got 'no' of type str)
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise error(f"{name} must be True or False (got {_describe(value)})")


def finite_real(name: str, value: Any, *, error: type[AttnsymError] = SpecError) -> float:
    """``value`` as a finite ``float``; strings, complex numbers, NaN and ±inf are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or isinstance(value, str):
        raise error(f"{name} must be a finite real number (got {_describe(value)})")
    try:
        result = float(value)
    except (OverflowError, TypeError, ValueError):
        raise error(f"{name} must be a finite real number that fits a float (got {_describe(value)})") from None
    if not math.isfinite(result):
        raise error(f"{name} must be a finite real number (got {_describe(value)})")
    return result


def positive_real(name: str, value: Any, *, error: type[AttnsymError] = SpecError) -> float:
    """``value`` as a finite ``float`` > 0."""
    result = finite_real(name, value, error=error)
    if result <= 0:
        raise error(f"{name} must be a positive finite number (got {_describe(value)})")
    return result


def one_of(name: str, value: Any, choices: Iterable[Any], *, error: type[AttnsymError] = SpecError) -> Any:
    """``value`` if it equals one of ``choices`` (compared by type and value), else ``error``."""
    options = tuple(choices)
    for option in options:
        if type(value) is type(option) and value == option:
            return option
    listed = ", ".join(repr(o) for o in options)
    raise error(f"{name} must be one of {listed} (got {value!r})")


def instance_of(name: str, value: Any, cls: type, *, error: type[AttnsymError] = SpecError) -> Any:
    """``value`` if it is an instance of ``cls``, else ``error`` naming ``name``, the value and its type.

    >>> instance_of("spec", 3, dict)
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: spec must be a dict (got 3 of type int)
    """
    if isinstance(value, cls):
        return value
    article = "an" if cls.__name__[:1].lower() in "aeiou" else "a"
    raise error(f"{name} must be {article} {cls.__name__} (got {value!r} of type {type(value).__name__})")


def check_tokens(tokens: Sequence[Any] | None, n: int, name: str = "tokens") -> list[str]:
    """The token labels as strings, one per position (default ``"1"``, ``"2"``, …, counted from 1).

    >>> check_tokens(None, 3)
    ['1', '2', '3']
    """
    if tokens is None:
        return [str(i + 1) for i in range(n)]
    if isinstance(tokens, str):
        raise ShapeError(f"{name} must be a sequence of {n} labels, not a single string (got {tokens!r})")
    tokens = list(tokens)
    if len(tokens) != n:
        raise ShapeError(f"{name} must have one label per position: expected {n} (got {len(tokens)})")
    return [str(t) for t in tokens]


def check_index(value: Any, size: int, name: str, what: str) -> int:
    """An integer index into ``size`` items (negative counts from the end), as a non-negative ``int``.

    >>> check_index(-1, 4, "head", "heads")
    3
    >>> check_index(4, 4, "head", "heads")
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: head=4 is out of range: the input has 4 heads (0..3)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ShapeError(f"{name} must be an integer (got {value!r})")
    index = int(value)
    if not -size <= index < size:
        raise ShapeError(f"{name}={value} is out of range: the input has {size} {what} (0..{size - 1})")
    return index % size
