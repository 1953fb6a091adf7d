"""Comparisons and draws shared by the numeric parts of the studies and the claims (float64 throughout).

The tolerance is the float64 row of the one table, :data:`attnsym.tolerances.TOLERANCES`; the
random weights are those of :func:`attnsym.numeric.random_inputs`, seeded from a study's own
random stream. :mod:`attnsym.claims` reads the same names (``attnsym.claims._compare``).

>>> max_abs([1.0, 2.0], [1.0, 2.5]), close([1.0], [1.0 + 1e-15])
(0.5, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..numeric.sampling import random_inputs
from ..spec import AttentionSpec
from ..tolerances import TOLERANCES

__all__ = ["TOL64", "close", "max_abs", "random_weights"]

#: the float64 tolerances every numeric comparison of a study or a claim uses
TOL64 = TOLERANCES["float64"]


def max_abs(a: Any, b: Any) -> float:
    """``max |a − b|`` over all entries, as a float."""
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def close(a: Any, b: Any) -> bool:
    """``a`` and ``b`` agree within :data:`TOL64` (``numpy.allclose`` with its rtol and atol)."""
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=TOL64.rtol, atol=TOL64.atol))


def random_weights(rng: np.random.Generator, spec: AttentionSpec) -> dict[str, np.ndarray]:
    """The parameters of ``spec`` drawn by :func:`attnsym.numeric.random_inputs`, seeded from ``rng``."""
    values = random_inputs(spec, int(rng.integers(2**32)))  # the one sampling rule, seeded from the study's stream
    return {name: values[name] for name in spec.parameter_names}
