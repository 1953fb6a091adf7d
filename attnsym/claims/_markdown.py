r"""Values and text of a claims report, formatted for a reader of the Markdown.

Two rules make a report read the same in every Markdown viewer (GitHub, MkDocs with
arithmatex, a notebook):

* **Every expression is math or code.** A SymPy object becomes ``$…$`` math through
  :func:`sympy.latex`; in a plain string, a `` `…` `` span stays code and a ``$…$`` span stays
  math; everything else in the string is escaped, so ``n*(4*d*n - d)`` or ``self_attention``
  can never turn into italics.
* **Every value is written for a person.** ``None`` is "—" (not applicable), booleans are
  yes / no, floats have six significant digits, sequences are comma-separated (nested ones in
  parentheses), never a Python ``repr``.

>>> import sympy as sp
>>> value_markdown(sp.Symbol("d") ** 2 * 2)
'$2 d^{2}$'
>>> value_markdown([1, 2.5, None, True])
'1, 2.5, —, yes'
>>> text_markdown("ops = n*(4*d*n - d), `8*t + 64` per step")
'ops = n\\*(4\\*d\\*n - d), `8*t + 64` per step'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

from ..errors import SpecTypeError

__all__ = ["NOT_APPLICABLE", "as_row", "is_sympy", "text_markdown", "value_markdown"]

#: How a missing value (``None``) reads in a report.
NOT_APPLICABLE = "—"

# a code span or an inline math span: kept as written, everything else escaped
_SPANS = re.compile(r"(`[^`\n]+`|\$[^$\n]+\$)")
# characters that start emphasis, links, HTML, headings, tables or math in CommonMark and arithmatex
_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")


def is_sympy(obj: Any) -> bool:
    """True for SymPy objects (expressions, matrices, relations)."""
    return type(obj).__module__.startswith("sympy")


def text_markdown(text: str, *, table: bool = False) -> str:
    r"""Plain text as Markdown: code and math spans kept, every other Markdown character escaped.

    Parameters
    ----------
    text : str
        Prose, possibly with `` `code` `` and ``$math$`` spans.
    table : bool, default False
        The text goes into a table cell: a ``|`` inside a span is written ``\vert`` (math) or
        ``\|`` (code) so that it cannot end the cell, and line breaks become spaces.

    Examples
    --------
    >>> text_markdown("self_attention: 2*d*n**2, $|x|_1$", table=True)
    'self\\_attention: 2\\*d\\*n\\*\\*2, $\\vert x\\vert _1$'
    """
    if not isinstance(text, str):
        raise SpecTypeError(f"text must be a string (got {type(text).__name__})")
    if table:
        text = " ".join(text.splitlines())
    out = []
    for part in _SPANS.split(text):
        if not part:
            continue
        if _SPANS.fullmatch(part):
            if table and part.startswith("$"):
                part = part.replace("|", r"\vert ")
            elif table:
                part = part.replace("|", r"\|")
            out.append(part)
        else:
            out.append(_SPECIAL.sub(r"\\\1", part))
    return "".join(out)


def _latex(value: Any, *, table: bool) -> str:
    import sympy as sp

    body = sp.latex(value)
    if table:
        body = body.replace("|", r"\vert ")
    return f"${body}$"


def _number(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.6g}"


def as_row(value: Any) -> Any:
    """A study's typed result (a dataclass instance) as the mapping of its fields; any other value unchanged.

    >>> from attnsym.studies.intervals import Estimate
    >>> as_row(Estimate(1.0, 0.5, 1.5))
    {'value': 1.0, 'lo': 0.5, 'hi': 1.5}
    """
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return value


def value_markdown(value: Any, *, table: bool = False, _depth: int = 0) -> str:
    """One value as Markdown for a reader (see the module docstring for the rules).

    Examples
    --------
    >>> value_markdown({"n": 4, "exact": False})
    'n: 4; exact: no'
    >>> value_markdown([[0.1, 0.9], [0.95, 0.05]])
    '(0.1, 0.9), (0.95, 0.05)'
    >>> value_markdown(np.array([1.0, 2.0]))
    '1, 2'
    """
    if value is None:
        return NOT_APPLICABLE
    if is_sympy(value):
        return _latex(value, table=table)
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return _number(float(value))
    if isinstance(value, complex | np.complexfloating):
        return f"{_number(float(value.real))} + {_number(float(value.imag))}i"
    if isinstance(value, str):
        return text_markdown(value, table=table)
    if isinstance(value, np.ndarray):
        return value_markdown(value.tolist(), table=table, _depth=_depth)
    value = as_row(value)  # a dataclass reads as its fields, never as its repr
    if isinstance(value, Mapping):
        return "; ".join(f"{text_markdown(str(k), table=table)}: {value_markdown(v, table=table, _depth=_depth + 1)}"
                         for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        joined = ", ".join(value_markdown(v, table=table, _depth=_depth + 1) for v in items)
        return f"({joined})" if _depth else joined
    return text_markdown(str(value), table=table)
