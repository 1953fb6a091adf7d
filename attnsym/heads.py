r"""Name what every attention head does: defined scores per pattern, and a class per head.

:func:`classify` takes a :class:`~attnsym.models.Route` (any family, causal or bidirectional),
a list of routes (several texts: a padded batch is already cut to real tokens by
``Model.route``), or attention arrays, and returns a :class:`HeadReport`.

**For the explorer and the CLI** (the data contract):

* ``report = classify(routes, induction=None, thresholds=None, max_offset=4)``, or
  ``probe(model)`` (the repeated random sequence of the induction protocol, every pattern scored
  on it);
* :class:`HeadReport` fields: ``scores`` ``(layers, heads, patterns)`` float64, NaN where a
  pattern does not apply; ``patterns`` (the names of the last axis, :data:`PATTERNS`);
  ``labels`` ``(layers, heads)``: per head a tuple of **every** class whose score passes its
  threshold, highest score first (``("mixed",)`` when none does); ``primary`` ``(layers, heads)``
  the one class a table shows; ``top`` ``(layers, heads)`` the primary class's score (NaN for
  ``mixed``); ``band_offset`` ``(layers, heads)`` the offset of the band score; ``thresholds``
  (pattern -> threshold); ``causal``; ``texts``; ``queries`` (queries counted per pattern, the
  most over layers); methods ``score(pattern)``, ``table()``, ``to_dict()`` (1-based
  ``layer``/``head``), ``counts()`` (primary class -> count per layer), ``label_counts()``
  (class -> heads carrying it per layer), ``found()`` (class -> every head carrying it);
* classes, in order (:data:`CLASSES`), with a short label (:data:`SHORT`) and a sentence
  (:data:`DESCRIPTIONS`): ``previous-token`` (prev), ``next-token`` (next), ``self`` (self),
  ``first-token`` (first: ``[CLS]`` or the first token, a sink), ``end-token`` (end: ``[SEP]``
  or the last real token, a sink), ``learned-sink`` (sink: the mass π a learned sink logit takes, gpt-oss),
  ``punctuation`` (punct), ``band`` (band: a fixed offset
  other than -1, 0, +1), ``broad`` (broad: high normalised entropy), ``induction`` (induct),
  ``duplicate-token`` (dup), ``mixed`` (mixed: no score above its threshold).

**Scores.** ``A`` is one text's ``(n, n)`` attention of one head (rows = queries ``i``, keys
``j``, real tokens only). The *allowed keys* of query ``i`` are all ``n`` tokens
(bidirectional) or ``j <= i`` (causal), and of a route also only those whose score is finite
(a sliding-window layer, as in Mistral or Gemma 2, masks ``j <= i - w``); only queries with at
least two allowed keys count (in a decoder query 0 sees only itself), and a query counts for a
pattern only where the pattern's key is allowed (query ``i >= w`` of a window ``w`` does not
count for first-token). Each score is a mean over a set of queries, pooled over the texts (and
counted per layer) so that **every query weighs the same** (``sum of values / number of queries``):

* previous-token: :math:`A_{i,i-1}` over queries ``i >= 1``;
* next-token: :math:`A_{i,i+1}` over ``i <= n-2`` (bidirectional only; NaN for a decoder);
* self: :math:`A_{i,i}`;
* first-token: :math:`A_{i,0}` over ``i >= 1``;
* end-token: :math:`A_{i,n-1}` over ``i <= n-2`` (bidirectional only: in a decoder only the
  last query sees the last token);
* learned-sink: :math:`\pi_i`, the mass query ``i`` gave a learned sink logit (a route's
  ``sink_mass``, or ``1 − Σ_j A_ij`` of an array with ``sinks=True``); NaN without a sink;
* punctuation: :math:`\sum_{j \in P, j \ne i} A_{ij}` over queries with at least one allowed
  punctuation key ``j != i``; ``P`` are the non-special tokens whose text is all Unicode
  punctuation (category ``P*``). NaN when no text has any (or no token strings were given);
* band: :math:`\max_k m_k` over offsets :math:`2 \le |k| \le` ``max_offset``, where
  :math:`m_k` is the mean of :math:`A_{i,i+k}` over the queries for which key ``i + k`` exists,
  is allowed, and is neither the first nor the last token (those are the sinks' keys, so a sink
  head scores no band); ``band_offset`` reports the maximising ``k`` (ties: the smallest
  ``|k|``, then the negative one);
* broad: :math:`H_i / \ln m_i`, the row entropy :math:`H_i = -\sum_j A_{ij} \ln A_{ij}`
  normalised by the log of the number ``m_i`` of allowed keys (1 for a uniform row, 0 for a
  one-hot row); with a learned sink the sink is one more outcome: ``π_i`` joins the row and the
  log is of ``m_i + 1``, so a row that gives all to the sink is not broad;
* induction and duplicate-token: from :func:`induction_scores` (decoders only; NaN unless
  passed as ``induction=``).

**Labels.** A head carries every class whose score is at or above its threshold
(:data:`DEFAULT_THRESHOLDS`), so a head that parks most queries on ``[CLS]`` and also copies
the token after an earlier occurrence is both ``first-token`` and ``induction``: a sink never
hides what else a head does. Its **primary** class (for tables) is the highest-scoring of the
*specific* patterns that pass (:data:`SPECIFIC`: previous, next, self, punctuation, band,
induction, duplicate); the sinks (first, end, learned-sink) and broad are primary only when no
specific pattern passes (a sink is where a head puts the attention it does not use: Clark et al. 2019,
Xiao et al. 2024). Ties go to the earlier pattern of :data:`PATTERNS`; no class passes:
``mixed``.

**Inputs.** Attention rows must be probability rows: entries in ``[0, 1]`` and each row's sum
within :data:`ROW_SUM_TOLERANCE` of 1 — or, with ``sinks=True`` (a learned sink logit takes
:math:`\pi` of each row), a sum in ``[0, 1]``; a route of a sink family (its ``sink_mass`` set)
is read that way without asking. No dimension may be empty. Inputs are never modified (arrays
are copied).

>>> import numpy as np
>>> A = np.zeros((1, 2, 4, 4))
>>> A[0, 0] = np.eye(4, k=-1); A[0, 0, 0, 0] = 1.0        # head 1: previous token
>>> A[0, 1] = 0.25                                         # head 2: uniform
>>> r = classify(A)
>>> r.primary
(('previous-token', 'broad'),)
>>> r.labels[0][0]                                         # every label that passes
('previous-token',)
>>> float(r.score("previous")[0, 0]), float(r.score("broad")[0, 1])
(1.0, 1.0)
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ._checks import boolean, finite_real, integer_at_least, positive_int
from ._html import head_report_html
from .errors import AttnsymError, ShapeError, SpecError
from .numeric.entropy import row_entropy
from .tables import head_records, to_pandas

__all__ = [
    "CLASSES",
    "DEFAULT_THRESHOLDS",
    "DESCRIPTIONS",
    "MAX_PROBE_BATCH",
    "PATTERNS",
    "ROW_SUM_TOLERANCE",
    "SHORT",
    "SPECIFIC",
    "HeadReport",
    "HeadsError",
    "InductionScores",
    "classify",
    "induction_scores",
    "probe",
    "probe_sequences",
]

#: the scored patterns, the order of the last axis of :attr:`HeadReport.scores`
PATTERNS: tuple[str, ...] = ("previous", "next", "self", "first", "end", "sink", "punctuation", "band", "broad",
                             "induction", "duplicate")

#: pattern -> class name of a head that the pattern wins
_CLASS_OF: dict[str, str] = {
    "previous": "previous-token", "next": "next-token", "self": "self", "first": "first-token",
    "end": "end-token", "sink": "learned-sink", "punctuation": "punctuation", "band": "band", "broad": "broad",
    "induction": "induction", "duplicate": "duplicate-token",
}

#: every class a head can get, in display order (``mixed`` last)
CLASSES: tuple[str, ...] = (*(_CLASS_OF[p] for p in PATTERNS), "mixed")

#: class -> a short label (for grids and thumbnails)
SHORT: dict[str, str] = {
    "previous-token": "prev", "next-token": "next", "self": "self", "first-token": "first", "end-token": "end",
    "learned-sink": "sink", "punctuation": "punct", "band": "band", "broad": "broad", "induction": "induct",
    "duplicate-token": "dup",
    "mixed": "mixed",
}

#: class -> one sentence saying what such a head does
DESCRIPTIONS: dict[str, str] = {
    "previous-token": "reads the token just before it",
    "next-token": "reads the token just after it",
    "self": "reads itself",
    "first-token": "reads the first token ([CLS] or the first word): a sink",
    "end-token": "reads the last token ([SEP] or the last word): a sink",
    "learned-sink": "gives its attention to the learned sink logit (the mass π that reaches no token)",
    "punctuation": "reads the punctuation marks",
    "band": "reads a token at a fixed distance (2 or more) before or after it",
    "broad": "spreads its attention over many tokens (high normalised entropy)",
    "induction": "on a repeated sequence, reads the token after the earlier copy of itself",
    "duplicate-token": "on a repeated sequence, reads the earlier copy of itself",
    "mixed": "no pattern reaches its threshold",
}

#: pattern -> default threshold of its score (a head gets the class only at or above it)
DEFAULT_THRESHOLDS: dict[str, float] = {
    "previous": 0.4, "next": 0.4, "self": 0.4, "first": 0.4, "end": 0.4, "sink": 0.4, "punctuation": 0.4,
    "band": 0.4,
    "broad": 0.8, "induction": 0.4, "duplicate": 0.4,
}

#: patterns that name a head's main job; the sinks (first, end, the learned sink) and broad are primary only when
#: none of these passes
SPECIFIC: tuple[str, ...] = ("previous", "next", "self", "punctuation", "band", "induction", "duplicate")

#: how far a row's sum may be from 1 (float32 rows over thousands of keys stay far inside)
ROW_SUM_TOLERANCE = 1e-3

#: the most random sequences :func:`induction_scores` and :func:`probe` run (one at a time: memory is one sequence's)
MAX_PROBE_BATCH = 64

_P = {name: k for k, name in enumerate(PATTERNS)}


class HeadsError(AttnsymError, ValueError):
    """A head score asked for where it is not defined (e.g. induction scores of a bidirectional model)."""


@dataclass(frozen=True)
class InductionScores:
    """Induction and duplicate-token scores of every head on seeded repeated random sequences.

    Attributes
    ----------
    induction, duplicate : (layers, heads) float64 arrays
    length, seed, batch : int
        The protocol: ``batch`` sequences of ``length`` random token ids, each repeated twice.
    ids : (batch, prefix + 2 * length) int64 array
        The ids run through the model.
    prefix : int
        Tokens put before each sequence (e.g. a beginning-of-text token).
    """

    induction: np.ndarray
    duplicate: np.ndarray
    length: int
    seed: int
    batch: int
    ids: np.ndarray
    prefix: int


@dataclass(frozen=True)
class HeadReport:
    """Scores and classes of every head (see the module docstring for the formulas).

    Layers and heads are indexed from 0 in the arrays; :meth:`table` and :meth:`to_dict` count
    them from 1, as people read them.
    """

    scores: np.ndarray
    patterns: tuple[str, ...]
    labels: tuple[tuple[tuple[str, ...], ...], ...]
    primary: tuple[tuple[str, ...], ...]
    top: np.ndarray
    band_offset: np.ndarray
    thresholds: Mapping[str, float]
    causal: bool
    texts: tuple[str, ...]
    queries: Mapping[str, int] = field(default_factory=dict)

    @property
    def layers(self) -> int:
        """Number of layers."""
        return int(self.scores.shape[0])

    @property
    def heads(self) -> int:
        """Number of heads per layer."""
        return int(self.scores.shape[1])

    def score(self, pattern: str) -> np.ndarray:
        """The ``(layers, heads)`` scores of one pattern (a name of :data:`PATTERNS`)."""
        if pattern not in _P:
            raise SpecError(f"pattern must be one of {', '.join(map(repr, PATTERNS))} (got {pattern!r})")
        return self.scores[:, :, _P[pattern]]

    def counts(self) -> dict[str, tuple[int, ...]]:
        """Primary class -> number of heads of that primary class in each layer (every class of :data:`CLASSES`)."""
        return {c: tuple(sum(1 for label in row if label == c) for row in self.primary) for c in CLASSES}

    def label_counts(self) -> dict[str, tuple[int, ...]]:
        """Class -> number of heads carrying that label in each layer (a head counts once per label it carries)."""
        return {c: tuple(sum(1 for labels in row if c in labels) for row in self.labels) for c in CLASSES}

    def found(self) -> dict[str, list[tuple[int, int, float]]]:
        """Class -> every head carrying it as ``(layer, head, score)``, layers and heads from 1, highest score first.

        Only classes some head carries; ``mixed`` is left out.
        """
        out: dict[str, list[tuple[int, int, float]]] = {}
        for pattern in PATTERNS:
            cls = _CLASS_OF[pattern]
            hits = [(ly + 1, h + 1, float(self.scores[ly, h, _P[pattern]]))
                    for ly in range(self.layers) for h in range(self.heads) if cls in self.labels[ly][h]]
            if hits:
                out[cls] = sorted(hits, key=lambda t: (-t[2], t[0], t[1]))
        return out

    def table(self) -> str:
        """A text table: one row per layer, one column per head, each cell ``primary score`` then ``+other`` labels."""
        header = ["layer"] + [f"head {h + 1}" for h in range(self.heads)]
        rows = [header]
        for ly in range(self.layers):
            cells = [str(ly + 1)]
            for h in range(self.heads):
                label = self.primary[ly][h]
                value = self.top[ly, h]
                cell = SHORT[label] if math.isnan(value) else f"{SHORT[label]} {value:.2f}"
                cells.append(cell + "".join(f" +{SHORT[c]}" for c in self.labels[ly][h] if c != label))
            rows.append(cells)
        widths = [max(len(r[k]) for r in rows) for k in range(len(header))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready; NaN becomes None); ``layer``/``head`` numbered from 1."""
        def num(v: float) -> float | None:
            return None if math.isnan(v) else float(v)

        heads = []
        for ly in range(self.layers):
            for h in range(self.heads):
                heads.append({
                    "layer": ly + 1, "head": h + 1, "class": self.primary[ly][h], "label": SHORT[self.primary[ly][h]],
                    "labels": list(self.labels[ly][h]),
                    "top_score": num(self.top[ly, h]), "band_offset": int(self.band_offset[ly, h]),
                    "scores": {p: num(self.scores[ly, h, k]) for k, p in enumerate(self.patterns)},
                })
        return {
            "numbering": "layer and head count from 1", "causal": self.causal, "texts": list(self.texts),
            "patterns": list(self.patterns), "classes": list(CLASSES), "thresholds": dict(self.thresholds),
            "queries": dict(self.queries), "layers": self.layers, "heads_per_layer": self.heads, "heads": heads,
            "counts": {c: list(v) for c, v in self.counts().items()},
            "label_counts": {c: list(v) for c, v in self.label_counts().items()},
        }

    def _repr_html_(self) -> str:
        return head_report_html(self, SHORT)

    def to_records(self) -> list[dict[str, Any]]:
        """One row per layer, head and pattern, counted from 1 (:data:`attnsym.tables.HEAD_COLUMNS`)."""
        return head_records(self)

    def to_pandas(self) -> Any:
        """:meth:`to_records` as a pandas DataFrame (the extra ``tables``; :func:`attnsym.tables.to_pandas`)."""
        return to_pandas(self)


# ---------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class _Item:
    A: np.ndarray  # (L, H, n, n) float64, a private copy
    allowed: np.ndarray  # (L, n, n) bool: the keys each query's mask lets it see, per layer
    punct: np.ndarray  # (n,) bool
    causal: bool
    text: str
    pi: np.ndarray | None = None  # (L, H, n): the mass each query gave a learned sink, or None without one


def _piece(text: str) -> str:
    for mark in ("##", "Ġ", "▁"):
        if text.startswith(mark):
            text = text[len(mark):]
    return text.strip()


def _is_punct(text: str) -> bool:
    text = _piece(text)
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def _check_weights(A: np.ndarray, name: str, sinks: bool) -> np.ndarray:
    """A private float64 copy of ``A`` (..., n, n), refused unless every row is a probability row (module docstring)."""
    if A.dtype.kind not in "fiu" or A.dtype == np.bool_:
        raise ShapeError(f"{name} must hold real attention weights (got dtype {A.dtype})")
    if A.size == 0 or 0 in A.shape:
        raise ShapeError(f"{name} has an empty dimension (shape {A.shape}): every layer, head and token axis needs "
                         "at least one entry")
    out = np.array(A, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(out)) or np.any(out < 0) or np.any(out > 1 + ROW_SUM_TOLERANCE):
        raise ShapeError(f"{name} must hold attention probabilities: finite weights in [0, 1] "
                         f"(got values from {np.nanmin(out):.3g} to {np.nanmax(out):.3g})")
    sums = out.sum(axis=-1)
    low = 0.0 if sinks else 1 - ROW_SUM_TOLERANCE
    bad = (sums < low) | (sums > 1 + ROW_SUM_TOLERANCE)
    if np.any(bad):
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        want = "in [0, 1] (sinks=True: a learned sink takes the rest)" if sinks else \
            f"1 within {ROW_SUM_TOLERANCE:g} (pass sinks=True where a learned sink takes part of each row)"
        raise ShapeError(f"{name} must have probability rows summing to {want} (got {float(sums[where]):.6g} "
                         f"at index {where})")
    return out


def _from_route(route: Any, k: int, sinks: bool) -> _Item:
    attention = np.asarray(route.attention)
    if attention.ndim != 4 or attention.shape[2] != attention.shape[3] or attention.shape[2] != len(route.tokens):
        raise ShapeError(f"route {k} must have attention of shape (layers, heads, n, n) with n = {len(route.tokens)} "
                         f"tokens (got {attention.shape})")
    punct = np.array([not special and _is_punct(route.text[a:b] if b > a else token)
                      for token, (a, b), special in zip(route.tokens, route.offsets, route.special, strict=True)],
                     dtype=bool)
    mass = getattr(route, "sink_mass", None)
    A = _check_weights(attention, f"route {k} attention", sinks or mass is not None)
    pi = None if mass is None else np.array(mass, dtype=np.float64)
    if pi is not None and pi.shape != A.shape[:-1]:
        raise ShapeError(f"route {k} sink_mass must have shape (layers, heads, n) = {A.shape[:-1]} (got {pi.shape})")
    if pi is None and sinks:
        pi = np.clip(1.0 - A.sum(axis=-1), 0.0, 1.0)
    allowed = _mask(A.shape[0], A.shape[-1], bool(route.causal))
    scores = getattr(route, "scores", None)
    if scores is not None and np.shape(scores) == A.shape:  # -inf where masked: a sliding window shows here
        allowed = allowed & np.isfinite(np.asarray(scores)).any(axis=1)
    return _Item(A, allowed, punct, bool(route.causal), route.text, pi)


def _mask(layers: int, n: int, causal: bool) -> np.ndarray:
    """(layers, n, n) allowed keys: j <= i in a decoder, every key otherwise."""
    i = np.arange(n)
    base = (i[None, :] <= i[:, None]) if causal else np.ones((n, n), dtype=bool)
    return np.broadcast_to(base, (layers, n, n))


def _infer_causal(A: np.ndarray) -> bool:
    n = A.shape[-1]
    return bool(n > 1 and not np.any(A[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]]))


def _token_lists(tokens: Any, B: int) -> list[list[str]] | None:
    """``tokens=`` as one list of strings per text, or a ShapeError naming what was wrong."""
    if tokens is None:
        return None
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence) or len(tokens) != B:
        raise ShapeError(f"tokens must give one sequence of token strings per text ({B}) (got {tokens!r:.80})")
    out = []
    for b, toks in enumerate(tokens):
        if isinstance(toks, (str, bytes)) or not isinstance(toks, Sequence) or not all(isinstance(t, str) for t in toks):
            raise ShapeError(f"tokens[{b}] must be a sequence of token strings (got {toks!r:.80})")
        out.append(list(toks))
    return out


def _from_array(data: Any, mask: Any, tokens: Any, causal: bool | None, sinks: bool) -> list[_Item]:
    A = np.asarray(data)
    if A.ndim == 4:
        A = A[None]
    if A.ndim != 5 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"attention must have shape (layers, heads, n, n) or (texts, layers, heads, n, n) "
                         f"(got {np.shape(data)})")
    if 0 in A.shape:
        raise ShapeError(f"attention has an empty dimension (shape {A.shape}): texts, layers, heads and tokens need "
                         "at least one entry each")
    B, n = A.shape[0], A.shape[-1]
    if mask is None:
        M = np.ones((B, n), dtype=bool)
    else:
        M = np.asarray(mask)
        if M.dtype.kind not in "biuf" or M.shape != (B, n) or not np.all((M == 0) | (M == 1)):
            raise ShapeError(f"mask must be a 0/1 array of shape (texts, n) = ({B}, {n}) (got shape {M.shape}, "
                             f"dtype {M.dtype})")
        M = M.astype(bool)
    token_lists = _token_lists(tokens, B)
    items = []
    for b in range(B):
        real = np.flatnonzero(M[b])
        if real.size == 0:
            raise ShapeError(f"mask row {b} has no real token")
        sub = _check_weights(A[b][:, :, real][:, :, :, real], f"attention of text {b}", sinks)
        if token_lists is None:
            punct = np.zeros(real.size, dtype=bool)
        else:
            toks = token_lists[b]
            if len(toks) not in (n, real.size):
                raise ShapeError(f"tokens[{b}] must be {real.size} (or {n}) strings (got {len(toks)} items)")
            if len(toks) == n:
                toks = [toks[j] for j in real]
            punct = np.array([_is_punct(t) for t in toks], dtype=bool)
        is_causal = _infer_causal(sub) if causal is None else causal
        pi = np.clip(1.0 - sub.sum(axis=-1), 0.0, 1.0) if sinks else None  # what the sink took from each row
        items.append(_Item(sub, _mask(sub.shape[0], real.size, is_causal), punct, is_causal, "", pi))
    return items


def _items(data: Any, mask: Any, tokens: Any, causal: bool | None, sinks: bool) -> list[_Item]:
    if hasattr(data, "attention") and hasattr(data, "tokens"):
        return [_from_route(data, 0, sinks)]
    if isinstance(data, Sequence) and not isinstance(data, str) and data and all(
            hasattr(r, "attention") and hasattr(r, "tokens") for r in data):
        return [_from_route(r, k, sinks) for k, r in enumerate(data)]
    if isinstance(data, Sequence) and not isinstance(data, str) and not data:
        raise ShapeError("classify needs at least one route (got an empty list)")
    try:
        np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"classify takes a Route, a list of Routes or an attention array (got {type(data).__name__})"
                         ) from None
    return _from_array(data, mask, tokens, causal, sinks)


# ---------------------------------------------------------------------------------------------- scores
def _accumulate(item: _Item, max_offset: int, sums: np.ndarray, counts: np.ndarray,
                band_sums: np.ndarray, band_counts: np.ndarray) -> None:
    """Add one text's value sums (L, H, P) and query counts (L, P) for every pattern, layer by layer."""
    for ly in range(item.A.shape[0]):
        _accumulate_layer(item.A[ly], item.allowed[ly], item.punct, max_offset, sums[ly], counts[ly],
                          band_sums[ly], band_counts[ly], None if item.pi is None else item.pi[ly])


def _accumulate_layer(A: np.ndarray, allowed: np.ndarray, punct: np.ndarray, max_offset: int, sums: np.ndarray,
                      counts: np.ndarray, band_sums: np.ndarray, band_counts: np.ndarray,
                      pi: np.ndarray | None = None) -> None:
    """One layer: ``A`` (H, n, n), ``allowed`` (n, n), ``pi`` (H, n) or None; adds into the views ``sums`` (H, P),
    ``counts`` (P,), ….

    A query counts for a pattern only where its mask allows the pattern's key (a causal or
    sliding-window query that cannot see key 0 does not dilute the first-token score).
    """
    n = A.shape[-1]
    i = np.arange(n)
    m = allowed.sum(axis=1)  # allowed keys per query
    q = m >= 2  # the queries that count

    def add(pattern: str, rows: np.ndarray, values: np.ndarray) -> None:
        sums[:, _P[pattern]] += values.sum(axis=-1) if rows.size else 0.0
        counts[_P[pattern]] += rows.size

    def reach(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:  # the rows whose key is allowed
        return rows[allowed[rows, keys]] if rows.size else rows

    rows = i[q & (i >= 1)]
    rows = reach(rows, rows - 1)
    add("previous", rows, A[:, rows, rows - 1])
    rows = i[q & (i <= n - 2)]
    rows = reach(rows, rows + 1)  # none in a decoder
    add("next", rows, A[:, rows, rows + 1])
    rows = i[q & (i <= n - 2)]
    rows = reach(rows, np.full(rows.shape, n - 1))  # none in a decoder
    add("end", rows, A[:, rows, n - 1])
    rows = i[q]
    add("self", rows, A[:, rows, rows])
    rows = i[q & (i >= 1)]
    rows = reach(rows, np.zeros(rows.shape, dtype=np.int64))
    add("first", rows, A[:, rows, 0])
    keys = punct[None, :] & allowed & ~np.eye(n, dtype=bool)  # (n, n)
    rows = i[q & keys.any(axis=1)]
    add("punctuation", rows, (A[:, rows, :] * keys[rows]).sum(axis=-1))
    for slot, k in enumerate(_offsets(max_offset)):
        rows = i[q & (i + k >= 1) & (i + k <= n - 2)]  # the first and last token are sinks, not a band
        rows = reach(rows, rows + k)
        if rows.size:
            band_sums[:, slot] += A[:, rows, rows + k].sum(axis=-1)
            band_counts[slot] += rows.size
    rows = i[q]
    if pi is None:
        H = row_entropy(A[:, rows, :])  # (H, rows)
        add("broad", rows, H / np.log(m[rows]))
        return
    add("sink", rows, pi[:, rows])  # the learned sink: its mass π counts as one more place a row may go
    H = row_entropy(np.concatenate([A[:, rows, :], pi[:, rows, None]], axis=-1))  # (H, rows) over keys + sink
    add("broad", rows, H / np.log(m[rows] + 1))


def _offsets(max_offset: int) -> list[int]:
    """Band offsets in tie-breaking order: -2, 2, -3, 3, …"""
    return [s * d for d in range(2, max_offset + 1) for s in (-1, 1)]


def _thresholds(thresholds: Mapping[str, Any] | None) -> dict[str, float]:
    out = dict(DEFAULT_THRESHOLDS)
    if thresholds is None:
        return out
    if not isinstance(thresholds, Mapping):
        raise SpecError(f"thresholds must be a mapping pattern -> number (got {type(thresholds).__name__})")
    for key, value in thresholds.items():
        if key not in _P:
            raise SpecError(f"thresholds has an unknown pattern {key!r}; the patterns are {', '.join(PATTERNS)}")
        v = finite_real(f"thresholds[{key!r}]", value)
        if not 0.0 <= v <= 1.0:
            raise SpecError(f"thresholds[{key!r}] must lie in [0, 1] (got {v})")
        out[key] = v
    return out


def classify(data: Any, *, induction: InductionScores | None = None, thresholds: Mapping[str, float] | None = None,
             max_offset: int = 4, mask: Any = None, tokens: Any = None, causal: bool | None = None,
             sinks: bool = False) -> HeadReport:
    """Score every head for every pattern and name its class (formulas in the module docstring).

    Parameters
    ----------
    data : Route, list of Route, or array
        One route, several (each query of every text weighs the same), or attention weights
        ``(layers, heads, n, n)`` / ``(texts, layers, heads, n, n)``.
    induction : InductionScores, optional
        From :func:`induction_scores` on the same model: fills the induction and
        duplicate-token scores (else NaN; they need repeated random sequences, not these texts).
    thresholds : mapping, optional
        Pattern -> threshold in ``[0, 1]``, overriding :data:`DEFAULT_THRESHOLDS` for those given.
    max_offset : int, default 4
        The band score looks at offsets ``2 <= |k| <= max_offset``.
    mask : (texts, n) 0/1 array, optional
        Arrays only: 1 for real tokens, 0 for padding (padding rows and columns are dropped).
    tokens : sequence of sequences of str, optional
        Arrays only: token strings per text (for the punctuation score).
    causal : bool, optional
        Arrays only: decoder or not; by default inferred (True when every weight above the
        diagonal is 0). Routes say it themselves.
    sinks : bool, default False
        Rows may sum to less than 1 (a learned sink logit took the rest); otherwise every row
        must sum to 1 within :data:`ROW_SUM_TOLERANCE`.

    Returns
    -------
    HeadReport

    Raises
    ------
    ShapeError
        Arrays of the wrong shape or with an empty dimension, rows that are not probability rows,
        bad ``tokens`` or ``mask``, routes of different sizes.
    SpecError
        A bad threshold, ``max_offset``, ``causal`` or ``sinks``.
    """
    max_offset = integer_at_least("max_offset", max_offset, 2)
    limits = _thresholds(thresholds)
    causal = None if causal is None else boolean("causal", causal)
    sinks = boolean("sinks", sinks)
    items = _items(data, mask, tokens, causal, sinks)
    L, H = items[0].A.shape[:2]
    for k, it in enumerate(items):
        if it.A.shape[:2] != (L, H):
            raise ShapeError(f"every text must have the same layers and heads (text 0 has {L}x{H}, text {k} has "
                             f"{it.A.shape[0]}x{it.A.shape[1]})")
    is_causal = items[0].causal
    if any(it.causal != is_causal for it in items):
        raise ShapeError("the texts mix causal and bidirectional attention; classify one model at a time")
    max_offset = min(max_offset, max(2, max(it.A.shape[-1] for it in items) - 1))  # longer offsets exist in no text
    offsets = _offsets(max_offset)
    sums = np.zeros((L, H, len(PATTERNS)))
    counts = np.zeros((L, len(PATTERNS)), dtype=np.int64)
    band_sums = np.zeros((L, H, len(offsets)))
    band_counts = np.zeros((L, len(offsets)), dtype=np.int64)
    for it in items:
        _accumulate(it, max_offset, sums, counts, band_sums, band_counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], np.nan)
        band = np.where(band_counts[:, None] > 0, band_sums / np.maximum(band_counts, 1)[:, None], -np.inf)  # (L, H, O)
    best = np.argmax(band, axis=-1)  # first maximum: the tie order of _offsets
    band_best = np.take_along_axis(band, best[..., None], axis=-1)[..., 0]
    scores[:, :, _P["band"]] = np.where(np.isfinite(band_best), band_best, np.nan)
    band_offset = np.where(np.isfinite(band_best), np.asarray(offsets)[best], 0).astype(np.int64)
    if induction is not None:
        if not isinstance(induction, InductionScores):
            raise SpecError(f"induction must be InductionScores from induction_scores() (got {type(induction).__name__})")
        for name in ("induction", "duplicate"):
            values = np.asarray(getattr(induction, name))
            if values.shape != (L, H):
                raise ShapeError(f"{name} scores must have the texts' (layers, heads) = ({L}, {H}) (got {values.shape})")
            if values.dtype.kind != "f" or not np.all((values >= 0) & (values <= 1 + ROW_SUM_TOLERANCE)):
                raise ShapeError(f"{name} scores must be mean attention weights in [0, 1]")
        scores[:, :, _P["induction"]] = induction.induction
        scores[:, :, _P["duplicate"]] = induction.duplicate
    labels, primary, top = _label(scores, limits)
    for arr in (scores, top, band_offset):
        arr.setflags(write=False)
    return HeadReport(scores=scores, patterns=PATTERNS, labels=labels, primary=primary, top=top, band_offset=band_offset,
                      thresholds=limits, causal=is_causal, texts=tuple(it.text for it in items),
                      queries={p: int(counts[:, _P[p]].max()) for p in PATTERNS
                               if p not in ("band", "induction", "duplicate") and (p != "sink" or counts[:, _P[p]].any())})


def _label(scores: np.ndarray, limits: Mapping[str, float]
           ) -> tuple[tuple[tuple[tuple[str, ...], ...], ...], tuple[tuple[str, ...], ...], np.ndarray]:
    """Every passing class per head (highest score first), the primary class (module docstring) and its score."""
    L, H, _ = scores.shape
    top = np.full((L, H), np.nan)
    labels, primary = [], []
    for ly in range(L):
        row_labels, row_primary = [], []
        for h in range(H):
            passing = [(float(scores[ly, h, k]), k, p) for k, p in enumerate(PATTERNS)
                       if not math.isnan(scores[ly, h, k]) and scores[ly, h, k] >= limits[p]]
            passing.sort(key=lambda t: (-t[0], t[1]))  # highest score first, ties in PATTERNS order
            row_labels.append(tuple(_CLASS_OF[p] for _, _, p in passing) or ("mixed",))
            best = next((t for t in passing if t[2] in SPECIFIC), passing[0] if passing else None)
            row_primary.append("mixed" if best is None else _CLASS_OF[best[2]])
            if best is not None:
                top[ly, h] = best[0]
        labels.append(tuple(row_labels))
        primary.append(tuple(row_primary))
    return tuple(labels), tuple(primary), top


# ---------------------------------------------------------------------------------------------- induction
def _special_ids(model: Any) -> set[int]:
    out: set[int] = set()
    tokenizer = getattr(model, "tokenizer", None)
    decoder = getattr(tokenizer, "get_added_tokens_decoder", None)
    if decoder is not None:
        out.update(int(k) for k, tok in decoder().items() if getattr(tok, "special", True))
    pad = getattr(model.config, "pad_token_id", None)
    if pad is not None:
        out.add(int(pad))
    return out


def induction_scores(model: Any, *, length: int = 50, seed: int = 0, batch: int = 4,
                     prefix: Sequence[int] = ()) -> InductionScores:
    r"""Induction and duplicate-token scores on repeated random token sequences (decoders only).

    The standard protocol (Olsson et al. 2022; TransformerLens' ``induction score``): ``batch``
    sequences of ``length`` token ids drawn uniformly (``numpy.random.default_rng(seed)``) from
    the vocabulary without the special tokens, each repeated twice, after ``prefix`` (e.g. a
    beginning-of-text id; default none). With ``p = len(prefix)`` and ``L = length``, the
    second copy holds positions :math:`i = p + L, \dots, p + 2L - 1`, and

    * induction score :math:`= \operatorname{mean}_i A_{i,\,i - L + 1}` (the token after the
      earlier occurrence of token ``i``);
    * duplicate-token score :math:`= \operatorname{mean}_i A_{i,\,i - L}` (the earlier
      occurrence itself),

    averaged over the sequences. The sequences run one at a time (memory is one sequence's
    attention), at most :data:`MAX_PROBE_BATCH` of them.

    Raises
    ------
    HeadsError
        A bidirectional model (every token also sees the later copy, so the protocol does not
        apply), or ``prefix + 2 * length`` longer than the model's positions.
    SpecError
        A bad ``length``, ``seed``, ``batch`` (at most :data:`MAX_PROBE_BATCH`) or ``prefix``.
    """
    ids, p, attention = _probe_runs(model, length, seed, batch, prefix)
    induction, duplicate = _induction_means(attention, p, length)
    return InductionScores(induction=induction, duplicate=duplicate, length=length, seed=seed, batch=batch,
                           ids=ids, prefix=p)


def _probe_ids(model: Any, length: Any, seed: Any, batch: Any, prefix: Any) -> tuple[np.ndarray, int, int]:
    """The protocol's ids ``(batch, prefix + 2 length)``, checked against the model; and ``p``, ``length``."""
    length = integer_at_least("length", length, 2)
    batch = positive_int("batch", batch)
    if batch > MAX_PROBE_BATCH:
        raise SpecError(f"batch must be at most {MAX_PROBE_BATCH} sequences (got {batch}); the scores are means, "
                        "more sequences only narrow them")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise SpecError(f"seed must be a non-negative integer (got {seed!r})")
    if isinstance(prefix, (str, bytes)) or not isinstance(prefix, Sequence) or \
            not all(isinstance(t, (int, np.integer)) and not isinstance(t, bool) for t in prefix):
        raise SpecError(f"prefix must be a sequence of token ids (got {prefix!r:.80})")
    config = model.config
    if not config.causal:
        raise HeadsError(f"induction scores are defined for decoders; {model.name} is bidirectional (every token also "
                         "sees the later copy), so induction and duplicate-token heads are not applicable")
    p = len(prefix)
    n = p + 2 * length
    if n > config.max_positions:
        raise HeadsError(f"length={length} gives {n} tokens, more than the {config.max_positions} positions "
                         f"{model.name} has; use length <= {(config.max_positions - p) // 2}")
    vocab = int(config.vocab_size)
    if any(not 0 <= t < vocab for t in prefix):
        raise SpecError(f"prefix ids must lie in [0, {vocab}) (got {list(prefix)})")
    pool = np.setdiff1d(np.arange(vocab), np.fromiter(_special_ids(model), dtype=np.int64))
    rng = np.random.default_rng(seed)
    random = rng.choice(pool, size=(batch, length), replace=True).astype(np.int64)
    ids = np.concatenate([np.tile(np.asarray(prefix, dtype=np.int64), (batch, 1)), random, random], axis=1)
    ids.setflags(write=False)
    return ids, p, length


def probe_sequences(model: Any, *, length: int = 50, seed: int = 0, batch: int = 4,
                    prefix: Sequence[int] = ()) -> np.ndarray:
    """The token ids ``(batch, len(prefix) + 2 length)`` that :func:`induction_scores` and :func:`probe` run.

    Raises
    ------
    HeadsError, SpecError
        As :func:`induction_scores`.
    """
    return _probe_ids(model, length, seed, batch, prefix)[0]


def _probe_runs(model: Any, length: Any, seed: Any, batch: Any, prefix: Any) -> tuple[np.ndarray, int, np.ndarray]:
    """Run the protocol's sequences one at a time: ids, ``p`` and attention ``(batch, layers, heads, n, n)`` float32."""
    ids, p, _ = _probe_ids(model, length, seed, batch, prefix)
    runs = [np.asarray(model.forward(ids[b:b + 1]).attention, dtype=np.float32)[:, 0] for b in range(ids.shape[0])]
    return ids, p, np.stack(runs)


def _induction_means(attention: np.ndarray, p: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``A[i, i - L + 1]`` and ``A[i, i - L]`` over the second copy and the sequences, per layer and head."""
    n = attention.shape[-1]
    i = np.arange(p + length, n)
    A = attention[..., i, :]  # (batch, layers, heads, L, n)
    k = np.arange(i.size)
    induction = A[..., k, i - length + 1].astype(np.float64).mean(axis=(0, 3))
    duplicate = A[..., k, i - length].astype(np.float64).mean(axis=(0, 3))
    for arr in (induction, duplicate):
        arr.setflags(write=False)
    return induction, duplicate


def probe(model: Any, *, length: int = 50, seed: int = 0, batch: int = 4, prefix: Sequence[int] = (),
          thresholds: Mapping[str, float] | None = None) -> HeadReport:
    """Classify every head on the induction protocol's repeated random sequences (decoders only).

    The sequences of :func:`induction_scores` are run once; every pattern is scored on them
    (previous-token, sinks, broad … as :func:`classify` scores texts) and the induction and
    duplicate-token scores come from the same attention. On such a sequence an induction head
    shows as what it is, where ordinary text may show it mostly as a sink.

    Raises
    ------
    HeadsError, SpecError
        As :func:`induction_scores`.
    """
    ids, p, attention = _probe_runs(model, length, seed, batch, prefix)
    length = (ids.shape[1] - p) // 2
    induction, duplicate = _induction_means(attention, p, length)
    scores = InductionScores(induction=induction, duplicate=duplicate, length=length, seed=seed, batch=ids.shape[0],
                             ids=ids, prefix=p)
    report = classify(attention, induction=scores, thresholds=thresholds, causal=True)
    texts = tuple(f"random sequence {b + 1} of {length} tokens repeated twice (seed {seed})" for b in range(ids.shape[0]))
    return replace(report, texts=texts)
