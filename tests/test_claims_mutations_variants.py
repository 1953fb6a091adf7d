"""The claims of the 2026 variants (``attnsym.claims.builtin.variants_2026``): each holds, draws its figure, and
fails when the code it checks is broken (``monkeypatch`` on the engines the studies run, quick mode).

The mutations are the ones the claims' specification names: the sink added to the numerator too or the rows
renormalised (``sink-semantics``), the rotary key not shared across heads (``mla-absorbed``), RoPE left on
(``nope-position-blind``); :func:`test_claims_mutations.test_every_registered_claim_has_a_mutation_that_fails_it`
reads this file's list beside its siblings'.
"""

from __future__ import annotations

import numpy as np
import pytest

import attnsym.numeric.layer as numeric_layer
from attnsym.claims import CLAIMS, CheckContext
from attnsym.claims.builtin import variants_2026
from attnsym.numeric.positions import apply_rope
from attnsym.studies import variants

QUICK = CheckContext(quick=True)
IDS = ("sink-semantics", "mla-absorbed", "nope-position-blind")


def _sink_renormalised(monkeypatch):
    """The sink's rows renormalised to 1 (its mass thrown away)."""
    real = numeric_layer.sink_softmax

    def renormalised(xp, S, sinks):
        A, pi = real(xp, S, sinks)
        return A / A.sum(-1, keepdims=True), pi

    monkeypatch.setattr(numeric_layer, "sink_softmax", renormalised)


def _sink_in_the_numerator(monkeypatch):
    """The sink's exp(s) added to every weight's numerator too."""
    real = numeric_layer.sink_softmax

    def numerator(xp, S, sinks):
        A, pi = real(xp, S, sinks)
        return xp.where(xp.isfinite(S), A + pi, 0.0), pi

    monkeypatch.setattr(numeric_layer, "sink_softmax", numerator)


def _rope_key_per_head(monkeypatch):
    """Each head's rotary key rotated by its own extra angle: no longer one key for all heads."""
    real = variants.mla_keys

    def per_head(X, W_DKV, W_UK, W_KR, heads, angles):
        keys, c = real(X, W_DKV, W_UK, W_KR, heads, angles)
        d_r = W_KR.shape[1]
        return [np.concatenate([k[:, :-d_r], k[:, -d_r:] * (1 + h)], axis=1) for h, k in enumerate(keys)], c

    monkeypatch.setattr(variants, "mla_keys", per_head)


def _rope_left_on(monkeypatch):
    """A layer without positions rotating its queries and keys anyway."""
    def rotate(self, M, p0=0, *, adjoint=False):
        spec = self.spec if self.spec.positions == "rope" else self.spec.replace(positions="rope")
        positions = None if p0 == 0 else self.xp.arange(p0, p0 + int(M.shape[-2]), dtype=self.xp.float64)
        return apply_rope(M, spec, positions, inverse=adjoint)

    monkeypatch.setattr(numeric_layer.BoundLayer, "rotate", rotate)


MUTATIONS = [
    ("sink-semantics", _sink_renormalised, "rows renormalised to 1"),
    ("sink-semantics", _sink_in_the_numerator, "the sink added to the numerator too"),
    ("mla-absorbed", _rope_key_per_head, "the rotary key not shared across heads"),
    ("nope-position-blind", _rope_left_on, "RoPE left on"),
]


def test_every_claim_of_the_module_has_a_mutation():
    assert {c for c, _, _ in MUTATIONS} == set(IDS) == {c.id for c in variants_2026.CLAIMS}


@pytest.mark.parametrize(("claim_id", "mutate", "what"), MUTATIONS, ids=[f"{c}: {w}" for c, _, w in MUTATIONS])
def test_mutation_fails_the_claim(monkeypatch, claim_id, mutate, what):
    assert CLAIMS[claim_id].check(QUICK).verdict == "holds"  # unmutated, the claim holds
    mutate(monkeypatch)
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "fails", f"{claim_id} under the mutation '{what}' came out {ev.verdict}: {ev.summary}"
    assert "FAILED: " in ev.summary, ev.summary


@pytest.mark.parametrize("claim_id", IDS)
def test_each_claim_holds_and_draws_its_figure(claim_id):
    from matplotlib.figure import Figure

    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "holds" and ev.as_expected, ev.summary
    assert ev.figures and ev.conditions and ev.method
    for name, draw in ev.figures.items():
        assert isinstance(draw(), Figure), name
