"""The shape of attnsym.models: one family registry, owned by the family table, and no private helper shared.

``families.read_plan`` is the one dispatch on ``model_type`` (a model folder's ``read_config`` and a
GGUF file's plan both go through it); nothing fills a registry as a side effect of an import; a
module of ``attnsym.models`` imports only public names of another attnsym module (a private
*module*, such as ``numeric._kernels``, the kernel registry, is imported whole).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import attnsym
from attnsym.models import UnsupportedModelError, families
from attnsym.models.config import read_config

MODELS = Path(attnsym.__file__).parent / "models"


#: private modules imported whole (a package's ``from . import _module`` is always a module)
PRIVATE_MODULES = {("numeric", "_kernels")}


def _private_imports(path: Path) -> list[str]:
    """``from <attnsym module> import _name`` lines of ``path``, private modules in :data:`PRIVATE_MODULES` left out."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not (node.level > 0 or (node.module or "").startswith("attnsym")):
            continue
        if node.module is None:  # from . import _module
            continue
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and (node.module.rsplit(".", 1)[-1], alias.name) not in PRIVATE_MODULES:
                found.append(f"{path.name}:{node.lineno}: from {'.' * node.level}{node.module} import {alias.name}")
    return found


def test_no_module_of_models_imports_a_private_name():
    found = [line for path in sorted(MODELS.glob("*.py")) for line in _private_imports(path)]
    assert found == []


def test_the_scan_sees_a_private_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .config import _positive\nfrom ..numeric import _kernels\n")
    assert _private_imports(probe) == ["probe.py:1: from .config import _positive"]


def test_read_config_dispatches_through_the_family_table(tmp_path, monkeypatch):
    seen = []

    def family(raw, path):
        seen.append(raw["model_type"])
        raise UnsupportedModelError("stop here")

    monkeypatch.setitem(families.FAMILIES, "gpt2", family)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(UnsupportedModelError, match="stop here"):
        read_config(tmp_path / "config.json")
    assert seen == ["gpt2"]


def test_an_unknown_family_is_named_with_every_known_one(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(UnsupportedModelError) as info:
        read_config(tmp_path / "config.json")
    assert str(info.value).endswith("attnsym runs " + ", ".join(map(repr, families.FAMILIES)))


def test_the_stale_names_are_gone():
    assert not hasattr(attnsym.models, "SUPPORTED") and not hasattr(attnsym.models, "ModelConfig")
    assert "SUPPORTED" not in attnsym.models.__all__ and "ModelConfig" not in attnsym.models.__all__
