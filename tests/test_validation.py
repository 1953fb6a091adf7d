"""attnsym.validate: symbolic (lambdified SymPy) vs numeric, and the testing helpers."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import attention_specs

import attnsym as at
from attnsym import numeric as nm
from attnsym.errors import SpecError
from attnsym.testing import TOLERANCES, assert_views_agree, check_grad

HOLE = [[True, False, True, True], [False, False, False, False], [True, True, False, True], [True, True, True, True]]

# every option of the spec, each both ways, sizes up to (n, d_model) = (4, 4); pairwise rather than all 2^k products
VARIANTS = [
    dict(n=1, d_model=1),
    dict(n=4, d_model=4),
    dict(n=4, d_model=4, causal=True, bias=True),
    dict(n=4, d_model=4, heads=2, positions="sinusoidal"),
    dict(n=4, d_model=4, heads=2, causal=True, mask=HOLE, bias=True, scale="none"),
    dict(n=4, d_model=3, mask=HOLE, positions="sinusoidal", output_projection=True, scale=0.5),
    dict(n=3, d_model=4, heads=4, bias=True, positions="sinusoidal", causal=True),
    dict(n=4, d_model=2, d_k=3, d_v=1, output_projection=True, bias=True),
    dict(n=2, d_model=4, heads=2, d_k=1, d_v=3, scale="none"),
]


@pytest.mark.parametrize("kwargs", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items() if k != "mask")
                         + (",mask" if "mask" in kw else ""))
def test_validate_passes_every_variant_in_float64(kwargs):
    spec = at.AttentionSpec(**kwargs)
    report = at.validate(spec, seed=1)
    assert report.passed, report.to_markdown()
    assert report.max_abs <= 1e-12
    names = [row.quantity for row in report]
    assert names[0] == "Y" and {f"d{p}" for p in ("X", *spec.parameter_names)} <= set(names)
    assert sum(name.startswith("A") for name in names) == spec.heads


def test_validate_in_float32_uses_the_float32_tolerance():
    report = at.validate(at.AttentionSpec(n=3, d_model=4, heads=2, causal=True), seed=2, dtype="float32")
    assert report.passed and report.dtype == "float32"
    assert all(row.tolerance == TOLERANCES["float32"] for row in report)
    assert report.max_abs > 1e-10  # really computed in single precision


def test_report_access_and_markdown():
    report = at.validate(at.AttentionSpec(n=2, d_model=2, bias=True, output_projection=True))
    assert report["db_K"].max_abs <= 1e-12  # the key bias shifts every score of a row equally: gradient 0
    assert math.isnan(report["db_K"].max_rel)  # exact zeros have no relative error, only an absolute one
    text = report.to_markdown()
    assert "PASSED" in text and "| `dW_O` | (2, 2) |" in text
    assert report.failures == ()
    with pytest.raises(KeyError, match="no quantity 'Z'"):
        report["Z"]


def test_validate_detects_a_wrong_numeric_result(monkeypatch):
    real = nm.attention

    def off_by_a_little(*args, **kwargs):
        Y, A = real(*args, **kwargs)
        return Y + 1e-9, A

    monkeypatch.setattr(nm, "attention", off_by_a_little)
    spec = at.AttentionSpec(n=2, d_model=2)
    report = at.validate(spec)
    assert not report.passed and [row.quantity for row in report.failures] == ["Y"]
    assert report["Y"].max_abs == pytest.approx(1e-9, rel=1e-3)
    with pytest.raises(AssertionError, match="the symbolic and numeric views disagree"):
        assert_views_agree(spec)


def test_validate_rejects_bad_arguments():
    with pytest.raises(SpecError, match=r"dtype must be one of \['float32', 'float64'\] \(got 'float16'\)"):
        at.validate(at.AttentionSpec(n=2, d_model=2), dtype="float16")
    with pytest.raises(SpecError, match="spec must be an AttentionSpec"):
        at.validate({"n": 2})


def test_check_grad_catches_a_wrong_gradient():
    x = np.array([0.5, -1.0, 2.0])
    fun = lambda x: float(np.sum(np.sin(x)))
    check_grad(fun, {"x": x}, {"x": np.cos(x)})
    with pytest.raises(AssertionError, match=r"analytic:.*\n.*numeric:"):
        check_grad(fun, {"x": x}, {"x": np.cos(x) * 1.001})
    with pytest.raises(AssertionError, match="shape"):
        check_grad(fun, {"x": x}, {"x": np.cos(x)[:2]})


@settings(max_examples=8, deadline=None)
@given(spec=attention_specs(max_n=3, max_d=3), seed=st.integers(0, 1000))
def test_validate_passes_random_small_specs(spec, seed):
    report = at.validate(spec, seed=seed)
    assert report.passed, report.to_markdown()


def test_validate_rejects_a_seed_that_is_not_an_integer():
    spec = at.AttentionSpec(n=2, d_model=2)
    with pytest.raises(SpecError, match=r"seed must be a non-negative integer \(got 'a' of type str\)"):
        at.validate(spec, seed="a")
    with pytest.raises(SpecError, match=r"seed must be a non-negative integer \(got -1\)"):
        at.validate(spec, seed=-1)
    assert at.validate(spec, seed=np.int64(3)).seed == 3


def _seeded_calls():
    from attnsym import plots
    from attnsym.symbolic.equivariance import check_attention_equivariance, check_conv_equivariance
    from attnsym.symbolic.gradient_check import check_gradients
    from attnsym.testing import check_grad

    spec = at.AttentionSpec(n=2, d_model=2)
    return {
        "rope_decay_figure": lambda seed: plots.rope_decay_figure(d_k=4, max_distance=3, samples=5, seed=seed),
        "entropy_figure": lambda seed: plots.entropy_figure([1, 2], unscaled=[1.0, 0.5], scaled=[1.0, 0.9], seed=seed),
        "check_attention_equivariance": lambda seed: check_attention_equivariance(spec, seed=seed),
        "check_conv_equivariance": lambda seed: check_conv_equivariance(seed=seed),
        "check_gradients": lambda seed: check_gradients(spec, seed=seed),
        "check_grad": lambda seed: check_grad(lambda x: float(np.sum(x**3)), {"x": np.array([1.0, 2.0])},
                                              {"x": np.array([3.0, 12.0])}, seed=seed),
    }


@pytest.mark.parametrize("name", sorted(_seeded_calls()))
@pytest.mark.parametrize(("seed", "shown"), [("x", "'x' of type str"), (-1, "-1"), (1.5, "1.5"), (True, "True")])
def test_every_seeded_check_and_figure_refuses_a_seed_that_is_not_a_count(name, seed, shown):
    """random.Random took a str, a negative number or a float as a seed without a word, NumPy raised its own
    TypeError or ValueError, and True seeded like 1."""
    call = _seeded_calls()[name]
    with pytest.raises(SpecError, match=r"seed must be a non-negative integer \(got " + re.escape(shown)):
        call(seed)
    call(np.int64(2))  # a NumPy integer is a count


def test_gradient_checks_refuse_an_unordered_wrt():
    from attnsym.symbolic.gradient_check import check_gradients

    spec = at.AttentionSpec(n=2, d_model=2)
    for wrt in ({"W_V": 1}, {"W_V", "X"}, b"X"):
        with pytest.raises(SpecError, match="wrt must be an input name or a sequence of them"):
            check_gradients(spec, wrt=wrt)
    assert check_gradients(spec, wrt=["W_V"]).equal


def test_error_columns_are_named_for_what_they_hold():
    from attnsym.validation import _compare

    tol = at.testing.TOLERANCES["float64"]
    row = _compare("Y", np.array([2.0 + 2e-12, 1e-20]), np.array([2.0, 0.0]), tol)
    assert row.max_abs == pytest.approx(2e-12, rel=1e-3)
    assert row.max_rel == pytest.approx(1e-12, rel=1e-3)  # |Δ|/|ref| over the entries with |ref| >= atol
    small = _compare("A", np.array([0.25 + 1e-14]), np.array([0.25]), tol)
    assert small.max_rel == pytest.approx(4e-14, rel=1e-3)  # a true relative error also for |ref| < 1
    text = at.validate(at.AttentionSpec(n=2, d_model=2)).to_markdown()
    assert "max absolute error" in text and "max relative error" in text and "≥ atol" in text
