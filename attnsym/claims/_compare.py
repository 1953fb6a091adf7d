"""Comparisons and draws shared by the numeric parts of the claim checks (float64 throughout).

The tolerance is the float64 row of the one table, :data:`attnsym.testing.TOLERANCES`; the
random weights are those of :func:`attnsym.numeric.random_inputs`, seeded from a claim's own
random stream.
"""

from __future__ import annotations

import numpy as np

from ..numeric.sampling import random_inputs
from ..spec import AttentionSpec
from ..testing import TOLERANCES

__all__ = ["TOL64", "close", "max_abs", "random_weights"]

#: the float64 tolerances every numeric comparison of a claim uses
TOL64 = TOLERANCES["float64"]


def max_abs(a, b) -> float:
    """``max |a − b|`` over all entries, as a float."""
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def close(a, b) -> bool:
    """``a`` and ``b`` agree within :data:`TOL64` (``numpy.allclose`` with its rtol and atol)."""
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=TOL64.rtol, atol=TOL64.atol))


def random_weights(rng: np.random.Generator, spec: AttentionSpec) -> dict[str, np.ndarray]:
    """The parameters of ``spec`` drawn by :func:`attnsym.numeric.random_inputs`, seeded from ``rng``."""
    values = random_inputs(spec, int(rng.integers(2**32)))  # the one sampling rule, seeded from the claim's stream
    return {name: values[name] for name in spec.parameter_names}
