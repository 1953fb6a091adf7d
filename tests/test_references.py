"""attnsym.references: PyTorch's nn.MultiheadAttention with attnsym's weights copied in, against attnsym.numeric."""

from __future__ import annotations

import numpy as np
import pytest

from attnsym import AttentionSpec
from attnsym import numeric as nm
from attnsym.errors import BackendError, ShapeError
from attnsym.numeric.sampling import random_inputs
from attnsym.references import (
    torch_installed,
    torch_multihead_attention,
    torch_multihead_parameter_count,
    torch_version,
)


def test_torch_installed_matches_importability():
    try:
        import torch  # noqa: F401
    except ImportError:
        assert not torch_installed()
    else:
        assert torch_installed()


@pytest.mark.parametrize(("heads", "bias", "causal"), [(1, False, False), (2, True, False), (4, False, True),
                                                       (2, True, True)])
def test_copied_weights_give_attnsyms_layer(heads, bias, causal):
    pytest.importorskip("torch")
    n, E = 5, 8
    spec = AttentionSpec(n=n, d_model=E, heads=heads, bias=bias, causal=causal, output_projection=True)
    values = random_inputs(spec, 3)
    weights = {name: values[name] for name in spec.parameter_names}
    Y, A = nm.attention(values["X"], **weights, spec=spec)
    Y_t, A_t = torch_multihead_attention(values["X"], weights, heads=heads, causal=causal)
    np.testing.assert_allclose(Y_t, Y, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(A_t, np.asarray(A).reshape(heads, n, n), rtol=1e-12, atol=1e-13)
    if causal:
        assert np.all(np.triu(A_t, k=1) == 0)


def test_parameter_counts_come_from_torch():
    pytest.importorskip("torch")
    for heads in (1, 2, 4):
        assert torch_multihead_parameter_count(8, heads) == 4 * 8 * 8
        assert torch_multihead_parameter_count(8, heads, bias=True) == 4 * 8 * 8 + 4 * 8
        spec = AttentionSpec(n=3, d_model=8, heads=heads, bias=True, output_projection=True)
        assert torch_multihead_parameter_count(8, heads, bias=True) == spec.parameter_count
    assert torch_version().startswith("2.")


def test_bad_layouts_are_named():
    pytest.importorskip("torch")
    X = np.zeros((3, 4))
    W = {name: np.eye(4) for name in ("W_Q", "W_K", "W_V", "W_O")}
    with pytest.raises(ShapeError, match=r"W_Q must have shape \(d_model, d_model\) = \(4, 4\)"):
        torch_multihead_attention(X, {**W, "W_Q": np.eye(4)[:, :2]}, heads=2)
    with pytest.raises(ShapeError, match="heads must divide d_model"):
        torch_multihead_attention(X, W, heads=3)
    with pytest.raises(ShapeError, match="all of b_Q, b_K, b_V, b_O or none"):
        torch_multihead_attention(X, {**W, "b_Q": np.zeros(4)}, heads=2)
    with pytest.raises(ShapeError, match="must contain W_O"):
        torch_multihead_attention(X, {k: v for k, v in W.items() if k != "W_O"}, heads=2)
    with pytest.raises(ShapeError, match=r"X must have shape \(n, d_model\)"):
        torch_multihead_attention(X[None], W, heads=2)
    with pytest.raises(ShapeError, match="heads must divide"):
        torch_multihead_parameter_count(6, 4)


def test_without_torch_the_error_says_how_to_install(monkeypatch):
    import attnsym.references as refs

    monkeypatch.setattr(refs, "torch_installed", lambda: False)
    with pytest.raises(BackendError, match="PyTorch is not installed"):
        refs.torch_multihead_parameter_count(8, 2)
