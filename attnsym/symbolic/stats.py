"""Exact moments behind the ``1/sqrt(d_k)`` scaling: mean, variance and fourth cumulant of q·k.

The score of one query–key pair is the sum ``q·k = sum_{i=1}^{d} q_i k_i``. Its moments follow
from three facts, used here directly instead of ``sympy.stats`` (which cannot handle a sum of a
symbolic number of terms):

* **linearity** — ``E[sum_i X_i] = d E[X_1]``;
* **independence across i** — cumulants add: ``kappa_r(sum_i X_i) = d kappa_r(X_1)``;
* **independence of q_i and k_i** — raw moments multiply: ``E[(q_i k_i)^r] = E[q_i^r] E[k_i^r]``.

A component distribution is a :class:`Law`: its raw moments ``E[x], E[x^2], ...`` as exact SymPy
expressions (:func:`normal`, :func:`uniform`, :func:`rademacher`, or :func:`general` with
symbolic mean, variance and central moments). :func:`dot_product_moments` returns the moments
of ``c * q·k`` for a symbolic ``d`` (default the symbol :data:`d`), and the steps of the
derivation for a report.

>>> m = dot_product_moments()                 # q, k ~ N(0, I_d), independent
>>> m.mean, m.variance
(0, d)
>>> dot_product_moments(scale=1 / sp.sqrt(d)).variance
1
>>> dot_product_moments(same=True).variance   # q = k: the diagonal of Q Q^T
2*d
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Any

import sympy as sp

from .._checks import non_negative_int, one_of
from .._exact import exact
from ..errors import SpecError

__all__ = [
    "INITIALISATIONS",
    "DotProductMoments",
    "Law",
    "ScoreMoments",
    "d",
    "dot_product_moments",
    "general",
    "general_dot_product_moments",
    "init_variance",
    "normal",
    "rademacher",
    "scale_variants",
    "score_moments",
    "uniform",
]

#: the dimension of q and k, a positive integer symbol
d = sp.Symbol("d", positive=True, integer=True)


def _step_eq(label: sp.Symbol, value: Any) -> sp.Eq:
    """``label = value`` for a derivation step, unevaluated.

    ``label`` is a fresh display symbol that ``value`` does not contain, so SymPy could not decide the
    equation anyway and would return this same object; asking it (an assumptions query per step) was
    ~0.9 s of the variance-scaling check.
    """
    return sp.Eq(label, value, evaluate=False)


def _exact(value: Any, name: str) -> sp.Expr:
    """An exact SymPy number or expression; floats become Rationals, strings are refused."""
    return exact(name, value, floats="rational")


@dataclass(frozen=True)
class Law:
    """The distribution of one component, described by its raw moments ``E[x^r]``, ``r = 1..len(moments)``.

    Attributes
    ----------
    name : str
        A short description used in reports, e.g. ``"N(0, 1)"``.
    moments : tuple of sympy.Expr
        ``(E[x], E[x^2], ..., E[x^R])``; moments of higher order are unknown to this law.
    """

    name: str
    moments: tuple[sp.Expr, ...]

    @property
    def order(self) -> int:
        """The highest raw moment this law knows."""
        return len(self.moments)

    def raw_moment(self, r: int) -> sp.Expr:
        """``E[x^r]`` (``r = 0`` gives 1)."""
        r = non_negative_int("r", r)
        if r == 0:
            return sp.Integer(1)
        if r > self.order:
            raise SpecError(
                f"the law {self.name} knows raw moments up to order {self.order} (asked for order {r}); "
                "give more moments, e.g. normal(...) knows 8"
            )
        return self.moments[r - 1]

    @property
    def mean(self) -> sp.Expr:
        return self.raw_moment(1)

    @property
    def variance(self) -> sp.Expr:
        return sp.expand(self.raw_moment(2) - self.raw_moment(1) ** 2)

    def central_moment(self, r: int) -> sp.Expr:
        """``E[(x - E[x])^r]`` from the raw moments (binomial expansion)."""
        mu = self.mean
        return sp.expand(sum(comb(r, j) * self.raw_moment(j) * (-mu) ** (r - j) for j in range(r + 1)))

    def cumulants(self, upto: int = 4) -> tuple[sp.Expr, ...]:
        """The cumulants ``kappa_1 .. kappa_upto`` (``upto <= 4``) from the raw moments."""
        if upto not in (1, 2, 3, 4):
            raise SpecError(f"upto must be 1, 2, 3 or 4 (got {upto!r})")
        m = [self.raw_moment(r) for r in range(1, upto + 1)]
        k = [m[0]]
        if upto >= 2:
            k.append(m[1] - m[0] ** 2)
        if upto >= 3:
            k.append(m[2] - 3 * m[1] * m[0] + 2 * m[0] ** 3)
        if upto >= 4:
            k.append(m[3] - 4 * m[2] * m[0] - 3 * m[1] ** 2 + 12 * m[1] * m[0] ** 2 - 6 * m[0] ** 4)
        return tuple(sp.expand(v) for v in k)

    def times(self, other: Law) -> Law:
        """The law of ``x * y`` for independent ``x`` (this law) and ``y``: raw moments multiply."""
        order = min(self.order, other.order)
        return Law(f"({self.name})·({other.name})",
                   tuple(sp.expand(self.raw_moment(r) * other.raw_moment(r)) for r in range(1, order + 1)))

    def squared(self) -> Law:
        """The law of ``x**2``: ``E[(x^2)^r] = E[x^(2r)]``."""
        return Law(f"({self.name})²", tuple(self.raw_moment(2 * r) for r in range(1, self.order // 2 + 1)))

    def scaled(self, c: Any) -> Law:
        """The law of ``c * x``."""
        c = _exact(c, "c")
        return Law(f"{c}·({self.name})", tuple(sp.expand(c**r * self.raw_moment(r)) for r in range(1, self.order + 1)))


def normal(mean: Any = 0, variance: Any = 1, *, order: int = 8) -> Law:
    """``N(mean, variance)``: ``E[x^r] = sum_{j even} C(r, j) mean^(r-j) sigma^j (j-1)!!``.

    >>> normal().moments[:4]
    (0, 1, 0, 3)
    >>> mu, s2 = sp.symbols("mu sigma2", positive=True)
    >>> sp.factor(normal(mu, s2).central_moment(4))
    3*sigma2**2
    """
    mu, var = _exact(mean, "mean"), _exact(variance, "variance")
    if var.is_negative:
        raise SpecError(f"variance must be non-negative (got {variance!r})")
    sigma = sp.sqrt(var)
    moments = tuple(
        sp.expand(sum(comb(r, j) * mu ** (r - j) * sigma**j * sp.factorial2(j - 1) for j in range(0, r + 1, 2)))
        for r in range(1, order + 1)
    )
    return Law(f"N({mu}, {var})", moments)


def uniform(low: Any = -1, high: Any = 1, *, order: int = 8) -> Law:
    """``U(low, high)``: ``E[x^r] = (high^(r+1) - low^(r+1)) / ((r+1)(high - low))``.

    >>> uniform(-1, 1).variance
    1/3
    """
    a, b = _exact(low, "low"), _exact(high, "high")
    if (b - a).is_positive is False:
        raise SpecError(f"high must exceed low (got low={low!r}, high={high!r})")
    moments = tuple(sp.simplify((b ** (r + 1) - a ** (r + 1)) / ((r + 1) * (b - a))) for r in range(1, order + 1))
    return Law(f"U({a}, {b})", moments)


def rademacher(*, order: int = 8) -> Law:
    """±1 with probability 1/2 each: mean 0, variance 1, the smallest fourth moment possible (1).

    >>> rademacher().moments[:4]
    (0, 1, 0, 1)
    """
    return Law("±1", tuple(sp.Integer(1 - r % 2) for r in range(1, order + 1)))


def general(mean: Any = None, variance: Any = None, mu3: Any = None, mu4: Any = None, *, name: str = "x") -> Law:
    """Any law with mean, variance and third/fourth central moments (symbols by default).

    The defaults are the symbols ``mu_x, sigma_x**2, m3_x, m4_x``; only raw moments up to order
    4 are known, enough for the mean and variance of q·k and for the variance of q·q.

    >>> x = general(name="q")
    >>> x.mean, x.variance
    (mu_q, sigma_q**2)
    """
    mu = sp.Symbol(f"mu_{name}", real=True) if mean is None else _exact(mean, "mean")
    var = sp.Symbol(f"sigma_{name}", positive=True) ** 2 if variance is None else _exact(variance, "variance")
    m3 = sp.Symbol(f"m3_{name}", real=True) if mu3 is None else _exact(mu3, "mu3")
    m4 = sp.Symbol(f"m4_{name}", positive=True) if mu4 is None else _exact(mu4, "mu4")
    raw = (mu, var + mu**2, m3 + 3 * mu * var + mu**3, m4 + 4 * mu * m3 + 6 * mu**2 * var + mu**4)
    return Law(f"({mu}, {var})", tuple(sp.expand(v) for v in raw))


@dataclass(frozen=True)
class DotProductMoments:
    """Exact moments of ``c * q·k`` (or ``c * q·q``) for ``d`` i.i.d. component pairs.

    Attributes
    ----------
    mean, variance : sympy.Expr
        ``E[c q·k]`` and ``Var[c q·k]``.
    kappa4 : sympy.Expr or None
        The fourth cumulant (None when the laws do not know enough moments).
    term : Law
        The law of one term ``q_i k_i`` (or ``q_i**2``).
    d, scale : sympy.Expr
    steps : tuple of (str, sympy object)
        The derivation, as titled equations.
    """

    mean: sp.Expr
    variance: sp.Expr
    kappa4: sp.Expr | None
    term: Law
    d: sp.Expr
    scale: sp.Expr
    steps: tuple[tuple[str, Any], ...] = field(default=(), repr=False)

    @property
    def fourth_central(self) -> sp.Expr | None:
        """``E[(S - E S)^4] = kappa_4 + 3 Var^2``."""
        return None if self.kappa4 is None else sp.expand(self.kappa4 + 3 * self.variance**2)

    @property
    def kurtosis(self) -> sp.Expr | None:
        """``E[(S - E S)^4] / Var^2`` (3 for a Gaussian)."""
        return None if self.kappa4 is None else sp.cancel(self.fourth_central / self.variance**2)

    def variance_of_sample_variance(self, n_samples: Any) -> sp.Expr | None:
        """Asymptotic ``Var[s^2] = (mu_4 - sigma^4) / N`` of the sample variance of ``N`` draws."""
        if self.kappa4 is None:
            return None
        return sp.cancel((self.fourth_central - self.variance**2) / _exact(n_samples, "n_samples"))

    def at(self, **values: Any) -> DotProductMoments:
        """Substitute values for symbols (``d=64``, ``mu_q=0`` ...)."""
        subs = {sp.Symbol(k, **_assumptions(self, k)): _exact(v, k) for k, v in values.items()}

        def s(e):
            return None if e is None else sp.simplify(e.xreplace(subs))

        return DotProductMoments(s(self.mean), s(self.variance), s(self.kappa4), self.term, s(self.d), s(self.scale), self.steps)


def _assumptions(m: DotProductMoments, name: str) -> dict[str, bool]:
    for expr in (m.mean, m.variance, m.d, m.scale, *(m.term.moments)):
        for sym in sp.sympify(expr).free_symbols:
            if sym.name == name:
                return sym.assumptions0
    raise SpecError(f"no symbol named {name!r} in these moments")


def dot_product_moments(
    d: Any = d,
    q: Law | None = None,
    k: Law | None = None,
    *,
    same: bool = False,
    scale: Any = 1,
) -> DotProductMoments:
    """Exact mean, variance and fourth cumulant of ``scale * q·k`` for ``d`` components.

    Parameters
    ----------
    d : int or sympy.Expr, default the symbol ``d``
        Number of components.
    q, k : Law, default ``normal(0, 1)``
        Laws of the components ``q_i`` and ``k_i`` (i.i.d. over ``i``, ``q`` independent of ``k``).
    same : bool, default False
        ``k = q`` (the diagonal of ``Q K^T`` when ``W_Q = W_K``): the terms are ``q_i**2``.
    scale : number or sympy.Expr, default 1
        Multiplies the score, e.g. ``1/sqrt(d)``.

    Returns
    -------
    DotProductMoments

    Examples
    --------
    >>> m = dot_product_moments(scale=1 / sp.sqrt(d))
    >>> m.mean, m.variance, m.kappa4       # kurtosis 3 + 6/d: Gaussian only as d -> oo
    (0, 1, 6/d)
    >>> dot_product_moments(q=rademacher(), k=rademacher()).kappa4
    -2*d
    """
    if isinstance(d, bool) or (isinstance(d, int) and d < 1):
        raise SpecError(f"d must be a positive integer or a SymPy expression (got {d!r})")
    d_expr = _exact(d, "d")
    q = normal() if q is None else q
    if same:
        if k is not None:
            raise SpecError("give k=None with same=True (k is q)")
        term = q.squared()
    else:
        k = normal() if k is None else k
        term = q.times(k)
    c = _exact(scale, "scale")
    kappa = term.cumulants(4) if term.order >= 4 else term.cumulants(term.order) if term.order >= 2 else None
    if kappa is None:
        raise SpecError(f"the term law {term.name} needs at least two raw moments for a variance")
    mean = sp.expand(c * d_expr * kappa[0])  # polynomials in the moments: expand is exact and fast
    variance = sp.expand(c**2 * d_expr * kappa[1])
    kappa4 = sp.expand(c**4 * d_expr * kappa[3]) if len(kappa) >= 4 else None
    X = sp.Symbol(r"X_1")
    steps = (
        ("one term", _step_eq(X, sp.Symbol("q_1") ** 2 if same else sp.Symbol("q_1") * sp.Symbol("k_1"))),
        ("linearity: E[S] = d E[X_1]", _step_eq(sp.Symbol(r"\mathbb{E}[S]"), sp.expand(d_expr * kappa[0]))),
        ("independence over i: Var[S] = d Var[X_1]", _step_eq(sp.Symbol(r"\operatorname{Var}[S]"),
                                                            sp.expand(d_expr * kappa[1]))),
        ("scaled score", _step_eq(sp.Symbol(r"\operatorname{Var}[c S]"), variance)),
    )
    return DotProductMoments(mean, variance, kappa4, term, d_expr, c, steps)


def general_dot_product_moments(*, same: bool = False, scale: Any = 1) -> DotProductMoments:
    """Moments of ``scale * q·k`` for symbolic means, variances and central moments.

    >>> m = general_dot_product_moments()
    >>> m.mean
    d*mu_k*mu_q
    >>> sp.factor(m.variance)
    d*(mu_k**2*sigma_q**2 + mu_q**2*sigma_k**2 + sigma_k**2*sigma_q**2)
    >>> sp.factor(general_dot_product_moments(same=True).variance)
    d*(4*m3_q*mu_q + m4_q + 4*mu_q**2*sigma_q**2 - sigma_q**4)
    """
    q = general(name="q")
    return dot_product_moments(d, q, None if same else general(name="k"), same=same, scale=scale)


# ----------------------------------------------------------------------------- real score matrices

#: weight initialisations: name -> (description, variance as a function of fan_in, fan_out)
INITIALISATIONS: dict[str, tuple[str, Any]] = {
    "xavier": ("Xavier/Glorot (normal or uniform): Var = 2/(fan_in + fan_out)", lambda fi, fo: 2 / (fi + fo)),
    "he": ("He/Kaiming (normal or uniform, ReLU gain): Var = 2/fan_in", lambda fi, fo: 2 / fi),
    "lecun": ("LeCun: Var = 1/fan_in", lambda fi, fo: 1 / fi),
    "normal-0.02": ("N(0, 0.02²) (GPT-2, BERT): Var = 4e-4", lambda fi, fo: sp.Rational(1, 2500)),
    "pytorch-linear": ("torch.nn.Linear default, U(±1/√fan_in): Var = 1/(3 fan_in)", lambda fi, fo: 1 / (3 * fi)),
}


def init_variance(name: str, fan_in: Any, fan_out: Any) -> sp.Expr:
    """The weight variance of a named initialisation (see :data:`INITIALISATIONS`).

    >>> init_variance("xavier", 512, 64)
    1/288
    """
    name = one_of("name", name, tuple(INITIALISATIONS))
    return sp.nsimplify(INITIALISATIONS[name][1](_exact(fan_in, "fan_in"), _exact(fan_out, "fan_out")))


@dataclass(frozen=True)
class ScoreMoments:
    """Exact mean and variance of one entry of ``c * (X W_Q)(X W_K)^T``.

    ``off_diagonal`` is an entry ``i != j`` (independent tokens); ``diagonal`` is ``i == j``
    (query and key from the same token, so ``q`` and ``k`` share ``x``).
    """

    off_diagonal_mean: sp.Expr
    off_diagonal_variance: sp.Expr
    diagonal_mean: sp.Expr
    diagonal_variance: sp.Expr
    steps: tuple[tuple[str, Any], ...] = field(default=(), repr=False)


def score_moments(d_model: Any, d_k: Any, var_x: Any = 1, var_wq: Any = 1, var_wk: Any = 1, *, scale: Any = 1) -> ScoreMoments:
    """Moments of a score entry ``c * x_i W_Q W_K^T x_j^T`` with every entry independent and Gaussian.

    ``x_i`` has i.i.d. ``N(0, var_x)`` entries, ``W_Q`` and ``W_K`` (independent) i.i.d.
    ``N(0, var_wq)``, ``N(0, var_wk)`` entries, shapes ``(d_model, d_k)``. The components
    ``q_a = sum_c x_c W_{ca}`` are uncorrelated but *not* independent (they share ``x``), so the
    variance is computed from second moments: for ``i != j``,
    ``Var = c^2 sum_{a,b} E[q_a q_b] E[k_a k_b] = c^2 d_k (d_model var_x var_wq)(d_model var_x var_wk)``.
    On the diagonal ``E[||x||^4] = d_model (d_model + 2) var_x^2`` replaces ``(d_model var_x)^2``.
    Both means are 0 (``W_Q``, ``W_K`` independent with mean 0).

    >>> m = score_moments(512, 64, 1, init_variance("he", 512, 64), init_variance("he", 512, 64))
    >>> m.off_diagonal_variance
    256
    >>> score_moments(512, 64, 1, sp.Rational(1, 512), sp.Rational(1, 512), scale=1 / sp.sqrt(64)).off_diagonal_variance
    1
    """
    m, dk = _exact(d_model, "d_model"), _exact(d_k, "d_k")
    vx, vq, vk, c = (_exact(v, n) for v, n in ((var_x, "var_x"), (var_wq, "var_wq"), (var_wk, "var_wk"), (scale, "scale")))
    var_q = m * vx * vq  # E[q_a^2]
    var_k = m * vx * vk
    off = sp.expand(c**2 * dk * var_q * var_k)
    diag = sp.expand(c**2 * dk * vq * vk * m * (m + 2) * vx**2)
    steps = (
        ("query component variance", _step_eq(sp.Symbol(r"\mathbb{E}[q_a^2]"), var_q)),
        ("key component variance", _step_eq(sp.Symbol(r"\mathbb{E}[k_a^2]"), var_k)),
        ("off-diagonal score variance", _step_eq(sp.Symbol(r"\operatorname{Var}[s_{ij}]"), off)),
        ("diagonal score variance", _step_eq(sp.Symbol(r"\operatorname{Var}[s_{ii}]"), diag)),
    )
    return ScoreMoments(sp.Integer(0), off, sp.Integer(0), diag, steps)


def scale_variants(d_k: Any = None, heads: Any = None) -> dict[str, dict[str, sp.Expr]]:
    """The scalings people use, each with the factor it applies to ``q·k`` and the resulting variance.

    Components of ``q, k`` i.i.d. with mean 0 and variance 1, ``d_model = heads * d_k``.

    >>> v = scale_variants()
    >>> v["1/sqrt(d_model)"]["variance"]
    1/h
    >>> v["d_k^(-1/4) on q and on k"]["variance"]
    1
    """
    dk = sp.Symbol("d_k", positive=True, integer=True) if d_k is None else _exact(d_k, "d_k")
    h = sp.Symbol("h", positive=True, integer=True) if heads is None else _exact(heads, "heads")
    factors = {
        "none": sp.Integer(1),
        "1/sqrt(d_k)": 1 / sp.sqrt(dk),
        "1/sqrt(d_model)": 1 / sp.sqrt(h * dk),
        "1/d_k": 1 / dk,
        "d_k^(-1/4) on q and on k": dk ** sp.Rational(-1, 4) * dk ** sp.Rational(-1, 4),
        "1/sqrt(d_k) on q and on k": 1 / dk,
    }
    return {name: {"factor": sp.powsimp(c), "variance": sp.powsimp(sp.expand(c**2 * dk))} for name, c in factors.items()}
