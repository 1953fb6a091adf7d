"""Gather the page's data from the Python API: derivations, claims, routing inputs, contrasts.

Each function calls the layer that owns the mathematics (``derive``, ``verify_all``,
``numeric.attention``, ``graphs.attention_rollout`` / ``attention_flow`` /
``graphs.node_changes``) and packs what it returns into the plain data of
:mod:`attnsym.explorer.data`; nothing is computed here that a layer below already computes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._checks import non_negative_int
from ..claims import Evidence, RenderedFigure, default_jobs, verify_all
from ..claims.catalogue import GROUPS, entry
from ..claims.report import evidence_to_dict
from ..derivation import Derivation, derive
from ..errors import AttnsymError, ShapeError, SpecError
from ..graphs import attention_flow, attention_rollout, node_changes
from ..graphs.contrast import dense_weight
from ..heads import DESCRIPTIONS, SHORT, HeadReport, classify
from ..numeric import attention, random_inputs
from ..plots import figure_to_bytes
from ..plots.files import resampled_png
from ..spec import AttentionSpec
from .data import ContrastData, MlpData, RoutingInput

__all__ = [
    "FIGURE_DPI",
    "SINK_CLASSES",
    "TOY_SOURCE",
    "TOY_TOKENS",
    "check_claims",
    "claims_section",
    "derivation_entry",
    "derivation_section",
    "headline_head",
    "heads_entry",
    "routing_input",
    "sink_heads",
    "toy_routing",
]

#: how every toy view names its data: no word of a toy input means anything
TOY_SOURCE = "toy: random vectors, words are labels"

#: the words labelling the toy spec's positions
TOY_TOKENS: tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")

#: fusions over heads the page offers, computed here once per layer
FUSIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda A: A.mean(axis=1),
    "max": lambda A: A.max(axis=1),
}


# ----------------------------------------------------------------------------- derivations
def derivation_entry(derivation: Derivation, key: str) -> dict[str, Any]:
    """One derivation as page data: each step's title, explanation and LaTeX, and the whole document.

    >>> d = derivation_entry(derive(AttentionSpec(n=2, d_model=2)), "forward")
    >>> d["steps"][1]["title"], d["steps"][1]["formula"]
    ('Queries', 'Q = X W_Q')
    >>> d["document"].startswith(r"\\documentclass")
    True
    """
    return {
        "id": key,
        "title": derivation.title,
        "description": derivation.description,
        "steps": [{"title": s.title, "explanation": s.explanation, "formula": s.formula, "latex": s.to_latex()}
                  for s in derivation.steps],
        "document": derivation.to_latex(),
    }


def derivation_section(spec: AttentionSpec | None = None) -> list[dict[str, Any]]:
    """The forward pass and the gradients of ``spec`` (default ``n = 2, d_model = 2``), derived by SymPy."""
    spec = AttentionSpec(n=2, d_model=2) if spec is None else spec
    return [derivation_entry(derive(spec, what=what), what) for what in ("forward", "gradients")]


# ----------------------------------------------------------------------------- claims
#: the resolution of the claims' figures on the page (dots per inch)
FIGURE_DPI = 60


def check_claims(*, seed: int = 0, quick: bool = False, figures: bool = True,
                 on_result: Callable[[Evidence], None] | None = None) -> list[Evidence]:
    """Every claim checked for a page: one worker per CPU, each drawing its claims' figures once.

    Drawing is most of the time, so the workers do it: each renders its figures as PNG (the
    claims report's files) and resamples them to :data:`FIGURE_DPI` (what the page inlines,
    :attr:`~attnsym.claims.RenderedFigure.previews`), and renders the evidence's JSON.
    ``on_result`` is called as each check finishes (:func:`attnsym.claims.verify_all`).
    """
    return verify_all(seed=seed, quick=quick, jobs=default_jobs(), formats=("png",) if figures else (),
                      previews=(FIGURE_DPI,) if figures else (), render_json=True, on_result=on_result)


def _png_data_uri(build: Callable[[], Any], dpi: int) -> str:
    if isinstance(build, RenderedFigure) and dpi in build.previews:  # resampled already, in a worker
        png = build.previews[dpi]
    elif isinstance(build, RenderedFigure) and "png" in build.files:  # drawn already (the report, a worker)
        png = resampled_png(build.files["png"], dpi)
    else:
        png = figure_to_bytes(build(), "png", dpi=dpi)  # figures of attnsym.plots belong to no pyplot window
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _group(claim: str) -> str:
    """The claim's group in the claims list (``source`` first on the page); ``other`` for a claim not listed."""
    try:
        return entry(claim).group
    except AttnsymError:
        return "other"


def claims_section(evidence: Sequence[Any], *, figures: bool = True, dpi: int = FIGURE_DPI) -> list[dict[str, Any]]:
    """Each claim's Evidence as page data (:func:`attnsym.claims.report.evidence_to_dict`), figures as PNG.

    Parameters
    ----------
    evidence : sequence of Evidence
        From :func:`attnsym.claims.verify_all` (or :func:`~attnsym.claims.verify`).
    figures : bool, default True
        Render each claim's figures and inline them (PNG, ``dpi`` dots per inch); a figure
        already rendered as PNG (a :class:`~attnsym.claims.RenderedFigure`: the tour's report, a
        worker of ``verify_all(jobs=N, formats=("png",))``) is resampled instead of drawn again,
        or taken as it is from its :attr:`~attnsym.claims.RenderedFigure.previews` at ``dpi``.
    """
    rows = []
    for ev in evidence:
        row = evidence_to_dict(ev)
        row["group"] = _group(ev.claim)
        row["group_title"] = GROUPS.get(row["group"], "Other claims")
        row["figures"] = [{"name": name, "src": _png_data_uri(build, dpi)} for name, build in sorted(ev.figures.items())] \
            if figures else []
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- routing
def _stack(A: Any, name: str) -> np.ndarray:
    arr = np.asarray(A)
    if arr.ndim == 2:
        arr = arr[None, None]
    elif arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4 or arr.shape[-1] != arr.shape[-2]:
        raise ShapeError(f"{name} must have shape (layers, heads, n, n), (heads, n, n) or (n, n) (got {np.shape(A)})")
    return arr


def heads_entry(report: HeadReport) -> dict[str, Any]:
    """A head report as page data: :meth:`~attnsym.heads.HeadReport.to_dict` plus each class's short name and sentence.

    >>> A = np.zeros((1, 1, 3, 3)); A[0, 0] = np.eye(3)
    >>> e = heads_entry(classify(A))
    >>> e["heads"][0]["layer"], e["heads"][0]["class"], e["descriptions"]["self"]
    (1, 'self', 'reads itself')
    """
    entry = report.to_dict()
    entry["short"] = dict(SHORT)
    entry["descriptions"] = dict(DESCRIPTIONS)
    return entry


def routing_input(name: str, source: str, tokens: Sequence[str], A: Any, mlp: MlpData, *,
                  flow: bool = True, heads: HeadReport | None = None,
                  sinks: Sequence[bool] | None = None) -> RoutingInput:
    """Pack one input's attention stack with its head fusions, rollout and flow (heads averaged).

    Parameters
    ----------
    name, source : str
        What the selector shows, and where the numbers come from.
    tokens : sequence of str
        One label per position.
    A : array, (layers, heads, n, n) (or (heads, n, n), (n, n))
        Attention probabilities; kept at their own dtype.
    mlp : MlpData
        The fixed graph shown beside the attention graph.
    flow : bool, default True
        Compute attention flow (``n²`` max-flows; seconds for 6 layers × 16 tokens).
    heads : HeadReport, optional
        The heads' classes; default :func:`attnsym.heads.classify` of ``A`` with ``tokens``.
    sinks : sequence of bool, optional
        Per token, whether it is a sink's key (:attr:`RoutingInput.sinks`).

    Examples
    --------
    >>> mlp = MlpData("identity", ("a", "b"), ("a", "b"), np.eye(2), "fixed")
    >>> r = routing_input("demo", "hand-made", ["a", "b"], np.array([[0.5, 0.5], [0.0, 1.0]]), mlp)
    >>> r.layers, r.heads, r.rollout.tolist()
    (1, 1, [[0.75, 0.25], [0.0, 1.0]])
    """
    stack = _stack(A, "A")
    tokens = tuple(str(t) for t in tokens)
    if len(tokens) != stack.shape[-1]:
        raise ShapeError(f"tokens must have one label per position ({stack.shape[-1]}) (got {len(tokens)})")
    mats = list(stack)  # one (heads, n, n) array per layer
    report = classify(stack, tokens=[tokens]) if heads is None else heads
    return RoutingInput(
        name=name, source=source, tokens=tokens, attention=stack,
        fused={key: fuse(stack) for key, fuse in FUSIONS.items()},
        rollout=attention_rollout(mats, head="mean"),
        flow=attention_flow(mats, head="mean") if flow else None,
        mlp=mlp, head_classes=heads_entry(report), sinks=None if sinks is None else tuple(bool(x) for x in sinks),
    )


def _row_distance(A1: np.ndarray, A2: np.ndarray, p: int) -> np.ndarray:
    """Per layer and head: total-variation distance between row ``p`` of ``A1`` and of ``A2``."""
    L, H = A1.shape[:2]
    return np.array([[node_changes(A1[layer, h], A2[layer, h]).row_tv[p] for h in range(H)] for layer in range(L)])


#: the head classes that name a sink: a head parking its queries on the first or the last token (attnsym.heads)
SINK_CLASSES = ("first-token", "end-token")


def sink_heads(inp: RoutingInput) -> np.ndarray:
    """Per layer and head, whether :mod:`attnsym.heads` labels the head a sink (first-token or end-token) on ``inp``.

    >>> A = np.zeros((1, 2, 3, 3)); A[0, 0, :, 0] = 1; A[0, 1] = np.eye(3)
    >>> mlp = MlpData("identity", ("a", "b", "c"), ("a", "b", "c"), np.eye(3), "fixed")
    >>> sink_heads(routing_input("demo", "hand-made", ["a", "b", "c"], A, mlp)).tolist()
    [[True, False]]
    """
    out = np.zeros((inp.layers, inp.heads), dtype=bool)
    for h in ({} if inp.head_classes is None else inp.head_classes).get("heads", ()):
        out[h["layer"] - 1, h["head"] - 1] = any(label in SINK_CLASSES for label in h["labels"])
    return out


def headline_head(distance: Any, inputs: Sequence[RoutingInput]) -> tuple[int, int]:
    """The head a contrast opens on when no model chose one: the largest ``distance`` among the heads that no input's
    head classes call a sink (a sink differs between two inputs only in where it parks); every head a sink: the
    largest distance, and the page's headline calls the sink a sink.

    >>> A = np.zeros((1, 2, 3, 3)); A[0, 0, :, 0] = 1; A[0, 1] = np.eye(3)
    >>> mlp = MlpData("identity", ("a", "b", "c"), ("a", "b", "c"), np.eye(3), "fixed")
    >>> headline_head(np.array([[0.9, 0.2]]), [routing_input("demo", "hand-made", ["a", "b", "c"], A, mlp)])
    (0, 1)
    """
    d = np.asarray(distance, dtype=np.float64)
    sink = np.zeros(d.shape, dtype=bool)
    for inp in inputs:
        sink |= sink_heads(inp)
    if not sink.all():
        d = np.where(sink, -np.inf, d)
    layer, head = np.unravel_index(int(np.argmax(d)), d.shape)
    return int(layer), int(head)


def _word_rows(inp: RoutingInput, p: int) -> dict[str, np.ndarray]:
    """Position ``p``'s attention rows of one input: every head's, and the heads' mean and max."""
    return {"heads": inp.attention[:, :, p, :], "mean": inp.fused["mean"][:, p, :], "max": inp.fused["max"][:, p, :]}


def toy_routing(seed: int = 0, *, spec: AttentionSpec | None = None,
                tokens: Sequence[str] = TOY_TOKENS) -> tuple[list[RoutingInput], list[ContrastData]]:
    """Two random inputs through the same random weights of a small spec, and their contrast.

    The weights are drawn ``N(0, 1/fan_in)`` and the inputs ``N(0, 1)`` from ``seed``;
    :func:`attnsym.numeric.attention` computes the weights of every head. The MLP graph is the
    dense layer made of the same weights (:func:`attnsym.graphs.dense_weight`: ``W_V W_O``),
    the contrast is every position's row total-variation distance
    (:func:`attnsym.graphs.node_changes`) per head, opened on the most different head that is no sink
    (:func:`headline_head`).

    Returns
    -------
    inputs : list of RoutingInput
        The two inputs (one layer, ``spec.heads`` heads).
    contrasts : list of ContrastData
        One per distinct word, positions as in input 1 (the toy inputs share their words).

    Examples
    --------
    >>> inputs, contrasts = toy_routing(0)
    >>> [i.name for i in inputs], inputs[0].attention.shape
    (['toy input 1 (random vectors)', 'toy input 2 (random vectors)'], (1, 2, 6, 6))
    >>> contrasts[1].word, contrasts[1].distance.shape
    ('cat', (1, 2))
    """
    seed = non_negative_int("seed", seed)
    spec = AttentionSpec(n=len(tokens), d_model=8, heads=2) if spec is None else spec
    if len(tokens) != spec.n:
        raise SpecError(f"tokens must have spec.n = {spec.n} labels (got {len(tokens)})")
    drawn = random_inputs(spec, seed, batch=(2,))
    weights: dict[str, Any] = {name: drawn[name] for name in spec.parameter_names}
    X1, X2 = drawn["X"]
    W = dense_weight(weights, spec)  # (d_model, d_model): y = x W, so out j reads in i with W[i, j]
    features = tuple(f"x{j + 1}" for j in range(W.shape[0]))
    mlp = MlpData(
        title="MLP y = x W_V W_O (features)",
        inputs=features, outputs=tuple(f"y{j + 1}" for j in range(W.shape[1])), W=W.T,
        note="The dense layer made of the same weights: W is fixed, the same for input 1 and input 2.",
    )
    source = f"{TOY_SOURCE}; spec {spec.describe()}, random weights, seed {seed}"
    inputs = []
    for k, X in enumerate((X1, X2), 1):
        _, A = attention(X, **weights, spec=spec)
        inputs.append(routing_input(f"toy input {k} (random vectors)", source, tokens, A, mlp))
    contrasts = []
    seen: set[str] = set()
    for p, word in enumerate(tokens):
        if word in seen:
            continue
        seen.add(word)
        distance = _row_distance(inputs[0].attention, inputs[1].attention, p)
        contrasts.append(ContrastData(
            word=word, inputs=(0, 1), positions=(p, p), distance=distance, cell=headline_head(distance, inputs),
            metric="total-variation distance between the word's two attention rows (0 same, 1 disjoint)",
            rows=(_word_rows(inputs[0], p), _word_rows(inputs[1], p)),
            note="The same weights for both inputs: only the input X changed.",
        ))
    return inputs, contrasts
