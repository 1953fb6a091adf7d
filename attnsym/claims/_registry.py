"""The claim registry: a plain dict of :class:`Claim` built from the built-in claim modules, plus user claims.

A claim check is a plain function ``check(ctx: CheckContext) -> Evidence``. The built-in ones
are listed explicitly (each module of :mod:`attnsym.claims.builtin` ends with a tuple
``CLAIMS``, :data:`attnsym.claims.builtin.BUILTIN` joins them); nothing registers itself by
being imported. Users add their own claims with :func:`register` or the :func:`claim` decorator.

:func:`verify_all` checks several claims, one after another or in forked worker processes
(``jobs``): the checks are independent of one another (each derives all its randomness from
the seed and its own keys, :meth:`CheckContext.seed_sequence`), so the evidence does not depend
on which process ran which claim, nor in which order; it comes back in the order asked for.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import pickle
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import sympy as sp

from .._checks import non_negative_int, positive_int
from .._gc import tune as tune_gc
from .._gc import tuned as tuned_gc
from ..errors import SpecError, SpecTypeError
from ..plots.files import import_renderer, resampled_png
from ._evidence import VERDICTS, CheckContext, Claim, ClaimFailed, Evidence, RenderedFigure, UnknownClaimError, Verdict
from ._schedule import dispatch_order
from .builtin import BUILTIN
from .catalogue import catalogue
from .report import figure_files, json_parts

__all__ = [
    "CLAIMS",
    "CLAIM_ORDER",
    "VERDICTS",
    "CheckContext",
    "Claim",
    "ClaimFailed",
    "Evidence",
    "UnknownClaimError",
    "claim",
    "default_jobs",
    "ordered_ids",
    "register",
    "verify",
    "verify_all",
]

#: The ids of the shipped claims list (``claims.toml``) in its order; :func:`verify_all` reports the
#: built-in claims in this order, then user-registered claims in registration order.
CLAIM_ORDER: tuple[str, ...] = tuple(e.id for e in catalogue())

#: id -> Claim: the built-in claims (in the order of the claims list), then user claims in registration order
CLAIMS: dict[str, Claim] = {c.id: c for c in sorted(BUILTIN, key=lambda c: CLAIM_ORDER.index(c.id))}


def register(entry: Claim, *, replace_existing: bool = False) -> Claim:
    """Add a :class:`Claim` to the registry (what :func:`claim` does for a decorated function).

    Raises
    ------
    ValueError
        ``entry.id`` is already registered and ``replace_existing`` is false.
    """
    if not isinstance(entry, Claim):
        raise SpecTypeError(f"entry must be a Claim (got {type(entry).__name__})")
    if entry.id in CLAIMS and not replace_existing:
        raise SpecError(f"claim {entry.id!r} is already registered; pass replace_existing=True to replace it")
    CLAIMS[entry.id] = entry
    return entry


def claim(claim_id: str, statement: str, *, expected: Verdict = "holds", source: str = "",
          replace_existing: bool = False):
    """Register a check function under ``claim_id`` (a decorator; see :func:`register`).

    Examples
    --------
    >>> @claim("doc-example", "One plus one is two.")
    ... def _check(ctx):
    ...     return Evidence("doc-example", "One plus one is two.", "holds" if 1 + 1 == 2 else "fails",
    ...                     method="arithmetic", summary="1 + 1 = 2")
    >>> verify("doc-example").verdict
    'holds'
    >>> del CLAIMS["doc-example"]
    """
    if not isinstance(claim_id, str) or not claim_id:
        raise SpecError(f"claim_id must be a non-empty string (got {claim_id!r})")
    if expected not in VERDICTS:
        raise SpecError(f"expected must be one of {VERDICTS} (got {expected!r})")

    def decorate(check: Callable[[CheckContext], Evidence]) -> Callable[[CheckContext], Evidence]:
        register(Claim(claim_id, statement, check, expected, source), replace_existing=replace_existing)
        return check

    return decorate


def verify(claim_id: str, *, seed: int = 0, quick: bool = False, strict: bool = False,
           progress: Callable[[int, int], None] | None = None) -> Evidence:
    """Check one claim and return its :class:`Evidence`.

    Parameters
    ----------
    claim_id : str
        A registered id (``list(attnsym.claims.CLAIMS)`` lists them).
    seed : int, default 0
        All randomness of the check derives from it; the same seed gives the same evidence.
    quick : bool, default False
        Smallest meaningful sizes and sample counts.
    strict : bool, default False
        Raise :class:`ClaimFailed` when the verdict is not the expected one.
    progress : callable ``(done, total) -> None``, optional
        Called by long checks as they advance.

    Raises
    ------
    UnknownClaimError
        ``claim_id`` is not registered (also a ``KeyError``).
    ClaimFailed
        ``strict=True`` and the verdict is not the expected one.

    Examples
    --------
    >>> ev = verify("variance-scaling", quick=True)
    >>> ev.verdict, ev.as_expected
    ('holds-under-conditions', True)
    """
    seed = non_negative_int("seed", seed)
    if claim_id not in CLAIMS:
        raise UnknownClaimError(f"unknown claim {claim_id!r}; known claims: {', '.join(ordered_ids())}")
    entry = CLAIMS[claim_id]
    start = time.perf_counter()
    evidence = entry.check(CheckContext(seed=seed, quick=bool(quick), progress=progress))
    if not isinstance(evidence, Evidence):
        raise SpecTypeError(f"the check of claim {claim_id!r} must return an Evidence (got {type(evidence).__name__})")
    evidence = replace(evidence, claim=claim_id, statement=evidence.statement or entry.statement,
                       expected=entry.expected, source=evidence.source or entry.source,
                       seconds=time.perf_counter() - start)
    if strict and not evidence.as_expected:
        raise ClaimFailed(f"claim {claim_id!r}: expected {entry.expected}, got {evidence.verdict}: {evidence.summary}")
    return evidence


def ordered_ids() -> list[str]:
    """Every registered claim id: those of the claims list in its order, then user claims in registration order."""
    builtin = [cid for cid in CLAIM_ORDER if cid in CLAIMS]
    return builtin + [cid for cid in CLAIMS if cid not in CLAIM_ORDER]


def available_cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity`` where it exists)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _fork_context():
    """The ``fork`` start method, or None where the platform lacks it or makes it unsafe (macOS, Windows)."""
    if os.name != "posix" or os.uname().sysname == "Darwin":
        return None
    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - a POSIX system without fork
        return None


def default_jobs() -> int:
    """Worker processes for :func:`verify_all` and ``attnsym verify`` by default: one per available CPU (1 without fork).

    >>> default_jobs() >= 1
    True
    """
    return available_cpus() if _fork_context() is not None else 1


_BASIC_SLOTS = frozenset(sp.Basic.__slots__)


class _ExactPickler(pickle.Pickler):
    """Pickles a SymPy expression node by node as it is, so that it unpickles without being re-evaluated.

    SymPy pickles an expression as its class and arguments and rebuilds it by calling the class,
    which evaluates: an equation kept unevaluated for display (``Eq(PE, Matrix(...))``, an
    unexpanded parameter count ``h·(d/h)·d``) would come back simplified, or as ``False``. Here
    every compound node is rebuilt with ``Basic.__new__`` from exactly its arguments plus the
    attributes its constructor set (``is_commutative``, ``nargs``); atoms (symbols, numbers) and
    matrices keep SymPy's own pickling, which is exact for them. A test compares ``srepr`` of
    every expression of every claim before and after.
    """

    def reducer_override(self, obj):
        if isinstance(obj, sp.Basic) and not obj.is_Atom and not isinstance(obj, sp.MatrixBase):
            return _rebuild_node, (type(obj), obj.args, _node_state(obj))
        return NotImplemented


def _node_state(obj: sp.Basic) -> dict:
    state = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in _BASIC_SLOTS and hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
    return state


def _rebuild_node(cls: type, args: tuple, state: dict) -> sp.Basic:
    node = sp.Basic.__new__(cls, *args)
    for name, value in state.items():
        object.__setattr__(node, name, value)
    return node


def _check_in_worker(task: tuple[tuple[int, ...], tuple[str, ...], int, bool, tuple[str, ...], tuple[int, ...], bool]
                     ) -> list[tuple[int, bytes]]:
    """A worker's part: check claims one after another, each pickled exactly; figures rendered in ``formats``."""
    indices, claim_ids, seed, quick, formats, preview_dpis, render_json = task
    out = []
    for index, claim_id in zip(indices, claim_ids, strict=True):
        ev = verify(claim_id, seed=seed, quick=quick)
        figures: dict[str, Callable[[], Any]] = {}
        for name, build in ev.figures.items():
            files = figure_files(build, formats)
            previews = {dpi: resampled_png(files["png"], dpi) for dpi in preview_dpis} if "png" in files else {}
            figures[name] = RenderedFigure(claim_id, name, files, previews)
        ev = replace(ev, figures=figures)
        if render_json:
            object.__setattr__(ev, "rendered", json_parts(ev))  # frozen: set once, before it leaves the worker
        buffer = io.BytesIO()
        _ExactPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(ev)
        out.append((index, buffer.getvalue()))
    return out


def verify_all(*, seed: int = 0, quick: bool = False, ids: Sequence[str] | None = None, jobs: int = 1,
               formats: Sequence[str] = (), previews: Sequence[int] = (), render_json: bool = False,
               progress: Callable[[str], None] | None = None,
               on_result: Callable[[Evidence], None] | None = None,
               claim_progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> list[Evidence]:
    """Check every registered claim (or those in ``ids``), CLAIMS.md order first (see :func:`ordered_ids`).

    Parameters
    ----------
    seed, quick
        As for :func:`verify`.
    ids : sequence of str, optional
        The claims to check, in the order their evidence is returned (default: :func:`ordered_ids`).
    jobs : int, default 1
        Worker processes. 1 checks the claims one after another in this process. More start a
        pool of ``jobs`` processes with ``fork`` (they inherit the imported modules and the
        claims a user registered), handed the claims longest first
        (:func:`attnsym.claims._schedule.dispatch_order`); the checks and their sizes are the
        same, only the wall time differs. Without ``fork`` (Windows, macOS) it is 1.
        :func:`default_jobs` gives one per CPU.
    formats : sequence of str, default ()
        With ``jobs > 1``: the figure formats ("png", "svg") each worker renders; the evidence
        holds them as :class:`~attnsym.claims.RenderedFigure` (empty: the figures' names only).
    previews : sequence of int, default ()
        With ``jobs > 1`` and "png" in ``formats``: each worker also resamples its PNGs to these
        resolutions (dots per inch; :attr:`RenderedFigure.previews`), as the explorer page
        inlines them, so that the page does not resample every figure after the workers are done.
    render_json : bool, default False
        With ``jobs > 1``: each worker also renders the JSON form of its claims' details and
        equations (:attr:`Evidence.rendered`), so that ``to_json`` does not print every SymPy
        object in this process after the workers are done. The JSON is the same either way.
    progress : callable ``(claim_id) -> None``, optional
        Called before each check starts (``jobs == 1`` only).
    on_result : callable ``(Evidence) -> None``, optional
        Called as each check finishes (in finishing order when ``jobs > 1``).
    claim_progress : callable ``(claim_id) -> ((done, total) -> None) or None``, optional
        With ``jobs == 1``: what it returns for a claim receives that check's own progress.

    Examples
    --------
    >>> [ev.verdict for ev in verify_all(ids=["softmax-jacobian", "gelu"], quick=True, jobs=2)]
    ['holds', 'holds']
    """
    chosen = ordered_ids() if ids is None else list(ids)
    unknown = [cid for cid in chosen if cid not in CLAIMS]
    if unknown:
        raise UnknownClaimError(f"unknown claim(s) {', '.join(map(repr, unknown))}; known claims: {', '.join(ordered_ids())}")
    seed = non_negative_int("seed", seed)
    jobs = positive_int("jobs", jobs)
    preview_dpis = tuple(positive_int("previews", dpi) for dpi in previews)
    context = _fork_context()
    jobs = min(jobs, len(chosen)) if context is not None else 1
    if jobs <= 1:
        return _verify_in_order(chosen, seed, quick, progress, on_result, claim_progress)
    return _verify_in_workers(context, jobs, chosen, seed=seed, quick=quick, formats=tuple(formats),
                              previews=preview_dpis, render_json=bool(render_json), on_result=on_result)


def _verify_in_order(chosen: Sequence[str], seed: int, quick: bool, progress: Callable[[str], None] | None,
                     on_result: Callable[[Evidence], None] | None,
                     claim_progress: Callable[[str], Callable[[int, int], None] | None] | None) -> list[Evidence]:
    """:func:`verify_all` with one job: the claims one after another in this process."""
    results = []
    with tuned_gc():  # SymPy's millions of short-lived objects (attnsym._gc)
        for claim_id in chosen:
            if progress is not None:
                progress(claim_id)
            ev = verify(claim_id, seed=seed, quick=quick,
                        progress=claim_progress(claim_id) if claim_progress is not None else None)
            results.append(ev)
            if on_result is not None:
                on_result(ev)
    return results


def _verify_in_workers(context: Any, jobs: int, chosen: Sequence[str], *, seed: int, quick: bool,
                       formats: tuple[str, ...], previews: tuple[int, ...], render_json: bool,
                       on_result: Callable[[Evidence], None] | None) -> list[Evidence]:
    """:func:`verify_all` with ``jobs`` forked workers, each rendering its figures and JSON as asked."""
    # handed out longest first (claims._schedule): no long check starts last while the other workers idle
    tasks = [(tuple(task), tuple(chosen[i] for i in task), seed, bool(quick), formats, previews, render_json)
             for task in dispatch_order(chosen, quick=bool(quick))]
    if formats:  # imported once here, not again in each worker that draws
        import_renderer()
    done: dict[int, Evidence] = {}
    with _worker_pool(context, jobs) as pool:
        for results in pool.imap_unordered(_check_in_worker, tasks, chunksize=1):
            for index, data in results:
                done[index] = ev = pickle.loads(data)  # bytes a worker forked from this process wrote
                if on_result is not None:
                    on_result(ev)
    return [done[i] for i in range(len(chosen))]


def _worker_pool(context: Any, jobs: int) -> Any:
    """A pool of ``jobs`` forked workers that inherit this process's heap frozen (see :mod:`attnsym._gc`)."""
    with warnings.catch_warnings():
        # Python >= 3.12 warns on fork() in a process with threads (BLAS keeps some; their library
        # re-initialises them in the child). The workers only compute and send back data.
        warnings.simplefilter("ignore", DeprecationWarning)
        gc.freeze()  # the workers inherit this heap frozen: their collector never scans it
        try:
            return context.Pool(jobs, initializer=tune_gc)
        finally:
            gc.unfreeze()
