"""Streamed head statistics at long n: ``Model.head_stats`` on SmolLM2-135M-Instruct (or a random model of its shape).

Run with the BLAS overrides of these machines removed, in this command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_audit.py [--sizes 1024,2048,4096,8192]

Goal (issue #34): 8192 tokens within 5 minutes and within 1.5 GiB of memory beyond the weights,
on 2 cores. Each size runs in a fresh process: it loads the model, reads its resident set
(``VmRSS``), resets the high-water mark (``/proc/self/clear_refs``), runs ``head_stats`` on ``n``
random token ids (every statistic, the induction probe included, 2 threads), and reports the wall
time, the CPU time of all its threads and ``VmHWM − VmRSS``: the memory the pass added beyond
the loaded weights.

The model: ``attnsym.models.load("SmolLM2-135M-Instruct")`` when it loads; otherwise a random
LLaMA folder of SmolLM2's sizes (30 layers, width 576, 9 query and 3 key/value heads of 64,
feed-forward 1536, vocabulary 49152, 8192 positions, RoPE base 100000, tied embeddings), written
with ``transformers`` (in a child process: this script never imports torch). Writes the
``audit`` section of docs/benchmarks.md (``--quick``: n = 512 and 1024 only, nothing written).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import blas_kernels, environment_report, load_average, write_section

GOAL_SECONDS = 300
GOAL_MIB = 1536
SMOLLM2 = "SmolLM2-135M-Instruct"
SHAPE = dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
             intermediate_size=1536, vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
             rms_norm_eps=1e-5, tie_word_embeddings=True)

_BUILD = textwrap.dedent("""
    import sys, torch, transformers
    config = transformers.LlamaConfig(**{shape}, pad_token_id=0, torch_dtype="float32")
    torch.manual_seed(0)
    transformers.LlamaModel(config).eval().save_pretrained(sys.argv[1], safe_serialization=True)
""")

_PROBE = textwrap.dedent("""
    import json, os, resource, sys, time
    import numpy as np
    from attnsym import models

    source, n = sys.argv[1], int(sys.argv[2])
    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    m = models.load(source)
    ids = np.random.default_rng(0).integers(10, m.config.vocab_size, n)
    m.head_stats(ids[:64], threads=2, progress=False)  # warm up: kernels, the induction probe's imports
    rss = status("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    wall, cpu = time.perf_counter(), time.process_time()
    s = m.head_stats(ids, threads=2, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "rss": rss, "hwm": status("VmHWM:"),
                      "weights": sum(int(a.nbytes) for a in m.weights.arrays().values())
                                 + sum(int(v.nbytes) for lw in m.weights.layers for v in lw.arrays().values()),
                      "entropy": float(np.nanmean(s.means["entropy"])), "load": os.getloadavg()[0]}))
""")


def model_source(root: Path) -> tuple[str, str]:
    """``(source, description)``: SmolLM2 when it loads, else a random folder of its shape built under ``root``."""
    try:
        from attnsym import models

        models.load(SMOLLM2)
        return SMOLLM2, f"{SMOLLM2} (the packaged GGUF, float32)"
    except Exception as error:  # any reason it does not load: say so and use the random model
        reason = " ".join(str(error).split())[:160]
    folder = root / "smollm2-shaped"
    subprocess.run([sys.executable, "-c", _BUILD.format(shape=repr(SHAPE)), str(folder)], check=True)
    return str(folder), (f"a random LLaMA folder of SmolLM2's sizes (30 layers, width 576, 9/3 heads of 64, "
                         f"feed-forward 1536), float32 — {SMOLLM2} did not load here ({reason})")


def probe(source: str, n: int) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, source, str(n)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"n={n} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def render(rows: list[dict], model: str, before: float, after: float) -> str:
    mib = 2**20
    lines = [
        "## Streamed head statistics at long n (`benchmarks/bench_audit.py`)", "",
        environment_report(),
        f"- BLAS: {'; '.join(blas_kernels())}",
        f"- model: {model}",
        f"- load average (1 min) before → after: {before:.1f} → {after:.1f} (a shared 2-core machine: other "
        "processes ran beside it)", "",
        "`Model.head_stats(ids, threads=2)`: every statistic of every head in one streamed pass (no n × n "
        "map), the induction probe included, each n in a fresh process. Memory: the peak resident set during the "
        "call minus the resident set before it (the loaded weights and the warm-up). Goal (issue #34): 8192 "
        f"tokens within {GOAL_SECONDS // 60} minutes and {GOAL_MIB / 1024:.1f} GiB beyond the weights.", "",
        "| n | wall | CPU, all threads | memory beyond the weights | weights | goal |", "|---|---|---|---|---|---|",
    ]
    for r in rows:
        extra = (r["hwm"] - r["rss"]) / mib
        goal = ""
        if r["n"] == 8192:
            ok = r["wall"] <= GOAL_SECONDS and extra <= GOAL_MIB
            goal = f"{'met' if ok else 'not met'} (≤ {GOAL_SECONDS} s, ≤ {GOAL_MIB} MiB)"
        lines.append(f"| {r['n']} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {extra:.0f} MiB | "
                     f"{r['weights'] / mib:.0f} MiB | {goal} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048,4096,8192")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sizes = [512, 1024] if args.quick else [int(s) for s in args.sizes.split(",")]
    before = load_average()[0]
    with tempfile.TemporaryDirectory() as tmp:
        source, model = model_source(Path(tmp))
        rows = []
        for n in sizes:
            rows.append(probe(source, n))
            print(json.dumps(rows[-1]), flush=True)
    markdown = render(rows, model, before, load_average()[0])
    print(markdown)
    if not args.quick:
        write_section("audit", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
