r"""The explorer's data model: what the page shows, as plain data serialised once.

Every number on the page comes from here: the Python API computes it (attention, head fusions,
rollout, flow, distances, verdicts), :class:`PageData` holds it, :meth:`PageData.to_json`
writes it into the page, and the page's JavaScript only *displays* it (no number is
recomputed in the browser).

Arrays are written at their own precision: ``float32`` entries as the shortest decimal that
reads back to the same ``float32`` (so a 16-token, 6-layer, 12-head sentence costs about
250 kB), ``float64`` entries as the shortest decimal that reads back to the same ``float64``.

**A bounded page.** An input whose arrays hold more than :data:`DENSE_MAX_WEIGHTS` weights
(``L H n² + 2 L n² + 2 n²``: about 16 MB of JSON; a 16-token sentence on a 6-layer, 12-head
model holds 23 000) is stored as each row's :data:`TOP_K` largest weights
(:func:`top_k_rows`), and the page says so beside that input's views, with the most any row
left out: a 400-word sentence gives a page of a few MB instead of 183 MB.
:func:`attnsym.explorer.write_page` warns with the size when it bounds an input, and refuses
a page above :data:`MAX_PAGE_BYTES` unless its ``max_bytes`` is raised (or ``None``).

Shapes (``L`` layers, ``H`` heads, ``n`` tokens)::

    RoutingInput.attention   (L, H, n, n)   attention[l, h, i, j]: query i reads key j
    RoutingInput.fused       {"mean": (L, n, n), "max": (L, n, n)}   over heads
    RoutingInput.rollout     (n, n)         attnsym.graphs.attention_rollout, heads averaged
    RoutingInput.flow        (n, n)         attnsym.graphs.attention_flow, heads averaged
    ContrastData.distance    (L, H)         the chosen word's routing distance per layer and head
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ShapeError, SpecError

__all__ = ["DENSE_MAX_WEIGHTS", "MAX_PAGE_BYTES", "RESULT_STATUSES", "TOP_K", "ContrastData", "MlpData", "PageData",
           "RoutingInput", "encode_array", "top_k_rows"]

#: an input holding more weights than this is stored bounded (each row's TOP_K largest weights)
DENSE_MAX_WEIGHTS = 1_500_000

#: weights kept per row of a bounded input
TOP_K = 8

#: write_page refuses a page larger than this many bytes unless its max_bytes is raised
MAX_PAGE_BYTES = 200_000_000

#: how a result line of the page is marked (in words and by its border): passed, failed, or a plain fact
RESULT_STATUSES = ("ok", "bad", "info")

#: decimals the page prints attention weights with (hover, click, tables)
WEIGHT_DECIMALS = 3


def encode_array(a: Any) -> Any:
    """Nested lists of the shortest decimals that read back to the same values (float32 stays float32).

    >>> encode_array(np.array([0.1, 1 / 3], dtype=np.float32))
    [0.1, 0.33333334]
    >>> encode_array(np.array([[0.5, 1 / 3]]))
    [[0.5, 0.3333333333333333]]
    """
    arr = np.asarray(a)
    if arr.dtype.kind == "b":
        return arr.tolist()
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64).tolist()
    if arr.dtype.kind != "f":
        raise ShapeError(f"the page holds real arrays only (got dtype {arr.dtype})")
    if not np.all(np.isfinite(arr)):
        raise ShapeError("the page holds finite numbers only (got NaN or inf)")
    if arr.dtype == np.float32:
        flat = [float(np.format_float_positional(v, unique=True, trim="-")) for v in arr.ravel()]
        return np.array(flat, dtype=object).reshape(arr.shape).tolist() if arr.ndim else flat[0]
    return arr.astype(np.float64).tolist()


def top_k_rows(a: Any, k: int = TOP_K) -> dict[str, Any]:
    """Each row's ``k`` largest weights of an ``(..., n, n)`` array: what a bounded page stores.

    Returns ``{"topk": k, "n": n, "idx": (..., n, k) key indices, "w": (..., n, k) weights,
    "dropped": the largest weight sum any row left out}`` (indices and weights as nested lists,
    weights at their own precision, largest first).

    >>> t = top_k_rows(np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]], dtype=np.float32), 2)
    >>> t["idx"], t["w"], round(t["dropped"], 6)
    ([[0, 1], [2, 0]], [[0.5, 0.3], [0.8, 0.1]], 0.2)
    """
    arr = np.asarray(a)
    n = arr.shape[-1]
    k = min(int(k), n)
    order = np.argsort(-arr, axis=-1, kind="stable")[..., :k]
    kept = np.take_along_axis(arr, order, axis=-1)
    dropped = float(np.max(np.asarray(arr, dtype=np.float64).sum(axis=-1) - kept.astype(np.float64).sum(axis=-1)))
    return {"topk": k, "n": n, "idx": order.astype(np.int64).tolist(), "w": encode_array(kept), "dropped": max(dropped, 0.0)}


def _matrix(name: str, a: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, arr.shape, strict=True)):
        want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
        raise ShapeError(f"{name} must have shape {want} (got {arr.shape})")
    return arr


@dataclass(frozen=True)
class MlpData:
    """The fixed graph drawn beside the attention graph: ``out[i]`` reads ``in[j]`` with weight ``W[i, j]``.

    Attributes
    ----------
    title : str
    inputs, outputs : tuple of str
        Node labels of the two sides.
    W : numpy.ndarray, (len(outputs), len(inputs))
    note : str
        One sentence saying why this graph does not depend on the input.
    """

    title: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    W: np.ndarray
    note: str

    def __post_init__(self) -> None:
        _matrix("MlpData.W", self.W, (len(self.outputs), len(self.inputs)))

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "inputs": list(self.inputs), "outputs": list(self.outputs),
                "W": encode_array(self.W), "note": self.note}


@dataclass(frozen=True)
class RoutingInput:
    """One input of the routing view: its tokens and everything the page shows about it.

    Attributes
    ----------
    name : str
        What the input selector shows (the sentence, or "toy input 1 (random vectors)").
    source : str
        Where the numbers come from (the model and its sizes, or the spec).
    tokens : tuple of str
    attention : numpy.ndarray, (L, H, n, n)
    fused : dict of str -> numpy.ndarray (L, n, n)
        Head fusions computed in Python (``"mean"``, ``"max"``).
    rollout, flow : numpy.ndarray (n, n) or None
    mlp : MlpData
    head_classes : dict, optional
        The head classes of :func:`attnsym.heads.classify` for this input
        (:meth:`~attnsym.heads.HeadReport.to_dict`: layer and head counted from 1, a class and
        the scores of every head) with the classes' descriptions; the overview labels each
        thumbnail with it.
    sinks : tuple of bool, optional
        Per token, whether it is a sink's key (a special token such as ``[CLS]`` or ``[SEP]``,
        or a decoder's first token): the page says a row that parks on one "reads nothing".
    next_tokens : tuple of (str, float), optional
        A decoder's most probable next tokens after the text, with their probabilities
        (:meth:`attnsym.models.Route.top_next`); the page shows them beside where the last
        position reads from (the rollout's last row).
    """

    name: str
    source: str
    tokens: tuple[str, ...]
    attention: np.ndarray
    fused: dict[str, np.ndarray]
    rollout: np.ndarray | None
    flow: np.ndarray | None
    mlp: MlpData
    head_classes: dict[str, Any] | None = None
    sinks: tuple[bool, ...] | None = None
    next_tokens: tuple[tuple[str, float], ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if n == 0:
            raise ShapeError(f"input {self.name!r} has no tokens")
        if self.sinks is not None and len(self.sinks) != n:
            raise ShapeError(f"sinks must have one flag per token ({n}) (got {len(self.sinks)})")
        A = _matrix("attention", self.attention, (None, None, n, n))
        for key, M in self.fused.items():
            _matrix(f"fused[{key!r}]", M, (A.shape[0], n, n))
        for key in ("rollout", "flow"):
            if getattr(self, key) is not None:
                _matrix(key, getattr(self, key), (n, n))

    @property
    def layers(self) -> int:
        return int(np.shape(self.attention)[0])

    @property
    def heads(self) -> int:
        return int(np.shape(self.attention)[1])

    @property
    def weights(self) -> int:
        """How many weights the input's arrays hold (attention, fusions, rollout, flow)."""
        arrays = [self.attention, *self.fused.values(), self.rollout, self.flow]
        return sum(int(np.size(a)) for a in arrays if a is not None)

    def bounded(self, max_weights: int = DENSE_MAX_WEIGHTS) -> bool:
        """Whether the page stores this input bounded (more than ``max_weights`` weights)."""
        return self.weights > max_weights

    def to_dict(self, max_weights: int = DENSE_MAX_WEIGHTS) -> dict[str, Any]:
        bounded = self.bounded(max_weights)
        encode = top_k_rows if bounded else encode_array
        stored: dict[str, Any] = {
            "attention": encode(self.attention),
            "fused": {k: encode(v) for k, v in self.fused.items()},
            "rollout": None if self.rollout is None else encode(self.rollout),
            "flow": None if self.flow is None else encode(self.flow),
        }
        dropped = max(stored["attention"]["dropped"], stored["fused"]["mean"]["dropped"] if "mean" in stored["fused"] else 0.0) \
            if bounded else 0.0  # probability rows only (a max over heads is no distribution)
        return {
            "name": self.name, "source": self.source, "tokens": list(self.tokens),
            "layers": self.layers, "heads": self.heads, **stored,
            "bounded": {"top_k": TOP_K, "weights": self.weights, "dropped": dropped} if bounded else None,
            "mlp": self.mlp.to_dict(),
            "head_classes": self.head_classes,
            "sinks": None if self.sinks is None else [bool(x) for x in self.sinks],
            "next": None if self.next_tokens is None else [[str(t), float(p)] for t, p in self.next_tokens],
        }


@dataclass(frozen=True)
class ContrastData:
    """One word in two inputs: its routing per layer and head, and how far apart the two are.

    Attributes
    ----------
    word : str
        The word as the user asked for it.
    inputs : (int, int)
        Indices of the two inputs in :attr:`PageData.inputs`.
    positions : (int, int)
        The word's token position in each input.
    distance : numpy.ndarray, (L, H)
        The distance between the word's two routing rows, per layer and head.
    metric : str
        What :attr:`distance` measures, in one sentence.
    rows : (dict, dict)
        Per input, the word's attention row: ``"heads"`` ``(L, H, n_k)`` and the head fusions
        ``"mean"``, ``"max"`` ``(L, n_k)``, as the layer that compared them computed them.
    shares : (array, array) or None
        Per input, the rows pooled into :attr:`roles`, ``(L, H, len(roles))``.
    roles : tuple of str
    note : str
        One sentence on what stayed the same (e.g. the weights' fingerprints).
    cell : (int, int), optional
        The layer and head (from 0) the page opens the contrast on; default the cell of the
        largest :attr:`distance` (the head where the two rows differ most).
    facts : tuple of (str, str)
        Further numbers of the contrast, already formatted (label, value), shown beside it.
    """

    word: str
    inputs: tuple[int, int]
    positions: tuple[int, int]
    distance: np.ndarray
    metric: str
    rows: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]
    shares: tuple[np.ndarray, np.ndarray] | None = None
    roles: tuple[str, ...] = ()
    note: str = ""
    cell: tuple[int, int] | None = None
    facts: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        L, H = _matrix("contrast distance", self.distance, (None, None)).shape
        if self.cell is None:
            layer, head = np.unravel_index(int(np.argmax(np.asarray(self.distance))), (L, H))
            object.__setattr__(self, "cell", (int(layer), int(head)))
        elif not (0 <= self.cell[0] < L and 0 <= self.cell[1] < H):
            raise SpecError(f"contrast cell must be a (layer, head) inside ({L}, {H}) (got {self.cell})")
        for k, row in enumerate(self.rows):
            n = np.shape(row["heads"])[-1]
            _matrix(f"rows[{k}]['heads']", row["heads"], (L, H, n))
            for key in ("mean", "max"):
                _matrix(f"rows[{k}][{key!r}]", row[key], (L, n))
        if self.shares is not None:
            for k, share in enumerate(self.shares):
                _matrix(f"shares[{k}]", share, (L, H, len(self.roles)))

    def to_dict(self) -> dict[str, Any]:
        return {"word": self.word, "inputs": list(self.inputs), "positions": list(self.positions),
                "distance": encode_array(self.distance), "metric": self.metric,
                "rows": [{k: encode_array(v) for k, v in row.items()} for row in self.rows],
                "shares": None if self.shares is None else [encode_array(s) for s in self.shares],
                "roles": list(self.roles), "note": self.note, "cell": list(self.cell or (0, 0)),
                "facts": [[str(k), str(v)] for k, v in self.facts]}


@dataclass(frozen=True)
class PageData:
    """Everything one explorer page shows (see :func:`attnsym.explorer.write_page`).

    Attributes
    ----------
    title : str
    derivations : list of dict
        From :func:`attnsym.explorer.derivation_section`.
    claims : list of dict
        From :func:`attnsym.explorer.claims_section`.
    inputs : list of RoutingInput
    contrasts : list of ContrastData
    files : list of (str, str)
        Files beside the page (relative path, what it shows), listed as links under a fold
        (the tour's folder); a link is followed only when clicked, nothing is fetched.
    results : list of (str, str, str, str)
        What was checked, first on the page (the tour's results): title, one sentence, status
        (``"ok"``, ``"bad"`` or ``"info"``: said in words too, never by colour alone) and the
        page's anchor that shows it (``"#claims"``) or ``""``.
    figures : list of (str, str, bytes)
        Figures shown on the page (the tour's): the file's relative path, its caption, its PNG
        (inlined as a ``data:`` URI; the page still fetches nothing).
    meta : dict
        Plain facts shown in the page's footer (version, seed, what was computed).
    max_weights : int
        An input holding more weights is stored bounded (:data:`DENSE_MAX_WEIGHTS`).
    """

    title: str = "attnsym explorer"
    derivations: Sequence[dict[str, Any]] = ()
    claims: Sequence[dict[str, Any]] = ()
    inputs: Sequence[RoutingInput] = ()
    contrasts: Sequence[ContrastData] = ()
    files: Sequence[tuple[str, str]] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    max_weights: int = DENSE_MAX_WEIGHTS
    results: Sequence[tuple[str, str, str, str]] = ()
    figures: Sequence[tuple[str, str, bytes]] = ()

    def __post_init__(self) -> None:
        for title, _, status, target in self.results:
            if status not in RESULT_STATUSES:
                raise SpecError(f"result {title!r}: status must be one of {', '.join(RESULT_STATUSES)} (got {status!r})")
            if target and not target.startswith("#"):
                raise SpecError(f"result {title!r}: target must be an anchor of the page such as '#claims' (got {target!r})")
        for path, _, png in self.figures:
            if not bytes(png[:8]) == b"\x89PNG\r\n\x1a\n":
                raise SpecError(f"figure {path!r} must be PNG bytes (got {bytes(png[:8])!r}...)")
        for c in self.contrasts:
            for k, (index, position) in enumerate(zip(c.inputs, c.positions, strict=True)):
                if not 0 <= index < len(self.inputs):
                    raise SpecError(f"contrast {c.word!r}: input index {index} is not one of the "
                                    f"{len(self.inputs)} inputs")
                inp = self.inputs[index]
                if not 0 <= position < len(inp.tokens):
                    raise SpecError(f"contrast {c.word!r}: position {position} is outside input {k + 1}'s "
                                    f"{len(inp.tokens)} tokens")
                _matrix("contrast distance", c.distance, (inp.layers, inp.heads))
                _matrix(f"contrast rows[{k}]", c.rows[k]["heads"], (inp.layers, inp.heads, len(inp.tokens)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title, "decimals": WEIGHT_DECIMALS,
            "derivations": list(self.derivations), "claims": list(self.claims),
            "inputs": [i.to_dict(self.max_weights) for i in self.inputs],
            "contrasts": [c.to_dict() for c in self.contrasts],
            "files": [{"path": str(p), "what": str(w)} for p, w in self.files],
            "results": [{"title": str(t), "text": str(x), "status": s, "target": g} for t, x, s, g in self.results],
            "figures": [{"path": str(p), "caption": str(c),
                         "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii")} for p, c, png in self.figures],
            "meta": dict(self.meta),
        }

    def bounded_inputs(self) -> list[str]:
        """The names of the inputs the page stores bounded (each row's top weights only)."""
        return [i.name for i in self.inputs if i.bounded(self.max_weights)]

    def to_json(self) -> str:
        """Compact JSON, safe inside a ``<script>`` element: every ``<`` is written ``\\u003c``."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.replace("<", "\\u003c")
