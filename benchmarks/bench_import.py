"""How long ``import attnsym`` takes, and which heavy libraries it loads (none).

Each measurement runs in a fresh interpreter (``python -X importtime -c "import attnsym"``);
the cumulative time of the ``attnsym`` line is the cost of the import itself. For scale, the
same is measured for the libraries the layers load lazily on first use.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_import.py

Writes the ``import`` section of docs/benchmarks.md (``--no-write`` to only print).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment_report, write_section

REPEAT = 7
HEAVY = ("matplotlib", "sympy", "numpy", "scipy", "networkx", "torch", "cupy", "rich")


def import_time_us(statement: str, module: str) -> float:
    """Cumulative import time (µs) of ``module`` when ``statement`` runs in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                          check=True)
    times = [int(line.split("|")[1]) for line in proc.stderr.splitlines()
             if line.startswith("import time:") and line.split("|")[2].strip() == module]
    return float(times[-1])


def loaded_modules(statement: str) -> list[str]:
    code = f"{statement}; import sys, json; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(write: bool = True) -> None:
    rows = []
    cases = (
        ("import attnsym", "import attnsym", "attnsym"),
        ("import attnsym.plots (no figure drawn)", "import attnsym.plots", "attnsym.plots"),
        ("for scale: import sympy", "import sympy", "sympy"),
        ("for scale: import matplotlib.pyplot", "import matplotlib.pyplot", "matplotlib.pyplot"),
    )
    results = {}
    for label, statement, module in cases:
        times = [import_time_us(statement, module) for _ in range(REPEAT)]
        results[label] = statistics.median(times)
        rows.append((label, statistics.median(times) / 1000, min(times) / 1000, max(times) / 1000, loaded_modules(statement)))
    base = results["import attnsym"]
    lines = [
        f"`python -X importtime`, a fresh interpreter per run, median of {REPEAT} runs "
        "(cumulative time of the module's own line).",
        "",
        "| statement | median (ms) | min (ms) | max (ms) | heavy libraries loaded |",
        "|---|---:|---:|---:|---|",
    ]
    for label, med, lo, hi, mods in rows:
        lines.append(f"| `{label}` | {med:.1f} | {lo:.1f} | {hi:.1f} | {', '.join(mods) or 'none'} |")
    sympy_ratio = results["for scale: import sympy"] / base
    mpl_ratio = results["for scale: import matplotlib.pyplot"] / base
    attnsym_mods = rows[0][4]
    lines += [
        "",
        f"`import attnsym` takes {base / 1000:.1f} ms (the target is under 500 ms) and loads "
        f"{', '.join(attnsym_mods) if attnsym_mods else 'none of ' + ', '.join(HEAVY)}: "
        f"importing SymPy alone costs {sympy_ratio:.0f}× as much and matplotlib.pyplot {mpl_ratio:.0f}×. "
        "The layers import their libraries on first use (PEP 562 `__getattr__` in `attnsym/__init__.py`); "
        "matplotlib is imported only when a figure is drawn, and networkx only when a graph is drawn "
        "(`attnsym.plots` loads `plots.routing` on first access). `tests/test_plots.py` checks the "
        "matplotlib part in a subprocess.",
        "",
        environment_report(),
    ]
    print("\n".join(lines))
    if write:
        path = write_section("import", "## Import time\n\n" + "\n".join(lines))
        print(f"\nwrote the 'import' section of {path}")


if __name__ == "__main__":
    main(write="--no-write" not in sys.argv)
