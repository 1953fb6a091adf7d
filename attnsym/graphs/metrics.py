r"""Routing metrics: row entropy, effective number of attended positions, strengths, distances.

Definitions (``A`` is an ``(n, n)`` attention matrix, rows = queries; a stack ``(..., n, n)``
works row by row):

* **row entropy** :math:`H_i = -\sum_j A_{ij} \ln A_{ij}` in nats, with :math:`0 \ln 0 = 0`;
* **effective number of attended positions** :math:`e^{H_i}` (1 for a one-hot row, ``n`` for a
  uniform row; 0 for an all-zero, fully masked row);
* **in-/out-strength** of a node: the sum of the weights of its in-/out-edges (networkx
  ``G.in_degree(weight="weight")``). In a routing graph in-strength is a query's row sum (1),
  out-strength a key's column sum (the total attention it receives);
* **routing distance** between two attention matrices of the same shape: the *mean
  total-variation distance between corresponding rows*,
  :math:`D(A, B) = \frac1n \sum_i \tfrac12 \sum_j |A_{ij} - B_{ij}|`, which lies in
  :math:`[0, 1]`, is 0 exactly when the matrices are equal and 1 when every query attends to
  disjoint keys in the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from ..errors import ShapeError
from ..numeric.entropy import row_entropy as numeric_row_entropy
from ._arrays import as_attention_stack, check_values, to_numpy
from .routing import attention_matrix

__all__ = [
    "NodeChanges",
    "effective_attended",
    "in_strength",
    "node_changes",
    "out_strength",
    "routing_distance",
    "row_entropy",
    "row_tv_distance",
]


def _matrix(A: Any, name: str) -> np.ndarray:
    if isinstance(A, nx.Graph):
        return attention_matrix(A)
    stack = as_attention_stack(A, name=name)
    return stack[0, 0] if stack.shape[:2] == (1, 1) else stack


def _rows(A: Any) -> np.ndarray:
    """Rows of weights (any ``(..., m)`` shape: cross-attention need not be square), validated."""
    if isinstance(A, nx.Graph):
        return attention_matrix(A)
    M = to_numpy(A, "A")
    if M.ndim < 1:
        raise ShapeError(f"A must have at least one axis of weights (got shape {M.shape})")
    check_values(M, "A")
    return M


def row_entropy(A: Any) -> np.ndarray:
    r"""Entropy :math:`-\sum_j A_{ij}\ln A_{ij}` of every row, in nats (``0 ln 0 = 0``).

    Parameters
    ----------
    A : array-like or routing graph
        ``(n, n)`` or a stack; a routing graph is turned back into its matrix.

    Returns
    -------
    numpy.ndarray
        Shape ``A.shape[:-1]``.

    Examples
    --------
    >>> row_entropy(np.array([[1.0, 0.0], [0.5, 0.5]])).round(6).tolist()
    [0.0, 0.693147]
    """
    return numeric_row_entropy(_rows(A))


def effective_attended(A: Any) -> np.ndarray:
    """Effective number of attended positions per query, ``exp(row_entropy)`` (0 for all-zero rows).

    >>> effective_attended(np.array([[1.0, 0.0, 0.0], [1/3, 1/3, 1/3], [0.0, 0.0, 0.0]])).round(12).tolist()
    [1.0, 3.0, 0.0]
    """
    M = _rows(A)
    eff = np.exp(row_entropy(M))
    return np.where(M.sum(axis=-1) == 0, 0.0, eff)


def in_strength(G: nx.DiGraph) -> dict[Any, float]:
    """Sum of in-edge weights per node (a query's row sum in a routing graph).

    >>> from attnsym.graphs import routing_graph
    >>> in_strength(routing_graph(np.array([[1.0, 0.0], [0.25, 0.75]])))
    {0: 1.0, 1: 1.0}
    """
    return {node: float(s) for node, s in G.in_degree(weight="weight")}


def out_strength(G: nx.DiGraph) -> dict[Any, float]:
    """Sum of out-edge weights per node (the total attention a key receives in a routing graph).

    >>> from attnsym.graphs import routing_graph
    >>> out_strength(routing_graph(np.array([[1.0, 0.0], [0.25, 0.75]])))
    {0: 1.25, 1: 0.75}
    """
    return {node: float(s) for node, s in G.out_degree(weight="weight")}


def _pair(A: Any, B: Any) -> tuple[np.ndarray, np.ndarray]:
    M1, M2 = _matrix(A, "A1"), _matrix(B, "A2")
    if M1.shape != M2.shape:
        raise ShapeError(f"A1 and A2 must have the same shape (got {M1.shape} and {M2.shape})")
    return M1, M2


def row_tv_distance(A: Any, B: Any) -> np.ndarray:
    r"""Total-variation distance :math:`\tfrac12\sum_j |A_{ij} - B_{ij}|` of every pair of rows.

    >>> row_tv_distance(np.eye(2), np.array([[0.5, 0.5], [0.0, 1.0]])).tolist()
    [0.5, 0.0]
    """
    M1, M2 = _pair(A, B)
    return 0.5 * np.abs(M1 - M2).sum(axis=-1)


def routing_distance(A: Any, B: Any) -> float:
    r"""Mean total-variation distance between corresponding rows of two attention matrices.

    :math:`D(A, B) = \operatorname{mean}_i \tfrac12 \sum_j |A_{ij} - B_{ij}|` over every row
    (of every head and layer for stacks); accepts matrices, stacks or routing graphs. It is
    exactly 0 for identical inputs, at most 1, symmetric, and obeys the triangle inequality.

    >>> routing_distance(np.eye(2), np.array([[0.5, 0.5], [0.0, 1.0]]))
    0.25
    >>> routing_distance(np.eye(2), np.eye(2)[::-1])
    1.0
    """
    return float(np.mean(row_tv_distance(A, B)))


@dataclass(frozen=True)
class NodeChanges:
    """How each position's routing changes between two attention matrices ``A1 -> A2``.

    Attributes
    ----------
    row_tv : numpy.ndarray
        Per query ``i``: total-variation distance between row ``i`` of ``A1`` and ``A2``.
    top_key_changed : numpy.ndarray of bool
        Per query: is the most-attended key different?
    entropy_change : numpy.ndarray
        Per query: ``H_i(A2) - H_i(A1)`` in nats.
    received_change : numpy.ndarray
        Per key ``j``: change of the total attention it receives (out-strength), ``sum_i A2 - A1``.
    """

    row_tv: np.ndarray
    top_key_changed: np.ndarray
    entropy_change: np.ndarray
    received_change: np.ndarray

    def as_dict(self) -> dict[str, list]:
        """Plain lists, ready for JSON."""
        return {k: getattr(self, k).tolist() for k in ("row_tv", "top_key_changed", "entropy_change", "received_change")}


def node_changes(A: Any, B: Any) -> NodeChanges:
    """Per-node changes between two routing matrices (see :class:`NodeChanges`).

    >>> c = node_changes(np.eye(2), np.array([[0.5, 0.5], [0.0, 1.0]]))
    >>> c.row_tv.tolist(), c.top_key_changed.tolist(), c.received_change.tolist()
    ([0.5, 0.0], [False, False], [-0.5, 0.5])
    """
    M1, M2 = _pair(A, B)
    return NodeChanges(
        row_tv=0.5 * np.abs(M1 - M2).sum(axis=-1),
        top_key_changed=np.argmax(M1, axis=-1) != np.argmax(M2, axis=-1),
        entropy_change=row_entropy(M2) - row_entropy(M1),
        received_change=(M2 - M1).sum(axis=-2),
    )
