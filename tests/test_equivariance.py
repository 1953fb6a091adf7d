"""Permutation/shift equivariance, symbolic and numeric, and the conv twins (against SciPy)."""

import numpy as np
import pytest
import sympy as sp
from scipy.ndimage import correlate1d

from attnsym import AttentionSpec
from attnsym.errors import ShapeError, SpecError
from attnsym.numeric import attention
from attnsym.numeric.conv import conv1d, shift_tokens
from attnsym.symbolic.equivariance import (
    check_attention_equivariance,
    check_conv_equivariance,
    cyclic_shift,
    dependency_pattern,
    permutation_matrix,
)
from attnsym.symbolic.equivariance import conv1d as sym_conv1d
from attnsym.symbolic.naming import input_symbols
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


def test_permutation_matrix_convention():
    P = permutation_matrix([2, 0, 1])
    X = sp.Matrix([[1], [2], [3]])
    assert list(P * X) == [3, 1, 2]
    assert P * P.T == sp.eye(3)
    with pytest.raises(SpecError, match="perm must be a permutation"):
        permutation_matrix([0, 0, 1])


def test_cyclic_shift_matches_numeric_shift():
    X = np.arange(5.0)[:, None]
    P = np.array(permutation_matrix(cyclic_shift(5)), dtype=float)
    np.testing.assert_array_equal(P @ X, shift_tokens(X))


@pytest.mark.parametrize("padding", ["circular", "zeros"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_conv_symbolic_numeric_pair(padding, k):
    rng = np.random.default_rng(k)
    X, w = rng.standard_normal((6, 2)), rng.standard_normal(k)
    sym = np.array(sym_conv1d(sp.Matrix(X), list(w), padding), dtype=float)
    np.testing.assert_allclose(conv1d(X, w, padding), sym, rtol=TOL64.rtol, atol=TOL64.atol)


@pytest.mark.parametrize(("padding", "mode"), [("circular", "wrap"), ("zeros", "constant")])
def test_conv_against_scipy(padding, mode):
    rng = np.random.default_rng(0)
    X, w = rng.standard_normal((7, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(conv1d(X, w, padding), correlate1d(X, w, axis=0, mode=mode, cval=0.0), rtol=TOL64.rtol)


def test_conv_equivariance():
    assert check_conv_equivariance(6, 3).holds
    assert check_conv_equivariance(6, 3, perm=cyclic_shift(6, 2)).holds
    assert not check_conv_equivariance(6, 3, perm=(1, 0, 2, 3, 4, 5)).holds
    zeros = check_conv_equivariance(6, 3, padding="zeros")
    assert not zeros.holds and zeros.witness > 0
    assert {i for i, _ in zeros.failing_entries} <= {0, 1, 5}  # only the borders (and the wrapped token)
    rng = np.random.default_rng(1)
    X, w = rng.standard_normal((9, 2)), rng.standard_normal(3)
    np.testing.assert_allclose(conv1d(shift_tokens(X), w), shift_tokens(conv1d(X, w)), rtol=TOL64.rtol, atol=TOL64.atol)


def test_dependency_patterns():
    X = input_symbols("X", (5, 1))
    D = dependency_pattern(sym_conv1d(X, sp.symbols("w_0:3")), X)
    expected = sp.Matrix(5, 5, lambda i, j: 1 if min((i - j) % 5, (j - i) % 5) <= 1 else 0)
    assert D == expected
    from attnsym.symbolic import attention as sym_attention

    sym = sym_attention(AttentionSpec(n=3, d_model=1))
    assert dependency_pattern(sym.Y, sym.X) == sp.ones(3, 3)


@pytest.mark.parametrize(("kwargs", "holds"), [
    ({}, True),
    ({"bias": True}, True),
    ({"heads": 2, "d_model": 2}, True),
    ({"positions": "sinusoidal"}, False),
    ({"causal": True}, False),
])
def test_attention_equivariance_symbolic(kwargs, holds):
    spec = AttentionSpec(**{"n": 3, "d_model": 1, **kwargs})
    checks = check_attention_equivariance(spec, perm=(1, 2, 0))
    assert all(c.holds == holds for c in checks.values()) if holds else not checks["Y"].holds
    if not holds:
        assert checks["Y"].witness > 1e-6


@pytest.mark.parametrize(("kwargs", "holds"), [({}, True), ({"positions": "sinusoidal"}, False), ({"causal": True}, False)])
def test_attention_equivariance_numeric_agrees(kwargs, holds):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((10, 4))
    W = rng.standard_normal((3, 4, 4)) / 2
    perm = rng.permutation(10)
    Y, A = attention(X, *W, **kwargs)
    Yp, Ap = attention(X[perm], *W, **kwargs)
    close = dict(rtol=TOL64.rtol, atol=TOL64.atol)
    same = np.allclose(Ap, A[perm][:, perm], **close) and np.allclose(Yp, Y[perm], **close)
    assert same == holds


def test_conv_errors():
    with pytest.raises(SpecError, match="padding"):
        conv1d(np.ones((3, 1)), [1.0], padding="reflect")
    with pytest.raises(ShapeError, match="X must have shape"):
        conv1d(np.ones(3), [1.0])
    with pytest.raises(ShapeError, match="kernel"):
        sym_conv1d(sp.ones(3, 1), [])


def test_conv_torch_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    X, w = rng.standard_normal((6, 2)), rng.standard_normal(3)
    for padding in ("circular", "zeros"):
        out = conv1d(torch.asarray(X), torch.asarray(w), padding)
        assert isinstance(out, torch.Tensor)
        np.testing.assert_allclose(out.numpy(), conv1d(X, w, padding), rtol=TOL64.rtol, atol=TOL64.atol)
