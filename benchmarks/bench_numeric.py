"""Numeric backend vs PyTorch's flash attention kernel on the CPU, each side in its own process.

Run (BLAS overrides of these machines removed, in this command only)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_numeric.py

Measures, float32, d = 64, one head, no mask, 2 threads on each side:

* both attnsym paths, each in its own worker processes: the block's element-wise passes as
  the compiled Numba loops (the default with the ``fast`` extra) and as NumPy operations
  (``ATTNSYM_NUMBA=0``); each worker checks which one ran;
* forward: ``attnsym.numeric.attention(X, W_Q, W_K, W_V, return_weights=False)`` against
  ``F.scaled_dot_product_attention`` on 4-D ``(batch=1, heads=1, n, 64)`` projections (the
  layout for which PyTorch picks its FLASH_ATTENTION kernel; the kernel is asserted with
  ``torch._fused_sdp_choice`` and recorded), X·W projections included on both sides. Each side
  is timed as a user calls it: attnsym's call also checks its inputs (finite, float, shapes),
  its projections (finite, scores that cannot overflow) and its result, which torch's does not;
  the arithmetic — three projections, ``Q Kᵀ``, ``exp``, ``P V`` — is the same on both sides;
* forward + backward: ``attention_vjp`` (recomputes the forward) against autograd forward
  + ``backward()``, gradients for X and the three weights. torch's flash backward recomputes
  the scores (7 products of ``2·n²·d``); ``attention_vjp`` keeps the forward's exponentials for
  its backward where they fit ``attnsym.numeric._fast.KEEP_MAX_BYTES`` (64 MiB: n ≤ 4096 here,
  6 products, ``n²`` float32 numbers held during the call) and recomputes beyond (n = 8192);
* each side runs in a separate worker process (so neither library's spinning threads slow
  the other), the workers rotate (each side first in one of three rounds) over several rounds,
  and the tables show medians with the min–max spread over all rounds and the load average
  before and after each worker;
* the thin-matmul rate, (2048 × 64)·(64 × 2048) in NumPy with 2 BLAS threads, and the
  achieved GFLOP/s of both sides (4·n²·d forward, 12·n²·d forward + backward — the products
  of the algorithm without recomputation);
* two threads, one call each: wall-clock time, CPU time of every thread of the process, and
  attnsym's critical path (serial part + busiest worker of each parallel phase), so scaling can
  be judged on a loaded machine (``_numeric_profile.py``);
* a profile, one thread each and CPU time (robust to the load of other processes): attnsym's
  forward and forward + backward against torch's, and the floor of a NumPy implementation on
  the fast path's block shapes — the block products alone and the element-wise passes alone;
* the block-shape rule measured: the Numba path with other caps on the block shapes
  (``_fast.FAST_BLOCK``, ``BACKWARD_BLOCK``) at each n, relative to the default (``--no-blocks``
  skips it);
* memory of the lean path at n = 32768 (goal: adds < 64 MiB) and causal 65536, each in a fresh process.

The first lean call of each attnsym worker writes BLAS's packing buffers
(:func:`attnsym.numeric._pool.warm_blas`, inside the untimed warm-up call): before that, OpenBLAS's
Haswell kernel ran the block products at 12 GFLOP/s instead of 43 on these virtual machines.

Goals (issue #34): forward ≤ 1.0× and forward + backward ≤ 0.9× torch flash at every n (issue #27's
were 1.1× and 1.0×).

Writes the ``numeric`` section of docs/benchmarks.md. ``--quick`` runs small sizes and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import blas_kernels, environment_report, load_average, load_warning, write_section
from _numeric_profile import (
    GOAL_FB,
    GOAL_FWD,
    one_thread_profile,
    render_one_thread,
    render_two_threads,
    sdpa_kernels,
    two_thread_floor,
    two_thread_profile,
)

D = 64
THREADS = 2
#: the attnsym workers and the element passes each must run: the default (Numba kernels) and ATTNSYM_NUMBA=0
ATTNSYM_SIDES = {"attnsym": "numba", "attnsym-numpy": "numpy"}
GOAL_MEMORY_MIB = 64  # issue #27: memory added by one lean call at n = 32768


def _inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D), dtype=np.float32)
    Ws = [(rng.standard_normal((D, D), dtype=np.float32) / np.sqrt(D)).astype(np.float32) for _ in range(3)]
    G = rng.standard_normal((n, D), dtype=np.float32)
    return X, Ws, G


def _times(fn, repeat: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _attnsym_side(n: int):
    from attnsym import numeric as nm

    X, Ws, G = _inputs(n)
    return (lambda: nm.attention(X, *Ws, return_weights=False)), (lambda: nm.attention_vjp(X, *Ws, G)), {}


def _torch_side(n: int):
    import torch

    F = torch.nn.functional
    X, Ws, G = _inputs(n)
    Xt, Gt = torch.from_numpy(X), torch.from_numpy(G)
    Wt = [torch.from_numpy(W) for W in Ws]
    four_d = lambda M: M.view(1, 1, n, D)  # (batch, heads, n, d): the layout the flash kernel takes
    kernel, grad_kernel = sdpa_kernels(four_d(Xt @ Wt[0]))

    def forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(four_d(Xt @ Wt[0]), four_d(Xt @ Wt[1]), four_d(Xt @ Wt[2]))

    def forward_backward():
        x = Xt.clone().requires_grad_(True)
        w = [W.clone().requires_grad_(True) for W in Wt]
        y = F.scaled_dot_product_attention(four_d(x @ w[0]), four_d(x @ w[1]), four_d(x @ w[2]))
        (y.view(n, D) * Gt).sum().backward()
        return x.grad

    return forward, forward_backward, {"kernel": kernel, "kernel_with_grad": grad_kernel,
                                       "torch": torch.__version__, "threads": torch.get_num_threads()}


def worker(side: str, sizes: list[int], repeat: int) -> dict:
    """One side, all sizes, in this process: times, kernel and load average before and after."""
    out = {"side": side, "load_before": load_average()[0], "rows": []}
    ours = side in ATTNSYM_SIDES
    if ours:
        from attnsym.numeric import _fast, _pool

        out["threads"] = _pool.THREADS
        out["element_passes"] = _fast.element_passes(np.float32)[2]  # "numba" or "numpy": what the blocks ran
        if out["element_passes"] != ATTNSYM_SIDES[side]:
            raise RuntimeError(f"{side} worker runs the {out['element_passes']} element passes")
        with _pool.one_blas_thread():  # what BLAS runs with during a lean call
            out["blas"] = blas_kernels()
    for n in sizes:
        fwd, fb, info = (_attnsym_side if ours else _torch_side)(n)
        row = {"n": n, "fwd": _times(fwd, repeat), "fb": _times(fb, max(2, repeat - 1)), **info}
        if side != "attnsym-numpy":  # the profiles and the floor: the default (Numba) path and torch
            row["threads_fwd"] = two_thread_profile(fwd, attnsym=ours)
            row["threads_fb"] = two_thread_profile(fb, attnsym=ours)
        if side == "attnsym":
            row["floor"] = two_thread_floor(n)
        out["rows"].append(row)
    out["load_after"] = load_average()[0]
    return out


def run_worker(side: str, sizes: list[int], repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", side, "--sizes", ",".join(map(str, sizes)), "--repeat", str(repeat)]
    env = {**os.environ, "ATTNSYM_NUMBA": "0"} if side == "attnsym-numpy" else os.environ.copy()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"worker {side} failed:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


#: forward (query rows per task, key columns) and backward (key rows per task, query rows) block shapes tried
BLOCK_CANDIDATES = (((2048, 256), (256, 512)), ((512, 256), (256, 512)), ((1024, 256), (256, 512)),
                    ((2048, 512), (256, 512)), ((2048, 256), (256, 256)), ((256, 128), (128, 256)))


def block_worker(sizes: list[int], repeat: int) -> dict:
    """The block-shape rule, measured: the default path timed with each candidate of :data:`BLOCK_CANDIDATES`.

    Sets ``_fast.FAST_BLOCK`` / ``BACKWARD_BLOCK`` (the caps the blockwise core reads at each
    call); the rows per task are still cut (``_fast.forward_rows``, ``_fast._rows_per_task``) so each worker has tasks.
    """
    from attnsym.numeric import _fast

    default = (_fast.FAST_BLOCK, _fast.BACKWARD_BLOCK)
    rows = []
    for n in sizes:
        fwd, fb, _ = _attnsym_side(n)
        for forward_block, backward_block in BLOCK_CANDIDATES:
            _fast.FAST_BLOCK, _fast.BACKWARD_BLOCK = forward_block, backward_block
            rows.append({"n": n, "forward_block": forward_block, "backward_block": backward_block,
                         "rows_per_task_fwd": _fast.forward_rows(n, 1, forward_block),
                         "rows_per_task_bwd": _fast._rows_per_task(backward_block[0], n, 1),
                         "fwd": _times(fwd, repeat), "fb": _times(fb, max(2, repeat - 1))})
        _fast.FAST_BLOCK, _fast.BACKWARD_BLOCK = default
    return {"rows": rows, "default": default, "load": load_average()[0]}


def render_blocks(raw: dict) -> list[str]:
    """Median times per candidate block shape, relative to the default shape at each n."""
    default = [tuple(b) for b in raw["default"]]
    lines = [
        "",
        f"The block-shape rule, measured (Numba path, one worker process, load {raw['load']:.1f}): forward blocks "
        f"are at most {default[0][0]} query rows per task × {default[0][1]} key columns "
        f"(`_fast.FAST_BLOCK`), backward blocks at most {default[1][0]} key rows per task × {default[1][1]} query "
        "rows (`BACKWARD_BLOCK`), the rows per task cut further so that each thread has a task of the unmasked "
        "forward (`_fast.forward_rows`) and 4 of the backward (`_fast._rows_per_task`: ⌈n / (tasks per worker · "
        "threads)⌉); a forward that keeps its exponentials for the backward takes at most `_fast.TASK_ROWS` "
        "rows per task. Other caps tried, "
        "median time relative to the default at each n (< 1: faster than the rule). A candidate with the "
        "default's forward block measures the noise of the forward column: on a quiet, steady machine it "
        f"would read 1.00. Up to n = {keep_max_n()[1]} `attention_vjp` keeps the forward's exponentials and its "
        "backward takes the forward's blocks: there the backward cap changes nothing.",
        "",
        "| n | forward cap (rows per task) | backward cap (rows per task) | forward | × default | forward + backward "
        "| × default |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in sorted({r["n"] for r in raw["rows"]}):
        rows = [r for r in raw["rows"] if r["n"] == n]
        base = next(r for r in rows if [tuple(r["forward_block"]), tuple(r["backward_block"])] == default)
        for r in rows:
            mark = " (default)" if r is base else ""
            fr, br = np.median(r["fwd"]) / np.median(base["fwd"]), np.median(r["fb"]) / np.median(base["fb"])
            lines.append(f"| {n} | {tuple(r['forward_block'])} ({r['rows_per_task_fwd']}){mark} "
                         f"| {tuple(r['backward_block'])} ({r['rows_per_task_bwd']}) | {_ms(r['fwd'])} | {fr:.2f} "
                         f"| {_ms(r['fb'])} | {br:.2f} |")
    return lines


def thin_matmul_rate(n: int = 2048, repeat: int = 31) -> float:
    """Float32 rate of (n × 64)·(64 × n) in NumPy (2 BLAS threads), in GFLOP/s: the product attention is made of.

    From the fastest of ``repeat`` runs: one product takes a few milliseconds, and its median
    swung from 34 to 106 GFLOP/s between quiet runs, which made shares of it meaningless.
    """
    rng = np.random.default_rng(1)
    q = rng.standard_normal((n, D), dtype=np.float32)
    k = rng.standard_normal((D, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    return 2 * n * n * D / min(_times(lambda: np.matmul(q, k, out=out), repeat)) / 1e9


def agreement(n: int) -> tuple[float, float]:
    """Max |Y_attnsym − Y_torch| and max relative gradient difference (dX), float32, computed once."""
    import torch

    from attnsym import numeric as nm

    X, Ws, G = _inputs(n)
    Y = nm.attention(X, *Ws, return_weights=False)
    grads = nm.attention_vjp(X, *Ws, G)
    x = torch.from_numpy(X).requires_grad_(True)
    w = [torch.from_numpy(W) for W in Ws]
    y = torch.nn.functional.scaled_dot_product_attention(*((x @ W).view(1, 1, n, D) for W in w)).view(n, D)
    (y * torch.from_numpy(G)).sum().backward()
    dX = x.grad.numpy()
    return float(np.abs(Y - y.detach().numpy()).max()), float(np.abs(grads["X"] - dX).max() / np.abs(dX).max())


_MEMORY_PROBE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from attnsym import numeric as nm

    def status_kib(field):  # VmRSS (now) or VmHWM (peak); per address space, so it starts afresh at exec
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    n = int(sys.argv[1])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 64), dtype=np.float32)
    W = [(rng.standard_normal((64, 64), dtype=np.float32) / 8).astype(np.float32) for _ in range(3)]
    nm.attention(X[:2048], *W, return_weights=False)  # warm up imports, the thread pool and BLAS buffers
    before = status_kib("VmRSS") * 1024
    start = time.perf_counter()
    Y = nm.attention(X, *W, return_weights=False, causal=sys.argv[2] == "causal")
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM") * 1024  # not ru_maxrss, which a child inherits from its parent at fork
    print(json.dumps({"n": n, "seconds": seconds, "rss_before": before, "peak_rss": peak,
                      "added": peak - before, "finite": bool(np.isfinite(Y).all())}))
""")


def memory_probe(n: int, causal: bool) -> dict:
    """Run the lean path once in a fresh interpreter (so peak RSS belongs to this call alone)."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(n), "causal" if causal else "full"],
                         capture_output=True, text=True, check=True, env=os.environ.copy())
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ms(values: list[float]) -> str:
    return f"{np.median(values) * 1e3:.1f} ms ({min(values) * 1e3:.0f}–{max(values) * 1e3:.0f})"


def two_thread_rows(ours: list[dict], torch_runs: list[dict], sizes: list[int]) -> list[dict]:
    """Per n and pass, the medians over all rounds of each side's two-thread profile."""
    rows = []
    for n in sizes:
        for what in ("fwd", "fb"):
            row = {"n": n, "what": "forward" if what == "fwd" else "forward + backward"}
            for name, side_runs in (("attnsym", ours), ("torch", torch_runs)):
                profiles = [r[f"threads_{what}"] for run in side_runs for r in run["rows"] if r["n"] == n]
                row[name] = {k: float(np.median([p[k] for p in profiles])) for k in profiles[0]}
            rows.append(row)
    return rows


def floor_table(ours: list[dict], torch_runs: list[dict], sizes: list[int], pick) -> list[str]:
    """The design's floor at this run's threads (:func:`two_thread_floor`) beside the whole calls and torch's."""
    if not all("floor" in row for run in ours for row in run["rows"]):  # measurements saved before the floor existed
        return []
    threads = ours[0]["rows"][0]["floor"]["threads"]
    lines = [
        "",
        f"The floor of this design at {threads} threads: the fast path's block kernels alone (its tasks' products "
        "and the element-wise passes of the Numba path — the forward's `exp` with its row sums, the backward's `exp` "
        "and `dS *= A` in one loop, or where `attention_vjp` keeps the forward's exponentials (n ≤ "
        f"{keep_max_n()[1]}) `dS *= P` with no product for the scores — on the same block shapes, "
        "on the same worker pool, none of the bookkeeping), "
        "wall-clock medians over the rounds. The goal cannot be met by bookkeeping alone where the floor itself is "
        "above it.",
        "",
        "| n | pass | floor | whole call | torch flash | floor / torch | whole call / torch | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        for what, label, goal in (("fwd", "forward", GOAL_FWD), ("fb", "forward + backward", GOAL_FB)):
            floor = float(np.median([row["floor"][what] for run in ours for row in run["rows"] if row["n"] == n]))
            whole, ref = float(np.median(pick(ours, n, what))), float(np.median(pick(torch_runs, n, what)))
            lines.append(f"| {n} | {label} | {floor * 1e3:.1f} ms | {whole * 1e3:.1f} ms | {ref * 1e3:.1f} ms "
                         f"| {floor / ref:.2f}× | {ratio_text(whole / ref, goal)} | ≤ {goal} |")
    return lines


def ratio_text(ratio: float, goal: float) -> str:
    """``ratio`` to two decimals, or three where two would print the goal for a ratio on the other side of it.

    >>> ratio_text(1.0023, 1.0), ratio_text(0.8812, 0.9), ratio_text(0.9, 0.9)
    ('1.002×', '0.88×', '0.90×')
    """
    digits = 3 if round(ratio, 2) == goal and ratio != goal else 2
    return f"{ratio:.{digits}f}×"


def keep_max_n() -> tuple[int, int]:
    """attention_vjp's budget for kept exponentials (MiB) and the longest sequence of one float32 head within it."""
    from attnsym.numeric import _fast

    return _fast.KEEP_MAX_BYTES // 2**20, math.isqrt(_fast.KEEP_MAX_BYTES // 4)


def render(rate: float, runs: list[dict], memory: list[dict], agree: dict, sizes: list[int], prof: dict,
           blocks: dict | None = None) -> str:
    ours = [r for r in runs if r["side"] == "attnsym"]
    plain = [r for r in runs if r["side"] == "attnsym-numpy"]
    torch_runs = [r for r in runs if r["side"] == "torch"]
    pick = lambda side_runs, n, what: [t for r in side_runs for row in r["rows"] if row["n"] == n for t in row[what]]
    info = next(row for row in torch_runs[0]["rows"])
    loads = ", ".join(f"{r['side']} {r['load_before']:.1f}→{r['load_after']:.1f}" for r in runs)
    kernels = sorted({row["kernel"] for r in torch_runs for row in r["rows"]})
    grad_kernels = sorted({row["kernel_with_grad"] for r in torch_runs for row in r["rows"]})
    budget, longest = keep_max_n()
    lines = [
        "## Numeric backend vs PyTorch flash attention (`benchmarks/bench_numeric.py`)",
        "",
        environment_report(),
        *filter(None, [load_warning([r[k] for r in runs for k in ("load_before", "load_after")])]),
        f"- attnsym: {ours[0]['threads']} worker threads; BLAS during a lean call (every product of it, the pool "
        f"supplying the parallelism): {'; '.join(ours[0]['blas'])}",
        "- attnsym's two paths, each in its own worker processes: the block's element-wise passes as the compiled "
        "Numba loops (the default with the `fast` extra; the worker checks it ran "
        f"`{ours[0].get('element_passes', 'numba')}`) and as NumPy operations (`ATTNSYM_NUMBA=0`"
        + (f"; checked: `{plain[0]['element_passes']}`" if plain else "") + ")",
        f"- PyTorch {info['torch']}, {info['threads']} intra-op threads; kernel chosen by `torch._fused_sdp_choice` "
        f"for the (1, 1, n, 64) inputs: **{', '.join(kernels)}** (with `requires_grad`: {', '.join(grad_kernels)}) "
        "at every n (asserted)",
        f"- each side in its own process, {len(ours)} rounds rotating the order; load average (1 min) before→after "
        f"each worker: {loads}",
        f"- thin-matmul rate (fastest of 31 runs), NumPy float32 (2048 × 64)·(64 × 2048), 2 BLAS threads: **{rate:.0f} GFLOP/s**",
        "",
        "Times are medians over all rounds with (min–max); float32, d = 64, one head, no mask, projections included "
        f"on both sides; the ratio is attnsym / torch flash. Goals (issue #34): forward ≤ {GOAL_FWD}×, forward + "
        f"backward ≤ {GOAL_FB}× (Numba path); the NumPy path no slower than before. The forward + backward is "
        "`attention_vjp` as a user calls it: without `block_size` it keeps the forward's exponentials for its backward "
        f"where they fit {budget} MiB (here n ≤ {longest}: n² float32 numbers held during the "
        "call, 6 products of 2·n²·d where torch's flash backward, which keeps nothing n × n, recomputes the scores: 7) "
        "and recomputes them beyond.",
        "",
        "| n | pass | attnsym, Numba kernels | attnsym, NumPy (ATTNSYM_NUMBA=0) | torch flash | Numba / torch "
        "| NumPy / torch | GFLOP/s Numba / NumPy / torch (% of the thin-matmul rate) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        for what, label, flops, goal in (("fwd", "forward", 4, GOAL_FWD), ("fb", "forward + backward", 12, GOAL_FB)):
            fo, ft = pick(ours, n, what), pick(torch_runs, n, what)
            fp = pick(plain, n, what)
            ratio = np.median(fo) / np.median(ft)
            gf = lambda ts, flops=flops, n=n: flops * n * n * D / np.median(ts) / 1e9
            rates = " / ".join(f"{gf(ts):.0f}" if ts else "–" for ts in (fo, fp, ft))
            shares = " / ".join(f"{100 * gf(ts) / rate:.0f}%" if ts else "–" for ts in (fo, fp, ft))
            lines.append(
                f"| {n} | {label} | {_ms(fo)} | {_ms(fp) if fp else '–'} | {_ms(ft)} "
                f"| {ratio_text(ratio, goal)} {'met' if ratio <= goal else '**not met**'} (≤ {goal}) "
                f"| {f'{np.median(fp) / np.median(ft):.2f}×' if fp else '–'} | {rates} ({shares}) |")
    lines += render_two_threads(two_thread_rows(ours, torch_runs, sizes))
    lines += floor_table(ours, torch_runs, sizes, pick)
    lines += render_blocks(blocks) if blocks else []
    lines += render_one_thread(prof)
    lines += [
        "",
        f"Agreement at n = {agree['n']} (float32): max |Y_attnsym − Y_torch| = {agree['forward']:.1e}; "
        f"max |dX_attnsym − dX_torch| / max |dX_torch| = {agree['backward']:.1e}.",
        "",
        "Memory of the lean path (float32, d = 64), each in a fresh process; *added* = peak RSS − RSS just before "
        f"the call (goal at n = 32768: added < {GOAL_MEMORY_MIB} MiB).",
        "",
        "| n | mask | time | peak RSS | added by the call | finite output |",
        "|---|---|---|---|---|---|",
    ]
    mib = lambda b: f"{b / 2**20:,.0f} MiB"
    for m in memory:
        if "error" in m:
            lines.append(f"| {m['n']} | {m['mask']} | failed: {m['error']} | | | |")
            continue
        goal = ""
        if m["n"] == 32768 and m["mask"] == "none":
            goal = " (goal met)" if m["added"] < GOAL_MEMORY_MIB * 2**20 else " (**goal not met**)"
        lines.append(f"| {m['n']} | {m['mask']} | {m['seconds']:.1f} s | {mib(m['peak_rss'])} | {mib(m['added'])}{goal} "
                     f"| {m['finite']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, print only, write nothing")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per worker and size")
    parser.add_argument("--rounds", type=int, default=3, help="worker pairs, alternating the order")
    parser.add_argument("--no-blocks", action="store_true", help="skip the measured block-shape table")
    parser.add_argument("--save", metavar="FILE", help="also write the raw measurements as JSON")
    parser.add_argument("--render", metavar="FILE", help="rewrite the section from measurements saved with --save")
    parser.add_argument("--sizes", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=(*ATTNSYM_SIDES, "torch", "blocks"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sizes = [int(s) for s in args.sizes.split(",")]
        out = block_worker(sizes, args.repeat) if args.worker == "blocks" else worker(args.worker, sizes, args.repeat)
        print(json.dumps(out))
        return 0
    if args.render:
        raw = json.loads(Path(args.render).read_text())
        text = render(raw["rate"], raw["runs"], raw["memory"], raw["agree"], raw["sizes"], raw["profile"], raw.get("blocks"))
        print(text)
        write_section("numeric", text)
        return 0
    sizes = [1024, 2048] if args.quick else [2048, 4096, 8192]
    runs = []
    sides = [*ATTNSYM_SIDES, "torch"]
    for r in range(1 if args.quick else args.rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:  # each side first in one round of three
            runs.append(run_worker(side, sizes, args.repeat))
            print(f"round {r + 1}: {side} done (load {runs[-1]['load_after']:.1f})", file=sys.stderr)
    blocks = None if args.no_blocks else run_worker("blocks", sizes, args.repeat)
    rate = thin_matmul_rate()
    forward_err, backward_err = agreement(sizes[0])
    memory = []
    for n, causal in ((4096, False),) if args.quick else ((32768, False), (65536, True)):
        try:
            memory.append({**memory_probe(n, causal), "mask": "causal" if causal else "none"})
        except subprocess.CalledProcessError as exc:
            memory.append({"n": n, "mask": "causal" if causal else "none", "error": exc.stderr.strip().splitlines()[-1]})
    prof = one_thread_profile(2048 if args.quick else 4096, _inputs)
    agree = {"n": sizes[0], "forward": forward_err, "backward": backward_err}
    raw = {"rate": rate, "runs": runs, "memory": memory, "agree": agree, "sizes": sizes, "profile": prof,
           "blocks": blocks}
    if args.save:
        Path(args.save).write_text(json.dumps(raw, indent=1))
    text = render(rate, runs, memory, agree, sizes, prof, blocks)
    print(text)
    if not args.quick:
        write_section("numeric", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
