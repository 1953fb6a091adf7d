"""Build-time page generation (mkdocs-gen-files): runs every script in docs/gen/.

Each script writes one or more pages with ``mkdocs_gen_files.open(...)``; pages with
equations and figures are therefore produced by attnsym itself, never typed by hand.

The scripts are independent of one another, so where ``fork`` exists they run in a pool of
worker processes, one per CPU, the slowest handed out first (the claims page alone checks every
claim and draws its figures). A worker runs a script with ``mkdocs_gen_files.open`` replaced by
an in-memory recorder and sends back what the script wrote; this process then writes those files
through the real ``mkdocs_gen_files.open``, script by script in name order: the same pages as
running the scripts one after another here (which is what happens without fork), bar the few
numbers a page measures while it is built (timings, a traced peak).
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import runpy
import sys
import traceback
from multiprocessing import get_context
from pathlib import Path

import mkdocs_gen_files

os.environ.setdefault("MPLBACKEND", "Agg")

SCRIPTS = sorted((Path(__file__).parent / "gen").glob("*.py"))
#: handed to the workers first (their share of the build's time, largest first); the rest follow in name order
SLOWEST_FIRST = ("claims", "gradients", "figures", "real_model", "routing", "positions", "architecture")


class _Recorder:
    """Stands in for ``mkdocs_gen_files.open`` in a worker: keeps every file written, in order."""

    def __init__(self) -> None:
        self.files: list[tuple[str, str, bytes]] = []

    @contextlib.contextmanager
    def open(self, name, mode="r", **kwargs):
        if "w" not in mode or "+" in mode:
            raise ValueError(f"docs/gen scripts only write new files; got mode {mode!r} for {name!r}")
        binary = "b" in mode
        buffer = io.BytesIO() if binary else io.StringIO()
        yield buffer
        data = buffer.getvalue() if binary else buffer.getvalue().encode(kwargs.get("encoding") or "utf-8")
        self.files.append((str(name), "wb" if binary else "w", data))


def _run_recorded(script: str) -> list[tuple[str, str, bytes]]:
    """Run one script in a worker and return the files it wrote: ``(name, mode, bytes)``."""
    recorder = _Recorder()
    mkdocs_gen_files.open = recorder.open  # this worker process only
    runpy.run_path(script, run_name="__main__")
    return recorder.files


def _write(files: list[tuple[str, str, bytes]]) -> None:
    for name, mode, data in files:
        if mode == "wb":
            with mkdocs_gen_files.open(name, "wb") as handle:
                handle.write(data)
        else:
            with mkdocs_gen_files.open(name, "w") as handle:
                handle.write(data.decode("utf-8"))


def _fork_workers() -> int:
    """Worker processes for the scripts: one per CPU this process may use; 0 without ``fork`` (run here)."""
    if os.name != "posix" or sys.platform == "darwin":
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, len(SCRIPTS)))


def _worker(tasks, results) -> None:
    """Run scripts from ``tasks`` until it hands out ``None``; put ``(script, files, error)`` on ``results``."""
    while (script := tasks.get()) is not None:
        try:
            results.put((script, _run_recorded(script), None))
        except BaseException:  # sent to the parent, which raises it
            results.put((script, [], traceback.format_exc()))


def main() -> None:
    workers = _fork_workers()
    if workers == 0:
        for script in SCRIPTS:
            runpy.run_path(str(script), run_name="__main__")
        return
    # imported once here, before the workers fork, rather than once in each worker
    import matplotlib.pyplot  # noqa: F401
    import sympy  # noqa: F401

    import attnsym  # noqa: F401
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    order = sorted(SCRIPTS, key=lambda s: (rank.get(s.stem, len(rank)), s.name))
    context = get_context("fork")
    tasks, results = context.Queue(), context.Queue()
    for script in order:
        tasks.put(str(script))
    for _ in range(workers):
        tasks.put(None)
    # not daemons: a script may start worker processes of its own (the claims page checks claims in parallel)
    processes = [context.Process(target=_worker, args=(tasks, results)) for _ in range(workers)]
    for process in processes:
        process.start()
    done: dict[str, list[tuple[str, str, bytes]]] = {}
    try:
        while len(done) < len(SCRIPTS):
            try:
                script, files, error = results.get(timeout=5)
            except queue.Empty:
                if not any(process.is_alive() for process in processes):
                    missing = sorted(set(map(str, SCRIPTS)) - set(done))
                    raise RuntimeError(f"docs/gen workers exited without finishing {missing}") from None
                continue
            if error is not None:
                raise RuntimeError(f"{script} failed:\n{error}")
            done[script] = files
    finally:
        for process in processes:
            if process.is_alive() and len(done) < len(SCRIPTS):
                process.terminate()
            process.join()
    for script in SCRIPTS:
        _write(done[str(script)])


main()
