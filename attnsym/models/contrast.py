r"""One word, two sentences, the same weights: how differently does the model route it?

:func:`contrast` runs both texts through one model as one padded batch (the very same
parameters for both), finds the word in each, and compares where it reads from in every layer
and head.

**Finding the word.** Words are the tokenizer's words (word pieces grouped by ``word_ids``),
compared after Unicode compatibility normalisation with accents removed and case folded. A
word *equal* to ``token`` is taken first; if there is none, the first word that *starts
with* it (so ``"apple"`` finds ``"Apple"`` and ``"apples"``, and ``"run"`` finds ``"running"``).
``occurrence=k`` takes the k-th match. A word split into several pieces
(``pine ##apple ##s``) is routed as the mean of its pieces' rows (``pieces="mean"``, a
distribution again) or by its first piece (``pieces="first"``).

**Distances that compare across sentences of different lengths.** The two rows are
distributions over *different* token sets (``n₁`` and ``n₂`` tokens), so they are compared on
what both sentences have:

* **role shares** — the row's mass pooled into five roles every sentence has: ``self`` (the
  word's own pieces), ``special before`` (e.g. ``[CLS]``), ``before`` (other tokens before the
  word), ``after`` (tokens after it) and ``special after`` (e.g. ``[SEP]``);
* **role distance** — the total-variation distance between the two role-share vectors,
  :math:`D = \tfrac12 \sum_r |p_1(r) - p_2(r)|`, in :math:`[0, 1]`: 0 when the word divides its
  attention between the roles in the same proportions, 1 when the two rows use disjoint roles;
* **normalised entropy** — :math:`H / \ln n` of each row, in :math:`[0, 1]` whatever ``n``
  (0: all mass on one token; 1: uniform over the sentence); the table shows both.

**The weights are the same.** Attention moved, but the parameters that process the word did
not: the projection, output and feed-forward weights of every layer are fingerprinted
(BLAKE2b of dtype, shape and bytes) before and after the batch, and ``weights_identical``
says whether every fingerprint stayed equal — the same matrices acted on the word in both
sentences; only its attention row (a function of the input) differs.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import one_of, positive_int
from .._html import token_contrast_html
from ..graphs.metrics import row_entropy
from .errors import TextError, TokenNotFoundError
from .route import Route, Word

__all__ = ["ROLES", "ContrastTable", "TokenContrast", "contrast", "find_word", "role_shares"]

#: the roles every sentence has, in the order of :func:`role_shares`
ROLES: tuple[str, ...] = ("special before", "before", "self", "after", "special after")


def _normal(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


def find_word(route: Route, token: str, *, occurrence: int = 1, name: str = "text") -> Word:
    """The word of ``route`` that ``token`` names (rules in the module docstring).

    Raises
    ------
    TokenNotFoundError
        No word matches; the message lists the words the sentence has.

    Examples
    --------
    >>> from attnsym.models.route import Route
    >>> r = Route("m", "Apples, apples", ("apple", "##s", ",", "apples"), ((0, 5), (5, 6), (6, 7), (8, 14)),
    ...           (False,) * 4, (0, 0, 1, 2), np.zeros(4), np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 4, 4)),
    ...           np.zeros((2, 4, 1)), False)
    >>> find_word(r, "APPLES", occurrence=2).positions
    (3,)
    >>> find_word(r, "pear")
    Traceback (most recent call last):
    ...
    attnsym.models.errors.TokenNotFoundError: token 'pear' is not a word of text 'Apples, apples'; its words are
    'Apples', ',', 'apples' (case, accents and endings after the given letters are ignored)
    """
    if not isinstance(token, str) or not _normal(token):
        raise TextError(f"token must be a non-empty word (got {token!r})")
    occurrence = positive_int("occurrence", occurrence, error=TextError)
    wanted = _normal(token)
    words = route.words()
    exact = [w for w in words if _normal(w.text) == wanted]
    matches = exact or [w for w in words if _normal(w.text).startswith(wanted)]
    if len(matches) < occurrence:
        listed = ", ".join(repr(w.text) for w in words)
        if matches:
            raise TokenNotFoundError(f"token {token!r} occurs {len(matches)} time(s) in {name} {route.text!r}, so "
                                     f"occurrence={occurrence} does not exist")
        raise TokenNotFoundError(f"token {token!r} is not a word of {name} {route.text!r}; its words are {listed} "
                                 "(case, accents and endings after the given letters are ignored)")
    return matches[occurrence - 1]


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
        ``(layers, heads)``: total-variation distance between the two role-share vectors.
    entropy : (array, array)
        ``(layers, heads)``: normalised entropy ``H / ln n`` of each row.
    weights_identical : bool
        Every parameter's fingerprint was the same before and after routing both texts.
    weight_digests : tuple of dict
        Per layer, parameter name -> fingerprint.
    pieces : {"mean", "first"}
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

    @property
    def roles(self) -> tuple[str, ...]:
        """The role names of the last axis of :attr:`shares` (:data:`ROLES`)."""
        return ROLES

    @property
    def texts(self) -> tuple[str, str]:
        """The two texts."""
        return self.routes[0].text, self.routes[1].text

    def most_different(self) -> tuple[int, int]:
        """``(layer, head)`` *indices* (from 0) of the largest role distance; people read layer ``layer + 1``."""
        layer, head = np.unravel_index(int(np.argmax(self.role_distance)), self.role_distance.shape)
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
                   "role distance")
        rows = []
        for ly in layers:
            for h in range(H):
                reads = [", ".join(f"{t} {w:.2f}" for t, w in self.top_reads(k, ly, h, top)) for k in (0, 1)]
                rows.append((ly + 1, h + 1, reads[0], reads[1], float(self.entropy[0][ly, h]), float(self.entropy[1][ly, h]),
                             float(self.role_distance[ly, h])))
        return ContrastTable(columns, tuple(rows))

    def summary(self) -> str:
        """One paragraph in words: the largest and mean role distance, and the weights' identity."""
        layer, head = self.most_different()
        w1, w2 = (w.text for w in self.words)
        same = "identical" if self.weights_identical else "NOT identical"
        return (f"'{w1}' in {self.texts[0]!r} and '{w2}' in {self.texts[1]!r}: mean role distance "
                f"{float(self.role_distance.mean()):.3f} over {self.role_distance.size} heads, largest "
                f"{float(self.role_distance[layer, head]):.3f} at layer {layer + 1} head {head + 1}; the projection and "
                f"feed-forward weights applied to the word are {same} in both ({len(self.weight_digests)} layers "
                "fingerprinted)")

    def figure(self, *, layer: int | None = None, head: int | None = None):
        """The two routings side by side (``layer``/``head``, default the most different) and the distance grid."""
        from ..plots.models import token_contrast_figure  # the c.figure(): drawing lives in plots

        return token_contrast_figure(self, layer=layer, head=head)

    def as_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready)."""
        return {
            "token": self.token, "texts": list(self.texts), "pieces": self.pieces,
            "words": [{"text": w.text, "start": w.start, "end": w.end, "positions": list(w.positions)} for w in self.words],
            "labels": [r.labels() for r in self.routes], "roles": list(ROLES),
            "rows": [r.tolist() for r in self.rows], "shares": [s.tolist() for s in self.shares],
            "role_distance": self.role_distance.tolist(), "entropy": [e.tolist() for e in self.entropy],
            "weights_identical": self.weights_identical, "most_different": list(self.most_different()),
        }

    def _repr_html_(self) -> str:
        return token_contrast_html(self)


def _rows(route: Route, word: Word, pieces: str) -> np.ndarray:
    positions = list(word.positions) if pieces == "mean" else [word.positions[0]]
    return route.attention[:, :, positions, :].astype(np.float64).mean(axis=2)  # (L, H, n)


def _normalised_entropy(rows: np.ndarray) -> np.ndarray:
    n = rows.shape[-1]
    return row_entropy(rows) / np.log(n) if n > 1 else np.zeros(rows.shape[:-1])


def contrast(model: Any, text1: str, text2: str, token: str, *, occurrence: int = 1, pieces: str = "mean") -> TokenContrast:
    """Route ``token`` in two texts through the same model and compare (see the module docstring).

    Parameters
    ----------
    model : Model
        From :func:`attnsym.models.load`.
    text1, text2 : str
        The two texts (routed together as one padded batch).
    token : str
        The word to follow; found in each text by the rules of :func:`find_word`.
    occurrence : int, default 1
        Take the k-th matching word of each text.
    pieces : {"mean", "first"}, default "mean"
        How a word split into several pieces is routed.

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
    >>> c = m.contrast("the Apple phone launch event", "I like to eat apples", "apple")
    >>> [w.text for w in c.words], c.weights_identical, c.role_distance.shape
    (['Apple', 'apples'], True, (6, 12))
    >>> c.top_reads(0, layer=0, head=2, k=1), c.top_reads(1, layer=0, head=2, k=1)   # a previous-token head
    ([('the', 1.0)], [('eat', 1.0)])
    >>> float(c.role_distance[0, 2]) < 0.01    # the same rule (read the token before), so role distance ~0
    True
    """
    pieces = one_of("pieces", pieces, ("mean", "first"), error=TextError)
    for name, text in (("text1", text1), ("text2", text2)):
        if not isinstance(text, str) or not text.strip():
            raise TextError(f"{name} must contain at least one word (got {text!r})")
    before = tuple(lw.digest() for lw in model.weights.layers)
    r1, r2 = model.route([text1, text2])
    after = tuple(lw.digest() for lw in model.weights.layers)
    w1 = find_word(r1, token, occurrence=occurrence, name="text1")
    w2 = find_word(r2, token, occurrence=occurrence, name="text2")
    rows = (_rows(r1, w1, pieces), _rows(r2, w2, pieces))
    shares = (role_shares(rows[0], _roles(r1, w1)), role_shares(rows[1], _roles(r2, w2)))
    return TokenContrast(
        token=token, routes=(r1, r2), words=(w1, w2), rows=rows, shares=shares,
        role_distance=0.5 * np.abs(shares[0] - shares[1]).sum(axis=-1),
        entropy=(_normalised_entropy(rows[0]), _normalised_entropy(rows[1])),
        weights_identical=before == after, weight_digests=after, pieces=pieces,
    )
