r"""Attention matrices as routing graphs, and a dense layer as a fixed bipartite graph.

**Edge direction.** In ``Y = A V`` output row ``i`` is :math:`y_i = \sum_j A_{ij} v_j`: value
flows *from key position j to query position i* with weight :math:`A_{ij}`. The routing graph
therefore has one directed edge ``j -> i`` with attribute ``weight = A[i, j]`` for every non-zero
weight (self-loops ``i -> i`` included). In-edges of a node are its query row (in-strength 1);
out-edges are its key column (out-strength = the total attention it receives).

**Attribute scheme** (every value a plain Python ``int``, ``float``, ``str`` or ``bool``, so
that all export formats keep them exactly):

* node ``i`` (an ``int``): ``index`` (the position's index, from 0), ``token`` (its word; default
  its number counted from 1), ``label`` (the same word: what Graphviz, Gephi and yEd display),
  ``layer``;
* edge: ``weight`` (``float``);
* graph: ``kind`` (``"attention"``, ``"layered_attention"`` or ``"mlp"``), ``direction``, ``n``,
  and where they apply ``layer``, ``head``, ``threshold``, ``top_k``.

Construction fills networkx's adjacency dictionaries directly; for a dense ``1024 x 1024``
matrix it is several times faster than ``nx.from_numpy_array`` (see ``docs/benchmarks.md``).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from .._checks import boolean, check_index, check_tokens
from ..errors import ShapeError
from ._arrays import ROW_SUM_ATOL, RowSumWarning, as_attention_stack, check_pruning, to_numpy

__all__ = ["HEAD_FUSIONS", "attention_matrix", "layer_matrices", "layered_graph", "mlp_graph", "prune", "routing_graph",
           "select_attention"]

DIRECTION = "key -> query (edge j -> i carries weight A[i, j])"


def prune(W: np.ndarray, threshold: float | None = None, top_k: int | None = None, *, by_abs: bool = False) -> np.ndarray:
    """A copy of ``W`` with the pruned weights set to 0 (pruning acts on each row).

    ``threshold`` keeps weights with ``|w| >= threshold`` (``w >= threshold`` for attention);
    ``top_k`` keeps the ``k`` largest weights of each row (ties: lower column index first).

    >>> prune(np.array([[0.5, 0.3, 0.2]]), top_k=2).tolist()
    [[0.5, 0.3, 0.0]]
    >>> prune(np.array([[0.5, 0.3, 0.2]]), threshold=0.25).tolist()
    [[0.5, 0.3, 0.0]]
    """
    threshold, top_k = check_pruning(threshold, top_k)
    W = np.array(W, dtype=np.float64, copy=True)
    key = np.abs(W) if by_abs else W
    if threshold is not None:
        W[key < threshold] = 0.0
    if top_k is not None and top_k < W.shape[-1]:
        order = np.argsort(-key, axis=-1, kind="stable")
        drop = order[..., top_k:]
        np.put_along_axis(W, drop, 0.0, axis=-1)
    return W


def _fill_edges(G: nx.DiGraph, W: np.ndarray, sources: Sequence[int], targets: Sequence[int]) -> None:
    """Add edge ``sources[j] -> targets[i]`` with weight ``W[i, j]`` for every non-zero entry.

    Writes networkx's adjacency dicts (``G._succ``/``G._pred``, the storage every DiGraph
    method uses) directly: one shared attribute dict per edge, exactly as ``add_edge`` does.
    """
    succ, pred = G._succ, G._pred
    for i, row in enumerate(W.tolist()):
        target = targets[i]
        in_edges = pred[target]
        for j, w in enumerate(row):
            if w != 0.0:
                data = {"weight": w}
                in_edges[sources[j]] = data
                succ[sources[j]][target] = data
    if hasattr(nx, "_clear_cache"):
        nx._clear_cache(G)


def select_attention(
    A: Any, *, layer: int | None = None, head: int | str | None = None, batch: int = 0, name: str = "A"
) -> np.ndarray:
    """The single ``(n, n)`` matrix that ``layer``/``head`` pick out of any supported input.

    ``head="mean"`` averages the heads (as attention rollout does). With one layer (or one
    head) the index may be omitted.

    >>> stack = np.stack([np.eye(2), np.full((2, 2), 0.5)])          # 2 heads
    >>> select_attention(stack, head=1).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    >>> select_attention(stack, head="mean").tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> select_attention(stack)
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: A holds 2 heads; pass head= (0..1) or head='mean'
    """
    return _select(A, layer=layer, head=head, batch=batch, name=name)[0]


def _select(A: Any, *, layer: Any, head: Any, batch: int, name: str = "A") -> tuple[np.ndarray, int | None, int | str | None]:
    """:func:`select_attention`, also returning ``layer`` and ``head`` resolved (negatives counted from the end)."""
    given_layer, given_head = layer, head
    stack = as_attention_stack(A, batch=batch, name=name)
    n_layers, n_heads = stack.shape[:2]
    if layer is None:
        if n_layers > 1:
            raise ShapeError(f"{name} holds {n_layers} layers; pass layer= (0..{n_layers - 1}) or use layered_graph")
        layer = 0
    layer = check_index(layer, n_layers, "layer", "layers")
    if isinstance(head, str):
        if head != "mean":
            raise ShapeError(f"head must be an integer or 'mean' (got {head!r})")
        return stack[layer].mean(axis=0), None if given_layer is None else layer, head
    if head is None:
        if n_heads > 1:
            raise ShapeError(f"{name} holds {n_heads} heads; pass head= (0..{n_heads - 1}) or head='mean'")
        head = 0
    head = check_index(head, n_heads, "head", "heads")
    return stack[layer, head], None if given_layer is None else layer, None if given_head is None else head


def routing_graph(
    A: Any,
    tokens: Sequence[Any] | None = None,
    *,
    layer: int | None = None,
    head: int | str | None = None,
    threshold: float | None = None,
    top_k: int | None = None,
    batch: int = 0,
    sink_mass: Any = None,
) -> nx.DiGraph:
    r"""The routing graph of one attention matrix: edge ``j -> i`` weighted by ``A[i, j]``.

    Parameters
    ----------
    A : array-like, tensor, or per-layer sequence
        An ``(n, n)`` attention matrix (rows = queries, columns = keys), or any stack that
        :func:`~attnsym.graphs._arrays.as_attention_stack` accepts: ``(heads, n, n)``,
        ``(layers, heads, n, n)``, a CuPy array, a PyTorch tensor, or the Hugging Face
        ``output_attentions`` tuple of ``(batch, heads, n, n)`` tensors.
    tokens : sequence of str, optional
        One label per position (default ``"1"``, ``"2"``, …: token numbers count from 1).
    layer, head : int, optional
        Which layer / head to take from a stack (required when there are several);
        ``head="mean"`` averages the heads.
    threshold : float, optional
        Keep only weights ``>= threshold`` (for display).
    top_k : int, optional
        Keep only the ``top_k`` largest weights of each query row (for display).
    batch : int, default 0
        Batch element for inputs with a batch axis.
    sink_mass : (n,) array-like, optional
        The mass ``π_i`` a learned sink (gpt-oss; :class:`~attnsym.AttentionSpec` ``sink=True``) took
        from each query row: then each row of the selected matrix must sum to ``1 − π_i`` (not 1),
        and each query node carries ``sink_mass`` — the sink shown as its own mass, nothing
        renormalised away (``Route.sink_mass[layer, head]``).

    Returns
    -------
    networkx.DiGraph
        Nodes ``0..n-1`` (``index``, ``token``, ``label``, ``layer``, and ``sink_mass`` with a sink); one
        edge per non-zero kept weight.

    Raises
    ------
    ShapeError
        Non-square or negative/non-finite weights, a token list of the wrong length, bad
        ``layer``/``head``/``threshold``/``top_k``. Rows not summing to 1 only warn
        (:class:`~attnsym.graphs.RowSumWarning`).

    Examples
    --------
    >>> A = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> G = routing_graph(A, tokens=["the", "cat"])
    >>> sorted(G.edges(data="weight"))          # key -> query
    [(0, 0, 1.0), (0, 1, 0.25), (1, 1, 0.75)]
    >>> G.nodes[1]
    {'index': 1, 'token': 'cat', 'label': 'cat', 'layer': 0}
    >>> routing_graph(A, tokens=["the"])
    Traceback (most recent call last):
    ...
    attnsym.errors.ShapeError: tokens must have one label per position: expected 2 (got 1)
    >>> routing_graph(np.array([[0.5, 0.0], [0.2, 0.4]]), sink_mass=[0.5, 0.4]).nodes[1]["sink_mass"]
    0.4
    """
    if sink_mass is None:
        M, layer, head = _select(A, layer=layer, head=head, batch=batch)  # layer=-1: recorded as the last layer's index
    else:
        with warnings.catch_warnings():  # the rows sum to 1 − π: checked below against the sink's own mass
            warnings.simplefilter("ignore", RowSumWarning)
            M, layer, head = _select(A, layer=layer, head=head, batch=batch)
        sink_mass = _check_sink_mass(M, sink_mass)
    n = M.shape[0]
    labels = check_tokens(tokens, n)
    threshold, top_k = check_pruning(threshold, top_k)
    if threshold is not None or top_k is not None:
        M = prune(M, threshold, top_k)
    G = nx.DiGraph(kind="attention", direction=DIRECTION, n=n)
    for key, value in (("layer", layer), ("head", head), ("threshold", threshold), ("top_k", top_k)):
        if value is not None:
            G.graph[key] = value if isinstance(value, str) else (float(value) if key == "threshold" else int(value))
    node_layer = 0 if layer is None else int(layer)
    G.add_nodes_from((i, {"index": i, "token": labels[i], "label": labels[i], "layer": node_layer}) for i in range(n))
    if sink_mass is not None:
        G.graph["sink"] = True
        for i in range(n):
            G.nodes[i]["sink_mass"] = float(sink_mass[i])
    positions = list(range(n))
    _fill_edges(G, M, positions, positions)
    return G


def _check_sink_mass(M: np.ndarray, sink_mass: Any) -> np.ndarray:
    """``sink_mass`` as an (n,) array in [0, 1] with ``rowsum(M) + π = 1``, else a :class:`ShapeError`."""
    pi = np.asarray(sink_mass, dtype=float)
    if pi.shape != (M.shape[0],) or not np.all(np.isfinite(pi)) or pi.min() < 0 or pi.max() > 1:
        raise ShapeError(f"sink_mass must hold one mass in [0, 1] per query, shape ({M.shape[0]},) "
                         f"(got shape {pi.shape})")
    gap = np.abs(M.sum(axis=-1) + pi - 1.0)
    if gap.max() > ROW_SUM_ATOL:
        i = int(np.argmax(gap))
        raise ShapeError(f"each row of A plus its sink_mass must sum to 1 (row {i}: {float(M[i].sum())!r} + "
                         f"{float(pi[i])!r})")
    return pi


def layered_graph(
    attentions: Any,
    tokens: Sequence[Any] | None = None,
    *,
    head: int | str = "mean",
    residual: bool = False,
    threshold: float | None = None,
    top_k: int | None = None,
    batch: int = 0,
) -> nx.DiGraph:
    r"""The graph of a stack of attention layers, layer ``l`` feeding layer ``l + 1``.

    Node ``l * n + p`` is position ``p`` after ``l`` layers (``l = 0`` are the input tokens);
    edge ``(l-1)*n + j -> l*n + i`` has weight :math:`\hat A^{(l)}_{ij}` of layer ``l``. With
    ``residual=True`` each layer is :math:`\hat A = \tfrac12 A + \tfrac12 I`, rows
    re-normalised (Abnar & Zuidema 2020), the graph attention flow runs on.

    Parameters
    ----------
    attentions : array-like or per-layer sequence
        ``(layers, heads, n, n)``, ``(layers, n, n)`` as a list, or the Hugging Face tuple.
    tokens : sequence of str, optional
        Labels of the ``n`` positions (repeated on every layer).
    head : int or {"mean", "max", "min"}, default "mean"
        Which head to use in every layer, or how to fuse the heads (:func:`layer_matrices`).
    residual : bool, default False
        Mix in the residual connection as above.
    threshold, top_k, batch
        As for :func:`routing_graph`.

    Returns
    -------
    networkx.DiGraph
        ``(layers + 1) * n`` nodes with attributes ``index``, ``token``, ``layer``.

    Examples
    --------
    >>> G = layered_graph([np.eye(2), np.full((2, 2), 0.5)])
    >>> G.number_of_nodes(), G.number_of_edges()
    (6, 6)
    >>> sorted(G.in_edges(4, data="weight"))     # position 0 after layer 2
    [(2, 4, 0.5), (3, 4, 0.5)]
    """
    stack = as_attention_stack(attentions, batch=batch, name="attentions")
    mats = layer_matrices(stack, head=head, residual=residual)
    n_layers, n = mats.shape[0], mats.shape[-1]
    labels = check_tokens(tokens, n)
    threshold, top_k = check_pruning(threshold, top_k)
    G = nx.DiGraph(kind="layered_attention", direction=DIRECTION, n=n, layers=n_layers, residual=bool(residual))
    G.graph["head"] = head if isinstance(head, str) else int(head)
    for key, value in (("threshold", threshold), ("top_k", top_k)):
        if value is not None:
            G.graph[key] = value
    G.add_nodes_from(
        (layer * n + p, {"index": p, "token": labels[p], "label": labels[p], "layer": layer})
        for layer in range(n_layers + 1) for p in range(n)
    )
    for layer in range(1, n_layers + 1):
        M = mats[layer - 1]
        if threshold is not None or top_k is not None:
            M = prune(M, threshold, top_k)
        _fill_edges(G, M, range((layer - 1) * n, layer * n), range(layer * n, (layer + 1) * n))
    return G


#: how :func:`layer_matrices` fuses the heads of a layer into one matrix (besides one head by index)
HEAD_FUSIONS = ("mean", "max", "min")


def layer_matrices(stack: np.ndarray, *, head: int | str = "mean", residual: bool = False) -> np.ndarray:
    r"""Per-layer ``(layers, n, n)`` matrices: one head, or the heads fused; optionally with residual.

    ``head`` is a head index, or a fusion of :data:`HEAD_FUSIONS`: ``"mean"`` (the mean over
    heads, Abnar & Zuidema's choice, row-stochastic as it is), ``"max"`` or ``"min"`` (the
    elementwise maximum / minimum over heads, as in common rollout code for vision
    transformers; these rows no longer sum to 1 and are re-normalised, an all-zero row staying 0).
    With ``residual=True``: :math:`\hat A = (\tfrac12 A + \tfrac12 I)` with rows re-normalised
    to sum to 1 (all-zero rows of ``A`` become the identity row).

    >>> layer_matrices(np.array([[[[0.0, 1.0], [0.5, 0.5]]]]), residual=True).tolist()
    [[[0.5, 0.5], [0.25, 0.75]]]
    >>> two_heads = np.array([[[[1.0, 0.0], [0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]]]])
    >>> layer_matrices(two_heads, head="max").tolist()     # max [[1, .5], [.5, 1]], rows re-normalised
    [[[0.6666666666666666, 0.3333333333333333], [0.3333333333333333, 0.6666666666666666]]]
    >>> layer_matrices(two_heads, head="min").tolist()     # min [[.5, 0], [0, .5]]
    [[[1.0, 0.0], [0.0, 1.0]]]
    """
    if isinstance(head, str):
        if head not in HEAD_FUSIONS:
            raise ShapeError(f"head must be an integer or one of {', '.join(map(repr, HEAD_FUSIONS))} (got {head!r})")
        if head == "mean":
            mats = stack.mean(axis=1)
        else:
            mats = stack.max(axis=1) if head == "max" else stack.min(axis=1)
            sums = mats.sum(axis=-1, keepdims=True)
            mats = np.divide(mats, sums, out=np.zeros_like(mats), where=sums > 0)
    else:
        mats = stack[:, check_index(head, stack.shape[1], "head", "heads")]
    residual = boolean("residual", residual, error=ShapeError)
    if residual:
        n = mats.shape[-1]
        mats = 0.5 * mats + 0.5 * np.eye(n)
        mats = mats / mats.sum(axis=-1, keepdims=True)
    return mats


def mlp_graph(
    W: Any,
    b: Any = None,
    *,
    inputs: Sequence[Any] | None = None,
    outputs: Sequence[Any] | None = None,
    threshold: float | None = None,
    top_k: int | None = None,
) -> nx.DiGraph:
    r"""The fixed bipartite graph of a dense layer :math:`y = x W + b` (row vectors, as ``Q = X W_Q``).

    The same graph serves every input: this is what attention's input-dependent routing graph
    is contrasted with. (For the column convention :math:`y = W x` pass ``W.T``.)

    Parameters
    ----------
    W : array-like, (d_in, d_out)
        Weights; edge ``input j -> output k`` has ``weight = W[j, k]`` (signed; zeros omitted).
    b : array-like, (d_out,), optional
        Bias, stored as the ``bias`` attribute of the output nodes.
    inputs, outputs : sequence of str, optional
        Labels (default ``x1, x2, …`` and ``y1, y2, …``: features counted from 1).
    threshold : float, optional
        Keep only weights with ``|w| >= threshold``.
    top_k : int, optional
        Keep only the ``top_k`` largest ``|w|`` feeding each output.

    Returns
    -------
    networkx.DiGraph
        Input nodes ``0..d_in-1`` (``layer=0``), output nodes ``d_in..d_in+d_out-1``
        (``layer=1``); attributes ``index``, ``token``, ``label``, ``layer`` (and ``bias``).

    Examples
    --------
    >>> M = mlp_graph(np.array([[0.7, 0.0], [0.3, 1.0]]))
    >>> sorted(M.edges(data="weight"))
    [(0, 2, 0.7), (1, 2, 0.3), (1, 3, 1.0)]
    >>> M.nodes[2]
    {'index': 0, 'token': 'y1', 'label': 'y1', 'layer': 1}
    """
    Wn = to_numpy(W, "W")
    if Wn.ndim != 2:
        raise ShapeError(f"W must be a (d_in, d_out) matrix (got shape {Wn.shape})")
    if not np.all(np.isfinite(Wn)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(Wn))[0])
        raise ShapeError(f"W must contain only finite weights (got {Wn[idx]} at index {idx})")
    d_in, d_out = Wn.shape
    in_labels = check_tokens(inputs if inputs is not None else [f"x{j + 1}" for j in range(d_in)], d_in, "inputs")
    out_labels = check_tokens(outputs if outputs is not None else [f"y{k + 1}" for k in range(d_out)], d_out, "outputs")
    bias = None
    if b is not None:
        bias = to_numpy(b, "b").reshape(-1)
        if bias.shape != (d_out,):
            raise ShapeError(f"b must have shape (d_out,) = ({d_out},) (got {to_numpy(b, 'b').shape})")
        if not np.all(np.isfinite(bias)):
            raise ShapeError("b must contain only finite values")
    threshold, top_k = check_pruning(threshold, top_k)
    Wt = Wn.T  # (d_out, d_in): row k lists the weights feeding output k
    if threshold is not None or top_k is not None:
        Wt = prune(Wt, threshold, top_k, by_abs=True)
    G = nx.DiGraph(kind="mlp", direction="input -> output (edge j -> d_in + k carries weight W[j, k])",
                   d_in=d_in, d_out=d_out)
    for key, value in (("threshold", threshold), ("top_k", top_k)):
        if value is not None:
            G.graph[key] = value
    G.add_nodes_from((j, {"index": j, "token": in_labels[j], "label": in_labels[j], "layer": 0}) for j in range(d_in))
    for k in range(d_out):
        data = {"index": k, "token": out_labels[k], "label": out_labels[k], "layer": 1}
        if bias is not None:
            data["bias"] = float(bias[k])
        G.add_node(d_in + k, **data)
    _fill_edges(G, Wt, list(range(d_in)), list(range(d_in, d_in + d_out)))
    return G


def attention_matrix(G: nx.DiGraph) -> np.ndarray:
    """The ``(n, n)`` matrix of a routing graph: ``A[i, j]`` = weight of edge ``j -> i`` (0 if absent).

    Positions come from the ``index`` node attribute (node ids otherwise); the inverse of
    :func:`routing_graph` up to pruning.

    >>> A = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> bool(np.array_equal(attention_matrix(routing_graph(A)), A))
    True
    """
    if not isinstance(G, nx.DiGraph):
        raise ShapeError(f"G must be a networkx.DiGraph routing graph (got {type(G).__name__})")
    pos = {}
    for node, data in G.nodes(data=True):
        index = data.get("index", node)
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise ShapeError(f"node {node!r} has no integer 'index' attribute (got {index!r})")
        pos[node] = int(index)
    n = len(pos)
    if sorted(pos.values()) != list(range(n)):
        raise ShapeError(f"node positions of G must be 0..{n - 1} exactly once each (got {sorted(pos.values())})")
    A = np.zeros((n, n))
    for u, v, w in G.edges(data="weight", default=0.0):
        A[pos[v], pos[u]] = w
    return A
