"""Array libraries as test parameters: the ``xp`` fixture's helpers (see ``tests/conftest.py``).

The ``xp`` fixture yields an ``array_api_compat`` namespace (NumPy, PyTorch, CuPy; a library
that does not import is skipped, CuPy is marked ``gpu``). Tests build inputs in NumPy, move
them with :func:`as_xp`, and compare against NumPy with :func:`assert_close`, whose
tolerance comes from the one table, :data:`attnsym.tolerances.TOLERANCES`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from attnsym.numeric.backend import asarray_in, backend_name
from attnsym.tolerances import tolerance_for


def as_xp(xp: ModuleType, value: Any) -> Any:
    """A NumPy array (or None) as an array of ``xp``."""
    return None if value is None else asarray_in(xp, value)


def to_numpy(value: Any) -> np.ndarray:
    """Any library's array as a NumPy array (for comparison)."""
    if hasattr(value, "get") and not isinstance(value, dict):  # CuPy
        return value.get()
    if hasattr(value, "detach"):  # PyTorch
        return value.detach().cpu().numpy()
    return np.asarray(value)


def is_of(xp: ModuleType, value: Any) -> bool:
    """Whether ``value`` is an array of the library of ``xp``."""
    import array_api_compat

    return getattr(array_api_compat, f"is_{backend_name(xp)}_array")(value)


def assert_close(actual: Any, desired: Any, dtype: Any = None, err_msg: str = "") -> None:
    """``actual`` (any library) equals ``desired`` within the tolerance of ``dtype`` (default: desired's dtype)."""
    desired = np.asarray(desired)
    tol = tolerance_for(dtype if dtype is not None else desired.dtype)
    np.testing.assert_allclose(to_numpy(actual), desired, rtol=tol.rtol, atol=tol.atol, err_msg=err_msg)
