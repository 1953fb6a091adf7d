"""Helpers shared by the benchmark scripts: timing, the BLAS report, and docs/benchmarks.md.

Run benchmarks with the BLAS overrides of these machines removed, in that command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_numeric.py

Each script writes its own section of ``docs/benchmarks.md`` between
``<!-- begin:name -->`` and ``<!-- end:name -->`` markers, leaving the other sections alone
(a section still between the older ``<!-- BEGIN name -->`` / ``<!-- END name -->`` markers
is replaced in place and gets the new markers).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "docs" / "benchmarks.md"


def median_time(fn: Callable[[], object], *, repeat: int = 7, warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs (after ``warmup`` runs), and all times."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def environment_report() -> str:
    """Markdown lines describing the machine, the BLAS kernel (threadpoolctl) and the overrides."""
    lines = [
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    ]
    try:
        import numpy as np

        lines.append(f"- NumPy {np.__version__}")
    except ImportError:  # pragma: no cover
        pass
    try:
        lines += [f"- BLAS: {k}" for k in blas_kernels()]
    except ImportError:
        lines.append("- BLAS: threadpoolctl not installed (pip install threadpoolctl)")
    overrides = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    lines.append(f"- BLAS overrides in the environment: {overrides or 'none (unset for this run)'}")
    return "\n".join(lines)


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages (what else ran on the machine), or NaNs where unknown."""
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux/macOS
        return (float("nan"),) * 3


def load_warning(loads: list[float], cores: int | None = None) -> str | None:
    """A warning line when the 1-minute load average during a run exceeded the cores (figures not comparable), else None."""
    cores = cores or os.cpu_count() or 1
    worst = max((x for x in loads if x == x), default=0.0)  # NaNs (unknown load) ignored
    if worst <= cores:
        return None
    return (f"- **warning: the machine was loaded during this run** (1-minute load average up to {worst:.1f} on "
            f"{cores} cores): the wall-clock figures and their ratios are not comparable with a quiet run; rerun "
            "on a quiet machine before quoting them")


def blas_kernels() -> list[str]:
    """The BLAS libraries threadpoolctl sees: library, version, kernel (architecture), threads, and whose copy it is
    (the package folder it was loaded from: NumPy's and SciPy's wheels each carry their own OpenBLAS)."""
    from threadpoolctl import threadpool_info

    def owner(filepath: str | None) -> str:
        folder = Path(filepath or "").parent.name
        return folder.removesuffix(".libs").removesuffix("/lib") or "unknown"

    return [f"{p.get('internal_api')} {p.get('version')}, kernel `{p.get('architecture')}`, "
            f"{p.get('num_threads')} threads ({owner(p.get('filepath'))}'s copy)"
            for p in threadpool_info() if p.get("user_api") == "blas"]


def write_section(name: str, markdown: str, path: Path = BENCHMARKS_MD) -> Path:
    """Replace (or append) the section ``name`` of docs/benchmarks.md with ``markdown``."""
    begin, end = f"<!-- begin:{name} -->", f"<!-- end:{name} -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    for b, e in ((begin, end), (f"<!-- BEGIN {name} -->", f"<!-- END {name} -->")):
        if b in text and e in text:
            head, rest = text.split(b, 1)
            _, tail = rest.split(e, 1)
            text = head + block + tail
            break
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path
