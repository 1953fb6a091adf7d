"""Time `attnsym verify` (every claim) and `attnsym verify --quick`, per claim and end to end.

Each mode runs in a fresh subprocess (`python -m attnsym verify [--quick] --json`), so the wall
time includes interpreter start-up and imports, as a user sees it; CPU time (user + system of the
child) is reported beside it because the machine is shared. Targets (issue 15): all claims under 20 s, --quick under 5 s.
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


def run(quick: bool) -> tuple[float, float, dict[str, float], list[str]]:
    """Wall and CPU seconds of one `attnsym verify` run, per-claim seconds, claims not as expected."""
    cmd = [sys.executable, "-m", "attnsym", "verify", "--json"] + (["--quick"] if quick else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads(out.stdout)
    per_claim = {e["claim"]: e.get("seconds", float("nan")) for e in data["claims"]}
    wrong = [e["claim"] for e in data["claims"] if not e["as_expected"]]
    return wall, cpu, per_claim, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_before = load_average()
    lines = ["## Claims: `attnsym verify`", "",
             "Fresh subprocess per run (start-up and imports included); median and range over "
             f"{args.repeat} runs. Targets: all claims < 20 s, `--quick` < 5 s.", ""]
    rows, slowest = [], {}
    for quick in (True, False):
        walls, cpus, per = [], [], []
        for _ in range(args.repeat):
            wall, cpu, per_claim, wrong = run(quick)
            walls.append(wall)
            cpus.append(cpu)
            per.append(per_claim)
            print(f"{'--quick' if quick else 'all'}: {wall:.1f} s wall, {cpu:.1f} s CPU, not as expected: {wrong or 'none'}",
                  flush=True)
        mode = "`attnsym verify --quick`" if quick else "`attnsym verify`"
        rows.append(f"| {mode} | {len(per[0])} | {statistics.median(walls):.1f} ({min(walls):.1f}–{max(walls):.1f}) | "
                    f"{statistics.median(cpus):.1f} ({min(cpus):.1f}–{max(cpus):.1f}) | {', '.join(wrong) or 'none'} |")
        slowest[mode] = sorted(((statistics.median(p[c] for p in per), c) for c in per[0]), reverse=True)[:5]
    load_after = load_average()
    lines += ["| command | claims | wall s, median (range) | CPU s, median (range) | not as expected |",
              "|---|---|---|---|---|", *rows, ""]
    for mode, top in slowest.items():
        if all(s == s for s, _ in top):  # per-claim seconds only when the JSON carries them
            lines.append(f"- slowest checks in {mode} (median s): " + ", ".join(f"{c} {s:.2f}" for s, c in top))
    lines += ["", f"- load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
              f"after: {', '.join(f'{v:.2f}' for v in load_after)}", environment_report()]
    print(write_section("claims", "\n".join(lines)))


if __name__ == "__main__":
    main()
