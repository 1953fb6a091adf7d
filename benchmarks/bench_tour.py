"""Wall time of the main commands (``tour``, ``tour --quick``, ``route``, ``explore``) as a user runs them.

Each command runs ``REPEAT`` times as a whole new process (``python -m attnsym ...``, imports
and the model load included), each run in a new temporary folder; the table gives the median,
the spread and the load average before and after, with the number of CPUs, because a shared
machine makes every time here pessimistic. The goals (issue 27, a quiet 2-core machine):
tour --quick <= 15 s, tour <= 30 s, route <= 5 s, explore <= 15 s.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_tour.py [--repeat 3] [--only route,explore]

Every time the docs quote for these commands comes from this table.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment_report, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]

from attnsym.models.evidence import APPLE  # noqa: E402  (the default pair of tour, explore and the README)

TEXTS, WORD = APPLE[:2], APPLE[2]  # "I ate an apple for lunch", "I bought an Apple phone today"; "apple"
#: label -> (arguments after ``python -m attnsym``, with {out} the run's output path; goal in seconds)
COMMANDS: dict[str, tuple[tuple[str, ...], float]] = {
    "tour --quick": (("tour", "--quick", "-o", "{out}"), 15.0),
    "tour": (("tour", "-o", "{out}"), 30.0),
    "route": (("route", *TEXTS, "--word", WORD, "-o", "{out}"), 5.0),
    "explore": (("explore", *TEXTS, "--word", WORD, "--quick", "-o", "{out}.html"), 15.0),
}


def run_once(arguments: tuple[str, ...]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its worker processes included) of one whole ``python -m attnsym`` process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as folder:
        argv = [a.format(out=str(Path(folder) / "out")) for a in arguments]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "attnsym", *argv], cwd=folder, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(COMMANDS), help="comma-separated labels of COMMANDS")
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rows = []
    for label in args.only.split(","):
        arguments, goal = COMMANDS[label]
        before = load_average()[0]
        runs = [run_once(arguments) for _ in range(args.repeat)]
        times, cpu = [wall for wall, _ in runs], [c for _, c in runs]
        after = load_average()[0]
        shown = " ".join(a if " " not in a else repr(a) for a in arguments
                         if a != "-o" and "{out}" not in a)  # the output is each run's temporary folder
        rows.append(f"| `attnsym {shown}` | {statistics.median(times):.1f} | {min(times):.1f} | {max(times):.1f} "
                    f"| {goal:.0f} | {statistics.median(cpu):.1f} | {before:.2f} / {after:.2f} |")
        print(rows[-1], flush=True)
    lines = [
        f"Wall time of each command as a whole new process (`python -m attnsym ...`: imports and the model "
        f"load included), {args.repeat} runs each, each writing into a new temporary folder (`-o`), on {cpus} CPUs. The goals "
        "are for a quiet 2-core machine; the load average (1 minute, before / after the runs) says how "
        "busy this one was: other work on the machine makes these times pessimistic. CPU is the median "
        "user + system time of the process and its workers: on 2 cores the wall time cannot fall below half of it.",
        "",
        "| command | median (s) | min (s) | max (s) | goal (s) | CPU (s) | load before / after |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "Where the time went, and what removed it:",
        "",
        "- *The round before* (cProfile): matplotlib laid out every figure twice (`draw_without_rendering` and then "
        "`savefig`'s own constrained layout), the route's layer × head grid was 72 axes, and the tour drew each "
        "claim's figure twice (the report and `index.html`). Now each figure is laid out once, the grid is one "
        "mosaic axes, and a claim's figure is drawn once, as the report's PNG, which `index.html` resamples. A "
        "profile of `tour --quick` in one process then put 61 % of its time in `figure_to_bytes` (64 figures, "
        "mostly text layout: tick labels and mathtext), 41 % in the claims (their checks and figures), 20 % in "
        "`index.html`, 19 % in the figures section and 14 % in the real-model section.",
        "- *This round*: every process compiled three of the Numba kernels again (1.1–1.6 s on the first call: "
        "they called the compiled `exp` through a closure cell, on which Numba keys its disk cache, and the "
        "dispatcher there pickles with a new uuid in each process) — the route, the tour's real-model section and "
        "both real-model claims of the full tour; now they reach it as a module global and load from the cache "
        "(`tests/test_kernels.py` runs two processes on one cache). The tour checked its 43 claims and drew their "
        "38 figures on one core (14 s of `tour --quick`, the other sections 7 s on the second); now they run in "
        "one worker per CPU, as `explore`'s do, each drawing its claims' figures and resampling them for "
        "`index.html` (1.2 s that ran alone at the end). Log axes were labelled in mathtext, and matplotlib keeps "
        "50 mathtext parses for the 66 distinct labels of the claims' figures, so most of the 490 labels were "
        "parsed again: written figures now label log axes in Unicode superscripts (`attnsym.plots.ticks`), "
        "10.1 s instead of 11.8 s of CPU for the claims' figures.",
        "",
        environment_report(),
    ]
    path = write_section("tour", "## The tour, route and explore\n\n" + "\n".join(lines))
    text = path.read_text()  # the section keeps the markers tests/test_help_and_docs_truth.py reads
    path.write_text(text.replace("<!-- begin:tour -->", "<!-- BEGIN tour -->").replace("<!-- end:tour -->", "<!-- END tour -->"))
    print(f"\nwrote the 'tour' section of {path}")


if __name__ == "__main__":
    main()
