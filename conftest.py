"""Shared pytest set-up: headless plotting and the doctest namespace."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
import sympy as sp


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    import attnsym

    doctest_namespace.update(np=np, sp=sp, at=attnsym)
