"""``attnsym derive`` from the command line."""

from __future__ import annotations

import pytest

import attnsym as at
from attnsym.cli import main


def run(capsys, *argv):
    code = main(["derive", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_markdown_is_the_default(capsys):
    code, out, err = run(capsys, "--n", "2", "--d", "2")
    assert code == 0 and err == ""
    assert out.startswith("# Self-attention, step by step")
    assert "$$\nQ = \\left[" in out and "## 10. Two views: MLP and attention" in out


def test_tex_format(capsys):
    code, out, _ = run(capsys, "--n", "2", "--d", "2", "--format", "tex")
    assert code == 0
    assert out.startswith("\\documentclass") and out.rstrip().endswith("\\end{document}")


def test_layer_flags_reach_the_derivation(capsys):
    code, out, _ = run(capsys, "--n", "2", "--d", "4", "--heads", "2", "--causal", "--bias", "--positions", "sinusoidal")
    assert code == 0
    assert "heads=2" in out and "causal" in out
    assert "## 2. Positions" in out and r"\sin{\left(1 \right)}" in out
    assert r"-\infty" in out  # causal mask
    assert "b^{Q}_{1}" in out and "W_{O}" in out and "S^{(2)}" in out
    code, out, _ = run(capsys, "--n", "2", "--d", "2", "--no-scale")
    assert code == 0 and "unscaled" in out and r"\sqrt{2}" not in out.split("## 5. Scores")[1].split("## 6.")[0]


def test_output_file_no_silent_overwrite_and_force(capsys, tmp_path):
    target = tmp_path / "sub" / "attention.md"
    code, out, err = run(capsys, "--n", "2", "--d", "2", "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    first = target.read_text()
    assert first.startswith("# Self-attention")
    code, _, err = run(capsys, "--n", "2", "--d", "1", "-o", str(target))
    assert code == 2 and "exists" in err and "--force" in err
    assert target.read_text() == first
    code, _, _ = run(capsys, "--n", "2", "--d", "1", "-o", str(target), "--force")
    assert code == 0 and target.read_text() != first and "d_model=1" in target.read_text()


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--n", "0"], "--n must be a positive integer (got 0)"),
        (["--d", "3", "--heads", "2"], "--heads must divide d_model"),
        (["--n", "12", "--d", "12"], "max_terms"),
        (["--n", "3", "--d", "3", "--max-terms", "10"], "above the limit max_terms=10"),
        (["--n", "2", "--d", "2", "--max-terms", "-5"], "--max-terms must be a positive number or inf (got -5.0)"),
    ],
)
def test_errors_are_one_line_with_status_2(capsys, argv, pattern):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert pattern in err and err.count("\n") == 1


def test_argparse_rejects_unknown_format(capsys):
    with pytest.raises(SystemExit) as info:
        main(["derive", "--format", "pdf"])
    assert info.value.code == 2
    assert "--format" in capsys.readouterr().err


def test_grad_appends_gradient_steps(capsys):
    code, out, _ = run(capsys, "--n", "2", "--d", "2", "--grad")
    assert code == 0
    assert out.startswith("# Self-attention forward and backward")
    forward = len(at.derive(at.AttentionSpec(n=2, d_model=2)))
    assert out.index("## 1. Inputs") < out.index(f"## {forward + 1}. Loss and upstream gradient")


def test_output_suffix_picks_the_format_and_a_mismatch_is_refused(capsys, tmp_path):
    # `attnsym derive -o y.tex` wrote Markdown into the .tex file.
    code, _, _ = run(capsys, "--n", "2", "--d", "2", "-o", str(tmp_path / "y.tex"))
    assert code == 0
    text = (tmp_path / "y.tex").read_text()
    assert text.startswith("\\documentclass") and text.rstrip().endswith("\\end{document}")
    code, _, _ = run(capsys, "--n", "2", "--d", "2", "-o", str(tmp_path / "y.md"))
    assert code == 0 and (tmp_path / "y.md").read_text().startswith("# Self-attention")
    code, _, err = run(capsys, "--n", "2", "--d", "2", "--format", "md", "-o", str(tmp_path / "z.tex"))
    assert code == 2 and "--format md does not match" in err and err.count("\n") == 1
    assert not (tmp_path / "z.tex").exists()
