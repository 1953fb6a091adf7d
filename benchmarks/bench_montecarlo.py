"""Monte Carlo throughput: dot products per second at d = 64 (float64), 1 vs 2 workers, and the
fraction of the generator's own normal-draw rate measured in the same run; plus the wall time of
``attnsym verify`` (all claims) in quick and default mode.

Run (the BLAS overrides removed in this command only)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_montecarlo.py

Writes the ``montecarlo`` section of docs/benchmarks.md (``--no-write`` to only print).
"""

from __future__ import annotations

import sys
import time

from _common import environment_report, median_time, write_section

from attnsym.numeric import montecarlo as mc

D = 64
N = 2_000_000  # dot products per timed run: 2.6e8 normal draws


def main(write: bool = True) -> str:
    rows = []
    for workers in (1, 2):
        gen_rates = []
        t, times = median_time(lambda w=workers: mc.dot_product_moments(D, N, seed=0, workers=w), repeat=5)
        for _ in range(3):
            gen_rates.append(mc.normal_rate(1.0, workers=workers))
        gen = sorted(gen_rates)[1]
        dots = N / t
        rows.append({"workers": workers, "seconds": t, "dots": dots, "gen": gen, "fraction": dots * 2 * D / gen,
                     "best": N / min(times)})
    one, two = rows
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
        "| workers | median time | dot products/s | best run | normal draws/s of the generator (same run) | "
        "fraction of the generator's rate |",
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
