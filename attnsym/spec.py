"""`AttentionSpec`: the one description of a self-attention layer.

The symbolic, numeric and graph views are all built from a spec, so they cannot disagree
about shapes, masks, scaling or positions. Every convention lives here and only here:

* **shapes** — ``X`` is ``(n, d_model)``; ``W_Q`` and ``W_K`` are ``(d_model, heads*d_k)``;
  ``W_V`` is ``(d_model, heads*d_v)``; ``W_O`` is ``(heads*d_v, d_model)``. Projections are
  right multiplications, ``Q = X W_Q`` (the convention of Vaswani et al. 2017).
* **mask polarity** — ``True`` means *may attend*: query ``i`` may look at key ``j`` iff
  ``allowed[i][j]``. ``causal=True`` allows ``j <= i``. A causal flag and an explicit mask
  combine with logical AND.
* **fully masked rows** — a query that may attend to nothing gets an all-zero row of
  weights and an all-zero output row (the choice of PyTorch's current
  ``scaled_dot_product_attention``). This keeps every value and gradient finite; the
  alternatives (NaN, or a uniform row that attends to forbidden keys) either poison the
  gradients or silently break the mask.
* **scale** — ``"sqrt"`` means ``1/sqrt(d_k)``, ``"none"`` means 1, a number or a SymPy
  expression is used as given.
* **positions** — ``"sinusoidal"`` adds ``PE`` to ``X`` before the projections, with
  ``PE(pos, 2i) = sin(pos / base^(2i/d_model))``, ``PE(pos, 2i+1) = cos(pos / base^(2i/d_model))``,
  positions counted from 0 and ``base = position_base`` (default :data:`DEFAULT_POSITION_BASE`, 10000).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

from .errors import SpecError

__all__ = ["DEFAULT_POSITION_BASE", "AttentionSpec"]

#: the base of the sinusoidal frequencies (Vaswani et al. 2017); the one place this number is written
DEFAULT_POSITION_BASE = 10000

ScaleName = Literal["sqrt", "none"]
_POSITION_KINDS = (None, "sinusoidal")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_positive_int(name: str, value: Any) -> int:
    if not _is_int(value):
        raise SpecError(f"{name} must be a positive integer (got {value!r} of type {type(value).__name__})")
    if value < 1:
        raise SpecError(f"{name} must be a positive integer (got {name}={value})")
    return int(value)


def _normalise_mask(mask: Any, n: int) -> tuple[tuple[bool, ...], ...]:
    """Turn any (n, n) boolean array-like into a hashable tuple of tuples."""
    if isinstance(mask, str):
        raise SpecError(f"mask must be a boolean (n, n) array with True = may attend (got the string {mask!r})")
    dtype = getattr(mask, "dtype", None)
    if dtype is not None:
        if str(dtype) not in ("bool", "torch.bool"):
            raise SpecError(
                f"mask must be a boolean (n, n) array with True = may attend (got dtype {dtype}); "
                "an additive float mask (0 / -inf) converts with mask = (m == 0)"
            )
        mask = mask.tolist()
    try:
        rows = [list(row) for row in mask]
    except TypeError:
        raise SpecError(f"mask must be a boolean (n, n) array with True = may attend (got {mask!r})") from None
    lengths = sorted({len(r) for r in rows})
    if len(rows) != n or lengths != [n]:
        got = (len(rows), lengths[0]) if len(lengths) == 1 else f"{len(rows)} rows of lengths {lengths}"
        raise SpecError(f"mask must have shape (n, n) = ({n}, {n}) (got {got})")
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if not isinstance(v, bool) and type(v).__name__ != "bool_":
                raise SpecError(
                    f"mask must contain booleans (True = may attend); mask[{i}][{j}] is {v!r} "
                    f"of type {type(v).__name__}"
                )
    return tuple(tuple(bool(v) for v in row) for row in rows)


def _check_scale(scale: Any) -> Any:
    if isinstance(scale, str):
        if scale not in ("sqrt", "none"):
            raise SpecError(
                f"scale must be 'sqrt' (1/sqrt(d_k)), 'none' (1), a positive number or a SymPy expression "
                f"(got the string {scale!r}; strings are never parsed as expressions)"
            )
        return scale
    if isinstance(scale, bool):
        raise SpecError(f"scale must be 'sqrt', 'none', a positive number or a SymPy expression (got {scale!r})")
    if isinstance(scale, numbers.Number) and not hasattr(scale, "free_symbols"):
        if isinstance(scale, numbers.Complex) and not isinstance(scale, numbers.Real):
            raise SpecError(f"scale must be a positive real number (got {scale!r})")
        value = float(scale)
        if not math.isfinite(value) or value <= 0:
            raise SpecError(f"scale must be a positive finite number (got scale={scale!r})")
        return scale
    if hasattr(scale, "free_symbols"):  # a SymPy expression, built by the user, never parsed
        if scale.is_positive is False:
            raise SpecError(f"scale must be positive (got scale={scale})")
        return scale
    raise SpecError(
        f"scale must be 'sqrt', 'none', a positive number or a SymPy expression "
        f"(got {scale!r} of type {type(scale).__name__})"
    )


@dataclass(frozen=True)
class AttentionSpec:
    """Sizes and conventions of one (multi-head) self-attention layer.

    Parameters
    ----------
    n : int
        Sequence length (number of tokens).
    d_model : int
        Width of each token vector (columns of ``X``).
    heads : int, default 1
        Number of attention heads.
    d_k : int, optional
        Width of each head's queries and keys; defaults to ``d_model // heads``, in which
        case ``heads`` must divide ``d_model``.
    d_v : int, optional
        Width of each head's values; defaults to ``d_k``.
    causal : bool, default False
        Query ``i`` may attend only to keys ``j <= i``.
    mask : (n, n) boolean array-like, optional
        ``True`` = may attend. Combined with ``causal`` by logical AND.
    scale : {"sqrt", "none"} or number or SymPy expression, default "sqrt"
        Factor applied to ``Q Kᵀ``: ``"sqrt"`` is ``1/sqrt(d_k)``, ``"none"`` is 1.
    bias : bool, default False
        Add bias rows ``b_Q, b_K, b_V`` (and ``b_O`` with an output projection).
    positions : {None, "sinusoidal"}, default None
        Add sinusoidal positional encodings to ``X`` before projecting.
    output_projection : bool, optional
        Apply ``W_O`` after concatenating heads. Defaults to ``heads > 1``; it cannot be
        switched off when ``heads > 1``.
    position_base : int, default DEFAULT_POSITION_BASE (10000)
        The base of the sinusoidal frequencies.

    Raises
    ------
    SpecError
        For any impossible value or combination; the message names the argument.

    Examples
    --------
    >>> spec = AttentionSpec(n=2, d_model=4, heads=2)
    >>> spec.d_k, spec.output_projection
    (2, True)
    >>> spec.shapes["W_Q"], spec.shapes["Y"]
    ((4, 4), (2, 4))
    >>> AttentionSpec(n=3, d_model=2, causal=True).allowed
    ((True, False, False), (True, True, False), (True, True, True))
    >>> AttentionSpec(n=2, d_model=10, heads=3)
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: heads must divide d_model when d_k is not given (got d_model=10, heads=3)
    """

    n: int
    d_model: int
    heads: int = 1
    d_k: int | None = None
    d_v: int | None = None
    causal: bool = False
    mask: Any = None
    scale: Any = "sqrt"
    bias: bool = False
    positions: str | None = None
    output_projection: bool | None = None
    position_base: int = DEFAULT_POSITION_BASE

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)
        n = _check_positive_int("n", self.n)
        d_model = _check_positive_int("d_model", self.d_model)
        heads = _check_positive_int("heads", self.heads)
        set_("n", n)
        set_("d_model", d_model)
        set_("heads", heads)
        if self.d_k is None:
            if d_model % heads:
                raise SpecError(
                    f"heads must divide d_model when d_k is not given (got d_model={d_model}, heads={heads})"
                )
            set_("d_k", d_model // heads)
        else:
            set_("d_k", _check_positive_int("d_k", self.d_k))
        set_("d_v", self.d_k if self.d_v is None else _check_positive_int("d_v", self.d_v))
        for flag in ("causal", "bias"):
            if not isinstance(getattr(self, flag), bool):
                raise SpecError(f"{flag} must be True or False (got {getattr(self, flag)!r})")
        if self.mask is not None:
            set_("mask", _normalise_mask(self.mask, n))
        set_("scale", _check_scale(self.scale))
        if self.positions not in _POSITION_KINDS:
            raise SpecError(f"positions must be None or 'sinusoidal' (got {self.positions!r})")
        if self.output_projection is None:
            set_("output_projection", heads > 1)
        elif not isinstance(self.output_projection, bool):
            raise SpecError(f"output_projection must be True, False or None (got {self.output_projection!r})")
        elif heads > 1 and not self.output_projection:
            raise SpecError(
                f"output_projection cannot be False when heads > 1 (got heads={heads}): "
                "the heads are concatenated and mixed by W_O"
            )
        if not _is_int(self.position_base) or self.position_base < 2:
            raise SpecError(f"position_base must be an integer >= 2 (got {self.position_base!r})")

    # ------------------------------------------------------------------ derived sizes
    @property
    def inner_qk(self) -> int:
        """Total width of queries/keys over all heads, ``heads * d_k``."""
        return self.heads * self.d_k

    @property
    def inner_v(self) -> int:
        """Total width of values over all heads, ``heads * d_v``."""
        return self.heads * self.d_v

    @property
    def d_out(self) -> int:
        """Width of the output ``Y``: ``d_model`` with ``W_O``, else ``heads * d_v``."""
        return self.d_model if self.output_projection else self.inner_v

    @property
    def shapes(self) -> dict[str, tuple[int, int]]:
        """Shape of every matrix of the layer, by name (per-head shapes for Q, K, V, S, A)."""
        n, d = self.n, self.d_model
        shapes = {
            "X": (n, d),
            "W_Q": (d, self.inner_qk),
            "W_K": (d, self.inner_qk),
            "W_V": (d, self.inner_v),
            "Q": (n, self.d_k),
            "K": (n, self.d_k),
            "V": (n, self.d_v),
            "S": (n, n),
            "A": (n, n),
            "Y": (n, self.d_out),
        }
        if self.output_projection:
            shapes["W_O"] = (self.inner_v, d)
        if self.bias:
            shapes.update(b_Q=(1, self.inner_qk), b_K=(1, self.inner_qk), b_V=(1, self.inner_v))
            if self.output_projection:
                shapes["b_O"] = (1, d)
        return shapes

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of the learned parameters, in a fixed order."""
        names = ["W_Q", "W_K", "W_V"]
        if self.output_projection:
            names.append("W_O")
        if self.bias:
            names += ["b_Q", "b_K", "b_V"] + (["b_O"] if self.output_projection else [])
        return tuple(names)

    @property
    def parameter_count(self) -> int:
        """Number of learned scalars (weights and biases)."""
        return sum(r * c for name, (r, c) in self.shapes.items() if name in self.parameter_names)

    # ------------------------------------------------------------------ conventions
    @property
    def scale_expr(self):
        """The score scale as an exact SymPy expression (``1/sqrt(d_k)`` for ``"sqrt"``)."""
        import sympy as sp

        if self.scale == "sqrt":
            return 1 / sp.sqrt(sp.Integer(self.d_k))
        if self.scale == "none":
            return sp.Integer(1)
        if isinstance(self.scale, float):
            return sp.Float(self.scale)
        return sp.sympify(self.scale)  # a number or a SymPy object, never a string

    @property
    def scale_float(self) -> float:
        """The score scale as a Python float (raises if the scale is a free symbol)."""
        if self.scale == "sqrt":
            return 1.0 / math.sqrt(self.d_k)
        if self.scale == "none":
            return 1.0
        if hasattr(self.scale, "free_symbols") and self.scale.free_symbols:
            raise SpecError(f"scale={self.scale} is symbolic; give a number to evaluate numerically")
        return float(self.scale)

    @property
    def allowed(self) -> tuple[tuple[bool, ...], ...] | None:
        """``allowed[i][j]`` — may query ``i`` attend to key ``j``? ``None`` when all may."""
        if not self.causal and self.mask is None:
            return None
        n = self.n
        return tuple(
            tuple((not self.causal or j <= i) and (self.mask is None or self.mask[i][j]) for j in range(n))
            for i in range(n)
        )

    def allowed_array(self):
        """The allowed pattern as an ``(n, n)`` NumPy bool array, or ``None`` when all may attend."""
        import numpy as np

        allowed = self.allowed
        return None if allowed is None else np.array(allowed, dtype=bool)

    @property
    def fully_masked_rows(self) -> tuple[int, ...]:
        """Indices of queries that may attend to no key (their weights and outputs are 0)."""
        allowed = self.allowed
        if allowed is None:
            return ()
        return tuple(i for i, row in enumerate(allowed) if not any(row))

    def replace(self, **changes: Any) -> AttentionSpec:
        """A copy with some fields changed (validated again).

        >>> AttentionSpec(n=2, d_model=2).replace(n=3).n
        3
        """
        if "heads" in changes and "d_k" not in changes:
            changes["d_k"] = None
            changes.setdefault("d_v", None)
        if "heads" in changes and "output_projection" not in changes:
            changes["output_projection"] = None
        if "n" in changes and self.mask is not None and "mask" not in changes:
            raise SpecError(f"n cannot change from {self.n} to {changes['n']} while an explicit (n, n) mask is set")
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """One line that says what this layer is.

        >>> AttentionSpec(n=4, d_model=8, heads=2, causal=True).describe()
        'n=4, d_model=8, heads=2 (d_k=4, d_v=4), causal, scale 1/sqrt(d_k), W_O'
        """
        parts = [f"n={self.n}", f"d_model={self.d_model}", f"heads={self.heads} (d_k={self.d_k}, d_v={self.d_v})"]
        if self.causal:
            parts.append("causal")
        if self.mask is not None:
            parts.append("explicit mask")
        scale = {"sqrt": "scale 1/sqrt(d_k)", "none": "unscaled"}.get(self.scale) if isinstance(self.scale, str) \
            else f"scale {self.scale}"
        parts.append(scale)
        if self.bias:
            parts.append("biases")
        if self.positions:
            parts.append(f"{self.positions} positions")
        if self.output_projection:
            parts.append("W_O")
        return ", ".join(parts)
