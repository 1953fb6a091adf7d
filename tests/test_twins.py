"""Symbolic ⇄ numeric twins: mirrored module names, same names, and a value check per pair.

A formula written in :mod:`attnsym.symbolic` (exact SymPy) and again in :mod:`attnsym.numeric`
(floats, array API) must agree. Each twin module of ``numeric`` has a same-named module in
``symbolic`` whose public functions include every public function of the numeric one, and every
pair below is compared on values.
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest
import sympy as sp

import attnsym.numeric as nm
import attnsym.symbolic as sym
from attnsym.spec import DEFAULT_POSITION_BASE, AttentionSpec
from attnsym.testing import TOLERANCES

TOL64 = TOLERANCES["float64"]

TWIN_MODULES = ("positions", "activations", "jacobians")
#: numeric functions of a twin module that are another implementation of a twin, not a formula of their own:
#: each is tied to that twin on values (gelu_float32: tests/test_models.py, test_float32_gelu_is_tied_to_numeric_gelu;
#: rope_tables, apply_rope's cos/sin made once per pass: tests/test_positions_numeric.py,
#: test_rope_with_tables_made_once_equals_rope_from_positions)
IMPLEMENTATIONS = {"gelu_float32": "gelu", "gelu_tanh_unchecked": "gelu_tanh", "rope_tables": "apply_rope"}


@pytest.mark.parametrize("module", TWIN_MODULES)
def test_twin_modules_mirror_each_other(module):
    numeric = importlib.import_module(f"attnsym.numeric.{module}")
    symbolic = importlib.import_module(f"attnsym.symbolic.{module}")
    functions = [name for name in numeric.__all__ if inspect.isfunction(getattr(numeric, name))]
    assert functions, f"attnsym.numeric.{module} exports no function"
    for name in functions:
        if name in IMPLEMENTATIONS:
            assert IMPLEMENTATIONS[name] in symbolic.__all__ and getattr(nm, name) is getattr(numeric, name)
            continue
        assert name in symbolic.__all__, f"attnsym.numeric.{module}.{name} has no twin in attnsym.symbolic.{module}"
        assert getattr(nm, name) is getattr(numeric, name)  # public names of attnsym.numeric unchanged
        n_params = [p for p in inspect.signature(getattr(numeric, name)).parameters.values()
                    if p.kind is p.POSITIONAL_OR_KEYWORD]
        s_params = [p for p in inspect.signature(getattr(symbolic, name)).parameters.values()
                    if p.kind is p.POSITIONAL_OR_KEYWORD]
        if module != "jacobians":  # the Jacobian: symbolic takes the size n, numeric the values a (see below)
            assert [(p.name, p.default) for p in n_params] == [(p.name, p.default) for p in s_params], name


@pytest.mark.parametrize(("n", "d", "base"), [(4, 6, DEFAULT_POSITION_BASE), (3, 5, DEFAULT_POSITION_BASE), (5, 4, 7)])
def test_sinusoidal_positions_twins_agree(n, d, base):
    exact = np.array(sym.sinusoidal_positions(n, d, base).evalf(20), dtype=float)
    np.testing.assert_allclose(nm.sinusoidal_positions(n, d, base), exact, rtol=TOL64.rtol, atol=TOL64.atol)


def test_position_base_has_one_home():
    assert AttentionSpec(n=1, d_model=1).position_base == DEFAULT_POSITION_BASE == 10000
    for f in (nm.sinusoidal_positions, sym.sinusoidal_positions):
        assert inspect.signature(f).parameters["base"].default is DEFAULT_POSITION_BASE


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu"])
def test_gelu_twins_agree(name):
    x = np.linspace(-6.0, 6.0, 25)
    exact = np.array([float(getattr(sym, name)(sp.Float(v, 30))) for v in x])
    np.testing.assert_allclose(getattr(nm, name)(x), exact, rtol=TOL64.rtol, atol=TOL64.atol)


def test_gelu_tanh_coefficient_is_the_symbolic_one():
    from attnsym.numeric.activations import GELU_TANH_CUBIC

    assert GELU_TANH_CUBIC == float(sym.GELU_TANH_CUBIC)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_softmax_jacobian_twins_agree(n):
    a = np.random.default_rng(n).dirichlet(np.ones(n))
    J = sym.softmax_jacobian(n)
    symbols = sorted(J.free_symbols, key=lambda s: int(s.name.rsplit("_", 1)[1]))  # a_1 … a_n (or from 0), in order
    values = {s: sp.Float(a[k], 30) for k, s in enumerate(symbols)}
    np.testing.assert_allclose(nm.softmax_jacobian(a), np.array(J.xreplace(values), dtype=float),
                               rtol=TOL64.rtol, atol=TOL64.atol)


def test_scores_and_softmax_twins_agree():
    rng = np.random.default_rng(3)
    Q, K = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    S_exact = sym.scores(sp.Matrix(Q), sp.Matrix(K), sp.Rational(1, 2))
    S = nm.scores(Q, K, 0.5)
    np.testing.assert_allclose(S, np.array(S_exact, dtype=float), rtol=TOL64.rtol, atol=TOL64.atol)
    np.testing.assert_allclose(nm.softmax(S), np.array(sym.row_softmax(sp.Matrix(S)).evalf(20), dtype=float),
                               rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.parametrize(("shift", "d", "base"), [(1, 2, DEFAULT_POSITION_BASE), (7, 8, DEFAULT_POSITION_BASE),
                                                  (3, 6, 7), (-4, 4, 13)])
def test_sinusoidal_shift_twins_agree(shift, d, base):
    exact = np.array(sym.sinusoidal_shift(shift, d, base).evalf(20), dtype=float)
    np.testing.assert_allclose(nm.sinusoidal_shift(shift, d, base), exact, rtol=TOL64.rtol, atol=TOL64.atol)
