r"""How big a symbolic computation will be, estimated before anything is built.

SymPy happily starts on a 64-token attention layer and never finishes printing it. Every
symbolic builder of attnsym therefore first estimates the size of what it is asked for and
refuses, with a :class:`~attnsym.errors.SizeLimitError`, beyond a limit.

The estimate counts *terms*: the leaves of the unexpanded expression trees (what printing,
``lambdify`` and differentiation walk). For one head with ``m = d_model``:

* one entry of ``Q``, ``K`` or ``V``: ``t_in = m`` products (``2m`` with sinusoidal positions,
  since each ``x`` becomes ``x + PE``), plus 1 with a bias;
* with RoPE a rotated query or key entry is ``q_a cos − q_b sin``: ``t_QK = 2 t_in + 2``
  (``t_QK = t_in`` otherwise);
* one score ``S_ij``: ``t_S = 2 d_k t_QK`` (``d_k`` products of a ``Q`` and a ``K`` entry),
  plus 1 for an ALiBi bias;
* one weight ``A_ij = exp(S_ij) / sum_k exp(S_ik)``: ``t_A = (n_i + 1) t_S`` where ``n_i`` is
  the number of keys query ``i`` may attend to (``n`` without a mask);
* one entry of ``Z = A V``: ``t_Z = sum_j (t_A + t_V)`` over the allowed keys;
* one entry of ``Y``: ``t_Y = heads d_v (t_Z + 1)`` (+1 with ``b_O``) with ``W_O``, else ``t_Z``.

The total is the sum over all entries of ``A`` (every head) and ``Y``. Building is cheap
(SymPy shares subexpressions); printing, ``lambdify`` and differentiation walk the trees, and
take seconds near the limit. The default limit, :data:`DEFAULT_MAX_TERMS` = 500 000, admits
``n = d_model = 6`` with one head (about 130 000 terms) or two heads (about 350 000, some
6 s to lambdify); ``n = d_model = 8`` (about 670 000) is refused. Raise the limit with
``max_terms=`` (``float("inf")`` disables it) or use :mod:`attnsym.numeric` for numbers at
larger sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._checks import instance_of, one_of
from .._limits import DEFAULT_MAX_GRADIENT_TERMS, DEFAULT_MAX_TERMS
from ..errors import SpecError
from ..spec import AttentionSpec
from ._guard import approx, enforce_limit
from .parameters import parameter_shapes
from .position_hooks import position_hooks

__all__ = [
    "DEFAULT_MAX_GRADIENT_TERMS",
    "DEFAULT_MAX_TERMS",
    "GRADIENT_METHODS",
    "SymbolicCost",
    "check_gradient_spec",
    "default_gradient_method",
    "enforce_limit",
    "estimate_cost",
    "gradient_cost",
]

#: the routes of :func:`attnsym.symbolic.gradients`
GRADIENT_METHODS = ("closed_form", "elementwise", "matrix")


@dataclass(frozen=True)
class SymbolicCost:
    """Estimated size of the symbolic attention layer of a spec (see the module docstring).

    Attributes
    ----------
    spec : AttentionSpec
    entries : dict
        Number of scalar entries per matrix (``"A"`` counts every head).
    terms_per_entry : dict
        Estimated terms in one entry of ``"Q"``, ``"S"``, ``"A"``, ``"Z"``, ``"Y"`` (largest row).
    terms_A, terms_Y : int
        Estimated terms over all entries of the weights ``A`` (every head) and the output ``Y``.
    """

    spec: AttentionSpec
    entries: dict
    terms_per_entry: dict
    terms_A: int
    terms_Y: int

    @property
    def total(self) -> int:
        """``terms_A + terms_Y``, the number compared with the limit."""
        return self.terms_A + self.terms_Y

    def check(self, max_terms: float | None = None, *, what: str = "symbolic attention") -> SymbolicCost:
        """Raise :class:`SizeLimitError` when :attr:`total` exceeds ``max_terms``; return self.

        Examples
        --------
        >>> estimate_cost(AttentionSpec(n=2, d_model=2)).check().total
        304
        >>> estimate_cost(AttentionSpec(n=64, d_model=64)).check()
        Traceback (most recent call last):
        ...
        attnsym.errors.SizeLimitError: symbolic attention for n=64, d_model=64, ... would build about 1.4e+11 terms ...
        """
        enforce_limit(self.total, max_terms, what=f"{what} for {self.spec.describe()}",
                      detail=f"A: {approx(self.terms_A)}, Y: {approx(self.terms_Y)}")
        return self


def estimate_cost(spec: AttentionSpec) -> SymbolicCost:
    """Estimate, without building anything, the size of ``attention(spec)``.

    Parameters
    ----------
    spec : AttentionSpec

    Returns
    -------
    SymbolicCost

    Raises
    ------
    SpecError
        ``spec`` is not an :class:`~attnsym.AttentionSpec`.

    Examples
    --------
    >>> cost = estimate_cost(AttentionSpec(n=2, d_model=2))
    >>> cost.terms_per_entry["S"], cost.terms_A, cost.terms_Y
    (8, 96, 208)
    >>> estimate_cost(AttentionSpec(n=64, d_model=64)).total > DEFAULT_MAX_TERMS
    True
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {spec!r} of type {type(spec).__name__})")
    n, m = spec.n, spec.d_model
    hooks = position_hooks(spec)
    t_in = hooks.input_terms(m) + (1 if spec.bias else 0)
    t_v, t_gate = t_in, (hooks.input_terms(m) + 2 if spec.output_gate else 0)  # σ(x·w_G) = 1/(1 + exp(−x·w_G))
    if spec.kv_latent_rank is not None:  # a normed latent entry c = (x·w) g / sqrt(Σ (x·w)² / r + eps), r of them
        def latent(r: int) -> int:
            return r * ((r + 1) * t_in + 2)

        t_v = latent(spec.kv_latent_rank)
        t_in = max(t_v, latent(spec.q_latent_rank) if spec.q_latent_rank else t_in)  # the queries and keys
    t_norm = (spec.d_k + 1) * t_in + 2 if spec.qk_norm else t_in  # x g / sqrt(Σ x² / d_k + eps): the row's squares
    t_qk = hooks.query_key_terms(t_norm)
    t_s = 2 * spec.d_k * t_qk + hooks.score_terms() + (2 if spec.softcap is not None else 0)
    # a window only removes keys: the counts below (of the causal or full pattern) bound it from above
    # rows allow k_i keys; only the sums s1 = Σ k_i, s2 = Σ k_i² and max k_i enter, in closed form
    # (O(1) in n) without an explicit mask: k_i = n, or k_i = i + 1 when causal
    allowed = spec.allowed if spec.mask is not None else None
    if allowed is not None:
        keys = [sum(row) for row in allowed]  # the given (n, n) mask is already this big
        s1, s2, k_max = sum(keys), sum(k * k for k in keys), max(keys)
    elif spec.causal:
        s1, s2, k_max = n * (n + 1) // 2, n * (n + 1) * (2 * n + 1) // 6, n
    else:
        s1, s2, k_max = n * n, n * n * n, n
    # a row with k keys: t_A = (k + 1) t_S per weight (0 for k = 0), t_Z = k (t_A + t_in)
    def t_z(k: int) -> int:
        return k * ((k + 1) * t_s + t_v) + t_gate

    sum_t_z = (s2 + s1) * t_s + s1 * t_v + n * t_gate
    if spec.output_projection:
        bias = 1 if spec.bias else 0
        sum_t_y, max_t_y = spec.inner_v * (sum_t_z + n) + n * bias, spec.inner_v * (t_z(k_max) + 1) + bias
    else:
        sum_t_y, max_t_y = sum_t_z, t_z(k_max)
    terms_a = spec.heads * (s2 + s1) * t_s
    terms_y = spec.d_out * sum_t_y
    return SymbolicCost(
        spec=spec,
        entries={"Q": n * spec.inner_qk, "A": spec.heads * n * n, "Y": n * spec.d_out},
        terms_per_entry={"Q": t_in, "S": t_s, "A": (k_max + 1) * t_s if k_max else 0, "Z": t_z(k_max), "Y": max_t_y},
        terms_A=terms_a,
        terms_Y=terms_y,
    )


# ------------------------------------------------------------------------------------- gradients
def gradient_cost(spec: AttentionSpec, method: str = "closed_form") -> int:
    r"""Estimated size, in expression terms, of a gradient derivation (checked by the size guard).

    ``"closed_form"``: the leaves of the straight-line program (forward and backward), about
    :math:`18\, n\, d_{model}\, h d_k + h n^2 (6 d_k + 8 d_v + 12)` plus the output projection's
    share (with ``d_v = d_k``) — a polynomial of low degree, unlike the trees of the elementwise route.
    ``"elementwise"``: the terms of the unexpanded forward pass
    (:func:`~attnsym.symbolic.estimate_cost`) times the number of input entries
    differentiated, since ``.diff`` walks the whole tree once per entry. ``"matrix"``: four
    times the terms of the forward pass (the identities multiply written-out matrices).

    Examples
    --------
    >>> gradient_cost(AttentionSpec(n=2, d_model=2)) < gradient_cost(AttentionSpec(n=8, d_model=8))
    True
    >>> gradient_cost(AttentionSpec(n=3, d_model=3), "elementwise") > gradient_cost(AttentionSpec(n=3, d_model=3))
    True
    """
    check_gradient_spec(spec, method)
    n, m, h, dk, dv = spec.n, spec.d_model, spec.heads, spec.d_k, spec.d_v
    if method == "elementwise":
        entries = sum(r * c for r, c in (spec.shapes["X"], *parameter_shapes(spec).values()))
        return estimate_cost(spec).total * entries
    if method == "matrix":  # the written-out forward pass, then a few matrix products over it
        return 4 * estimate_cost(spec).total
    qkv = n * (2 * h * dk + h * dv) * (2 * m + 1)
    scores = h * n * n * (2 * dk + 6)
    mixing = h * n * dv * 2 * n
    out = n * spec.d_out * 2 * h * dv if spec.output_projection else 0
    backward = 2 * (qkv + out) + h * n * n * (4 * dv + 6) + 2 * h * n * n * (2 * dk) + h * n * dv * 2 * n
    return qkv + scores + mixing + out + backward


def check_gradient_spec(spec: Any, method: str = "closed_form") -> AttentionSpec:
    """``spec`` if ``method`` can differentiate it (RoPE: not the ``"matrix"`` route, whose identities have no rotation)."""
    instance_of("spec", spec, AttentionSpec)
    one_of("method", method, GRADIENT_METHODS)
    if method == "matrix" and position_hooks(spec).rotates:
        raise SpecError("method='matrix' has no rotation in its MatrixSymbol identities, so it does not support "
                        f"positions={spec.positions!r}; use method='closed_form' or 'elementwise'")
    if method == "matrix":
        unsupported = [f"{name}={value!r}" for name, value, plain in (
            ("kv_heads", spec.kv_heads, spec.heads), ("softcap", spec.softcap, None), ("qk_norm", spec.qk_norm, False))
            if value != plain]
        if unsupported:
            raise SpecError(f"method='matrix' has one head's MatrixSymbol identities without {', '.join(unsupported)}; "
                            "use method='closed_form' or 'elementwise'")
    if spec.qk_norm and method != "elementwise":
        raise SpecError(f"method={method!r} has no QK-norm step (got qk_norm=True); use method='elementwise'")
    if method != "elementwise":  # a chunk is only a mask; the closed form has a sink and a gate, no latent
        spec.refuse_variants(f"method={method!r} (use method='elementwise')", implemented=CLOSED_FORM_VARIANTS[method])
    return spec


#: the variants (:attr:`attnsym.AttentionSpec.variants`) each closed route differentiates
CLOSED_FORM_VARIANTS: dict[str, tuple[str, ...]] = {"closed_form": ("chunk", "sink", "output_gate"),
                                                    "matrix": ("chunk",)}


def default_gradient_method(spec: AttentionSpec) -> str:
    """``"closed_form"`` where its identities cover ``spec``, else ``"elementwise"`` (QK-norm, a latent: only
    SymPy's ``.diff`` of the forward pass differentiates them).

    >>> default_gradient_method(AttentionSpec(n=2, d_model=2, sink=True))
    'closed_form'
    >>> default_gradient_method(AttentionSpec(n=2, d_model=2, qk_norm=True))
    'elementwise'
    """
    instance_of("spec", spec, AttentionSpec)
    if spec.qk_norm or any(name not in CLOSED_FORM_VARIANTS["closed_form"] for name in spec.variants):
        return "elementwise"
    return "closed_form"


def check_gradient_size(spec: AttentionSpec, method: str, max_terms: float | None) -> None:
    """Refuse, before anything is built, a gradient derivation above ``max_terms`` (see :func:`gradient_cost`)."""
    terms = gradient_cost(spec, method)
    limit = max_terms
    if limit is None:
        limit = DEFAULT_MAX_GRADIENT_TERMS if method == "closed_form" else DEFAULT_MAX_TERMS
    enforce_limit(terms, limit, what=f"{method} gradients for {spec.describe()}", alternative="attnsym.numeric.attention_vjp")
