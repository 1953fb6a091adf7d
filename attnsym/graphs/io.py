r"""Writing and reading graphs: GraphML, GEXF, node-link JSON and DOT, exactly and atomically.

:func:`export` picks the format from the suffix (``.graphml``, ``.gexf``, ``.json``, ``.dot``
or ``.gv``) unless ``format=`` is given, writes through :func:`attnsym._io.atomic_write`
(temporary file, then rename) and refuses to replace an existing file unless
``overwrite=True``. :func:`read` reads any of them back.

**Exact round trips.** Node ids must be ``int`` or ``str``; attribute values must be ``bool``,
``int``, ``float`` or ``str`` (NumPy scalars are converted: ``np.float64 -> float``,
``np.int64 -> int``, ``np.bool_ -> bool``). Floats are written with ``repr`` (the shortest
string that reads back to the same double), so every weight survives bit for bit, and types
survive too: an ``int`` comes back an ``int``, a ``float`` a ``float``. Per format:

* **GraphML** — written by a small streaming writer here (typed ``<key>`` declarations; about
  5× faster than networkx's ElementTree writer on a million edges, see docs/benchmarks.md),
  read by a streaming ``iterparse`` reader (falling back to ``nx.read_graphml`` for GraphML
  features beyond typed keys and data: defaults, hyperedges, ports, nested graphs). GraphML
  stores node ids as text: when every id reads as a canonical integer, :func:`read` turns
  them back into ``int``.
* **GEXF** — written and read by networkx. GEXF has no place for graph attributes nor for
  integer edge weights; attnsym stores both as JSON in the ``<meta><description>`` element
  and restores them on reading, and drops the ``label``/``id`` attributes networkx adds on
  reading unless the original graph had them.
* **JSON** — networkx node-link data (``"edges"`` key), via the standard ``json`` module.
* **DOT** — written and parsed here (pydot/pygraphviz are not required). Strings are
  always quoted; unquoted values are numbers or ``true``/``false``, which is how types survive.
  :func:`read` understands the subset of DOT that :func:`export` writes, plus comments,
  ``node``/``edge`` default attribute statements and edge chains ``a -> b -> c``; subgraphs and
  HTML labels raise :class:`GraphFormatError`. (Graphviz itself treats every value as a string.)
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as DefusedET
import networkx as nx
import numpy as np
from defusedxml import DefusedXmlException

from .._io import atomic_write, refuse_existing
from ..errors import FileFormatError

__all__ = ["FORMATS", "GraphFormatError", "export", "read"]

FORMATS = {".graphml": "graphml", ".gexf": "gexf", ".json": "json", ".dot": "dot", ".gv": "dot"}
_INT_RE = re.compile(r"-?(0|[1-9][0-9]*)\Z")
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_GEXF_TAG = "attnsym:"


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


def _sanitise(G: nx.Graph) -> nx.Graph:
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


def _check_text_ids(H: nx.Graph, fmt: str) -> None:
    """GraphML/GEXF store ids as text: forbid str ids that would read back as ints."""
    kinds = {type(node) for node in H}
    if kinds == {int, str}:
        raise GraphFormatError(
            f"{fmt} stores node ids as text, so a graph mixing int and str ids cannot round-trip; "
            "relabel to one kind (e.g. nx.relabel_nodes(G, str)) or use the json/dot formats"
        )
    if str in kinds and any(isinstance(n, str) and _INT_RE.match(n) for n in H):
        raise GraphFormatError(
            f"{fmt} stores node ids as text, so the str id(s) that look like integers "
            f"(e.g. {next(n for n in H if isinstance(n, str) and _INT_RE.match(n))!r}) would come back as int; "
            "use int ids or other names"
        )


#: attribute names a format uses for itself (they would be dropped or misread on the way back)
_RESERVED = {
    "json": {"node": {"id"}, "edge": {"source", "target", "key"}, "graph": set()},
    "gexf": {"node": {"id", "key", "viz", "start", "end", "spells", "pid"}, "edge": {"viz", "start", "end", "spells", "key"},
             "graph": set()},
    "graphml": {"node": set(), "edge": set(), "graph": set()},
    "dot": {"node": set(), "edge": set(), "graph": set()},
}


def _check_storable(H: nx.Graph, fmt: str) -> None:
    """Refuse, naming the node or attribute, anything ``fmt`` could not give back exactly."""
    xml = fmt in ("graphml", "gexf")

    def text_ok(text: str, where: str) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise GraphFormatError(f"{where} contains a lone surrogate ({text!r}), which a UTF-8 file cannot hold") from None
        if xml and _XML_BAD.search(text):
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


# --------------------------------------------------------------------------- format choice
def _format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in set(FORMATS.values()):
            raise GraphFormatError(f"format must be one of {sorted(set(FORMATS.values()))} (got {fmt!r})")
        return fmt
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise GraphFormatError(
            f"cannot tell the format of {str(path)!r} from its suffix {suffix!r}; use one of "
            f"{sorted(FORMATS)} or pass format="
        )
    return FORMATS[suffix]


def export(G: nx.Graph, path: str | os.PathLike, format: str | None = None, *, overwrite: bool = False) -> Path:
    """Write ``G`` to ``path`` as GraphML, GEXF, node-link JSON or DOT, atomically.

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph
        Node ids ``int`` or ``str``; attributes ``bool``/``int``/``float``/``str`` (NumPy
        scalars are converted).
    path : str or PathLike
        Destination; its suffix chooses the format unless ``format`` is given.
    format : {"graphml", "gexf", "json", "dot"}, optional
        Force a format.
    overwrite : bool, default False
        Replace an existing file (otherwise :class:`~attnsym.errors.OverwriteError`).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    GraphFormatError
        Unknown format, multigraph, or an id/attribute that cannot be stored exactly.
    OverwriteError
        ``path`` exists and ``overwrite`` is False.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from attnsym.graphs import routing_graph
    >>> G = routing_graph(np.array([[1.0, 0.0], [0.1, 0.9]]), tokens=["a", "b"])
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for suffix in (".graphml", ".gexf", ".json", ".dot"):
    ...     H = read(export(G, folder / f"g{suffix}"))
    ...     assert sorted(H.edges(data=True)) == sorted(G.edges(data=True))
    ...     assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))
    >>> sorted(read(folder / "g.dot").edges(data="weight"))
    [(0, 0, 1.0), (0, 1, 0.1), (1, 1, 0.9)]
    """
    path = Path(path)
    fmt = _format(path, format)
    refuse_existing(path, overwrite=overwrite)  # before the (possibly long) serialisation
    H = _sanitise(G)
    _check_storable(H, fmt)
    if fmt == "graphml":
        _check_text_ids(H, "GraphML")
        text = _graphml_text(H)
    elif fmt == "gexf":
        _check_text_ids(H, "GEXF")
        text = _gexf_text(H)
    elif fmt == "json":
        text = json.dumps(_node_link_data(H), allow_nan=False)
    else:
        text = _dot_text(H)
    return atomic_write(path, text, overwrite=overwrite)


def read(path: str | os.PathLike, format: str | None = None) -> nx.Graph:
    """Read a graph written by :func:`export` (or another tool) back into networkx.

    See the module docstring for what each format restores; integer-looking node ids of
    GraphML/GEXF files become ``int``.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    GraphFormatError
        Unknown suffix, or DOT outside the supported subset.
    """
    path = Path(path)
    fmt = _format(path, format)
    if not path.exists():
        raise FileFormatError(f"no graph file at {str(path)!r}")
    if not path.is_file():
        raise FileFormatError(f"{path} is not a file")
    try:
        return _read(path, fmt)
    except GraphFormatError as error:
        raise GraphFormatError(f"{path}: {error}" if str(path) not in str(error) else str(error)) from error
    except (ET.ParseError, DefusedXmlException) as error:
        raise GraphFormatError(f"{path}: not well-formed {fmt} (XML) or uses entities/DTDs, which are refused: "
                               f"{error}") from error
    except json.JSONDecodeError as error:
        raise GraphFormatError(f"{path}: not valid JSON: {error}") from error
    except UnicodeDecodeError as error:
        raise GraphFormatError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    except RecursionError:
        raise GraphFormatError(f"{path}: nested too deeply to read") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, nx.NetworkXError) as error:
        raise GraphFormatError(f"{path}: not a {fmt} graph attnsym can read ({type(error).__name__}: {error})") from error


def _read(path: Path, fmt: str) -> nx.Graph:
    if fmt == "graphml":
        try:
            return _int_ids(_read_simple_graphml(path))
        except _NotSimple:
            pass
        G = nx.read_graphml(path)
        for key in ("node_default", "edge_default"):
            if G.graph.get(key) == {}:
                del G.graph[key]
        return _int_ids(G)
    if fmt == "gexf":
        return _read_gexf(path)
    if fmt == "json":
        return _node_link_graph(json.loads(path.read_text(encoding="utf-8")))
    return _parse_dot(path.read_text(encoding="utf-8"))


def _int_ids(G: nx.Graph) -> nx.Graph:
    if all(isinstance(n, str) and _INT_RE.match(n) for n in G):
        return nx.relabel_nodes(G, {n: int(n) for n in G}, copy=True)
    return G


# --------------------------------------------------------------------------- JSON
def _node_link_data(H: nx.Graph) -> dict:
    try:
        return nx.node_link_data(H, edges="edges")
    except TypeError:  # networkx < 3.4
        return nx.node_link_data(H, link="edges")


def _node_link_graph(data: dict) -> nx.Graph:
    try:
        return nx.node_link_graph(data, edges="edges")
    except TypeError:  # networkx < 3.4
        return nx.node_link_graph(data, link="edges")


# --------------------------------------------------------------------------- GraphML
def _xml_text(value: str, where: str) -> str:
    if _XML_BAD.search(value):
        raise GraphFormatError(f"{where} contains a control character XML cannot hold: {value!r}")
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#9;"))


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _graphml_keys(items, domain: str, keys: dict, lines: list) -> None:
    for name, value in items:
        kind = _type_name(value)
        if (domain, name) in keys:
            if keys[(domain, name)][1] != kind:
                raise GraphFormatError(
                    f"{domain} attribute {name!r} mixes types ({keys[(domain, name)][1]} and {kind}); "
                    "GraphML declares one type per attribute"
                )
            continue
        key_id = f"d{len(keys)}"
        keys[(domain, name)] = (key_id, kind)
        lines.append(f'  <key id="{key_id}" for="{domain}" attr.name="{_xml_text(name, "attribute name")}" '
                     f'attr.type="{kind}" />')


def _graphml_text(H: nx.Graph) -> str:
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
    first = {}
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
        return _xml_text(value, where)

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
    ids = {node: _xml_text(str(node), "a node id") for node in H}
    body.extend(f'    <node id="{ids[node]}">{data_xml("node", data.items(), f"node {node!r}")}</node>'
                for node, data in H.nodes(data=True))
    body.extend(edge_xml(u, v, data) for u, v, data in H.edges(data=True))
    body += ["  </graph>", "</graphml>", ""]
    return "\n".join(head + body)


#: XML Schema's spellings of the non-finite doubles (``float()`` reads them back)
_XSD_DOUBLE = {"nan": "NaN", "inf": "INF", "-inf": "-INF"}


class _NotSimple(Exception):
    """A GraphML feature the fast reader leaves to networkx (defaults, hyperedges, nested graphs, ports…)."""


_GRAPHML_TYPES = {"boolean": None, "int": int, "long": int, "float": float, "double": float, "string": str}


def _read_simple_graphml(path: Path) -> nx.Graph:
    """Stream a plain GraphML file (what :func:`export` writes) with ``iterparse``.

    Handles typed ``<key>`` declarations and ``<data>`` on the graph, nodes and edges; anything
    else raises :class:`_NotSimple` and :func:`read` falls back to ``nx.read_graphml``.
    """
    keys: dict[str, tuple[str, Any]] = {}
    G: nx.Graph | None = None
    target: dict | None = None
    edges: list = []
    for event, element in DefusedET.iterparse(path, events=("start", "end"), forbid_dtd=True):
        tag = element.tag.rsplit("}", 1)[-1]
        if event == "start":
            if tag == "graph":
                if G is not None:
                    raise _NotSimple
                directed = element.get("edgedefault", "directed") == "directed"
                G = nx.DiGraph() if directed else nx.Graph()
                target = G.graph
            elif tag == "node":
                node = element.get("id")
                if G is None or node is None or node in G:
                    raise _NotSimple
                G.add_node(node)
                target = G._node[node]
            elif tag == "edge":
                if G is None or element.get("directed") not in (None, "true" if G.is_directed() else "false"):
                    raise _NotSimple
                target = {}
                edges.append((element.get("source"), element.get("target"), target))
            elif tag in ("default", "hyperedge", "port", "endpoint", "locator"):
                raise _NotSimple
            continue
        if tag == "key":
            kind = element.get("attr.type", "string")
            if kind not in _GRAPHML_TYPES or element.find("{*}default") is not None:
                raise _NotSimple
            keys[element.get("id")] = (element.get("attr.name", element.get("id")), _GRAPHML_TYPES[kind])
        elif tag == "data":
            if target is None or element.get("key") not in keys or len(element):
                raise _NotSimple
            name, convert = keys[element.get("key")]
            text = element.text or ""
            if convert is None:
                if text.strip().lower() not in ("true", "false", "1", "0"):
                    raise _NotSimple
                value: Any = text.strip().lower() in ("true", "1")
            else:
                value = convert(text)
            target[name] = value
        elif tag in ("node", "edge"):
            target = G.graph if G is not None else None
            element.clear()
    if G is None:
        raise _NotSimple
    if G.is_directed():
        succ, pred = G._succ, G._pred
        for u, v, data in edges:
            if u not in succ or v not in succ or v in succ[u]:
                raise _NotSimple  # undeclared endpoints or parallel edges: let networkx decide
            succ[u][v] = data
            pred[v][u] = data
    else:
        for u, v, data in edges:
            if u not in G or v not in G or G.has_edge(u, v):
                raise _NotSimple
            G.add_edge(u, v, **data)
    return G


# --------------------------------------------------------------------------- GEXF
def _check_uniform_types(H: nx.Graph, fmt: str) -> None:
    """GraphML and GEXF declare one type per attribute name: refuse mixtures rather than coerce."""
    for domain, items in (
        ("node", (data for _, data in H.nodes(data=True))),
        ("edge", (data for _, _, data in H.edges(data=True))),
    ):
        seen: dict[str, str] = {}
        for data in items:
            for name, value in data.items():
                kind = _type_name(value)
                if seen.setdefault(name, kind) != kind:
                    raise GraphFormatError(
                        f"{domain} attribute {name!r} mixes types ({seen[name]} and {kind}); "
                        f"{fmt} declares one type per attribute"
                    )


def _gexf_text(H: nx.Graph) -> str:
    _check_uniform_types(H, "GEXF")
    for node, data in H.nodes(data=True):
        for key, value in data.items():
            if isinstance(value, str):
                _xml_text(value, f"attribute {key!r} of node {node!r}")
    weights = [w for _, _, w in H.edges(data="weight") if w is not None]
    meta = {
        "graph": H.graph,
        "node_label": any("label" in d for _, d in H.nodes(data=True)),
        "edge_id": any("id" in d for _, _, d in H.edges(data=True)),
        "int_weight": bool(weights) and all(isinstance(w, int) and not isinstance(w, bool) for w in weights),
    }
    G = H.copy()
    G.graph = {}
    text = "\n".join(nx.generate_gexf(G))
    description = f"<description>{_xml_text(_GEXF_TAG + json.dumps(meta), 'a graph attribute')}</description>"
    return text.replace("</meta>", f"{description}</meta>", 1) + "\n"


def _read_gexf(path: Path) -> nx.Graph:
    root = DefusedET.parse(path, forbid_dtd=True).getroot()  # entities and DTDs refused before networkx parses
    G = nx.read_gexf(path)
    meta = {}
    for element in root.iter():
        if element.tag.endswith("description") and (element.text or "").startswith(_GEXF_TAG):
            meta = json.loads(element.text[len(_GEXF_TAG):])
    G = _int_ids(G)
    if meta:
        G.graph.clear()
        G.graph.update(meta["graph"])
        if not meta["node_label"]:
            for _, data in G.nodes(data=True):
                data.pop("label", None)
        if not meta["edge_id"]:
            for _, _, data in G.edges(data=True):
                data.pop("id", None)
        if meta["int_weight"]:
            for _, _, data in G.edges(data=True):
                if "weight" in data:
                    data["weight"] = int(data["weight"])
    return G


# --------------------------------------------------------------------------- DOT
def _dot_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _dot_id(node: int | str) -> str:
    return str(node) if isinstance(node, int) else _dot_value(node)


def _dot_attrs(data: dict) -> str:
    if not data:
        return ""
    return " [" + ", ".join(f"{_dot_value(str(k))}={_dot_value(v)}" for k, v in data.items()) + "]"


def _dot_text(H: nx.Graph) -> str:
    kind, arrow = ("digraph", "->") if H.is_directed() else ("graph", "--")
    lines = [f"{kind} {{"]
    if H.graph:
        lines.append(f"  graph{_dot_attrs(H.graph)};")
    lines.extend(f"  {_dot_id(node)}{_dot_attrs(data)};" for node, data in H.nodes(data=True))
    lines.extend(f"  {_dot_id(u)} {arrow} {_dot_id(v)}{_dot_attrs(data)};" for u, v, data in H.edges(data=True))
    lines.append("}")
    return "\n".join(lines) + "\n"


_DOT_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<arrow>->|--)
  | (?P<punct>[{}\[\];,=:])
  | (?P<html><)
  | (?P<id>-inf\b|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[A-Za-z_\x80-\uffff][A-Za-z_0-9\x80-\uffff]*)
    """,
    re.VERBOSE | re.DOTALL,
)
_UNESCAPE = {"n": "\n", "r": "\r", '"': '"', "\\": "\\", "l": "\n"}


def _tokens(text: str) -> list[tuple[str, Any]]:
    out, pos = [], 0
    while pos < len(text):
        m = _DOT_TOKEN.match(text, pos)
        if m is None:
            raise GraphFormatError(f"DOT: cannot read {text[pos:pos + 20]!r} at character {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        if kind == "html":
            raise GraphFormatError("DOT: HTML-like labels <...> are not supported by attnsym.graphs.read")
        if kind == "string":
            body = m.group()[1:-1]
            value = re.sub(r"\\(.)", lambda e: _UNESCAPE.get(e.group(1), "\\" + e.group(1)), body, flags=re.DOTALL)
            out.append(("string", value))
        else:
            out.append((kind, m.group()))
    return out


def _bare(token: str) -> Any:
    """An unquoted DOT value: int, float, bool, or (a plain identifier) str."""
    if _INT_RE.match(token):
        return int(token)
    if token in ("true", "false"):
        return token == "true"
    if token in ("inf", "-inf", "nan"):
        return float(token)
    try:
        return float(token)
    except ValueError:
        return token


def _parse_dot(text: str) -> nx.Graph:
    toks = _tokens(text)
    pos = 0

    def peek(offset: int = 0):
        return toks[pos + offset] if pos + offset < len(toks) else ("eof", None)

    def take(kind: str | None = None, value: str | None = None):
        nonlocal pos
        tok = peek()
        if (kind and tok[0] != kind) or (value and tok[1] != value):
            raise GraphFormatError(f"DOT: expected {value or kind} but found {tok[1]!r} (token {pos})")
        pos += 1
        return tok

    if peek()[0] == "id" and peek()[1].lower() == "strict":
        take()
    head = take("id")[1].lower()
    if head not in ("graph", "digraph"):
        raise GraphFormatError(f"DOT: a file must start with 'graph' or 'digraph' (got {head!r})")
    G: nx.Graph = nx.DiGraph() if head == "digraph" else nx.Graph()
    if peek()[0] in ("id", "string"):
        take()  # graph name (not kept)
    take("punct", "{")
    defaults = {"node": {}, "edge": {}}

    def attr_list() -> dict:
        attrs = {}
        while peek() == ("punct", "["):
            take()
            while peek() != ("punct", "]"):
                key = take()[1]
                take("punct", "=")
                kind, raw = take()
                attrs[key] = raw if kind == "string" else _bare(raw)
                if peek()[1] in (",", ";"):
                    take()
            take("punct", "]")
        return attrs

    def node_id():
        kind, raw = take()
        if kind not in ("id", "string"):
            raise GraphFormatError(f"DOT: expected a node id but found {raw!r}")
        if peek() == ("punct", ":"):
            raise GraphFormatError("DOT: node ports (a:b) are not supported by attnsym.graphs.read")
        return raw if kind == "string" else _bare(raw)

    while peek() != ("punct", "}"):
        kind, raw = peek()
        if kind == "eof":
            raise GraphFormatError("DOT: missing closing '}'")
        if kind == "punct" and raw == ";":
            take()
            continue
        if (kind == "punct" and raw == "{") or (kind == "id" and raw.lower() == "subgraph"):
            raise GraphFormatError("DOT: subgraphs are not supported by attnsym.graphs.read")
        if kind == "id" and raw.lower() in ("graph", "node", "edge") and peek(1) == ("punct", "["):
            take()
            attrs = attr_list()
            if raw.lower() == "graph":
                G.graph.update(attrs)
            else:
                defaults[raw.lower()].update(attrs)
            continue
        if peek(1) == ("punct", "="):  # graph attribute statement a = b
            key = take()[1]
            take()
            k2, v2 = take()
            G.graph[key] = v2 if k2 == "string" else _bare(v2)
            continue
        chain = [node_id()]
        while peek()[0] == "arrow":
            arrow = take()[1]
            if (arrow == "->") != G.is_directed():
                raise GraphFormatError(f"DOT: edge operator {arrow!r} does not match a {head}")
            chain.append(node_id())
        attrs = attr_list()
        if len(chain) == 1:
            node = chain[0]
            if node not in G:
                G.add_node(node, **defaults["node"])
            G.nodes[node].update(attrs)
        else:
            for node in chain:
                if node not in G:
                    G.add_node(node, **defaults["node"])
            for u, v in itertools.pairwise(chain):
                G.add_edge(u, v, **{**defaults["edge"], **attrs})
    take("punct", "}")
    return G
