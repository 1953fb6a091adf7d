"""attnsym.numeric.norms: one LayerNorm and one RMSNorm, tied to every other copy of their formulas.

The RMSNorm is the block norm of the real-model forward AND the QK-norm of the numeric layer (the
same function object); it is tied to its symbolic twin (``symbolic.matrices.rms_norm_rows``) and
to PyTorch, its gradient (the backward pass's QK-norm step) to central differences. The compiled
LayerNorm and GELU kernels are tied to these array forms in tests/test_models_fused.py.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import sympy as sp

from attnsym import numeric
from attnsym.errors import ShapeError
from attnsym.models import layer_norm as models_layer_norm
from attnsym.numeric import layer_norm, rms_norm
from attnsym.numeric.norms import rms_norm_vjp
from attnsym.symbolic.matrices import rms_norm_rows

forward_module = importlib.import_module("attnsym.models.forward")  # attnsym.models.forward is also the function
layer_module = importlib.import_module("attnsym.numeric.layer")


def test_one_rmsnorm_for_block_norms_and_qk_norm():
    assert forward_module.rms_norm is layer_module.rms_norm is numeric.rms_norm
    assert forward_module.layer_norm is models_layer_norm is numeric.layer_norm


@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_rms_norm_is_its_symbolic_twin(offset):
    rng = np.random.default_rng(0)
    x, g, eps = rng.standard_normal((3, 5)), rng.standard_normal(5), 1e-3
    exact = rms_norm_rows(sp.Matrix(x), sp.Matrix([list(g + offset)]), sp.Float(eps, 30))
    np.testing.assert_allclose(rms_norm(x, g, eps, offset), np.array(exact.evalf(20), dtype=float), rtol=1e-13)


def test_norms_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 4, 6)), rng.standard_normal(6), rng.standard_normal(6)
    t = torch.from_numpy
    want_ln = torch.nn.functional.layer_norm(t(x), (6,), t(w), t(b), 1e-5).numpy()
    want_rms = torch.nn.functional.rms_norm(t(x), (6,), t(w), 1e-5).numpy()
    np.testing.assert_allclose(layer_norm(x, w, b, 1e-5), want_ln, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rms_norm(x, w, 1e-5), want_rms, rtol=1e-12, atol=1e-12)
    got = rms_norm(t(x), t(w), 1e-5)  # the same code on torch tensors
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), want_rms, rtol=1e-12, atol=1e-12)


def test_layer_norm_leaves_its_input_and_keeps_float32():
    x = np.array([[1.0, 2.0, 4.0]], np.float32)
    before = x.copy()
    out = layer_norm(x, np.ones(3, np.float32), np.zeros(3, np.float32), 1e-5)
    np.testing.assert_array_equal(x, before)
    assert out.dtype == np.float32 and abs(float(out.mean())) < 1e-6


@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_rms_norm_vjp_is_the_gradient(offset):
    rng = np.random.default_rng(2)
    x, g, dy, eps, h = rng.standard_normal((2, 3, 4)), rng.standard_normal(4), rng.standard_normal((2, 3, 4)), 1e-2, 1e-6
    dx, dg = rms_norm_vjp(x, g, eps, dy, offset)

    def loss(x_, g_):
        return float(np.sum(rms_norm(x_, g_, eps, offset) * dy))

    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        assert abs((loss(x + e, g) - loss(x - e, g)) / (2 * h) - dx[i]) < 1e-7
    for j in range(4):
        e = np.zeros_like(g)
        e[j] = h
        assert abs((loss(x, g + e) - loss(x, g - e)) / (2 * h) - dg[j]) < 1e-7
    assert rms_norm_vjp(x, g.reshape(1, 4), eps, dy, offset)[1].shape == (1, 4)  # dweight shaped like the weight


def test_a_weight_of_another_width_is_refused_by_name():
    with pytest.raises(ShapeError, match=r"weight must have shape \(3,\) or \(1, 3\).*\(got \(4,\)\)"):
        rms_norm(np.ones((2, 3)), np.ones(4), 1e-6)
    with pytest.raises(ShapeError, match=r"bias must have shape \(3,\)"):
        layer_norm(np.ones((2, 3)), np.ones(3), np.ones((3, 1)), 1e-6)
