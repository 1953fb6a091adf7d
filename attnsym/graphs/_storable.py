"""What a graph file can hold exactly: the checks every export runs, shared by the format modules.

:func:`sanitise` turns NumPy scalars into plain Python values (or refuses, naming the node or
attribute); :func:`check_storable` refuses what a given format would not give back exactly
(lone surrogates, XML control characters, NaN in JSON/DOT, the attribute names a format uses
itself). The format modules (:mod:`._graphml`, :mod:`._gexf`, :mod:`._dot`) and
:mod:`attnsym.graphs.io` import from here; this module imports none of them.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import networkx as nx
import numpy as np

from ..errors import FileFormatError

INT_RE = re.compile(r"-?(0|[1-9][0-9]*)\Z")
XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class GraphFormatError(FileFormatError):
    """A graph cannot be written to (or read from) a format exactly; the message names the node, attribute or file."""


# --------------------------------------------------------------------------- sanitising
def _plain(value: Any, where: str) -> bool | int | float | str:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return str(value)
    raise GraphFormatError(
        f"{where} is {value!r} of type {type(value).__name__}; graph files can store only bool, int, float "
        "and str attributes exactly"
    )


def _plain_node(node: Any) -> int | str:
    if isinstance(node, (bool, np.bool_)) or not isinstance(node, (numbers.Integral, str)):
        raise GraphFormatError(
            f"node ids must be int or str to survive a round trip (got {node!r} of type {type(node).__name__}); "
            "relabel first, e.g. nx.convert_node_labels_to_integers(G, label_attribute='name')"
        )
    return int(node) if isinstance(node, numbers.Integral) else str(node)


_PLAIN = (bool, int, float, str)


def _already_plain(G: nx.Graph) -> bool:
    """Every node id exactly int/str and every attribute exactly bool/int/float/str (no subclasses)."""
    plain = _PLAIN
    for k, v in G.graph.items():
        if type(k) is not str or type(v) not in plain:
            return False
    for node, data in G.nodes(data=True):
        if type(node) not in (int, str):
            return False
        for k, v in data.items():
            if type(k) is not str or type(v) not in plain:
                return False
    for nbrs in G._adj.values():
        for data in nbrs.values():
            for k, v in data.items():
                if type(k) is not str or type(v) not in plain:
                    return False
    return True


def sanitise(G: nx.Graph) -> nx.Graph:
    """A copy of ``G`` with plain-Python node ids and attribute values (errors name the culprit)."""
    if not isinstance(G, nx.Graph):
        raise GraphFormatError(f"G must be a networkx graph (got {type(G).__name__})")
    if G.is_multigraph():
        raise GraphFormatError("multigraphs are not supported; convert with nx.DiGraph(G) or nx.Graph(G)")
    if _already_plain(G):  # the usual case: no copy of a million-edge graph
        return G
    H = G.__class__()
    H.graph.update({str(k): _plain(v, f"graph attribute {k!r}") for k, v in G.graph.items()})
    ids = {}
    for node, data in G.nodes(data=True):
        ids[node] = _plain_node(node)
        H.add_node(ids[node], **{str(k): _plain(v, f"attribute {k!r} of node {node!r}") for k, v in data.items()})
    if len(set(ids.values())) != len(ids):
        raise GraphFormatError("two node ids become equal once converted to int/str; relabel the graph first")
    for u, v, data in G.edges(data=True):
        H.add_edge(ids[u], ids[v], **{str(k): _plain(w, f"attribute {k!r} of edge {u!r}->{v!r}") for k, w in data.items()})
    return H


def check_text_ids(H: nx.Graph, fmt: str) -> None:
    """GraphML/GEXF store ids as text: forbid str ids that would read back as ints."""
    kinds = {type(node) for node in H}
    if kinds == {int, str}:
        raise GraphFormatError(
            f"{fmt} stores node ids as text, so a graph mixing int and str ids cannot round-trip; "
            "relabel to one kind (e.g. nx.relabel_nodes(G, str)) or use the json/dot formats"
        )
    if str in kinds and any(isinstance(n, str) and INT_RE.match(n) for n in H):
        raise GraphFormatError(
            f"{fmt} stores node ids as text, so the str id(s) that look like integers "
            f"(e.g. {next(n for n in H if isinstance(n, str) and INT_RE.match(n))!r}) would come back as int; "
            "use int ids or other names"
        )


#: attribute names a format uses for itself (they would be dropped or misread on the way back)
_RESERVED: dict[str, dict[str, set[str]]] = {
    "json": {"node": {"id"}, "edge": {"source", "target", "key"}, "graph": set()},
    "gexf": {"node": {"id", "key", "viz", "start", "end", "spells", "pid", "parents"},
             "edge": {"viz", "start", "end", "spells", "key", "type", "networkx_key"}, "graph": set()},
    "graphml": {"node": set(), "edge": set(), "graph": set()},
    "dot": {"node": set(), "edge": set(), "graph": set()},
}


def check_storable(H: nx.Graph, fmt: str) -> None:
    """Refuse, naming the node or attribute, anything ``fmt`` could not give back exactly."""
    xml = fmt in ("graphml", "gexf")

    def text_ok(text: str, where: str) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise GraphFormatError(f"{where} contains a lone surrogate ({text!r}), which a UTF-8 file cannot hold") from None
        if xml and XML_BAD.search(text):
            raise GraphFormatError(f"{where} contains a control character {fmt} (XML) cannot hold: {text!r}")

    def value_ok(value: Any, where: str) -> None:
        if isinstance(value, str):
            text_ok(value, where)
        elif isinstance(value, float) and not math.isfinite(value) and fmt in ("json", "dot"):
            raise GraphFormatError(f"{where} is {value!r}; {fmt} has no standard spelling for NaN or infinity "
                                   "(GraphML has: use a .graphml file)")

    def items_ok(domain: str, items, owner: str) -> None:
        for key, value in items:
            where = f"attribute {key!r} of {owner}"
            text_ok(key, f"the name of {where}")
            if key in _RESERVED[fmt][domain]:
                raise GraphFormatError(f"{where}: {fmt} uses the {domain} attribute name {key!r} itself, so it would "
                                       "not come back; rename it")
            if fmt == "gexf" and domain == "edge" and key == "weight":
                if isinstance(value, bool | str):
                    raise GraphFormatError(f"{where} is {value!r}; GEXF stores edge weights as numbers")
                if isinstance(value, int) and abs(value) > 2**53:
                    raise GraphFormatError(f"{where} is {value}; GEXF stores edge weights as doubles, exact only "
                                           "up to 2**53")
            if fmt == "gexf" and (key == "label" or (domain == "edge" and key == "id")) and not isinstance(value, str):
                raise GraphFormatError(f"{where} is {value!r}; GEXF stores {key}s as text, so it would come back a str")
            value_ok(value, where)

    items_ok("graph", H.graph.items(), "the graph")
    for node, data in H.nodes(data=True):
        if isinstance(node, str):
            text_ok(node, f"node id {node!r}")
        items_ok("node", data.items(), f"node {node!r}")
    for u, v, data in H.edges(data=True):
        items_ok("edge", data.items(), f"edge {u!r} -> {v!r}")



def xml_text(value: str, where: str) -> str:
    if XML_BAD.search(value):
        raise GraphFormatError(f"{where} contains a control character XML cannot hold: {value!r}")
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#9;"))


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"



def check_uniform_types(H: nx.Graph, fmt: str) -> None:
    """GraphML and GEXF declare one type per attribute name: refuse mixtures rather than coerce."""
    for domain, items in (
        ("node", (data for _, data in H.nodes(data=True))),
        ("edge", (data for _, _, data in H.edges(data=True))),
    ):
        seen: dict[str, str] = {}
        for data in items:
            for name, value in data.items():
                kind = type_name(value)
                if seen.setdefault(name, kind) != kind:
                    raise GraphFormatError(
                        f"{domain} attribute {name!r} mixes types ({seen[name]} and {kind}); "
                        f"{fmt} declares one type per attribute"
                    )



def check_declared_once(ids: list) -> None:
    """Refuse a file that declares a node twice (networkx's readers would merge the two silently)."""
    seen: set = set()
    for node in ids:
        if node in seen:
            raise GraphFormatError(f"node {node!r} is declared twice")
        seen.add(node)


def int_ids(G: nx.Graph) -> nx.Graph:
    if all(isinstance(n, str) and INT_RE.match(n) for n in G):
        return nx.relabel_nodes(G, {n: int(n) for n in G}, copy=True)
    return G
