"""Attention as routing: networkx graphs of attention matrices and dense layers.

An attention matrix ``A(X)`` is an input-dependent routing graph (edge key ``j`` -> query
``i`` with weight ``A[i, j]``); a dense layer's weight matrix is a fixed bipartite graph.
This package builds both, measures them (entropy, strengths, distances), computes Table 1 of
Vaswani et al. (2017) on real computation graphs, combines layers by attention rollout and
attention flow (Abnar & Zuidema 2020), and reads and writes GraphML, GEXF, node-link JSON
and DOT.

>>> import attnsym as at
>>> G = at.graphs.routing_graph(np.array([[1.0, 0.0], [0.5, 0.5]]), tokens=["a", "b"])
>>> G.number_of_edges()
3

The drawing functions live in :mod:`attnsym.plots` (the only package that imports matplotlib):
``attnsym.graphs`` never imports it. The old aliases ``attnsym.graphs.draw_routing`` and
``attnsym.graphs.draw_contrast`` are gone; asking for them raises an ``AttributeError`` that
names ``attnsym.plots.draw_routing`` / ``draw_contrast``.
"""

from typing import Any

from ._arrays import ROW_SUM_ATOL, RowSumWarning, as_attention_stack
from .architectures import (
    ARCHITECTURES,
    computation_graph,
    layer_graph,
    max_path_length,
    sequential_depth,
    table1,
)
from .contrast import Contrast, contrast, graphs_equal
from .flow import attention_flow, attention_rollout, flow_graph
from .growth import GrowthDecision, decide_growth
from .io import FORMATS, GraphFormatError, export, read
from .metrics import (
    NodeChanges,
    effective_attended,
    in_strength,
    node_changes,
    out_strength,
    routing_distance,
    row_entropy,
    row_tv_distance,
)
from .routing import HEAD_FUSIONS, attention_matrix, layered_graph, mlp_graph, prune, routing_graph, select_attention

__all__ = [
    "ARCHITECTURES",
    "FORMATS",
    "HEAD_FUSIONS",
    "ROW_SUM_ATOL",
    "Contrast",
    "GraphFormatError",
    "GrowthDecision",
    "NodeChanges",
    "RowSumWarning",
    "as_attention_stack",
    "attention_flow",
    "attention_matrix",
    "attention_rollout",
    "computation_graph",
    "contrast",
    "decide_growth",
    "effective_attended",
    "export",
    "flow_graph",
    "graphs_equal",
    "in_strength",
    "layer_graph",
    "layered_graph",
    "max_path_length",
    "mlp_graph",
    "node_changes",
    "out_strength",
    "prune",
    "read",
    "routing_distance",
    "routing_graph",
    "row_entropy",
    "row_tv_distance",
    "select_attention",
    "sequential_depth",
    "table1",
]

#: names that were public here and moved to attnsym.plots (drawing belongs to plots; graphs returns data)
_MOVED_TO_PLOTS = ("draw_contrast", "draw_routing")


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_PLOTS:
        raise AttributeError(f"attnsym.graphs.{name} moved to attnsym.plots.{name} (graphs returns data, plots "
                             f"draws it): use `from attnsym.plots import {name}`")
    raise AttributeError(f"module 'attnsym.graphs' has no attribute {name!r}")
