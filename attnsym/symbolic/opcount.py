"""Exact operation and memory counts of attention, as polynomials in the sizes.

Two independent routes give the same polynomials:

* :func:`attention_opcount` — the closed form, read off the shapes of each step
  (a ``(p, q) @ (q, r)`` product costs ``p·q·r`` multiplications and ``p·(q−1)·r`` additions);
* :func:`count_attention_graph` — counting the operations of the SymPy expressions that
  attnsym's own symbolic layer builds for concrete sizes (:func:`attnsym.symbolic.scores`,
  :func:`~attnsym.symbolic.row_softmax`, :func:`~attnsym.symbolic.matmul`), with common
  subexpressions shared (:func:`sympy.cse`) as a program would compute them, and
  :func:`interpolate_opcount`, which recovers the polynomial from those counts alone.

Counted for one head of ``S = Q Kᵀ``, ``A = softmax(S)`` (row-wise: ``n²`` exponentials, ``n``
row sums, ``n`` reciprocals, ``n²`` products) and ``Z = A V``, with ``Q, K`` of shape
``(n, d_k)`` and ``V`` of shape ``(n, d_v)``; scaling adds ``n²`` multiplications (none when
unscaled); the projections ``X W`` are counted separately (they are linear in ``n``). Memory
is the number of scalars a plain implementation stores for the score and weight matrices
(``n²`` each) versus a blockwise one (``n · block`` plus the running statistics).

:func:`decode_step_opcount` gives the per-token cost of causal generation with and without a
K/V cache; the numeric twin :func:`attnsym.numeric.kvcache.causal_decode` counts the same
multiplications from the shapes it actually multiplies.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from .._checks import boolean
from .._exact import exact, exact_subs
from ..errors import SizeLimitError, SpecError
from .operations import matmul, row_softmax, scores

__all__ = [
    "OpCount",
    "attention_opcount",
    "count_attention_graph",
    "decode_step_opcount",
    "interpolate_opcount",
    "size_symbols",
]

_KINDS = ("mul", "add", "exp", "div")


def size_symbols():
    """The size symbols ``n, d_k, d_v`` (positive integers) used by the polynomials.

    >>> size_symbols()
    (n, d_k, d_v)
    """
    return sp.symbols("n d_k d_v", positive=True, integer=True)


@dataclass(frozen=True)
class OpCount:
    """Operation counts by kind and by stage, and the memory of the plain path.

    Attributes
    ----------
    stages : dict
        ``stage -> {kind -> count}``; stages ``"scores"``, ``"scale"``, ``"softmax"``,
        ``"output"``; kinds ``"mul"``, ``"add"``, ``"exp"``, ``"div"``.
    memory : dict
        Scalars stored: ``"scores"`` and ``"weights"`` (``n²`` each), ``"blockwise"``
        (``n·block + 2n`` running statistics, the memory-lean path's extra storage).
    """

    stages: dict
    memory: dict

    def by_kind(self) -> dict:
        """Totals per kind of operation, summed over stages."""
        return {k: sp.expand(sp.Add(*[s.get(k, 0) for s in self.stages.values()])) for k in _KINDS}

    @property
    def total(self) -> sp.Expr:
        """All operations together (expanded polynomial)."""
        return sp.expand(sp.Add(*self.by_kind().values()))

    def leading(self, n: sp.Symbol) -> sp.Expr:
        """The highest-degree term in ``n`` of :attr:`total` (e.g. ``2 n² d_k`` …)."""
        if not isinstance(n, sp.Symbol):
            raise SpecError(f"n must be a SymPy Symbol such as size_symbols()[0] (got {n!r} of type {type(n).__name__})")
        poly = sp.Poly(self.total, n)
        degree = poly.degree()
        return sp.expand(poly.coeff_monomial(n**degree) * n**degree)

    def subs(self, values: dict) -> dict:
        """Per-kind totals evaluated at concrete sizes (``{symbol: int}``; a key may be the symbol's name).

        >>> attention_opcount().subs({"n": 4, "d_k": 2, "d_v": 2})["exp"]
        16
        """
        totals = self.by_kind()
        free = set().union(*(v.free_symbols for v in totals.values()))
        values = exact_subs("values", values, free)
        out = {}
        for kind, total in totals.items():
            value = total.xreplace(values)
            if not value.is_Integer:
                missing = sorted(str(s) for s in value.free_symbols)
                raise SpecError(f"values must give every size of the count (missing {missing})" if missing else
                                f"values must be integer sizes (the {kind} count is {value})")
            out[kind] = int(value)
        return out


def attention_opcount(n=None, d_k=None, d_v=None, *, scaled: bool = True, block=None) -> OpCount:
    """Closed-form operation counts of one attention head, ``softmax(s Q Kᵀ) V``.

    Parameters
    ----------
    n, d_k, d_v : int or sympy.Expr, optional
        Sizes; default to the symbols of :func:`size_symbols` (``d_v`` defaults to ``d_k`` when
        ``d_k`` is given).
    scaled : bool, default True
        Count the ``n²`` multiplications by ``1/sqrt(d_k)``.
    block : int or sympy.Expr, optional
        Block size of the memory-lean path (symbol ``b`` by default) for the memory entry.

    Returns
    -------
    OpCount

    Examples
    --------
    >>> n, d_k, d_v = size_symbols()
    >>> c = attention_opcount(scaled=False)
    >>> c.by_kind()["mul"]
    d_k*n**2 + d_v*n**2 + n**2
    >>> c.leading(n)
    2*d_k*n**2 + 2*d_v*n**2 + 2*n**2
    >>> c.memory["weights"]
    n**2
    """
    sn, sk, sv = size_symbols()
    n = sn if n is None else exact("n", n)
    d_k = sk if d_k is None else exact("d_k", d_k)
    d_v = (sv if d_k is sk else d_k) if d_v is None else exact("d_v", d_v)
    block = sp.Symbol("b", positive=True, integer=True) if block is None else exact("block", block)
    scaled = boolean("scaled", scaled)
    stages = {
        # S = Q K^T: n*n dot products of length d_k
        "scores": {"mul": n * n * d_k, "add": n * n * (d_k - 1)},
        "scale": {"mul": n * n if scaled else sp.Integer(0)},
        # A = exp(S) * (1 / rowsum(exp(S))): one reciprocal per row, one product per entry
        "softmax": {"exp": n * n, "add": n * (n - 1), "div": n, "mul": n * n},
        # Z = A V: n*d_v dot products of length n
        "output": {"mul": n * n * d_v, "add": n * (n - 1) * d_v},
    }
    memory = {"scores": n * n, "weights": n * n, "blockwise": n * block + 2 * n}
    return OpCount(stages, memory)


def _count(expr) -> dict:
    counts = dict.fromkeys(_KINDS, 0)
    visual = sp.count_ops(expr, visual=True)
    if visual == 0:
        return counts
    for term in sp.Add.make_args(visual):
        coeff, sym = term.as_coeff_Mul()
        name = str(sym)
        kind = {"MUL": "mul", "ADD": "add", "EXP": "exp", "DIV": "div"}.get(name)
        if kind is None:
            raise AssertionError(f"unexpected operation {name} in the attention graph")
        counts[kind] += int(coeff)
    return counts


def count_attention_graph(n: int, d_k: int, d_v: int | None = None, *, scaled: bool = True) -> dict:
    """Count the operations of the symbolic layer's expressions for one head at concrete sizes.

    Each stage is built by attnsym's symbolic functions from fresh symbols for its inputs:
    ``S = scores(Q, K)``, the scaling ``c·S``, ``A = row_softmax(S)``, ``Z = matmul(A, V)``.
    Common subexpressions of a stage (the exponentials, each row's sum) are shared with
    :func:`sympy.cse`, so each is counted once, as a program computes it; the counts are
    :func:`sympy.count_ops` of the result, not the closed form. ``n ≥ 2``: for one token SymPy
    folds the softmax ``e^s / e^s`` to 1.

    Returns
    -------
    dict
        ``{"stages": {stage: {kind: int}}, "total": {kind: int}}``.

    Examples
    --------
    >>> count_attention_graph(2, 1, scaled=False)["total"]
    {'mul': 12, 'add': 4, 'exp': 4, 'div': 2}
    """
    d_v = d_k if d_v is None else d_v
    for name, value, low in (("n", n, 2), ("d_k", d_k, 1), ("d_v", d_v, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise SpecError(f"{name} must be an integer >= {low} (got {value!r})")
    if n * n * max(d_k, d_v) > 4096:
        raise SizeLimitError(
            f"counting the expression graph at n={n}, d_k={d_k}, d_v={d_v} builds {n * n * max(d_k, d_v)} products; "
            "the limit is 4096 — use attention_opcount for the closed form at any size"
        )
    sym = lambda name, rows, cols: sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{{{i},{j}}}"))
    Q, K, V = sym("q", n, d_k), sym("k", n, d_k), sym("v", n, d_v)
    S_in, A_in = sym("s", n, n), sym("a", n, n)
    c = sp.Symbol("c")
    stages = {
        "scores": list(scores(Q, K)),
        "scale": list(c * S_in) if scaled else [],
        "softmax": list(row_softmax(S_in)),
        "output": list(matmul(A_in, V)),
    }
    result = {}
    for stage, entries in stages.items():
        counts = dict.fromkeys(_KINDS, 0)
        replacements, reduced = sp.cse(entries) if entries else ([], [])
        for expr in [e for _, e in replacements] + list(reduced):
            for kind, value in _count(expr).items():
                counts[kind] += value
        result[stage] = counts
    total = {k: sum(result[s][k] for s in result) for k in _KINDS}
    return {"stages": result, "total": total}


def interpolate_opcount(max_n: int = 5, max_d: int = 3, *, scaled: bool = True) -> dict:
    """Recover the count polynomials from :func:`count_attention_graph` alone.

    Counts at every ``2 ≤ n ≤ max_n`` and ``d_k = d_v = d ≤ max_d`` are interpolated by a
    polynomial of degree ``max_n − 2`` in ``n`` and ``max_d − 1`` in ``d`` (Lagrange, exact);
    with ``max_n ≥ 5``, ``max_d ≥ 3`` that leaves room for a cubic in ``n`` and a quadratic in
    ``d``, so a result of degree 2 and 1 is found, not assumed.

    Returns
    -------
    dict
        kind -> polynomial in the symbols ``n`` and ``d`` (``d = d_k = d_v``).

    Examples
    --------
    >>> interpolate_opcount(scaled=False)["mul"]
    2*d*n**2 + n**2
    """
    n, d = sp.symbols("n d", positive=True, integer=True)
    ns, ds = range(2, max_n + 1), range(1, max_d + 1)
    counts = {(a, b): count_attention_graph(a, b, scaled=scaled)["total"] for a, b in itertools.product(ns, ds)}
    # the Lagrange basis polynomials of the grid, built once as exact polynomials over QQ (the same for
    # every kind); each kind's polynomial is then a combination of them with its integer counts
    basis_n = {a: sp.Poly(sp.Mul(*[(n - x) / sp.Integer(a - x) for x in ns if x != a]), n, d, domain="QQ") for a in ns}
    basis_d = {b: sp.Poly(sp.Mul(*[(d - y) / sp.Integer(b - y) for y in ds if y != b]), n, d, domain="QQ") for b in ds}
    basis = {(a, b): basis_n[a] * basis_d[b] for a, b in itertools.product(ns, ds)}
    zero = sp.Poly(0, n, d, domain="QQ")
    return {kind: sum((basis[point] * counts[point][kind] for point in basis), zero).as_expr() for kind in _KINDS}


def decode_step_opcount(t=None, d_model=None, d_k=None, d_v=None, *, heads=1, cached: bool = True,
                        output_projection: bool = False) -> dict:
    """Multiplications (in matrix products) and exponentials to produce output token ``t`` of causal attention.

    With a K/V cache the step projects only the new token (``q_t, k_t, v_t``), scores it against
    the ``t`` cached keys and mixes ``t`` cached values: linear in ``t``. Without a cache the
    step reruns full causal attention over the ``t``-token prefix (dense ``t × t`` scores, then
    masked) and keeps the last row: quadratic in ``t``. These are the counts
    :func:`attnsym.numeric.kvcache.causal_decode` records from the shapes it multiplies.

    Parameters
    ----------
    t, d_model, d_k, d_v : int or sympy.Expr, optional
        Step and sizes; symbols ``t, d_model, d_k`` by default (``d_v`` defaults to ``d_k``).
    heads : int or sympy.Expr, default 1
    cached : bool, default True
    output_projection : bool, default False
        Count ``W_O`` (``heads·d_v·d_model`` per projected row).

    Returns
    -------
    dict
        ``{"mul": polynomial, "exp": polynomial}``.

    Examples
    --------
    >>> t, D, k = sp.symbols("t d_model d_k", positive=True, integer=True)
    >>> decode_step_opcount(cached=True)["mul"]
    3*d_k*d_model + 2*d_k*t
    >>> sp.factor(decode_step_opcount(cached=False)["mul"])
    d_k*t*(3*d_model + 2*t)
    """
    t = sp.Symbol("t", positive=True, integer=True) if t is None else exact("t", t)
    d_model = sp.Symbol("d_model", positive=True, integer=True) if d_model is None else exact("d_model", d_model)
    d_k = sp.Symbol("d_k", positive=True, integer=True) if d_k is None else exact("d_k", d_k)
    d_v = d_k if d_v is None else exact("d_v", d_v)
    h = exact("heads", heads)
    cached = boolean("cached", cached)
    output_projection = boolean("output_projection", output_projection)
    rows = 1 if cached else t  # rows projected and queries scored in this step
    mul = rows * d_model * h * (2 * d_k + d_v) + rows * t * h * (d_k + d_v)
    if output_projection:
        mul += rows * h * d_v * d_model
    return {"mul": sp.expand(mul), "exp": sp.expand(rows * t * h)}
