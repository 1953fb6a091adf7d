"""No user string ever runs as code.

SymPy parses strings with ``eval`` in ``sympify`` and everything built on it (``Matrix``,
``.subs``, ``nsimplify``, ``sympy.Function`` calls...). Two guards keep user values away:

* a static scan: in every function of the package, a value derived from a parameter may reach a
  SymPy call only after passing through the conversion helpers of :mod:`attnsym._exact`;
* a dynamic test: a code-carrying string, given to every parameter of every public symbolic
  function and method, never runs (a marker file it would create never appears) and is refused
  with an :class:`~attnsym.AttnsymError` (or a ``TypeError`` for a wrong-kind argument).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
import sympy as sp

import attnsym
import attnsym.symbolic
from attnsym import AttentionSpec, AttnsymError

PACKAGE = Path(attnsym.__file__).parent

# ----------------------------------------------------------------------------- static scan

#: calls that convert a user value safely (their result is clean)
HELPERS = {"exact", "exact_matrix", "exact_entries", "exact_subs", "exact_modules",
           "positive_int", "non_negative_int", "boolean", "one_of", "finite_real", "positive_real", "is_int",
           "len", "isinstance", "type", "id", "repr", "hash", "bool", "callable", "hasattr"}
#: attributes of a value that are plain sizes or flags, never user text headed for SymPy
CLEAN_ATTRIBUTES = {"shape", "rows", "cols", "ndim", "size", "dtype", "__name__"}
#: method calls that sympify their arguments
SINK_METHODS = {"subs", "evalf"}
#: SymPy calls that parse a string argument as code
SINK_FUNCTIONS = {"sympify", "S", "parse_expr", "nsimplify", "lambdify", "Matrix", "ImmutableMatrix",
                  "MutableDenseMatrix", "ImmutableDenseMatrix", "SparseMatrix", "ImmutableSparseMatrix",
                  "Array", "ImmutableDenseNDimArray", "MutableDenseNDimArray"}
MATRIX_SINKS = {n for n in SINK_FUNCTIONS if "Matrix" in n or "Array" in n}
#: SymPy calls that do not parse strings (a string is a name there, not code)
SAFE_SYMPY = {"Symbol", "symbols", "Dummy", "Wild", "latex", "srepr", "pretty", "Idx", "IndexedBase",
              "MatrixSymbol", "Function", "var"}
#: names that hold trusted objects built by attnsym itself, never raw user input
TRUSTED_PARAMETERS = {"self", "cls", "spec", "ctx"}
#: special methods that are entry points (their parameters are user values)
PUBLIC_DUNDERS = {"__init__", "__new__", "__call__", "__post_init__"}


def _sympy_names(tree: ast.Module) -> set[str]:
    """Aliases under which a module can reach SymPy: ``sp``/``sympy`` and names imported from it."""
    modules, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sympy":
                    modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sympy":
            for alias in node.names:
                if alias.name not in SAFE_SYMPY:
                    names.add(alias.asname or alias.name)
    return modules | {f"name:{n}" for n in names}


class _Scanner(ast.NodeVisitor):
    def __init__(self, label: str, sympy_names: set[str], *, private_module: bool = False):
        self.label = label
        self.private = [private_module]  # are we inside something private (module, class, function)?
        self.modules = {n for n in sympy_names if not n.startswith("name:")}
        self.names = {n[5:] for n in sympy_names if n.startswith("name:")}
        self.problems: list[str] = []
        self.tainted: list[set[str]] = [set()]
        self.sanitizers: set[str] = set()  # module functions whose results never carry a parameter's value raw
        self.returns_taint = False
        self.probing = False

    # -- taint of an expression
    def _is_tainted(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        taint = self.tainted[-1]
        if isinstance(node, ast.Name):
            return node.id in taint
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in HELPERS or name in self.sanitizers or name in SAFE_SYMPY:
                return False
            parts = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Attribute):
                parts.append(func.value)
            return any(self._is_tainted(p) for p in parts)
        if isinstance(node, ast.Attribute):
            return node.attr not in CLEAN_ATTRIBUTES and self._is_tainted(node.value)
        if isinstance(node, ast.Lambda):
            return False
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            self.tainted.append(set(taint))
            for gen in node.generators:
                self._bind(gen.target, self._is_tainted(gen.iter))
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            result = any(self._is_tainted(p) for p in parts)
            self.tainted.pop()
            return result
        if isinstance(node, ast.Compare | ast.BoolOp) and all(
                isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in getattr(node, "ops", [])):
            return False
        return any(self._is_tainted(child) for child in ast.iter_child_nodes(node))

    def _bind(self, target: ast.AST, tainted: bool) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                if tainted:
                    self.tainted[-1].add(node.id)
                else:
                    self.tainted[-1].discard(node.id)

    # -- sinks
    def _is_sink(self, call: ast.Call) -> str | None:
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.names and func.id in SINK_FUNCTIONS:
            return func.id
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id in self.modules:
                return f"{func.value.id}.{func.attr}" if func.attr in SINK_FUNCTIONS else None
            if func.attr in SINK_METHODS:
                return f".{func.attr}"
        return None

    def visit_Call(self, node: ast.Call) -> None:
        sink = self._is_sink(node)
        if sink is not None:
            args = node.args
            if sink.split(".")[-1] in MATRIX_SINKS and len(args) >= 3:
                args = args[2:]  # Matrix(rows, cols, entries): the sizes go through as_int, never parsed
            for arg in [*args, *(k.value for k in node.keywords)]:
                if self._is_tainted(arg):
                    self.problems.append(f"{self.label}:{node.lineno}: {sink}"
                                         f"({ast.unparse(arg)[:60]}) takes a value derived from a parameter "
                                         "without attnsym._exact")
                    break
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.visit(node.value)
            self.returns_taint = self.returns_taint or self._is_tainted(node.value)

    # -- statements that bind names
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._bind(target, self._is_tainted(node.value))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._bind(node.target, self._is_tainted(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if self._is_tainted(node.value):
            self._bind(node.target, True)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target, self._is_tainted(node.value))

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._bind(node.target, self._is_tainted(node.iter))
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    def _comprehension(self, node) -> None:
        self.tainted.append(set(self.tainted[-1]))
        for gen in node.generators:
            self.visit(gen.iter)
            self._bind(gen.target, self._is_tainted(gen.iter))
            for cond in gen.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.tainted.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _function(self, node) -> None:
        params = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
        params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
        private = self.private[-1] or (node.name.startswith("_") and node.name not in PUBLIC_DUNDERS)
        if self.probing and len(self.private) == 1:
            private = False  # a probed function: every parameter is a user value
        roots = set(params) - TRUSTED_PARAMETERS if not private else set()
        self.tainted.append(set(self.tainted[-1]) | roots)
        self.private.append(True)  # a function nested in a function is not an entry point
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        for stmt in node.body:
            self.visit(stmt)
        self.private.pop()
        self.tainted.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.private.append(self.private[-1] or node.name.startswith("_"))
        for stmt in node.body:
            self.visit(stmt)
        self.private.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)


def _sanitizers(tree: ast.Module, names: set[str]) -> set[str]:
    """Module-level functions that convert: with every parameter a user value, no return is raw.

    Such a function (e.g. one that checks a pair and returns ``exact(...)`` of each part) is
    treated like the helpers of :mod:`attnsym._exact` where it is called.
    """
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    found: set[str] = set()
    while True:
        grown = set(found)
        for func in functions:
            probe = _Scanner("", names)
            probe.sanitizers = found
            probe.probing = True
            probe.visit(func)
            returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
            if returns and not probe.returns_taint and not func.name.startswith("__"):
                grown.add(func.name)
        if grown == found:
            return found
        found = grown


def scan(path: Path, label: str | None = None) -> list[str]:
    """Problems found in one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    private = path.name.startswith("_") and path.name not in ("__init__.py", "__main__.py")
    names = _sympy_names(tree)
    scanner = _Scanner(label or str(path.relative_to(PACKAGE.parent)), names, private_module=private)
    scanner.sanitizers = _sanitizers(tree, names)
    scanner.visit(tree)
    return scanner.problems


def test_no_user_value_reaches_sympy_unconverted():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "_exact.py":
            problems += scan(path)
    assert not problems, "\n".join(problems)


def test_scanner_catches_the_patterns_it_guards(tmp_path):
    """The scan is not vacuous: each unsafe shape is reported, each safe one is not."""
    src = tmp_path / "probe.py"
    src.write_text(
        "import sympy as sp\n"
        "from sympy import Matrix\n"
        "from attnsym._exact import exact, exact_matrix\n"
        "def bad1(n):\n    return sp.sympify(n)\n"
        "def bad2(X):\n    rows = [r for r in X]\n    return Matrix(rows)\n"
        "def bad3(expr, value):\n    return expr.subs('n', value)\n"
        "def bad4(x):\n    y = x\n    return sp.nsimplify(y)\n"
        "def good1(n):\n    n = exact('n', n)\n    return sp.sympify(n)\n"
        "def good2(X):\n    return Matrix(exact_matrix('X', X))\n"
        "def good3(X):\n    return sp.Matrix(X.shape[0], 1, lambda i, j: 0)\n"
        "def good4(name):\n    return sp.Symbol(name)\n",
        encoding="utf-8")
    lines = sorted({int(p.split(":")[1]) for p in scan(src, label="probe.py")})
    assert lines == [5, 8, 10, 13]


# ----------------------------------------------------------------------------- dynamic test

#: safe values for parameters, by name, so that each call gets past its other arguments
_SAFE = {
    "spec": lambda: AttentionSpec(n=2, d_model=2),
    "spec_or_sizes": lambda: (2, 2),
    "n": lambda: 2, "d": lambda: 2, "d_model": lambda: 2, "d_k": lambda: 2, "d_v": lambda: 2, "t": lambda: 2,
    "heads": lambda: 1, "base": lambda: 10000, "k": lambda: 2,
    "X": lambda: sp.eye(2), "Y": lambda: sp.eye(2), "S": lambda: sp.eye(2), "Q": lambda: sp.eye(2),
    "K": lambda: sp.eye(2), "V": lambda: sp.eye(2), "A": lambda: sp.eye(2), "B": lambda: sp.eye(2),
    "W_Q": lambda: sp.eye(2), "W_K": lambda: sp.eye(2), "values": lambda: sp.eye(2),
    "scores": lambda: [sp.Symbol("s_1"), sp.Symbol("s_2")], "shift": lambda: sp.Symbol("m"),
    "kernel": lambda: [1, 1], "perm": lambda: (1, 0), "x": lambda: sp.Symbol("x"),
    "low": lambda: 0, "high": lambda: 1, "mean": lambda: 0, "variance": lambda: 1,
    "name": lambda: "xavier", "fan_in": lambda: 2, "fan_out": lambda: 2,
}


def _code(marker: Path) -> str:
    """A string that creates ``marker`` when evaluated (and parses as a SymPy expression)."""
    return f"__import__('pathlib').Path({str(marker)!r}).touch() or 3"


def _evil_forms(code: str) -> list:
    """The code string bare and inside every container a SymPy-bound argument might be."""
    return [code, code.encode(), [code, 1], [[code, 1], [1, 1]], {"n": code}, {"X": code}, {code: 1}]


def _public_callables():
    """Every public function and class of every public module of attnsym.symbolic (plus derive)."""
    found = []
    for info in pkgutil.iter_modules(attnsym.symbolic.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"attnsym.symbolic.{info.name}")
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or (inspect.isclass(obj) and not issubclass(obj, Exception)):
                found.append((f"{info.name}.{name}", obj))
    found.append(("derivation.derive", attnsym.derive))
    return found


def _parameters(func):
    try:
        return [p for p in inspect.signature(func).parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
    except (TypeError, ValueError):
        return []


def _call(func, override: str | None = None, value=None):
    """Call ``func`` with safe values for its required parameters and ``value`` for ``override``."""
    args, kwargs = [], {}
    for p in _parameters(func):
        if p.name == override:
            chosen = value
        elif p.default is not p.empty:
            continue
        elif p.name in _SAFE:
            chosen = _SAFE[p.name]()
        else:
            chosen = 1
        if p.kind == p.POSITIONAL_ONLY:
            args.append(chosen)
        else:
            kwargs[p.name] = chosen
    return func(*args, **kwargs)


_ACCEPTABLE = (AttnsymError, TypeError, KeyError, IndexError, AttributeError)


def _poke(label, func, marker, failures):
    for p in _parameters(func):
        for form in _evil_forms(_code(marker)):
            try:
                _call(func, p.name, form)
            except _ACCEPTABLE:
                pass
            except Exception as error:
                failures.append(f"{label}({p.name}={form!r:.40}): {type(error).__name__}: {error}")
            if marker.exists():
                marker.unlink()
                failures.append(f"{label}({p.name}={form!r:.40}) RAN THE STRING")


def test_code_strings_never_run_in_public_symbolic_functions(tmp_path):
    marker = tmp_path / "ran"
    failures: list[str] = []
    instances = []
    for label, func in _public_callables():
        _poke(label, func, marker, failures)
        if inspect.isclass(func):
            continue  # classes built from junk defaults are not meaningful instances
        try:
            result = _call(func)
        except Exception:
            continue
        if not isinstance(result, type) and type(result).__module__.startswith("attnsym"):
            instances.append((label, result))
    assert len(instances) >= 10  # the methods below are really exercised
    for label, obj in instances:
        for name in dir(obj):
            try:
                method = getattr(obj, name, None) if not name.startswith("_") else None
            except Exception:
                continue
            if callable(method) and not isinstance(method, type) and _parameters(method):
                _poke(f"{label}().{name}", method, marker, failures)
    assert not marker.exists()
    assert not [f for f in failures if "RAN THE STRING" in f], "\n".join(failures)
    assert not failures, "\n".join(failures)


def test_a_code_string_is_refused_naming_the_argument(tmp_path):
    code = _code(tmp_path / "ran")
    cases = [
        (lambda: attnsym.symbolic.attention_opcount(n=code), "n must be"),
        (lambda: attnsym.symbolic.decode_step_opcount(t=code), "t must be"),
        (lambda: attnsym.symbolic.attention_opcount().subs({"n": code}), r"values\['n'\] must be"),
        (lambda: attnsym.symbolic.conv1d([code, 1], [1, 2]), r"X\[0\] must be"),
        (lambda: attnsym.symbolic.prove_qk_symmetry_condition([[code]], [[1]]), r"W_Q\[0\]\[0\] must be"),
        (lambda: attnsym.symbolic.attention(AttentionSpec(n=1, d_model=1)).subs({"X": [[code]]}), r"X\[0\]\[0\]"),
        (lambda: attnsym.symbolic.matrix_gradients().explicit("W_V", {"X": [[code]]}), r"values\['X'\]\[0\]"),
    ]
    for call, pattern in cases:
        with pytest.raises(AttnsymError, match=pattern) as info:
            call()
        assert "strings are never parsed" in str(info.value)
    assert not (tmp_path / "ran").exists()


def test_every_error_raised_on_purpose_is_an_attnsym_error():
    """One hierarchy, kept: no module raises a bare ValueError or TypeError for bad input.

    (KeyError from a mapping's ``__getitem__`` and RuntimeError for the environment stay as Python has them.)
    """
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name) \
                    and node.exc.func.id in ("ValueError", "TypeError"):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: raise {node.exc.func.id}(...)")
    assert not found, "\n".join(found)
