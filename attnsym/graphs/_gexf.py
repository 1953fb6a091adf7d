"""GEXF: networkx's writer and reader, plus what GEXF cannot say, kept in ``<meta><description>``.

Both directions are networkx's (``nx.generate_gexf``, :class:`networkx.readwrite.gexf.GEXFReader`);
the reader is handed a tree that :mod:`defusedxml` parsed with DTDs refused, so no entity is
ever expanded and the file is parsed once. GEXF has no place for graph attributes nor for
integer edge weights, and networkx's reader invents attributes a graph never had: every node
comes back with a ``label`` (its id when none was written) and every edge with an ``id`` (a
running count when none was written). attnsym therefore stores, as JSON after the
``attnsym:`` tag in the ``<meta><description>`` element: the graph attributes, whether the
weights were ints, and which nodes had a ``label`` and which edges an ``id``, and restores
exactly that on reading.

Counterexample that fixed the last point (found by the property suite with hypothesis, shrunk,
kept as tests/test_graphs_io.py::test_gexf_partial_labels_and_edge_ids_round_trip): a graph whose
node ``1`` has ``label=""`` and node ``0`` no label came back with ``label="0"`` on node ``0``;
likewise an edge without an ``id`` beside one with an ``id`` came back with ``id="0"``.
"""

from __future__ import annotations

import json
from pathlib import Path

import defusedxml.ElementTree as DefusedET
import networkx as nx
from networkx.readwrite.gexf import GEXFReader

from ._storable import GraphFormatError, check_declared_once, check_uniform_types, int_ids, xml_text

__all__ = ["gexf_text", "read_gexf"]

_TAG = "attnsym:"


def _which(flags: list[bool], items: list) -> bool | list:
    """``True``/``False`` when every/no item has the attribute, else the list of those that have it."""
    if all(flags):
        return True
    if not any(flags):
        return False
    return [item for item, flag in zip(items, flags, strict=True) if flag]


def gexf_text(H: nx.Graph) -> str:
    """The GEXF text of ``H`` (already sanitised and checked by :func:`._storable.check_storable`)."""
    check_uniform_types(H, "GEXF")
    for node, data in H.nodes(data=True):
        for key, value in data.items():
            if isinstance(value, str):
                xml_text(value, f"attribute {key!r} of node {node!r}")
    weights = [w for _, _, w in H.edges(data="weight") if w is not None]
    nodes, edges = list(H), [[u, v] for u, v in H.edges]
    meta = {
        "graph": H.graph,
        "node_label": _which(["label" in H.nodes[node] for node in nodes], nodes),
        "edge_id": _which(["id" in H.edges[u, v] for u, v in edges], edges),
        "int_weight": bool(weights) and all(isinstance(w, int) and not isinstance(w, bool) for w in weights),
    }
    G = H.copy()
    G.graph = {}
    text = "\n".join(nx.generate_gexf(G))
    description = f"<description>{xml_text(_TAG + json.dumps(meta), 'a graph attribute')}</description>"
    return text.replace("</meta>", f"{description}</meta>", 1) + "\n"


def _parse(path: Path) -> tuple[nx.Graph, dict]:
    """networkx's GEXF reader on a defusedxml tree, and attnsym's meta record (``{}`` if none)."""
    tree = DefusedET.parse(path, forbid_dtd=True)
    reader = GEXFReader()
    reader.xml = tree
    for version in (reader.version, *reader.versions):  # as GEXFReader.__call__: the default first
        reader.set_version(version)
        graph = tree.find(f"{{{reader.NS_GEXF}}}graph")
        if graph is not None:
            break
    else:
        raise GraphFormatError(f"no <graph> element in the GEXF file (root element <{tree.getroot().tag}>)")
    meta: dict = {}
    for element in tree.iter(f"{{{reader.NS_GEXF}}}description"):
        if (element.text or "").startswith(_TAG):
            meta = json.loads(element.text[len(_TAG):])
    declared = [node.get("id") for node in graph.iter(f"{{{reader.NS_GEXF}}}node")]
    check_declared_once(declared)
    G = reader.make_graph(graph)
    undeclared = set(G) - set(declared)
    if undeclared:
        raise GraphFormatError(f"an edge refers to node {min(undeclared, key=repr)!r}, which the file never declares")
    return G, meta


def _keep_only(items, which: bool | list, pop, directed: bool = True) -> None:
    """Drop the attribute networkx invented from every item the original did not have it on."""
    if which is True:
        return
    keep = set()
    for item in [] if which is False else which:
        if isinstance(item, list):  # an edge (u, v); either way round in an undirected graph
            keep.update([tuple(item)] if directed else [tuple(item), tuple(reversed(item))])
        else:
            keep.add(item)
    for item in items:
        if item not in keep:
            pop(item)


def read_gexf(path: Path) -> nx.Graph:
    """Read a GEXF file; an attnsym file gets back exactly the graph that was written."""
    G, meta = _parse(path)
    G = int_ids(G)
    if meta:
        G.graph.clear()
        G.graph.update(meta["graph"])
        _keep_only(list(G), meta["node_label"], lambda node: G.nodes[node].pop("label", None))
        _keep_only(list(G.edges), meta["edge_id"], lambda edge: G.edges[edge].pop("id", None), G.is_directed())
        if meta["int_weight"]:
            for _, _, data in G.edges(data=True):
                if "weight" in data:
                    data["weight"] = int(data["weight"])
    return G
