"""attnsym.models without a reference implementation: loading, bad input, routes, the contrast."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from models_support import SENTENCES, minilm

from attnsym import AttnsymError, models, numeric
from attnsym.models import (
    CorruptWeightsError,
    ModelError,
    ModelFileMissing,
    TextError,
    TokenNotFoundError,
    UnsupportedModelError,
)
from attnsym.models.contrast import ROLES, find_word


@pytest.fixture(scope="module")
def m():
    return minilm()


@pytest.fixture
def folder_copy(m, tmp_path):
    """A model folder whose files are links to the packaged ones (nothing large is copied)."""
    for name in models.FILES:
        (tmp_path / name).symlink_to(m.folder / name)
    return tmp_path


# ----------------------------------------------------------------------------- loading
def test_load_by_name_is_case_insensitive_and_knows_the_hub_name(m):
    assert m.config.describe() == ("bert: 6 layers, 12 heads of width 32, d_model 384, feed-forward 1536, "
                                   "up to 512 tokens")
    assert models.packaged_folder("sentence-transformers/all-minilm-l6-v2") == m.folder
    assert m.weights.layers[0].W_Q.dtype == np.float32
    assert m.weights.parameter_count == 22_565_376  # all-MiniLM-L6-v2 without its pooler (22.7 M with it)


def test_load_from_a_folder(folder_copy):
    assert models.load(folder_copy).config.layers == 6


@pytest.mark.parametrize("missing", [f for f in models.FILES if f != "tokenizer.json"])  # no tokenizer: forward(ids)
def test_a_folder_missing_a_file_names_it(folder_copy, missing):
    (folder_copy / missing).unlink()
    with pytest.raises(ModelFileMissing, match=f"lacks {missing}"):
        models.load(folder_copy)


def test_unsupported_model_type_names_the_supported_ones(folder_copy):
    config = json.loads((folder_copy / "config.json").read_text())
    (folder_copy / "config.json").unlink()
    (folder_copy / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(UnsupportedModelError, match=r"'roberta' is not supported; attnsym runs 'bert', 'gpt2', .*'llama'"):
        models.load(folder_copy)


def test_unsupported_option_is_named(folder_copy):
    config = json.loads((folder_copy / "config.json").read_text())
    (folder_copy / "config.json").unlink()
    (folder_copy / "config.json").write_text(json.dumps({**config, "position_embedding_type": "relative_key"}))
    with pytest.raises(UnsupportedModelError, match="position_embedding_type='relative_key' is not supported"):
        models.load(folder_copy)


def test_corrupt_weights(folder_copy):
    (folder_copy / "model.safetensors").unlink()
    (folder_copy / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(CorruptWeightsError, match="cannot be read as a safetensors file"):
        models.load(folder_copy)


def test_truncated_weights(folder_copy, m):
    data = (m.folder / "model.safetensors").read_bytes()[:5_000_000]
    (folder_copy / "model.safetensors").unlink()
    (folder_copy / "model.safetensors").write_bytes(data)
    with pytest.raises(CorruptWeightsError, match="cannot be read"):
        models.load(folder_copy)


def test_weights_missing_a_tensor_are_named(folder_copy):
    from safetensors.numpy import save_file

    (folder_copy / "model.safetensors").unlink()
    tensors = {"embeddings.word_embeddings.weight": np.zeros((2, 2), np.float32)}
    tensors |= {f"encoder.layer.{i}.attention.self.key.weight": np.zeros((2, 2), np.float32) for i in range(6)}
    save_file(tensors, str(folder_copy / "model.safetensors"))  # the config's 6 layers, each lacking its query
    with pytest.raises(CorruptWeightsError, match=re.escape("has no tensor 'encoder.layer.0.attention.self.query.weight'")):
        models.load(folder_copy)


def test_unknown_name_and_bad_arguments(tmp_path):
    with pytest.raises(ModelFileMissing, match="neither a folder nor a packaged model"):
        models.load("no-such-model")
    with pytest.raises(ModelFileMissing, match="does not exist"):
        models.load(tmp_path / "absent")
    with pytest.raises(ModelError, match="dtype must be one of 'float32', 'float64'"):
        models.load(dtype="float16")
    with pytest.raises(AttnsymError):
        models.load(backend="jax")


# ----------------------------------------------------------------------------- bad text
def test_text_errors(m):
    with pytest.raises(TextError, match="at least one word"):
        m.route("")
    with pytest.raises(TextError, match="at least one word"):
        m.route("   ")
    with pytest.raises(TextError, match="must be a string"):
        m.route(["fine", 3])
    with pytest.raises(TextError, match="gives 602 tokens, more than the 512 positions"):
        m.route("word " * 600)
    with pytest.raises(TextError, match="empty list"):
        m.route([])


def test_word_not_found_lists_the_words(m):
    with pytest.raises(TokenNotFoundError, match="'phone' is not a word of text2 'I like to eat apples'; its words are "
                                                 "'I', 'like', 'to', 'eat', 'apples'"):
        m.contrast(SENTENCES[0], SENTENCES[1], "phone")


# ----------------------------------------------------------------------------- routes
def test_route_fields_and_invariants(m):
    r = m.route(SENTENCES[2])
    n = r.n
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]" and r.special[0] and r.special[-1]
    assert r.attention.shape == r.scores.shape == (6, 12, n, n)
    assert r.hidden_states.shape == (7, n, 384)
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    # the scores are the pre-softmax logits: softmax(scores) gives the attention back
    np.testing.assert_allclose(numeric.softmax(r.scores.astype(np.float64)), r.attention, atol=1e-6)
    for token, (start, end), special in zip(r.tokens, r.offsets, r.special, strict=True):  # offsets point into the text
        if not special:
            assert r.text[start:end].lower().startswith(token.removeprefix("##").lower()[:1])
    words = [w.text for w in r.words()]
    assert words[:3] == ["Pineapples", "are", "unbelievable"] and "café" in words
    assert len(find_word(r, "pineapple").positions) > 1  # split into word pieces


def test_scaled_scores_are_q_kt_over_sqrt_dk(m):
    """Layer 0 by hand: Q, K from the layer's input and weights, S = Q_h K_hᵀ / √32."""
    r = m.route(SENTENCES[1])
    x = r.hidden_states[0].astype(np.float64)
    lw = m.weights.layers[0]
    Q, K = x @ lw.W_Q + lw.b_Q, x @ lw.W_K + lw.b_K
    h = 5
    S = Q[:, 32 * h:32 * (h + 1)] @ K[:, 32 * h:32 * (h + 1)].T / np.sqrt(32)
    np.testing.assert_allclose(r.scores[0, h], S, rtol=1e-4, atol=1e-4)


def test_graphs_rollout_and_flow_consume_a_route(m):
    from attnsym import graphs

    r = m.route(SENTENCES[1])
    G = graphs.routing_graph(r.attention[2, 5], tokens=r.labels())
    assert G.number_of_nodes() == r.n and G.nodes[5]["token"] == "apples"
    R = graphs.attention_rollout(r.attention)
    np.testing.assert_allclose(R.sum(-1), 1.0, atol=1e-9)
    F = graphs.attention_flow(r.attention, outputs=[0])
    assert F.shape == (1, r.n)


def test_padded_batch_routes_hold_only_real_tokens(m):
    short, long = m.route(["a", SENTENCES[2]])
    assert short.tokens == ("[CLS]", "a", "[SEP]")
    assert short.attention.shape[-1] == 3 and short.hidden_states.shape[1] == 3
    assert "[PAD]" not in short.tokens + long.tokens


def test_float64_agrees_with_float32(m):
    m64 = models.load(dtype="float64")
    a, b = m.route(SENTENCES[0]), m64.route(SENTENCES[0])
    assert b.attention.dtype == np.float64
    assert np.abs(a.attention - b.attention).max() < 1e-5


# ----------------------------------------------------------------------------- contrast
@pytest.fixture(scope="module")
def apple(m):
    return m.contrast("the Apple phone launch event", "I like to eat apples", "apple")


def test_contrast_finds_the_word_through_case_and_plural(apple):
    assert [w.text for w in apple.words] == ["Apple", "apples"]
    assert apple.routes[0].tokens[apple.words[0].positions[0]] == "apple"


def test_contrast_rows_are_distributions_and_distances_are_bounded(apple):
    for rows, shares, route in zip(apple.rows, apple.shares, apple.routes, strict=True):
        assert rows.shape == (6, 12, route.n)
        np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(shares.sum(-1), 1.0, atol=1e-5)
        assert shares.shape[-1] == len(ROLES)
    assert np.all((apple.role_distance >= 0) & (apple.role_distance <= 1))
    assert np.all((apple.entropy[0] >= 0) & (apple.entropy[0] <= 1 + 1e-9))
    assert apple.role_distance.max() > 0.3  # the two sentences really are routed differently


def test_contrast_of_a_sentence_with_itself_is_zero(m):
    c = m.contrast("I like to eat apples", "I like to eat apples", "apples")
    assert c.role_distance.max() <= 1e-6 and c.weights_identical


def test_contrast_weights_are_fingerprinted(apple, m):
    assert apple.weights_identical
    assert len(apple.weight_digests) == 6 and set(apple.weight_digests[0]) >= {"W_Q", "W_up", "W_down", "W_O"}
    assert apple.weight_digests[0] != apple.weight_digests[1]  # fingerprints do tell layers apart


def test_contrast_table_and_summary(apple):
    t = apple.table()
    assert len(t.rows) == 72 and t.columns[0] == "layer"
    assert "phone" in str(apple.table(layer=0))
    md = t.to_markdown()
    assert md.count("\n") == 74
    assert "identical in both" in apple.summary()
    layer, head = apple.most_different()
    assert apple.role_distance[layer, head] == apple.role_distance.max()


def test_contrast_figure(apple):
    fig = apple.figure()
    assert len(fig.axes) == 5  # two routings, the distance grid, its colour bar, the role shares
    assert "identical" in fig._suptitle.get_text()


def test_contrast_bad_options(m):
    with pytest.raises(TextError, match="pieces must be one of"):
        m.contrast("a b", "a c", "a", pieces="last")
    with pytest.raises(TokenNotFoundError, match="occurrence=2 does not exist"):
        m.contrast("a b", "a c", "a", occurrence=2)
    with pytest.raises(TextError, match="token must be a non-empty word"):
        m.contrast("a b", "a c", " ")


# ----------------------------------------------------------------------------- evidence for the claims
def test_score_statistics_pool_the_real_scores(m):
    from attnsym.models.evidence import packaged_model, score_statistics

    assert packaged_model() is not None
    texts = ("I like to eat apples", "a b")
    s = score_statistics(m, texts)
    r1, r2 = m.route(list(texts))
    pooled = np.concatenate([r1.scores[3, 7].ravel(), r2.scores[3, 7].ravel()]).astype(np.float64)
    assert s.score_variance[3, 7] == pytest.approx(pooled.var(), rel=1e-9)
    np.testing.assert_allclose(s.unscaled_variance, 32 * s.score_variance)
    assert s.tokens == r1.n + r2.n
    assert np.all((s.normalised_entropy >= 0) & (s.normalised_entropy <= 1))


def test_float32_gelu_is_tied_to_numeric_gelu():
    from scipy.special import erf

    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    exact = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    fast = numeric.gelu_float32(x)
    assert fast.dtype == np.float32
    assert np.abs(fast - exact).max() <= 5e-7 * 12 + 1e-6  # erf error below 5e-7, times |x| / 2, plus float32 rounding
    np.testing.assert_allclose(fast, numeric.gelu(x), rtol=2e-6, atol=2e-6)


def test_claims_use_the_real_model_in_full_mode_only(m):
    from attnsym.claims import CheckContext
    from attnsym.claims._real_model import real_model_scores
    from attnsym.claims.builtin.routing import check_dynamic_routing

    full = check_dynamic_routing(CheckContext(seed=0, quick=False))
    assert full.verdict == "holds" and "real-model" in full.figures
    assert "real model all-MiniLM-L6-v2: 'apple' vs 'Apple' routed apart" in full.summary  # evidence.APPLE
    assert full.details["real model: weights for both texts (fingerprints)"] == "identical"
    wrong = check_dynamic_routing(CheckContext(seed=0, quick=False), attention_changes=False)
    assert wrong.verdict == "fails"
    quick = check_dynamic_routing(CheckContext(seed=0, quick=True))
    assert "real-model" not in quick.figures and any("quick mode: no real model" in c for c in quick.conditions)
    details, condition = real_model_scores(CheckContext(quick=False), "variance")
    assert len(details) == 7 and "variance median" in condition
    details, condition = real_model_scores(CheckContext(quick=False), "entropy")
    assert len(details) == 6 and "entropy" in condition
