"""A model's head statistics on one text, streamed layer by layer: :func:`head_stats` and :func:`revision`."""

from __future__ import annotations

import hashlib
import os
import sys
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .._checks import boolean, positive_int
from .._io import refuse_existing
from ..errors import SpecError
from ..heads import InductionScores, induction_scores
from ..models.errors import ModelError, TextError
from ..models.forward import forward_streamed
from ..numeric.layer import BoundLayer
from .result import STATISTICS, HeadStats
from .stream import DEFAULT_BLOCK, ROW_STATISTICS, SPREAD_STATISTICS, LayerRows, stream_layer

__all__ = ["head_stats", "induction_probe", "revision", "text_ids"]

_REVISIONS: dict[int, tuple[Any, str]] = {}


def revision(model) -> str:
    """A fingerprint of a model's weights: the first 16 hex digits of BLAKE2b over every array's dtype, shape and bytes.

    Computed once per loaded model (it reads every weight once).

    >>> m = at.models.packaged_model()
    >>> revision(m) == revision(m), len(revision(m))
    (True, 16)
    """
    key = id(model)
    known = _REVISIONS.get(key)
    if known is not None and known[0]() is model:
        return known[1]
    digest = hashlib.blake2b(digest_size=8)
    w = model.weights
    arrays = [*(v for _, v in sorted(w.arrays().items())),
              *(v for lw in w.layers for _, v in sorted(lw.arrays().items()))]
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.reshape(-1).data.cast("B"))  # its memoryview; 1-D: an empty array casts too
    _REVISIONS[key] = (weakref.ref(model), digest.hexdigest())
    return digest.hexdigest()


def text_ids(model, text: str, *, too_long: str = "refuse") -> tuple[np.ndarray, bool]:
    """The token ids of ``text`` (special tokens added) and whether they were cut to the model's positions.

    ``too_long="refuse"`` raises :class:`~attnsym.models.errors.TextError` for a text past the
    model's context (:meth:`Model.encode`); ``"truncate"`` keeps its first ``max_positions`` tokens.
    """
    if too_long == "refuse":
        return np.asarray(model.encode([text])[0].ids, dtype=np.int64), False
    if too_long != "truncate":
        raise SpecError(f"too_long must be 'refuse' or 'truncate' (got {too_long!r})")
    if not isinstance(text, str) or not text.strip():
        model.encode([text])  # the same message as refuse for a non-string or blank text
    limit = model.config.max_positions
    ids = model.tokenizer.encode(text).ids
    return np.asarray(ids[:limit], dtype=np.int64), len(ids) > limit


def induction_probe(model) -> InductionScores | None:
    """The induction and duplicate-token scores of :func:`attnsym.heads.induction_scores` (decoders; else None).

    The probe's length is 50, or what fits the model's positions.
    """
    if not model.config.causal:
        return None
    return induction_scores(model, length=min(50, model.config.max_positions // 2))


def _ids(model, text_or_ids) -> np.ndarray:
    if isinstance(text_or_ids, str):
        return text_ids(model, text_or_ids)[0]
    ids = np.asarray(text_or_ids)
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise TextError(f"text_or_ids must be a text or a non-empty 1-D sequence of token ids (got an array of shape "
                        f"{ids.shape} and dtype {ids.dtype})")
    if ids.size > model.config.max_positions:
        raise TextError(f"text_or_ids holds {ids.size} tokens, more than the {model.config.max_positions} positions "
                        f"{model.name} has; shorten it")
    if ids.min() < 0 or ids.max() >= model.config.vocab_size:
        raise TextError(f"token ids must lie in [0, {model.config.vocab_size}) (got {int(ids.min())} .. "
                        f"{int(ids.max())})")
    return ids.astype(np.int64)


def _progress_bar(show: bool | None, layers: int):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    show = sys.stderr.isatty() if show is None else show
    return Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(), transient=True,
                    disable=not show, console=None)


def head_stats(model, text_or_ids: str | Sequence[int] | np.ndarray, *, per_row: bool = False,
               induction: InductionScores | bool | None = True, block: int = DEFAULT_BLOCK, threads: int | None = None,
               progress: bool | None = None, map_of: tuple[int, int] | None = None,
               map_to: str | os.PathLike | None = None, spread: bool = False) -> HeadStats:
    """Exact statistics of every head on one text, in one streamed pass: no ``n × n`` map is kept.

    Each layer runs as in :meth:`Model.forward` (the same embedding, norms, projections, RoPE and
    MLP), but its attention goes through :func:`attnsym.audits.stream.stream_layer`, which
    measures every head while it computes ``A V`` block by block (the online softmax). A layer
    with a learned sink (gpt-oss) has it in each row's normaliser: ``sink_mass`` is its mean
    ``π``, and the other statistics are over the keys, whose weights sum to ``1 − π`` (as the
    dense route's; :mod:`attnsym.audits.stream`).

    Parameters
    ----------
    model : Model
        A loaded model (NumPy backend), any family.
    text_or_ids : str or sequence of int
        A text (tokenized with special tokens, refused past the model's positions) or token ids.
    per_row : bool, default False
        Also keep the per-row arrays (``HeadStats.rows``).
    induction : bool or InductionScores, default True
        Fill ``induction_mass`` and ``duplicate_mass`` from the repeated random probe
        (:func:`induction_probe`, decoders only; computed here unless given); False: NaN.
    block : int, default 256
        Query rows and key columns per block.
    threads : int, optional
        Query blocks on this many threads (default: the CPUs this process may use, at most 8),
        BLAS at one thread meanwhile.
    progress : bool, optional
        A progress bar per layer on standard error (default: when it is a terminal).
    map_of : (layer, head), optional
        Write this head's full ``(n, n)`` weights to ``map_to``, a ``.npy`` file (float32, a
        memory map: the map never sits in memory). Refused if the file exists.
    map_to : path, optional
    spread : bool, default False
        With ``per_row``: also the per-row statistics of the scores themselves
        (:data:`attnsym.audits.stream.SPREAD_STATISTICS`: allowed keys, centred ℓ2 norm, range),
        what the entropy and dispersion bounds take.

    Returns
    -------
    HeadStats

    Raises
    ------
    TextError
        A blank text, a text past the model's context, bad ids.
    ModelError
        A model not on the NumPy backend.
    SpecError
        A bad ``block``, ``threads``, ``map_of`` / ``map_to``, ``spread`` without ``per_row``.

    Examples
    --------
    >>> m = at.models.packaged_model()
    >>> s = m.head_stats("The cat sat on the mat.")
    >>> s.tokens, s.layers, s.heads
    (9, 6, 12)
    >>> r = s.records()[0]
    >>> sorted(r)[:4], round(r["self_mass"] + 0.0, 3) >= 0
    (['duplicate_mass', 'entropy', 'first_token_mass', 'head'], True)
    """
    per_row, spread, block, threads = _options(model, per_row, spread, block, threads)
    ids = _ids(model, text_or_ids)
    n, L = int(ids.size), len(model.config.blocks)
    target = _map_target(map_of, map_to, L, model.config, n)
    collect = _Collector(L, model.config.blocks[0].attention.heads, n, per_row, spread)
    with _progress_bar(progress, L) as bar, threadpool_limits(limits=1, user_api="blas"):
        def core(k: int, layer: BoundLayer, Qh, Kh, Vh):
            task = bar.add_task(f"layer {k + 1}/{L}", total=-(-n // block))
            head_map = None if target is None or target[0] != k else (target[1], target[2])
            Z, layer_rows = stream_layer(layer, Qh, Kh, Vh, block=block, threads=threads, spread=spread,
                                         on_block=lambda: bar.advance(task), head_map=head_map)
            bar.remove_task(task)
            collect(k, layer_rows)
            return Z

        forward_streamed(model.config, model.weights, ids[None, :], core)
    if target is not None:
        target[2].flush()
        target = None  # its last reference: the memory map closes before it is moved into place
        assert map_to is not None  # a target is made only with map_to
        os.replace(_temp_name(Path(map_to)), Path(map_to))
    _induction_columns(model, collect.means, induction)
    for v in collect.means.values():
        v.setflags(write=False)
    return HeadStats(model=model.name, revision=revision(model), tokens=n, means=collect.means, rows=collect.rows)


def _options(model, per_row, spread, block, threads) -> tuple[bool, bool, int, int]:
    """The checked ``per_row``, ``spread``, ``block`` and ``threads`` (default: the CPUs this process may use, ≤ 8)."""
    per_row, spread = boolean("per_row", per_row), boolean("spread", spread)
    if spread and not per_row:
        raise SpecError("spread=True gives per-row arrays: pass per_row=True with it")
    block = positive_int("block", block)
    if threads is None:
        threads = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
    threads = positive_int("threads", threads)
    if not isinstance(model.weights.word, np.ndarray):
        raise ModelError(f"head_stats runs on NumPy weights; load {model.name} with backend='numpy'")
    return per_row, spread, block, threads


class _Collector:
    """Each layer's means (and per-row arrays) as its streamed pass ends."""

    def __init__(self, L: int, H: int, n: int, per_row: bool, spread: bool) -> None:
        self.means = {name: np.full((L, H), np.nan) for name in STATISTICS}
        names = ROW_STATISTICS + (SPREAD_STATISTICS if spread else ())
        self.rows = {name: np.full((L, H, n), np.nan) for name in names} if per_row else None

    def __call__(self, k: int, layer_rows: LayerRows) -> None:
        for name, v in layer_rows.means().items():
            if name in self.means:
                self.means[name][k] = v[0]
        if self.rows is not None:
            for name, v in layer_rows.values.items():
                self.rows[name][k] = v[0]


def _induction_columns(model, means: dict[str, np.ndarray], induction) -> None:
    """Fill ``induction_mass`` and ``duplicate_mass`` from the probe (``induction``: True, False or the scores)."""
    probe = induction_probe(model) if induction is True else (induction or None)
    if probe is None:
        return
    shape = means["entropy"].shape
    if not isinstance(probe, InductionScores) or probe.induction.shape != shape:
        raise SpecError(f"induction must be True, False or InductionScores of this model's {shape[0]} x {shape[1]} "
                        f"heads (got {type(probe).__name__})")
    means["induction_mass"] = np.array(probe.induction, dtype=np.float64)
    means["duplicate_mass"] = np.array(probe.duplicate, dtype=np.float64)


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.attnsym-{os.getpid()}.tmp")


def _map_target(map_of, map_to, L: int, plan, n: int):
    """``(layer, head, memory map)`` for ``map_of`` / ``map_to``, or None."""
    if map_of is None and map_to is None:
        return None
    if map_of is None or map_to is None:
        raise SpecError("map_of=(layer, head) and map_to=path go together (got only one)")
    H = plan.blocks[0].attention.heads
    try:
        k, h = (int(v) for v in map_of)
    except (TypeError, ValueError):
        raise SpecError(f"map_of must be (layer, head) (got {map_of!r})") from None
    if not (0 <= k < L and 0 <= h < H):
        raise SpecError(f"map_of must name a layer in 0..{L - 1} and a head in 0..{H - 1} (got {map_of!r})")
    path = Path(map_to)
    if path.suffix != ".npy":
        raise SpecError(f"map_to must be a .npy file (got {str(path)!r})")
    refuse_existing([path], overwrite=False)
    out = np.lib.format.open_memmap(_temp_name(path), mode="w+", dtype=np.float32, shape=(n, n))
    return k, h, out
