"""Monte Carlo throughput: dot products per second at d = 64 (float64), 1 vs 2 workers, and the
fraction of the generator's own normal-draw rate measured in the same run; plus the wall time of
``attnsym verify`` (all claims) in quick and default mode.

Run (the BLAS overrides removed in this command only)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_montecarlo.py

Writes the ``montecarlo`` section of docs/benchmarks.md (``--no-write`` to only print).
"""

from __future__ import annotations

import os
import sys
import time

from _common import environment_report, write_section

from attnsym.numeric import montecarlo as mc

D = 64
N = 1_000_000  # dot products per timed run: 1.3e8 normal draws


def main(write: bool = True, rounds: int = 5) -> str:
    load_before = os.getloadavg()[0]
    # rounds alternate 1 and 2 workers; within a round the generator's rate is measured right before
    # the dot products, so the fraction compares two numbers taken under the same machine load
    per = {1: [], 2: []}
    for _ in range(rounds):
        for workers in (1, 2):
            gen = mc.normal_rate(0.5, workers=workers)
            t0 = time.perf_counter()
            mc.dot_product_moments(D, N, seed=0, workers=workers)
            t = time.perf_counter() - t0
            per[workers].append({"seconds": t, "dots": N / t, "gen": gen, "fraction": (N / t) * 2 * D / gen})
    rows = []
    for workers, runs in per.items():
        med = sorted(runs, key=lambda r: r["dots"])[len(runs) // 2]
        rows.append({"workers": workers, "seconds": med["seconds"], "dots": med["dots"], "gen": med["gen"],
                     "fraction": sorted(r["fraction"] for r in runs)[len(runs) // 2],
                     "best": max(r["dots"] for r in runs)})
    one, two = rows
    load_after = os.getloadavg()[0]
    same = mc.dot_product_moments(D, 300_000, seed=1, workers=1) == mc.dot_product_moments(D, 300_000, seed=1, workers=2)

    from attnsym.claims import verify_all

    verify_all(quick=True)  # imports and caches warm, as in a second CLI run
    t0 = time.perf_counter()
    quick = verify_all(quick=True)
    t_quick = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = verify_all(quick=False)
    t_full = time.perf_counter() - t0
    slowest = sorted(full, key=lambda e: -e.seconds)[:4]

    lines = [
        "## Monte Carlo and `attnsym verify` (`benchmarks/bench_montecarlo.py`)",
        "",
        environment_report(),
        "",
        f"### Dot products q·k at d = {D}, float64 ({N:,} per run, `montecarlo.dot_product_moments`)",
        "",
        f"{rounds} rounds alternating 1 and 2 workers; medians, and the best run. Load average of this shared "
        f"machine (other jobs): {load_before:.1f} before, {load_after:.1f} after — with a load above 1 the second "
        "worker does not get a core of its own, and the 2-worker numbers drop accordingly.",
        "",
        "| workers | median time | dot products/s | best run | normal draws/s of the generator (same round) | "
        "fraction of the generator's rate (median over rounds) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['seconds']:.3f} s | {r['dots']:.3g} | {r['best']:.3g}/s | {r['gen']:.3g} | "
                     f"{100 * r['fraction']:.0f} % |")
    lines += [
        "",
        f"Speed-up 2 vs 1 workers: **{two['dots'] / one['dots']:.2f}x**; the generator alone: "
        f"{two['gen'] / one['gen']:.2f}x. Each dot product needs {2 * D} normal draws, so the generator's rate "
        f"caps it at {two['gen'] / (2 * D):.3g}/s with 2 workers. Same result with 1 and 2 workers (seeded blocks, "
        f"merged in order): {same}.",
        "",
        "Draws go into reused `(2d, c)` buffers (`Generator(SFC64).standard_normal(out=...)`), one independent "
        "`SeedSequence.spawn` stream per block of about 2^22 draws, blocks on a thread pool "
        "(NumPy releases the GIL while filling arrays and reducing), moments merged exactly (Pébay).",
        "",
        "### `attnsym verify`, every claim (in-process, after a warm-up run)",
        "",
        "| mode | claims | wall time |",
        "|---|---|---|",
        f"| `--quick` | {len(quick)} | {t_quick:.1f} s |",
        f"| default | {len(full)} | {t_full:.1f} s |",
        "",
        "Slowest claims (default mode): " + ", ".join(f"`{e.claim}` {e.seconds:.1f} s" for e in slowest) + ".",
    ]
    text = "\n".join(lines)
    if write:
        write_section("montecarlo", text)
    return text


if __name__ == "__main__":
    print(main(write="--no-write" not in sys.argv))
