"""The order in which :func:`~attnsym.claims.verify_all` hands claims to worker processes: longest first.

With worker processes, each takes the next claim when it finishes one; if a long claim is handed
out last, one worker runs it while the others sit idle (the wall time is the busiest worker's).
Handing out the longest claims first (longest-processing-time-first scheduling) keeps the
workers' loads even. The costs below are hints, not limits: the CPU seconds each built-in check
took in one process (``attnsym verify [--quick] --jobs 1 --json --timings``), rounded. They only
decide the order of dispatch: every claim's evidence depends on the seed and its own keys alone
(:meth:`~attnsym.claims.CheckContext.seed_sequence`), never on the order or the process that ran
it, and the results come back in the order asked for. A claim without a hint (a user's claim)
is handed out first: its cost is unknown, so it is not left for the end.

Claims that share work inside a process (:data:`SHARED`) go to a worker together, one after the
other: ``parallelism`` reads the Table 1 graphs that ``global-path-length`` built (a cache in
:mod:`attnsym.claims.builtin.table1`); split over two workers each would build them. The two
numeric searches of :mod:`attnsym.numeric.softmax_search` (``entropy-lower-bound``,
``softmax-jacobian-norm``) are the only checks that import ``scipy.optimize`` (~0.4 s CPU);
together, one worker imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["COST_HINTS", "SHARED", "dispatch_order"]

#: claim id -> (CPU seconds with --quick, CPU seconds in full), measured with --jobs 1 and rounded
COST_HINTS: dict[str, tuple[float, float]] = {
    "variance-scaling": (0.9, 7.2),
    "softmax-saturation": (1.0, 3.6),
    "dynamic-routing": (0.15, 0.25),
    "hypernetwork-view": (0.16, 0.9),
    "two-token-example": (0.27, 0.25),
    "global-path-length": (0.05, 0.8),
    "parallelism": (0.01, 0.01),
    "quadratic-cost": (0.84, 1.1),
    "qk-asymmetry": (0.09, 0.23),
    "permutation-equivariance": (0.03, 1.8),
    "sinusoidal-positions": (0.16, 0.22),
    "multi-head": (0.08, 2.4),
    "weights-not-preset": (0.19, 0.74),
    "softmax-jacobian": (0.15, 0.25),
    "kv-cache": (0.03, 0.08),
    "blockwise-exact": (0.15, 0.36),
    "no-locality-bias": (0.31, 3.7),
    "gelu": (0.52, 0.8),
    "rank-collapse": (0.14, 0.5),
    "entropy-lower-bound": (0.97, 0.97),
    "key-bias-invariance": (0.28, 0.43),
    "softmax-jacobian-norm": (0.07, 0.19),
    "dispersion": (0.06, 0.09),
    "rank-one-input": (0.16, 0.27),
    "rope-relative": (0.09, 0.89),
    "rope-shift-invariance": (0.51, 0.94),
    "rope-long-range-decay": (0.03, 0.3),
    "alibi-recency": (0.13, 0.59),
}


#: claims checked one after the other by one worker, because the later ones reuse what the first computed
SHARED: tuple[tuple[str, ...], ...] = (("global-path-length", "parallelism"),
                                       ("entropy-lower-bound", "softmax-jacobian-norm"))


def dispatch_order(ids: Sequence[str], *, quick: bool) -> list[list[int]]:
    """Positions in ``ids`` as worker tasks: the claims of a task run in one worker, in the task's order.

    Each claim is a task of its own but those of a :data:`SHARED` group (one task, in the
    group's order); tasks are sorted by their summed hint, longest first, a task with a claim
    without a hint before all. Ties keep the order of ``ids`` (a stable sort), so the order is the
    same on every run.

    >>> ids = ["dispersion", "variance-scaling", "my-claim", "parallelism", "gelu", "global-path-length"]
    >>> [[ids[i] for i in task] for task in dispatch_order(ids, quick=False)]
    [['my-claim'], ['variance-scaling'], ['global-path-length', 'parallelism'], ['gelu'], ['dispersion']]
    """
    column = 0 if quick else 1
    tasks: list[list[int]] = []
    grouped: set[int] = set()
    for i, cid in enumerate(ids):
        if i in grouped:
            continue
        group = next((g for g in SHARED if cid in g), (cid,))
        task = [i] + [j for j in range(i + 1, len(ids)) if j not in grouped and ids[j] in group and ids[j] != cid]
        task.sort(key=lambda j: group.index(ids[j]))  # stable: repeated ids keep their order
        grouped.update(task)
        tasks.append(task)

    def cost(task: list[int]) -> float:
        hints = [COST_HINTS.get(ids[i]) for i in task]
        return float("inf") if None in hints else sum(h[column] for h in hints if h is not None)

    return sorted(tasks, key=cost, reverse=True)
