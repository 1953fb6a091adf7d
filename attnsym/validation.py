"""Symbolic ⇄ numeric validation: the same layer computed two independent ways.

:func:`validate` draws random inputs for an :class:`~attnsym.AttentionSpec`, evaluates the
exact SymPy layer (``attnsym.symbolic.attention(spec)``, lambdified with common-subexpression
elimination) and its symbolic gradients (``attnsym.gradients(spec)``), runs the numeric
backend (``attnsym.numeric.attention`` / ``attention_vjp``, which shares no code with SymPy),
and reports each quantity's largest absolute and relative error against the dtype's
tolerance from :data:`attnsym.tolerances.TOLERANCES` (re-exported as ``attnsym.testing.TOLERANCES``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import numeric, symbolic
from ._checks import non_negative_int
from .errors import SpecError
from .numeric.sampling import random_inputs
from .spec import AttentionSpec
from .symbolic.cost import default_gradient_method
from .tolerances import TOLERANCES, Tolerance

__all__ = ["ValidationReport", "ValidationRow", "validate"]


@dataclass(frozen=True)
class ValidationRow:
    """One compared quantity: numeric value vs the lambdified symbolic reference.

    ``max_abs`` is the absolute error ``max |numeric − symbolic|`` over every entry;
    ``max_rel`` is the relative error ``max |numeric − symbolic| / |symbolic|`` over the entries
    with ``|symbolic| >= atol`` (NaN when there is none: entries that are zero at this tolerance,
    such as the key-bias gradient, only have an absolute error). ``passed`` is
    ``|numeric − symbolic| <= atol + rtol·|symbolic|`` everywhere, with a finite numeric value.
    """

    quantity: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    tolerance: Tolerance
    passed: bool

    def as_markdown(self) -> str:
        mark = "yes" if self.passed else "**NO**"
        rel = "—" if self.max_rel != self.max_rel else f"{self.max_rel:.3e}"  # NaN: no entry large enough
        return (f"| `{self.quantity}` | {self.shape} | {self.max_abs:.3e} | {rel} | "
                f"{self.tolerance.rtol:.0e} / {self.tolerance.atol:.0e} | {mark} |")


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of :func:`validate`: one :class:`ValidationRow` per quantity.

    ``report.passed`` is True when every quantity is within tolerance; iterate over the report
    (or read ``report.rows``) for the details, ``report["Y"]`` for one quantity.
    """

    spec: AttentionSpec
    dtype: str
    seed: int
    rows: tuple[ValidationRow, ...]

    @property
    def passed(self) -> bool:
        """All quantities within tolerance."""
        return all(row.passed for row in self.rows)

    @property
    def failures(self) -> tuple[ValidationRow, ...]:
        """The rows outside tolerance."""
        return tuple(row for row in self.rows if not row.passed)

    @property
    def max_abs(self) -> float:
        """Largest absolute error over all quantities."""
        return max((row.max_abs for row in self.rows), default=0.0)

    def __iter__(self) -> Iterator[ValidationRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, quantity: str) -> ValidationRow:
        for row in self.rows:
            if row.quantity == quantity:
                return row
        raise KeyError(f"no quantity {quantity!r} in this report; it has {[r.quantity for r in self.rows]}")

    def to_markdown(self) -> str:
        """A Markdown table of the comparison."""
        head = [
            f"Validation of {self.spec.describe()} — {self.dtype}, seed {self.seed}: "
            f"{'PASSED' if self.passed else 'FAILED'}",
            "",
            "| quantity | shape | max absolute error \\|Δ\\| | max relative error \\|Δ\\|/\\|ref\\| "
            "(entries with \\|ref\\| ≥ atol) | rtol / atol | within |",
            "|---|---|---|---|---|---|",
        ]
        foot = ["", "Δ = numeric − symbolic, ref = the symbolic value; an entry is within tolerance when "
                "\\|Δ\\| ≤ atol + rtol·\\|ref\\| (so entries with \\|ref\\| < atol/rtol are judged by atol); "
                "— when every entry of a quantity is below atol, zero at this tolerance."]
        return "\n".join(head + [row.as_markdown() for row in self.rows] + foot)

    _repr_markdown_ = to_markdown

    def __str__(self) -> str:
        return self.to_markdown()


def _compare(quantity: str, numeric: Any, reference: Any, tol: Tolerance) -> ValidationRow:
    got = np.asarray(numeric, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if got.shape != ref.shape:
        raise AssertionError(f"{quantity}: numeric shape {got.shape} differs from symbolic shape {ref.shape}")
    err = np.abs(got - ref)
    max_abs = float(err.max(initial=0.0))
    # relative to |reference| wherever the reference is not zero at this tolerance (db_K: absolute only)
    large = np.abs(ref) >= tol.atol
    max_rel = float((err[large] / np.abs(ref[large])).max()) if large.any() else float("nan")
    passed = bool(np.all(err <= tol.atol + tol.rtol * np.abs(ref))) and bool(np.all(np.isfinite(got)))
    return ValidationRow(quantity, tuple(ref.shape), max_abs, max_rel, tol, passed)


def validate(spec: AttentionSpec, seed: int = 0, dtype: str = "float64") -> ValidationReport:
    """Compare the numeric backend with the exact symbolic layer on random inputs.

    Quantities: the output ``Y``, the attention weights ``A`` (``A[h]`` per head), and the
    gradient of ``⟨G, Y⟩`` for ``X`` and every parameter (``dX``, ``dW_Q``, …) — the numeric
    analytic backward pass against the lambdified symbolic gradients.

    Parameters
    ----------
    spec : AttentionSpec
        The layer; its size must be within the symbolic size guard.
    seed : int, default 0
        Seed of :func:`attnsym.numeric.random_inputs`.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the numeric run; the symbolic reference is always evaluated in float64,
        and the tolerance is ``TOLERANCES[dtype]``.

    Returns
    -------
    ValidationReport

    Raises
    ------
    SpecError
        Unknown dtype or a spec with a symbolic scale.
    SizeLimitError
        The spec is too large for the symbolic layer.

    Examples
    --------
    >>> report = validate(AttentionSpec(n=2, d_model=2, causal=True))
    >>> report.passed, [row.quantity for row in report][:2]
    (True, ['Y', 'A'])
    >>> report["Y"].max_abs < 1e-12
    True
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
    if dtype not in TOLERANCES:
        raise SpecError(f"dtype must be one of {sorted(TOLERANCES)} (got {dtype!r})")
    seed = non_negative_int("seed", seed)
    tol = TOLERANCES[dtype]
    values = random_inputs(spec, seed)
    inputs = {k: v for k, v in values.items() if k != "G"}
    cast = {k: v.astype(dtype) for k, v in values.items()}
    params: dict[str, Any] = {k: cast[k] for k in spec.parameter_names}  # W_Q, …, b_O as keyword arguments
    rows: list[ValidationRow] = []

    # forward: Y and the weights of every head
    sym = symbolic.attention(spec)
    reference = sym.lambdify("Y", "A_heads")(**inputs)
    Y, A = numeric.attention(cast["X"], spec=spec, **params)
    A = A[None] if spec.heads == 1 else A  # (H, n, n)
    rows.append(_compare("Y", Y, reference["Y"], tol))
    for h in range(spec.heads):
        rows.append(_compare("A" if spec.heads == 1 else f"A[{h}]", A[h], reference["A_heads"][h], tol))

    # backward: the gradient of <G, Y> for X and every parameter
    grads = numeric.attention_vjp(cast["X"], spec=spec, G=cast["G"], **params)
    symbolic_grads = _symbolic_gradients(spec, values)
    for name in ("X", *spec.parameter_names):
        rows.append(_compare(f"d{name}", grads[name], symbolic_grads[name], tol))
    return ValidationReport(spec=spec, dtype=dtype, seed=seed, rows=tuple(rows))


def _symbolic_gradients(spec: AttentionSpec, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The symbolic gradients of ⟨G, Y⟩, lambdified and evaluated at ``values``: the closed form where it covers
    the spec, else SymPy's ``.diff`` of the forward pass (QK-norm, a sink, an output gate)."""
    result = symbolic.gradients(spec, method=default_gradient_method(spec))
    return result.lambdify()(**values)
