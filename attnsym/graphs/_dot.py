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
subgraphs, ports and HTML labels raise :class:`GraphFormatError`. So does a text that stops short
(``a [x=``, ``a -> ``, an unclosed quoted string, comment, attribute list or body): every error of
the reader gives the line and column and what was expected there.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from typing import Any

import networkx as nx

from ..errors import SpecTypeError
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


def _where(text: str, offset: int) -> str:
    """``line L, column C`` (both from 1) of character ``offset`` of ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return f"line {text.count(chr(10), 0, offset) + 1}, column {offset - line_start + 1}"


def _unreadable(text: str, pos: int) -> GraphFormatError:
    """The error for text at ``pos`` that starts no token: an unclosed string or comment, or a stray character."""
    where = _where(text, pos)
    if text.startswith('"', pos):
        opening = text[pos:pos + 20] + ("..." if len(text) > pos + 20 else "")
        return GraphFormatError(f"DOT: {where}: the quoted string {opening!r} is never closed (expected a closing "
                                "'\"' before the end of the text)")
    if text.startswith("/*", pos):
        return GraphFormatError(f"DOT: {where}: a comment '/*' is never closed (expected '*/' before the end of the text)")
    return GraphFormatError(f"DOT: {where}: cannot read {text[pos:pos + 20]!r} (expected an id, a quoted string, "
                            "'->', '--' or one of { } [ ] ; , = :)")


def _tokens(text: str) -> tuple[list[tuple[str, Any]], list[int]]:
    """The tokens of ``text`` as ``(kind, value)`` pairs, and the character offset where each starts."""
    out: list[tuple[str, Any]] = []
    starts: list[int] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _DOT_TOKEN.match(text, pos)
        if m is None:
            raise _unreadable(text, pos)
        start, pos = pos, m.end()
        kind = m.lastgroup
        assert kind is not None, "every alternative of _DOT_TOKEN is a named group"
        if kind == "ws":
            continue
        if kind == "html":
            raise GraphFormatError(f"DOT: {_where(text, start)}: HTML-like labels <...> are not supported by "
                                   "attnsym.graphs.read")
        starts.append(start)
        if kind == "string":
            body = m.group()[1:-1]
            value = re.sub(r"\\(.)", lambda e: _UNESCAPE.get(e.group(1), "\\" + e.group(1)), body, flags=re.DOTALL)
            out.append(("string", value))
        else:
            out.append((kind, m.group()))
    return out, starts


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
    """The tokens of a DOT text with a read position: look ahead with :meth:`peek`, consume with :meth:`take`.

    Every error it makes says where: the line and column of the token at the read position, or the
    end of the text.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens, self.starts = _tokens(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, Any]:
        at = self.pos + offset
        return self.tokens[at] if at < len(self.tokens) else ("eof", None)

    def found(self) -> str:
        """The token at the read position as an error message shows it (``'}'``, ``"a b"``, ``the end of the text``)."""
        kind, raw = self.peek()
        if kind == "eof":
            return "the end of the text"
        shown = repr(raw) if len(raw) <= 30 else repr(raw[:30]) + "..."
        return f"the quoted string {shown}" if kind == "string" else shown

    def error(self, message: str, back: int = 0) -> GraphFormatError:
        """A :class:`GraphFormatError` placing ``message`` at the token ``back`` tokens before the read position."""
        at = self.pos - back
        offset = self.starts[at] if at < len(self.starts) else len(self.text)
        return GraphFormatError(f"DOT: {_where(self.text, offset)}: {message}")

    def expected(self, what: str) -> GraphFormatError:
        """The error ``expected <what> but found <the token here>``."""
        return self.error(f"expected {what} but found {self.found()}")

    def take(self) -> tuple[str, Any]:
        """The token at the read position, which the caller has peeked at and accepted; moves on."""
        tok = self.peek()
        self.pos += 1
        return tok

    def take_punct(self, value: str, what: str, *names: Any) -> None:
        """Consume the punctuation ``value`` (``{``, ``=`` ...); anything else: ``expected <what.format(*names)>``."""
        if self.peek() != ("punct", value):
            raise self.expected(what.format(*names))
        self.pos += 1

    def id_or_string(self, what: str, *names: Any) -> tuple[str, Any]:
        """An id or quoted string (a node id, an attribute name or a value); anything else: ``expected <what>``
        (``what.format(*names)``, formatted only then: this runs once per token of a large file)."""
        tok = self.peek()
        if tok[0] not in ("id", "string"):
            raise self.expected(what.format(*names))
        self.pos += 1
        return tok


def _typed(toks: _TokenStream, what: str, *names: Any) -> Any:
    """The id or quoted string at the read position, as written: a quoted one stays a str, an unquoted one is
    typed by :func:`_bare` (an integer too long for Python's int conversion is refused, at its place)."""
    kind, raw = toks.id_or_string(what, *names)
    if kind == "string":
        return raw
    try:
        return _bare(raw)
    except ValueError:  # an integer over sys.get_int_max_str_digits() digits
        raise toks.error(f"the integer {raw[:12]}... has {len(raw)} digits; Python reads at most "
                         f"{sys.get_int_max_str_digits()} (quote it to keep it as text)", back=1) from None


def _graph_header(toks: _TokenStream) -> nx.Graph:
    """``[strict] graph|digraph [name] {``: the empty graph of that kind (the name is not kept)."""
    if toks.peek()[0] == "id" and toks.peek()[1].lower() == "strict":
        toks.take()
    head = toks.peek()
    if head[0] != "id" or head[1].lower() not in ("graph", "digraph"):
        raise toks.expected("'graph' or 'digraph' (optionally after 'strict') to start the file")
    toks.take()
    G: nx.Graph = nx.DiGraph() if head[1].lower() == "digraph" else nx.Graph()
    if toks.peek()[0] in ("id", "string"):
        toks.take()  # graph name (not kept)
    toks.take_punct("{", "'{{' to open the {}'s body (after an optional name)", head[1].lower())
    return G


def _attr_lists(toks: _TokenStream) -> dict:
    """Zero or more ``[key=value, ...]`` lists, merged (a later key wins); ``,`` or ``;`` may separate the pairs."""
    attrs = {}
    while toks.peek() == ("punct", "["):
        toks.take()
        while toks.peek() != ("punct", "]"):
            key = toks.id_or_string("an attribute name or ']' to close the attribute list")[1]
            toks.take_punct("=", "'=' after the attribute name {!r}", key)
            attrs[key] = _typed(toks, "a value for the attribute {!r} (after '=')", key)
            if toks.peek() in (("punct", ","), ("punct", ";")):
                toks.take()
        toks.take()
    return attrs


def _node_id(toks: _TokenStream, what: str, *names: Any) -> Any:
    """A node id (``what`` says where one is expected); ports and non-finite numbers are refused."""
    node = _typed(toks, what, *names)
    if isinstance(node, float) and not math.isfinite(node):
        raise toks.error(f"a node id must be a finite number or a name (got {node!r}); quote it to make it a name",
                         back=1)
    if toks.peek() == ("punct", ":"):
        raise toks.error("node ports (a:b) are not supported by attnsym.graphs.read")
    return node


def _statement(toks: _TokenStream, G: nx.Graph, defaults: dict[str, dict[str, Any]]) -> None:
    """Read one statement of the graph's body into ``G`` (or into the ``node`` / ``edge`` ``defaults``)."""
    kind, raw = toks.peek()
    if kind == "eof":
        raise toks.expected("a statement or '}' to close the graph's body")
    if kind == "punct" and raw == ";":
        toks.take()
    elif (kind == "punct" and raw == "{") or (kind == "id" and raw.lower() == "subgraph"):
        raise toks.error("subgraphs are not supported by attnsym.graphs.read")
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
    key = toks.id_or_string("a graph attribute's name before '='")[1]
    toks.take()
    G.graph[key] = _typed(toks, "a value for the graph attribute {!r} (after '=')", key)


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
    chain = [_node_id(toks, "a statement (a node id, an attribute or 'node'/'edge'/'graph' [...]) or '}}'")]
    while toks.peek()[0] == "arrow":
        arrow = toks.take()[1]
        if (arrow == "->") != G.is_directed():
            raise toks.error(f"edge operator {arrow!r} does not match a {kind} (use {'->' if kind == 'digraph' else '--'})",
                             back=1)
        chain.append(_node_id(toks, "a node id after {!r}", arrow))
    return chain


def _refuse_trailing(toks: _TokenStream) -> None:
    """A second graph (or anything else) after the first one's ``}``: refused, not silently dropped."""
    after = toks.peek()
    if after[0] == "eof":
        return
    what = "a second graph" if after[0] == "id" and after[1].lower() in ("graph", "digraph", "strict") else toks.found()
    raise toks.error(f"the file holds {what} after the first graph's closing '}}'; "
                     "attnsym.graphs.read reads one graph per file")


def parse_dot(text: str) -> nx.Graph:
    """The graph of a DOT text: a header, statements up to the closing ``}``, then nothing else.

    Raises
    ------
    GraphFormatError
        The text is outside the subset this module reads (see the module's docstring), or stops
        short (an attribute without its value, an unclosed ``[`` list, quoted string or body, an
        edge operator with no node after it): the message gives the line and column and what was
        expected there.
    SpecTypeError
        ``text`` is not a str.

    Examples
    --------
    >>> G = parse_dot('digraph { node [k=1]; a -> b [weight=0.5]; }')
    >>> list(G.nodes(data=True)), list(G.edges(data=True))
    ([('a', {'k': 1}), ('b', {'k': 1})], [('a', 'b', {'weight': 0.5})])
    >>> parse_dot('digraph {\\n  a [weight=')
    Traceback (most recent call last):
    ...
    attnsym.graphs._storable.GraphFormatError: DOT: line 2, column 13: expected a value for the attribute 'weight' ...
    """
    if not isinstance(text, str):
        raise SpecTypeError(f"text must be a str of DOT (got {type(text).__name__})")
    toks = _TokenStream(text)
    G = _graph_header(toks)
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}}
    while toks.peek() != ("punct", "}"):
        _statement(toks, G, defaults)
    toks.take()
    _refuse_trailing(toks)
    return G
