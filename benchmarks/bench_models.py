"""attnsym.models vs the PyTorch reference: one 128-token sentence through all 6 layers of MiniLM, float32.

Run with the BLAS overrides of these machines removed, in this command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_models.py

Both sides are timed alternately in one process (round k runs attnsym then PyTorch, round k+1
PyTorch then attnsym), so load on a shared machine hits them alike; wall-time medians and
quartiles, CPU-time medians (all threads summed) and the load average are reported, once with
each library's default threads and once with one thread each (threadpoolctl for the BLAS,
``torch.set_num_threads(1)``), which is far less sensitive to a busy machine. Sides:

* attnsym ``Model.route(text)`` — tokenization, the NumPy forward pass (all attention
  probabilities, scaled scores and hidden states kept) and slicing into a Route;
* attnsym ``Model.forward(ids)`` — the forward pass alone, on NumPy and on torch tensors;
* PyTorch reference — ``transformers`` BertModel, ``attn_implementation="eager"`` (the only
  implementation that can return the weights), ``output_attentions=True``,
  ``output_hidden_states=True``, under ``torch.inference_mode()``, on pre-tokenized ids.

Peak memory of one forward pass (the first call; later calls reuse the allocator's freed
pages) is measured in a fresh subprocess per side as the peak resident set size during the call (``VmHWM``, reset through
``/proc/self/clear_refs``) minus the resident size before it — the outputs kept included —
and for NumPy also exactly with ``tracemalloc``. The result replaces the section between ``<!-- begin:models -->``
and ``<!-- end:models -->`` of docs/benchmarks.md.
"""

from __future__ import annotations

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

from _common import BENCHMARKS_MD, environment_report  # noqa: E402

N_TOKENS = 128
ROUNDS = 9
BEGIN, END = "<!-- begin:models -->", "<!-- end:models -->"


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


def _quartiles(times: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(times, n=4)
    return q[0], statistics.median(times), q[2]


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
    print(json.dumps({"rss_kib": peak - base}))
else:
    reset_peak(); base = status("VmRSS")
    tracemalloc.start()
    out = m.forward(ids)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = status("VmHWM")
    print(json.dumps({"rss_kib": peak - base, "traced_bytes": traced}))
"""


def memory(side: str, ids: list[int]) -> dict:
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, side, json.dumps(ids)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import numpy as np
    import torch
    import transformers
    from threadpoolctl import threadpool_limits

    from attnsym import models

    load_before = os.getloadavg()
    m = models.load()
    mt = models.load(backend="torch")
    hf = transformers.AutoModel.from_pretrained(str(m.folder), attn_implementation="eager").eval()
    text = sentence(m.tokenizer)
    r = m.route(text)
    ids = r.ids[None]
    tids = torch.as_tensor(ids)
    with torch.inference_mode():
        ref = hf(input_ids=tids, output_attentions=True, output_hidden_states=True)
    err_att = float(np.abs(torch.stack(ref.attentions)[:, 0].numpy() - r.attention).max())
    err_hidden = float(np.abs(ref.last_hidden_state[0].numpy() - r.hidden_states[-1]).max())

    def run_hf():
        with torch.inference_mode():
            hf(input_ids=tids, output_attentions=True, output_hidden_states=True)

    sides = {
        "attnsym route(text), NumPy": lambda: m.route(text),
        "attnsym forward(ids), NumPy": lambda: m.forward(ids),
        "attnsym forward(ids), torch tensors": lambda: mt.forward(ids),
        "PyTorch reference (transformers, eager)": run_hf,
    }
    threads_default = torch.get_num_threads()
    results: dict[str, dict[str, list[float]]] = {}
    for config, limit in (("library default threads", None), ("one thread each", 1)):
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        with threadpool_limits(limits=limit):
            torch.set_num_threads(limit or threads_default)
            for fn in sides.values():  # warm-up
                fn()
            order = list(sides)
            for k in range(ROUNDS):
                for name in order if k % 2 == 0 else order[::-1]:
                    start, start_cpu = time.perf_counter(), time.process_time()
                    sides[name]()
                    times[name].append(time.perf_counter() - start)
                    cpu[name].append(time.process_time() - start_cpu)
                print(f"{config}: round {k + 1}/{ROUNDS}", file=sys.stderr)
        torch.set_num_threads(threads_default)
        results[config] = {"wall": times, "cpu": cpu}
    load_after = os.getloadavg()
    mem_np = memory("numpy", r.ids.tolist())
    mem_torch = memory("torch", r.ids.tolist())

    lines = [
        "## Real model: all-MiniLM-L6-v2 forward, attnsym.models vs PyTorch",
        "",
        f"One {N_TOKENS}-token sentence (word pieces, [CLS] and [SEP] included) through all 6 layers, float32, batch 1, "
        f"{ROUNDS} rounds per thread setting timed alternately in one process (order reversed every other round); "
        "CPU time is the process's, all threads summed. Command: "
        "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_models.py`.",
        "",
    ]
    ref = "PyTorch reference (transformers, eager)"
    for config, result in results.items():
        wall, cpu = result["wall"], result["cpu"]
        ref_wall, ref_cpu = statistics.median(wall[ref]), statistics.median(cpu[ref])
        lines += ["", f"**{config}** ({threads_default if config.startswith('library') else 1} BLAS / torch threads):", "",
                  "| side | wall median (ms) | wall quartiles (ms) | × reference (wall) | CPU median (ms) | × reference (CPU) |",
                  "|---|---|---|---|---|---|"]
        for name in sides:
            q1, med, q3 = _quartiles(wall[name])
            c = statistics.median(cpu[name])
            lines.append(f"| {name} | {1e3 * med:.1f} | {1e3 * q1:.1f} – {1e3 * q3:.1f} | {med / ref_wall:.2f} | "
                         f"{1e3 * c:.1f} | {c / ref_cpu:.2f} |")
    lines += [
        "",
        f"- agreement on this sentence: attention probabilities max |Δ| = {err_att:.1e}, last hidden state "
        f"max |Δ| = {err_hidden:.1e}",
        f"- the reference runs `attn_implementation=\"eager\"` (matmul, softmax, matmul; SDPA cannot return the "
        f"weights) with `output_attentions=True`, `output_hidden_states=True`, `torch.inference_mode()`; "
        f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads; transformers {transformers.__version__}",
        f"- peak memory of one forward pass, outputs included (peak RSS during the first call minus RSS before it, "
        f"fresh process per side): "
        f"attnsym NumPy {mem_np['rss_kib'] / 1024:.1f} MiB (tracemalloc peak of NumPy allocations "
        f"{mem_np['traced_bytes'] / 2**20:.1f} MiB), PyTorch reference {mem_torch['rss_kib'] / 1024:.1f} MiB",
        f"- load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {', '.join(f'{v:.2f}' for v in load_after)}",
        environment_report(),
    ]
    block = "\n".join(lines)
    print(block)
    doc = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else "# Benchmarks\n"
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + BEGIN + "\n" + block + "\n" + END + rest.split(END, 1)[1]
    else:
        doc = doc.rstrip() + "\n\n" + BEGIN + "\n" + block + "\n" + END + "\n"
    tmp = BENCHMARKS_MD.with_suffix(".md.tmp")
    tmp.write_text(doc)
    tmp.replace(BENCHMARKS_MD)


if __name__ == "__main__":
    main()
