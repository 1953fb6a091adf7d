"""Plain-text log tick labels (attnsym.plots.ticks): the same numbers as matplotlib's mathtext labels."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.ticker import LogFormatterMathtext

from attnsym import plots
from attnsym.plots._base import new_figure
from attnsym.plots.ticks import PlainLogFormatter, plain_label

_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _value(label: str) -> float:
    """The number a plain label shows, read back independently of how it was made."""
    label = label.replace("\N{MINUS SIGN}", "-")
    m = re.fullmatch(r"(-?)(?:(\d+(?:\.\d+)?)×)?(\d+)([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", label)
    if m is None:
        return float(label)
    sign, coefficient, base, exponent = m.groups()
    value = float(coefficient or 1) * float(base) ** int(exponent.translate(_FROM_SUPERSCRIPT))
    return -value if sign else value


@given(base=st.sampled_from([2, 10]), exponent=st.integers(-30, 30), coefficient=st.integers(1, 9),
       sign=st.sampled_from([1, -1]))
def test_a_plain_label_shows_the_number_of_its_tick(base, exponent, coefficient, sign):
    x = sign * coefficient * float(base) ** exponent
    if coefficient >= base:
        return
    label = PlainLogFormatter(base=base)(x)
    assert "$" not in label
    assert _value(label) == pytest.approx(x, rel=1e-12)


def test_labels_of_other_shapes_stay_mathtext():
    label = LogFormatterMathtext(base=10)._non_decade_format("", "10", 0.5, False)  # a fractional power
    assert plain_label(label) == label
    assert plain_label(r"$\mathdefault{10^{x}}$") == r"$\mathdefault{10^{x}}$"
    assert plain_label("1.5") == "1.5"


def test_written_figures_label_log_axes_in_plain_text_and_keep_other_formatters():
    fig = new_figure()
    ax1, ax2 = fig.subplots(1, 2)
    ax1.loglog([1e-3, 1e3], [1, 1e6])
    ax2.semilogy([0, 1], [1, 100])
    ax2.yaxis.set_major_formatter("{x:g}")  # a formatter of the figure's own
    plots.figure_to_bytes(fig, "png")
    assert type(ax1.xaxis.get_major_formatter()) is PlainLogFormatter
    assert type(ax1.yaxis.get_minor_formatter()) is PlainLogFormatter
    assert type(ax2.yaxis.get_major_formatter()) is not PlainLogFormatter
    shown = [t.get_text() for t in ax1.get_xticklabels() if t.get_text()]
    assert shown and all("$" not in s for s in shown)
    values = [_value(s) for s in shown]
    assert np.all(np.diff(values) > 0) and 1e-3 in values and 1e3 in values
