"""Route through each 2026 family's random checkpoint: attnsym against transformers eager (goal ≤ 1.0×).

Each family is a random checkpoint of the test's shape, wider (width 256, 4 layers, 8 heads, 4
key/value heads, head width 32, feed-forward 512; the options that bite in the tests kept: windows,
chunks, NoPE layers, sinks, experts) saved with transformers, and one text of 128 tokens.
attnsym: ``m.route(text)`` in float32 (attention, scores and hidden states of every layer,
tokenizing included); transformers: the eager model's forward with ``output_attentions`` and
``output_hidden_states`` in float32 under ``torch.no_grad`` (the token ids given). Both on one
thread (``torch.set_num_threads(1)``, BLAS limited to 1 thread by threadpoolctl). Medians of 7
runs after a warm-up.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_families_2026.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_families_2026.py --quick deepseek_v3

``--quick``: 3 runs per side, only the families named (all when none is), docs/benchmarks.md not written.
DeepSeek V3 keeps its own head sizes (multi-head latent attention: 8 key/value heads, one per query head,
expanded from a latent of 64; d_k = 32 + 16 rotary, d_v = 24; 8 experts in 4 groups after one dense layer).
"""

from __future__ import annotations

import os
import sys

from _common import ROOT, environment_report, load_average, load_warning, median_time, write_section

sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
import transformers
from models_support import FAMILY_WORDS, save_random
from threadpoolctl import threadpool_limits

from attnsym import models

KW = dict(hidden_size=256, num_attention_heads=8, num_key_value_heads=4, head_dim=32, intermediate_size=512,
          vocab_size=100, max_position_embeddings=256, pad_token_id=1, num_hidden_layers=4)
VARIANTS = {
    "gemma3_text": ("Gemma3TextConfig", "Gemma3TextModel", dict(sliding_window=16, query_pre_attn_scalar=32,
                    layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"])),
    "olmo2": ("Olmo2Config", "Olmo2Model", {}),
    "smollm3": ("SmolLM3Config", "SmolLM3Model", dict(no_rope_layers=[1, 0, 1, 1], use_sliding_window=True,
                                                       sliding_window=16)),
    "phi3": ("Phi3Config", "Phi3Model", dict(sliding_window=16, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})),
    "llama4_text": ("Llama4TextConfig", "Llama4TextModel", dict(intermediate_size_mlp=512, num_local_experts=4,
                    num_experts_per_tok=2, attention_chunk_size=16, floor_scale=8, attn_scale=0.1,
                    interleave_moe_layer_step=2, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "gpt_oss": ("GptOssConfig", "GptOssModel", dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=16,
                                                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # multi-head latent attention: 8 key/value heads expanded from a latent of 64, d_k = 32 + 16, d_v = 24
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3Model", dict(
        num_key_value_heads=8, head_dim=16, kv_lora_rank=64, q_lora_rank=96, qk_nope_head_dim=32, qk_rope_head_dim=16,
        v_head_dim=24, moe_intermediate_size=128, n_routed_experts=8, num_experts_per_tok=2, n_group=4, topk_group=2,
        first_k_dense_replace=1, n_shared_experts=1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # the output gate, 1 + w norms, partial rotary, softmax-routed experts with a gated shared expert
    "qwen3_next": ("Qwen3NextConfig", "Qwen3NextModel", dict(
        layer_types=["full_attention"] * 4, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128,
        shared_expert_intermediate_size=256, decoder_sparse_step=1, mlp_only_layers=[0],
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})),
}
TEXT = " ".join((FAMILY_WORDS[2:] * 7)[:128])


def checkpoint(name: str):
    config_cls, model_cls, extra = VARIANTS[name]
    return save_random(getattr(transformers, config_cls)(**{**KW, **extra}), model_cls, seed=0, noise=0.02,
                       prefix=f"attnsym-bench-{name}-")


def main(write: bool = True, families: list[str] | None = None, repeat: int = 7) -> None:
    torch.set_num_threads(1)
    loads, rows = [load_average()[0]], []
    for name in families or VARIANTS:
        folder, hf = checkpoint(name)
        m = models.load(folder)
        ids = torch.as_tensor([m.tokenizer.encode(TEXT).ids])
        assert ids.shape[1] == 128, ids.shape
        with threadpool_limits(limits=1, user_api="blas"):
            ours, _ = median_time(lambda m=m: m.route(TEXT), repeat=repeat)
        with torch.no_grad():
            theirs, _ = median_time(lambda hf=hf, ids=ids: hf(input_ids=ids, output_attentions=True,
                                                              output_hidden_states=True), repeat=repeat)
        loads.append(load_average()[0])
        rows.append(f"| `{name}` | {ours * 1e3:.1f} ms | {theirs * 1e3:.1f} ms | **{ours / theirs:.2f}×** |")
        print(rows[-1], f"load {loads[-1]:.1f}", flush=True)
    lines = ["## Routing the 2026 families", "", "Measured by `benchmarks/bench_families_2026.py`.", "",
             environment_report(),
             f"- load average (1 min) before and after each family: {', '.join(f'{x:.1f}' for x in loads)}",
             *([w] if (w := load_warning(loads)) else []), "",
             "A random checkpoint per family (width 256, 4 layers, 8 heads of 32, 4 key/value heads, feed-forward "
             "512, the tests' options that bite), one text of 128 tokens, float32, one thread each; medians of 7 "
             "runs. attnsym: `m.route(text)` (tokenizing, every layer's attention, scores and hidden states); "
             "transformers: the eager forward with `output_attentions` and `output_hidden_states`.", "",
             "| family | attnsym route | transformers eager | ratio (goal ≤ 1.0) |", "|---|---|---|---|", *rows]
    text = "\n".join(lines)
    print(text)
    if write:
        write_section("families_2026", text)


if __name__ == "__main__":
    quick = "--quick" in sys.argv  # the families named after --quick (all by default), 3 runs each, nothing written
    named = [a for a in sys.argv[1:] if a in VARIANTS]
    main(write=not quick and "--no-write" not in sys.argv, families=named or None, repeat=3 if quick else 7)
