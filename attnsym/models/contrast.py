r"""One word, two sentences, the same weights: how differently does the model route it?

:func:`contrast` runs both texts through one model as one padded batch (the very same
parameters for both), finds the word in each, and compares where it reads from in every layer
and head.

**Finding the word.** Words are the tokenizer's words (word pieces grouped by ``word_ids``),
compared after Unicode compatibility normalisation with accents removed and case folded.
With ``match="word"`` (the default) a word matches ``token`` when it is the same word, or the
same word with a plural ending ``s``/``es`` (so ``"apple"`` finds ``"Apple"`` and
``"apples"``, but ``"app"`` does *not* find ``"Apple"``); ``match="prefix"`` matches every word
that starts with the given letters (``"app"`` finds ``"Apple"``, ``"run"`` finds
``"running"``) — the way to follow a piece of a word. Matches are counted in text order;
``occurrence=k`` (or a pair ``(k1, k2)``, one per text) takes the k-th, and when a word occurs
more than once the contrast says which occurrence and which tokens it used
(:attr:`TokenContrast.notes`). A word split into several pieces (``pine ##apple ##s``) is
routed as the mean of its pieces' rows (``pieces="mean"``, a distribution again) or by its
first piece (``pieces="first"``). :func:`shared_word` picks a default word for two sentences:
the first word of the first sentence that the second also has, skipping stop words
(:data:`STOP_WORDS`: "the", "a", "to" … carry grammar, not the word's meaning).

**Distances that compare across sentences of different lengths.** The two rows are
distributions over *different* token sets (``n₁`` and ``n₂`` tokens), so they are compared on
what both sentences have. Every distance below is a total-variation distance
:math:`D = \tfrac12 \sum_r |p_1(r) - p_2(r)|` in :math:`[0, 1]` between two vectors over
*items both sentences have*, each renormalised to sum 1 over those items (NaN if a row puts
no mass on them), so an item only one sentence has — an empty "after" side when the word
ends its sentence — is never counted as a difference:

* **role shares** — the row's mass pooled into five roles: ``self`` (the word's own pieces),
  ``special before`` (e.g. ``[CLS]``), ``before`` (other tokens before the word), ``after``
  (tokens after it) and ``special after`` (e.g. ``[SEP]``); **role distance** compares the
  roles that have tokens in both sentences (``raw_role_distance``: all five roles, the
  earlier, position-confounded number);
* **routing by relative offset** — the row's mass at offsets ``d = j - p`` for
  ``-offset_window <= d <= offset_window`` from the word (``p`` the position of a piece;
  averaged over the pieces used), NaN where the offset falls outside the sentence;
  **offset distance** compares the offsets that exist in both sentences. It answers "does
  the word read its neighbours the same way", whatever those neighbours are;
* **routing by content** — the row's mass pooled by token *identity* (the word piece's text,
  folded as above; the word itself is ``<self>``), ignoring where the tokens stand;
  **content distance** compares the identities both sentences contain (``content_items``).
  It answers "does the word read the same tokens", wherever they are;
* **normalised entropy** — :math:`H / \ln n` of each row, in :math:`[0, 1]` whatever ``n``
  (0: all mass on one token; 1: uniform over the sentence); the table shows both.

**Positions.** When the word does not stand at the same position in both sentences (the same
index, and the same number of tokens after it), position-dependent heads (previous-token,
[SEP] sinks …) see a different neighbourhood for that reason alone: :attr:`TokenContrast.notes`
says so, and the offset and content distances separate the two effects.

**The weights are the same.** Attention moved, but the parameters that process the word did
not: the projection, output and feed-forward weights of every layer are fingerprinted
(BLAKE2b of dtype, shape and bytes) before and after the batch, and ``weights_identical``
says whether every fingerprint stayed equal — the same matrices acted on the word in both
sentences; only its attention row (a function of the input) differs.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import non_negative_int, one_of, positive_int
from .._html import token_contrast_html
from ..graphs.metrics import row_entropy
from ..tables import contrast_records, to_pandas
from .errors import TextError, TokenNotFoundError
from .route import Route, Word

__all__ = [
    "ROLES",
    "STOP_WORDS",
    "ContrastTable",
    "TokenContrast",
    "content_shares",
    "contrast",
    "find_word",
    "find_words",
    "offset_profile",
    "role_shares",
    "shared_word",
]

#: the roles every sentence has, in the order of :func:`role_shares`
ROLES: tuple[str, ...] = ("special before", "before", "self", "after", "special after")

#: English function words :func:`shared_word` never picks as the default word (folded forms)
STOP_WORDS: frozenset[str] = frozenset("""
a an the and or but if then so of to in on at by for from with as into onto about over under than that this these
those there here is are was were be been being am do does did have has had i you he she it we they me him her us
them my your his its our their not no yes can will would shall should may might must just also very too
""".split())

#: the identity of the word itself in :func:`content_shares`
SELF = "<self>"


def _normal(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


def _matches(word: str, wanted: str, match: str) -> bool:
    if match == "prefix":
        return word.startswith(wanted)
    return word == wanted or word in (wanted + "s", wanted + "es")


def find_words(route: Route, token: str, *, match: str = "word") -> tuple[Word, ...]:
    """Every word of ``route`` that ``token`` names, in text order (rules in the module docstring).

    >>> from attnsym.models.route import Route
    >>> r = Route("m", "Apples, apple app", ("apple", "##s", ",", "apple", "app"),
    ...           ((0, 5), (5, 6), (6, 7), (8, 13), (14, 17)), (False,) * 5, (0, 0, 1, 2, 3), np.zeros(5),
    ...           np.zeros((1, 1, 5, 5)), np.zeros((1, 1, 5, 5)), np.zeros((2, 5, 1)), False)
    >>> [w.text for w in find_words(r, "apple")], [w.text for w in find_words(r, "app")]
    (['Apples', 'apple'], ['app'])
    >>> [w.text for w in find_words(r, "app", match="prefix")]
    ['Apples', 'apple', 'app']
    """
    if not isinstance(token, str) or not _normal(token):
        raise TextError(f"token must be a non-empty word (got {token!r})")
    match = one_of("match", match, ("word", "prefix"), error=TextError)
    wanted = _normal(token)
    return tuple(w for w in route.words() if _matches(_normal(w.text), wanted, match))


def find_word(route: Route, token: str, *, occurrence: int = 1, name: str = "text", match: str = "word") -> Word:
    """The ``occurrence``-th word of ``route`` that ``token`` names (rules in the module docstring).

    Raises
    ------
    TokenNotFoundError
        No word matches (the message lists the words the sentence has, and those that start
        with ``token`` when ``match="prefix"`` would find them), or fewer than ``occurrence``.

    Examples
    --------
    >>> from attnsym.models.route import Route
    >>> r = Route("m", "Apples, apples", ("apple", "##s", ",", "apples"), ((0, 5), (5, 6), (6, 7), (8, 14)),
    ...           (False,) * 4, (0, 0, 1, 2), np.zeros(4), np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 4, 4)),
    ...           np.zeros((2, 4, 1)), False)
    >>> find_word(r, "APPLES", occurrence=2).positions
    (3,)
    >>> find_word(r, "app")
    Traceback (most recent call last):
    ...
    attnsym.models.errors.TokenNotFoundError: token 'app' is not a word of text 'Apples, apples'; its words are
    'Apples', ',', 'apples' (case, accents and a plural s/es are ignored); 'Apples', 'apples' start with 'app':
    match='prefix' follows a piece of a word
    """
    occurrence = positive_int("occurrence", occurrence, error=TextError)
    matches = find_words(route, token, match=match)
    if len(matches) >= occurrence:
        return matches[occurrence - 1]
    if matches:
        raise TokenNotFoundError(f"token {token!r} occurs {len(matches)} time(s) in {name} {route.text!r}, so "
                                 f"occurrence={occurrence} does not exist")
    listed = ", ".join(repr(w.text) for w in route.words())
    message = (f"token {token!r} is not a word of {name} {route.text!r}; its words are {listed} "
               "(case, accents and a plural s/es are ignored)")
    pieces = find_words(route, token, match="prefix") if match == "word" else ()
    if pieces:
        message += (f"; {', '.join(repr(w.text) for w in pieces)} start with {token!r}: match='prefix' follows a "
                    "piece of a word")
    raise TokenNotFoundError(message)


def shared_word(route1: Route, route2: Route) -> str | None:
    """The default word to contrast: the first word of ``route1`` that ``route2`` has too, not a stop word.

    Words without a letter or digit and :data:`STOP_WORDS` are skipped; ``None`` when the
    sentences share no other word (then a word must be given).

    >>> from attnsym.models.route import Route
    >>> def route(text):
    ...     words = text.split()
    ...     starts = [text.index(w) for w in words]
    ...     n = len(words)
    ...     return Route("m", text, tuple(words), tuple((a, a + len(w)) for a, w in zip(starts, words)),
    ...                  (False,) * n, tuple(range(n)), np.zeros(n), np.zeros((1, 1, n, n)), np.zeros((1, 1, n, n)),
    ...                  np.zeros((2, n, 1)), False)
    >>> shared_word(route("the Apple phone"), route("I ate the apple"))
    'Apple'
    >>> shared_word(route("the cat"), route("the dog")) is None
    True
    """
    for word in route1.words():
        folded = _normal(word.text)
        if not any(ch.isalnum() for ch in folded) or folded in STOP_WORDS:
            continue
        if find_words(route2, word.text):
            return word.text
    return None


def _roles(route: Route, word: Word) -> np.ndarray:
    """Role index (into :data:`ROLES`) of every token of the route."""
    first = min(word.positions)
    out = np.empty(route.n, dtype=np.int64)
    for j in range(route.n):
        if j in word.positions:
            out[j] = 2
        elif route.special[j]:
            out[j] = 0 if j < first else 4
        else:
            out[j] = 1 if j < first else 3
    return out


def role_shares(rows: np.ndarray, roles: np.ndarray) -> np.ndarray:
    """Pool rows ``(..., n)`` into the five roles ``(..., 5)`` (mass per role; rows keep their sum).

    >>> role_shares(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 2, 3, 4])).tolist()
    [0.1, 0.0, 0.2, 0.3, 0.4]
    """
    onehot = np.zeros((roles.size, len(ROLES)))
    onehot[np.arange(roles.size), roles] = 1.0
    return np.asarray(rows, dtype=np.float64) @ onehot


def offset_profile(attention: np.ndarray, positions: Sequence[int], window: int) -> np.ndarray:
    """Mass at offsets ``-window..window`` from the word, ``(layers, heads, 2 * window + 1)``.

    ``attention`` is a route's ``(layers, heads, n, n)``; entry ``d + window`` is the mean over
    the pieces ``p`` in ``positions`` of ``A[..., p, p + d]`` (NaN when ``p + d`` is outside the
    sentence for some piece).

    >>> A = np.eye(3, k=-1)[None, None]; A[0, 0, 0, 0] = 1.0
    >>> offset_profile(A, [2], 1)[0, 0].tolist()       # token 2 reads token 1: offset -1; offset +1 does not exist
    [1.0, 0.0, nan]
    """
    A = np.asarray(attention, dtype=np.float64)
    n = A.shape[-1]
    out = np.zeros((*A.shape[:2], 2 * window + 1))
    for k, d in enumerate(range(-window, window + 1)):
        if all(0 <= p + d < n for p in positions):
            out[..., k] = np.mean([A[:, :, p, p + d] for p in positions], axis=0)
        else:
            out[..., k] = np.nan
    return out


def _identity(route: Route, j: int) -> str:
    token = route.tokens[j]
    if route.special[j]:
        return token
    for mark in ("##", "Ġ", "▁"):
        token = token.removeprefix(mark)
    return _normal(token) or route.tokens[j]


def content_shares(route: Route, word: Word, rows: np.ndarray, items: Sequence[str]) -> np.ndarray:
    """Mass of ``rows`` ``(..., n)`` per token identity of ``items`` ``(..., len(items))``, positions ignored.

    The word's own pieces count as :data:`SELF`; other tokens by their folded word-piece text.
    """
    index = {item: k for k, item in enumerate(items)}
    onehot = np.zeros((route.n, len(items)))
    for j in range(route.n):
        key = SELF if j in word.positions else _identity(route, j)
        if key in index:
            onehot[j, index[key]] = 1.0
    return np.asarray(rows, dtype=np.float64) @ onehot


def _identities(route: Route, word: Word) -> list[str]:
    seen: dict[str, None] = {}
    for j in range(route.n):
        seen[SELF if j in word.positions else _identity(route, j)] = None
    return list(seen)


def _common_tv(p: np.ndarray, q: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """TV distance of ``p`` and ``q`` ``(..., m)`` over the items ``keep`` (bool ``(m,)``), each renormalised."""
    p, q = p[..., keep], q[..., keep]
    sp, sq = p.sum(axis=-1, keepdims=True), q.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 0.5 * np.abs(p / sp - q / sq).sum(axis=-1)
    return np.where((sp[..., 0] > 0) & (sq[..., 0] > 0), d, np.nan)


@dataclass(frozen=True)
class ContrastTable:
    """Rows of a contrast (plain values), printable as text or Markdown."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def to_markdown(self) -> str:
        """A Markdown table."""
        def cell(v: Any) -> str:
            return (f"{v:.3f}" if isinstance(v, float) else str(v)).replace("|", "\\|")

        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        cells = [list(self.columns)] + [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in self.rows]
        widths = [max(len(r[k]) for r in cells) for k in range(len(self.columns))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


@dataclass(frozen=True)
class TokenContrast:
    """How one word is routed in two texts by the same weights (see the module docstring).

    Attributes
    ----------
    token : str
        The word asked for.
    routes : (Route, Route)
        The two texts' routes.
    words : (Word, Word)
        The word found in each text.
    rows : (array, array)
        ``(layers, heads, n_k)``: the word's attention row in each text, a distribution over
        that text's tokens.
    shares : (array, array)
        ``(layers, heads, 5)``: the rows pooled into :data:`ROLES`.
    role_distance : array
        ``(layers, heads)``: total-variation distance between the two role-share vectors over
        the roles both sentences have (renormalised); ``raw_role_distance`` over all five.
    entropy : (array, array)
        ``(layers, heads)``: normalised entropy ``H / ln n`` of each row.
    weights_identical : bool
        Every parameter's fingerprint was the same before and after routing both texts.
    weight_digests : tuple of dict
        Per layer, parameter name -> fingerprint.
    pieces : {"mean", "first"}
    raw_role_distance : array
        ``(layers, heads)``: the distance over all five roles (an empty role counts).
    offset_window : int
        The offsets ``-offset_window..offset_window`` of :attr:`offsets`.
    offsets : (array, array)
        ``(layers, heads, 2 * offset_window + 1)``: mass at each offset from the word (NaN
        where the offset is outside that sentence).
    offset_distance : array
        ``(layers, heads)``: distance over the offsets that exist in both sentences.
    content_items : tuple of str
        Token identities both sentences contain (``<self>`` is the word).
    content : (array, array)
        ``(layers, heads, len(content_items))``: mass on each shared identity.
    content_distance : array
        ``(layers, heads)``: distance over :attr:`content_items`.
    occurrences : (int, int)
        The occurrence used in each text (from 1) and ``matches``, how many words matched.
    matches : (int, int)
    match : {"word", "prefix"}
    notes : tuple of str
        Plain-language notes: a repeated word (which occurrence and tokens were used), the
        word's positions when they differ.
    """

    token: str
    routes: tuple[Route, Route]
    words: tuple[Word, Word]
    rows: tuple[np.ndarray, np.ndarray]
    shares: tuple[np.ndarray, np.ndarray]
    role_distance: np.ndarray
    entropy: tuple[np.ndarray, np.ndarray]
    weights_identical: bool
    weight_digests: tuple[dict[str, str], ...]
    pieces: str
    raw_role_distance: np.ndarray | None = None
    offset_window: int = 3
    offsets: tuple[np.ndarray, np.ndarray] | None = None
    offset_distance: np.ndarray | None = None
    content_items: tuple[str, ...] = ()
    content: tuple[np.ndarray, np.ndarray] | None = None
    content_distance: np.ndarray | None = None
    occurrences: tuple[int, int] = (1, 1)
    matches: tuple[int, int] = (1, 1)
    match: str = "word"
    notes: tuple[str, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        """The role names of the last axis of :attr:`shares` (:data:`ROLES`)."""
        return ROLES

    @property
    def texts(self) -> tuple[str, str]:
        """The two texts."""
        return self.routes[0].text, self.routes[1].text

    @property
    def same_position(self) -> bool:
        """The word stands at the same token index in both sentences, with as many tokens after it."""
        (r1, r2), (w1, w2) = self.routes, self.words
        return w1.positions[0] == w2.positions[0] and r1.n - w1.positions[-1] == r2.n - w2.positions[-1]

    def most_different(self) -> tuple[int, int]:
        """``(layer, head)`` *indices* (from 0) of the largest role distance; people read layer ``layer + 1``."""
        d = np.nan_to_num(self.role_distance, nan=-1.0)
        layer, head = np.unravel_index(int(np.argmax(d)), d.shape)
        return int(layer), int(head)

    def top_reads(self, which: int, layer: int, head: int, k: int = 3) -> list[tuple[str, float]]:
        """The ``k`` tokens the word reads most from in text ``which`` (0 or 1), with their weights."""
        labels = self.routes[which].labels()
        row = self.rows[which][layer, head]
        order = np.argsort(-row, kind="stable")[:k]
        return [(labels[j], float(row[j])) for j in order]

    def table(self, *, top: int = 3, layer: int | None = None) -> ContrastTable:
        """Per layer and head: where the word reads from in each text, and how far apart the two are.

        Layers and heads are labelled from 1 (the numbering rule of :mod:`attnsym.spec`).

        Parameters
        ----------
        top : int, default 3
            How many of the most-read tokens to list per text.
        layer : int, optional
            Only this layer (an index, from 0; negative counts from the end).
        """
        top = positive_int("top", top, error=TextError)
        L, H = self.role_distance.shape
        layers = range(L) if layer is None else [int(np.arange(L)[layer])]
        w1, w2 = (w.text for w in self.words)
        columns = ("layer", "head", f"'{w1}' in text 1 reads", f"'{w2}' in text 2 reads", "H/ln n (1)", "H/ln n (2)",
                   "role distance", "offset distance", "content distance")
        rows = []
        for ly in layers:
            for h in range(H):
                reads = [", ".join(f"{t} {w:.2f}" for t, w in self.top_reads(k, ly, h, top)) for k in (0, 1)]
                rows.append((ly + 1, h + 1, reads[0], reads[1], float(self.entropy[0][ly, h]), float(self.entropy[1][ly, h]),
                             float(self.role_distance[ly, h]), float(self._offset_distance[ly, h]),
                             float(self._content_distance[ly, h])))
        return ContrastTable(columns, tuple(rows))

    @property
    def _offset_distance(self) -> np.ndarray:
        return self.offset_distance if self.offset_distance is not None else np.full(self.role_distance.shape, np.nan)

    @property
    def _content_distance(self) -> np.ndarray:
        return self.content_distance if self.content_distance is not None else np.full(self.role_distance.shape, np.nan)

    def means(self) -> dict[str, float]:
        """The mean over heads of each distance (NaN heads left out): role, raw role, offset, content."""
        def mean(a: np.ndarray | None) -> float:
            return float(np.nanmean(a)) if a is not None and np.isfinite(a).any() else float("nan")

        return {"role": mean(self.role_distance), "raw role": mean(self.raw_role_distance),
                "offset": mean(self.offset_distance), "content": mean(self.content_distance)}

    def chosen(self) -> str:
        """Which word, occurrence and tokens the contrast follows in each text, in words."""
        parts = []
        for k in (0, 1):
            r, w = self.routes[k], self.words[k]
            tokens = " ".join(r.tokens[p] for p in w.positions)
            where = ", ".join(str(p + 1) for p in w.positions)
            parts.append(f"text {k + 1}: '{w.text}', occurrence {self.occurrences[k]} of {self.matches[k]}, "
                         f"token{'s' if len(w.positions) > 1 else ''} {where} of {r.n} ({tokens})")
        return "; ".join(parts)

    def summary(self, *, notes: bool = True) -> str:
        """One paragraph in words: the distances (position-controlled too), the weights' identity, the notes."""
        layer, head = self.most_different()
        w1, w2 = (w.text for w in self.words)
        same = "identical" if self.weights_identical else "NOT identical"
        m = self.means()
        text = (f"'{w1}' in {self.texts[0]!r} and '{w2}' in {self.texts[1]!r}: mean role distance "
                f"{m['role']:.3f} over {self.role_distance.size} heads, largest "
                f"{float(self.role_distance[layer, head]):.3f} at layer {layer + 1} head {head + 1}")
        if self.offset_distance is not None:
            text += f"; by relative offset {m['offset']:.3f}, by content {m['content']:.3f}"
        text += (f"; the projection and feed-forward weights applied to the word are {same} in both "
                 f"({len(self.weight_digests)} layers fingerprinted)")
        return text + ("".join(f". {note}" for note in self.notes) if notes else "")

    def figure(self, *, layer: int | None = None, head: int | None = None):
        """The two routings side by side (``layer``/``head``, default the most different) and the distance grid."""
        from ..plots.models import token_contrast_figure  # the c.figure(): drawing lives in plots

        return token_contrast_figure(self, layer=layer, head=head)

    def as_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready; NaN becomes None)."""
        def plain(a: np.ndarray | None) -> Any:
            if a is None:
                return None
            out = np.asarray(a, dtype=object)
            out[np.isnan(a)] = None
            return out.tolist()

        return {
            "token": self.token, "texts": list(self.texts), "pieces": self.pieces, "match": self.match,
            "words": [{"text": w.text, "start": w.start, "end": w.end, "positions": list(w.positions),
                       "occurrence": self.occurrences[k], "matches": self.matches[k]}
                      for k, w in enumerate(self.words)],
            "labels": [r.labels() for r in self.routes], "roles": list(ROLES),
            "rows": [r.tolist() for r in self.rows], "shares": [s.tolist() for s in self.shares],
            "role_distance": plain(self.role_distance), "raw_role_distance": plain(self.raw_role_distance),
            "offset_window": self.offset_window,
            "offsets": None if self.offsets is None else [plain(o) for o in self.offsets],
            "offset_distance": plain(self.offset_distance),
            "content_items": list(self.content_items),
            "content": None if self.content is None else [plain(c) for c in self.content],
            "content_distance": plain(self.content_distance),
            "entropy": [e.tolist() for e in self.entropy], "same_position": self.same_position,
            "notes": list(self.notes),
            "weights_identical": self.weights_identical, "most_different": list(self.most_different()),
        }

    def _repr_html_(self) -> str:
        return token_contrast_html(self)

    def to_records(self) -> list[dict[str, Any]]:
        """One row per layer, head, text and key, counted from 1 (:data:`attnsym.tables.CONTRAST_COLUMNS`)."""
        return contrast_records(self)

    def to_pandas(self) -> Any:
        """:meth:`to_records` as a pandas DataFrame (the extra ``tables``; :func:`attnsym.tables.to_pandas`)."""
        return to_pandas(self)


def _rows(route: Route, word: Word, pieces: str) -> np.ndarray:
    return route.attention[:, :, _used(word, pieces), :].astype(np.float64).mean(axis=2)  # (L, H, n)


def _used(word: Word, pieces: str) -> list[int]:
    return list(word.positions) if pieces == "mean" else [word.positions[0]]


def _normalised_entropy(rows: np.ndarray) -> np.ndarray:
    n = rows.shape[-1]
    return row_entropy(rows) / np.log(n) if n > 1 else np.zeros(rows.shape[:-1])


def _occurrences(occurrence: Any) -> tuple[int, int]:
    if isinstance(occurrence, tuple | list):
        if len(occurrence) != 2:
            raise TextError(f"occurrence must be an integer or a pair (k1, k2) (got {occurrence!r})")
        return (positive_int("occurrence[0]", occurrence[0], error=TextError),
                positive_int("occurrence[1]", occurrence[1], error=TextError))
    k = positive_int("occurrence", occurrence, error=TextError)
    return k, k


def _notes(token: str, routes: tuple[Route, Route], words: tuple[Word, Word], found: tuple[tuple[Word, ...], ...],
           occurrences: tuple[int, int]) -> list[str]:
    notes = []
    for k in (0, 1):
        if len(found[k]) > 1:
            where = ", ".join(f"'{w.text}' at token {w.positions[0] + 1}" for w in found[k])
            used = words[k]
            notes.append(f"{token!r} occurs {len(found[k])} times in text {k + 1} ({where}); the contrast uses "
                         f"occurrence {occurrences[k]} (token {used.positions[0] + 1}); pass occurrence=k (or a pair "
                         "(k1, k2)) for another")
    (r1, r2), (w1, w2) = routes, words
    after1, after2 = r1.n - 1 - w1.positions[-1], r2.n - 1 - w2.positions[-1]
    if w1.positions[0] != w2.positions[0] or after1 != after2:
        notes.append(f"The word stands at different positions: token {w1.positions[0] + 1} of {r1.n} ({after1} after "
                     f"it) in text 1, token {w2.positions[0] + 1} of {r2.n} ({after2} after it) in text 2, so "
                     "position-dependent heads differ for that reason alone; the offset and content distances "
                     "compare only what both sentences have")
    return notes


def contrast(model: Any, text1: str, text2: str, token: str, *, occurrence: int | tuple[int, int] = 1,
             pieces: str = "mean", match: str = "word", offset_window: int = 3) -> TokenContrast:
    """Route ``token`` in two texts through the same model and compare (see the module docstring).

    Parameters
    ----------
    model : Model
        From :func:`attnsym.models.load`.
    text1, text2 : str
        The two texts (routed together as one padded batch).
    token : str
        The word to follow; found in each text by the rules of :func:`find_word`.
    occurrence : int or (int, int), default 1
        Take the k-th matching word of each text (a pair: one per text); a repeated word is
        reported in :attr:`TokenContrast.notes`.
    pieces : {"mean", "first"}, default "mean"
        How a word split into several pieces is routed.
    match : {"word", "prefix"}, default "word"
        The whole word (and its plural), or every word starting with ``token``.
    offset_window : int, default 3
        The offsets ``-offset_window..offset_window`` of the routing by relative offset.

    Returns
    -------
    TokenContrast

    Raises
    ------
    TextError
        An empty text, a text too long for the model, an empty ``token``.
    TokenNotFoundError
        ``token`` is not a word of one of the texts (the message lists its words).

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> c = m.contrast("I ate an apple for lunch", "I bought an Apple phone today", "apple")
    >>> [w.text for w in c.words], c.same_position, c.weights_identical, c.role_distance.shape
    (['apple', 'Apple'], True, True, (6, 12))
    >>> c.top_reads(0, layer=0, head=2, k=1), c.top_reads(1, layer=0, head=2, k=1)   # a previous-token head
    ([('an', 1.0)], [('an', 1.0)])
    >>> float(c.offset_distance[0, 2]) < 0.01    # the same rule (read the token before), so ~0 by offset
    True
    >>> c.content_items
    ('[CLS]', 'i', 'an', '<self>', '[SEP]')
    """
    pieces = one_of("pieces", pieces, ("mean", "first"), error=TextError)
    match = one_of("match", match, ("word", "prefix"), error=TextError)
    offset_window = non_negative_int("offset_window", offset_window, error=TextError)
    occurrences = _occurrences(occurrence)
    for name, text in (("text1", text1), ("text2", text2)):
        if not isinstance(text, str) or not text.strip():
            raise TextError(f"{name} must contain at least one word (got {text!r})")
    before = tuple(lw.digest() for lw in model.weights.layers)
    r1, r2 = model.route([text1, text2])
    after = tuple(lw.digest() for lw in model.weights.layers)
    w1 = find_word(r1, token, occurrence=occurrences[0], name="text1", match=match)
    w2 = find_word(r2, token, occurrence=occurrences[1], name="text2", match=match)
    found = (find_words(r1, token, match=match), find_words(r2, token, match=match))
    routes, words = (r1, r2), (w1, w2)
    rows = (_rows(r1, w1, pieces), _rows(r2, w2, pieces))
    roles = (_roles(r1, w1), _roles(r2, w2))
    shares = (role_shares(rows[0], roles[0]), role_shares(rows[1], roles[1]))
    both_roles = np.array([(roles[0] == k).any() and (roles[1] == k).any() for k in range(len(ROLES))])
    offsets = (offset_profile(r1.attention, _used(w1, pieces), offset_window),
               offset_profile(r2.attention, _used(w2, pieces), offset_window))
    both_offsets = ~np.isnan(offsets[0][0, 0]) & ~np.isnan(offsets[1][0, 0])
    ids2 = set(_identities(r2, w2))
    items = tuple(i for i in _identities(r1, w1) if i in ids2)
    content = (content_shares(r1, w1, rows[0], items), content_shares(r2, w2, rows[1], items))
    return TokenContrast(
        token=token, routes=routes, words=words, rows=rows, shares=shares,
        role_distance=_common_tv(shares[0], shares[1], both_roles),
        entropy=(_normalised_entropy(rows[0]), _normalised_entropy(rows[1])),
        weights_identical=before == after, weight_digests=after, pieces=pieces,
        raw_role_distance=0.5 * np.abs(shares[0] - shares[1]).sum(axis=-1),
        offset_window=offset_window, offsets=offsets,
        offset_distance=_common_tv(np.nan_to_num(offsets[0]), np.nan_to_num(offsets[1]), both_offsets),
        content_items=items, content=content,
        content_distance=_common_tv(content[0], content[1], np.ones(len(items), dtype=bool)),
        occurrences=occurrences, matches=(len(found[0]), len(found[1])), match=match,
        notes=tuple(_notes(token, routes, words, found, occurrences)),
    )
