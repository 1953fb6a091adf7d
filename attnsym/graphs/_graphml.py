"""GraphML: attnsym's streaming writer and networkx's reader, fed a tree parsed safely.

**Writing** is done here, not by ``nx.write_graphml``: networkx builds an ElementTree of every
element before writing a byte, while :func:`graphml_text` streams the text with typed
``<key>`` declarations and ``repr`` floats (the shortest text that reads back to the same
double). On a dense 1024 x 1024 attention matrix (1,048,576 edges, 87 MiB) it was 4.7x
faster than ``nx.write_graphml`` (docs/benchmarks.md, "write GraphML", written by
benchmarks/bench_graphs.py); that is why the writer stays.

**Reading** is networkx's own :class:`networkx.readwrite.graphml.GraphMLReader` (every GraphML
feature it knows: defaults, yEd extensions, parallel edges as a multigraph), handed a tree
that :mod:`defusedxml` parsed with DTDs refused, so no entity is ever expanded and the file is
parsed once. Measured on the property suite's hostile graphs (tests/strategies.py
``hostile_graphs``), networkx's reader gives back exactly what :func:`graphml_text` wrote,
types included, so attnsym keeps no GraphML reader of its own. What is added on top:
canonical-integer ids are read as ``int`` (GraphML stores ids as text), the empty
``node_default``/``edge_default`` dicts networkx adds are dropped, and an edge to a node the
file never declares, or a node declared twice, is an error (networkx would create or merge it
silently).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as DefusedET
import networkx as nx
from networkx.readwrite.graphml import GraphMLReader

from ._storable import INT_RE, GraphFormatError, check_declared_once, type_name, xml_text

__all__ = ["graphml_text", "read_graphml"]


def _graphml_keys(items, domain: str, keys: dict, lines: list) -> None:
    for name, value in items:
        kind = type_name(value)
        if (domain, name) in keys:
            if keys[(domain, name)][1] != kind:
                raise GraphFormatError(
                    f"{domain} attribute {name!r} mixes types ({keys[(domain, name)][1]} and {kind}); "
                    "GraphML declares one type per attribute"
                )
            continue
        key_id = f"d{len(keys)}"
        keys[(domain, name)] = (key_id, kind)
        lines.append(f'  <key id="{key_id}" for="{domain}" attr.name="{xml_text(name, "attribute name")}" '
                     f'attr.type="{kind}" />')


def graphml_text(H: nx.Graph) -> str:
    keys: dict[tuple[str, str], tuple[str, str]] = {}
    head = [
        "<?xml version='1.0' encoding='utf-8'?>",
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
        'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
    ]
    _graphml_keys(H.graph.items(), "graph", keys, head)
    for _, data in H.nodes(data=True):
        _graphml_keys(data.items(), "node", keys, head)
    # distinct (name, type) pairs first: one cheap pass over a possibly million-edge graph
    seen = {(k, type(v)) for nbrs in H._adj.values() for data in nbrs.values() for k, v in data.items()}
    first: dict[str, list[Any]] = {}
    for name, kind in sorted(seen, key=lambda pair: (pair[0], pair[1].__name__)):
        first.setdefault(name, []).append(kind(0) if kind is not str else "")
    for name, samples in first.items():
        _graphml_keys([(name, value) for value in samples], "edge", keys, head)

    def text(value: Any, where: str) -> str:
        kind = type(value)
        if kind is float:
            return repr(value) if math.isfinite(value) else _XSD_DOUBLE[repr(value)]
        if kind is bool:
            return "true" if value else "false"
        if kind is int:
            return str(value)
        return xml_text(value, where)

    def data_xml(domain: str, items, where: str) -> str:
        return "".join(f'<data key="{keys[(domain, k)][0]}">{text(v, where)}</data>' for k, v in items)

    edge_keys = {name: key_id for (domain, name), (key_id, _) in keys.items() if domain == "edge"}

    def edge_xml(u, v, data) -> str:
        if len(data) == 1 and "weight" in data and type(data["weight"]) is float:  # the common case, fast
            return (f'    <edge source="{ids[u]}" target="{ids[v]}">'
                    f'<data key="{edge_keys["weight"]}">{data["weight"]!r}</data></edge>')
        return f'    <edge source="{ids[u]}" target="{ids[v]}">{data_xml("edge", data.items(), "an edge")}</edge>'

    body = [f'  <graph edgedefault="{"directed" if H.is_directed() else "undirected"}">']
    if H.graph:
        body.append("    " + data_xml("graph", H.graph.items(), "a graph attribute"))
    ids = {node: xml_text(str(node), "a node id") for node in H}
    body.extend(f'    <node id="{ids[node]}">{data_xml("node", data.items(), f"node {node!r}")}</node>'
                for node, data in H.nodes(data=True))
    body.extend(edge_xml(u, v, data) for u, v, data in H.edges(data=True))
    body += ["  </graph>", "</graphml>", ""]
    return "\n".join(head + body)


#: XML Schema's spellings of the non-finite doubles (``float()`` reads them back)
_XSD_DOUBLE = {"nan": "NaN", "inf": "INF", "-inf": "-INF"}


def read_graphml(path: Path) -> nx.Graph:
    """Read a GraphML file with networkx's reader, parsed by defusedxml (DTDs and entities refused)."""
    reader = GraphMLReader()
    namespace = f"{{{reader.NS_GRAPHML}}}"
    root = DefusedET.parse(path, forbid_dtd=True).getroot()
    if root.tag == "graphml":  # no namespace: read it as GraphML's, as nx.read_graphml does
        text = path.read_bytes().replace(b"<graphml>", b'<graphml xmlns="http://graphml.graphdrawing.org/xmlns">', 1)
        root = DefusedET.fromstring(text, forbid_dtd=True)
    if root.tag != f"{namespace}graphml":
        raise GraphFormatError(f"not a GraphML file: the root element is <{root.tag}>, not <graphml>")
    reader.xml = root
    key_ids = [key.get("id") for key in root.findall(f"{namespace}key")]
    repeated = sorted({k for k in key_ids if key_ids.count(k) > 1}, key=str)
    if repeated:  # networkx keeps the last declaration: data would be read with the wrong name or type
        raise GraphFormatError(f"GraphML: <key id={repeated[0]!r}> is declared {key_ids.count(repeated[0])} times; "
                               "each key id must be declared once")
    stray = [child for child in root if child.tag == f"{namespace}data"]
    if stray:  # a <data> of the <graphml> element itself: networkx drops it silently
        raise GraphFormatError(f"GraphML: <data key={stray[0].get('key')!r}> is outside every <graph>; data belongs "
                               "in a <graph>, <node> or <edge>")
    keys, defaults = reader.find_graphml_keys(root)
    graphs = root.findall(f"{namespace}graph")
    if not graphs:
        raise GraphFormatError("no <graph> element in the GraphML file")
    if len(graphs) > 1:
        raise GraphFormatError(f"GraphML: the file holds {len(graphs)} <graph> elements; attnsym.graphs.read reads one")
    declared = [node.get("id") for node in graphs[0].iter(f"{namespace}node")]
    if declared and all(node is not None and INT_RE.match(node) for node in declared):
        reader.node_type = int  # GraphML stores ids as text: canonical integers come back as int
        declared = [int(node) for node in declared]
    check_declared_once(declared)
    G = reader.make_graph(graphs[0], keys, defaults)
    undeclared = set(G) - set(declared)
    if undeclared:
        raise GraphFormatError(f"an edge refers to node {min(undeclared, key=repr)!r}, which the file never declares")
    for key in ("node_default", "edge_default"):
        if G.graph.get(key) == {}:
            del G.graph[key]
    return G
