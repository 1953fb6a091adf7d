"""The route of one text through a model: its word pieces, attention, scores and hidden states.

A :class:`Route` is plain data (NumPy arrays, tuples of Python values) that the graphs, the
claims, the plots and the explorer consume. It holds only the text's *real* tokens: when
several texts run as one padded batch, the padding positions are cut away before a route is
made, so they never reach a routing graph, a rollout or a flow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._html import route_html
from .errors import NoLMHeadError
from .readout import LogitLens, Readout, logit_lens, top_tokens

__all__ = ["Route", "Word"]


@dataclass(frozen=True)
class Word:
    """One word of the text and the word pieces it was split into.

    Attributes
    ----------
    text : str
        The word as written in the text (``text[start:end]``).
    start, end : int
        Character offsets into the text.
    positions : tuple of int
        Token positions of its word pieces in the route.
    """

    text: str
    start: int
    end: int
    positions: tuple[int, ...]


@dataclass(frozen=True)
class Route:
    """How a model routed one text: per layer and head, which tokens each token read from.

    Attributes
    ----------
    model : str
        The model's name (or folder).
    text : str
        The text routed.
    tokens : tuple of str
        The word pieces, special tokens included (``[CLS]``, ``[SEP]`` for BERT).
    offsets : tuple of (int, int)
        Per token, its character span in ``text`` (``(0, 0)`` for special tokens).
    special : tuple of bool
        Per token, whether the tokenizer added it (not from the text).
    word_ids : tuple of int or None
        Per token, the index of the word it belongs to (None for special tokens).
    ids : (n,) int64 array
        Token ids.
    attention : (layers, heads, n, n) array
        Softmax weights ``A[l, h, i, j]``: how much query token ``i`` reads from key token
        ``j``; rows sum to 1 (in a decoder ``A[l, h, i, j] = 0`` for ``j > i``).
    scores : (layers, heads, n, n) array
        The scaled pre-softmax scores ``S = Q Kᵀ / sqrt(d_k)`` (``-inf`` where the causal mask
        forbids attending), so ``attention == softmax(scores)`` row by row.
    hidden_states : (layers + 1, n, d) array
        The input of layer 0, then the output of every layer.
    causal : bool
        Whether the model is a decoder.
    logits : (vocab,) or (n, vocab) array or None
        A decoder's next-token logits: the last position's (the default of
        :meth:`~attnsym.models.Model.route`), every position's with ``logits="all"``; None for an
        encoder or a checkpoint without an LM head.
    readout : Readout or None
        The model's final norm, unembedding and tokenizer (:mod:`attnsym.models.readout`), for
        :meth:`top_next` and :meth:`logit_lens` (not compared, not serialised).
    """

    model: str
    text: str
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]
    word_ids: tuple[int | None, ...]
    ids: np.ndarray
    attention: np.ndarray
    scores: np.ndarray
    hidden_states: np.ndarray
    causal: bool
    logits: np.ndarray | None = field(default=None, compare=False, repr=False)
    readout: Readout | None = field(default=None, compare=False, repr=False)

    @property
    def n(self) -> int:
        """Number of tokens."""
        return len(self.tokens)

    @property
    def layers(self) -> int:
        """Number of layers."""
        return int(self.attention.shape[0])

    @property
    def heads(self) -> int:
        """Number of heads per layer."""
        return int(self.attention.shape[1])

    def _last_logits(self) -> np.ndarray:
        """The last position's logits, or :class:`~attnsym.models.errors.NoLMHeadError` saying why there are none."""
        if self.logits is None:
            if self.readout is not None:
                self.readout.require()  # says why: an encoder, a headless checkpoint
            raise NoLMHeadError(f"this route of {self.model!r} carries no logits (route it with the model's route())")
        return self.logits if self.logits.ndim == 1 else self.logits[-1]

    def top_next(self, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most probable next tokens after the text: ``(token text, probability)``, best first.

        Raises
        ------
        NoLMHeadError
            The model is an encoder, or its checkpoint has no LM head.
        """
        logits = self._last_logits()
        assert self.readout is not None  # logits come with their readout
        return top_tokens(logits, self.readout, k)

    def logit_lens(self, token: str | int | None = None, *, position: int = -1) -> LogitLens:
        """Per layer, the rank and probability of ``token`` read through the final norm and unembedding.

        ``token`` is a token's text (``" Paris"``), vocabulary entry or id; by default the
        model's own prediction at ``position`` (the last position). See
        :func:`attnsym.models.readout.logit_lens`.

        Raises
        ------
        NoLMHeadError
            The model is an encoder, or its checkpoint has no LM head.
        TokenNotFoundError
            ``token`` is not one token of the vocabulary.
        """
        last = self._last_logits()
        assert self.logits is not None and self.readout is not None
        n, predicted = self.n, None  # the model's logits at the position, when the route holds them
        if isinstance(position, (int, np.integer)) and not isinstance(position, bool) and -n <= position < n:
            if self.logits.ndim == 2:
                predicted = self.logits[position]
            elif position % n == n - 1:
                predicted = last
        return logit_lens(self.hidden_states, self.readout, token, position, predicted=predicted)

    def words(self) -> tuple[Word, ...]:
        """The words of the text, each with the positions of its word pieces (special tokens excluded)."""
        groups: dict[int, list[int]] = {}
        for position, word in enumerate(self.word_ids):
            if word is not None and not self.special[position]:
                groups.setdefault(word, []).append(position)
        out = []
        for positions in groups.values():
            start = min(self.offsets[p][0] for p in positions)
            end = max(self.offsets[p][1] for p in positions)
            span = self.text[start:end]  # byte-level BPE (GPT-2) offsets include the space before a word
            start += len(span) - len(span.lstrip())
            end -= len(span) - len(span.rstrip())
            out.append(Word(self.text[start:end], start, end, tuple(positions)))
        return tuple(out)

    def labels(self) -> list[str]:
        """One display label per token: special tokens as written, word pieces as in the text.

        Two equal labels get ``#k`` suffixes (``the``, ``the#2``) so graph nodes stay distinct
        for a reader.
        """
        seen: dict[str, int] = {}
        labels = []
        for token, (start, end), special in zip(self.tokens, self.offsets, self.special, strict=True):
            label = token if special or start == end else self.text[start:end].strip() or token
            seen[label] = seen.get(label, 0) + 1
            labels.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
        return labels

    def as_dict(self, *, hidden_states: bool = False) -> dict[str, Any]:
        """Plain Python values, JSON-ready (``-inf`` scores become ``None``; a decoder's ten most probable next tokens
        as ``top_next``); hidden states only if asked."""
        scores = np.where(np.isfinite(self.scores), self.scores, np.nan).tolist()
        out: dict[str, Any] = {
            "model": self.model, "text": self.text, "tokens": list(self.tokens), "labels": self.labels(),
            "offsets": [list(o) for o in self.offsets], "special": list(self.special),
            "word_ids": list(self.word_ids), "ids": self.ids.tolist(), "causal": self.causal,
            "layers": self.layers, "heads": self.heads,
            "attention": self.attention.tolist(),
            "scores": [[[[None if v != v else v for v in row] for row in head] for head in layer] for layer in scores],
        }
        if self.logits is not None:  # a decoder's prediction (the logits themselves stay out: a vocabulary each)
            out["top_next"] = [[text, p] for text, p in self.top_next(10)]
        if hidden_states:
            out["hidden_states"] = self.hidden_states.tolist()
        return out

    def _repr_html_(self) -> str:
        return route_html(self)
