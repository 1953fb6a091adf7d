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


def parse_dot(text: str) -> nx.Graph:
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
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}}

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
    after = peek()
    if after[0] != "eof":  # a second graph (or anything else) after the first: refused, not silently dropped
        what = "a second graph" if after[0] == "id" and after[1].lower() in ("graph", "digraph", "strict") else repr(after[1])
        raise GraphFormatError(f"DOT: the file holds {what} after the first graph's closing '}}'; "
                               "attnsym.graphs.read reads one graph per file")
    return G
