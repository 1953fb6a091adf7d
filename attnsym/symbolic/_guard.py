"""The size guard every symbolic builder shares: refuse, in the same words, an estimate above the limit.

:func:`enforce_limit` lives below every other module of :mod:`attnsym.symbolic` (the estimates of
:mod:`attnsym.symbolic.cost` and the position matrices of :mod:`attnsym.symbolic.positions` both
use it); :mod:`attnsym.symbolic.cost` re-exports it.
"""

from __future__ import annotations

import math
import numbers
from typing import cast

from .._limits import DEFAULT_MAX_TERMS
from ..errors import SizeLimitError, SpecError

__all__ = ["approx", "enforce_limit"]


def _check_max_terms(max_terms: object) -> float:
    if max_terms is None:
        return DEFAULT_MAX_TERMS
    if isinstance(max_terms, bool) or not isinstance(max_terms, numbers.Real) or not float(max_terms) > 0:
        raise SpecError(f"max_terms must be a positive number, or None for the default {DEFAULT_MAX_TERMS} (got {max_terms!r})")
    return cast(float, max_terms)  # an int stays an int: the message prints it as given


def enforce_limit(terms: float, max_terms: float | None = None, *, what: str, detail: str = "",
                  alternative: str = "attnsym.numeric") -> None:
    """Raise :class:`SizeLimitError` if an estimated term count exceeds the limit.

    Shared by every symbolic builder (forward pass, gradients), so all of them refuse in
    the same words.

    Parameters
    ----------
    terms : float
        The estimate.
    max_terms : float, optional
        The limit; ``None`` means :data:`DEFAULT_MAX_TERMS`, ``float("inf")`` disables it.
    what : str
        What was asked for, e.g. ``"symbolic gradients for n=8, d_model=8"``.
    detail : str, optional
        A breakdown of the estimate.
    alternative : str, default "attnsym.numeric"
        Where to get numbers instead.

    Examples
    --------
    >>> enforce_limit(10, what="a test")
    >>> enforce_limit(10**7, what="a test")
    Traceback (most recent call last):
    ...
    attnsym.errors.SizeLimitError: a test would build about 1e+07 terms, above the limit max_terms=500000; ...
    """
    limit = _check_max_terms(max_terms)
    if terms > limit:
        limit_text = "inf" if math.isinf(limit) else f"{limit:g}" if isinstance(limit, float) else str(limit)
        extra = f" ({detail})" if detail else ""
        raise SizeLimitError(
            f"{what} would build about {approx(terms)} terms{extra}, above the limit max_terms={limit_text}; "
            f"symbolic work is meant for small sizes (n, d_model <= 4-6). Pass max_terms={_suggest(terms)} "
            f"(--max-terms on the command line) to build it anyway (it may take very long), "
            f"or use {alternative} for numbers at this size."
        )


def approx(value: float) -> str:
    """``value`` to two significant digits (``1.4e+11``), also for integers beyond the float range.

    >>> approx(123456), approx(10**400)
    ('1.2e+05', '1e+400')
    """
    try:
        return f"{value:.2g}"
    except OverflowError:
        digits = str(int(value))
        return f"{digits[0]}e+{len(digits) - 1}"


def _suggest(terms: float) -> str:
    exponent = math.ceil(math.log10(max(terms, 1)))
    if exponent > 300:
        return 'float("inf")'
    return str(10**exponent) if exponent <= 12 else f"1e{exponent}"
