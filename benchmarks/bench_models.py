"""attnsym.models vs the PyTorch reference: 128 tokens through MiniLM and a LLaMA-shaped random model, float32.

Run with the BLAS overrides of these machines removed, in this command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_models.py

Goal (issue #10): ``Model.route(text)`` takes at most 1.2× the time of the PyTorch reference
forward with ``output_attentions=True``. Sides:

* attnsym ``Model.route(text)`` — tokenization, the NumPy forward pass (all attention
  probabilities, scaled scores and hidden states kept) and slicing into a Route: the goal's side;
* attnsym ``Model.forward(ids)`` — the forward pass alone, on NumPy (with the compiled kernels of
  :mod:`attnsym.numeric._kernels` when Numba is installed, and with them switched off: NumPy
  operations only), with its matrix products on ``k`` BLAS threads (``threads=k``, ``k`` the
  setting's threads), and on torch tensors;
* PyTorch reference — ``transformers`` BertModel, ``attn_implementation="eager"`` (the only
  implementation that can return the weights), ``output_attentions=True``,
  ``output_hidden_states=True``, under ``torch.inference_mode()``, on pre-tokenized ids.

**Process layout.** Each side runs in its own worker process (so neither library's idle
threads — torch's OpenMP pool spins after each parallel region — slow the other), once with one
thread (``threadpoolctl`` for the BLAS, which also sets how many slices attnsym cuts each step
into; ``torch.set_num_threads(1)``) and once with the cores of the machine. The workers run in
rounds, the order of the sides reversed every other round, so load on a shared machine hits
them alike; the tables give medians over all timed calls with the min–max spread, CPU-time
medians (all threads of the worker summed) and the load average before and after each worker.
A last measurement runs both sides alternately inside ONE process at the default threads, the
layout of earlier versions of this script, to show what that layout does to each side.

**Profile.** Where attnsym's forward spends its time, one thread, from ``cProfile`` (cumulative
CPU time of the functions of :mod:`attnsym.models.forward`: the matrix products, the softmax
kernels, GELU, LayerNorm), beside the reference's total at one thread.

**Memory.** Peak memory of one forward pass (the first call) in a fresh subprocess per side: for
attnsym exactly, the peak of NumPy's allocations with ``tracemalloc`` (and how much of it is the
outputs kept); for both sides the growth of the resident set during the call (``VmHWM``, reset
through ``/proc/self/clear_refs``, minus the resident size before it) — memory the allocator
could not reuse from loading the model, so a lower bound of what the pass needs.

**LLaMA-shaped model** (issue #23, :mod:`_models_llama`): a random ``LlamaModel`` (width 512,
8 layers, 8 heads, 2 key/value heads, SwiGLU 1536, float32) built in a temporary folder by a
child process; route(text) of 128 tokens against the transformers eager reference, each side in
its own worker as above (goal ≤ 1.2×), a cProfile of route's top functions, and the peak RSS of
``attnsym.models.load`` on a sharded bfloat16 copy in a fresh process (``ru_maxrss`` minus the RSS
after the imports) against the float32 weights' size (goal ≤ 1.3×).

The result replaces the ``models`` section of docs/benchmarks.md (``--quick``: fewer calls,
prints only; ``--part minilm|llama``: one model, prints only). ``--save FILE`` keeps the raw
measurements, ``--render FILE`` rewrites the section from them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _models_llama as llama  # noqa: E402
from _common import blas_kernels, environment_report, load_average, load_warning, write_section  # noqa: E402

N_TOKENS = 128
GOAL = 1.2
DEFAULT_ROUNDS, DEFAULT_CALLS = 3, 10
ROUTE, FORWARD, FORWARD_OPS, FORWARD_SLICES, FORWARD_TORCH, REFERENCE = (
    "attnsym route(text), NumPy", "attnsym forward(ids), NumPy", "attnsym forward(ids), NumPy operations (no Numba)",
    "attnsym forward(ids, threads=k), NumPy: BLAS at k threads", "attnsym forward(ids), torch tensors",
    "PyTorch reference (transformers, eager)")
SIDES = {"route": ROUTE, "forward": FORWARD, "forward-ops": FORWARD_OPS, "forward-slices": FORWARD_SLICES,
         "forward-torch": FORWARD_TORCH, "reference": REFERENCE}
_WORKER = {"threads": 1}  # the thread setting of this worker process
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def sentence(tokenizer, n: int = N_TOKENS) -> str:
    """A text of real English words that the packaged tokenizer turns into exactly ``n`` tokens ([CLS], [SEP] included)."""
    words = ("the apple phone launch event drew a large crowd while I like to eat apples in the quiet garden "
             "after the long walk along the river and the small boats passed by the old stone bridge").split()
    text, k = "", 0
    while True:
        candidate = (text + " " + words[k % len(words)]).strip()
        if len(tokenizer.encode(candidate).ids) > n:
            break
        text, k = candidate, k + 1
    if len(tokenizer.encode(text).ids) != n:
        raise RuntimeError(f"could not build a {n}-token text (got {len(tokenizer.encode(text).ids)})")
    return text


# ----------------------------------------------------------------------------- the sides
def _side(name: str):
    """``(call, info)`` for one side, set up in this process (imports torch only for the torch sides)."""
    from attnsym import models
    from attnsym.numeric import _kernels

    m = models.load()
    text = sentence(m.tokenizer)
    ids = m.route(text).ids[None]
    if name == "route":
        return (lambda: m.route(text)), {}
    if name == "forward":
        return (lambda: m.forward(ids)), {"kernels": "compiled (Numba)" if _kernels.available() else "NumPy operations"}
    if name == "forward-slices":  # k = the threads of the setting (one slice at one thread: the forward side)
        return (lambda: m.forward(ids, threads=_WORKER["threads"])), {}
    if name == "forward-ops":
        os.environ["ATTNSYM_NUMBA"] = "0"  # this worker process runs this side alone
        assert not _kernels.available()
        return (lambda: m.forward(ids)), {"kernels": "NumPy operations"}
    import torch

    if name == "forward-torch":
        mt = models.load(backend="torch")
        return (lambda: mt.forward(ids)), {"torch": torch.__version__}
    import transformers

    hf = transformers.AutoModel.from_pretrained(str(m.folder), attn_implementation="eager").eval()
    t = torch.as_tensor(ids)

    def reference():
        with torch.inference_mode():
            return hf(input_ids=t, output_attentions=True, output_hidden_states=True)

    return reference, {"torch": torch.__version__, "transformers": transformers.__version__}


def _set_threads(name: str, threads: int):
    """Limit BLAS (and torch's intra-op pool for the torch sides) to ``threads``; returns the BLAS limiter."""
    from threadpoolctl import threadpool_limits

    if name in ("forward-torch", "reference", "llama-reference"):
        import torch

        torch.set_num_threads(threads)
    return threadpool_limits(limits=threads)


def _time_calls(fn, calls: int) -> tuple[list[float], list[float]]:
    for _ in range(3):  # warm-up: imports, allocator, BLAS buffers, the thread pools
        fn()
    wall, cpu = [], []
    for _ in range(calls):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def worker(name: str, threads: int, calls: int) -> dict:
    """Time one side in this process at ``threads`` threads."""
    out: dict = {"side": name, "threads": threads, "load_before": load_average()[0]}
    _WORKER["threads"] = threads
    fn, info = _side(name)
    with _set_threads(name, threads):
        out["wall"], out["cpu"] = _time_calls(fn, calls)
        out["blas"] = blas_kernels()
        if name in ("forward-torch", "reference"):
            import torch

            info["torch_threads"] = torch.get_num_threads()
    out.update(info, load_after=load_average()[0])
    return out


def llama_worker(name: str, folder: str, threads: int, calls: int) -> dict:
    """Time one side of the LLaMA-shaped model (``llama-route`` or ``llama-reference``) in this process."""
    out: dict = {"side": name, "threads": threads, "load_before": load_average()[0]}
    fn, info = llama.side(name.removeprefix("llama-"), folder)
    with _set_threads(name, threads):
        out["wall"], out["cpu"] = _time_calls(fn, calls)
        out["blas"] = blas_kernels()
    out.update(info, load_after=load_average()[0])
    return out


def llama_profile(folder: str, calls: int, top: int = 15) -> dict:
    """Where route(text) of the LLaMA-shaped model spends its time, one thread: cProfile (CPU time), by own time."""
    import cProfile
    import pstats

    from threadpoolctl import threadpool_limits

    fn, _ = llama.side("route", folder)
    with threadpool_limits(limits=1):  # CPU time at one thread: what other processes on the machine change least
        for _ in range(2):
            fn()
        prof = cProfile.Profile(timer=time.process_time)
        prof.enable()
        for _ in range(calls):
            fn()
        prof.disable()
    stats = pstats.Stats(prof).stats
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    total = sum(v[2] for v in stats.values()) / calls
    return {"total": total, "calls": calls, "rows": [
        {"function": f"{Path(file).name}:{line} {func}" if line else func, "ncalls": nc // calls,
         "tottime": tt / calls, "cumtime": ct / calls} for (file, line, func), (nc, _, tt, ct, _) in rows]}


def same_process(calls: int) -> dict:
    """attnsym route and the reference alternately in ONE process at the default threads (the old layout)."""
    route, _ = _side("route")
    reference, _ = _side("reference")
    times: dict[str, list[float]] = {"route": [], "reference": []}
    fns = {"route": route, "reference": reference}
    for fn in fns.values():
        for _ in range(3):
            fn()
    for k in range(calls):
        for name in ("route", "reference") if k % 2 == 0 else ("reference", "route"):
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return {"wall": times, "blas": blas_kernels(), "load": load_average()[0]}


def profile(calls: int) -> dict:
    """One thread: cumulative CPU time of attnsym's forward functions (cProfile), and the reference's total."""
    import cProfile
    import pstats

    from threadpoolctl import threadpool_limits

    forward, _ = _side("forward")
    reference, _ = _side("reference")
    import torch

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        _, ref_cpu = _time_calls(reference, calls)
        _, fwd_cpu = _time_calls(forward, calls)
        prof = cProfile.Profile(timer=time.process_time)
        prof.enable()
        for _ in range(calls):
            forward()
        prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (calls, prim calls, tottime, cumtime, callers)
    files = (os.path.join("models", "forward.py"), os.path.join("numeric", "layer.py"), os.path.join("numeric", "_kernels.py"),
             os.path.join("numeric", "norms.py"), os.path.join("numeric", "activations.py"))
    wanted = {"_linear": "x W + b (the packed Q, K, V projection, feed-forward, output projection)",
              "block_scores": "Q Kᵀ per head (the scores)",
              "shifted_exp": "softmax: exp(S − max), row sums (NumPy operations)",
              "safe_divide": "softmax: divide by the row sums (NumPy operations)",
              "_activation": "GELU (NumPy operations)", "layer_norm": "LayerNorm (NumPy operations)",
              "bias_gelu": "bias + GELU (compiled kernel)", "residual_layernorm": "bias + residual + LayerNorm (compiled kernel)",
              "softmax_rows": "softmax (compiled kernel)"}
    parts, total = {}, 0.0
    for (file, _, func), (_, _, _, cum, _) in stats.items():
        if file.endswith(files) and func in wanted:
            parts[wanted[func]] = parts.get(wanted[func], 0.0) + cum / calls
        if file.endswith(files[0]) and func == "forward":
            total = cum / calls
    return {"parts": parts, "profiled_forward": total, "forward_cpu": statistics.median(fwd_cpu),
            "reference_cpu": statistics.median(ref_cpu)}


def _numba_version() -> str | None:
    try:
        import numba
    except ImportError:
        return None
    return numba.__version__


def _child(*args: str) -> dict:
    cmd = [sys.executable, __file__, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- memory and agreement
MEMORY_CHILD = r"""
import json, sys, tracemalloc
from pathlib import Path
import numpy as np

def status(key):  # kB, from /proc/self/status
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])

def reset_peak():  # Linux: writing 5 to clear_refs resets the peak resident set size (VmHWM)
    Path("/proc/self/clear_refs").write_text("5")

side = sys.argv[1]
from attnsym import models
m = models.load()
ids = np.array(json.loads(sys.argv[2]))[None]
if side == "torch":
    import torch, transformers
    hf = transformers.AutoModel.from_pretrained(str(m.folder), attn_implementation="eager").eval()
    t = torch.as_tensor(ids)
    run = lambda: hf(input_ids=t, output_attentions=True, output_hidden_states=True)
    with torch.inference_mode():
        reset_peak(); base = status("VmRSS")
        out = run()  # the first call: what the allocator must grow by is what a forward needs
        peak = status("VmHWM")
    kept = sum(a.numel() * a.element_size() for a in (*out.attentions, *out.hidden_states))
    print(json.dumps({"rss_kib": peak - base, "output_bytes": kept}))
else:
    from attnsym.numeric import _kernels
    before = status("VmRSS")
    _kernels.load()  # the compiled kernels, once per process: measured apart
    kernels_kib = status("VmRSS") - before
    reset_peak(); base = status("VmRSS")
    tracemalloc.start()
    out = m.forward(ids)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = status("VmHWM")
    kept = out.attention.nbytes + out.scores.nbytes + out.hidden_states.nbytes
    print(json.dumps({"rss_kib": peak - base, "traced_bytes": traced, "output_bytes": kept, "kernels_kib": kernels_kib}))
"""


def memory(side: str, ids: list[int]) -> dict:
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, side, json.dumps(ids)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def agreement() -> dict:
    """Largest |attnsym − reference| on the benchmark sentence (attention of every layer, last hidden state), and its ids."""
    import numpy as np
    import torch

    from attnsym import models

    m = models.load()
    r = m.route(sentence(m.tokenizer))
    reference, _ = _side("reference")
    ref = reference()
    return {"attention": float(np.abs(torch.stack(ref.attentions)[:, 0].numpy() - r.attention).max()),
            "hidden": float(np.abs(ref.last_hidden_state[0].numpy() - r.hidden_states[-1]).max()),
            "ids": r.ids.tolist(), "n": r.n}


# ----------------------------------------------------------------------------- the section
def _ms(values: list[float]) -> str:
    return f"{1e3 * statistics.median(values):.1f} ({1e3 * min(values):.1f} – {1e3 * max(values):.1f})"


def render(raw: dict) -> str:
    runs, agree = raw["runs"], raw["agree"]
    lines = [
        "## Real model: all-MiniLM-L6-v2 forward, attnsym.models vs PyTorch (`benchmarks/bench_models.py`)",
        "",
        f"One {agree['n']}-token sentence (word pieces, [CLS] and [SEP] included) through all 6 layers, float32, "
        f"batch 1. Each side in its own worker process, {raw['rounds']} rounds (order of the sides reversed every "
        f"other round) of {raw['calls']} timed calls after 3 warm-up calls, per thread setting; medians over all "
        "calls with the (min – max) spread; CPU time is the worker's, all threads summed. Goal (issue #10): "
        f"route(text) ≤ {GOAL}× the reference. Command: "
        "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_models.py"
        + (f" --calls {raw['calls']}" if raw["calls"] != DEFAULT_CALLS else "")
        + (f" --rounds {raw['rounds']}" if raw["rounds"] != DEFAULT_ROUNDS else "") + "`.",
    ]
    for threads in raw["threads"]:
        pick = {name: [r for r in runs if r["side"] == name and r["threads"] == threads] for name in SIDES}
        wall = {name: [t for r in rs for t in r["wall"]] for name, rs in pick.items()}
        cpu = {name: [t for r in rs for t in r["cpu"]] for name, rs in pick.items()}
        ref_wall, ref_cpu = statistics.median(wall["reference"]), statistics.median(cpu["reference"])
        ratio = statistics.median(wall["route"]) / ref_wall
        lines += ["", f"**{threads} thread{'s' if threads > 1 else ''}** per side "
                      f"(BLAS, attnsym's `threads=k`; torch intra-op threads): route(text) = **{ratio:.2f}×** the "
                      f"reference (goal ≤ {GOAL}: {'met' if ratio <= GOAL else '**not met**'})", "",
                  "| side | wall median (min – max), ms | × reference (wall) | CPU median (ms) | × reference (CPU) "
                  "| load before → after (1 min) |",
                  "|---|---|---|---|---|---|"]
        for name, label in SIDES.items():
            c = statistics.median(cpu[name])
            loads = ", ".join(f"{r['load_before']:.1f}→{r['load_after']:.1f}" for r in pick[name])
            lines.append(f"| {label} | {_ms(wall[name])} | {statistics.median(wall[name]) / ref_wall:.2f} | "
                         f"{1e3 * c:.1f} | {c / ref_cpu:.2f} | {loads} |")
    same = raw.get("same_process")
    if same:
        r, ref = same["wall"]["route"], same["wall"]["reference"]
        lines += ["", f"The old layout for comparison — both sides alternately in ONE process, default threads "
                      f"({raw['threads'][-1]}), {len(r)} calls each, load {same['load']:.1f}: route(text) {_ms(r)} ms, "
                      f"reference {_ms(ref)} ms, ratio {statistics.median(r) / statistics.median(ref):.2f}×; BLAS "
                      f"threads there: {'; '.join(same['blas'])}."]
    prof = raw["profile"]
    total = prof["profiled_forward"]
    lines += ["", f"Where attnsym's forward spends its time, one thread (cProfile, cumulative CPU time per call "
                  f"under the profiler, {1e3 * total:.1f} ms in all; unprofiled the forward takes "
                  f"{1e3 * prof['forward_cpu']:.1f} ms of CPU and the reference {1e3 * prof['reference_cpu']:.1f} ms "
                  "at one thread):",
              "", "| part | ms | share of the forward |", "|---|---|---|"]
    for part, seconds in sorted(prof["parts"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {part} | {1e3 * seconds:.1f} | {100 * seconds / total:.0f}% |")
    rest = total - sum(prof["parts"].values())
    lines.append("| the rest (with the compiled kernels: the products x W of the row step, which the profiler does not "
                 "see apart; embedding lookup, views, Python, the final finiteness check) "
                 f"| {1e3 * rest:.1f} | {100 * rest / total:.0f}% |")
    info = next(r for r in runs if r["side"] == "reference")
    mem_np, mem_torch = raw["memory"]["numpy"], raw["memory"]["torch"]
    lines += [
        "",
        f"- agreement on this sentence: attention probabilities max |Δ| = {agree['attention']:.1e}, last hidden state "
        f"max |Δ| = {agree['hidden']:.1e}",
        f"- the reference runs `attn_implementation=\"eager\"` (matmul, softmax, matmul; SDPA cannot return the "
        f"weights) with `output_attentions=True`, `output_hidden_states=True`, `torch.inference_mode()`; "
        f"torch {info['torch']}, transformers {info['transformers']}",
        f"- peak memory of one forward pass, fresh process per side: NumPy allocations of attnsym's pass "
        f"(tracemalloc peak) {mem_np['traced_bytes'] / 2**20:.1f} MiB, of which {mem_np['output_bytes'] / 2**20:.1f} MiB "
        "are the outputs kept (attention, scores, hidden states); growth of the resident set during the first call "
        f"(peak RSS minus RSS before it, memory the allocator could not reuse from loading): attnsym "
        f"{mem_np['rss_kib'] / 1024:.1f} MiB, PyTorch reference {mem_torch['rss_kib'] / 1024:.1f} MiB (its outputs "
        f"kept: {mem_torch['output_bytes'] / 2**20:.1f} MiB of attention and hidden states)"
        + (f"; before it, loading attnsym's compiled kernels (once per process, Numba's import included) grew the "
           "resident set "
           f"by {mem_np['kernels_kib'] / 1024:.1f} MiB" if mem_np.get("kernels_kib") else ""),
        f"- load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in raw['load_before'])}; "
        f"after: {', '.join(f'{v:.2f}' for v in raw['load_after'])}",
        f"- BLAS in the attnsym workers (threadpoolctl, at {raw['threads'][-1]} threads): "
        + "; ".join(next(r for r in runs if r["side"] == "route" and r["threads"] == raw["threads"][-1])["blas"]),
        f"- element-wise steps of attnsym's NumPy pass: {next(r for r in runs if r['side'] == 'forward')['kernels']}"
        + (f", Numba {raw['numba']}" if raw.get("numba") else ""),
        raw["environment"],
    ]
    return "\n".join(lines)


def run_llama(rounds: int, calls: int, threads: list[int]) -> dict:
    """The LLaMA-shaped model: build it (child), time both sides per thread setting (a child each), profile, load memory."""
    import tempfile

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="attnsym-bench-llama-") as tmp:
        built = _child("--worker", "llama-build", "--folder", tmp)
        folder = built["float32"]["folder"]
        runs = []
        for t in threads:
            for k in range(rounds):
                for side in ("llama-route", "llama-reference")[:: 1 if k % 2 == 0 else -1]:
                    runs.append(_child("--worker", side, "--folder", folder, "--threads", str(t), "--calls", str(calls)))
                    print(f"llama, {t} thread(s), round {k + 1}/{rounds}: {side} median "
                          f"{1e3 * statistics.median(runs[-1]['wall']):.1f} ms (load {runs[-1]['load_after']:.1f})",
                          file=sys.stderr)
        prof = _child("--worker", "llama-profile", "--folder", folder, "--calls", str(max(3, calls // 2)))
        agree = _child("--worker", "llama-agreement", "--folder", folder)
        loads = {name: [llama.load_memory(built[name]["folder"], env, ROOT) for _ in range(rounds)]
                 for name in ("bfloat16-sharded", "float32")}
        traced = {name: llama.load_memory(built[name]["folder"], env, ROOT, traced=True)
                  for name in ("bfloat16-sharded", "float32")}
        print(f"llama load: bf16 sharded peak added {loads['bfloat16-sharded'][0]['added_kib'] / 1024:.0f} MiB",
              file=sys.stderr)
    return {"runs": runs, "threads": threads, "rounds": rounds, "calls": calls, "profile": prof, "agree": agree,
            "loads": loads, "traced": traced, "built": {k: v for k, v in built.items() if k in ("parameters", "float32_bytes")},
            "files": {k: built[k]["files"] for k in ("float32", "bfloat16-sharded")}}


def render_llama(raw: dict) -> str:
    shape = llama.SHAPE
    runs, agree = raw["runs"], raw["agree"]
    lines = [
        "### LLaMA-shaped random model: route(text) vs transformers, and loading a sharded bfloat16 copy",
        "",
        f"A random `LlamaModel` (transformers' initialisation, seed 0): width {shape['hidden_size']}, "
        f"{shape['num_hidden_layers']} layers, {shape['num_attention_heads']} heads sharing "
        f"{shape['num_key_value_heads']} key/value heads, SwiGLU intermediate {shape['intermediate_size']}, vocabulary "
        f"{shape['vocab_size']}, float32 ({raw['built']['parameters'] / 1e6:.1f} M parameters), saved with "
        "`save_pretrained` beside a word-level `tokenizer.json`; one text of "
        f"{agree['n']} tokens (batch 1). Sides: attnsym `Model.route(text)` (tokenization, the forward, the Route) "
        "against transformers' `AutoModel`, `attn_implementation=\"eager\"`, `output_attentions=True`, "
        "`output_hidden_states=True`, `torch.inference_mode()`, on the ids. Each side in its own worker process, "
        f"{raw['rounds']} rounds (order reversed every other round) of {raw['calls']} timed calls after 3 warm-up "
        f"calls per thread setting; medians over all calls with the (min – max) spread. Goal (issue #23): "
        f"≤ {GOAL}× the reference.",
    ]
    for threads in raw["threads"]:
        pick = {s: [r for r in runs if r["side"] == s and r["threads"] == threads]
                for s in ("llama-route", "llama-reference")}
        wall = {s: [t for r in rs for t in r["wall"]] for s, rs in pick.items()}
        cpu = {s: [t for r in rs for t in r["cpu"]] for s, rs in pick.items()}
        ref_wall, ref_cpu = statistics.median(wall["llama-reference"]), statistics.median(cpu["llama-reference"])
        ratio = statistics.median(wall["llama-route"]) / ref_wall
        lines += ["", f"**{threads} thread{'s' if threads > 1 else ''}** per side: route(text) = **{ratio:.2f}×** the "
                      f"reference (goal ≤ {GOAL}: {'met' if ratio <= GOAL else '**not met**'})", "",
                  "| side | wall median (min – max), ms | × reference (wall) | CPU median (ms) | × reference (CPU) "
                  "| load before → after (1 min) |", "|---|---|---|---|---|---|"]
        for s, label in (("llama-route", ROUTE), ("llama-reference", REFERENCE)):
            c = statistics.median(cpu[s])
            loads = ", ".join(f"{r['load_before']:.1f}→{r['load_after']:.1f}" for r in pick[s])
            lines.append(f"| {label} | {_ms(wall[s])} | {statistics.median(wall[s]) / ref_wall:.2f} | {1e3 * c:.1f} "
                         f"| {c / ref_cpu:.2f} | {loads} |")
    prof = raw["profile"]
    lines += ["", f"Where route(text) spends its time, one thread (cProfile, own CPU time per call, "
                  f"{prof['calls']} calls, {1e3 * prof['total']:.1f} ms in all under the profiler), the top entries:",
              "", "| function | calls per route | own ms | cumulative ms |", "|---|---|---|---|"]
    for row in prof["rows"][:10]:
        lines.append(f"| `{row['function']}` | {row['ncalls']} | {1e3 * row['tottime']:.1f} | {1e3 * row['cumtime']:.1f} |")
    f32 = raw["built"]["float32_bytes"]
    bf, fl = raw["loads"]["bfloat16-sharded"], raw["loads"]["float32"]
    med = lambda rs, key: statistics.median(r[key] for r in rs) * 1024
    ratio = med(bf, "added_kib") / f32
    info = next(r for r in runs if r["side"] == "llama-reference")
    lines += [
        "",
        f"**Loading** the bfloat16 copy, sharded into {raw['files']['bfloat16-sharded']} files (`max_shard_size="
        f"\"{llama.SHARD}\"`), with `attnsym.models.load` (weights held in float32), in a fresh process each of "
        f"{len(bf)} times: peak RSS (`ru_maxrss`) minus the RSS after the imports = "
        f"**{med(bf, 'added_kib') / 2**20:.0f} MiB = {ratio:.2f}×** the float32 weights "
        f"({f32 / 2**20:.0f} MiB; goal ≤ {llama.GOAL_LOAD}×: {'met' if ratio <= llama.GOAL_LOAD else '**not met**'}); "
        f"resident after the load {med(bf, 'rss_after_kib') / 2**20 - med(bf, 'baseline_kib') / 2**20:.0f} MiB above "
        f"the baseline, load time {statistics.median(r['seconds'] for r in bf):.2f} s (VmHWM agrees: "
        f"{med(bf, 'added_hwm_kib') / 2**20:.0f} MiB; the ru_maxrss a child inherits from its parent, "
        f"{med(bf, 'inherited_maxrss_kib') / 2**20:.0f} MiB, is below the peak, so the peak is the load's own). "
        f"For comparison, the one-file float32 folder: peak added {med(fl, 'added_kib') / 2**20:.0f} MiB = "
        f"{med(fl, 'added_kib') / f32:.2f}×.",
        *([f"- of that peak, Python/NumPy allocations (tracemalloc peak, a separate load): bfloat16 sharded "
           f"{tr['bfloat16-sharded']['traced_peak_bytes'] / 2**20:.0f} MiB, float32 "
           f"{tr['float32']['traced_peak_bytes'] / 2**20:.0f} MiB (the weights kept: "
           f"{tr['float32']['held_bytes'] / 2**20:.0f} MiB); the rest of the resident peak is the "
           "interpreter's and the allocator's own (the reader maps no file: each tensor is read into its "
           "array)"] if (tr := raw.get("traced")) else []),
        f"- agreement on the text: attention max |Δ| = {agree['attention']:.1e}, last hidden state max |Δ| = "
        f"{agree['hidden']:.1e}; torch {info['torch']}, transformers {info['transformers']}",
        f"- BLAS in the attnsym workers (at {raw['threads'][-1]} threads): "
        + "; ".join(next(r for r in runs if r["side"] == "llama-route" and r["threads"] == raw["threads"][-1])["blas"]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds; print only, write nothing")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="rounds of workers per thread setting")
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="timed calls per worker")
    parser.add_argument("--part", choices=("all", "minilm", "llama"), default="all",
                        help="measure only one model (prints only; the section is written when both run)")
    parser.add_argument("--save", metavar="FILE", help="also write the raw measurements as JSON")
    parser.add_argument("--render", metavar="FILE", help="rewrite the section from measurements saved with --save")
    parser.add_argument("--worker", choices=[*SIDES, "same-process", "profile", "agreement", "llama-build", "llama-route",
                                             "llama-reference", "llama-profile", "llama-agreement"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        if args.worker == "same-process":
            out = same_process(args.calls)
        elif args.worker == "profile":
            out = profile(args.calls)
        elif args.worker == "agreement":
            out = agreement()
        elif args.worker == "llama-build":
            out = llama.build(Path(args.folder))
        elif args.worker == "llama-profile":
            out = llama_profile(args.folder, args.calls)
        elif args.worker == "llama-agreement":
            out = llama.agreement(args.folder)
        elif args.worker.startswith("llama-"):
            out = llama_worker(args.worker, args.folder, args.threads, args.calls)
        else:
            out = worker(args.worker, args.threads, args.calls)
        print(json.dumps(out))
        return 0
    if args.render:
        text = render_all(json.loads(Path(args.render).read_text()))
        print(text)
        write_section("models", text)
        return 0
    rounds, calls = (1, 3) if args.quick else (args.rounds, args.calls)
    threads = sorted({1, CORES})
    raw: dict = {"load_before": load_average(), "environment": environment_report(), "numba": _numba_version()}
    if args.part in ("all", "minilm"):
        raw.update(run_minilm(rounds, calls, threads))
    if args.part in ("all", "llama"):
        raw["llama"] = run_llama(rounds, calls, threads)
    raw["load_after"] = load_average()
    if args.save:
        Path(args.save).write_text(json.dumps(raw, indent=1))
    text = render_all(raw)
    print(text)
    if not args.quick and args.part == "all":
        write_section("models", text)
    return 0


def run_minilm(rounds: int, calls: int, threads: list[int]) -> dict:
    """MiniLM: every side per thread setting (a worker each), the one-process layout, the profile, memory, agreement."""
    runs = []
    for t in threads:
        for k in range(rounds):
            for side in SIDES if k % 2 == 0 else list(SIDES)[::-1]:
                runs.append(_child("--worker", side, "--threads", str(t), "--calls", str(calls)))
                print(f"{t} thread(s), round {k + 1}/{rounds}: {side} median "
                      f"{1e3 * statistics.median(runs[-1]['wall']):.1f} ms (load {runs[-1]['load_after']:.1f})",
                      file=sys.stderr)
    same = _child("--worker", "same-process", "--calls", str(2 * calls))
    prof = _child("--worker", "profile", "--calls", str(calls))
    agree = _child("--worker", "agreement")
    return {"runs": runs, "threads": threads, "rounds": rounds, "calls": calls, "same_process": same, "profile": prof,
            "agree": agree, "memory": {"numpy": memory("numpy", agree["ids"]), "torch": memory("torch", agree["ids"])}}


def render_all(raw: dict) -> str:
    """The models section: MiniLM (when measured) then the LLaMA-shaped model (when measured)."""
    parts = [render(raw)] if "runs" in raw else []
    if "llama" in raw:
        parts.append(render_llama(raw["llama"]))
    runs = raw.get("runs", []) + raw.get("llama", {}).get("runs", [])
    warning = load_warning([*raw.get("load_before", [])[:1], *raw.get("load_after", [])[:1],
                            *(r[k] for r in runs for k in ("load_before", "load_after"))], CORES)
    text = "\n\n".join(parts)
    if warning:  # below the section's heading
        head, _, rest = text.partition("\n")
        text = f"{head}\n\n{warning}\n{rest}"
    return text


if __name__ == "__main__":
    raise SystemExit(main())
