r"""What a decoder predicts: its hidden states read through the final norm and the unembedding.

A :class:`Readout` is the last step of a causal model — the final norm ``N_f``, the
unembedding ``U`` (the checkpoint's LM head or, tied, ``E_wordᵀ``; Gemma 2's soft-cap) of
:func:`attnsym.models.forward.final_logits` — with the tokenizer that names the tokens. A
:class:`~attnsym.models.Route` of a decoder carries one, so it can say

* what comes next (:func:`top_tokens`: token texts with their probabilities,
  ``softmax(z)`` of the last position's logits ``z``);
* where each layer "thinks" the answer is: the **logit lens** (nostalgebraist 2020), every
  layer's output at one position read as if it were the last layer's,

  .. math::

      z^{(\ell)} = N_f\big(x^{(\ell)}\big)\, U,\qquad
      p^{(\ell)} = \operatorname{softmax}\big(z^{(\ell)}\big),

  with the rank and probability of one token per layer (:func:`logit_lens`,
  :class:`LogitLens`). The entry of the last layer is the model's own prediction (its hidden
  state is already normed: ``N_f`` is not applied twice).

Probabilities are computed in float64 from the logits (a stable softmax), whatever the model's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..numeric import softmax
from ..numeric.backend import array_namespace, asarray_in
from .errors import NoLMHeadError, TokenNotFoundError
from .forward import final_logits, final_norm, unembedding
from .plan import ModelPlan
from .weights import Weights

__all__ = ["LogitLens", "Readout", "logit_lens", "top_tokens"]


@dataclass(frozen=True, eq=False)
class Readout:
    """A model's final norm, unembedding and tokenizer: hidden states in, logits and token texts out.

    Attributes
    ----------
    plan : ModelPlan
    weights : Weights
        Shared with the model (nothing is copied).
    tokenizer : tokenizers.Tokenizer or None
        Names the tokens; without one a token is shown as ``<id N>``.
    """

    plan: ModelPlan
    weights: Weights
    tokenizer: Any = None

    @property
    def available(self) -> bool:
        """Whether the model has an LM head here (a decoder with ``lm_head`` or tied embeddings)."""
        try:
            unembedding(self.plan, self.weights)
        except NoLMHeadError:
            return False
        return True

    def require(self) -> None:
        """Raise :class:`~attnsym.models.errors.NoLMHeadError` (saying why) when the model has no LM head."""
        unembedding(self.plan, self.weights)

    def logits(self, h: Any, *, normed: bool = True) -> np.ndarray:
        """The logits ``(..., vocab)`` (NumPy) of hidden states ``h`` ``(..., d)``; ``normed=False`` applies ``N_f`` first."""
        xp = array_namespace(self.weights.word)
        x = asarray_in(xp, np.ascontiguousarray(h))
        if not normed:
            x = final_norm(self.plan, self.weights, x)
        return np.asarray(asarray_in(array_namespace(backend="numpy"), final_logits(self.plan, self.weights, x)))

    def token_text(self, token_id: int) -> str:
        """The text of one token as it appears in a decoded text (``' Paris'``), or ``<id N>`` without a tokenizer."""
        if self.tokenizer is None or self.tokenizer.id_to_token(int(token_id)) is None:
            return f"<id {int(token_id)}>"
        return str(self.tokenizer.decode([int(token_id)], skip_special_tokens=False))

    def token_id(self, token: str | int) -> int:
        """The id of ``token``: an id, a vocabulary entry (``'ĠParis'``) or a text that is one token (``' Paris'``).

        Raises
        ------
        TokenNotFoundError
            ``token`` is an id outside the vocabulary, or a text that is not exactly one token
            (the message lists the pieces it gives).
        """
        vocab = self.plan.vocab_size
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            if not 0 <= int(token) < vocab:
                raise TokenNotFoundError(f"token must be an id in [0, {vocab}) (got {int(token)})")
            return int(token)
        if not isinstance(token, str) or not token:
            raise TokenNotFoundError(f"token must be a token's text or id (got {token!r})")
        if self.tokenizer is None:
            raise TokenNotFoundError(f"token {token!r} cannot be looked up: the model has no tokenizer; give its id")
        found = self.tokenizer.token_to_id(token)
        if found is None:
            pieces = self.tokenizer.encode(token, add_special_tokens=False)
            if len(pieces.ids) != 1:
                raise TokenNotFoundError(f"token {token!r} is not one token of the vocabulary (it gives "
                                         f"{len(pieces.ids)}: {pieces.tokens}); give one of those pieces or an id")
            found = pieces.ids[0]
        if not 0 <= found < vocab:
            raise TokenNotFoundError(f"token {token!r} has id {found}, past the model's vocab_size {vocab}")
        return int(found)


def _probabilities(z: np.ndarray) -> np.ndarray:
    """``softmax(z)`` over the last axis, in float64."""
    return np.asarray(softmax(np.asarray(z, dtype=np.float64)))


def top_tokens(logits: np.ndarray, readout: Readout, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` most probable next tokens of one position's ``logits`` ``(vocab,)``: ``(text, probability)``, best first.

    Ties keep the lower id first (as a greedy ``argmax``).

    >>> plan = at.models.plan.ModelPlan("llama", 2, 3, 8, (), None, tie_word_embeddings=True)
    >>> w = at.models.Weights(word=np.eye(3, 2), layers=())
    >>> top_tokens(np.array([0.0, np.log(3.0), 0.0]), Readout(plan, w), 2)
    [('<id 1>', 0.6), ('<id 0>', 0.2)]
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise TokenNotFoundError(f"k must be a positive integer (got {k!r})")
    p = _probabilities(logits)
    order = np.argsort(-p, kind="stable")[:int(k)]
    return [(readout.token_text(int(i)), round(float(p[i]), 12)) for i in order]


@dataclass(frozen=True)
class LogitLens:
    """One token's rank and probability when every layer's output is read through the final norm and unembedding.

    Attributes
    ----------
    token : str
        The token followed (its text).
    token_id : int
    position : int
        The route position read (the last one unless asked).
    layers : tuple of str
        ``"embedding"``, then ``"layer 1"`` … ``"layer L"`` (numbered from 1; the last is the model's output).
    ranks : (L + 1,) int array
        Rank of the token among all tokens at each entry (1 = the most probable).
    probabilities : (L + 1,) float64 array
    top : tuple of (str, float)
        At each entry, the most probable token and its probability.
    """

    token: str
    token_id: int
    position: int
    layers: tuple[str, ...]
    ranks: np.ndarray
    probabilities: np.ndarray
    top: tuple[tuple[str, float], ...]

    @property
    def first_top(self) -> str | None:
        """The first entry from which the token stays the most probable to the end, or None if it never does."""
        if self.ranks[-1] != 1:
            return None
        k = len(self.ranks) - 1
        while k > 0 and self.ranks[k - 1] == 1:
            k -= 1
        return self.layers[k]

    def table(self) -> str:
        """A text table: per entry, the token's rank and probability, and the most probable token there."""
        rows = [["", f"rank of {self.token!r}", "probability", "top token", "its probability"]]
        for name, rank, p, (text, q) in zip(self.layers, self.ranks, self.probabilities, self.top, strict=True):
            rows.append([name, str(int(rank)), f"{p:.4f}", repr(text), f"{q:.4f}"])
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready)."""
        return {"token": self.token, "token_id": self.token_id, "position": self.position, "layers": list(self.layers),
                "ranks": [int(r) for r in self.ranks], "probabilities": [float(p) for p in self.probabilities],
                "top": [[t, float(p)] for t, p in self.top]}


def logit_lens(hidden_states: np.ndarray, readout: Readout, token: str | int | None = None,
               position: int = -1, *, predicted: Sequence[float] | None = None) -> LogitLens:
    """The logit lens of one position of a route's hidden states ``(L + 1, n, d)`` (module docstring).

    Parameters
    ----------
    hidden_states : (L + 1, n, d) array
        The embedding, then every layer's output, the last one final-normed (a :class:`~attnsym.models.Route`'s).
    readout : Readout
    token : str or int, optional
        The token followed (:meth:`Readout.token_id`); by default the model's own most probable
        next token at ``position``.
    position : int, default -1
        The position read (negative counts from the end).
    predicted : array, optional
        The model's logits at ``position`` if already computed (the last entry then reuses them).

    Raises
    ------
    NoLMHeadError
        The model has no LM head (an encoder).
    TokenNotFoundError
        ``token`` is not one token of the vocabulary; ``position`` outside the route.
    """
    readout.require()
    L1, n = int(hidden_states.shape[0]), int(hidden_states.shape[1])
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not -n <= position < n:
        raise TokenNotFoundError(f"position must be an integer in [-{n}, {n}) (got {position!r})")
    position = int(position) % n
    rows = hidden_states[:, position]  # (L + 1, d)
    z = np.empty((L1, readout.plan.vocab_size), dtype=np.float64)
    z[:-1] = readout.logits(rows[:-1], normed=False)  # each layer's output through N_f and U
    z[-1] = readout.logits(rows[-1]) if predicted is None else predicted  # the last: normed by the model already
    p = _probabilities(z)  # (L + 1, vocab)
    token_id = int(np.argmax(z[-1])) if token is None else readout.token_id(token)
    chosen = z[:, token_id:token_id + 1]
    ranks = 1 + np.sum(z > chosen, axis=1)
    best = np.argmax(z, axis=1)
    return LogitLens(token=readout.token_text(token_id), token_id=token_id, position=position,
                     layers=("embedding", *(f"layer {k}" for k in range(1, L1))), ranks=ranks.astype(np.int64),
                     probabilities=p[:, token_id].copy(),
                     top=tuple((readout.token_text(int(b)), float(p[k, b])) for k, b in enumerate(best)))
