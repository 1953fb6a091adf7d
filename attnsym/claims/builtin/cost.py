"""Claims about the cost of attention: ``quadratic-cost``, ``kv-cache``, ``blockwise-exact``.

Each registered claim calls a parametrised check (``check_*``) with the statement of the shipped
claims list; the tests call the same checks with deliberately wrong statements and see them fail.
``quadratic-cost`` and ``kv-cache`` are verdicts on :mod:`attnsym.studies.cost`
(:func:`~attnsym.studies.cost.attention_cost`, :func:`~attnsym.studies.cost.decode_cost`), whose
results their figures draw; ``blockwise-exact`` reads :mod:`attnsym.symbolic.online_softmax`,
:mod:`attnsym.numeric.measure` and :func:`attnsym.numeric.attention`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import sympy as sp

from ... import plots
from ...numeric import attention
from ...numeric.measure import peak_traced_bytes
from ...studies import cost as cost_study
from ...studies.cost import AttentionCost, DecodeCost
from ...symbolic.online_softmax import prove_online_softmax
from .._compare import TOL64, close, max_abs
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = [
    "check_blockwise_exact",
    "check_kv_cache",
    "check_quadratic_cost",
]

# ----------------------------------------------------------------------------- quadratic-cost

QUAD_STATEMENT = statement("quadratic-cost")


#: why no byte count is in the evidence (a measurement, like a wall time, varies between runs)
MEASURED_BYTES_NOTE = ("traced peaks vary by a few hundred bytes to a few kB between runs (Python's free lists, "
                       "other threads of the process): the evidence keeps only what such noise cannot flip "
                       "(growth exponents to 1 decimal, peaks against one n×n map); the figure draws the bytes")


def check_quadratic_cost(ctx: CheckContext, *, time_degree: tuple[int, int] = (2, 1), memory_degree: int = 2,
                         measure_time: bool = False) -> Evidence:
    """Check that attention's operation count has degree ``time_degree = (deg_n, deg_d)`` and its memory degree ``memory_degree``.

    A verdict on :func:`attnsym.studies.cost.attention_cost`. Exact: the closed-form count
    (:func:`attnsym.symbolic.opcount.attention_opcount`) equals the polynomial interpolated from the
    operations of the SymPy expression graph at small sizes, and its degrees in ``n`` and ``d``
    are read off. Measured: the peak traced memory of the numeric forward pass (plain path,
    weights returned) grows like ``n^2``; the memory-lean blockwise path stays below one
    ``n × n`` float64 array and grows about linearly. ``measure_time=True`` adds median wall
    times (never judged; left out by default so the evidence is the same for a given seed —
    ``benchmarks/bench_claims_cost.py`` records them in ``docs/benchmarks.md``).
    """
    r = cost_study.attention_cost(partial(ctx.rng, "quadratic-cost"), quick=ctx.quick, measure_time=measure_time)
    facts = quadratic_cost_facts(r, time_degree, memory_degree)
    c, m = r.count, r.memory
    closed = c.closed
    return Evidence(
        "quadratic-cost", QUAD_STATEMENT, verdict(facts, passing="holds-under-conditions"),
        method="exact operation count (symbolic, interpolated from the expression graph) + measured memory (tracemalloc)",
        summary=(f"ops = `{sp.factor(closed.total)}`: degree {c.degrees[0]} in n, {c.degrees[1]} in d; memory n² per map "
                 f"(measured n^{m.plain_exponent:.1f}; blockwise n^{m.lean_exponent:.1f})" + failed_clause(facts)),
        conditions=("O(n²) memory is for the plain path that stores the map; the blockwise path "
                    "(online softmax, claim blockwise-exact) needs O(n·block + n·d) and still O(n²·d) time",
                    "time is judged on the exact operation count; wall times are measured by "
                    "benchmarks/bench_claims_cost.py (docs/benchmarks.md), not here, so the evidence is reproducible",
                    "the count covers Q Kᵀ (n²·d multiplications), softmax and A V (n²·d); the projections X W, not "
                    "counted, add O(n·d_model·d), linear in n"),
        details={"operations by kind": dict(c.by_kind),
                 "interpolated from the expression graph": dict(c.interpolated),
                 "closed form == interpolation": c.matches_interpolation, "degrees (n, d)": c.degrees,
                 "total": sp.Poly(closed.total, c.n, c.d).as_expr(),
                 "matrix-product multiplications = brute-force count at (n, d) = (3, 2), (5, 3), (8, 4)": c.matches_brute,
                 "measured": _measured(r)},
        equations=(("operations of one head: Q Kᵀ, softmax, A V (d_k = d_v = d, unscaled; projections not counted)",
                    sp.Eq(sp.Symbol("ops"), sp.factor(closed.total), evaluate=False)),
                   ("memory of the plain path", sp.Eq(sp.Symbol("mem"), closed.memory["scores"] + closed.memory["weights"],
                                                      evaluate=False))),
        figures={"memory-growth": partial(plots.memory_growth_figure, m.ns, m.plain_peaks, m.lean_peaks,
                                          m.plain_seconds or None, m.lean_seconds or None)},
    )


def quadratic_cost_facts(r: AttentionCost, time_degree: tuple[int, int], memory_degree: int) -> dict[str, bool]:
    """The falsifiable conditions of the claim on a study result, by name (all must hold).

    The plain path must hold at least one n×n map at every n (a quadratic lower bound), its growth
    must look like ``n^memory_degree``, and the blockwise path must stay below one map and
    sub-quadratic.
    """
    c, m = r.count, r.memory
    memory_measured = (abs(m.plain_exponent - memory_degree) <= 0.5 and m.plain_holds_a_map
                       and m.lean_below_a_map and m.lean_exponent < 1.5)
    return {"closed-form count = the expression graph's": c.matches_interpolation,
            "matrix products = brute-force count": c.matches_brute,
            f"time degree {tuple(time_degree)} in (n, d)": c.degrees == tuple(time_degree),
            f"memory degree {memory_degree} in n": c.memory_degree == memory_degree,
            "measured memory: plain ~n², blockwise below one map": memory_measured}


def _measured(r: AttentionCost) -> dict[str, Any]:
    m = r.memory
    measured: dict[str, Any] = {
        "n": list(m.ns), "d": m.d, "block_size": m.block,
        "plain memory exponent": round(m.plain_exponent, 1), "blockwise memory exponent": round(m.lean_exponent, 1),
        "bytes of one n×n float64 map at the largest n": m.one_map,
        "plain peak ≥ one n×n map at every n": m.plain_holds_a_map,
        "blockwise peak < one n×n map at the largest n": m.lean_below_a_map,
        "peaks": MEASURED_BYTES_NOTE,
    }
    if m.time_exponent is not None:
        measured.update({"plain seconds": list(m.plain_seconds), "blockwise seconds": list(m.lean_seconds),
                         "plain time exponent": round(m.time_exponent, 2)})
    return measured


def _quadratic_cost(ctx: CheckContext) -> Evidence:
    return check_quadratic_cost(ctx)


# ----------------------------------------------------------------------------- kv-cache

KV_STATEMENT = statement("kv-cache")


def check_kv_cache(ctx: CheckContext, *, cached_degree: int = 1, uncached_degree: int = 2) -> Evidence:
    """Check exactness of K/V-cache decoding and that its per-token cost has degree ``cached_degree`` in ``t``.

    A verdict on :func:`attnsym.studies.cost.decode_cost`. Numeric:
    :func:`attnsym.numeric.kvcache.causal_decode` with and without the cache against full causal
    :func:`attnsym.numeric.attention`, token by token (float64 tolerance). Counts: the
    multiplications each step performed (numeric's counter) against a brute-force count of the
    same contractions (:func:`attnsym.numeric.flopcount.decode_step_multiplications`: NumPy on
    scalars that count their multiplications, an independent reference) and against
    :func:`attnsym.symbolic.opcount.decode_step_opcount`, whose degree in ``t`` is read off. A
    non-causal layer is shown to invalidate the cache.

    The verdict is "holds-under-conditions": the cached step costs O(t·d + d²) (the new token's
    projections add d²), and the O(t²·d) it replaces is the recomputation a stacked decoder needs;
    one layer that reruns only its last query row is linear in t too (O(t·d²)).
    """
    r = cost_study.decode_cost(partial(ctx.rng, "kv-cache"), quick=ctx.quick)
    facts = kv_cache_facts(r, cached_degree, uncached_degree)
    fast, slow, width_d = r.cached_count["mul"], r.uncached_count["mul"], r.cached_count_width_d
    return Evidence(
        "kv-cache", KV_STATEMENT, verdict(facts, passing="holds-under-conditions"),
        method=(f"symbolic proof (prefix outputs) + numeric check (float64, rtol={TOL64.rtol:g}) + operation counts "
                "against a brute-force count (NumPy on counting scalars)"),
        summary=(f"cached decoding = full causal attention (error {max(r.cached_errors):.1g}); per-step multiplications "
                 f"`{fast}` with cache vs `{slow}` without (degree {r.cached_degree} vs {r.uncached_degree} in t; "
                 f"a brute-force count {'agrees' if r.counter_matches_brute and r.closed_form_matches_brute else 'disagrees'} "
                 f"at t = {', '.join(map(str, r.probe))}); "
                 f"one head of width d: `{width_d}`, O(t·d + d²)" + failed_clause(facts)),
        conditions=("needs a causal mask: without one, appending a token changes every earlier output "
                    f"(max change {r.bidirectional_change:.3g}), so past results cannot be reused",
                    f"the cached step costs O(t·d + d²), not O(t·d): projecting the new token adds d² (`{width_d}` "
                    "for one head of width d)",
                    "the O(t²·d) it replaces is rerunning causal attention over the whole prefix (all t query rows), "
                    "which a stacked decoder must do (later layers need every position's output); a single layer could "
                    f"rerun only its last query row for `{r.last_row_count}` multiplications — linear in t too, O(t·d²), "
                    "re-projecting every past token",
                    "the cache costs O(t·d) memory per layer (keys and values of all past tokens)",
                    "per-step cost counts the multiplications of the matrix products (projections, scores, mixing, W_O)"),
        details=_kv_details(r),
        equations=(("multiplications at step t, with cache", sp.Eq(sp.Symbol("mul_cached"), fast, evaluate=False)),
                   ("multiplications at step t, without cache", sp.Eq(sp.Symbol("mul_recompute"), slow, evaluate=False)),
                   ("with cache, one head of width d", sp.Eq(sp.Symbol("mul_cached"), width_d, evaluate=False))),
        figures={"decode-cost": partial(plots.decode_cost_figure, [s.t for s in r.steps], [s.cached for s in r.steps],
                                        [s.uncached for s in r.steps])},
    )


def kv_cache_facts(r: DecodeCost, cached_degree: int, uncached_degree: int) -> dict[str, bool]:
    """The falsifiable conditions of the claim on a study result, by name (all must hold)."""
    return {"cached and uncached decoding = full causal attention (float64)": r.exact,
            "operation counter = NumPy on counting scalars": r.counter_matches_brute,
            "closed form = the brute-force count": r.closed_form_matches_brute,
            f"cached cost degree {cached_degree} in t": r.cached_degree == cached_degree,
            f"uncached cost degree {uncached_degree} in t": r.uncached_degree == uncached_degree,
            "causal prefix outputs unchanged by later tokens (exact)": r.causal_prefix_unchanged,
            "bidirectional prefix outputs change (exact)": not r.bidirectional_prefix_unchanged}


def _kv_details(r: DecodeCost) -> dict[str, Any]:
    steps = [{"t": s.t, "mul with cache": s.cached, "mul without cache": s.uncached,
              "brute-force count (with, without cache)": s.brute} for s in r.steps]
    return {"max error per token (cache)": list(r.cached_errors), "max error per token (no cache)": list(r.uncached_errors),
            "steps": steps, "numeric counter = brute-force count": r.counter_matches_brute,
            "closed form = brute-force count": r.closed_form_matches_brute,
            "mul with cache, one head of width d": r.cached_count_width_d,
            "mul without cache, last query row only (one layer)": r.last_row_count,
            "cache shape (heads, n, d_k)": r.cache_shape,
            "non-causal: max change of earlier outputs when a token is appended": r.bidirectional_change,
            "symbolic: causal outputs of 2 tokens unchanged by a 3rd (exact)": r.causal_prefix_unchanged,
            "symbolic: non-causal outputs of 2 tokens unchanged by a 3rd": r.bidirectional_prefix_unchanged}


def _kv_cache(ctx: CheckContext) -> Evidence:
    return check_kv_cache(ctx)


# ----------------------------------------------------------------------------- blockwise-exact

BLOCK_STATEMENT = statement("blockwise-exact")


def check_blockwise_exact(ctx: CheckContext, *, rescale: bool = True) -> Evidence:
    """Check the online-softmax merge (symbolic, exact) and the blockwise numeric path (float tolerance, memory).

    ``rescale=False`` checks the merge without the ``e^{m_b − m}`` correction, a wrong algorithm
    that the symbolic proof rejects.
    """
    sizes = (2, 2, 1) if ctx.quick else (3, 2, 2)
    proof = prove_online_softmax(*sizes, rescale=rescale)
    rng = ctx.rng("blockwise-exact")
    d, heads = 16, 2
    rows = []
    for n, block, causal in ((64, 16, False), (64, 24, True)) if ctx.quick else \
            ((256, 64, False), (256, 48, True), (300, 128, False)):
        X = rng.standard_normal((n, d)) * 3.0  # large logits stress the running maximum
        W = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
        plain_Y, _ = attention(X, *W, heads=heads, causal=causal)
        lean = attention(X, *W, heads=heads, causal=causal, return_weights=False, block_size=block)
        rows.append({"n": n, "block": block, "causal": causal, "max |blockwise − plain|": max_abs(lean, plain_Y),
                     "within tolerance": close(lean, plain_Y)})
    numeric_ok = all(r["within tolerance"] for r in rows)
    n_mem = 512 if ctx.quick else 1024
    X = rng.standard_normal((n_mem, d))
    W = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)]
    plain_fn = lambda: attention(X, *W)
    lean_fn = lambda: attention(X, *W, return_weights=False, block_size=128)
    plain_fn(), lean_fn()
    plain_peak, lean_peak = peak_traced_bytes(plain_fn)[1], peak_traced_bytes(lean_fn)[1]
    one_map = 8 * n_mem * n_mem
    memory_ok = lean_peak < one_map <= plain_peak
    facts = {"online-softmax merge = softmax of the union (exact)": proof.holds,
             "blockwise = plain in float64": numeric_ok, "blockwise peak below one n×n map ≤ plain peak": memory_ok}
    return Evidence(
        "blockwise-exact", BLOCK_STATEMENT, verdict(facts),
        method=f"symbolic proof (exact) + numeric check (float64, rtol={TOL64.rtol:g}) + measured memory (tracemalloc)",
        summary=(f"online-softmax merge = softmax of the union: {'proved' if proof.holds else 'disproved'}; blockwise vs "
                 f"plain {max(r['max |blockwise − plain|'] for r in rows):.0e}; n={n_mem}: peak "
                 f"{'below' if lean_peak < one_map else 'not below'} one n×n map ({one_map / 2**20:g} MiB) blockwise, "
                 f"{'at least' if one_map <= plain_peak else 'under'} one plain" + failed_clause(facts)),
        conditions=("equal in exact arithmetic; in floating point within rounding (float64 tolerance here)",
                    "the merge is exact for any shifts m_1, m_2, m; using the running maximum only keeps exp() in range"),
        details={"symbolic difference": proof.difference, "rescaled merge": rescale, "numeric": rows,
                 "plain peak ≥ one n×n map": one_map <= plain_peak, "blockwise peak < one n×n map": lean_peak < one_map,
                 "peaks": MEASURED_BYTES_NOTE,
                 "bytes of one n×n float64 map": one_map},
        equations=(("online softmax merged over two blocks (left) = softmax over their union (right)",
                    sp.Eq(proof.merged[0], proof.direct[0], evaluate=False)),),
    )


def _blockwise_exact(ctx: CheckContext) -> Evidence:
    return check_blockwise_exact(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("quadratic-cost", _quadratic_cost),
    builtin_claim("kv-cache", _kv_cache),
    builtin_claim("blockwise-exact", _blockwise_exact),
)
