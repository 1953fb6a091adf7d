"""How a forward pass is cut into slices and run: one slice per step by default, or NumPy slices side by side.

By default every step of a layer is one slice on the calling thread, and BLAS parallelises each
matrix product over its own threads (which spin between calls, so a product starts at once).
The element-wise chains between the products run on the calling thread: for float32 NumPy
arrays as the compiled kernels of :mod:`attnsym.models._fused` (one pass each, no GIL), otherwise
as NumPy operations. ``threads=k`` instead cuts each step into ``k`` slices — rows of tokens for
the row-wise step, (batch, head) ranges for attention — run on the worker pool of
:mod:`attnsym.numeric._pool` with BLAS held at one thread
(:func:`attnsym.numeric._pool.one_blas_thread`). On the two-core machines this project measures
on, one 128-token sentence runs slower that way (the ``threads=k`` row of
``benchmarks/bench_models.py``): each short NumPy call on a worker waits for the GIL, and each
step waits for a sleeping worker to wake. Other libraries (CuPy, PyTorch) parallelise inside
each operation: they always get one slice per step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..numeric import _pool

__all__ = ["CACHE_BLOCK", "MIN_ROWS_PER_THREAD", "Plan", "plan", "run"]

#: a row slice shorter than this is not worth a thread (a barrier costs tens of microseconds)
MIN_ROWS_PER_THREAD = 32
#: NumPy: score elements the attention step handles at once (heads of ``n × n``; 256 KiB of float32,
#: so the softmax's passes over them stay in a core's L2 cache)
CACHE_BLOCK = 1 << 16


@dataclass(frozen=True)
class Plan:
    """The slices of one forward pass: token rows ``[r0, r1)`` of the flattened ``(B·n, d)`` rows,
    ``(b0, b1, h0, h1)`` batch and head ranges of the attention step, and how many heads of a
    slice the attention step takes at once (``head_block``)."""

    threads: int
    rows: tuple[tuple[int, int], ...]
    heads: tuple[tuple[int, int, int, int], ...]
    head_block: int


def _split(total: int, parts: int) -> list[tuple[int, int]]:
    return [(k * total // parts, (k + 1) * total // parts) for k in range(parts)]


def plan(batch: int, n: int, heads: int, *, numpy: bool, threads: int | None = None) -> Plan:
    """The slices for ``batch`` texts of ``n`` tokens: one per step, unless ``threads`` asks for more (NumPy only).

    ``threads=k`` cuts each step into ``k`` slices for NumPy arrays (module docstring); fewer are
    used when a slice would have fewer than :data:`MIN_ROWS_PER_THREAD` rows. Other libraries
    always get one slice per step.
    """
    rows = batch * n
    wanted = 1 if threads is None else threads
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
