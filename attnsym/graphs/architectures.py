r"""Computation graphs of sequence layers, and Table 1 of Vaswani et al. (2017) computed on them.

Table 1 of *Attention Is All You Need* compares layer types by two graph quantities, both
computed here with networkx on real graphs for a given sequence length ``n``:

* :func:`sequential_depth` — *sequential operations*: the depth (longest path, in edges) of the
  computation DAG of **one layer**. Everything on one level can run in parallel; a recurrent
  layer's chain :math:`h_t = f(h_{t-1}, x_t)` cannot.
* :func:`max_path_length` — *maximum path length*: build the smallest **stack** of such layers
  in which every output position depends on every input position it may depend on, then take
  the longest of the shortest paths from an input position to an output position.

Architectures (``arch``):

``"self_attention"``
    every query sees every key.
``"recurrent"``
    the chain :math:`x_t \to h_t`, :math:`h_{t-1} \to h_t` (causal: output ``i`` depends on inputs ``j <= i``).
``"convolution"``
    causal contiguous kernel of width ``k``: output ``i`` of a layer sees ``i-k+1 .. i``.
``"dilated_convolution"``
    causal kernel ``k`` with dilation ``k**l`` in layer ``l`` (WaveNet): sees ``i - m k^l``, ``m < k``.
``"restricted_self_attention"``
    each query sees the keys within distance ``r``: ``|i - j| <= r``.

Expected growth (Table 1): self-attention O(1)/O(1); recurrent O(n)/O(n); convolution
O(1)/O(n/k) contiguous and O(1)/O(log_k n) dilated; restricted self-attention O(1)/O(n/r).
:func:`table1` measures both columns for ``n = 2 … 64`` and decides each growth with
:func:`attnsym.graphs.growth.decide_growth` (every candidate of Table 1 with its constant).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import networkx as nx

from ..errors import SpecError
from .growth import GROWTH_CLASS, decide_growth

__all__ = [
    "ARCHITECTURES",
    "computation_graph",
    "layer_graph",
    "max_path_length",
    "sequential_depth",
    "table1",
]

ARCHITECTURES = ("self_attention", "recurrent", "convolution", "dilated_convolution", "restricted_self_attention")
_CAUSAL = {"recurrent", "convolution", "dilated_convolution"}

#: the growth given by Vaswani et al. (2017): (sequential operations, maximum path length); Table 1 prints these
#: except for the contiguous convolution, whose O(n/k) path is from section 4 (Table 1's row, O(log_k n), is dilated)
PAPER_TABLE1 = {
    "self_attention": ("O(1)", "O(1)"),
    "recurrent": ("O(n)", "O(n)"),
    "convolution": ("O(1)", "O(n/k)"),
    "dilated_convolution": ("O(1)", "O(log_k n)"),
    "restricted_self_attention": ("O(1)", "O(n/r)"),
}


def _check(arch: str, n: int, k: int, r: int) -> None:
    if arch not in ARCHITECTURES:
        raise SpecError(f"arch must be one of {ARCHITECTURES} (got {arch!r})")
    for name, value, low in (("n", n, 1), ("k", k, 2), ("r", r, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise SpecError(f"{name} must be an integer >= {low} (got {name}={value!r})")


def _sources(arch: str, i: int, n: int, level: int, k: int, r: int) -> Iterable[int]:
    """Positions of level ``level`` that position ``i`` of level ``level + 1`` reads."""
    if arch == "self_attention":
        return range(n)
    if arch == "restricted_self_attention":
        return range(max(0, i - r), min(n, i + r + 1))
    step = k**level if arch == "dilated_convolution" else 1
    return (i - m * step for m in range(k) if i - m * step >= 0)


def layer_graph(arch: str, n: int, *, k: int = 3, r: int = 4, level: int = 0) -> nx.DiGraph:
    """The computation DAG of one layer on ``n`` positions.

    Nodes are ``("x", p)`` (inputs) and ``("y", p)`` (outputs) — for ``"recurrent"`` the
    outputs are the hidden states ``("h", p)``. ``level`` sets the dilation ``k**level`` of a
    dilated convolution.

    >>> G = layer_graph("recurrent", 3)
    >>> nx.dag_longest_path(G)
    [('x', 0), ('h', 0), ('h', 1), ('h', 2)]
    >>> layer_graph("convolution", 4, k=2).number_of_edges()
    7
    """
    _check(arch, n, k, r)
    G = nx.DiGraph(arch=arch, n=n)
    G.add_nodes_from(("x", p) for p in range(n))
    if arch == "recurrent":
        for t in range(n):
            G.add_edge(("x", t), ("h", t))
            if t:
                G.add_edge(("h", t - 1), ("h", t))
        return G
    G.add_nodes_from(("y", p) for p in range(n))
    G.add_edges_from((("x", j), ("y", i)) for i in range(n) for j in _sources(arch, i, n, level, k, r))
    return G


def computation_graph(arch: str, n: int, *, k: int = 3, r: int = 4) -> tuple[nx.DiGraph, list, list]:
    """The smallest stack of layers connecting every output to every input it may depend on.

    Layers are added one at a time until, in the graph built so far, each input position
    reaches every output position it should (all of them; ``j <= i`` for the causal
    architectures). Stacked nodes are ``(level, position)``.

    Returns
    -------
    (G, inputs, outputs)
        The DAG, the input nodes and the output nodes, in position order.

    >>> G, inputs, outputs = computation_graph("convolution", 5, k=3)
    >>> G.graph["layers"], outputs[0]
    (2, (2, 0))
    """
    _check(arch, n, k, r)
    if arch == "recurrent":
        G = layer_graph(arch, n)
        G.graph["layers"] = 1
        return G, [("x", p) for p in range(n)], [("h", p) for p in range(n)]
    G = nx.DiGraph(arch=arch, n=n)
    G.add_nodes_from((0, p) for p in range(n))
    causal = arch in _CAUSAL
    want = [set(range(j, n)) if causal else set(range(n)) for j in range(n)]
    reach = [{j} for j in range(n)]  # positions of the top level each input reaches
    level = 0
    while level == 0 or any(reach[j] != want[j] for j in range(n)):
        if level > 2 * n:  # cannot happen for valid k, r; guards against an endless loop
            raise RuntimeError(f"{arch} did not connect all positions within {level} layers")
        G.add_edges_from(((level, j), (level + 1, i)) for i in range(n) for j in _sources(arch, i, n, level, k, r))
        G.add_nodes_from((level + 1, p) for p in range(n))
        reach = [{v[1] for p in reach[j] for v in G.successors((level, p))} for j in range(n)]
        level += 1
    G.graph["layers"] = level
    return G, [(0, p) for p in range(n)], [(level, p) for p in range(n)]


def max_path_length(arch: str, n: int, *, k: int = 3, r: int = 4) -> int:
    """Longest shortest path (in edges) from an input position to an output position that depends on it.

    Computed with breadth-first search on :func:`computation_graph`; Table 1's "maximum path
    length".

    >>> [max_path_length("self_attention", n) for n in (2, 64)]
    [1, 1]
    >>> [max_path_length("recurrent", n) for n in (2, 64)]
    [2, 64]
    >>> [max_path_length("dilated_convolution", n, k=2) for n in (2, 64)]
    [1, 6]
    """
    G, inputs, outputs = computation_graph(arch, n, k=k, r=r)
    targets = set(outputs)
    longest = 0
    for source in inputs:
        lengths = nx.single_source_shortest_path_length(G, source)
        longest = max(longest, max((d for node, d in lengths.items() if node in targets), default=0))
    return longest


def sequential_depth(arch: str, n: int, *, k: int = 3, r: int = 4, stack: bool = False) -> int:
    """Depth (longest path, in edges) of the computation DAG: Table 1's "sequential operations".

    ``stack=False`` (the table's per-layer count) uses :func:`layer_graph`; ``stack=True`` the
    whole :func:`computation_graph`.

    >>> [sequential_depth("recurrent", n) for n in (2, 64)]
    [2, 64]
    >>> sequential_depth("convolution", 64), sequential_depth("convolution", 64, k=3, stack=True)
    (1, 32)
    """
    G = computation_graph(arch, n, k=k, r=r)[0] if stack else layer_graph(arch, n, k=k, r=r)
    return nx.dag_longest_path_length(G)


def table1(ns: Iterable[int] = range(2, 65), *, k: int = 3, r: int = 4) -> list[dict]:
    """Table 1's "sequential operations" and "maximum path length" columns, measured.

    Returns one dict per architecture with the measured values at each ``n``
    (``sequential_values``, ``path_values``), the growth of each column decided by
    :func:`attnsym.graphs.growth.decide_growth` (``sequential``, ``path``: a
    :class:`~attnsym.graphs.growth.GrowthDecision` naming the candidates with their constants
    that explain the values, e.g. ``O(n/k)``) and the growth printed in the paper
    (``paper_sequential``, ``paper_path``).

    >>> rows = table1(range(2, 17), k=2, r=2)
    >>> [(row["arch"], row["sequential"].growth, row["path"].growth) for row in rows]  # doctest: +NORMALIZE_WHITESPACE
    [('self_attention', 'O(1)', 'O(1)'), ('recurrent', 'O(n)', 'O(n)'), ('convolution', 'O(1)', 'O(n)'),
     ('dilated_convolution', 'O(1)', 'O(log n)'), ('restricted_self_attention', 'O(1)', 'O(n)')]
    >>> rows[3]["path"].explained_by
    ('O(log_k n)',)
    """
    ns = list(ns)
    rows = []
    for arch in ARCHITECTURES:
        seq = [sequential_depth(arch, n, k=k, r=r) for n in ns]
        path = [max_path_length(arch, n, k=k, r=r) for n in ns]
        rows.append({
            "arch": arch,
            "ns": ns,
            "sequential_values": seq,
            "path_values": path,
            "sequential": decide_growth(ns, seq, k=k, r=r),
            "path": decide_growth(ns, path, k=k, r=r),
            "paper_sequential": PAPER_TABLE1[arch][0],
            "paper_path": PAPER_TABLE1[arch][1],
        })
    return rows


def expected_growth(arch: str) -> tuple[str, str]:
    """The growth classes (:attr:`GrowthDecision.growth <attnsym.graphs.growth.GrowthDecision>` names) Table 1 predicts.

    >>> expected_growth("dilated_convolution")
    ('O(1)', 'O(log n)')
    """
    seq, path = PAPER_TABLE1[arch]
    return GROWTH_CLASS[seq], GROWTH_CLASS[path]
