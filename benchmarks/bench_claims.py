"""Time `attnsym verify` (every claim) and `attnsym verify --quick`, per claim and end to end.

Each run is a fresh subprocess (`python -m attnsym verify [--quick] --json --timings`), so the
wall time includes interpreter start-up and imports, as a user sees it; CPU time (user + system
of the child and its worker processes) is reported beside it because the machine is shared.
Both modes run as a user runs them (worker processes, one per CPU: the default `--jobs`) and
with `--jobs 1` (one process, one claim after another), so the gain of the workers is measured,
not assumed. Every run must give the same evidence (the JSON without timings is compared).
Targets (issue 15): all claims under 20 s, --quick under 5 s.
Writes the `claims` section of docs/benchmarks.md.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_claims.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, environment_report, load_average, write_section

sys.path.insert(0, str(ROOT))  # this checkout's attnsym, as in the timed subprocesses

from attnsym.claims import default_jobs


def run(quick: bool, jobs: int | None) -> tuple[float, float, dict[str, float], list[str], str]:
    """Wall and CPU seconds of one `attnsym verify` run, per-claim seconds, claims not as expected, the evidence."""
    cmd = [sys.executable, "-m", "attnsym", "verify", "--json", "--timings"] + (["--quick"] if quick else [])
    cmd += [] if jobs is None else ["--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[1:])} exited with {out.returncode}: {out.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads(out.stdout)
    per_claim = {e["claim"]: e["seconds"] for e in data["claims"]}
    wrong = [e["claim"] for e in data["claims"] if not e["as_expected"]]
    for e in data["claims"]:
        del e["seconds"]
    return wall, cpu, per_claim, wrong, json.dumps(data, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_before = load_average()
    jobs = default_jobs()
    lines = ["## Claims: `attnsym verify`", "",
             "Fresh subprocess per run (start-up and imports included); median and range over "
             f"{args.repeat} runs. Targets: all claims < 20 s, `--quick` < 5 s (wall). Default `--jobs` here: "
             f"{jobs} worker process(es), one per CPU; `--jobs 1` checks the claims one after another in one "
             "process. CPU = user + system of the command and its workers.", ""]
    rows, slowest, evidence = [], {}, {}
    for quick in (True, False):
        for label_jobs in (None, 1):
            walls, cpus, per = [], [], []
            mode = ("`attnsym verify --quick`" if quick else "`attnsym verify`") + ("" if label_jobs is None
                                                                                   else " `--jobs 1`")
            for _ in range(args.repeat):
                wall, cpu, per_claim, wrong, doc = run(quick, label_jobs)
                walls.append(wall)
                cpus.append(cpu)
                per.append(per_claim)
                if evidence.setdefault(quick, doc) != doc:
                    raise SystemExit(f"{mode}: the evidence differs from the first run of this mode")
                print(f"{mode}: {wall:.1f} s wall, {cpu:.1f} s CPU, not as expected: {wrong or 'none'}", flush=True)
            rows.append(f"| {mode} | {len(per[0])} | {statistics.median(walls):.1f} ({min(walls):.1f}–{max(walls):.1f}) | "
                        f"{statistics.median(cpus):.1f} ({min(cpus):.1f}–{max(cpus):.1f}) | {', '.join(wrong) or 'none'} |")
            if label_jobs == 1:  # per-claim seconds of one process: not inflated by a neighbouring worker
                slowest[mode] = sorted(((statistics.median(p[c] for p in per), c) for c in per[0]), reverse=True)[:6]
    load_after = load_average()
    lines += ["| command | claims | wall s, median (range) | CPU s, median (range) | not as expected |",
              "|---|---|---|---|---|", *rows, "",
              "The evidence (JSON without timings) was the same in every run of a mode, with and without workers.", ""]
    for mode, top in slowest.items():
        lines.append(f"- slowest checks in {mode} (median wall s): " + ", ".join(f"{c} {s:.2f}" for s, c in top))
    lines += ["", f"- load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
              f"after: {', '.join(f'{v:.2f}' for v in load_after)}", environment_report()]
    print(write_section("claims", "\n".join(lines)))


if __name__ == "__main__":
    main()
