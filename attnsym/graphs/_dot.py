"""DOT: attnsym's writer and reader (the subset it writes, plus what people type by hand).

networkx reads DOT only through pydot or pygraphviz, neither of which attnsym depends on. It was
measured anyway (pydot 4.0.1 through ``nx.nx_pydot.read_dot``) on what :func:`dot_text` writes:
it does not give the graph back. For ``digraph { graph ["name"="x", "n"=3]; 0 ["token"="a b",
"k"=7]; 0 -> 1 ["weight"=0.1]; }`` it returns a ``MultiDiGraph`` with node ids ``'0'``/``'1'``
(str, not int), attribute names and string values still in their quotes (``'"token"': '"a b"'``),
escapes not undone, every number a str (``'"k"': '7'``) and the graph attributes dropped. Making
that exact would mean re-tokenising every value, which is what this module does in the first
place, so attnsym keeps its own reader.

Strings are always quoted; unquoted values are numbers or ``true``/``false``, which is how types
survive (Graphviz itself treats every value as a string). :func:`parse_dot` reads that subset,
plus comments, ``node``/``edge`` default attribute statements and edge chains ``a -> b -> c``;
subgraphs, ports and HTML labels raise :class:`GraphFormatError`.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import networkx as nx

from ._storable import INT_RE, GraphFormatError

__all__ = ["dot_text", "parse_dot"]


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


def dot_text(H: nx.Graph) -> str:
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
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _DOT_TOKEN.match(text, pos)
        if m is None:
            raise GraphFormatError(f"DOT: cannot read {text[pos:pos + 20]!r} at character {pos}")
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None, "every alternative of _DOT_TOKEN is a named group"
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
    if INT_RE.match(token):
        return int(token)
    if token in ("true", "false"):
        return token == "true"
    if token in ("inf", "-inf", "nan"):
        return float(token)
    try:
        return float(token)
    except ValueError:
        return token


class _TokenStream:
    """The tokens of a DOT text with a read position: look ahead with :meth:`peek`, consume with :meth:`take`."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, Any]:
        at = self.pos + offset
        return self.tokens[at] if at < len(self.tokens) else ("eof", None)

    def take(self, kind: str | None = None, value: str | None = None) -> tuple[str, Any]:
        tok = self.peek()
        if (kind and tok[0] != kind) or (value and tok[1] != value):
            raise GraphFormatError(f"DOT: expected {value or kind} but found {tok[1]!r} (token {self.pos})")
        self.pos += 1
        return tok


def _typed(tok: tuple[str, Any]) -> Any:
    """A value or node id as written: a quoted string stays a str, an unquoted one is typed by :func:`_bare`."""
    kind, raw = tok
    return raw if kind == "string" else _bare(raw)


def _graph_header(toks: _TokenStream) -> nx.Graph:
    """``[strict] graph|digraph [name] {``: the empty graph of that kind (the name is not kept)."""
    if toks.peek()[0] == "id" and toks.peek()[1].lower() == "strict":
        toks.take()
    head = toks.take("id")[1].lower()
    if head not in ("graph", "digraph"):
        raise GraphFormatError(f"DOT: a file must start with 'graph' or 'digraph' (got {head!r})")
    G: nx.Graph = nx.DiGraph() if head == "digraph" else nx.Graph()
    if toks.peek()[0] in ("id", "string"):
        toks.take()  # graph name (not kept)
    toks.take("punct", "{")
    return G


def _attr_lists(toks: _TokenStream) -> dict:
    """Zero or more ``[key=value, ...]`` lists, merged (a later key wins)."""
    attrs = {}
    while toks.peek() == ("punct", "["):
        toks.take()
        while toks.peek() != ("punct", "]"):
            key = toks.take()[1]
            toks.take("punct", "=")
            attrs[key] = _typed(toks.take())
            if toks.peek()[1] in (",", ";"):
                toks.take()
        toks.take("punct", "]")
    return attrs


def _node_id(toks: _TokenStream) -> Any:
    tok = toks.take()
    if tok[0] not in ("id", "string"):
        raise GraphFormatError(f"DOT: expected a node id but found {tok[1]!r}")
    if toks.peek() == ("punct", ":"):
        raise GraphFormatError("DOT: node ports (a:b) are not supported by attnsym.graphs.read")
    return _typed(tok)


def _statement(toks: _TokenStream, G: nx.Graph, defaults: dict[str, dict[str, Any]]) -> None:
    """Read one statement of the graph's body into ``G`` (or into the ``node`` / ``edge`` ``defaults``)."""
    kind, raw = toks.peek()
    if kind == "eof":
        raise GraphFormatError("DOT: missing closing '}'")
    if kind == "punct" and raw == ";":
        toks.take()
    elif (kind == "punct" and raw == "{") or (kind == "id" and raw.lower() == "subgraph"):
        raise GraphFormatError("DOT: subgraphs are not supported by attnsym.graphs.read")
    elif kind == "id" and raw.lower() in ("graph", "node", "edge") and toks.peek(1) == ("punct", "["):
        _default_statement(toks, G, defaults)
    elif toks.peek(1) == ("punct", "="):
        _graph_attribute_statement(toks, G)
    else:
        _node_or_edge_statement(toks, G, defaults)


def _default_statement(toks: _TokenStream, G: nx.Graph, defaults: dict[str, dict[str, Any]]) -> None:
    """``graph [...]`` sets graph attributes; ``node [...]`` / ``edge [...]`` the defaults of later statements."""
    target = toks.take()[1].lower()
    attrs = _attr_lists(toks)
    if target == "graph":
        G.graph.update(attrs)
    else:
        defaults[target].update(attrs)


def _graph_attribute_statement(toks: _TokenStream, G: nx.Graph) -> None:
    """``key = value``: a graph attribute."""
    key = toks.take()[1]
    toks.take()
    G.graph[key] = _typed(toks.take())


def _node_or_edge_statement(toks: _TokenStream, G: nx.Graph, defaults: dict[str, dict[str, Any]]) -> None:
    """``a [...]`` (a node) or ``a -> b -> c [...]`` (an edge chain), with the ``node`` / ``edge`` defaults."""
    chain = _edge_chain(toks, G)
    attrs = _attr_lists(toks)
    for node in chain:
        if node not in G:
            G.add_node(node, **defaults["node"])
    if len(chain) == 1:
        G.nodes[chain[0]].update(attrs)
    for u, v in itertools.pairwise(chain):
        G.add_edge(u, v, **{**defaults["edge"], **attrs})


def _edge_chain(toks: _TokenStream, G: nx.Graph) -> list[Any]:
    """The node ids of ``a -> b -> c`` (one id for a node statement); the operator must match ``G``'s kind."""
    kind = "digraph" if G.is_directed() else "graph"
    chain = [_node_id(toks)]
    while toks.peek()[0] == "arrow":
        arrow = toks.take()[1]
        if (arrow == "->") != G.is_directed():
            raise GraphFormatError(f"DOT: edge operator {arrow!r} does not match a {kind}")
        chain.append(_node_id(toks))
    return chain


def _refuse_trailing(after: tuple[str, Any]) -> None:
    """A second graph (or anything else) after the first one's ``}``: refused, not silently dropped."""
    if after[0] == "eof":
        return
    what = "a second graph" if after[0] == "id" and after[1].lower() in ("graph", "digraph", "strict") else repr(after[1])
    raise GraphFormatError(f"DOT: the file holds {what} after the first graph's closing '}}'; "
                           "attnsym.graphs.read reads one graph per file")


def parse_dot(text: str) -> nx.Graph:
    """The graph of a DOT text: a header, statements up to the closing ``}``, then nothing else.

    Raises
    ------
    GraphFormatError
        The text is outside the subset this module reads (see the module's docstring).

    Examples
    --------
    >>> G = parse_dot('digraph { node [k=1]; a -> b [weight=0.5]; }')
    >>> list(G.nodes(data=True)), list(G.edges(data=True))
    ([('a', {'k': 1}), ('b', {'k': 1})], [('a', 'b', {'weight': 0.5})])
    """
    toks = _TokenStream(text)
    G = _graph_header(toks)
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}}
    while toks.peek() != ("punct", "}"):
        _statement(toks, G, defaults)
    toks.take("punct", "}")
    _refuse_trailing(toks.peek())
    return G
