"""attnsym.numeric.random_inputs: the one sampling rule for a layer's inputs."""

from __future__ import annotations

import numpy as np
import pytest

import attnsym as at
from attnsym.numeric import random_inputs


def test_every_input_of_the_spec_with_its_shape():
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, bias=True)
    values = random_inputs(spec, seed=1)
    assert list(values) == ["X", *spec.parameter_names, "G"]
    for name in ("X", *spec.parameter_names):
        assert values[name].shape == spec.shapes[name] and values[name].dtype == np.float64
    assert values["G"].shape == spec.shapes["Y"]


def test_entries_have_variance_one_over_fan_in():
    # d_model = 256: each W_Q entry ~ N(0, 1/256), each W_O / b_O entry ~ N(0, 1/(heads d_v)) = N(0, 1/256)
    spec = at.AttentionSpec(n=256, d_model=256, heads=2, bias=True)
    values = random_inputs(spec, seed=0)
    for name in ("W_Q", "W_V", "W_O"):
        assert abs(values[name].var() * 256 - 1) < 0.02  # 65 536 draws: sd of the estimate about 0.006
    bias = np.concatenate([values[f"b_{k}"].ravel() for k in "QKVO"])  # 1024 draws
    assert abs(bias.var() * 256 - 1) < 0.2
    assert abs(values["X"].var() - 1) < 0.02 and abs(values["G"].var() - 1) < 0.02
    X, W = values["X"], values["W_Q"]
    assert abs((X @ W).var() - 1) < 0.05  # the point of 1/fan_in: unit-variance queries


def test_weights_follow_seed_and_inputs_follow_input_seed():
    spec = at.AttentionSpec(n=3, d_model=4)
    a, b = random_inputs(spec, seed=0), random_inputs(spec, seed=0, input_seed=1)
    c = random_inputs(spec, seed=1, input_seed=0)
    assert all(np.array_equal(a[k], b[k]) for k in spec.parameter_names)
    assert not np.array_equal(a["X"], b["X"]) and not np.array_equal(a["G"], b["G"])
    assert np.array_equal(a["X"], c["X"]) and not np.array_equal(a["W_Q"], c["W_Q"])
    assert all(np.array_equal(a[k], random_inputs(spec, seed=0)[k]) for k in a)  # deterministic
    two = random_inputs(spec, seed=0, batch=(2,))
    assert two["X"].shape == (2, 3, 4) and two["G"].shape == (2, 3, 4)
    assert not np.array_equal(two["X"][0], two["X"][1])


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(seed=-1), r"seed must be a non-negative integer \(got -1\)"),
    (dict(seed=1.5), r"seed must be a non-negative integer \(got 1.5\)"),
    (dict(input_seed="3"), r"input_seed must be a non-negative integer \(got '3' of type str\)"),
    (dict(batch=(0,)), r"batch must be a positive integer \(got 0\)"),
])
def test_bad_arguments_are_spec_errors(kwargs, message):
    with pytest.raises(at.SpecError, match=message):
        random_inputs(at.AttentionSpec(n=2, d_model=2), **kwargs)
    with pytest.raises(at.SpecError, match="spec must be an AttentionSpec"):
        random_inputs({"n": 2})
