"""Every script in examples/ runs as a user would run it, and writes valid files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

PIL = pytest.importorskip("PIL.Image")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "MPLBACKEND": "Agg", **(env or {})}
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=240, env=environment)
    assert proc.returncode == 0, proc.stderr
    return proc


def _written(proc: subprocess.CompletedProcess) -> list[Path]:
    return [Path(line.split(" ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith("wrote ")]


def test_every_example_is_covered_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(
        ["derive_latex.py", "verify_sqrt_d.py", "routing_two_sentences.py", "compare_heads.py"])


def test_derive_latex(tmp_path):
    proc = _run("derive_latex.py", str(tmp_path))
    names = sorted(p.name for p in _written(proc))
    assert names == ["forward.md", "forward.tex", "gradients.md", "gradients.tex"]
    for stem in ("forward", "gradients"):
        tex = (tmp_path / f"{stem}.tex").read_text(encoding="utf-8")
        assert tex.lstrip().startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
        assert "$$" in (tmp_path / f"{stem}.md").read_text(encoding="utf-8")
    assert "steps" in proc.stdout


def test_verify_sqrt_d(tmp_path):
    proc = _run("verify_sqrt_d.py", str(tmp_path))
    first = proc.stdout.splitlines()[0]
    assert first.startswith("variance-scaling: holds")
    paths = _written(proc)
    assert tmp_path / "variance-vs-d.png" in paths
    for path in paths:
        with PIL.open(path) as image:
            assert image.format == "PNG" and image.size[0] > 300


def test_routing_two_sentences(tmp_path):
    proc = _run("routing_two_sentences.py", str(tmp_path))
    G1 = nx.read_graphml(tmp_path / "sentence-1.graphml")
    G2 = nx.read_graphml(tmp_path / "sentence-2.graphml")
    assert G1.number_of_nodes() == G2.number_of_nodes() == 5
    assert sorted(nx.get_node_attributes(G1, "token").values()) == sorted(["the", "cat", "sat", "on", "mats"])
    assert nx.read_graphml(tmp_path / "mlp.graphml").number_of_edges() == 64  # dense 8 x 8 layer
    distance = float(proc.stdout.split("routing distance between the two sentences: ")[1].split()[0])
    assert distance > 0


def test_compare_heads_in_the_default_temporary_folder(tmp_path):
    proc = _run("compare_heads.py", env={"TMPDIR": str(tmp_path)})  # no argument: a new temporary folder
    (path,) = _written(proc)
    assert path.name == "heads.png" and tmp_path in path.parents
    assert proc.stdout.count("mean row entropy") == 4
    assert proc.stdout.count("heads ") == 6  # every pair of 4 heads
    with PIL.open(path) as image:
        assert image.format == "PNG"


def test_compare_heads_prints_the_heads_its_figure_shows(tmp_path, capsys, monkeypatch):
    """The printout and the figure's panels number heads the same way (from 1)."""
    import re
    import runpy

    from attnsym import plots

    drawn = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, *a, **k: drawn.append(fig) or save(fig, *a, **k))
    runpy.run_path(str(EXAMPLES / "compare_heads.py"))["main"](tmp_path)
    printed = sorted(set(re.findall(r"^head (\d+):", capsys.readouterr().out, re.M)))
    titles = sorted(ax.get_title() for ax in drawn[0].axes if ax.get_title().startswith("head"))
    assert printed == ["1", "2", "3", "4"] and titles == [f"head {h}" for h in printed]
