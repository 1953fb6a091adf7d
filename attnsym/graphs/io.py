r"""Writing and reading graphs: GraphML, GEXF, node-link JSON and DOT, exactly and atomically.

:func:`export` picks the format from the suffix (``.graphml``, ``.gexf``, ``.json``, ``.dot``
or ``.gv``) unless ``format=`` is given, writes through :func:`attnsym._io.atomic_write`
(temporary file, then rename) and refuses to replace an existing file unless
``overwrite=True``. :func:`read` reads any of them back; every malformed file gives one
:class:`GraphFormatError` naming the file and what is wrong.

**Exact round trips.** Node ids must be ``int`` or ``str``; attribute values must be ``bool``,
``int``, ``float`` or ``str`` (NumPy scalars are converted: ``np.float64 -> float``,
``np.int64 -> int``, ``np.bool_ -> bool``). Floats are written with ``repr`` (the shortest
string that reads back to the same double), so every weight survives bit for bit, and types
survive too: an ``int`` comes back an ``int``, a ``float`` a ``float``. What a format cannot
give back is refused at export, naming the node or attribute (``._storable``). Per format,
who writes and who reads (each choice measured on the property suite's hostile graphs,
tests/test_properties.py):

* **GraphML** — attnsym's streaming writer (4.7x ``nx.write_graphml`` on a million edges),
  networkx's reader on a defusedxml tree (``._graphml``).
* **GEXF** — networkx both ways; graph attributes, int weights and which nodes/edges really
  had a ``label``/``id`` travel in ``<meta><description>`` (``._gexf``).
* **JSON** — networkx node-link data (``"edges"`` key) both ways, via the standard ``json``
  module; repeated keys, repeated node ids and edges to undeclared nodes are refused.
* **DOT** — attnsym's writer and reader: networkx reads DOT only through pydot/pygraphviz,
  and pydot's result is not the graph written (measured; ``._dot``).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
from defusedxml import DefusedXmlException

from .._io import atomic_write, refuse_existing
from ..errors import FileFormatError
from ._dot import dot_text, parse_dot
from ._gexf import gexf_text, read_gexf
from ._graphml import graphml_text, read_graphml
from ._storable import GraphFormatError, check_declared_once, check_storable, check_text_ids, sanitise

__all__ = ["FORMATS", "GraphFormatError", "export", "read"]

FORMATS = {".graphml": "graphml", ".gexf": "gexf", ".json": "json", ".dot": "dot", ".gv": "dot"}


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
    H = sanitise(G)
    check_storable(H, fmt)
    if fmt == "graphml":
        check_text_ids(H, "GraphML")
        text = graphml_text(H)
    elif fmt == "gexf":
        check_text_ids(H, "GEXF")
        text = gexf_text(H)
    elif fmt == "json":
        text = json.dumps(_node_link_data(H), allow_nan=False)
    else:
        text = dot_text(H)
    return atomic_write(path, text, overwrite=overwrite)


def read(path: str | os.PathLike, format: str | None = None) -> nx.Graph:
    """Read a graph written by :func:`export` (or another tool) back into networkx.

    GraphML, GEXF and JSON are read by networkx's own readers (XML parsed by defusedxml,
    DTDs and entities refused); DOT by attnsym's (networkx needs pydot or pygraphviz for DOT).
    See the module docstring for what each format restores; integer-looking node ids of
    GraphML/GEXF files become ``int``.

    Parameters
    ----------
    path : str or PathLike
        The file; its suffix chooses the format unless ``format`` is given.
    format : {"graphml", "gexf", "json", "dot"}, optional
        Force a format.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        (a multigraph only for a GraphML file of another tool with parallel edges).

    Raises
    ------
    FileFormatError
        ``path`` does not exist or is not a file.
    GraphFormatError
        Unknown suffix, or a malformed file: one error naming the file and what is wrong
        (not well-formed XML or JSON, a DTD or entity, not UTF-8, an edge to an undeclared
        node, a node declared twice, a key repeated in a JSON object, DOT outside the
        supported subset or cut short, with its line and column, nesting too deep).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "g.json"
    >>> _ = path.write_text('{"directed": true, "nodes": [{"id": 0}], "edges": [{"source": 0, "target": 1}]}')
    >>> read(path)
    Traceback (most recent call last):
    ...
    attnsym.graphs._storable.GraphFormatError: ...g.json: an edge refers to node 1, which the file never declares
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
        return read_graphml(path)
    if fmt == "gexf":
        return read_gexf(path)
    if fmt == "json":
        return _read_json(path)
    return parse_dot(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- JSON
def _node_link_data(H: nx.Graph) -> dict:
    try:
        return nx.node_link_data(H, edges="edges")
    except TypeError:  # networkx < 3.4
        return nx.node_link_data(H, link="edges")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise GraphFormatError(f"the key {key!r} appears twice in one JSON object")
        seen.add(key)
    return dict(pairs)


def _read_json(path: Path) -> nx.Graph:
    """networkx's ``node_link_graph``, after the checks it does not make (it would merge or invent nodes)."""
    data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise GraphFormatError('not node-link JSON: expected an object with a "nodes" list')
    edges = "edges" if "edges" in data or "links" not in data else "links"  # "links": networkx < 3.4 files
    ids = [node["id"] for node in data["nodes"]]
    check_declared_once(ids)
    declared = set(ids)
    for number, edge in enumerate(data.get(edges, [])):
        for end in ("source", "target"):
            if not isinstance(edge, dict) or end not in edge:
                raise GraphFormatError(f"edge {number} ({edge!r}) has no {end!r}")
            if edge[end] not in declared:
                raise GraphFormatError(f"an edge refers to node {edge[end]!r}, which the file never declares")
    try:
        return nx.node_link_graph(data, edges=edges)
    except TypeError:  # networkx < 3.4
        return nx.node_link_graph(data, link=edges)
