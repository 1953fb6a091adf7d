"""Numeric backend vs PyTorch's scaled_dot_product_attention on the CPU, side by side.

Run (BLAS overrides of these machines removed, in this command only)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_numeric.py

Measures, float32, d = 64:

* forward time of ``attnsym.numeric.attention(..., return_weights=False)`` (the automatic
  blockwise path) against projections + ``F.scaled_dot_product_attention`` doing the same
  work, for n = 2048, 4096, 8192 — medians of repeated runs, interleaved in one process;
* forward + backward: ``attention_vjp`` (recomputes the forward) against SDPA autograd
  (forward with ``requires_grad`` and ``backward``), gradients for X and the three weights;
* achieved GFLOP/s of the forward (counted as 4·n²·d) against the measured float32 matmul rate;
* memory of the lean path at n = 32768 (peak RSS and the call's added RSS, in a fresh
  subprocess, plus tracemalloc's peak of NumPy allocations) and whether n = 65536 runs.

Writes the ``numeric`` section of docs/benchmarks.md. ``--quick`` runs smaller sizes and writes
nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import environment_report, median_time, write_section

from attnsym import numeric as nm

D = 64


def matmul_rate(n: int = 2048, repeat: int = 5) -> float:
    """Measured float32 GEMM rate of NumPy's BLAS in GFLOP/s (2·n³ per n×n product)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    t, _ = median_time(lambda: a @ b, repeat=repeat)
    return 2 * n**3 / t / 1e9


def score_matmul_rate(n: int = 2048, repeat: int = 5) -> float:
    """Measured float32 rate of the product attention is made of, (n × 64)·(64 × n), in GFLOP/s."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((n, D), dtype=np.float32)
    k = rng.standard_normal((D, n), dtype=np.float32)
    t, _ = median_time(lambda: q @ k, repeat=repeat)
    return 2 * n * n * D / t / 1e9


def _inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D), dtype=np.float32)
    Ws = [(rng.standard_normal((D, D), dtype=np.float32) / np.sqrt(D)).astype(np.float32) for _ in range(3)]
    G = rng.standard_normal((n, D), dtype=np.float32)
    return X, Ws, G


def _interleaved(fns: dict, repeat: int) -> dict:
    """Median (and all) times of several functions, run alternately so load changes hit all alike."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: (float(np.median(v)), v) for k, v in times.items()}


def time_forward_and_backward(n: int, repeat: int) -> dict:
    import torch

    F = torch.nn.functional
    X, Ws, G = _inputs(n)
    Xt, Gt = torch.from_numpy(X), torch.from_numpy(G)
    Wt = [torch.from_numpy(W) for W in Ws]

    def torch_forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(Xt @ Wt[0], Xt @ Wt[1], Xt @ Wt[2])

    def torch_fwd_bwd():
        x = Xt.clone().requires_grad_(True)
        w = [W.clone().requires_grad_(True) for W in Wt]
        y = F.scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2])
        (y * Gt).sum().backward()
        return x.grad

    ours_forward = lambda: nm.attention(X, *Ws, return_weights=False)
    ours_fwd_bwd = lambda: nm.attention_vjp(X, *Ws, G)
    # agreement first: a benchmark of a wrong result measures nothing
    Y, Yt = ours_forward(), torch_forward().numpy()
    fwd_err = float(np.abs(Y - Yt).max())
    forward = _interleaved({"ours": ours_forward, "sdpa": torch_forward}, repeat)
    both = _interleaved({"ours": ours_fwd_bwd, "sdpa": torch_fwd_bwd}, max(3, repeat - 2))
    flop = 4 * n * n * D
    return {
        "n": n,
        "forward_max_abs_diff": fwd_err,
        "fwd_ours": forward["ours"][0], "fwd_sdpa": forward["sdpa"][0],
        "fwd_ours_all": forward["ours"][1],
        "fb_ours": both["ours"][0], "fb_sdpa": both["sdpa"][0],
        "gflops_ours": flop / forward["ours"][0] / 1e9, "gflops_sdpa": flop / forward["sdpa"][0] / 1e9,
    }


_MEMORY_PROBE = textwrap.dedent("""
    import json, sys, time, tracemalloc
    import numpy as np
    from attnsym import numeric as nm

    def status_kib(field):  # VmRSS (now) or VmHWM (peak); per address space, so it starts afresh at exec
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    def rss_now():
        return status_kib("VmRSS") * 1024

    n = int(sys.argv[1])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 64), dtype=np.float32)
    W = [(rng.standard_normal((64, 64), dtype=np.float32) / 8).astype(np.float32) for _ in range(3)]
    nm.attention(X[:2048], *W, return_weights=False)  # warm up imports and BLAS buffers
    before = rss_now()
    tracemalloc.start()
    start = time.perf_counter()
    Y = nm.attention(X, *W, return_weights=False, causal=sys.argv[2] == "causal")
    seconds = time.perf_counter() - start
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = status_kib("VmHWM") * 1024  # not ru_maxrss, which a child inherits from its parent at fork
    print(json.dumps({"n": n, "seconds": seconds, "rss_before": before, "peak_rss": peak,
                      "added": peak - before, "traced_peak": traced_peak, "finite": bool(np.isfinite(Y).all())}))
""")


def memory_probe(n: int, causal: bool) -> dict:
    """Run the lean path once in a fresh interpreter (so peak RSS belongs to this call alone)."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(n), "causal" if causal else "full"],
                         capture_output=True, text=True, check=True, env=os.environ.copy())
    return json.loads(out.stdout.strip().splitlines()[-1])


def _mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def render(rate: float, score_rate: float, rows: list[dict], memory: list[dict], threads: str) -> str:
    lines = [
        "## Numeric backend (`benchmarks/bench_numeric.py`)",
        "",
        environment_report(),
        f"- {threads}",
        "- **shared machine**: several engineers were running tests on these 2 cores during the run, so "
        "absolute times are noisy; the two sides of each ratio were run alternately in one process.",
        f"- measured float32 matmul rate (NumPy, 2048×2048 GEMM): **{rate:.0f} GFLOP/s**; for the thin product "
        f"attention is made of, (2048×64)·(64×2048): **{score_rate:.0f} GFLOP/s** — the physical limit of the "
        "computation below (the softmax adds elementwise passes on top).",
        "",
        "Forward (float32, d = 64, one head, X·W projections included on both sides; ours = "
        "`attention(..., return_weights=False)`, which takes the blockwise path; SDPA = projections + "
        "`F.scaled_dot_product_attention`). Forward+backward: ours = `attention_vjp` (forward recomputed "
        "inside), SDPA = autograd forward + `backward()` for X and the three weights. Medians.",
        "",
        "| n | fwd ours | fwd SDPA | ratio (goal ≤ 1.5) | fwd+bwd ours | fwd+bwd SDPA | ratio (goal ≤ 1.25) "
        "| GFLOP/s ours / SDPA | % of matmul rate | fwd min–max ours | max abs diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fr, br = r["fwd_ours"] / r["fwd_sdpa"], r["fb_ours"] / r["fb_sdpa"]
        lines.append(
            f"| {r['n']} | {r['fwd_ours'] * 1e3:.1f} ms | {r['fwd_sdpa'] * 1e3:.1f} ms | {fr:.2f}× "
            f"{'met' if fr <= 1.5 else '**not met**'} | {r['fb_ours'] * 1e3:.1f} ms | {r['fb_sdpa'] * 1e3:.1f} ms | "
            f"{br:.2f}× {'met' if br <= 1.25 else '**not met**'} | {r['gflops_ours']:.0f} / {r['gflops_sdpa']:.0f} | "
            f"{100 * r['gflops_ours'] / rate:.0f}% | {min(r['fwd_ours_all']) * 1e3:.0f}–{max(r['fwd_ours_all']) * 1e3:.0f} ms "
            f"| {r['forward_max_abs_diff']:.1e} |"
        )
    lines += [
        "",
        "Memory of the lean path (float32, d = 64, default block size "
        f"{nm.DEFAULT_BLOCK_SIZE}), each in a fresh process; *added* = peak RSS − RSS just before the call "
        "(goals at n = 32768: peak < 1 GiB, added < 256 MiB).",
        "",
        "| n | mask | time | peak RSS | added by the call | tracemalloc peak | finite output |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in memory:
        if "error" in m:
            lines.append(f"| {m['n']} | {m['mask']} | failed: {m['error']} | | | | |")
            continue
        lines.append(f"| {m['n']} | {m['mask']} | {m['seconds']:.1f} s | {_mib(m['peak_rss'])} | {_mib(m['added'])} | "
                     f"{_mib(m['traced_peak'])} | {m['finite']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, print only, write nothing")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    import torch

    sizes = (1024, 2048) if args.quick else (2048, 4096, 8192)
    threads = f"PyTorch {torch.__version__}, {torch.get_num_threads()} intra-op threads"
    rate = matmul_rate(1024 if args.quick else 2048)
    score_rate = score_matmul_rate()
    rows = [time_forward_and_backward(n, args.repeat if n < 8192 else max(3, args.repeat - 2)) for n in sizes]
    memory = []
    for n, causal in ((4096, False),) if args.quick else ((32768, False), (65536, True), (65536, False)):
        try:
            memory.append({**memory_probe(n, causal), "mask": "causal" if causal else "none"})
        except subprocess.CalledProcessError as exc:
            memory.append({"n": n, "mask": "causal" if causal else "none", "error": exc.stderr.strip().splitlines()[-1]})
    text = render(rate, score_rate, rows, memory, threads)
    print(text)
    if not args.quick:
        write_section("numeric", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
