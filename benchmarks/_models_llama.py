"""The LLaMA-shaped part of ``bench_models.py``: its random checkpoint, its two timed sides, and the loading memory.

The model (issue #23): width 512, 8 layers, 8 query heads sharing 2 key/value heads, SwiGLU
intermediate 1536, vocabulary 32000, float32 — ``transformers.LlamaModel`` with its own random
initialisation, saved with ``save_pretrained`` beside a word-level ``tokenizer.json`` (as the
family fixtures of ``tests/test_models_families.py``), and a second copy of it in bfloat16,
sharded (``max_shard_size`` small, so ``model.safetensors.index.json`` and many shards).

Loading memory: ``attnsym.models.load`` of the sharded bfloat16 folder (weights held in
float32) in a fresh interpreter; ``ru_maxrss`` after the load minus the resident set after the
imports, against the float32 size of the checkpoint's tensors. ``VmHWM`` is recorded beside it:
Linux keeps the largest ``ru_maxrss`` across ``exec``, so a child can inherit its parent's peak
(the parent process of this script stays small — it never imports torch — so both agree).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

N_TOKENS = 128
SHAPE = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2,
             intermediate_size=1536, vocab_size=32000, max_position_embeddings=512)
SHARD = "8MB"  # bfloat16: the 32000 × 512 embedding (31 MiB) is a shard of its own, the rest ~1–2 tensors a shard
WORDS = ("the apple phone launch event drew a large crowd while I like to eat apples in the quiet garden after "
         "the long walk along river and small boats passed by old stone bridge").split()
GOAL_LOAD = 1.3


def text(n: int = N_TOKENS) -> str:
    """``n`` words of the word-level vocabulary: exactly ``n`` tokens (no special tokens are added)."""
    return " ".join(WORDS[k % len(WORDS)] for k in range(n))


def build(root: Path) -> dict:
    """Write ``root/float32`` and ``root/bfloat16-sharded``; returns their sizes (run in a child: imports torch)."""
    import torch
    import transformers
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {w: i for i, w in enumerate(["<unk>", *dict.fromkeys(WORDS)])}
    config = transformers.LlamaConfig(**SHAPE, pad_token_id=0, torch_dtype="float32")
    torch.manual_seed(0)
    model = transformers.LlamaModel(config).eval()
    out = {}
    for name, dtype, shard in (("float32", torch.float32, None), ("bfloat16-sharded", torch.bfloat16, SHARD)):
        folder = root / name
        kw = {"max_shard_size": shard} if shard else {}
        model.to(dtype).save_pretrained(folder, safe_serialization=True, **kw)
        tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
        tok.pre_tokenizer = Whitespace()
        tok.save(str(folder / "tokenizer.json"))
        out[name] = {"folder": str(folder), "files": len(list(folder.glob("*.safetensors")))}
    params = sum(p.numel() for p in model.parameters())
    out["parameters"] = params
    out["float32_bytes"] = 4 * params
    return out


def side(name: str, folder: str):
    """``(call, info)`` of one timed side on the float32 folder: ``route`` (attnsym) or ``reference`` (transformers)."""
    from attnsym import models

    m = models.load(folder)
    t = text()
    r = m.route(t)
    if r.n != N_TOKENS:
        raise RuntimeError(f"the benchmark text is {r.n} tokens, expected {N_TOKENS}")
    if name == "route":
        return (lambda: m.route(t)), {}
    import torch
    import transformers

    hf = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    ids = torch.as_tensor(r.ids[None])

    def reference():
        with torch.inference_mode():
            return hf(input_ids=ids, output_attentions=True, output_hidden_states=True)

    return reference, {"torch": torch.__version__, "transformers": transformers.__version__}


def agreement(folder: str) -> dict:
    """Largest |attnsym − transformers| of the attention (all layers) and the last hidden state on the text."""
    import numpy as np
    import torch

    from attnsym import models

    r = models.load(folder).route(text())
    reference, _ = side("reference", folder)
    ref = reference()
    return {"attention": float(np.abs(torch.stack(ref.attentions)[:, 0].numpy() - r.attention).max()),
            "hidden": float(np.abs(ref.last_hidden_state[0].numpy() - r.hidden_states[-1]).max()), "n": r.n}


LOAD_CHILD = textwrap.dedent(r"""
    import json, resource, sys, time, tracemalloc
    import numpy as np
    from attnsym import models  # the imports the load needs, before the baseline
    import attnsym.models.forward, attnsym.models.families, attnsym.models.weights  # noqa: F401

    def status_kib(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    base = status_kib("VmRSS")
    inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if sys.argv[2] == "traced":  # a separate run: tracemalloc slows the load
        tracemalloc.start()
    start = time.perf_counter()
    m = models.load(sys.argv[1])
    seconds = time.perf_counter() - start
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    traced = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else None
    held = 4 * m.weights.parameter_count if m.weights.word.dtype == np.float32 else None
    print(json.dumps({"baseline_kib": base, "ru_maxrss_kib": maxrss, "inherited_maxrss_kib": inherited,
                      "vmhwm_kib": status_kib("VmHWM"), "rss_after_kib": status_kib("VmRSS"),
                      "seconds": seconds, "held_bytes": held, "traced_peak_bytes": traced, "dtype": str(m.weights.word.dtype)}))
""")


def load_memory(folder: str, env: dict, cwd: Path, traced: bool = False) -> dict:
    """One load of ``folder`` in a fresh interpreter: its peak resident set above the post-import baseline.

    ``traced``: also the peak of Python/NumPy allocations (tracemalloc) — the anonymous part of
    the peak; the rest of the resident set is file pages of the memory-mapped shards.
    """
    done = subprocess.run([sys.executable, "-c", LOAD_CHILD, folder, "traced" if traced else "plain"],
                          capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"loading {folder} failed:\n{done.stderr.strip()[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["added_kib"] = out["ru_maxrss_kib"] - out["baseline_kib"]
    out["added_hwm_kib"] = out["vmhwm_kib"] - out["baseline_kib"]
    return out
