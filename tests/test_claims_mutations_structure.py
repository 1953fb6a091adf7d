"""The structural literature claims (``attnsym.claims.builtin.literature_structure``): each holds, each draws its
figure, and each fails when the implementation it checks is broken.

As in :mod:`tests.test_claims_mutations`, the mutations break the *code* under test (a null space, a
normalisation, the key/value expansion, the RoPE pairing, the window band) with ``monkeypatch`` and run the
registered check in quick mode; one entry per mutation.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import attnsym.numeric.binding as numeric_binding
import attnsym.numeric.layer as numeric_layer
from attnsym._exact import exact_matrix
from attnsym.claims import CLAIMS, CheckContext
from attnsym.claims.builtin import literature_structure
from attnsym.numeric import identifiability as numeric_id
from attnsym.spec import AttentionSpec
from attnsym.studies import bottleneck as studies_bottleneck
from attnsym.studies import qk_norm as studies_qk_norm
from attnsym.symbolic import identifiability as exact_id
from attnsym.symbolic import in_context

QUICK = CheckContext(quick=True)

IDS = ("non-identifiable", "low-rank-bottleneck", "qk-norm-bound", "icl-gradient-descent", "gqa-equals-repeated-kv",
       "rope-pairing-permutation", "window-banded-mask")


def _null_space_without_ones(monkeypatch):
    """Null directions of Vᵀ alone (the all-ones constraint dropped): rows of A′ no longer sum to 1."""
    monkeypatch.setattr(exact_id, "null_directions", lambda V: exact_matrix("V", V).T.nullspace())

    def numeric(V, rtol=1e-10):
        _, s, vt = np.linalg.svd(np.asarray(V, dtype=np.float64).T)
        return vt[int(np.sum(s > rtol * s[0])):].T

    monkeypatch.setattr(numeric_id, "null_directions", numeric)


def _scores_full_rank(monkeypatch):
    """The numeric scores with the identity added (rank n whatever d_k)."""
    original = studies_bottleneck.numeric_scores
    monkeypatch.setattr(studies_bottleneck, "numeric_scores",
                        lambda Q, K, scale=1.0, allowed=None: np.asarray(original(Q, K, scale, allowed))
                        + np.eye(np.shape(Q)[0], np.shape(K)[0]))


def _qk_norm_unnormalised(monkeypatch):
    """QK-norm as x ⊙ g (the division by the root mean square dropped) in the numeric layer."""
    def unnormalised(M, g, eps, offset=0.0):
        gain = g.reshape(int(M.shape[-1]))
        return M * (gain + offset if offset else gain)

    monkeypatch.setattr(numeric_layer, "rms_norm", unnormalised)


def _symbolic_rms_over_sum(monkeypatch):
    """The symbolic RMSNorm dividing by √(Σx²) instead of √(mean x²) (the ℓ2 norm: g off by √d_k)."""
    def rms(M, g, eps):
        w = M.shape[1]
        return sp.ImmutableMatrix(M.shape[0], w, lambda i, j: M[i, j] * g[0, j]
                                  / sp.sqrt(sp.Add(*[M[i, k] ** 2 for k in range(w)]) + eps))

    monkeypatch.setattr(studies_qk_norm, "rms_norm_rows", rms)


def _lsa_without_one_over_n(monkeypatch):
    """The paper's projection P = η·I instead of (η/N)·I."""
    original = in_context.gd_weights

    def weights(d_x, d_y, *, eta, N, W0):
        W_K, W_Q, W_V, P = original(d_x, d_y, eta=eta, N=N, W0=W0)
        return W_K, W_Q, W_V, P * N

    monkeypatch.setattr(in_context, "gd_weights", weights)


def _kv_heads_tiled(monkeypatch):
    """The numeric key/value expansion tiling the heads: query head h reads head h mod H_kv."""
    def tile(xp, M, group):
        if group == 1:
            return M
        *batch, h_kv, r, w = M.shape
        M = xp.broadcast_to(xp.expand_dims(M, axis=-4), (*batch, group, h_kv, r, w))
        return xp.reshape(M, (*batch, group * h_kv, r, w))

    monkeypatch.setattr(numeric_layer, "expand_kv", tile)


def _kv_head_of_modulo(monkeypatch):
    """The spec's reading rule h mod H_kv (the symbolic layer follows it)."""
    monkeypatch.setattr(AttentionSpec, "kv_head_of", lambda self, head: head % self.kv_heads)


def _rope_pairing_ignored(monkeypatch):
    """RoPE rotating the half-split planes whatever the pairing (interleaved = half-split)."""
    def pairs(self):
        half = self.rotary_dims // 2
        return tuple((i, i + half, i) for i in range(half))

    monkeypatch.setattr(AttentionSpec, "rope_pairs", property(pairs))


def _window_band_one_wider(monkeypatch):
    """The numeric window band |i − j| ≤ w (one key more than the window)."""
    monkeypatch.setattr(numeric_binding, "window_band", lambda spec: None if spec.window is None else (
        np.abs(np.arange(spec.n)[:, None] - np.arange(spec.n)[None, :]) <= spec.window))


def _may_attend_off_by_one(monkeypatch):
    """The spec's window rule i − j ≤ w (its pattern, and so the symbolic layer, one key wider)."""
    def may_attend(self, i, j):
        if self.causal and j > i:
            return False
        if self.window is not None and abs(i - j) > self.window:
            return False
        return self.mask is None or self.mask[i][j]

    monkeypatch.setattr(AttentionSpec, "may_attend", may_attend)


def _noncausal_window_as_transformers_with_a_matching_statement(monkeypatch):
    """The spec's non-causal window read as transformers' |i − j| ≤ w, and the statement's band widened to agree.

    Code and statement agree, so comparing them alone would pass: only the comparison with
    transformers' own convention (attnsym's w = its w − 1) can catch it.
    """
    def may_attend(self, i, j):
        if self.causal and j > i:
            return False
        if self.window is not None and (i - j >= self.window if self.causal else abs(i - j) > self.window):
            return False
        return self.mask is None or self.mask[i][j]

    def band(n, w, causal, extra=0):
        d = np.arange(n)[:, None] - np.arange(n)[None, :]
        return (0 <= d) & (d < w + extra) if causal else np.abs(d) <= w + extra

    monkeypatch.setattr(AttentionSpec, "may_attend", may_attend)
    monkeypatch.setattr(literature_structure, "_window_band", band)


#: (claim id, mutation, what it breaks)
MUTATIONS = [
    ("non-identifiable", _null_space_without_ones, "null directions of Vᵀ without the all-ones constraint"),
    ("low-rank-bottleneck", _scores_full_rank, "scores with an identity added"),
    ("qk-norm-bound", _qk_norm_unnormalised, "numeric QK-norm without the normalisation"),
    ("qk-norm-bound", _symbolic_rms_over_sum, "symbolic RMSNorm over the sum instead of the mean"),
    ("icl-gradient-descent", _lsa_without_one_over_n, "P = η·I (1/N dropped)"),
    ("gqa-equals-repeated-kv", _kv_heads_tiled, "numeric K/V expansion tiled (h mod H_kv)"),
    ("gqa-equals-repeated-kv", _kv_head_of_modulo, "spec reading rule h mod H_kv"),
    ("rope-pairing-permutation", _rope_pairing_ignored, "pairing ignored (half-split planes for interleaved)"),
    ("window-banded-mask", _window_band_one_wider, "numeric window band |i − j| ≤ w"),
    ("window-banded-mask", _may_attend_off_by_one, "spec window rule i − j ≤ w"),
    ("window-banded-mask", _noncausal_window_as_transformers_with_a_matching_statement,
     "non-causal window |i − j| ≤ w in code and statement alike"),
]


def test_every_structural_claim_has_a_mutation():
    assert {c for c, _, _ in MUTATIONS} == set(IDS) == {c.id for c in literature_structure.CLAIMS}


@pytest.mark.parametrize(("claim_id", "mutate", "what"), MUTATIONS, ids=[f"{c}: {w}" for c, _, w in MUTATIONS])
def test_mutation_fails_the_claim(monkeypatch, claim_id, mutate, what):
    assert CLAIMS[claim_id].check(QUICK).verdict != "fails"  # unmutated, the claim holds
    mutate(monkeypatch)
    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "fails", f"{claim_id} under the mutation '{what}' came out {ev.verdict}: {ev.summary}"
    assert "FAILED: " in ev.summary, ev.summary  # the summary names what failed


@pytest.mark.parametrize("claim_id", IDS)
def test_each_structural_claim_holds_and_draws_its_figure(claim_id):
    from matplotlib.figure import Figure

    ev = CLAIMS[claim_id].check(QUICK)
    assert ev.verdict == "holds" and ev.as_expected, ev.summary
    assert ev.figures and ev.conditions and ev.method
    for name, draw in ev.figures.items():
        assert isinstance(draw(), Figure), name


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", IDS)
def test_each_structural_claim_holds_in_full_mode(claim_id):
    ev = CLAIMS[claim_id].check(CheckContext(quick=False))
    assert ev.verdict == "holds" and ev.as_expected, ev.summary


def test_non_identifiable_alternative_changes_weights_not_outputs():
    rng = np.random.default_rng(3)
    A = rng.dirichlet(np.ones(12), size=12)  # positive rows summing to 1
    V = rng.standard_normal((12, 4))
    B = numeric_id.alternative_attention(A, V)
    assert np.allclose(B @ V, A @ V, atol=1e-12) and np.allclose(B.sum(1), 1, atol=1e-12) and B.min() >= 0
    assert np.abs(B - A).max() > 1e-3
    assert numeric_id.alternative_attention(A[:5, :5], rng.standard_normal((5, 4))) is None  # T = d_v + 1
    Vs = sp.Matrix([[1, 0], [0, 1], [1, 1], [2, -1]])
    As = sp.ones(4, 4) / 4
    Bs = exact_id.alternative_attention(As, Vs)
    assert (Bs * Vs - As * Vs).is_zero_matrix and Bs != As and all(sum(Bs.row(i)) == 1 for i in range(4))


def test_singular_row_shift_removes_exactly_one_rank():
    S = sp.Matrix([[2, 1, 0], [0, 3, 1], [1, 0, 4]])
    c = exact_id.singular_row_shift(S)
    assert (S + c * sp.ones(1, 3)).rank() == 2


def test_the_real_model_part_runs_in_full_mode_or_says_it_was_skipped():
    from attnsym.models.evidence import packaged_model

    details, line = literature_structure._real_model_alternatives(CheckContext(quick=False))
    if packaged_model() is None:
        assert not details and "not installed" in line
    else:
        assert details["real model ok"], line
        assert "72 of 72 heads" in line


def test_bad_inputs_raise_errors_naming_the_argument():
    from attnsym.errors import AttnsymError

    with pytest.raises(AttnsymError, match="eta"):
        in_context.gd_weights(2, 1, eta="0.1", N=2, W0=sp.zeros(1, 2))
    with pytest.raises(AttnsymError, match="W0"):
        in_context.gd_weights(2, 1, eta=0.1, N=2, W0=np.zeros((2, 2)))
    with pytest.raises(AttnsymError, match="V"):
        numeric_id.null_directions([["a", "b"]])
    with pytest.raises(AttnsymError, match="A must have"):
        numeric_id.alternative_attention(np.eye(3), np.ones((4, 1)))
    with pytest.raises(AttnsymError, match="V"):
        exact_id.null_directions([["1", "2"]])


def test_the_window_transcription_is_transformers_own_mask_functions():
    """studies.window.transformers_convention against transformers.masking_utils itself (where installed)."""
    from attnsym.references import transformers_installed, transformers_window_pattern
    from attnsym.studies.window import transformers_convention

    if not transformers_installed():
        pytest.skip("transformers is not installed")
    for n in (1, 5, 9):
        for w in range(0, n + 3):
            for causal in (True, False):
                if causal and w == 0:
                    continue
                assert np.array_equal(transformers_window_pattern(n, w, causal=causal),
                                      transformers_convention(n, w, causal=causal)), (n, w, causal)


def test_the_window_claim_names_each_sources_convention():
    ev = CLAIMS["window-banded-mask"].check(QUICK)
    text = " ".join(ev.conditions) + ev.source
    assert "2w + 1" in text and "Longformer" in text and "w − 1 keys on each side" in text
