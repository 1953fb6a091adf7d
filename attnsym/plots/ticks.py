r"""Log-axis tick labels as plain text (``10⁻⁴``) instead of mathtext (``$\mathdefault{10^{-4}}$``).

matplotlib labels a log axis with :class:`~matplotlib.ticker.LogFormatterSciNotation`, whose
labels are mathtext. Laying out a mathtext label means parsing it (pyparsing), and matplotlib
keeps only the last 50 parses: the claims report's 38 figures need 66 distinct tick labels, so
most of its 490 labels were parsed again (about 11 % of the time to write those figures, measured
by enlarging that cache). The same label in Unicode superscripts — digits and the minus sign
of DejaVu Sans, matplotlib's default font — is plain text, measured like any other and cached
by matplotlib's text-metrics cache.

:func:`plain_log_labels` swaps the formatter on every log axis of a figure that still has
matplotlib's default one; :func:`attnsym.plots.figure_to_bytes` calls it before the layout, so
every figure attnsym writes has plain labels, and a figure a user shows in a notebook keeps
matplotlib's. A label of any other shape (a fractional exponent, a non-integer base) stays
mathtext.

>>> PlainLogFormatter()(1e-4), PlainLogFormatter(base=2)(64.0), PlainLogFormatter()(-300.0)
('10⁻⁴', '2⁶', '−3×10²')
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from matplotlib.ticker import LogFormatterSciNotation

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["PlainLogFormatter", "plain_label", "plain_log_labels"]

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_MINUS = "\N{MINUS SIGN}"  # what mathtext draws for '-', and what matplotlib's unicode_minus draws
#: the three label shapes of LogFormatterSciNotation: base^e, coefficient×base^e, a plain %g number
_POWER = re.compile(r"(-?)(\d+)\^\{(-?\d+)\}")
_SCALED = re.compile(r"(-?)(\d+(?:\.\d+)?)\\times(\d+)\^\{(-?\d+)\}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def plain_label(label: str) -> str:
    r"""The plain-text form of one of :class:`~matplotlib.ticker.LogFormatterSciNotation`'s labels.

    A label of another shape comes back unchanged.

    >>> plain_label(r"$\mathdefault{2\times10^{-1}}$"), plain_label(r"$\mathdefault{10^{0}}$"), plain_label("")
    ('2×10⁻¹', '10⁰', '')
    >>> plain_label(r"$\mathdefault{10^{0.50}}$")
    '$\\mathdefault{10^{0.50}}$'
    """
    if not (label.startswith(r"$\mathdefault{") and label.endswith("}$")):
        return label
    inner = label[len(r"$\mathdefault{"):-2]
    if m := _POWER.fullmatch(inner):
        sign, base, exponent = m.groups()
        return f"{_MINUS if sign else ''}{base}{exponent.translate(_SUPERSCRIPT)}"
    if m := _SCALED.fullmatch(inner):
        sign, coefficient, base, exponent = m.groups()
        return f"{_MINUS if sign else ''}{coefficient}×{base}{exponent.translate(_SUPERSCRIPT)}"
    if _NUMBER.fullmatch(inner):
        return inner.replace("-", _MINUS)
    return label


class PlainLogFormatter(LogFormatterSciNotation):
    """:class:`~matplotlib.ticker.LogFormatterSciNotation` with its labels as plain text (:func:`plain_label`)."""

    def __call__(self, x, pos=None):
        return plain_label(super().__call__(x, pos))


def plain_log_labels(fig: Figure) -> None:
    """Give every axis of ``fig`` that has matplotlib's default log formatter a :class:`PlainLogFormatter`.

    The same ticks, base and minor-label rules (the settings are copied); axes with a formatter
    of their own are left alone.
    """
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis, *([ax.zaxis] if hasattr(ax, "zaxis") else [])):
            for which, setter in (("major", axis.set_major_formatter), ("minor", axis.set_minor_formatter)):
                old = axis.get_major_formatter() if which == "major" else axis.get_minor_formatter()
                if type(old) is not LogFormatterSciNotation:
                    continue
                # LogFormatter has setters but no getters for its base and linthresh
                # (the stubs leave out those private attributes, which hold the values the setters set)
                new = PlainLogFormatter(base=old._base,  # type: ignore[attr-defined]
                                        labelOnlyBase=old.labelOnlyBase, minor_thresholds=old.minor_thresholds,
                                        linthresh=old._linthresh)  # type: ignore[attr-defined]
                setter(new)
