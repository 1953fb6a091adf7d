r"""Attention rollout and attention flow across layers (Abnar & Zuidema, 2020).

Both start from the per-layer matrices of a stack, with the heads of each layer *fused* into
one matrix — averaged (``head="mean"``, the paper's choice), their elementwise maximum or
minimum (``"max"`` / ``"min"``, rows re-normalised, as common rollout code for vision
transformers offers), or one head chosen by index — and the residual connection mixed in as in
the paper:
:math:`\hat A^{(l)} = \tfrac12 A^{(l)} + \tfrac12 I`, rows re-normalised to sum to 1.

**Rollout** multiplies them, the top layer on the left:
:math:`\tilde A = \hat A^{(L)} \hat A^{(L-1)} \cdots \hat A^{(1)}`. ``R[i, j]`` is how much
of input token ``j`` reaches output position ``i`` if attention mixed linearly.

**Flow** treats the layered graph (:func:`~attnsym.graphs.layered_graph` with
``residual=True``) as a flow network whose capacities are the weights :math:`\hat A^{(l)}_{ij}`,
and for every output position ``i`` and input token ``j`` computes the *maximum flow* from
input node ``j`` to output node ``i``. As in the authors' code, each output's row of flow values
is then normalised to sum to 1 (``normalize=True``; pass ``False`` for the raw max-flow values).

**Cost.** Flow needs one max-flow per (output, input) pair, ``n²`` of them, each on a graph with
``(L+1)·n`` nodes and ``L·n²`` edges. The default solver is Dinic's algorithm on flat Python
lists built from the networkx flow graph, one network per output position (the other outputs'
edges removed, since they are dead ends), reused for every input; ``method="networkx"`` runs
networkx's shortest-augmenting-path algorithm instead, with the residual network built once
(the fastest of networkx's algorithms here; the authors' code uses Edmonds–Karp and rebuilds
the residual network for every pair). Measured on 6 layers × 32 tokens (docs/benchmarks.md):
seconds with Dinic, several times longer with networkx, and far longer with the authors'
recipe. The cost grows roughly like ``n⁴·L`` (``n²`` pairs × a max-flow on ``L·n²`` edges);
``outputs=`` (e.g. only the ``[CLS]`` position, as the paper does) divides it by ``n/len(outputs)``.
Rollout is one matrix product per layer, ``O(L·n³)``: milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
from networkx.algorithms.flow import build_residual_network, shortest_augmenting_path

from .._checks import check_index
from ..errors import ShapeError
from ._arrays import as_attention_stack
from .routing import layer_matrices, layered_graph

__all__ = ["attention_flow", "attention_rollout", "flow_graph"]


def attention_rollout(
    attentions: Any, *, head: int | str = "mean", residual: bool = True, batch: int = 0, all_layers: bool = False
) -> np.ndarray:
    r"""Attention rollout: the product of the per-layer matrices, top layer on the left.

    Parameters
    ----------
    attentions : array-like or per-layer sequence
        ``(layers, heads, n, n)``, a list of per-layer arrays (each ``(n, n)`` or
        ``(heads, n, n)``), or the Hugging Face ``output_attentions`` tuple of
        ``(batch, heads, n, n)`` tensors. A single 3-D array is *one* layer's heads: pass
        a list (``list(A)``) to mean a ``(layers, n, n)`` stack.
    head : int or {"mean", "max", "min"}, default "mean"
        A single head in every layer, or the head fusion: the mean over heads (the paper's
        choice), or the elementwise max / min over heads with rows re-normalised
        (:func:`~attnsym.graphs.routing.layer_matrices`).
    residual : bool, default True
        Use :math:`\tfrac12 A + \tfrac12 I` (rows re-normalised) for every layer.
    batch : int, default 0
        Batch element of inputs that have a batch axis.
    all_layers : bool, default False
        Return the rollout after every layer, shape ``(layers, n, n)``.

    Returns
    -------
    numpy.ndarray
        ``(n, n)``: ``R[i, j]`` is the share of input token ``j`` in output position ``i``;
        rows sum to 1.

    Examples
    --------
    >>> A1 = np.array([[1.0, 0.0], [1.0, 0.0]])     # everyone reads token 0
    >>> A2 = np.array([[0.0, 1.0], [0.0, 1.0]])     # everyone reads position 1
    >>> attention_rollout([A1, A2]).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    >>> heads = np.stack([A1, A2])                  # one layer, two heads, fused three ways
    >>> [attention_rollout([heads], head=f, residual=False).tolist() for f in ("mean", "max", "min")]
    [[[0.5, 0.5], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], [[0.0, 0.0], [0.0, 0.0]]]
    """
    stack = as_attention_stack(attentions, batch=batch, name="attentions")
    mats = layer_matrices(stack, head=head, residual=residual)
    out = np.empty_like(mats)
    R = np.eye(mats.shape[-1])
    for layer, M in enumerate(mats):
        R = M @ R
        out[layer] = R
    return out if all_layers else out[-1]


def flow_graph(attentions: Any, *, head: int | str = "mean", residual: bool = True, batch: int = 0) -> nx.DiGraph:
    """The layered flow network: :func:`~attnsym.graphs.layered_graph` with ``capacity`` = ``weight``.

    >>> G = flow_graph([np.eye(2)])
    >>> sorted(G.edges(data="capacity"))
    [(0, 2, 1.0), (1, 3, 1.0)]
    """
    G = layered_graph(attentions, head=head, residual=residual, batch=batch)
    for _, _, data in G.edges(data=True):
        data["capacity"] = data["weight"]
    return G


class _LayeredNetwork:
    """A residual network in flat lists (edge ``e`` and its reverse ``e ^ 1``) for Dinic's algorithm."""

    def __init__(self, n_nodes: int, edges: list[tuple[int, int, float]]) -> None:
        self.n_nodes = n_nodes
        self.to: list[int] = []
        self.capacity: list[float] = []
        self.adj: list[list[int]] = [[] for _ in range(n_nodes)]
        for u, v, c in edges:
            self.adj[u].append(len(self.to))
            self.to.append(v)
            self.capacity.append(c)
            self.adj[v].append(len(self.to))
            self.to.append(u)
            self.capacity.append(0.0)

    def max_flow(self, s: int, t: int) -> float:
        """Dinic's algorithm: BFS levels, then blocking flows along shortest residual paths."""
        to, adj, N = self.to, self.adj, self.n_nodes
        cap = self.capacity[:]
        flow = 0.0
        while True:
            level = [-1] * N
            level[s] = 0
            queue = [s]
            for u in queue:
                next_level = level[u] + 1
                for e in adj[u]:
                    v = to[e]
                    if level[v] < 0 and cap[e] > 0:
                        level[v] = next_level
                        queue.append(v)
            if level[t] < 0:
                return flow
            current = [0] * N  # current-arc pointers
            path: list[int] = []
            u = s
            while True:
                if u == t:  # augment by the bottleneck, retreat to the first saturated edge
                    d = min(cap[e] for e in path)
                    cut = -1
                    for k, e in enumerate(path):
                        cap[e] -= d
                        cap[e ^ 1] += d
                        if cut < 0 and cap[e] <= 0:
                            cut = k
                    flow += d
                    del path[cut:]
                    u = to[path[-1]] if path else s
                    continue
                arcs, k, m, next_level = adj[u], current[u], len(adj[u]), level[u] + 1
                while k < m and not (cap[arcs[k]] > 0 and level[to[arcs[k]]] == next_level):
                    k += 1
                current[u] = k
                if k < m:
                    path.append(arcs[k])
                    u = to[arcs[k]]
                elif u == s:
                    break
                else:  # dead end in this phase: retreat
                    level[u] = -2
                    path.pop()
                    u = to[path[-1]] if path else s
                    current[u] += 1


def attention_flow(
    attentions: Any,
    *,
    head: int | str = "mean",
    residual: bool = True,
    batch: int = 0,
    outputs: Sequence[int] | None = None,
    normalize: bool = True,
    method: str = "dinic",
) -> np.ndarray:
    r"""Attention flow: the max-flow from every input token to every output position.

    Parameters
    ----------
    attentions, head, residual, batch
        As for :func:`attention_rollout`.
    outputs : sequence of int, optional
        Output positions to compute (default all); the cost is proportional to their number.
    normalize : bool, default True
        Divide each output's row by its sum (as in the authors' code); ``False`` returns the
        raw max-flow values.
    method : {"dinic", "networkx"}, default "dinic"
        ``"dinic"``: Dinic's algorithm on flat lists built from the networkx flow graph
        (:func:`flow_graph`), one network per output with the other outputs' edges removed.
        ``"networkx"``: networkx's ``shortest_augmenting_path`` on :func:`flow_graph`, the
        residual network built once and reused — the reference, several times slower. The
        two agree to rounding (the tests check both against hand values and an independent
        integer max-flow).

    Returns
    -------
    numpy.ndarray
        ``(len(outputs), n)``: ``F[a, j]`` is the flow from input ``j`` to output ``outputs[a]``.

    Notes
    -----
    For two layers the paths ``j -> m -> i`` share no edges, so the max-flow is
    :math:`\sum_m \min(\hat A^{(1)}_{mj}, \hat A^{(2)}_{im})` — the test suite checks the
    implementation against this closed form. See the module docstring for the cost.

    Examples
    --------
    >>> A1 = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> A2 = np.array([[0.0, 1.0], [0.0, 1.0]])
    >>> attention_flow([A1, A2], normalize=False).round(12).tolist()   # by hand: sum_m min(...)
    [[1.0, 0.5], [0.5, 0.5]]
    >>> attention_flow([A1, A2]).round(12).tolist()                    # rows normalised
    [[0.666666666667, 0.333333333333], [0.5, 0.5]]
    """
    if method not in ("dinic", "networkx"):
        raise ShapeError(f"method must be 'dinic' or 'networkx' (got {method!r})")
    G = flow_graph(attentions, head=head, residual=residual, batch=batch)
    n, n_layers = G.graph["n"], G.graph["layers"]
    top = n_layers * n
    if outputs is not None and np.ndim(outputs) == 0:  # outputs=0 failed with "'int' object is not iterable"
        raise ShapeError(f"outputs must be a sequence of positions (got {outputs}); for one position pass [{outputs}]")
    targets = list(range(n)) if outputs is None else [check_index(i, n, "outputs", "positions") for i in outputs]
    F = np.zeros((len(targets), n))
    if method == "networkx":
        residual_net = build_residual_network(G, "capacity")
        for a, i in enumerate(targets):
            for j in range(n):
                R = shortest_augmenting_path(G, j, top + i, capacity="capacity", residual=residual_net)
                F[a, j] = R.graph["flow_value"]
    else:
        inner = [(u, v, c) for u, v, c in G.edges(data="capacity") if v < top]
        for a, i in enumerate(targets):
            sink = top + i
            last = [(u, sink, c) for u, _, c in G.in_edges(sink, data="capacity")]
            network = _LayeredNetwork(G.number_of_nodes(), inner + last)
            for j in range(n):
                F[a, j] = network.max_flow(j, sink)
    if normalize:
        sums = F.sum(axis=1, keepdims=True)
        F = np.divide(F, sums, out=np.zeros_like(F), where=sums > 0)
    return F
