"""Wall time of ``attnsym tour`` (default and ``--quick``) in a fresh interpreter, as a user runs it.

The issue asks for the tour in under a minute. Each variant runs ``REPEAT`` times into a new
temporary folder; the load average is recorded next to the times, because the machine is shared.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_tour.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment_report, write_section

REPEAT = 2


def run_tour(*flags: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys; from attnsym.cli import main; sys.exit(main(sys.argv[1:]))",
                        "tour", "-o", str(Path(folder) / "tour"), *flags], check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    rows = []
    for label, flags in (("attnsym tour", ()), ("attnsym tour --quick", ("--quick",))):
        load = os.getloadavg()[0]
        times = [run_tour(*flags) for _ in range(REPEAT)]
        rows.append(f"| `{label}` | {statistics.median(times):.1f} | {min(times):.1f} | {max(times):.1f} | {load:.2f} |")
    lines = [
        f"Wall time of the whole command in a fresh interpreter (imports included), {REPEAT} runs each.",
        "",
        "| command | median (s) | min (s) | max (s) | load average before |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        "The target is under a minute on a 2-core machine. Most of the time goes to the claim checks "
        "(Monte Carlo on both cores) and to rendering about twenty PNG figures with matplotlib.",
        "",
        environment_report(),
    ]
    path = write_section("tour", "## The tour\n\n" + "\n".join(lines))
    print("\n".join(lines))
    print(f"\nwrote the 'tour' section of {path}")


if __name__ == "__main__":
    main()
