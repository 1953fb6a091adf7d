"""Measured growth behind the cost claims (quadratic-cost, blockwise-exact, kv-cache), and claim run times.

The claims judge cost on exact operation counts and traced memory, which are reproducible; wall
times depend on the machine and its load, so they are measured here, side by side in one run,
and recorded in ``docs/benchmarks.md`` (section ``claims-cost``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_claims_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment_report, median_time, write_section

from attnsym.numeric import attention, causal_decode
from attnsym.numeric.measure import growth_exponent, peak_traced_bytes
from attnsym.symbolic.opcount import decode_step_opcount

CLAIMS_B = ("dynamic-routing", "hypernetwork-view", "two-token-example", "weights-not-preset", "multi-head",
            "global-path-length", "parallelism", "quadratic-cost", "kv-cache", "blockwise-exact", "qk-asymmetry",
            "permutation-equivariance", "no-locality-bias")


def forward_growth(ns: list[int], d: int = 64, block: int = 256) -> tuple[list[dict], dict]:
    rng = np.random.default_rng(0)
    rows = []
    for n in ns:
        X = rng.standard_normal((n, d)).astype(np.float32)
        W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32) for _ in range(3)]
        plain = lambda X=X, W=W: attention(X, *W)
        lean = lambda X=X, W=W: attention(X, *W, return_weights=False, block_size=block)
        t_plain, all_plain = median_time(plain, repeat=7)
        t_lean, all_lean = median_time(lean, repeat=7)
        m_plain = peak_traced_bytes(plain)[1]
        m_lean = peak_traced_bytes(lean)[1]
        rows.append({"n": n, "t_plain": t_plain, "t_lean": t_lean, "m_plain": m_plain, "m_lean": m_lean,
                     "best_plain": min(all_plain), "best_lean": min(all_lean)})
    keys = ("t_plain", "t_lean", "best_plain", "best_lean", "m_plain", "m_lean")
    fit = {key: growth_exponent(ns, [r[key] for r in rows]) for key in keys}
    fit["t_plain_top"] = growth_exponent(ns[-2:], [r["t_plain"] for r in rows[-2:]])
    return rows, fit


def decode_times(ns: list[int], d: int = 64, heads: int = 4) -> list[dict]:
    rng = np.random.default_rng(1)
    rows = []
    for n in ns:
        X = rng.standard_normal((n, d))
        W = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
        t_fast, all_fast = median_time(lambda X=X, W=W: causal_decode(X, *W, heads=heads), repeat=5)
        t_slow, all_slow = median_time(lambda X=X, W=W: causal_decode(X, *W, heads=heads, cache=False), repeat=5)
        ops = [sum(int(decode_step_opcount(t, d, d // heads, heads=heads, cached=c, output_projection=True)["mul"])
                   for t in range(1, n + 1)) for c in (True, False)]
        rows.append({"n": n, "t_cache": t_fast, "t_recompute": t_slow, "mul_cache": ops[0], "mul_recompute": ops[1],
                     "best_cache": min(all_fast), "best_recompute": min(all_slow)})
    return rows


def claim_times(quick: bool) -> tuple[float, float, list[tuple[str, float]]]:
    from attnsym.claims import verify

    verify("kv-cache", quick=True)  # imports and first-call costs outside the measurement
    cpu0, wall0 = time.process_time(), time.perf_counter()
    per = [(cid, verify(cid, quick=quick).seconds) for cid in CLAIMS_B]
    return time.process_time() - cpu0, time.perf_counter() - wall0, per


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    ns = [256, 512, 1024] if args.quick else [512, 1024, 2048, 4096]
    # one BLAS thread: on a shared 2-core machine a second spinning BLAS thread makes small
    # products erratically slow, which hides the growth this benchmark is about
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        rows, fit = forward_growth(ns)
        dec = decode_times([32, 64] if args.quick else [64, 128, 256])
    cpu_q, wall_q, _ = claim_times(quick=True)
    cpu_f, wall_f, per_f = claim_times(quick=False)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "## Cost claims: measured growth (quadratic-cost, blockwise-exact, kv-cache)",
        "",
        "The claims judge cost on exact operation counts and on traced memory; wall times are measured here.",
        "",
        environment_report(),
        f"- load average (1 min) when the run ended: {load:.1f} on {os.cpu_count()} cores",
        "",
        "Forward pass, d = 64, float32, one head, one BLAS thread; plain path returns the weights, blockwise path "
        "(block 256) does not.",
        "",
        "| n | plain median (best) ms | blockwise median (best) ms | blockwise / plain (medians) | plain peak MiB "
        "| blockwise peak MiB |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']} | {r['t_plain'] * 1e3:.2f} ({r['best_plain'] * 1e3:.2f}) | {r['t_lean'] * 1e3:.2f} "
                     f"({r['best_lean'] * 1e3:.2f}) | {r['t_lean'] / r['t_plain']:.2f} | "
                     f"{r['m_plain'] / 2**20:.1f} | {r['m_lean'] / 2**20:.2f} |")
    lines += [
        "",
        f"Growth exponents (least squares on log–log): time n^{fit['t_plain']:.2f} plain (best-of times "
        f"n^{fit['best_plain']:.2f}; medians n^{fit['t_plain_top']:.2f} between the two largest n) and "
        f"n^{fit['t_lean']:.2f} blockwise (best n^{fit['best_lean']:.2f}); "
        f"memory n^{fit['m_plain']:.2f} plain and n^{fit['m_lean']:.2f} blockwise.",
        "",
        "Causal decoding of n tokens, d = 64, 4 heads, float64, one BLAS thread: K/V cache against recomputing the "
        "prefix each step.",
        "",
        "| n | cache median (best) ms | recompute median (best) ms | time ratio (medians) | multiplications ratio (exact) |",
        "|---|---|---|---|---|",
    ]
    for r in dec:
        lines.append(f"| {r['n']} | {r['t_cache'] * 1e3:.1f} ({r['best_cache'] * 1e3:.1f}) | {r['t_recompute'] * 1e3:.1f} "
                     f"({r['best_recompute'] * 1e3:.1f}) | "
                     f"{r['t_recompute'] / r['t_cache']:.1f} | {r['mul_recompute'] / r['mul_cache']:.1f} |")
    slowest = lambda per: ", ".join(f"{cid} {s:.2f} s" for cid, s in sorted(per, key=lambda p: -p[1])[:3])
    lines += [
        "",
        f"The 13 claims of the claims-B group: quick mode {cpu_q:.1f} s CPU ({wall_q:.1f} s wall), default mode "
        f"{cpu_f:.1f} s CPU ({wall_f:.1f} s wall) in this run. Slowest (default): {slowest(per_f)}.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("claims-cost", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
