"""Greedy decoding of a causal model, with a key/value cache (or the full pass recomputed, to check it).

Each step appends the most probable next token, ``argmax z`` of the last position's logits
(:func:`attnsym.models.forward.final_logits`; the lower id on a tie). With ``cache=True`` the
prompt runs once and every later step runs the blocks on the one new token against the cached
keys and values (:func:`attnsym.models.forward.forward_cached`): a step costs ``O(t)`` instead of
the full pass's ``O(t²)`` scores. ``cache=False`` reruns :func:`attnsym.models.forward.forward` over
all tokens at every step; the tests check that both give the same tokens, and both those of
transformers' ``generate(do_sample=False)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import boolean
from ..numeric.backend import array_namespace, asarray_in
from .errors import TextError
from .forward import KVCache, final_logits, forward, forward_cached, unembedding
from .plan import ModelPlan
from .weights import Weights

__all__ = ["Generation", "greedy"]


@dataclass(frozen=True)
class Generation:
    """What greedy decoding produced.

    Attributes
    ----------
    prompt_ids : tuple of int
        The prompt's token ids (special tokens included).
    ids : tuple of int
        The new tokens, in order.
    text : str
        The new tokens decoded (``''`` without a tokenizer).
    cached : bool
        Whether the key/value cache was used.
    """

    prompt_ids: tuple[int, ...]
    ids: tuple[int, ...]
    text: str
    cached: bool

    def __str__(self) -> str:
        return self.text


def _last_logits(plan: ModelPlan, weights: Weights, h) -> np.ndarray:
    """The logits (NumPy) of the final-normed hidden state ``h`` ``(d,)``."""
    return np.asarray(asarray_in(array_namespace(backend="numpy"), final_logits(plan, weights, h)))


def greedy(plan: ModelPlan, weights: Weights, prompt_ids: Sequence[int], max_new_tokens: int, *,
           stop: Sequence[int] = (), cache: bool = True) -> tuple[int, ...]:
    """The ids of up to ``max_new_tokens`` greedy tokens after ``prompt_ids`` (module docstring).

    Parameters
    ----------
    plan, weights
        A causal model with an LM head.
    prompt_ids : sequence of int
        At least one token.
    max_new_tokens : int
        At least 1; the prompt plus the new tokens must fit the model's ``max_positions``.
    stop : sequence of int, default ()
        Ids that end decoding once produced (kept as the last token).
    cache : bool, default True
        The key/value cache, or the full pass recomputed at every step.

    Raises
    ------
    NoLMHeadError
        The model has no LM head (an encoder, a headless checkpoint).
    TextError
        No prompt, a bad ``max_new_tokens``, or more tokens than the model's positions.
    """
    cache = boolean("cache", cache, error=TextError)
    unembedding(plan, weights)  # no LM head: refused before any work
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise TextError(f"max_new_tokens must be a positive integer (got {max_new_tokens!r})")
    ids = [int(i) for i in prompt_ids]
    if not ids:
        raise TextError("the prompt must hold at least one token (got none)")
    if len(ids) + int(max_new_tokens) > plan.max_positions:
        raise TextError(f"the prompt's {len(ids)} tokens plus max_new_tokens={int(max_new_tokens)} exceed the "
                        f"{plan.max_positions} positions of the model; shorten one of them")
    stops = {int(s) for s in stop}
    xp = array_namespace(weights.word)
    kv = KVCache.empty(plan) if cache else None
    new: list[int] = []
    step = np.asarray([ids], dtype=np.int64)  # (1, r): the prompt first, then one token at a time
    for _ in range(int(max_new_tokens)):
        if kv is not None:
            h = forward_cached(plan, weights, xp.asarray(step), kv)[0, -1]  # (d,)
        else:
            h = forward(plan, weights, np.asarray([ids + new], dtype=np.int64)).hidden_states[-1, 0, -1]
        token = int(np.argmax(_last_logits(plan, weights, h)))
        new.append(token)
        if token in stops:
            break
        step = np.asarray([[token]], dtype=np.int64)
    return tuple(new)
