"""The layers of attnsym and its import graph, computed from the source (used by test_layers.py and the docs).

Every ``import`` statement of the package counts, at module top or inside a function, except
those under ``if TYPE_CHECKING:`` (they never run); ``importlib.import_module("attnsym.…")``
with a literal name counts too. The graph has one node per module (a package is its
``__init__``); importing ``a.b.c`` is an arrow to ``a.b.c`` only, as for import-linter.

To add a module inside a listed package, do nothing. To add a new top-level module or
package, add its name to the row of :data:`LAYERS` it belongs to (an import may point to its
own row or to a row below, never up). ``python tests/layers.py`` prints the table that
``docs/architecture.md`` shows between its ``import-graph`` markers; ``python tests/layers.py
--write`` updates the page (needed when an arrow between two parts appears or goes). The picture
above the table is drawn from :func:`picture_edges` when the docs are built
(``docs/gen/architecture.py``).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnsym"


@dataclass(frozen=True)
class Layer:
    name: str
    parts: tuple[str, ...]
    what: str


#: bottom to top: an arrow may point to its own layer or a lower one (never up), and no cycle
#: may form, between modules or between parts
LAYERS: tuple[Layer, ...] = (
    Layer("errors", ("attnsym.errors",), "the exception hierarchy"),
    Layer("foundation", ("attnsym", "attnsym.spec", "attnsym._positions", "attnsym.tolerances", "attnsym._checks",
                         "attnsym._exact", "attnsym._io", "attnsym._html", "attnsym._typing", "attnsym._limits",
                         "attnsym._gc", "attnsym._progress", "attnsym.tables"),
          "the spec, the tolerance table, argument checks, the size limits of the exact views, exact conversion, "
          "atomic files, HTML pieces for Jupyter, progress bars, long-format tables for pandas, the array type, "
          "the garbage collector tuned for heavy allocation; the package façade (the rest on first access)"),
    Layer("views", ("attnsym.symbolic", "attnsym.numeric"), "two independent implementations of the mathematics"),
    Layer("graphs", ("attnsym.graphs",), "routing graphs of the matrices the views compute"),
    Layer("models", ("attnsym.models", "attnsym.heads"), "real transformers run on numeric; head classes of their routes"),
    Layer("cross-checks", ("attnsym.validation", "attnsym.testing", "attnsym.references"),
          "symbolic ⇄ numeric reports, tolerances, external references (PyTorch, when installed)"),
    Layer("studies", ("attnsym.studies",),
          "experiments and proofs about attention: each asks a question of the engines, returns a typed result"),
    Layer("presentation", ("attnsym.plots", "attnsym.render", "attnsym.derivation"),
          "figures, LaTeX/Markdown, derivations: draw and format what the layers below return"),
    Layer("audit", ("attnsym.audits",), "streamed head statistics of long texts and corpora, audits to Parquet"),
    Layer("claims", ("attnsym.claims",), "each claim as evidence from the layers below, and the report"),
    Layer("explorer", ("attnsym.explorer",), "the tour's page, serialised from what the API returned"),
    Layer("cli", ("attnsym.cli", "attnsym.__main__"), "the command line, the only code that prints"),
)

#: upward arrows that are deliberate: (importing module, imported module) -> why
UPWARD_ALLOWED: dict[tuple[str, str], str] = {
    ("attnsym.models.contrast", "attnsym.plots.models"):
        "TokenContrast.figure(), the models API's drawing shortcut, delegates to plots",
    ("attnsym.models.model", "attnsym.audits.headstats"):
        "Model.head_stats, the models API's shortcut, delegates to the audit's streamed pass",
    ("attnsym.numeric.saturation", "attnsym.studies.intervals"):
        "the old path of the saturation study, re-exported for one release (a FACADE: nothing inside imports it)",
    ("attnsym.numeric.saturation", "attnsym.studies.saturation"):
        "the old path of the saturation study, re-exported for one release (a FACADE: nothing inside imports it)",
    ("attnsym.numeric.training", "attnsym.studies.intervals"):
        "the old path of the training run, re-exported for one release (a FACADE: nothing inside imports it)",
    ("attnsym.numeric.training", "attnsym.studies.training"):
        "the old path of the training run, re-exported for one release (a FACADE: nothing inside imports it)",
}

#: modules that re-export for compatibility: nothing inside attnsym may import them
FACADES: tuple[str, ...] = ("attnsym.symbolic.backprop", "attnsym.numeric.saturation", "attnsym.numeric.training")

#: the engines: they compute what a spec gives and never import a study (compatibility FACADES aside)
ENGINES: tuple[str, ...] = ("attnsym.symbolic", "attnsym.numeric", "attnsym.models", "attnsym.graphs")

#: cycles still being removed, each with who removes it; delete the entry with the cycle
PENDING_CYCLES: dict[tuple[str, ...], str] = {}

#: names a module of attnsym may import from the package façade (everything else: from its own module)
FROM_FACADE: tuple[str, ...] = ("__version__",)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import of ``name`` that reaches another module of the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = _type_checking_nodes(tree)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            targets = [node.args[0].value]
        found += [(t, node.lineno) for t in targets if t in known and t != name]
    return found


def facade_imports() -> list[str]:
    """``path:line name`` for every ``from attnsym import name`` inside the package (other than :data:`FROM_FACADE`)."""
    known = modules()
    found = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            if source == "attnsym":
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if f"attnsym.{a.name}" not in known and a.name not in FROM_FACADE]
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` for the whole package."""
    known = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges: dict[str, int] = {}
        for target, line in imports_of(name, path, known):
            edges.setdefault(target, line)
        graph[name] = edges
    return graph


def part_of(module: str) -> str | None:
    """The row name of :data:`LAYERS` that holds ``module`` (longest matching prefix)."""
    best = None
    for layer in LAYERS:
        for part in layer.parts:
            if module == part or (module.startswith(part + ".") and part != "attnsym"):
                if best is None or len(part) > len(best):
                    best = part
    return best


def rank(part: str) -> int:
    return next(k for k, layer in enumerate(LAYERS) if part in layer.parts)


def cycles(graph: dict[str, dict[str, int]] | dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def part_graph(graph: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """Arrows between the parts of :data:`LAYERS` (allowed upward arrows left out)."""
    parts: dict[str, set[str]] = {p: set() for layer in LAYERS for p in layer.parts}
    for source, targets in graph.items():
        for target in targets:
            a, b = part_of(source), part_of(target)
            if a and b and a != b and (source, target) not in UPWARD_ALLOWED:
                parts[a].add(b)
    return parts


def label_of(part: str) -> str:
    """How a part is named in the picture and the table (``spec``, ``_checks``, ``attnsym (façade)``)."""
    return "attnsym (façade)" if part == "attnsym" else part.removeprefix("attnsym.")


def picture_edges(graph: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """The arrows the picture draws: :func:`part_graph` without the arrows implied by others (transitive reduction)."""
    parts = part_graph(graph)
    return {a: {b for b in bs if not any(b in _reach(parts, c) for c in bs - {b})} for a, bs in parts.items()}


#: where the docs build writes the picture of :func:`picture_edges` (docs/gen/architecture.py draws it)
PICTURE = "architecture/import-graph.svg"


def diagram(graph: dict[str, dict[str, int]]) -> str:
    """The Markdown that docs/architecture.md shows: the picture (drawn at docs build time) and a table, layers top first."""
    parts = part_graph(graph)
    arrows = sum(len(v) for v in picture_edges(graph).values())
    lines = [f"[![The layers of attnsym, top to bottom, and the {arrows} arrows between their parts that are not implied "
             f"by others; drawn from the import graph when the docs are built]({PICTURE})]({PICTURE})", "",
             "| layer | part | imports (direct) |", "|---|---|---|"]
    for layer in reversed(LAYERS):
        for p in layer.parts:
            uses = ", ".join(f"`{label_of(b)}`" for b in sorted(parts[p], key=lambda q: (-rank(q), q))) or "—"
            lines.append(f"| {layer.name} | `{label_of(p)}` | {uses} |")
    return "\n".join(lines) + "\n"


def _reach(parts: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in parts[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


BEGIN, END = "<!-- import-graph:begin (python tests/layers.py) -->\n", "<!-- import-graph:end -->"
PAGE = ROOT / "docs" / "architecture.md"


def shown_on_page() -> str:
    """The block of docs/architecture.md between the import-graph markers."""
    text = PAGE.read_text(encoding="utf-8")
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def write_page() -> None:
    """Replace that block with the current :func:`diagram`."""
    text = PAGE.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    PAGE.write_text(head + BEGIN + diagram(import_graph()) + END + rest.split(END, 1)[1], encoding="utf-8")


def _imports_attnsym(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("attnsym")
    return isinstance(node, ast.Import) and any(a.name.startswith("attnsym") for a in node.names)


def import_placement() -> dict[str, list[str]]:
    """``{"module top": [...], "function level": [...]}``: ``path:line`` of every import statement of the package
    that imports attnsym (``if TYPE_CHECKING:`` blocks left out), by where it sits (``python tests/layers.py --count``)."""
    found: dict[str, list[str]] = {"module top": [], "function level": []}
    for path in modules().values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        todo: list[tuple[ast.AST, bool]] = [(tree, False)]
        while todo:
            node, inside = todo.pop()
            for child in ast.iter_child_nodes(node):
                if id(child) in skip:
                    continue
                if _imports_attnsym(child):
                    found["function level" if inside else "module top"].append(f"{path.relative_to(ROOT)}:{child.lineno}")
                todo.append((child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)))
    return found

if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_page()
    elif sys.argv[1:] == ["--count"]:
        placed = import_placement()
        print("\n".join(placed["function level"]))
        print(f"intra-package imports: {len(placed['module top'])} at module top, "
              f"{len(placed['function level'])} inside functions (listed above)")
    else:
        print(diagram(import_graph()), end="")
