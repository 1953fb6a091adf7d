"""Helpers shared by the benchmark scripts: timing, the BLAS report, and docs/benchmarks.md.

Run benchmarks with the BLAS overrides of these machines removed, in that command alone::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_numeric.py

Each script writes its own section of ``docs/benchmarks.md`` between
``<!-- BEGIN name -->`` and ``<!-- END name -->`` markers, leaving the other sections alone.
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
        from threadpoolctl import threadpool_info

        for pool in threadpool_info():
            if pool.get("user_api") == "blas":
                lines.append(
                    f"- BLAS: {pool.get('internal_api')} {pool.get('version')}, kernel "
                    f"`{pool.get('architecture')}`, {pool.get('num_threads')} threads"
                )
    except ImportError:
        lines.append("- BLAS: threadpoolctl not installed (pip install threadpoolctl)")
    overrides = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    lines.append(f"- BLAS overrides in the environment: {overrides or 'none (unset for this run)'}")
    return "\n".join(lines)


def write_section(name: str, markdown: str, path: Path = BENCHMARKS_MD) -> Path:
    """Replace (or append) the section ``name`` of docs/benchmarks.md with ``markdown``."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path
