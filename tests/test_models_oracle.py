"""attnsym.models against Hugging Face transformers (eager attention, output_attentions=True), float32.

The claim checked: every layer's attention probabilities and the hidden states (the last one
included) equal the reference within 1e-5, for single sentences and for a padded batch with its
attention mask — for the packaged MiniLM (BERT family) and for a small random GPT-2 built with
transformers and a tokenizer built with the tokenizers library (causal mask, packed c_attn).
"""

from __future__ import annotations

import numpy as np
import pytest
from models_support import SENTENCES, hf_model, minilm, tiny_gpt2

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

TOL = 1e-5  # float32, absolute


@pytest.fixture(scope="module")
def bert():
    m = minilm()
    return m, hf_model(m.folder)


def _reference(hf, ids, mask):
    with torch.no_grad():
        out = hf(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), output_attentions=True,
                 output_hidden_states=True)
    return (torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy(), out.last_hidden_state.numpy())


def _compare(routes, hf, ids, mask):
    """Largest |ours - reference| over every layer's attention and every hidden state, real tokens only."""
    attentions, hidden, last = _reference(hf, ids, mask)
    worst = 0.0
    for b, r in enumerate(routes):
        k = r.n
        assert int(mask[b].sum()) == k
        worst = max(worst, float(np.abs(r.attention - attentions[:, b, :, :k, :k]).max()),
                    float(np.abs(r.hidden_states - hidden[:, b, :k]).max()),
                    float(np.abs(r.hidden_states[-1] - last[b, :k]).max()))
    return worst


def _ids(routes):
    n = max(r.n for r in routes)
    ids = np.zeros((len(routes), n), dtype=np.int64)
    mask = np.zeros((len(routes), n), dtype=np.int64)
    for b, r in enumerate(routes):
        ids[b, :r.n] = r.ids
        mask[b, :r.n] = 1
    return ids, mask


def test_bert_tokens_match_the_reference_tokenizer(bert):
    transformers = pytest.importorskip("transformers")
    m, _ = bert
    reference = transformers.AutoTokenizer.from_pretrained(str(m.folder))
    for text in SENTENCES:
        r = m.route(text)
        assert list(r.ids) == reference(text)["input_ids"]
        assert list(r.tokens) == reference.convert_ids_to_tokens(reference(text)["input_ids"])


@pytest.mark.parametrize("text", SENTENCES)
def test_bert_single_sentence_matches_transformers(bert, text):
    m, hf = bert
    r = m.route(text)
    ids, mask = _ids([r])
    assert _compare([r], hf, ids, mask) <= TOL


def test_bert_padded_batch_matches_transformers(bert):
    m, hf = bert
    routes = m.route(list(SENTENCES))
    ids, mask = _ids(routes)
    assert mask.min() == 0  # the batch really is padded
    assert _compare(routes, hf, ids, mask) <= TOL
    for r, text in zip(routes, SENTENCES, strict=True):  # padding never leaks: each route equals the unpadded one
        alone = m.route(text)
        assert r.attention.shape == alone.attention.shape
        assert np.abs(r.attention - alone.attention).max() <= TOL


@pytest.mark.parametrize("threads", [None, 2])
def test_bert_long_texts_match_transformers(bert, threads):
    """Texts long enough for the compiled kernels (when Numba is installed), alone and as a padded batch."""
    import importlib

    forward = importlib.import_module("attnsym.models.forward")
    m, hf = bert
    long = " ".join(["the Apple phone launch event drew a large crowd while I like to eat apples"] * 8)
    for texts in ([long], [long, long[:200], SENTENCES[2]]):
        ids, mask = _ids([m.route(t) for t in texts])
        assert ids.size >= forward.FUSED_MIN_TOKENS
        out = forward.forward(m.config, m.weights, ids, mask, threads=threads)
        attentions, hidden, _ = _reference(hf, ids, mask)
        real = mask.astype(bool)
        for b in range(len(texts)):  # real tokens: padded queries are never part of a route
            k = int(real[b].sum())
            assert np.abs(out.attention[:, b, :, :k, :k] - attentions[:, b, :, :k, :k]).max() <= TOL
            assert np.abs(out.hidden_states[:, b, :k] - hidden[:, b, :k]).max() <= TOL


@pytest.mark.parametrize("scale_by_layer, lm_head", [(False, True), (True, False)])
def test_gpt2_matches_transformers_with_causal_mask_and_padding(scale_by_layer, lm_head):
    from attnsym import models

    folder = tiny_gpt2(scale_by_layer, lm_head)
    m = models.load(folder)
    assert m.config.causal and isinstance(m.spec(1).scale, float) == scale_by_layer  # 1/(sqrt(d_k)·2) or "sqrt"
    hf = hf_model(folder)
    texts = ["the apple phone launch event", "i like to eat apples", "a mlp"]
    routes = m.route(texts)
    ids, mask = _ids(routes)
    assert mask.min() == 0
    assert _compare(routes, hf, ids, mask) <= TOL
    c = m.contrast(texts[0], texts[1], "apple")  # words found through byte-level pieces (offsets include the space)
    assert [w.text for w in c.words] == ["apple", "apples"] and c.weights_identical
    for r in routes:
        upper = np.triu(np.ones((r.n, r.n), dtype=bool), 1)
        assert np.all(r.attention[..., upper] == 0.0)  # causal: no query reads a later key
        assert np.all(np.isneginf(r.scores[..., upper]))


def test_torch_backend_runs_the_same_code(bert):
    from attnsym import models

    m, _ = bert
    mt = models.load("all-MiniLM-L6-v2", backend="torch")
    assert isinstance(mt.weights.layers[0].W_Q, torch.Tensor)
    text = SENTENCES[0]
    a, b = m.route(text), mt.route(text)
    assert np.abs(a.attention - b.attention).max() <= TOL
    assert np.abs(a.hidden_states - b.hidden_states).max() <= TOL
