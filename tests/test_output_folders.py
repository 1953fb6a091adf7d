"""Every command that writes a folder keeps the same rule (issue 37, items 1 and 10).

A non-empty folder needs ``--force`` (``verify --report`` included); ``-o`` naming a symbolic
link is refused before any work, even with ``--force``; ``attnsym graph`` adds its set to a
folder of other files, whose files stay.
"""

from __future__ import annotations

import pytest

from attnsym.cli import main


def _one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_verify_report_into_a_non_empty_folder_needs_force(tmp_path, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    argv = ["verify", "softmax-jacobian", "--quick", "--no-figures", "--report", str(out)]
    assert main(argv) == 2
    assert "exists and is not empty; pass --force" in _one_error_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert main([*argv, "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["claims.json", "notes.txt", "report.md"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_an_output_folder_that_is_a_link_is_refused_before_any_work(tmp_path, capsys, monkeypatch, force):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "out"
    link.symlink_to(real)
    import attnsym.models

    def no_work(*args, **kwargs):
        raise AssertionError("work started before -o was checked")

    monkeypatch.setattr(attnsym.models, "load", no_work)
    for argv in (["graph", "--n", "4", "--seed", "0", "-o", str(link)], ["heads", "a b c", "-o", str(link)],
                 ["route", "a b c", "-o", str(link)],
                 ["verify", "softmax-jacobian", "--quick", "--no-figures", "--report", str(link)]):
        assert main([*argv, *force]) == 2, argv
        assert "is a symbolic link; attnsym never writes through a link" in _one_error_line(capsys)
    assert list(real.iterdir()) == []


def test_graph_adds_its_set_to_a_folder_of_other_files(tmp_path, capsys):
    out = tmp_path / "graphs"
    out.mkdir()
    (out / "earlier.txt").write_text("an earlier set", encoding="utf-8")
    assert main(["graph", "--n", "4", "--seed", "0", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "earlier.txt" in names and "mlp.graphml" in names
    assert (out / "earlier.txt").read_text(encoding="utf-8") == "an earlier set"
    capsys.readouterr()
    assert main(["graph", "--n", "4", "--seed", "1", "-o", str(out)]) == 2  # same names: --force
    assert "exist" in _one_error_line(capsys)
