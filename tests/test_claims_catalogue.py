"""The shipped claims list (claims.toml) and the explicit registry built from the claim modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import attnsym.claims as claims
from attnsym.claims import BY_CONSTRUCTION, CLAIM_ORDER, CLAIMS, Claim, Evidence, builtin, catalogue, register, verify
from attnsym.claims.catalogue import GROUPS, catalogue_markdown, entry, statement
from attnsym.cli import main

BUILTIN_DIR = Path(builtin.__file__).parent


def test_registry_and_shipped_list_name_the_same_claims_in_the_same_order():
    shipped = [e.id for e in catalogue()]
    registered = [c.id for c in builtin.BUILTIN]
    assert sorted(shipped) == sorted(registered)
    assert len(set(registered)) == len(registered)
    assert list(CLAIM_ORDER) == shipped
    assert [cid for cid in CLAIMS if cid in shipped] == shipped


@pytest.mark.parametrize("claim_id", [e.id for e in catalogue()])
def test_each_builtin_claim_takes_statement_expected_and_source_from_the_list(claim_id):
    c, e = CLAIMS[claim_id], entry(claim_id)
    assert (c.statement, c.expected, c.source) == (e.statement, e.expected, e.source)
    assert e.group in GROUPS and e.check and e.source


def test_every_claim_module_is_listed_and_registers_nothing_on_import():
    modules = {p.stem for p in BUILTIN_DIR.glob("*.py") if p.stem != "__init__"}
    assert modules == {m.__name__.rsplit(".", 1)[1] for m in builtin.MODULES}
    for path in sorted(BUILTIN_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        decorators = [d for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for d in node.decorator_list]
        assert not any("claim" in ast.unparse(d) for d in decorators), f"{path.name} registers by decorator"
        imports = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any("_registry" in m for m in imports), f"{path.name} imports the registry (a cycle)"


def test_importing_a_claim_module_alone_does_not_touch_the_registry():
    code = ("import importlib, sys; m = importlib.import_module('attnsym.claims.builtin.primitives');"
            "print(len(m.CLAIMS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"


def test_statements_come_from_the_list_unchanged():
    assert statement("softmax-jacobian") == "The softmax Jacobian is diag(a) − a aᵀ."
    with pytest.raises(claims.UnknownClaimError, match="unknown claim 'nope'; the claims list has: variance-scaling"):
        entry("nope")


def test_a_claim_can_be_registered_explicitly_and_reports_its_source():
    def check(ctx):
        return Evidence("explicit-user", "", "holds", method="arithmetic", summary="1 = 1")

    register(Claim("explicit-user", "One is one.", check, source="arithmetic"))
    try:
        ev = verify("explicit-user")
        assert (ev.statement, ev.source) == ("One is one.", "arithmetic")
        with pytest.raises(ValueError, match="already registered"):
            register(Claim("explicit-user", "again", check))
        with pytest.raises(TypeError, match="must be a Claim"):
            register("explicit-user")
    finally:
        CLAIMS.pop("explicit-user")


def test_builtin_evidence_carries_the_source():
    assert verify("softmax-jacobian", quick=True).source == entry("softmax-jacobian").source


def test_by_construction_must_be_sentences():
    ev = Evidence("x", "x", "holds", method="m", summary="s", by_construction=("an identity",))
    assert ev.by_construction == ("an identity",) and BY_CONSTRUCTION == "true by construction"
    with pytest.raises(TypeError, match="by_construction must be a tuple of non-empty strings"):
        Evidence("x", "x", "holds", method="m", summary="s", by_construction="an identity")


def test_markdown_page_lists_every_claim_by_group():
    page = catalogue_markdown()
    for e in catalogue():
        assert f"| `{e.id}` |" in page
    assert page.count("## ") == len({e.group for e in catalogue()})


def test_cli_list_prints_the_shipped_list(capsys):
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    for e in catalogue():
        assert e.id in out
