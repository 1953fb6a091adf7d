"""How a forward pass is cut into slices and run: one slice per step, or NumPy slices side by side.

NumPy runs its element-wise operations (softmax, GELU, LayerNorm) on one core, and BLAS splits
each small matrix product of a 128-token sentence (``128 × 384`` by ``384 × 1536``) over its
threads, which spin between calls. For NumPy arrays :func:`plan` therefore cuts each step of a
layer into as many slices as BLAS has threads — rows of tokens for the row-wise step, (batch,
head) ranges for attention — and :func:`run` runs them on the worker pool of
:mod:`attnsym.numeric._pool` (NumPy releases the GIL inside its loops and BLAS), the whole pass
inside :func:`attnsym.numeric._pool.one_blas_thread` so that the cores are never
oversubscribed. ``with threadpoolctl.threadpool_limits(1)`` therefore makes the forward pass
single-threaded. Other libraries (CuPy, PyTorch) parallelise inside each operation: they get
one slice per step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..numeric import _pool

__all__ = ["CACHE_BLOCK", "MIN_ROWS_PER_THREAD", "Plan", "plan", "run"]

#: a row slice shorter than this is not worth a thread (a barrier costs tens of microseconds)
MIN_ROWS_PER_THREAD = 32
#: NumPy: score elements the attention step handles at once (heads of ``n × n``; 256 KiB of float32,
#: so the softmax's passes over them stay in a core's L2 cache)
CACHE_BLOCK = 1 << 16

_STATE: dict[str, Any] = {}


@dataclass(frozen=True)
class Plan:
    """The slices of one forward pass: token rows ``[r0, r1)`` of the flattened ``(B·n, d)`` rows,
    ``(b0, b1, h0, h1)`` batch and head ranges of the attention step, and how many heads of a
    slice the attention step takes at once (``head_block``)."""

    threads: int
    rows: tuple[tuple[int, int], ...]
    heads: tuple[tuple[int, int, int, int], ...]
    head_block: int


def _blas():
    """threadpoolctl's controller of the BLAS libraries NumPy uses (made once: it scans the loaded libraries)."""
    if "blas" not in _STATE:
        from threadpoolctl import ThreadpoolController

        _STATE["blas"] = ThreadpoolController().select(user_api="blas")
    return _STATE["blas"]


def blas_threads() -> int:
    """The threads BLAS may use now (``threadpool_limits`` lowers it), at most the pool's workers."""
    counts = [lib.get_num_threads() for lib in _blas().lib_controllers]
    return max(1, min(max(counts, default=1), _pool.THREADS))


def _split(total: int, parts: int) -> list[tuple[int, int]]:
    return [(k * total // parts, (k + 1) * total // parts) for k in range(parts)]


def plan(batch: int, n: int, heads: int, *, numpy: bool, threads: int | None = None) -> Plan:
    """The slices for ``batch`` texts of ``n`` tokens: one per step, or one per thread for NumPy.

    ``threads=None`` takes BLAS's current thread count (NumPy) and 1 otherwise; fewer threads are
    used when a slice would have fewer than :data:`MIN_ROWS_PER_THREAD` rows.
    """
    rows = batch * n
    wanted = (blas_threads() if numpy else 1) if threads is None else threads
    t = max(1, min(wanted, rows // MIN_ROWS_PER_THREAD, batch * heads)) if numpy else 1
    head_block = max(1, CACHE_BLOCK // (n * n)) if numpy else heads
    if t == 1:
        return Plan(1, ((0, rows),), ((0, batch, 0, heads),), head_block)
    if batch >= t:
        head_slices = tuple((b0, b1, 0, heads) for b0, b1 in _split(batch, t))
    else:  # fewer texts than threads: split each text's heads
        per = -(-t // batch)
        head_slices = tuple((b, b + 1, h0, h1) for b in range(batch) for h0, h1 in _split(heads, per))
    return Plan(t, tuple(_split(rows, t)), head_slices, head_block)


@contextlib.contextmanager
def blas_limited(p: Plan) -> Iterator[None]:
    """BLAS at one thread while the slices of ``p`` run side by side (nothing changes for one slice)."""
    if p.threads == 1:
        yield
        return
    with _pool.one_blas_thread():
        yield


def run(step: Callable[..., None], slices: Sequence[tuple[int, ...]]) -> None:
    """``step(*s)`` for every slice: on the caller's thread alone, or on the pool of :mod:`attnsym.numeric._pool`.

    Every slice finishes before this returns (or raises the first slice's error): the steps write
    into shared output arrays, and the next step reads what all of them wrote.
    """
    if len(slices) == 1:
        step(*slices[0])
        return
    _pool.run([lambda _buffers, s=s: step(*s) for s in slices])
