"""AttentionSpec: derived sizes, conventions, and a clear error for every invalid combination."""

import numpy as np
import pytest
import sympy as sp

import attnsym as at
from attnsym import AttentionSpec, SpecError


def test_defaults_single_head():
    spec = AttentionSpec(n=3, d_model=4)
    assert (spec.heads, spec.d_k, spec.d_v) == (1, 4, 4)
    assert spec.output_projection is False
    assert spec.shapes["Y"] == (3, 4)
    assert "W_O" not in spec.shapes
    assert spec.scale_expr == 1 / sp.sqrt(4) == sp.Rational(1, 2)
    assert spec.scale_float == 0.5
    assert spec.allowed is None and spec.allowed_array() is None


def test_multi_head_sizes_and_parameter_count():
    spec = AttentionSpec(n=2, d_model=6, heads=3, bias=True)
    assert spec.d_k == 2 and spec.output_projection
    assert spec.shapes["W_Q"] == (6, 6) and spec.shapes["W_O"] == (6, 6)
    # four 6x6 matrices plus four bias rows of width 6: the split keeps the parameter count of one head of width 6
    assert spec.parameter_count == 4 * 36 + 4 * 6
    assert spec.parameter_names == ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")


def test_causal_and_explicit_mask_combine_with_and():
    mask = np.array([[True, True, False], [False, True, True], [True, True, True]])
    spec = AttentionSpec(n=3, d_model=2, causal=True, mask=mask)
    assert spec.allowed == ((True, False, False), (False, True, False), (True, True, True))
    assert spec.fully_masked_rows == ()
    spec = AttentionSpec(n=2, d_model=2, mask=[[False, False], [True, True]])
    assert spec.fully_masked_rows == (0,)


def test_scale_variants():
    assert AttentionSpec(n=1, d_model=3, scale="none").scale_expr == 1
    assert AttentionSpec(n=1, d_model=3, scale=sp.Rational(1, 3)).scale_float == pytest.approx(1 / 3)
    t = sp.Symbol("tau", positive=True)
    spec = AttentionSpec(n=1, d_model=3, scale=t)
    assert spec.scale_expr == t
    with pytest.raises(SpecError, match="symbolic"):
        _ = spec.scale_float


def test_spec_is_hashable_and_comparable():
    a = AttentionSpec(n=2, d_model=2, mask=np.ones((2, 2), bool))
    b = AttentionSpec(n=2, d_model=2, mask=[[True, True], [True, True]])
    assert a == b and hash(a) == hash(b)


def test_replace_revalidates():
    spec = AttentionSpec(n=2, d_model=4, heads=2)
    assert spec.replace(heads=1).d_k == 4
    assert spec.replace(heads=1).output_projection is False
    with pytest.raises(SpecError, match="heads must divide d_model"):
        spec.replace(heads=3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n=0, d_model=2), r"n must be a positive integer \(got 0\)"),
        (dict(n=2.0, d_model=2), r"n must be a positive integer \(got 2.0\)"),
        (dict(n=2, d_model=-1), r"d_model must be a positive integer \(got -1\)"),
        (dict(n=True, d_model=2), r"n must be a positive integer"),
        (dict(n=2, d_model=10, heads=3), r"heads must divide d_model when d_k is not given \(got d_model=10, heads=3\)"),
        (dict(n=2, d_model=2, heads=0), r"heads must be a positive integer \(got 0\)"),
        (dict(n=2, d_model=2, d_k=0), r"d_k must be a positive integer \(got 0\)"),
        (dict(n=2, d_model=2, scale="1/sqrt(d)"), r"scale must be 'sqrt'.*got the string '1/sqrt\(d\)'"),
        (dict(n=2, d_model=2, scale=-1.0), r"scale must be a positive finite number \(got scale=-1.0\)"),
        (dict(n=2, d_model=2, scale=float("nan")), r"scale must be a positive finite number"),
        (dict(n=2, d_model=2, scale=[1]), r"scale must be .* \(got \[1\] of type list\)"),
        (dict(n=2, d_model=2, positions="rotary"), r"positions must be None, 'sinusoidal', 'rope' or 'alibi' \(got 'rotary'\)"),
        (dict(n=2, d_model=4, heads=2, output_projection=False), r"output_projection cannot be False when heads > 1"),
        (dict(n=2, d_model=2, causal="yes"), r"causal must be True or False \(got 'yes' of type str\)"),
        (dict(n=2, d_model=2, mask=np.zeros((2, 3), bool)), r"mask must have shape \(n, n\) = \(2, 2\) \(got \(2, 3\)\)"),
        (dict(n=2, d_model=2, mask=np.zeros((2, 2))), r"mask must be a boolean .* \(got dtype float64\)"),
        (dict(n=2, d_model=2, mask=[[1, 0], [1, 1]]), r"mask must contain booleans .* mask\[0\]\[0\] is 1"),
        (dict(n=2, d_model=2, position_base=1), r"position_base must be an integer >= 2 or a float > 1 \(got 1\)"),
    ],
)
def test_invalid_specs_name_the_argument(kwargs, message):
    with pytest.raises(SpecError, match=message):
        AttentionSpec(**kwargs)


def test_spec_error_is_a_value_error():
    with pytest.raises(ValueError):
        AttentionSpec(n=-1, d_model=2)
    assert issubclass(at.SpecError, at.AttnsymError)


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, attnsym; print(any(m in sys.modules for m in ('matplotlib', 'cupy', 'torch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
