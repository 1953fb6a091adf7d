"""Test fixtures shared by the numeric tests: the array library as a parameter.

``xp`` runs a test once per array library — NumPy always, PyTorch when it imports, CuPy
(marked ``gpu``) when it imports and can run a kernel — as in array-api-compat's own tests.
Helpers to move and compare arrays live in ``tests/backends.py``.
"""

from __future__ import annotations

import importlib

import pytest

from attnsym.numeric.backend import cupy_usable

LIBRARIES = ("numpy", "torch", pytest.param("cupy", marks=pytest.mark.gpu))


@pytest.fixture(params=LIBRARIES)
def xp(request):
    """The ``array_api_compat`` namespace of one array library."""
    name = request.param
    if name != "numpy":
        pytest.importorskip(name)
    if name == "cupy":
        ok, why = cupy_usable()
        if not ok:
            pytest.skip(f"CuPy cannot run here: {why}")
    return importlib.import_module(f"array_api_compat.{name}")
