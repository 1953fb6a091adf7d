"""The import graph of attnsym, computed from the source: no cycles, no arrow pointing up the layers.

The layers and the few deliberate exceptions are written once, in ``tests/layers.py``; a new
top-level module or package gets a row there (the first test says so when it is missing).
"""

from __future__ import annotations

import ast
import textwrap

import layers
import pytest
from layers import (
    ENGINES,
    FACADES,
    LAYERS,
    PENDING_CYCLES,
    UPWARD_ALLOWED,
    cycles,
    import_graph,
    part_graph,
    part_of,
    rank,
)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_every_module_belongs_to_a_layer(graph):
    orphans = [m for m in graph if part_of(m) is None]
    assert orphans == [], f"add these to a row of LAYERS in tests/layers.py: {orphans}"


def test_the_layer_table_names_each_part_once_and_every_part_exists(graph):
    parts = [p for layer in LAYERS for p in layer.parts]
    assert len(parts) == len(set(parts))
    assert [p for p in parts if p not in graph] == []


def test_no_import_cycle_between_modules(graph):
    found = [tuple(c) for c in cycles(graph)]
    assert [c for c in found if c not in PENDING_CYCLES] == []
    # a pending cycle that is gone must leave the table too, so the table cannot go stale
    assert [c for c in PENDING_CYCLES if c not in found] == []


def test_no_import_cycle_between_parts(graph):
    parts = part_graph(graph)
    pending_parts = {tuple(sorted({part_of(m) for m in c})) for c in PENDING_CYCLES}
    assert [c for c in cycles(parts) if tuple(c) not in pending_parts] == []


def test_no_arrow_points_up_the_layers(graph):
    upward = []
    for source, targets in graph.items():
        for target, line in targets.items():
            a, b = part_of(source), part_of(target)
            if rank(b) > rank(a) and (source, target) not in UPWARD_ALLOWED:
                upward.append(f"{source}:{line} imports {target} ({LAYERS[rank(a)].name} -> {LAYERS[rank(b)].name})")
    assert upward == []


def test_every_allowed_upward_arrow_still_exists(graph):
    assert [edge for edge in UPWARD_ALLOWED if edge[1] not in graph.get(edge[0], {})] == []


def test_nothing_inside_imports_a_compatibility_facade(graph):
    assert [(m, f) for m, targets in graph.items() for f in targets if f in FACADES] == []


def test_modules_import_from_the_defining_module_not_the_package_facade():
    # `from .. import derive` hides the real dependency behind the façade's PEP 562 __getattr__
    assert layers.facade_imports() == []


def test_imports_inside_functions_and_literal_import_module_count(tmp_path, monkeypatch):
    # the checker must see what the interpreter runs late, and must be able to fail
    package = tmp_path / "attnsym"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from ..high import never_runs
        def late():
            from ..high import thing
    """))
    (package / "high.py").write_text("import importlib\nfrom .low import late\nimportlib.import_module('attnsym.low')\n")
    monkeypatch.setattr(layers, "ROOT", tmp_path)
    monkeypatch.setattr(layers, "PACKAGE", package)
    toy = import_graph()
    assert toy["attnsym.low"] == {"attnsym.high": 6}
    assert toy["attnsym.high"] == {"attnsym.low": 2}
    assert cycles(toy) == [["attnsym.high", "attnsym.low"]]


def test_the_architecture_page_shows_the_current_graph(graph):
    assert layers.shown_on_page() == layers.diagram(graph), "update the page: python tests/layers.py --write"


def _arrows(graph, source_parts, target_part):
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                  if part_of(m) in source_parts and m not in FACADES and part_of(t) == target_part)


def test_engines_import_no_study(graph):
    # an engine computes what a spec gives; the old paths of moved studies are FACADES, imported by nothing inside
    assert _arrows(graph, ENGINES, "attnsym.studies") == []


def test_studies_import_no_claim_and_no_plot(graph):
    # a study returns a typed result; the claim judges it, the plot draws it
    assert _arrows(graph, ("attnsym.studies",), "attnsym.claims") == []
    assert _arrows(graph, ("attnsym.studies",), "attnsym.plots") == []


def test_claims_and_plots_draw_their_experiments_from_studies(graph):
    # the saturation claim and its figures read the study's result (computed once, by the study)
    assert "attnsym.studies.saturation" in graph["attnsym.claims.builtin.saturation"]
    assert any(t.startswith("attnsym.studies") for t in graph["attnsym.plots.training"])
    assert graph["attnsym.studies.saturation"].keys().isdisjoint({"attnsym.numeric.saturation", "attnsym.numeric.training"})


#: functions of attnsym/claims over MAX_CLAIM_FUNCTION lines still to be split into a study and a verdict
#: (#36); delete an entry when its function is short: the test fails on a stale entry too
LONG_CLAIM_FUNCTIONS_PENDING: tuple[str, ...] = (
)
MAX_CLAIM_FUNCTION = 80


def test_no_function_in_claims_is_over_80_lines():
    long = set()
    for path in sorted((layers.PACKAGE / "claims").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                if node.end_lineno - node.lineno + 1 > MAX_CLAIM_FUNCTION:
                    long.add(f"{path.relative_to(layers.ROOT).as_posix()}:{node.name}")
    assert sorted(long - set(LONG_CLAIM_FUNCTIONS_PENDING)) == [], "a claim is a verdict: move the experiment to studies/"
    assert sorted(set(LONG_CLAIM_FUNCTIONS_PENDING) - long) == [], "short now: remove it from the pending list"
