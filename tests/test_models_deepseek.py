"""DeepSeek V3 (multi-head latent attention, a mixture of experts) against transformers eager, in float64.

Two small random checkpoints whose options bite: three layers (``first_k_dense_replace`` 1: one
dense layer, two mixture-of-experts ones with 8 experts in 4 groups, the best 2 groups kept, 3
experts per token, two shared experts, a score correction bias large enough to move the choice),
a latent K/V of width 16, ``d_k = 8 + 4`` (4 rotary dims) and ``d_v = 6``; one with a query latent
(``q_lora_rank`` 24), interleaved RoPE and ``norm_topk_prob``, the other with ``q_proj``,
``rope_interleave`` false and no normalisation. ``rms_norm_eps`` is 1e-5 while the latents' norms
keep transformers' 1e-6. The text is 9 tokens, a second one padded.

The bar: attention within 1e-12 and hidden states within 1e-10. transformers' eager code computes
RoPE's angles, RMSNorm, the softmax and the router (``.type(torch.float32)``) in float32 even in a
float64 model, so the reference forces those steps to float64 (the patch of
:func:`test_models_float64_reference._float32_steps_in_float64`, plus ``Tensor.type``) and rebuilds
the inverse frequencies in float64; the difference left is float64 rounding of two independent
implementations (measured about 1e-16 in attention and 1e-15 in hidden states).
"""

from __future__ import annotations

import contextlib
import functools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from models_support import family_tokenizer, padded_gaps, scratch_folder
from test_models_float64_reference import _float32_steps_in_float64

from attnsym import heads as hd
from attnsym import models
from attnsym.cli import main
from attnsym.errors import SpecError
from attnsym.models.config import read_config
from attnsym.models.errors import ModelError, UnsupportedModelError
from attnsym.models.forward import KVCache, forward, forward_cached
from attnsym.models.plan import Norm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
ROPE_INIT_FUNCTIONS = pytest.importorskip("transformers.modeling_rope_utils").ROPE_INIT_FUNCTIONS

pytestmark = pytest.mark.oracle

ATTENTION_TOL, HIDDEN_TOL = 1e-12, 1e-10

KW = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4, intermediate_size=64, vocab_size=100,
          max_position_embeddings=64, pad_token_id=1, num_hidden_layers=3, kv_lora_rank=16, qk_rope_head_dim=4,
          qk_nope_head_dim=8, v_head_dim=6, moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=3,
          n_group=4, topk_group=2, first_k_dense_replace=1, n_shared_experts=2, routed_scaling_factor=2.5,
          rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
VARIANTS = {
    "q_latent": dict(q_lora_rank=24, rope_interleave=True, norm_topk_prob=True),
    "q_proj": dict(q_lora_rank=None, rope_interleave=False, norm_topk_prob=False),
    # YaRN as DeepSeek ships it, factor and original length small enough to bite at 9 tokens: the rotated
    # coordinates carry m(f, mscale)/m(f, mscale_all_dim) and every score m(f, mscale_all_dim)²
    "yarn": dict(q_lora_rank=24, rope_interleave=True, norm_topk_prob=True,
                 rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "mscale": 0.9,
                                  "mscale_all_dim": 0.7, "original_max_position_embeddings": 4}),
}
IDS = np.array([[2, 3, 4, 5, 6, 20, 12, 13, 14], [7, 8, 9, 10, 11, 1, 1, 1, 1]])
MASK = (IDS != 1).astype(np.int64)


@functools.cache
def checkpoint(name: str):
    """``(folder, hf)``: the random checkpoint of ``name``, noise on every parameter and on the correction bias."""
    config = transformers.DeepseekV3Config(**{**KW, **VARIANTS[name]})
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.DeepseekV3Model(config).eval()
    with torch.no_grad():
        for _, p in hf.named_parameters():
            p.add_(0.2 * torch.randn_like(p))
        for key, b in hf.named_buffers():
            if key.endswith("e_score_correction_bias"):  # as large as the scores' spread: it moves the choice
                b.copy_(0.3 * torch.randn_like(b))
    folder = scratch_folder(f"attnsym-deepseek-{name}-")
    hf.save_pretrained(folder, safe_serialization=True)
    family_tokenizer(folder)
    return folder, hf


@contextlib.contextmanager
def _router_in_float64():
    """DeepSeek's router casts with ``.type(torch.float32)``: made float64 like the other float32 steps."""
    real = torch.Tensor.type

    def typed(self, dtype=None, *args, **kwargs):
        return real(self, torch.float64 if dtype is torch.float32 else dtype, *args, **kwargs)

    torch.Tensor.type = typed
    try:
        yield
    finally:
        torch.Tensor.type = real


@functools.cache
def reference(name: str):
    """transformers' attentions and hidden states of :data:`IDS` in float64 with its float32 steps promoted."""
    folder, hf = checkpoint(name)
    with _float32_steps_in_float64() as constructors, _router_in_float64(), torch.no_grad():
        ref = type(hf).from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                       experts_implementation="eager").eval()
        rotary = ref.rotary_emb
        init = rotary.compute_default_rope_parameters if rotary.rope_type == "default" else ROPE_INIT_FUNCTIONS[
            rotary.rope_type]
        with constructors():
            inv_freq, rotary.attention_scaling = init(rotary.config)  # YaRN's frequencies and factor in float64
        rotary.inv_freq = rotary.original_inv_freq = inv_freq.to(torch.float64)
        out = ref(input_ids=torch.as_tensor(IDS), attention_mask=torch.as_tensor(MASK), output_attentions=True,
                  output_hidden_states=True)
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


def _errors(out, name: str) -> tuple[float, float]:
    """The largest differences from :func:`reference` over the real tokens: attention, hidden states."""
    return padded_gaps(out, reference(name), MASK)


@functools.cache
def loaded(name: str):
    return models.load(checkpoint(name)[0], dtype="float64")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_float64_matches_transformers(name):
    """Both checkpoints equal transformers in float64 (module docstring: the bar and why)."""
    m = loaded(name)
    assert m.config.model_type == "deepseek_v3"
    worst_a, worst_h = _errors(m.forward(IDS, MASK), name)
    print(f"deepseek_v3 {name}: attention {worst_a:.3g}, hidden states {worst_h:.3g}")
    assert worst_a <= ATTENTION_TOL and worst_h <= HIDDEN_TOL


def _blocks(m, change):
    """``m``'s plan with ``change(block)`` (a dict of fields) applied to every block."""
    return replace(m.config, blocks=tuple(replace(b, **change(b)) for b in m.config.blocks))


def test_each_option_bites():
    """The mutations a port gets wrong move the model far past the bar: RoPE's pairing, the latents' epsilon, the
    group limit, the correction bias."""
    m = loaded("q_latent")
    assert m.config.blocks[0].experts is None and all(b.experts for b in m.config.blocks[1:])
    pairing = _blocks(m, lambda b: {"attention": b.attention.replace(rope_pairing="rotate_half")})
    assert _errors(forward(pairing, m.weights, IDS, MASK), "q_latent")[0] > 1e-4
    eps = _blocks(m, lambda b: {"latent_norm": Norm("rms", 1e-5)})  # rms_norm_eps read for the latents
    assert _errors(forward(eps, m.weights, IDS, MASK), "q_latent")[1] > 1e-8
    ungrouped = _blocks(m, lambda b: {"experts": b.experts and replace(b.experts, top_groups=b.experts.groups)})
    assert _errors(forward(ungrouped, m.weights, IDS, MASK), "q_latent")[1] > 1e-4
    unbiased = replace(m.weights, layers=tuple(
        replace(lw, b_choice=None if lw.b_choice is None else 0.0 * lw.b_choice) for lw in m.weights.layers))
    assert _errors(forward(m.config, unbiased, IDS, MASK), "q_latent")[1] > 1e-4


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_schedule_shows_the_latent_layer(name):
    """``m.layers()`` JSON: d_k = nope + rope, the value width, the latents, 4 rotary dims shared by all heads, the
    scale transformers uses, the causal mask transformers builds."""
    m, (_, hf) = loaded(name), checkpoint(name)
    rows = m.layers().to_dict()["layers"]
    q_rank = VARIANTS[name]["q_lora_rank"]
    for row in rows:
        assert (row["head_dim"], row["value_dim"], row["rotary_dims"], row["heads"], row["kv_heads"]) == (12, 6, 4, 4, 4)
        assert (row["kv_latent_rank"], row["q_latent_rank"], row["shared_rotary_key"]) == (16, q_rank, True)
        assert row["scale"] == pytest.approx(hf.layers[0].self_attn.scaling, rel=1e-15)
    allowed = reference(name)[0][:, 0] > 0  # (L, H, n, n): the keys transformers lets each query see
    assert (allowed == np.tril(np.ones((9, 9), dtype=bool))).all()
    text = m.layers().text()
    assert "layers 1-3" in text and "values 6" in text and "latent K/V 16" in text
    assert m.spec(0).describe().count("latent K/V 16") == 1
    pairing = "interleaved" if VARIANTS[name]["rope_interleave"] else "rotate_half"
    assert m.spec(0).rope_pairing == pairing


def test_cli_layers_json(capsys):
    folder, _ = checkpoint("q_latent")
    assert main(["layers", "--model", str(folder), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == loaded("q_latent").layers().to_dict()
    assert {"value_dim", "kv_latent_rank", "q_latent_rank"} <= set(out["layers"][0])


def test_the_cached_pass_equals_the_full_one():
    m = loaded("q_latent")
    ids = IDS[:1]
    full = np.asarray(forward(m.config, m.weights, ids).hidden_states[-1])
    kv = KVCache.empty(m.config)
    parts = [forward_cached(m.config, m.weights, ids[:, a:b], kv) for a, b in ((0, 5), (5, 7), (7, ids.shape[1]))]
    assert np.abs(np.concatenate(parts, axis=1) - full).max() < 1e-12


def test_route_and_heads_run_on_it():
    m = models.load(checkpoint("q_proj")[0])  # float32, as a user loads it
    r = m.route("the apple phone launch event")
    assert r.attention.shape[:2] == (3, 4) and np.allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    report = hd.classify(r)
    assert (report.layers, report.heads) == (3, 4) and all(len(row) == 4 for row in report.primary)
    assert np.isfinite(report.score("previous")).all()


def _rms(a, g, eps: float):
    """RMSNorm by hand, for the checks rebuilt from transformers' modules."""
    return a / np.sqrt(np.mean(a * a, -1, keepdims=True) + eps) * g


def _config(**changes) -> Path:
    folder, _ = checkpoint("q_latent")
    raw = {**json.loads((folder / "config.json").read_text()), **changes}
    target = scratch_folder("attnsym-deepseek-lint-")
    (target / "config.json").write_text(json.dumps(raw))
    return target / "config.json"


def test_what_it_cannot_run_exactly_is_refused_by_key(capsys):
    linear = {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}
    with pytest.raises(UnsupportedModelError, match=r"rope_parameters\.rope_type='linear'"):
        read_config(_config(rope_parameters=linear))
    with pytest.raises(UnsupportedModelError, match=r"rope_scaling\.rope_type='linear'"):
        read_config(_config(rope_parameters=None, rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 2.0}))
    with pytest.raises(UnsupportedModelError, match="num_key_value_heads"):
        read_config(_config(num_key_value_heads=2))
    with pytest.raises(UnsupportedModelError, match="attention_bias"):
        read_config(_config(attention_bias=True))
    with pytest.raises(ModelError, match="'head_dim' = 8 must equal 'qk_rope_head_dim' = 4"):
        read_config(_config(head_dim=8))
    with pytest.raises(ModelError, match="'n_group' = 3 must split 'n_routed_experts' = 8"):
        read_config(_config(n_group=3))
    with pytest.raises(ModelError, match="'num_experts_per_tok' = 5 at most the 4 experts"):
        read_config(_config(num_experts_per_tok=5))
    folder = _config(rope_parameters=linear).parent
    assert main(["layers", "--model", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "rope_parameters.rope_type" in err and "Traceback" not in err


def test_the_spec_checks_its_latent_fields():
    from attnsym import AttentionSpec

    with pytest.raises(SpecError, match="kv_latent_rank needs positions='rope' and kv_heads == heads"):
        AttentionSpec(n=4, d_model=8, heads=2, kv_latent_rank=4)
    with pytest.raises(SpecError, match="q_latent_rank=4 only applies with kv_latent_rank"):
        AttentionSpec(n=4, d_model=8, heads=2, positions="rope", q_latent_rank=4)
    spec = AttentionSpec(n=4, d_model=8, heads=2, positions="rope", kv_latent_rank=4, d_v=3)
    assert spec.variants == ("kv_latent_rank",)
    with pytest.raises(SpecError, match="does not implement kv_latent_rank=4"):
        spec.refuse_variants("the symbolic view")


def test_head_contributions_read_the_values_from_the_latent():
    """What each head writes (``attnsym route``'s contributions): its values expanded from the normed latent, by hand
    from transformers' own modules."""
    from attnsym.models.attribution import head_contributions

    m, (_, hf) = loaded("q_proj"), checkpoint("q_proj")
    r = m.route("the apple phone launch event")
    c = head_contributions(m.config, m.weights, r)
    assert c.shape == (3, 4) and (c > 0).all()
    attn, x = hf.layers[0].self_attn, r.hidden_states[0]
    w = {k: v.detach().double().numpy() for k, v in hf.layers[0].state_dict().items()}
    h = _rms(x, w["input_layernorm.weight"], 1e-5)
    latent = _rms((h @ w["self_attn.kv_a_proj_with_mqa.weight"].T)[:, :16], w["self_attn.kv_a_layernorm.weight"], 1e-6)
    V = (latent @ w["self_attn.kv_b_proj.weight"].T).reshape(r.n, 4, 8 + 6)[..., 8:]
    W_O = w["self_attn.o_proj.weight"].T
    parts = [r.attention[0, k, -1] @ V[:, k] @ W_O[6 * k:6 * (k + 1)] for k in range(attn.num_heads)]
    np.testing.assert_allclose(c[0], [np.linalg.norm(p) for p in parts], rtol=1e-10)


def test_the_scores_split_and_absorb_on_a_real_layer():
    """``mla-absorbed`` on DeepSeek V3's own tensors: every head's score is its rotary part (one rotated key for all
    heads) plus its non-rotary part computed without expanding the key, ``(W_UK,hᵀ q^nope)·c_j``; together they are
    the layer's scores (within 1e-12). Rebuilt by hand from transformers' modules, interleaved RoPE included."""
    m, (_, hf) = loaded("q_latent"), checkpoint("q_latent")
    layer, H, nope, rope, dv, r = 1, 4, 8, 4, 6, 16
    out = m.forward(IDS[:1])
    w = {k: v.detach().double().numpy() for k, v in hf.layers[layer].state_dict().items()}
    h = _rms(np.asarray(out.hidden_states[layer][0]), w["input_layernorm.weight"], 1e-5)  # (n, d)
    q = _rms(h @ w["self_attn.q_a_proj.weight"].T, w["self_attn.q_a_layernorm.weight"], 1e-6)
    q = (q @ w["self_attn.q_b_proj.weight"].T).reshape(-1, H, nope + rope)  # (n, H, 12): non-rotary, then rotary
    a = h @ w["self_attn.kv_a_proj_with_mqa.weight"].T
    c, k_rope = _rms(a[:, :r], w["self_attn.kv_a_layernorm.weight"], 1e-6), a[:, r:]  # (n, r), (n, rope)
    theta = 10000.0 ** (-np.arange(0, rope, 2) / rope)
    angle = np.arange(len(h))[:, None] * theta  # (n, rope/2)

    def rotate(x):  # DeepSeek's interleaved pairs (2i, 2i + 1)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        cos, sin = (np.cos(angle), np.sin(angle)) if x.ndim == 2 else (np.cos(angle)[:, None], np.sin(angle)[:, None])
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    W_UK = w["self_attn.kv_b_proj.weight"].T.reshape(r, H, nope + dv)[..., :nope]  # (r, H, nope)
    q_rope, k_rope = rotate(q[..., nope:]), rotate(k_rope)
    S = np.asarray(out.scores[layer, 0])  # (H, n, n), -inf above the diagonal
    below = np.tril(np.ones(S.shape[1:], dtype=bool))
    for head in range(H):
        absorbed = (q[:, head, :nope] @ W_UK[:, head].T) @ c.T  # the key never expanded
        rotary = q_rope[:, head] @ k_rope.T  # one rotary key for every head
        ours = (nope + rope) ** -0.5 * (absorbed + rotary)
        assert np.abs(ours - S[head])[below].max() < 1e-12 * np.abs(S[head][below]).max()


def test_streamed_head_statistics_equal_the_dense_ones():
    """The audit's blockwise pass (values of width d_v ≠ d_k) gives the statistics of the dense route, row by row."""
    from test_audit_stats import check_against_dense

    ids = np.random.default_rng(0).integers(2, 100, size=37)
    check_against_dense(loaded("q_latent"), ids, block=8)
