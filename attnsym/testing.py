"""Test helpers shipped with attnsym: tolerances in one table, and cross-view checks.

Our own tests use these, and so can users checking their own attention code.

``TOLERANCES`` maps a dtype name to the (rtol, atol) that numeric results in that dtype are
held to when compared with an exact (symbolic) or float64 reference; it is defined in
:mod:`attnsym.tolerances` (a bottom module library code reads too) and re-exported here.

>>> TOLERANCES["float64"]
Tolerance(rtol=1e-12, atol=1e-12)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ._checks import non_negative_int
from .errors import SpecError
from .tolerances import TOLERANCES, Tolerance, tolerance_for
from .validation import validate

__all__ = ["TOLERANCES", "Tolerance", "assert_views_agree", "check_grad", "tolerance_for"]


def check_grad(
    fun: Callable[..., Any],
    inputs: Mapping[str, Any],
    grads: Mapping[str, Any],
    *,
    eps: float = 1e-6,
    seed: int = 0,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> dict[str, tuple[float, float]]:
    """Check analytic gradients of a scalar function against central finite differences.

    For each name in ``grads`` a random unit direction ``v`` (seeded) is drawn and the
    directional derivative ``⟨grads[name], v⟩`` is compared with
    ``(fun(x + eps·v) − fun(x − eps·v)) / (2·eps)``, all other inputs held fixed.
    Central differences have error ``O(eps²)`` plus rounding ``O(ε_machine/eps)``, hence the
    looser default tolerance than :data:`TOLERANCES`; use float64 inputs.

    Parameters
    ----------
    fun : callable
        ``fun(**inputs) -> scalar``.
    inputs : mapping of str to array
        The point at which to check (NumPy arrays, or anything ``numpy.asarray`` accepts).
    grads : mapping of str to array
        The claimed gradient of ``fun`` for some (or all) of the inputs.
    eps : float, default 1e-6
        Step of the central difference.
    seed : int, default 0
        Seed of the random directions.
    rtol, atol : float
        Pass when ``|analytic − numeric| <= atol + rtol·|numeric|``.

    Returns
    -------
    dict
        ``name -> (analytic, numeric)`` directional derivatives.

    Raises
    ------
    AssertionError
        For the first input whose derivatives disagree; the message gives both values.
    SpecError
        ``grads`` names an input that ``inputs`` lacks, or ``seed`` is not a non-negative integer.

    Examples
    --------
    >>> check_grad(lambda x: float(np.sum(x**3)), {"x": np.array([1.0, 2.0])}, {"x": np.array([3.0, 12.0])})["x"][0] != 0
    True
    """
    rng = np.random.default_rng(non_negative_int("seed", seed))
    base = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    results: dict[str, tuple[float, float]] = {}
    for name, grad in grads.items():
        if name not in base:
            raise SpecError(f"grads has {name!r}, which is not among the inputs {sorted(base)}")
        grad = np.asarray(grad, dtype=np.float64)
        if grad.shape != base[name].shape:
            raise AssertionError(f"gradient of {name} has shape {grad.shape}, the input has {base[name].shape}")
        v = rng.standard_normal(base[name].shape)
        v /= max(float(np.linalg.norm(v)), 1e-300)
        plus = float(fun(**{**base, name: base[name] + eps * v}))
        minus = float(fun(**{**base, name: base[name] - eps * v}))
        numeric = (plus - minus) / (2 * eps)
        analytic = float(np.sum(grad * v))
        if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
            raise AssertionError(
                f"gradient of {name} disagrees with central differences along a random direction:\n"
                f"  analytic: {analytic!r}\n  numeric:  {numeric!r}\n  (eps={eps}, rtol={rtol}, atol={atol})"
            )
        results[name] = (analytic, numeric)
    return results


def assert_views_agree(spec, seed: int = 0, dtype: str = "float64"):
    """Assert that the symbolic and numeric views of ``spec`` agree on random inputs.

    Runs :func:`attnsym.validate` (forward output, weights and all gradients) and raises
    ``AssertionError`` with its table when any quantity is outside ``TOLERANCES[dtype]``.

    Returns
    -------
    ValidationReport
        The report, when everything agrees.

    Examples
    --------
    >>> import attnsym as at
    >>> assert_views_agree(at.AttentionSpec(n=2, d_model=2)).passed
    True
    """
    report = validate(spec, seed=seed, dtype=dtype)
    if not report.passed:
        raise AssertionError("the symbolic and numeric views disagree:\n" + report.to_markdown())
    return report
