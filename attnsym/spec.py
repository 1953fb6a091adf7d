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
* **positions** — one of four schemes, positions counted from 0 (token ``p`` is row ``p``):

  - ``None``: no positional information (the layer is permutation-equivariant).
  - ``"sinusoidal"`` (Vaswani et al. 2017) adds ``PE`` to ``X`` before the projections,
    ``PE(p, 2i) = sin(p / base^(2i/d_model))``, ``PE(p, 2i+1) = cos(p / base^(2i/d_model))``,
    ``base = position_base`` (default :data:`DEFAULT_POSITION_BASE`, 10000).
  - ``"rope"`` (rotary embeddings, Su et al. 2021, RoFormer) adds nothing to ``X``; after the
    projections each head's query and key of token ``p`` are rotated, ``q~_p = R(p θ) q_p``,
    ``k~_p = R(p θ) k_p`` (values are not rotated). ``R(p θ)`` rotates ``rotary_dims`` of the
    ``d_k`` coordinates in ``rotary_dims / 2`` planes, plane ``i`` by the angle ``p θ_i`` with
    ``θ_i = base^(-2i / rotary_dims)``, ``i = 0 … rotary_dims/2 − 1``, ``base = position_base``;
    a coordinate pair ``(a, b)`` becomes ``(x_a cos − x_b sin, x_b cos + x_a sin)``. Which
    coordinates pair up is ``rope_pairing``: ``"rotate_half"`` (default; Hugging Face
    LLaMA / GPT-NeoX ``rotate_half``) pairs ``a = i`` with ``b = i + rotary_dims/2``;
    ``"interleaved"`` (GPT-J, the RoFormer paper) pairs ``a = 2i`` with ``b = 2i + 1``.
    ``rotary_pct`` (GPT-NeoX's name; Hugging Face's ``partial_rotary_factor``) rotates the first
    ``rotary_dims = int(d_k · rotary_pct)`` coordinates of every head and passes the rest through.
    Then ``q~_m · k~_n = q_mᵀ R((n − m) θ) k_n``: scores depend on positions only through ``n − m``.
  - ``"alibi"`` (Press, Smith & Lewis 2022) adds nothing to ``X`` and rotates nothing; it adds a
    bias to every head's scores after scaling, ``S_h[i, j] = c q_i·k_j − m_h |i − j|``, which for
    the causal layers of the paper (``j ≤ i``) is its ``−m_h (i − j)``; a non-causal layer gets
    the symmetric extension. The slopes are ``m_h = 2^(-8 (h+1) / H)`` for ``H`` heads a power of
    two (``2^-1 … 2^-8`` for 8 heads); otherwise, with ``P`` the largest power of two below
    ``H``, the ``P`` slopes of ``P`` heads followed by the first ``H − P`` of every other slope
    of ``2P`` heads (``2^(-8 (2h+1) / (2P))``), the paper's rule (and BLOOM's).
* **numbering** — what a person reads counts from 1; what Python reads counts from 0 and is
  called an *index*. Symbols and labels: ``x_{1,1}``, ``a_1 … a_n``, ``Z^{(1)}``, "token 1",
  "head 1", "input 1", "layer 1" in derivations, figures, graph files, printed lines and help.
  Indices: ``A[..., h, :, :]`` is head ``h + 1``, graph node ``i`` (attribute ``index``) is token
  ``i + 1``, ``head=``/``layer=`` arguments are indices. The counts from 0 in the mathematics are
  the papers' own: the position ``p`` above (the first token, "token 1", is at ``p = 0``) and
  the head index ``h`` of the ALiBi slopes (head 1 has ``h = 0``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

from ._checks import boolean, integer_at_least, positive_int
from ._positions import POSITION_KINDS, ROPE_PAIRINGS, PositionConventions, alibi_slope_exponents
from .errors import SpecError

__all__ = ["DEFAULT_POSITION_BASE", "POSITION_KINDS", "ROPE_PAIRINGS", "AttentionSpec", "alibi_slope_exponents"]

#: the base of the sinusoidal frequencies (Vaswani et al. 2017); the one place this number is written
DEFAULT_POSITION_BASE = 10000

ScaleName = Literal["sqrt", "none"]


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


def _check_scale_value(scale: Any) -> None:
    """A numeric scale must be a positive finite float (``10**400``, NaN and complex values are not)."""
    text = repr(scale) if len(repr(scale)) <= 40 else f"{repr(scale)[:20]}...({len(repr(scale))} characters)"
    try:
        value = float(scale)
    except (OverflowError, TypeError, ValueError):
        raise SpecError(f"scale must be a positive finite real number that fits a float (got scale={text})") from None
    if not math.isfinite(value) or value <= 0:
        raise SpecError(f"scale must be a positive finite number (got scale={text})")


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
        _check_scale_value(scale)
        return scale
    if hasattr(scale, "free_symbols"):  # a SymPy expression, built by the user, never parsed
        if scale.is_positive is False or scale.is_extended_real is False:
            raise SpecError(f"scale must be positive and real (got scale={scale})")
        if not scale.free_symbols:  # a number (nan, zoo, 1 + I, 10**400 included): it must evaluate finite, > 0
            _check_scale_value(scale)
        return scale
    raise SpecError(
        f"scale must be 'sqrt', 'none', a positive number or a SymPy expression "
        f"(got {scale!r} of type {type(scale).__name__})"
    )


@dataclass(frozen=True)
class AttentionSpec(PositionConventions):
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
    positions : {None, "sinusoidal", "rope", "alibi"}, default None
        The position scheme (module docstring): ``"sinusoidal"`` adds encodings to ``X``
        before projecting; ``"rope"`` rotates each head's queries and keys after projecting;
        ``"alibi"`` adds a per-head linear distance bias to the scores.
    output_projection : bool, optional
        Apply ``W_O`` after concatenating heads. Defaults to ``heads > 1``; it cannot be
        switched off when ``heads > 1``.
    position_base : int, default DEFAULT_POSITION_BASE (10000)
        The base of the sinusoidal and of the rotary frequencies (Hugging Face's ``rope_theta``).
    rope_pairing : {"rotate_half", "interleaved"}, default "rotate_half"
        Which coordinates RoPE rotates together: ``i`` with ``i + rotary_dims/2`` (Hugging Face
        LLaMA / GPT-NeoX) or ``2i`` with ``2i + 1`` (GPT-J, RoFormer). Only with ``positions="rope"``.
    rotary_pct : float, default 1.0
        Fraction of each head's ``d_k`` coordinates that RoPE rotates (GPT-NeoX's ``rotary_pct``):
        the first ``int(d_k * rotary_pct)``, which must be even and at least 2. Only with
        ``positions="rope"``.

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
    >>> rope = AttentionSpec(n=4, d_model=8, heads=2, positions="rope", rope_pairing="interleaved")
    >>> rope.rotary_dims, rope.rope_pairs
    (4, ((0, 1, 0), (2, 3, 1)))
    >>> AttentionSpec(n=2, d_model=10, heads=3)
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: heads must divide d_model when d_k is not given (got d_model=10, heads=3)
    """

    n: int
    d_model: int
    heads: int = 1
    # None means 'derive it': __post_init__ always stores an int, so readers see an int
    d_k: int = None  # type: ignore[assignment]
    d_v: int = None  # type: ignore[assignment]
    causal: bool = False
    mask: Any = None
    scale: Any = "sqrt"
    bias: bool = False
    positions: str | None = None
    output_projection: bool | None = None
    position_base: int = DEFAULT_POSITION_BASE
    rope_pairing: str = "rotate_half"
    rotary_pct: float = 1.0

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)
        n = positive_int("n", self.n)
        d_model = positive_int("d_model", self.d_model)
        heads = positive_int("heads", self.heads)
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
            set_("d_k", positive_int("d_k", self.d_k))
        set_("d_v", self.d_k if self.d_v is None else positive_int("d_v", self.d_v))
        for flag in ("causal", "bias"):
            boolean(flag, getattr(self, flag))
        if self.mask is not None:
            set_("mask", _normalise_mask(self.mask, n))
        set_("scale", _check_scale(self.scale))
        if not any(self.positions is kind or (isinstance(kind, str) and self.positions == kind)
                   for kind in POSITION_KINDS):
            raise SpecError(f"positions must be None, 'sinusoidal', 'rope' or 'alibi' (got {self.positions!r})")
        if self.output_projection is None:
            set_("output_projection", heads > 1)
        elif not isinstance(self.output_projection, bool):
            raise SpecError(f"output_projection must be True, False or None (got {self.output_projection!r})")
        elif heads > 1 and not self.output_projection:
            raise SpecError(
                f"output_projection cannot be False when heads > 1 (got heads={heads}): "
                "the heads are concatenated and mixed by W_O"
            )
        integer_at_least("position_base", self.position_base, 2)
        self._check_position_fields()

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
        import sympy as sp  # lazy: +0.38 s CPU measured; `import attnsym` (spec included) loads no SymPy

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
        import numpy as np  # lazy: +0.07 s CPU measured; `import attnsym` loads no NumPy

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
        scale = {"sqrt": "scale 1/sqrt(d_k)", "none": "unscaled"}[self.scale] if isinstance(self.scale, str) \
            else f"scale {self.scale}"
        parts.append(scale)
        if self.bias:
            parts.append("biases")
        if self.positions == "rope":
            rope = f"RoPE ({self.rope_pairing}, base {self.position_base}"
            rope += f", {self.rotary_dims} of {self.d_k} dims)" if self.rotary_dims != self.d_k else ")"
            parts.append(rope)
        elif self.positions == "alibi":
            parts.append("ALiBi")
        elif self.positions:
            parts.append(f"{self.positions} positions")
        if self.output_projection:
            parts.append("W_O")
        return ", ".join(parts)


def require_rope_spec(spec: Any) -> AttentionSpec:
    """``spec`` if it is an :class:`AttentionSpec` with ``positions="rope"``, else a :class:`SpecError`.

    The one check in front of the RoPE functions of both twins (:mod:`attnsym.symbolic.positions`
    and :mod:`attnsym.numeric.positions`).

    >>> require_rope_spec(AttentionSpec(n=2, d_model=4, positions="rope")).positions
    'rope'
    >>> require_rope_spec(AttentionSpec(n=2, d_model=4))
    Traceback (most recent call last):
    ...
    attnsym.errors.SpecError: spec must have positions='rope' for rotary embeddings (got positions=None)
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    if spec.positions != "rope":
        raise SpecError(f"spec must have positions='rope' for rotary embeddings (got positions={spec.positions!r})")
    return spec
