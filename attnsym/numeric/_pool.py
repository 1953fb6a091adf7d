"""Worker threads for NumPy work, with BLAS held at one thread while a call uses them.

NumPy's BLAS (OpenBLAS) runs its own threads: a multi-threaded call waits for all of them,
spinning, and after the call they keep spinning in case more work comes (measured here: about
40 ms of CPU after one (4096 × 64)·(64 × 64) product). Next to a pool of worker threads that
means more busy threads than cores — a 2-thread forward took longer than the same work done on
one thread — and under load the spinning waits multiply (a forward + backward at n = 4096 spent
about 200 ms of CPU in them). So a fast-path call (:mod:`attnsym.numeric._fast`) runs entirely inside
:func:`one_blas_thread`: every product, the projections and the weight gradients included,
runs with BLAS at one thread, and the parallelism comes from this module's pool — query or key
blocks of attention, and row blocks of the long ``n``-row products (:func:`matmul`).

NumPy releases the GIL inside its matrix products and element-wise loops, so the workers run
in parallel; what they share is the GIL for the few Python statements per block.

**BLAS's packing buffers are written once, up front** (:func:`warm_blas`). OpenBLAS packs the
operands of a product into a buffer of its own (one per concurrent caller, 32 MiB, mapped
lazily by the operating system) and its Haswell kernel prefetches the *next* panel of that
buffer while it computes. A process whose products are all small — a lean call's
``(512 × 256)·(256 × 64)`` block products — writes only the first pages of the buffer (12 kB of
its ``B`` part, read with ``mincore``), and the kernel's prefetches past them go to pages that
were never mapped. On the 2-core AMD EPYC virtual machines of issue 34 that stalled the
kernel: 70 % of its samples fell on the instruction after that ``prefetcht1``, the block
product ran at 12 GFLOP/s instead of 43, and a forward pass at n = 2048 took 66 ms of CPU
instead of 38 — until any larger product happened to write those pages, in the calling
thread's buffer only (a worker thread kept a slow one). So the first lean call of a process
runs one product per worker at once (a few hundred kB of each buffer written, about 2 ms),
before its own.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import ShapeError

__all__ = ["MIN_SPLIT", "THREADS", "WARM_SHAPES", "WORKSPACE_MAX_BYTES", "active", "borrowed", "fresh_workspace",
           "matmul", "matmuls", "one_blas_thread", "run", "warm_also", "warm_blas", "workers", "workspace"]

#: worker threads (the cores this process may run on)
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
#: a product with fewer multiply-adds than this (about 0.3 ms on one core here) runs on the calling thread whole
MIN_SPLIT = 2**24
#: the largest buffer :func:`workspace` keeps between calls; a larger one is allocated for its call alone
WORKSPACE_MAX_BYTES = 64 * 2**20

_STATE: dict[str, Any] = {}
_LOCAL = threading.local()
_START = threading.Lock()
_BLAS_LOCK = threading.Lock()  # the holders of the one-thread BLAS limit (one_blas_thread)
_LEND_LOCK = threading.Lock()  # the free buffers of borrowed()
_WARM_LOCK = threading.Lock()  # one warm_blas at a time
_PREFIX = "attnsym-pool"  # the names of the pool's threads
_FREE: dict[str, list[np.ndarray]] = {}


def _forget_pool() -> None:
    """In a forked child: the parent's executor came along without its threads; work queued on it would never run."""
    global _START, _BLAS_LOCK, _LEND_LOCK, _WARM_LOCK
    _STATE.clear()
    _FREE.clear()
    _START, _BLAS_LOCK, _LEND_LOCK, _WARM_LOCK = threading.Lock(), threading.Lock(), threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _pool() -> tuple[ThreadPoolExecutor, Any]:
    """The process-wide executor and BLAS controller, made on first use.

    The controller knows the BLAS libraries loaded when it was made (finding them takes about
    3 ms), and a later import can load another (Numba and SciPy bring SciPy's own OpenBLAS), so
    it is made again whenever modules were imported since: rarely, after the first calls.
    """
    with _START:
        if "pool" not in _STATE:
            _STATE["pool"] = ThreadPoolExecutor(max(1, THREADS - 1), thread_name_prefix=_PREFIX)
        if _STATE.get("modules") != len(sys.modules):
            from threadpoolctl import ThreadpoolController

            _STATE["blas"] = ThreadpoolController()
            _STATE["modules"] = len(sys.modules)
    return _STATE["pool"], _STATE["blas"]


#: the products that write a BLAS library's packing buffers, by library: NumPy's, and SciPy's once the compiled
#: forward that calls it is loaded (:func:`warm_also`)
_WARMERS: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {"numpy": lambda a, b: np.matmul(a, b)}

#: the product that writes the first pages of a BLAS packing buffer: (256 × 320)·(320 × 640), float32 — its
#: operand panels fill OpenBLAS's whole Haswell ``A`` block (320 × 320) and 320 kB of its ``B`` buffer; about
#: 2 ms, long enough for the workers' products to overlap (each then takes a buffer of its own)
WARM_SHAPES = ((256, 320), (320, 640))


def warm_blas() -> None:
    """Write BLAS's packing buffers once per process: one :data:`WARM_SHAPES` product on each worker at once.

    :func:`one_blas_thread` does it on its first entry, so a caller need not; this is that step alone.
    The products run at the same moment on the calling thread and the pool's, each inside the
    one-thread BLAS limit, so each takes its own buffer (OpenBLAS lends one per concurrent
    caller). One product per library (:func:`warm_also`); idempotent; skipped while
    :mod:`tracemalloc` traces (a traced call's peak is its own); a forked child warms again
    (cheap: it inherits the parent's pages). The why is in this module's docstring.

    >>> warm_blas()
    >>> "numpy" in _STATE["warm"]
    True
    """
    with one_blas_thread():
        pass


def warm_also(name: str, product: Callable[[np.ndarray, np.ndarray], Any]) -> None:
    """Warm another BLAS library's buffers too, with ``product(a, b)`` (``a @ b`` by that library, compiled already).

    The compiled forward (:func:`attnsym.numeric._kernels.attend_rows`) calls SciPy's OpenBLAS,
    whose buffers are its own: unwritten, they slowed its products as NumPy's did (a block's
    ``c·Q Kᵀ`` took 2.3 ms against 0.79 ms). The next entry of :func:`one_blas_thread` runs it.
    """
    _WARMERS.setdefault(name, product)


def _warm_once() -> None:
    """:func:`warm_blas`'s products, the first time for each library; called inside the one-thread BLAS limit."""
    warmed = _STATE.setdefault("warm", set())
    if set(_WARMERS) <= warmed or tracemalloc.is_tracing() or threading.current_thread().name.startswith(_PREFIX):
        return  # a pool worker never waits for the pool
    with _WARM_LOCK:
        libraries = [name for name in list(_WARMERS) if name not in warmed]  # list(): one step, as warm_also may add
        if not libraries:
            return
        count = max(1, THREADS)
        barrier = threading.Barrier(count)

        def product(_: Any = None) -> None:
            a, b = (np.ones(shape, np.float32) for shape in WARM_SHAPES)
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=0.05)  # together, so that each takes its own buffer; alone if a worker is late
            for name in libraries:
                _WARMERS[name](a, b)

        helpers = [_pool()[0].submit(product) for _ in range(count - 1)]
        product()
        for helper in helpers:
            helper.result()
        warmed.update(libraries)


def active() -> bool:
    """Whether this thread is inside :func:`one_blas_thread`."""
    return getattr(_LOCAL, "depth", 0) > 0


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS held at one thread for the block (re-entrant, shared by threads); :func:`run`, :func:`matmul` give parallelism.

    BLAS's thread count is process-wide, so the limit is too: the first thread to enter sets
    it and remembers the count it found, the last to leave restores that count, under one
    lock (a reference count). Two blocks that merely nested their own save-and-restore would
    restore each other's value: the first to leave would give the second's products BLAS's
    threads back while it still runs, and the second would then "restore" one thread for the
    rest of the process. With one worker thread (:data:`THREADS` = 1) BLAS is left as it is:
    nothing competes with it.
    """
    depth = getattr(_LOCAL, "depth", 0)
    _LOCAL.depth = depth + 1
    try:
        if depth or THREADS < 2:
            if not depth:
                _warm_once()
            yield
        else:
            _hold_blas()
            try:
                _warm_once()
                yield
            finally:
                _release_blas()
    finally:
        _LOCAL.depth = depth


def _hold_blas() -> None:
    """One more holder of the one-thread BLAS limit; the first sets it."""
    controller = _pool()[1]
    with _BLAS_LOCK:
        if _STATE.get("holders", 0) == 0:
            _STATE["limiter"] = _as_blas_controller(lambda: controller.limit(limits=1, user_api="blas"))
        _STATE["holders"] = _STATE.get("holders", 0) + 1


def _release_blas() -> None:
    """One holder fewer; the last restores the thread count the first one found."""
    with _BLAS_LOCK:
        _STATE["holders"] -= 1
        if _STATE["holders"] == 0:
            _as_blas_controller(_STATE.pop("limiter").restore_original_limits)


def _as_blas_controller(action: Callable[[], Any]) -> Any:
    """``action()`` with this thread allowed to set OpenBLAS's thread count, then that permission given up.

    OpenBLAS without OpenMP has one process-wide thread count, and threadpoolctl (from 3.8)
    lets only one "controlling" thread change it — the first to call it, until that thread
    ends or the permission is cleared — and silently ignores every other thread. Our limit is
    set by the first holder and restored by the last, which may be two different threads, and a
    fast-path call may run on any thread; so each change takes the permission and gives it back
    (``_BLAS_LOCK``, held by the caller, orders our changes). Without this, after the first call
    the limit set on any other thread did nothing at all (issue 26 item 2). A ``threadpool_limits``
    block that another thread of the program holds at the same time loses its exclusivity: it
    shares the one process-wide count with us, as it did before threadpoolctl 3.8.
    """
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)  # threadpoolctl < 3.8 has no controller
    if clear is not None:
        clear(force=True)
    try:
        return action()
    finally:
        if clear is not None:
            clear(force=True)


def workspace(name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A C-contiguous ``shape`` array of this thread's named buffer, kept for the next call; contents undefined.

    Memory that is new to the process costs a page fault for each 4 KiB the first time it is
    written — about 5 µs each on these machines — and glibc hands the large blocks a call frees
    back to the system before the next call, so every call paid them again: 877 faults, some
    4 ms, in a forward pass at n = 2048 whose products and ``exp`` take about 16 ms on two
    threads. The fast path's temporaries (the projections, the padded ``[K, 1]`` and ``[V, 1]``
    operands, the workers' score blocks and partial sums) are views of these buffers instead:
    one per name and thread (a worker's are its own), grown when a call needs more, at most
    :data:`WORKSPACE_MAX_BYTES` each (beyond that, a fresh array). Only for arrays that
    never leave the call: the next call on the thread overwrites them.

    >>> a = workspace("doctest", (2, 3), np.float32)
    >>> b = workspace("doctest", (3,), np.float32)
    >>> a.shape, b.shape, bool(np.shares_memory(a, b))
    ((2, 3), (3,), True)
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > WORKSPACE_MAX_BYTES or _STATE.get("fresh", 0):
        return np.empty(shape, dtype)
    buffers = _LOCAL.__dict__.setdefault("workspace", {})
    buffer = buffers.get(name)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = buffers[name] = np.empty(max(nbytes, 1), np.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)


@contextlib.contextmanager
def borrowed(name: str, shape: tuple[int, ...], dtype) -> Iterator[np.ndarray]:
    """A C-contiguous ``shape`` array that belongs to the block alone, whatever thread uses it; contents undefined.

    For what the workers of one call fill and the caller reads after :func:`run` (the
    backward's partial dQ sums): a :func:`workspace` buffer belongs to a thread, and a pool
    worker serves every call in the process, so the next call's task on that worker would
    overwrite it before the first call has read it. A borrowed buffer is lent to no one else
    until the block ends, then kept for the next borrower of ``name`` (at most :data:`THREADS`
    kept per name, each at most :data:`WORKSPACE_MAX_BYTES`), so repeated calls pay no page
    faults for it.

    >>> with borrowed("doctest", (2, 3), np.float32) as a, borrowed("doctest", (2, 3), np.float32) as b:
    ...     bool(np.shares_memory(a, b))
    False
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    keep = nbytes <= WORKSPACE_MAX_BYTES and not _STATE.get("fresh", 0)
    buffer = None
    if keep:
        with _LEND_LOCK:
            free = _FREE.setdefault(name, [])
            fits = [k for k, b in enumerate(free) if b.nbytes >= nbytes]
            if fits:
                buffer = free.pop(min(fits, key=lambda k: free[k].nbytes))
    if buffer is None:
        buffer = np.empty(max(nbytes, 1), np.uint8)
    try:
        yield buffer[:nbytes].view(dtype).reshape(shape)
    finally:
        if keep:
            with _LEND_LOCK:
                free = _FREE.setdefault(name, [])
                free.append(buffer)
                if len(free) > max(1, THREADS):
                    free.pop(min(range(len(free)), key=lambda k: free[k].nbytes))


@contextlib.contextmanager
def fresh_workspace() -> Iterator[None]:
    """Every :func:`workspace` request in the block, on any thread, allocates a new array and keeps nothing.

    For measuring a call's own memory (:func:`attnsym.numeric.measure.peak_traced_bytes`):
    with kept buffers a call's traced peak would depend on what ran before it in the process.
    """
    _STATE["fresh"] = _STATE.get("fresh", 0) + 1
    try:
        yield
    finally:
        _STATE["fresh"] -= 1


def run(tasks: list[Callable[[dict], None]], scratch: dict[str, tuple[int, Any]] | None = None,
        private: list[dict[str, np.ndarray]] | None = None) -> None:
    """Run ``task(buffers)`` for each task, on this thread and the pool's, BLAS at one thread.

    The calling thread works too: it and ``THREADS − 1`` pool threads each take the next task
    until none is left (no future per task, no idle caller). ``scratch`` names per-worker
    buffers (``name -> (elements, dtype)``); each worker takes them from its own
    :func:`workspace`, so repeated calls reuse the same memory. Scratch is only for what a task
    uses and forgets: a pool worker's next task may belong to another call. What must outlive
    the tasks (partial sums the caller adds up afterwards) goes in ``private``: worker ``k``
    (the caller is worker 0) adds ``private[k]`` to its buffers, arrays the caller owns (from
    :func:`borrowed`); ``private`` needs an entry for each of :func:`workers` ``(len(tasks))``.
    Serial with one thread, one task, or while :mod:`tracemalloc` traces (reproducible peaks).
    An exception in a task is raised here once every worker has stopped.
    """
    scratch = scratch or {}
    count = workers(len(tasks))
    if private is not None and len(private) < count:
        raise ShapeError(f"run: private needs one entry per worker ({count}), got {len(private)}")
    todo, lock = iter(tasks), threading.Lock()

    def drain(k: int) -> None:
        buffers = {name: workspace(f"run:{name}", (size,), dtype) for name, (size, dtype) in scratch.items()}
        if private is not None:
            buffers.update(private[k])
        while True:
            with lock:
                task = next(todo, None)
            if task is None:
                return
            task(buffers)

    if count == 1:
        drain(0)
        return
    with one_blas_thread():
        helpers = [_pool()[0].submit(drain, k) for k in range(1, count)]
        try:
            drain(0)
        finally:
            for helper in helpers:
                helper.result()


def workers(tasks: int) -> int:
    """How many threads :func:`run` uses for ``tasks`` tasks (the caller included)."""
    return 1 if THREADS < 2 or tasks < 2 or tracemalloc.is_tracing() else min(THREADS, tasks)


def matmul(A: np.ndarray, B: np.ndarray, scratch: str | None = None) -> np.ndarray:
    """``A @ B`` for ``A`` (..., m, k) and ``B`` (k, p), the rows of ``A`` split across the pool.

    Inside :func:`one_blas_thread` a product of at least :data:`MIN_SPLIT` multiply-adds is
    cut into row blocks, one task each (the projections ``X W`` and the weight gradients
    ``Xᵀ dQ`` of a long sequence); anything else is one ``np.matmul``. With ``scratch`` (a
    name) the product is written into this thread's :func:`workspace` of that name there.
    """
    return matmuls([(A, B)], [scratch])[0]


def matmuls(pairs: list[tuple[np.ndarray, np.ndarray]], scratch: Sequence[str | None] | None = None) -> list[np.ndarray]:
    """``[A @ B for A, B in pairs]`` (each as :func:`matmul`), the blocks of them all in one :func:`run`.

    Products that together reach :data:`MIN_SPLIT` multiply-adds are split even when each one
    alone would not be: the three projections ``X W_Q``, ``X W_K``, ``X W_V`` of a
    2048-token head (8.4 M each) wait for the pool once instead of running one after another
    on the calling thread. ``scratch``: a workspace name per product, or None. Each product is
    cut into ``⌈2·threads / products⌉`` row blocks, two tasks per worker in all (the three
    projections at n = 2048 on 2 threads: 6 tasks, 0.81 ms, against 0.84 ms for 12).

    A product with fewer rows than the length of its sums — a weight gradient ``Xᵀ dQ``,
    (d × n)·(n × p) — is cut along the sum instead (:func:`_inner_blocks`): its row blocks would
    be a few rows each, which BLAS multiplies at a fraction of its rate.
    """
    names = scratch or [None] * len(pairs)
    outs = [workspace(name, (*A.shape[:-1], B.shape[1]), np.result_type(A, B))
            if name is not None and active() and A.ndim >= 2 and B.ndim == 2 else None
            for (A, B), name in zip(pairs, names, strict=True)]
    work = sum(math.prod(A.shape[:-1]) * B.shape[0] * B.shape[1] if A.ndim >= 2 and B.ndim == 2 else 0
               for A, B in pairs)
    if (not active() or THREADS < 2 or tracemalloc.is_tracing() or work < MIN_SPLIT
            or any(A.ndim < 2 or B.ndim != 2 or max(math.prod(A.shape[:-1]), B.shape[0]) < 2 * THREADS
                   for A, B in pairs)):
        return [np.matmul(A, B, out=out) for (A, B), out in zip(pairs, outs, strict=True)]
    tasks: list[Callable[[dict], None]] = []
    results, sums = [], []
    blocks = -(-2 * THREADS // len(pairs))  # two tasks per worker over all the products: one slow core holds none up
    for (A, B), out in zip(pairs, outs, strict=True):
        k, p = B.shape
        rows = math.prod(A.shape[:-1])
        A2 = A.reshape(rows, k)
        target = np.empty((rows, p), np.result_type(A, B)) if out is None else out.reshape(rows, p)
        if rows < k:
            block_tasks, parts = _inner_blocks(A2, B, target.dtype)
            tasks += block_tasks
            sums.append((parts, target))
        else:
            step = -(-rows // blocks)
            tasks += [_row_block(A2, B, target, r, step) for r in range(0, rows, step)]
        results.append(target.reshape(*A.shape[:-1], p))
    run(tasks)
    for parts, target in sums:
        np.add.reduce(parts, axis=0, out=target)
    return results


def _row_block(A: np.ndarray, B: np.ndarray, target: np.ndarray, r: int, step: int) -> Callable[[dict], None]:
    def task(_: dict) -> None:
        np.matmul(A[r:r + step], B, out=target[r:r + step])
    return task


def _inner_blocks(A: np.ndarray, B: np.ndarray, dtype) -> tuple[list[Callable[[dict], None]], np.ndarray]:
    """``A @ B`` (m × k)·(k × p) as one task per worker, each a part of the sum over ``k``; the parts (T, m, p) to add.

    Measured at n = 2048, two threads: ``Xᵀ dQ`` for X (2048 × 64), dQ (2048 × 192) took 0.84 ms
    cut in two sums, 0.96 ms cut in 4 blocks of 16 rows.
    """
    k = A.shape[1]
    step = -(-k // THREADS)
    parts = np.empty((-(-k // step), A.shape[0], B.shape[1]), dtype)

    def block(t: int) -> Callable[[dict], None]:
        def task(_: dict) -> None:
            np.matmul(A[:, t * step:(t + 1) * step], B[t * step:(t + 1) * step], out=parts[t])
        return task

    return [block(t) for t in range(parts.shape[0])], parts
