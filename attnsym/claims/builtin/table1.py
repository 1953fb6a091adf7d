"""Claims about Table 1 of Vaswani et al. (2017): ``global-path-length``, ``parallelism``.

Each registered claim calls the parametrised check :func:`check_table1_column` with the statement
of the shipped claims list; the tests call it with deliberately wrong growths and see it fail. The
mathematics lives in :mod:`attnsym.graphs.architectures` (Table 1 on real computation graphs) and
:mod:`attnsym.graphs.growth` (the growth decision over Table 1's candidates); the figure in
:mod:`attnsym.plots.complexity` draws the same table.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ... import plots
from ...errors import SpecError
from ...graphs.architectures import PAPER_TABLE1, table1
from ...graphs.growth import GROWTH_CLASS
from .._evidence import CheckContext, Evidence, Verdict
from ..catalogue import builtin_claim, statement

__all__ = ["check_table1_column"]

PATH_STATEMENT = statement("global-path-length")
PARALLEL_STATEMENT = statement("parallelism")

#: growths (candidates of :data:`attnsym.graphs.growth.CANDIDATES`) each claim asserts, per architecture
PATH_CLAIMED = {"self_attention": "O(1)", "recurrent": "O(n)", "convolution": "O(log_k n)"}
PARALLEL_CLAIMED = {"self_attention": "O(1)", "recurrent": "O(n)"}

#: the only variants a claimed architecture may be satisfied by (exact names; nothing matched by suffix):
#: "convolutions O(log_k n)" holds for dilated kernels only — restricted self-attention is a different row of
#: Table 1, not a variant of self-attention
VARIANTS = {"convolution": ("dilated_convolution",)}

#: Table 1's one convolutional row prints O(log_k n) (dilated kernels); O(n/k) for contiguous kernels is from §4
_PATH_SOURCE = {"convolution": " (§4 text, contiguous kernels; Table 1's convolutional row: O(log_k n), dilated)"}


@functools.lru_cache(maxsize=4)
def _table1(ns: tuple[int, ...], k: int, r: int) -> tuple:
    """Table 1 on computation graphs, shared by ``global-path-length`` and ``parallelism`` (read-only)."""
    return tuple(table1(list(ns), k=k, r=r))


def check_table1_column(ctx: CheckContext, *, column: str = "path", claimed: Mapping[str, str] | None = None,
                        k: int = 3, r: int = 4) -> Evidence:
    """Measure one column of Table 1 (Vaswani et al. 2017) on real computation graphs and compare with ``claimed``.

    Parameters
    ----------
    column : {"path", "sequential"}
        ``"path"`` — maximum path length (claim ``global-path-length``); ``"sequential"`` —
        sequential operations, the depth of one layer's computation DAG (claim ``parallelism``).
    claimed : mapping, optional
        Architecture -> growth the statement asserts, a candidate of
        :data:`attnsym.graphs.growth.CANDIDATES` (``"O(1)"``, ``"O(log_k n)"``, ``"O(n/k)"``, ...).
    k, r : int
        Kernel width of the convolutions and window of restricted self-attention.

    The growth of each architecture is decided by :func:`attnsym.graphs.growth.decide_growth`
    (every candidate with its constant; "undecided" when the values do not single out one class).
    The verdict is "holds" when every claimed class is measured for the architecture named
    (matched exactly), "holds-under-conditions" when it is measured only for a declared variant
    (:data:`VARIANTS`: a convolution reaches O(log_k n) only when dilated), and "fails" otherwise —
    also when a growth is undecided.
    """
    if column not in ("path", "sequential"):
        raise SpecError(f"column must be 'path' or 'sequential' (got {column!r})")
    path = column == "path"
    claimed = dict((PATH_CLAIMED if path else PARALLEL_CLAIMED) if claimed is None else claimed)
    ns = list(range(2, 17)) if ctx.quick else list(range(2, 41))
    rows = _table1(tuple(ns), k, r)
    key = "path" if path else "sequential"
    values = {row["arch"]: row[f"{key}_values"] for row in rows}
    measured = {row["arch"]: row[key] for row in rows}  # table1's decide_growth over the same ns, k, r
    table = [{"architecture": arch, "measured growth": dec.growth, "explained by": ", ".join(dec.explained_by) or "—",
              "spread of y − f for the claimed candidate": (round(dec.spread[claimed[arch]], 3)
                                                            if claimed.get(arch) in dec.spread else None),
              "paper (Table 1)": PAPER_TABLE1[arch][1 if path else 0] + (_PATH_SOURCE.get(arch, "") if path else ""),
              f"values at n = {ns[0]}, {ns[len(ns) // 2]}, {ns[-1]}": (values[arch][0], values[arch][len(ns) // 2],
                                                                       values[arch][-1]),
              "claimed": claimed.get(arch)} for arch, dec in measured.items()]
    conditions, failures = [], []
    for arch, growth in claimed.items():
        if arch not in measured:
            raise KeyError(f"claimed has an unknown architecture {arch!r}; known: {sorted(measured)}")
        if growth not in GROWTH_CLASS:
            raise SpecError(f"claimed growth for {arch!r} must be one of {sorted(GROWTH_CLASS)} (got {growth!r})")
        want = GROWTH_CLASS[growth]
        if measured[arch].growth == want:
            continue
        variants = [a for a in VARIANTS.get(arch, ()) if measured[a].growth == want]
        if variants:
            conditions.append(f"{arch}: {growth} only for the variant {', '.join(variants)} "
                              f"(the plain one measures {measured[arch].growth}: {', '.join(measured[arch].explained_by)})")
        else:
            failures.append(f"{arch}: claimed {growth}, measured {measured[arch].growth}"
                            f" (explained by {', '.join(measured[arch].explained_by) or 'no candidate'})")
    verdict: Verdict = "fails" if failures else "holds-under-conditions" if conditions else "holds"
    what = "maximum path length" if path else "sequential operations (depth of one layer's DAG)"
    conditions.append(f"{what} measured by networkx on the computation graphs for n = {ns[0]}…{ns[-1]} "
                      f"(kernel k = {k}, restriction r = {r}); growth decided over every candidate of Table 1 with its "
                      f"constant: {next(iter(measured.values())).rule}")
    summary = "; ".join(f"{arch} {measured[arch].growth} ({values[arch][0]}→{values[arch][-1]})" for arch in claimed)

    def figure():
        return plots.path_length_figure(ns, {row["arch"]: row["path_values"] for row in rows},
                                        {row["arch"]: row["sequential_values"] for row in rows},
                                        panels=("path",) if path else ("depth",))  # one figure per claim
    return Evidence(
        "global-path-length" if path else "parallelism", PATH_STATEMENT if path else PARALLEL_STATEMENT, verdict,
        method="graph computation (networkx) + growth decision over Table 1's candidates",
        summary=summary + ("" if not failures else "; FAILED: " + "; ".join(failures)),
        conditions=tuple(conditions),
        details={"table": table, "ns": ns, "k": k, "r": r, "failures": failures},
        figures={"table1": figure},
    )


def _global_path_length(ctx: CheckContext) -> Evidence:
    return check_table1_column(ctx, column="path")


def _parallelism(ctx: CheckContext) -> Evidence:
    return check_table1_column(ctx, column="sequential")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("global-path-length", _global_path_length),
    builtin_claim("parallelism", _parallelism),
)
