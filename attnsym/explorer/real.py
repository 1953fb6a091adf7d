"""Real-model sentences for the page: :class:`attnsym.models.Route` and :class:`~attnsym.models.contrast.TokenContrast`.

:func:`model_routing` routes the sentences through a loaded model (one padded batch, each
route holding only its real tokens), packs every route as a :class:`RoutingInput` and, for the
first two sentences and a word both contain, the model's contrast
(:func:`attnsym.models.contrast.contrast`) as a :class:`ContrastData` — role distance per layer
and head, the word's two rows and their role shares, exactly as ``attnsym.models`` computed them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import SpecError
from ..heads import InductionScores, classify, probe, probe_sequences
from ..models import Model, Route
from ..models.contrast import ROLES, TokenContrast, contrast, shared_word
from ..models.errors import TextError
from .collect import routing_input
from .data import ContrastData, MlpData, RoutingInput

__all__ = ["FLOW_MAX_TOKENS", "common_word", "headline_cell", "model_routing", "route_input", "sink_keys"]

#: attention flow (n² max-flows) is computed for sentences up to this many tokens
FLOW_MAX_TOKENS = 40

ROLE_METRIC = ("role distance: total-variation distance between the word's two rows pooled into the roles "
               + ", ".join(ROLES) + " (0 same proportions, 1 disjoint); comparable across sentence lengths")


def _token_mlp(tokens: Sequence[str]) -> MlpData:
    """The token graph of the position-wise feed-forward block: each position reads only itself."""
    return MlpData(
        title="Feed-forward block (tokens)", inputs=tuple(tokens), outputs=tuple(tokens),
        W=np.eye(len(tokens)),
        note=("The feed-forward block (and every projection) applies the same weights to each token on its own: "
              "in the token graph every position reads only itself, for every input. Attention is the only "
              "part of a layer whose token graph depends on the input."),
    )


def route_input(route: Route, source: str, *, flow: bool | None = None,
                induction: InductionScores | None = None) -> RoutingInput:
    """One route as a routing input: its labels, attention (float32, as computed), fusions, rollout, flow.

    ``flow=None`` computes the flow for routes of at most :data:`FLOW_MAX_TOKENS` tokens; a
    decoder's ``induction`` scores (from the probe) label its induction heads on the sentence too.
    """
    labels = route.labels()
    with_flow = route.n <= FLOW_MAX_TOKENS if flow is None else bool(flow)
    inp = routing_input(route.text, source, labels, route.attention, _token_mlp(labels), flow=with_flow,
                        heads=classify(route, induction=induction), sinks=sink_keys(route))
    if route.causal and getattr(route, "logits", None) is not None:  # a decoder with an LM head: what comes next
        inp = replace(inp, next_tokens=tuple((t, float(p)) for t, p in route.top_next(NEXT_TOKENS)))
    return inp


#: how many next tokens a decoder's page shows per sentence
NEXT_TOKENS = 5


#: the induction probe on a decoder's page: random token ids of this length, repeated twice, this many sequences
PROBE_LENGTH, PROBE_BATCH = 40, 2


def probe_input(model: Model, *, length: int = PROBE_LENGTH, batch: int = PROBE_BATCH,
                seed: int = 0) -> tuple[RoutingInput, InductionScores]:
    """A decoder's induction probe as a routing input: the first repeated random sequence, its heads classified
    on all the sequences (:func:`attnsym.heads.probe`), and the induction scores for the sentences' overviews.
    """
    length = min(length, model.config.max_positions // 2)
    report = probe(model, length=length, seed=seed, batch=batch)
    ids = probe_sequences(model, length=length, seed=seed, batch=batch)  # the ids the probe ran
    scores = InductionScores(induction=report.score("induction"), duplicate=report.score("duplicate"), length=length,
                             seed=seed, batch=batch, ids=ids, prefix=0)
    attention = np.asarray(model.forward(ids[:1]).attention, dtype=np.float32)[:, 0]  # (layers, heads, n, n)
    tokenizer = model.tokenizer
    tokens = [f"{tokenizer.id_to_token(int(i)) if tokenizer is not None else i}#{k + 1}" for k, i in enumerate(ids[0])]
    source = (f"{model.name} ({model.config.describe()}); the induction probe: {length} random token ids repeated "
              f"twice (seed {seed}); head classes over {batch} such sequences")
    name = f"induction probe: {length} random tokens, repeated"
    inp = routing_input(name, source, tokens, attention, _token_mlp(tokens), flow=False, heads=report,
                        sinks=tuple(k == 0 for k in range(len(tokens))))
    return inp, scores


def sink_keys(route: Route) -> tuple[bool, ...]:
    """Per token, whether a row parked on it reads nothing: a special token, or a decoder's first token."""
    return tuple(bool(s) or (route.causal and k == 0) for k, s in enumerate(route.special))


def headline_cell(c: TokenContrast) -> tuple[int, int]:
    """The head the page opens on: where, in both sentences, the word's row puts its largest weight on another
    word (not a sink's key, not the word itself), the one with the largest role distance times the smaller of
    the two largest weights (heads where the two read different words first); else the head of the
    largest role distance.

    A head that parks the word on ``[CLS]`` in one sentence differs from the other sentence only in
    reading nothing there, a head where the word reads itself tells nothing of its context, and a
    broad head's largest weight is a small share; the headline names a head where both sentences
    clearly read a word, so its sentence says what each read.
    """
    d = np.asarray(c.role_distance)
    ok = np.ones(d.shape, dtype=bool)
    weight = np.ones(d.shape)
    read = []
    for route, word, row in zip(c.routes, c.words, c.rows, strict=True):
        row = np.asarray(row, dtype=np.float64)  # (L, H, n)
        other = ~np.array(sink_keys(route))
        other[list(word.positions)] = False
        top = np.argmax(row, axis=-1)
        ok &= other[top]  # (L, H): the row's largest weight is on another word
        weight = np.minimum(weight, np.take_along_axis(row, top[..., None], axis=-1)[..., 0])
        read.append(np.array([t.lower() for t in route.labels()], dtype=object)[top])
    if (ok & (read[0] != read[1])).any():  # the two sentences' words read different words: prefer those heads
        ok &= read[0] != read[1]
    if not ok.any():
        layer, head = c.most_different()
        return int(layer), int(head)
    best = np.unravel_index(int(np.argmax(np.where(ok, d * weight, -np.inf))), d.shape)
    return int(best[0]), int(best[1])


def common_word(route1: Route, route2: Route) -> str | None:
    """The default word: :func:`~attnsym.models.contrast.shared_word` (a shared word, never a stop word)."""
    return shared_word(route1, route2)


def _contrast_facts(c: TokenContrast) -> tuple[tuple[str, str], ...]:
    """The contrast's own numbers and notes, formatted for the first screen (nothing recomputed)."""
    m = c.means()
    facts = [("mean role distance", f"{m['role']:.3f} over {c.role_distance.size} heads (all five roles: {m['raw role']:.3f})")]
    if c.offset_distance is not None:
        facts.append(("by relative offset", f"{m['offset']:.3f}: where the word reads, counted from itself "
                                            f"(offsets -{c.offset_window}..{c.offset_window} both sentences have)"))
    if c.content_distance is not None:
        facts.append(("by content", f"{m['content']:.3f}: which token identities it reads, over the "
                                    f"{len(c.content_items)} both sentences contain"))
    layer, head = c.most_different()
    facts.append(("most different", f"layer {layer + 1}, head {head + 1}: {float(c.role_distance[layer, head]):.3f}"))
    facts.append(("tokens followed", c.chosen()))
    facts.append(("same weights", f"projection and feed-forward weights "
                                  f"{'identical' if c.weights_identical else 'NOT identical'} in both sentences "
                                  f"({len(c.weight_digests)} layers fingerprinted)"))
    facts += [("note", note) for note in c.notes]
    return tuple(facts)


def _contrast_data(c: TokenContrast, inputs: tuple[int, int]) -> ContrastData:
    rows = [np.asarray(r) for r in c.rows]
    shares = (np.asarray(c.shares[0]), np.asarray(c.shares[1]))
    return ContrastData(
        word=c.token, inputs=inputs, positions=(c.words[0].positions[0], c.words[1].positions[0]),
        distance=np.asarray(c.role_distance), metric=ROLE_METRIC,
        rows=({"heads": rows[0], "mean": rows[0].mean(axis=1), "max": rows[0].max(axis=1)},
              {"heads": rows[1], "mean": rows[1].mean(axis=1), "max": rows[1].max(axis=1)}),
        shares=shares, roles=ROLES,
        note=(f"'{c.words[0].text}' and '{c.words[1].text}' ({c.pieces} of their word pieces); the projection and "
              f"feed-forward weights applied to them are {'identical' if c.weights_identical else 'NOT identical'} "
              f"in both sentences ({len(c.weight_digests)} layers fingerprinted)."),
        cell=headline_cell(c), facts=_contrast_facts(c),
    )


def model_routing(model: Model, texts: Sequence[str], *, word: str | None = None,
                  flow: bool | None = None, probe: bool | None = None) -> tuple[list[RoutingInput], list[ContrastData]]:
    """Route ``texts`` through ``model`` for the page; contrast ``word`` between the first two.

    Parameters
    ----------
    model : attnsym.models.Model
        From :func:`attnsym.models.load`.
    texts : sequence of str
        One or more sentences.
    word : str, optional
        The word to follow in the first two sentences (found as
        :func:`~attnsym.models.contrast.find_word` finds it); default the first word of the first
        sentence that the second also has, and no contrast if there is none.
    flow : bool, optional
        Compute attention flow (default: for sentences of at most :data:`FLOW_MAX_TOKENS` tokens).
    probe : bool, optional
        Add the induction probe (:func:`probe_input`) after the sentences, and label the
        sentences' induction heads with its scores; default: for a decoder.

    Raises
    ------
    TokenNotFoundError
        ``word`` is not in one of the first two sentences.
    SpecError
        ``word`` is given with fewer than two sentences.
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts:
        raise TextError("texts must hold at least one sentence (got none)")
    if word is not None and len(texts) < 2:
        raise SpecError(f"word={word!r} needs two sentences to contrast (got {len(texts)})")
    source = f"{model.name} ({model.config.describe()})"
    routed = model.route(texts)
    routes: list[Any] = routed if isinstance(routed, list) else [routed]
    contrasts = []
    if len(texts) >= 2:
        chosen = word if word is not None else common_word(routes[0], routes[1])
        if chosen is not None:
            c = contrast(model, texts[0], texts[1], chosen)
            routes[0], routes[1] = c.routes  # the contrast's own batch: the rows shown are the routes shown
            contrasts.append(_contrast_data(c, (0, 1)))
    with_probe = bool(model.config.causal) if probe is None else bool(probe)
    extra, induction = [], None
    if with_probe:
        probe_in, induction = probe_input(model)
        extra = [probe_in]
    inputs = [route_input(r, source, flow=flow, induction=induction) for r in routes] + extra
    return inputs, contrasts
