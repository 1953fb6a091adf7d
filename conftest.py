"""Shared pytest set-up: headless plotting and the doctest namespace."""

import importlib.util
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
import sympy as sp

# the compiled kernels' examples need the optional Numba (attnsym[fast]); their tests skip without it
collect_ignore = [] if importlib.util.find_spec("numba") else ["attnsym/models/_fused.py", "attnsym/numeric/_kernels.py"]


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    import attnsym

    doctest_namespace.update(np=np, sp=sp, at=attnsym)
