"""What is softmax₁ (Miller 2023)? Softmax with an extra logit and a zero value, exactly and in float64.

:func:`study` returns a :class:`SinkResult` for a claimed extra logit (0 for softmax₁): exactly
(``n = 3`` symbolic logits, values and sink logit ``s``) whether
:func:`attnsym.symbolic.sink.softmax_one` equals :func:`~attnsym.symbolic.sink.sink_softmax` with the
extra logit without its first entry, whether the outputs with a zero value agree, whether the sink
weight is :func:`~attnsym.symbolic.sink.sink_mass`; in float64 the stable softmax₁ of
:mod:`attnsym.numeric.sink` against :func:`attnsym.numeric.softmax` of the appended logits, logits
up to ±1000 included.

The claim ``off-by-one-sink`` judges it; :func:`attnsym.plots.literature.sink_figure` draws the
sink weight.

>>> study(lambda *k: np.random.default_rng(0), quick=True).weights_equal
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..numeric import sink as numeric_sink
from ..numeric import softmax
from ..symbolic import sink as exact_sink
from ._streams import Streams

__all__ = ["N", "SinkResult", "study"]

#: the number of symbolic logits
N = 3


@dataclass(frozen=True)
class SinkResult:
    """What :func:`study` found: the symbolic logits ``x`` and sink logit ``s``, softmax₁ of ``x`` (``one``), the exact
    equalities; in float64 the rows, the largest gap from the appended softmax, finiteness, and the row sums."""

    extra_logit: int
    x: sp.Matrix
    s: sp.Symbol
    one: sp.Matrix
    weights_equal: bool
    outputs_equal: bool
    mass_equal: bool
    rows: int
    numeric_gap: float
    finite: bool
    row_sums: np.ndarray


def study(rng: Streams, *, quick: bool, extra_logit: int = 0) -> SinkResult:
    """The exact equalities for the claimed ``extra_logit`` and 200 (2000) float64 rows. ``rng()`` draws the logits."""
    x = sp.Matrix(sp.symbols(f"x_1:{N + 1}", real=True))
    v = sp.Matrix(sp.symbols(f"v_1:{N + 1}", real=True))
    s = sp.Symbol("s", real=True)
    one = exact_sink.softmax_one(x)
    appended = exact_sink.sink_softmax(x, sp.Integer(extra_logit))
    rows = 200 if quick else 2000
    Z = rng().standard_normal((rows, 8)) * np.array([1.0] * 6 + [30.0, 30.0])  # (rows, 8)
    Z[:4] = [[1000.0] * 8, [-1000.0] * 8, [1000.0] + [0.0] * 7, [-1000.0] + [0.0] * 7]
    ours = numeric_sink.softmax_one(Z)
    reference = np.asarray(softmax(np.hstack([np.full((rows, 1), float(extra_logit)), Z])))[:, 1:]
    return SinkResult(
        extra_logit, x, s, one, all(sp.simplify(one[i] - appended[i + 1]) == 0 for i in range(N)),
        sp.simplify((appended.T * sp.Matrix.vstack(sp.Matrix([[0]]), v))[0] - (one.T * v)[0]) == 0,
        sp.simplify(exact_sink.sink_softmax(x, s)[0] - exact_sink.sink_mass(x, s)) == 0, rows,
        float(np.max(np.abs(ours - reference))), bool(np.all(np.isfinite(ours))), ours.sum(axis=1))
