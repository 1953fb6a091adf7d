"""Per-dtype tolerances: the one table every comparison of numbers in attnsym reads.

A bottom module (it imports nothing of attnsym), so that library code
(:mod:`attnsym.validation`, the claims) and the test helpers (:mod:`attnsym.testing`, which
re-exports these names) share it without depending on each other.

``TOLERANCES`` maps a dtype name to the (rtol, atol) that numeric results in that dtype are
held to when compared with an exact (symbolic) or float64 reference.

>>> TOLERANCES["float64"]
Tolerance(rtol=1e-12, atol=1e-12)
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TOLERANCES", "Tolerance", "tolerance_for"]


class Tolerance(NamedTuple):
    """Relative and absolute tolerance for ``|a - b| <= atol + rtol * |b|``."""

    rtol: float
    atol: float


#: per-dtype tolerances, the single place they are defined
TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-12, atol=1e-12),
    "float32": Tolerance(rtol=1e-5, atol=1e-5),
}


def tolerance_for(dtype) -> Tolerance:
    """The tolerance of a dtype (NumPy, CuPy or PyTorch dtype, or its name).

    >>> import numpy as np
    >>> tolerance_for(np.float32).rtol
    1e-05
    """
    name = str(dtype).removeprefix("torch.")
    name = {"<class 'numpy.float64'>": "float64", "<class 'numpy.float32'>": "float32"}.get(name, name)
    if name not in TOLERANCES:
        raise KeyError(f"no tolerance for dtype {dtype!r}; known: {sorted(TOLERANCES)}")
    return TOLERANCES[name]
