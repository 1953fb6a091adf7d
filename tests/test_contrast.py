"""The fair contrast: whole-word matching, repeated words, stop words, position-controlled distances.

Hand-made routes check every definition of :mod:`attnsym.models.contrast` against numbers
computed here from the formula; the packaged MiniLM checks the default pair.
"""

from __future__ import annotations

import numpy as np
import pytest
from models_support import minilm

from attnsym.models.contrast import (
    SELF,
    STOP_WORDS,
    content_shares,
    find_word,
    find_words,
    offset_profile,
    shared_word,
)
from attnsym.models.errors import TextError, TokenNotFoundError
from attnsym.models.evidence import APPLE
from attnsym.models.route import Route


def route(text: str, attention=None, special_ends: bool = False) -> Route:
    """A route of whitespace words, one token per word (optionally [CLS] ... [SEP])."""
    words = text.split()
    starts, at = [], 0
    for w in words:
        at = text.index(w, at)
        starts.append(at)
        at += len(w)
    tokens = [w.lower() for w in words]
    offsets = [(a, a + len(w)) for a, w in zip(starts, words, strict=True)]
    special = [False] * len(words)
    word_ids: list[int | None] = list(range(len(words)))
    if special_ends:
        tokens, offsets = ["[CLS]", *tokens, "[SEP]"], [(0, 0), *offsets, (0, 0)]
        special, word_ids = [True, *special, True], [None, *word_ids, None]
    n = len(tokens)
    A = np.full((1, 1, n, n), 1.0 / n) if attention is None else attention
    return Route("m", text, tuple(tokens), tuple(offsets), tuple(special), tuple(word_ids), np.zeros(n), A,
                 np.zeros_like(A), np.zeros((2, n, 1)), False)


# ----------------------------------------------------------------------------- finding the word
def test_a_piece_of_a_word_does_not_match_it_unless_asked():
    r = route("I bought an Apple phone")
    with pytest.raises(TokenNotFoundError, match=r"'app' is not a word.*'Apple' start with 'app': match='prefix'"):
        find_word(r, "app")
    assert find_word(r, "app", match="prefix").text == "Apple"
    assert find_word(r, "APPLE").text == "Apple"  # case is folded
    assert [w.text for w in find_words(route("apples and an apple"), "apple")] == ["apples", "apple"]  # plural s
    assert find_words(route("applesauce"), "apple") == ()
    with pytest.raises(TextError, match="match must be one of 'word', 'prefix'"):
        find_words(r, "apple", match="start")


def test_shared_word_skips_stop_words():
    assert shared_word(route("the Apple phone"), route("the cat ate an apple")) == "Apple"
    assert shared_word(route("I ate an apple"), route("I bought an Apple phone")) == "apple"  # not "I"
    assert shared_word(route("the a to"), route("the a to")) is None
    assert {"the", "i", "an", "a", "to"} <= STOP_WORDS


# ----------------------------------------------------------------------------- the distances, by hand
def test_offset_profile_and_content_shares_by_hand():
    n = 5
    A = np.zeros((1, 1, n, n))
    A[0, 0, 2] = [0.1, 0.2, 0.3, 0.15, 0.25]
    prof = offset_profile(A, [2], 3)[0, 0]
    assert prof[0] != prof[0] and prof[6] != prof[6]  # offsets -3, +3 fall outside a 5-token sentence
    np.testing.assert_allclose(prof[1:6], [0.1, 0.2, 0.3, 0.15, 0.25])
    r = route("x y apple y z", A)
    word = find_word(r, "apple")
    shares = content_shares(r, word, A[:, :, 2], ["y", SELF, "q"])[0, 0]
    np.testing.assert_allclose(shares, [0.2 + 0.15, 0.3, 0.0])  # both 'y' pooled, wherever they stand


class FakeModel:
    """Routes each text by a given attention (one layer, one head), with fixed weight fingerprints."""

    def __init__(self, attentions):
        self.attentions = attentions
        layer = type("LW", (), {"digest": lambda self: {"W_Q": "same"}})()
        self.weights = type("W", (), {"layers": (layer,)})()

    def route(self, texts):
        return [route(t, self.attentions[t], special_ends=True) for t in texts]


def test_an_empty_after_side_is_not_counted_and_a_position_change_is_noted():
    # text 1: [CLS] I eat apple now [SEP] (word at 3, one token after); text 2: [CLS] I eat apple [SEP] (none after)
    t1, t2 = "I eat apple now", "I eat apple"
    row1 = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.1])  # special before, before x2, self, after, special after
    row2 = np.array([0.2, 0.2, 0.4, 0.1, 0.1])  # no 'after' token at all
    A1, A2 = np.tile(row1, (1, 1, 6, 1)), np.tile(row2, (1, 1, 5, 1))
    from attnsym.models.contrast import contrast

    c = contrast(FakeModel({t1: A1, t2: A2}), t1, t2, "apple", offset_window=2)
    # roles: text1 (0.1, 0.3, 0.2, 0.3, 0.1); text2 (0.2, 0.6, 0.1, 0.0, 0.1)
    raw = 0.5 * (0.1 + 0.3 + 0.1 + 0.3 + 0.0)
    assert c.raw_role_distance[0, 0] == pytest.approx(raw)
    p, q = np.array([0.1, 0.3, 0.2, 0.1]) / 0.7, np.array([0.2, 0.6, 0.1, 0.1])  # 'after' dropped, renormalised
    assert c.role_distance[0, 0] == pytest.approx(0.5 * np.abs(p - q).sum())
    # offsets -2..+2 from the word (token 3 in both): text 1 has all five, text 2 lacks +2
    p = row1[1:6][:4] / row1[1:6][:4].sum()
    q = row2[1:5] / row2[1:5].sum()
    assert c.offset_distance[0, 0] == pytest.approx(0.5 * np.abs(p - q).sum())
    assert c.content_items == ("[CLS]", "i", "eat", SELF, "[SEP]")
    p, q = row1[[0, 1, 2, 3, 5]] / row1[[0, 1, 2, 3, 5]].sum(), row2 / row2.sum()
    assert c.content_distance[0, 0] == pytest.approx(0.5 * np.abs(p - q).sum())
    assert not c.same_position
    assert any("different positions: token 4 of 6 (2 after it) in text 1, token 4 of 5 (1 after it)" in note
               for note in c.notes)
    assert "by relative offset" in c.summary() and "different positions" in c.summary()


def test_a_repeated_word_is_reported_and_occurrence_chooses():
    t1, t2 = "apple pie and apple juice", "an apple"
    A1, A2 = np.full((1, 1, 7, 7), 1 / 7), np.full((1, 1, 4, 4), 1 / 4)
    from attnsym.models.contrast import contrast

    model = FakeModel({t1: A1, t2: A2})
    c = contrast(model, t1, t2, "apple")
    assert c.words[0].positions == (1,) and c.matches == (2, 1) and c.occurrences == (1, 1)
    assert any("'apple' occurs 2 times in text 1 ('apple' at token 2, 'apple' at token 5); the contrast uses "
               "occurrence 1 (token 2); pass occurrence=k" in note for note in c.notes)
    second = contrast(model, t1, t2, "apple", occurrence=(2, 1))
    assert second.words[0].positions == (4,) and "occurrence 2 of 2, token 5 of 7 (apple)" in second.chosen()
    with pytest.raises(TokenNotFoundError, match="occurrence=2 does not exist"):
        contrast(model, t1, t2, "apple", occurrence=2)  # text 2 has one
    with pytest.raises(TextError, match="occurrence must be an integer or a pair"):
        contrast(model, t1, t2, "apple", occurrence=(1, 1, 1))


# ----------------------------------------------------------------------------- the default pair on MiniLM
def test_the_default_pair_puts_the_word_at_the_same_position_and_still_differs():
    m = minilm()
    text1, text2, word = APPLE
    c = m.contrast(text1, text2, word)
    assert c.same_position and c.notes == ()
    np.testing.assert_allclose(c.role_distance, c.raw_role_distance, atol=1e-6)  # every role exists in both
    assert np.nanmax(c.role_distance) > 0.5 and np.nanmean(c.offset_distance) > 0.2  # clearly visible
    old = m.contrast("the Apple phone launch event", "I like to eat apples", "apple")
    assert not old.same_position and any("different positions" in n for n in old.notes)
    # the raw distance counted the empty 'after' side of "apples": the fair one is smaller
    assert np.nanmean(old.role_distance) < np.nanmean(old.raw_role_distance)
    d = c.as_dict()
    assert d["same_position"] and d["words"][0]["occurrence"] == 1 and len(d["offsets"][0][0][0]) == 7


def test_the_report_states_the_notes_the_choice_and_the_three_distances():
    from attnsym.models.contrast import contrast
    from attnsym.models.report import contrast_markdown

    t1, t2 = "apple pie and apple juice", "I eat apple"
    model = FakeModel({t1: np.full((1, 1, 7, 7), 1 / 7), t2: np.full((1, 1, 5, 5), 1 / 5)})
    md = contrast_markdown(contrast(model, t1, t2, "apple"))
    assert md.count("> **Note.**") == 2  # the repeated word and the different positions, once each
    assert "text 1: 'apple', occurrence 1 of 2, token 2 of 7 (apple)" in md
    assert "*offset distance*" in md and "*content distance*" in md and "empty `after` side" in md
    assert "| layer | mean role distance over heads | largest (head) | mean offset distance |" in md
