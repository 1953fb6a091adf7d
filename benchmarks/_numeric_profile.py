"""Where the numeric backend's time goes, for ``bench_numeric.py``: one thread, and two threads' critical path.

* :func:`one_thread_profile` — one thread each (BLAS, the worker pool and PyTorch at one thread),
  least CPU time of the measuring thread: attnsym's forward and forward + backward against
  torch's, and the floor of a NumPy implementation, measured on the fast path's own block
  shapes: the block products alone (BLAS) and the element-wise passes alone (``exp``, and in
  the backward ``dS *= A``).
* :func:`two_thread_profile` — one call at two threads: its wall-clock time, the CPU time of
  every thread of the process (``/proc/self/task/*/schedstat``: BLAS's or OpenMP's own
  threads included, spinning included) and, for attnsym, the critical path: the calling
  thread's own CPU time plus, for each parallel phase of the worker pool, the CPU time of its
  busiest worker. With two free cores the wall-clock time is close to the critical path; on
  a loaded machine the difference is time the threads waited for a core.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import time

import numpy as np
from _common import median_time

GOAL_FWD, GOAL_FB = 1.0, 0.9  # issue #34, forward and forward + backward against torch flash (bench_numeric.py reads these)

D = 64


def thread_cpu() -> dict[int, float]:
    """CPU seconds of every thread of this process so far, by thread id (Linux; ``{}`` elsewhere)."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError):
            continue
    return out


def _instrumented_pool():
    """Patch ``attnsym.numeric._pool.run`` to record each parallel phase's CPU time per worker thread."""
    from attnsym.numeric import _pool

    real, phases = _pool.run, []

    def run(tasks, scratch=None, private=None):
        spent: dict[int, float] = collections.defaultdict(float)

        def timed(task):
            def go(buffers):
                start = time.thread_time()
                task(buffers)
                spent[threading.get_ident()] += time.thread_time() - start
            return go

        real([timed(t) for t in tasks], scratch, private)
        phases.append(spent)

    _pool.run = run
    return phases, lambda: setattr(_pool, "run", real)


def two_thread_profile(fn, *, attnsym: bool, repeat: int = 3) -> dict:
    """Median wall time, CPU time of all threads and (attnsym) the critical path of ``fn()``, over ``repeat`` calls."""
    fn()  # warm-up
    rows = []
    phases, restore = _instrumented_pool() if attnsym else ([], lambda: None)
    try:
        for _ in range(repeat):
            phases.clear()
            before, own = thread_cpu(), time.thread_time()
            start = time.perf_counter()
            fn()
            wall = time.perf_counter() - start
            own, after = time.thread_time() - own, thread_cpu()
            cpu = sum(after[t] - before.get(t, 0.0) for t in after)
            row = {"wall": wall, "cpu": cpu}
            if attnsym:
                me = threading.get_ident()
                inline = sum(p.get(me, 0.0) for p in phases)  # tasks the calling thread ran itself
                row["serial"] = own - inline
                row["critical"] = row["serial"] + sum(max(p.values(), default=0.0) for p in phases)
                row["phases"] = len(phases)
            rows.append(row)
    finally:
        restore()
    return {k: float(np.median([r[k] for r in rows])) for k in rows[0]}


def _cpu(fn, repeat: int = 5) -> float:
    """Least CPU time of this thread over ``repeat`` runs (after a warm-up): robust to other processes' load."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


def _floors(n: int) -> dict:
    """CPU time of the fast path's block products and element-wise passes alone, on its block shapes.

    The passes are those the call runs (:func:`attnsym.numeric._fast.element_passes`: the Numba
    loops, or NumPy's ``exp`` and ``dS *= A`` with ``ATTNSYM_NUMBA=0``).
    """
    from attnsym.numeric import _fast, _kernels, _pool

    _pool.warm_blas()  # the BLAS buffers in the state a lean call leaves them (see _pool's docstring)
    exp_pass, exp_and_dscores, implementation = _fast.element_passes(np.float32)
    if implementation == "numba":  # the forward's exp as the compiled rows take it: unclamped (_kernels.CLAMP_REACH)
        exp_pass = functools.partial(_kernels.exp_rowsum, in_range=True)
    rng = np.random.default_rng(2)
    Qx, Kx, Vx, dZx = ((rng.standard_normal((n, D + 1), dtype=np.float32) / 8) for _ in range(4))
    Q, K, dZ = (M[:, :D] for M in (Qx, Kx, dZx))
    bi, bj = _fast.FAST_BLOCK
    S, part = np.empty((bi, bj), np.float32), np.empty((bi, D + 1), np.float32)
    fwd_blocks = [(i0, j0) for i0 in range(0, n, bi) for j0 in range(0, n, bj)]
    bk, bq = _fast.BACKWARD_BLOCK  # keys per task, queries per block
    A, dS = np.empty((bq, bk), np.float32), np.empty((bq, bk), np.float32)
    bwd_blocks = [(i0, j0) for j0 in range(0, n, bk) for i0 in range(0, n, bq)]

    def forward_products():
        for i0, j0 in fwd_blocks:
            np.matmul(Qx[i0:i0 + bi], Kx[j0:j0 + bj].T, out=S)
            np.matmul(S, Vx[j0:j0 + bj], out=part)

    sums = None if implementation == "numpy" else np.zeros(bi, np.float32)

    def forward_passes():
        for _ in fwd_blocks:
            exp_pass(S, sums)
            S.fill(-1.0)

    kept = n * n * 4 <= _fast.KEEP_MAX_BYTES  # attention_vjp reads the forward's exponentials (_fast.Kept)
    if kept:  # on the forward's blocks: no c·Q Kᵀ − L product, and A = P / ℓ, dS *= A instead of the exp
        bk, bq = bj, _fast.forward_rows(n, 1, _fast.FAST_BLOCK, keep=True)
        A, dS = np.empty((bq, bk), np.float32), np.empty((bq, bk), np.float32)
        bwd_blocks = [(i0, j0) for j0 in range(0, n, bk) for i0 in range(0, n, bq)]
        tiles = np.exp(rng.standard_normal((bq, bk), dtype=np.float32) / 8)

    def backward_products():
        for i0, j0 in bwd_blocks:
            if not kept:
                np.matmul(Qx[i0:i0 + bq], Kx[j0:j0 + bk].T, out=A)
            np.matmul(dZx[i0:i0 + bq], Vx[j0:j0 + bk].T, out=dS)
            A.T @ dZ[i0:i0 + bq]
            dS.T @ Q[i0:i0 + bq]
            dS @ K[j0:j0 + bk]

    def backward_passes():
        for _ in bwd_blocks:
            if kept:
                np.multiply(dS, tiles, out=dS)  # the 1/ℓ is on dZ's rows (_fast.backward)
            else:
                exp_and_dscores(A, dS)
            A.fill(-1.0)

    fills = lambda M, count: (lambda: [M.fill(-1.0) for _ in range(count)])
    S.fill(-1.0)
    A.fill(-1.0)
    dS.fill(0.5)
    numexpr_exp = None  # the candidate library for fused element-wise work, measured on the same pass
    try:
        import numexpr
    except ImportError:
        pass
    else:
        threads = numexpr.set_num_threads(1)

        def numexpr_passes():
            for _ in fwd_blocks:
                numexpr.evaluate("exp(S)", local_dict={"S": S}, out=S)
                S.fill(-1.0)

        numexpr_exp = {"seconds": _cpu(numexpr_passes) - _cpu(fills(S, len(fwd_blocks))), "version": numexpr.__version__}
        numexpr.set_num_threads(threads)
    return {"forward_products": _cpu(forward_products),
            "numexpr_exp": numexpr_exp,
            "forward_passes": _cpu(forward_passes) - _cpu(fills(S, len(fwd_blocks))),
            "backward_products": _cpu(backward_products),
            "backward_passes": _cpu(backward_passes) - _cpu(fills(A, len(bwd_blocks))),
            "forward_block": [bi, bj], "backward_block": [bk, bq], "implementation": implementation, "kept": kept}



def two_thread_floor(n: int, repeat: int = 7) -> dict:
    """Wall-clock time of the fast path's block kernels alone, on its worker pool (all threads), BLAS at one thread.

    The same tasks as :func:`attnsym.numeric._fast.forward` and ``backward`` — query blocks
    (forward) and key blocks (backward) of the same sizes, each looping over the other side's
    blocks with the same products and element-wise passes (the backward reading kept
    exponentials where ``attention_vjp`` keeps them, :data:`attnsym.numeric._fast.KEEP_MAX_BYTES`)
    — without any of their bookkeeping: no projections, no input or overflow checks, no shift bound, no
    normalisation. What a call takes beyond this is the implementation's own cost; this much
    is the design's (BLAS products and the element-wise passes on blocks in memory) at this
    thread count. The passes are those the call runs (:func:`attnsym.numeric._fast.element_passes`):
    with Numba the forward's row sums come from its ``exp`` loop and its second product is
    ``S V`` (64 wide); with NumPy from the product ``S [V, 1]``. With Numba the forward's task is
    the compiled rows the call runs (:func:`attnsym.numeric._kernels.attend_rows`, on ``Q, K, V``
    prepared beforehand): they have no bookkeeping of their own to leave out.
    """
    from attnsym.numeric import _fast, _kernels, _pool

    _pool.warm_blas()  # the BLAS buffers in the state a lean call leaves them (see _pool's docstring)
    exp_pass, exp_and_dscores, implementation = _fast.element_passes(np.float32)
    rng = np.random.default_rng(3)
    Qx, Kx, Vx, dZx = ((rng.standard_normal((n, D + 1), dtype=np.float32) / 8) for _ in range(4))
    Q, K, V, dZ = (M[:, :D] for M in (Qx, Kx, Vx, dZx))
    Vf = Vx if implementation == "numpy" else np.ascontiguousarray(V)  # the forward's [V, 1], or V
    bi, bj = _fast.FAST_BLOCK
    bi = _fast.forward_rows(n, 1, _fast.FAST_BLOCK)  # as the unmasked forward
    bk, bq = _fast.BACKWARD_BLOCK
    bk = _fast._rows_per_task(bk, n, 1)

    rows = _kernels.rows_kernel() if implementation == "numba" else None  # the float32 lean forward's tasks
    Qc, Kc, Vc = (np.ascontiguousarray(M) for M in (Q, K, V))
    Z, L, row_sums = np.empty((n, D), np.float32), np.empty(n, np.float32), np.empty(n, np.float32)

    def forward_task(i0: int):
        def go(buffers):
            S = buffers["S"][:bi * bj].reshape(bi, bj)
            if rows is not None:
                acc = buffers["part"][:bi * D].reshape(bi, D)
                rows(Qc, Kc, Vc, Z, L, row_sums, i0, min(n, i0 + bi), bj, np.float32(D ** -0.5), False,
                     buffers["S"], acc, buffers["shift"], buffers["reach"], _kernels.CLAMP_REACH,
                     _kernels.NO_TILES)
                return
            part = buffers["part"][:bi * Vf.shape[1]].reshape(bi, Vf.shape[1])
            acc = np.zeros((bi, Vf.shape[1]), np.float32)
            sums = None if implementation == "numpy" else np.zeros(bi, np.float32)
            for j0 in range(0, n, bj):
                np.matmul(Qx[i0:i0 + bi], Kx[j0:j0 + bj].T, out=S)
                exp_pass(S, sums)
                np.matmul(S, Vf[j0:j0 + bj], out=part)
                acc += part
        return go

    kept = n * n * 4 <= _fast.KEEP_MAX_BYTES  # attention_vjp then reads the forward's exponentials (_fast.Kept)
    if kept:  # the backward's blocks are the forward's (its kept tiles), the weights the tiles divided by the row sums
        bk, bq = bj, _fast.forward_rows(n, 1, _fast.FAST_BLOCK, keep=True)
        tiles = np.exp(rng.standard_normal((n, n), dtype=np.float32) / 8)

    def backward_task(j0: int):
        def go(buffers):
            A = buffers["A"][:bq * bk].reshape(bq, bk)
            dS = buffers["dS"][:bq * bk].reshape(bq, bk)
            dK, dV, dQ = np.zeros((bk, D), np.float32), np.zeros((bk, D), np.float32), np.zeros((bq, D), np.float32)
            for i0 in range(0, n, bq):
                np.matmul(dZx[i0:i0 + bq], Vx[j0:j0 + bk].T, out=dS)
                if kept:  # the kept tile is the weights times ℓ, whose 1/ℓ is on dZ's rows (_fast.backward)
                    A = tiles[i0:i0 + bq, j0:j0 + bk]
                    dS *= A
                else:
                    np.matmul(Qx[i0:i0 + bq], Kx[j0:j0 + bk].T, out=A)
                    exp_and_dscores(A, dS)
                dV += A.T @ dZ[i0:i0 + bq]
                dK += dS.T @ Q[i0:i0 + bq]
                dQ += dS @ K[j0:j0 + bk]
        return go

    fwd_scratch = {"S": (bi * bj, np.float32), "part": (bi * (D + 1), np.float32), "shift": (bi, np.float32),
                   "reach": (bi, np.float32)}
    bwd_scratch = {"A": (bq * bk, np.float32), "dS": (bq * bk, np.float32)}

    def forward():
        with _pool.one_blas_thread():
            _pool.run([forward_task(i0) for i0 in range(0, n, bi)], fwd_scratch)

    def backward():
        with _pool.one_blas_thread():
            _pool.run([backward_task(j0) for j0 in range(0, n, bk)], bwd_scratch)

    fwd, bwd = median_time(forward, repeat=repeat)[0], median_time(backward, repeat=repeat)[0]
    return {"fwd": fwd, "fb": fwd + bwd, "threads": _pool.THREADS, "kept": kept}


def sdpa_kernels(q) -> tuple[str, str]:
    """The kernels ``torch._fused_sdp_choice`` picks for ``q`` (4-D), without and with ``requires_grad``.

    Raises unless the first is FLASH_ATTENTION: 2-D and 3-D inputs get the MATH fallback on the
    CPU, and a comparison against it would flatter attnsym.
    """
    import torch
    from torch.nn.attention import SDPBackend

    names = {int(getattr(SDPBackend, k)): k for k in dir(SDPBackend) if k.isupper()}
    kernel = torch._fused_sdp_choice(q, q, q)
    if kernel != int(SDPBackend.FLASH_ATTENTION):
        raise RuntimeError(f"PyTorch chose {names.get(kernel, kernel)} for {tuple(q.shape)} inputs, not FLASH_ATTENTION")
    grad_kernel = torch._fused_sdp_choice(q.detach().requires_grad_(True), q, q)
    return names[kernel], names.get(grad_kernel, str(grad_kernel))


def one_thread_profile(n: int, inputs) -> dict:
    """attnsym and torch at one thread each (CPU time), and the floors of :func:`_floors`."""
    import torch
    from threadpoolctl import threadpool_limits

    from attnsym import numeric as nm
    from attnsym.numeric import _pool

    X, Ws, G = inputs(n)
    saved = _pool.THREADS
    _pool.THREADS = 1
    try:
        with threadpool_limits(1):
            out = {"n": n, "fwd": _cpu(lambda: nm.attention(X, *Ws, return_weights=False)),
                   "fb": _cpu(lambda: nm.attention_vjp(X, *Ws, G)), **_floors(n)}
    finally:
        _pool.THREADS = saved
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    F = torch.nn.functional
    Xt, Gt, Wt = torch.from_numpy(X), torch.from_numpy(G), [torch.from_numpy(W) for W in Ws]
    four_d = lambda M: M.view(1, 1, n, D)
    kernel, grad_kernel = sdpa_kernels(four_d(Xt @ Wt[0]))

    def torch_forward():
        with torch.no_grad():
            F.scaled_dot_product_attention(*(four_d(Xt @ W) for W in Wt))

    def torch_fb():
        x = Xt.clone().requires_grad_(True)
        F.scaled_dot_product_attention(*(four_d(x @ W) for W in Wt)).view(n, D).mul(Gt).sum().backward()

    t = torch.full((256, 1024), -1.0)
    count = n * n // t.numel()
    torch_fills = _cpu(lambda: [t.fill_(-1.0) for _ in range(count)])
    out.update(torch_kernel=kernel, torch_kernel_with_grad=grad_kernel, torch_fwd=_cpu(torch_forward), torch_fb=_cpu(torch_fb),
               torch_exp=_cpu(lambda: [torch.exp(t, out=t).fill_(-1.0) for _ in range(count)]) - torch_fills)
    torch.set_num_threads(threads)
    return out


def _numexpr_row(p: dict, entries: int, ms, passes: str) -> list[str]:
    """The same ``exp`` pass with numexpr at one thread, beside the fast path's (no row without numexpr)."""
    ne = p.get("numexpr_exp")
    if not ne:
        return []
    return [f"| `exp` with numexpr {ne['version']} (1 thread), same blocks | {ms(ne['seconds'])} "
            f"({entries / ne['seconds'] / 1e9:.2f} G/s; the fast path's, {passes}, is "
            f"{max(ne['seconds'], p['forward_passes']) / min(ne['seconds'], p['forward_passes']):.2f}× "
            f"{'faster' if ne['seconds'] > p['forward_passes'] else 'slower'}) | | |"]


def render_one_thread(p: dict) -> list[str]:
    n, entries = p["n"], p["n"] * p["n"]
    gf = lambda flops, seconds: flops / seconds / 1e9
    fwd_floor = p["forward_products"] + p["forward_passes"]
    bwd_floor = p["backward_products"] + p["backward_passes"]
    fb_floor = fwd_floor + bwd_floor
    ms = lambda s: f"{s * 1e3:.0f} ms"
    (bi, bj), (bk, bq) = p["forward_block"], p["backward_block"]
    passes = "the Numba loop, unclamped as the compiled rows take it" if p.get("implementation") == "numba" else "NumPy"
    kept = p.get("kept", False)  # the backward reads the forward's exponentials (attention_vjp within KEEP_MAX_BYTES)
    backward_passes = "`dS *= P` on the kept exponentials" if kept else "`exp`, `dS *= A`"
    return [
        "",
        f"Where the time goes — one thread each (BLAS, attnsym's worker pool and PyTorch at 1 thread), least CPU "
        f"time of the measuring thread over 5 runs (less sensitive to other processes than wall-clock time, not "
        f"immune to them: they share the caches and the memory bus); n = {n}, float32, d = 64; torch's kernel "
        f"(asserted): {p['torch_kernel']} (with `requires_grad`: {p['torch_kernel_with_grad']}):",
        "",
        "| | attnsym | torch flash | ratio |",
        "|---|---|---|---|",
        f"| forward | {ms(p['fwd'])} | {ms(p['torch_fwd'])} | {p['fwd'] / p['torch_fwd']:.2f}× |",
        f"| forward + backward | {ms(p['fb'])} | {ms(p['torch_fb'])} | {p['fb'] / p['torch_fb']:.2f}× |",
        f"| `exp` of n² float32 values | {ms(p['forward_passes'])} ({passes}, {entries / p['forward_passes'] / 1e9:.2f} G/s) "
        f"| {ms(p['torch_exp'])} (`torch.exp`, {entries / p['torch_exp'] / 1e9:.2f} G/s) "
        f"| {p['forward_passes'] / p['torch_exp']:.2f}× |",
        *_numexpr_row(p, entries, ms, passes),
        "",
        "The floor of this NumPy design, measured alone on the fast path's block shapes "
        f"(forward {bi} queries × {bj} keys, backward {bk} keys × {bq} queries; element-wise passes: {passes}):",
        "",
        "| | block products (BLAS) | element-wise passes | floor | whole call | rest (projections, checks, bookkeeping) |",
        "|---|---|---|---|---|---|",
        f"| forward | {ms(p['forward_products'])} (2 per block, {gf(4 * entries * (D + 1), p['forward_products']):.0f} "
        f"GFLOP/s) | {ms(p['forward_passes'])} (`exp`) | {ms(fwd_floor)} | {ms(p['fwd'])} | {ms(p['fwd'] - fwd_floor)} |",
        f"| forward + backward | {ms(p['forward_products'] + p['backward_products'])} (2 + {4 if kept else 5} per block, "
        f"backward {gf(2 * entries * (3 * D + (1 if kept else 2) * (D + 1)), p['backward_products']):.0f} GFLOP/s) "
        f"| {ms(p['forward_passes'] + p['backward_passes'])} (`exp`; {backward_passes}) | {ms(fb_floor)} | "
        f"{ms(p['fb'])} | {ms(p['fb'] - fb_floor)} |",
        "",
        f"The forward's floor is {fwd_floor / p['torch_fwd']:.2f}× torch's whole forward and the forward + "
        f"backward's {fb_floor / p['torch_fb']:.2f}× torch's. Both designs write each score block to memory with "
        "one product, pass over it and read it with the next product: torch's CPU flash kernel makes two passes (scale "
        "with the row maximum, then `exp` with the row sum), this one makes one (`exp(S − t)` with the row sums, "
        "`t` each row's maximum over its first key block); what differs is the speed of those passes and of the two "
        "libraries' products. The products are timed here as NumPy's blocks make them (`[c·Q, −t] [K, 1]ᵀ`, 65 "
        "wide); the forward's compiled rows make them 64 wide and let BLAS add `P V` into the running sum.",
        "",
        f"Per core, from this run's CPU times: forward {p['fwd'] / p['torch_fwd']:.2f}× (goal ≤ {GOAL_FWD}: "
        f"{'met' if p['fwd'] / p['torch_fwd'] <= GOAL_FWD else 'not met'}), forward + backward "
        f"{p['fb'] / p['torch_fb']:.2f}× (goal ≤ {GOAL_FB}: {'met' if p['fb'] / p['torch_fb'] <= GOAL_FB else 'not met'}).",
    ]


def render_two_threads(rows: list[dict]) -> list[str]:
    """Rows: n, what, attnsym (profile dict), torch (profile dict)."""
    ms = lambda s: f"{s * 1e3:.1f} ms"
    lines = [
        "",
        "Two threads, one call each (medians of 3): wall-clock time, CPU time of all the process's threads (BLAS's "
        "and OpenMP's own threads included, their spinning too), and attnsym's critical path — the calling thread's "
        "own CPU time plus, per parallel phase, the CPU time of its busiest worker: the wall-clock time with two "
        "free cores.",
        "",
        "| n | pass | attnsym wall | attnsym CPU, all threads | attnsym critical path (serial part) | torch wall "
        "| torch CPU, all threads |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, t = r["attnsym"], r["torch"]
        lines.append(f"| {r['n']} | {r['what']} | {ms(a['wall'])} | {ms(a['cpu'])} | {ms(a['critical'])} "
                     f"({ms(a['serial'])}) | {ms(t['wall'])} | {ms(t['cpu'])} |")
    return lines
