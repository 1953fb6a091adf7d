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
:mod:`attnsym.claims.builtin.table1`); split over two workers each would build them. And a few
libraries are imported by the checks that use them, on first use, by each worker that runs one:
``scipy.optimize`` (~0.35 s CPU; only ``entropy-lower-bound`` and ``softmax-jacobian-norm``, the
numeric searches of :mod:`attnsym.numeric.softmax_search`), ``sympy.physics.units`` (~0.2-0.3 s;
imported by SymPy's ``simplify`` and ``solve``: of the quick checks only ``weights-not-preset`` and
``entropy-lower-bound`` reach it) and ``scipy.special`` (~0.15 s; those two searches,
``softmax-saturation``, ``gelu``): these five checks go to one worker, which imports each library
once.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["COST_HINTS", "SHARED", "dispatch_order"]

#: claim id -> (CPU seconds with --quick, CPU seconds in full): each check's CPU time in a worker process of
#: ``attnsym verify`` (two workers, this machine, cold caches included), rounded
COST_HINTS: dict[str, tuple[float, float]] = {
    "variance-scaling": (0.45, 7.1),
    "softmax-saturation": (0.95, 3.6),
    "dynamic-routing": (0.05, 0.45),
    "hypernetwork-view": (0.2, 1.25),
    "two-token-example": (0.05, 0.2),
    "global-path-length": (0.1, 1.2),
    "parallelism": (0.01, 0.01),
    "quadratic-cost": (0.85, 1.6),
    "qk-asymmetry": (0.1, 0.2),
    "permutation-equivariance": (0.05, 0.85),
    "sinusoidal-positions": (0.15, 0.15),
    "multi-head": (0.6, 4.5),
    "weights-not-preset": (0.35, 1.0),
    "softmax-jacobian": (0.1, 0.2),
    "kv-cache": (0.03, 0.05),
    "blockwise-exact": (0.2, 0.45),
    "no-locality-bias": (0.4, 1.7),
    "gelu": (0.4, 0.5),
    "rank-collapse": (0.2, 0.5),
    "entropy-lower-bound": (1.0, 1.6),
    "key-bias-invariance": (0.35, 0.5),
    "softmax-jacobian-norm": (0.1, 0.25),
    "dispersion": (0.05, 0.1),
    "rank-one-input": (0.2, 0.3),
    "rope-relative": (0.15, 0.75),
    "rope-shift-invariance": (0.4, 0.9),
    "rope-long-range-decay": (0.03, 0.17),
    "alibi-recency": (0.1, 0.5),
    "length-scaling": (0.3, 0.4),
    "off-by-one-sink": (0.4, 0.45),
    "softcap-facts": (0.3, 0.3),
    "non-identifiable": (0.05, 1.0),
    "low-rank-bottleneck": (0.1, 0.1),
    "qk-norm-bound": (0.15, 1.0),
    "icl-gradient-descent": (0.1, 0.3),
    "gqa-equals-repeated-kv": (0.1, 0.1),
    "rope-pairing-permutation": (0.02, 0.03),
    "window-banded-mask": (0.02, 0.4),
    "not-lipschitz": (0.1, 0.35),
    "kernel-smoother": (0.15, 0.2),
    "performer-unbiased": (0.1, 0.45),
    "linear-attention-rnn": (0.1, 0.2),
    "mup-scaling": (0.1, 0.7),
    "sink-semantics": (1.0, 1.4),
    "mla-absorbed": (0.1, 0.3),
    "nope-position-blind": (0.25, 0.6),
}


#: claims checked one after the other by one worker, because the later ones reuse what the first computed
SHARED: tuple[tuple[str, ...], ...] = (
    ("global-path-length", "parallelism"),
    ("entropy-lower-bound", "softmax-jacobian-norm", "weights-not-preset", "softmax-saturation", "gelu"),
)


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
