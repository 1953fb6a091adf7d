"""Claims about Table 1 of Vaswani et al. (2017): ``global-path-length``, ``parallelism``.

Each registered claim calls the parametrised check :func:`check_table1_column` with the statement
of the shipped claims list; the tests call it with deliberately wrong growths and see it fail. The
mathematics lives in :mod:`attnsym.graphs.architectures` (Table 1 on real computation graphs) and
:mod:`attnsym.graphs.growth` (the growth decision over Table 1's candidates); the figure in
:mod:`attnsym.plots.complexity` draws the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from ... import plots
from ...errors import SpecError
from ...graphs.architectures import PAPER_TABLE1
from ...graphs.growth import GROWTH_CLASS
from ...studies import table1 as table1_study
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


def check_table1_column(ctx: CheckContext, *, column: str = "path", claimed: Mapping[str, str] | None = None,
                        k: int = 3, r: int = 4) -> Evidence:
    """Measure one column of Table 1 (Vaswani et al. 2017) on real computation graphs and compare with ``claimed``.

    A verdict on :func:`attnsym.studies.table1.study`.

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

    The verdict is "holds" when every claimed class is measured for the architecture named
    (matched exactly), "holds-under-conditions" when it is measured only for a declared variant
    (:data:`VARIANTS`: a convolution reaches O(log_k n) only when dilated), and "fails" otherwise —
    also when a growth is undecided.
    """
    if column not in ("path", "sequential"):
        raise SpecError(f"column must be 'path' or 'sequential' (got {column!r})")
    path = column == "path"
    claimed = dict((PATH_CLAIMED if path else PARALLEL_CLAIMED) if claimed is None else claimed)
    t = table1_study.study(quick=ctx.quick, k=k, r=r)
    conditions, failures = _judge(t, column, claimed)
    verdict: Verdict = "fails" if failures else "holds-under-conditions" if conditions else "holds"
    what = "maximum path length" if path else "sequential operations (depth of one layer's DAG)"
    conditions.append(f"{what} measured by networkx on the computation graphs for n = {t.ns[0]}…{t.ns[-1]} "
                      f"(kernel k = {k}, restriction r = {r}); growth decided over every candidate of Table 1 with its "
                      f"constant: {t.rows[0].growth(column).rule}")
    summary = "; ".join(f"{arch} {row.growth(column).growth} ({row.values(column)[0]}→{row.values(column)[-1]})"
                        for arch in claimed if (row := t.row(arch)) is not None)
    return Evidence(
        "global-path-length" if path else "parallelism", PATH_STATEMENT if path else PARALLEL_STATEMENT, verdict,
        method="graph computation (networkx) + growth decision over Table 1's candidates",
        summary=summary + ("" if not failures else "; FAILED: " + "; ".join(failures)),
        conditions=tuple(conditions),
        details={"table": _table(t, column, claimed), "ns": list(t.ns), "k": k, "r": r, "failures": failures},
        figures={"table1": partial(plots.path_length_figure, list(t.ns),
                                   {row.architecture: list(row.path_values) for row in t.rows},
                                   {row.architecture: list(row.sequential_values) for row in t.rows},
                                   panels=("path",) if path else ("depth",))},  # one figure per claim
    )


def _judge(t: table1_study.Table1Result, column: str, claimed: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The conditions (a claimed growth met only by a declared variant) and failures of ``claimed`` against ``t``."""
    conditions, failures = [], []
    for arch, growth in claimed.items():
        row = t.row(arch)
        if row is None:
            raise KeyError(f"claimed has an unknown architecture {arch!r}; known: {sorted(x.architecture for x in t.rows)}")
        if growth not in GROWTH_CLASS:
            raise SpecError(f"claimed growth for {arch!r} must be one of {sorted(GROWTH_CLASS)} (got {growth!r})")
        want, got = GROWTH_CLASS[growth], row.growth(column)
        if got.growth == want:
            continue
        variants = [a for a in VARIANTS.get(arch, ()) if (v := t.row(a)) is not None and v.growth(column).growth == want]
        if variants:
            conditions.append(f"{arch}: {growth} only for the variant {', '.join(variants)} "
                              f"(the plain one measures {got.growth}: {', '.join(got.explained_by)})")
        else:
            failures.append(f"{arch}: claimed {growth}, measured {got.growth}"
                            f" (explained by {', '.join(got.explained_by) or 'no candidate'})")
    return conditions, failures


def _table(t: table1_study.Table1Result, column: str, claimed: Mapping[str, str]) -> list[dict[str, object]]:
    """The evidence table: per architecture the measured growth, the claimed candidate's spread, the paper's entry."""
    ns, path = t.ns, column == "path"
    mid = len(ns) // 2
    return [{"architecture": row.architecture, "measured growth": row.growth(column).growth,
             "explained by": ", ".join(row.growth(column).explained_by) or "—",
             "spread of y − f for the claimed candidate": (round(row.growth(column).spread[claimed[row.architecture]], 3)
                                                           if claimed.get(row.architecture) in row.growth(column).spread
                                                           else None),
             "paper (Table 1)": PAPER_TABLE1[row.architecture][1 if path else 0]
                                + (_PATH_SOURCE.get(row.architecture, "") if path else ""),
             f"values at n = {ns[0]}, {ns[mid]}, {ns[-1]}": (row.values(column)[0], row.values(column)[mid],
                                                             row.values(column)[-1]),
             "claimed": claimed.get(row.architecture)} for row in t.rows]


def _global_path_length(ctx: CheckContext) -> Evidence:
    return check_table1_column(ctx, column="path")


def _parallelism(ctx: CheckContext) -> Evidence:
    return check_table1_column(ctx, column="sequential")


#: the claims of this module, for the registry (:mod:`attnsym.claims.builtin` lists the modules)
CLAIMS = (
    builtin_claim("global-path-length", _global_path_length),
    builtin_claim("parallelism", _parallelism),
)
