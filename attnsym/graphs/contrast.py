r"""Same weights, two inputs: the MLP graph stays, the attention graph moves.

:func:`contrast` runs one attention layer (:func:`attnsym.numeric.attention`) on two inputs
with the same parameters and compares

* the **MLP graph** — the dense, position-wise layer :math:`y = x W_V W_O` (or
  :math:`x W_V` without an output projection) made of the same weights, built once per input:
  its construction never sees the input, so the two graphs are identical;
* the **attention routing graphs** :math:`A(X_1)` and :math:`A(X_2)` per head — computed from
  the inputs, so they differ — with the routing distance (mean total-variation distance
  between corresponding rows, :func:`~attnsym.graphs.routing_distance`) and per-node changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .._html import contrast_html
from ..errors import ShapeError, SpecError
from ..numeric import attention
from ..spec import AttentionSpec
from ._arrays import to_numpy
from .metrics import NodeChanges, node_changes, routing_distance
from .routing import mlp_graph, routing_graph

__all__ = ["Contrast", "contrast", "dense_weight", "graphs_equal"]


def graphs_equal(G: nx.Graph, H: nx.Graph) -> bool:
    """Same type, graph attributes, nodes and edges with all their attributes (exact equality).

    >>> G = nx.DiGraph(); G.add_edge(0, 1, weight=0.5)
    >>> graphs_equal(G, G.copy()), graphs_equal(G, nx.DiGraph([(0, 1)]))
    (True, False)
    """
    return (
        G.is_directed() == H.is_directed()
        and G.graph == H.graph
        and dict(G.nodes(data=True)) == dict(H.nodes(data=True))
        and {(u, v): d for u, v, d in G.edges(data=True)} == {(u, v): d for u, v, d in H.edges(data=True)}
    )


@dataclass(frozen=True)
class Contrast:
    """Evidence that attention routes by input while an MLP does not.

    Attributes
    ----------
    spec : AttentionSpec
    A1, A2 : numpy.ndarray
        Attention weights for the two inputs, ``(n, n)`` or ``(heads, n, n)``.
    mlp1, mlp2 : networkx.DiGraph
        The dense layer's graph built for input 1 and for input 2.
    attention1, attention2 : tuple of networkx.DiGraph
        One routing graph per head, for each input.
    mlp_identical : bool
        ``mlp1`` and ``mlp2`` are equal, nodes, edges and weights.
    attention_identical : bool
        Every head's routing graph is equal for the two inputs.
    attention_distance : float
        Routing distance between ``A1`` and ``A2``, the mean over heads.
    head_distances : tuple of float
        The routing distance of each head.
    changes : tuple of NodeChanges
        Per head, how each position's routing changed.
    """

    spec: AttentionSpec
    A1: np.ndarray
    A2: np.ndarray
    mlp1: nx.DiGraph
    mlp2: nx.DiGraph
    attention1: tuple
    attention2: tuple
    mlp_identical: bool
    attention_identical: bool
    attention_distance: float
    head_distances: tuple
    changes: tuple

    @property
    def routing_differs(self) -> bool:
        """The claim in one bit: MLP graphs identical and attention graphs different."""
        return self.mlp_identical and not self.attention_identical and self.attention_distance > 0

    def as_dict(self) -> dict[str, Any]:
        """The numbers, as plain Python values (JSON-ready)."""
        return {
            "mlp_identical": self.mlp_identical,
            "attention_identical": self.attention_identical,
            "attention_distance": self.attention_distance,
            "head_distances": list(self.head_distances),
            "changes": [c.as_dict() for c in self.changes],
        }

    def _repr_html_(self) -> str:
        return contrast_html(self)


def dense_weight(weights: Mapping[str, Any], spec: AttentionSpec) -> np.ndarray:
    """The matrix of the position-wise dense layer made of the same weights: ``W_V W_O`` (or ``W_V``).

    >>> spec = at.AttentionSpec(n=2, d_model=2)
    >>> dense_weight({"W_Q": np.eye(2), "W_K": np.eye(2), "W_V": 2 * np.eye(2)}, spec).tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    """
    W = to_numpy(weights["W_V"], "W_V")
    if spec.output_projection:
        W = W @ to_numpy(weights["W_O"], "W_O")
    return W


def contrast(spec: AttentionSpec, X1: Any, X2: Any, weights: Mapping[str, Any], *, tokens=None) -> Contrast:
    """Run one attention layer on two inputs with the same weights and compare the graphs.

    Parameters
    ----------
    spec : AttentionSpec
        The layer (heads, mask, scale, positions, biases).
    X1, X2 : array-like, (n, d_model)
        The two inputs (NumPy, CuPy or PyTorch).
    weights : mapping
        ``W_Q``, ``W_K``, ``W_V`` (and ``W_O``, biases as the spec requires), by name.
    tokens : sequence of str, optional
        Position labels for the routing graphs.

    Returns
    -------
    Contrast

    Raises
    ------
    SpecError
        ``weights`` lacks a parameter the spec needs, or has unknown names.
    ShapeError
        Shapes that do not fit the spec (from :func:`attnsym.numeric.attention`).

    Examples
    --------
    >>> spec = at.AttentionSpec(n=3, d_model=4)
    >>> drawn = at.numeric.random_inputs(spec, seed=0, batch=(2,))
    >>> weights = {name: drawn[name] for name in spec.parameter_names}
    >>> X1, X2 = drawn["X"]
    >>> c = contrast(spec, X1, X2, weights)
    >>> c.mlp_identical, c.attention_identical, c.attention_distance > 0
    (True, False, True)
    >>> contrast(spec, X1, X1, weights).attention_distance
    0.0
    """
    if not isinstance(spec, AttentionSpec):
        raise SpecError(f"spec must be an AttentionSpec (got {type(spec).__name__})")
    if not isinstance(weights, Mapping):
        raise SpecError(f"weights must be a mapping name -> array (got {type(weights).__name__})")
    missing = [name for name in spec.parameter_names if name not in weights]
    unknown = sorted(set(weights) - set(spec.parameter_names))
    if missing or unknown:
        raise SpecError(
            f"weights must hold exactly {list(spec.parameter_names)} for this spec "
            f"(missing {missing}, unknown {unknown})"
        )
    for name, X in (("X1", X1), ("X2", X2)):
        shape = tuple(getattr(X, "shape", np.shape(X)))
        if shape != spec.shapes["X"]:
            raise ShapeError(f"{name} must have shape (n, d_model) = {spec.shapes['X']} (got {shape})")
    _, A1 = attention(X1, **weights, spec=spec)
    _, A2 = attention(X2, **weights, spec=spec)
    A1, A2 = to_numpy(A1, "A1"), to_numpy(A2, "A2")
    heads1 = A1[None] if A1.ndim == 2 else A1
    heads2 = A2[None] if A2.ndim == 2 else A2
    g1 = tuple(routing_graph(M, tokens) for M in heads1)
    g2 = tuple(routing_graph(M, tokens) for M in heads2)
    for graphs in (g1, g2):
        for h, G in enumerate(graphs):
            G.graph["head"] = h
    mlp1 = mlp_graph(dense_weight(weights, spec))
    mlp2 = mlp_graph(dense_weight(weights, spec))
    head_distances = tuple(routing_distance(a, b) for a, b in zip(heads1, heads2, strict=True))
    changes: tuple[NodeChanges, ...] = tuple(node_changes(a, b) for a, b in zip(heads1, heads2, strict=True))
    return Contrast(
        spec=spec,
        A1=A1,
        A2=A2,
        mlp1=mlp1,
        mlp2=mlp2,
        attention1=g1,
        attention2=g2,
        mlp_identical=graphs_equal(mlp1, mlp2),
        attention_identical=all(graphs_equal(a, b) for a, b in zip(g1, g2, strict=True)),
        attention_distance=float(np.mean(head_distances)),
        head_distances=head_distances,
        changes=changes,
    )
