"""The command line as one tool: help that teaches, one-line errors, --debug, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

import attnsym as at
from attnsym.cli import COMMANDS, build_parser, main

PIL = pytest.importorskip("PIL.Image")


def _run(*argv: str) -> subprocess.CompletedProcess:
    code = "import sys; from attnsym.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def _available() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return list(sub.choices)


def test_top_level_help_explains_the_idea_and_lists_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "y = W(x) x" in out
    for command in _available():
        assert command in out


def test_tour_and_plot_are_registered():
    assert {"tour", "plot"} <= set(_available()) <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_has_description_and_examples(command, capsys):
    if command not in _available():
        pytest.skip(f"attnsym {command} is not installed in this checkout")
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert f"attnsym {command}" in out
    assert "examples:" in out
    assert "--force" in out


def test_plot_help_describes_every_figure(capsys):
    from attnsym.plots import FIGURES

    with pytest.raises(SystemExit):
        main(["plot", "--help"])
    out = capsys.readouterr().out
    for name in FIGURES:
        assert f"  {name}" in out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_unknown_figure_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", "histogram", "-o", "x.png"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'histogram'" in capsys.readouterr().err


def test_plot_writes_png_of_the_expected_size(tmp_path, capsys):
    out = tmp_path / "gelu.png"
    assert main(["plot", "gelu", "-o", str(out), "--dpi", "50"]) == 0
    with PIL.open(out) as image:
        assert image.format == "PNG"
        assert image.size == (400, 300)  # the GELU figure is 8 x 6 inches
    assert f"wrote {out}" in capsys.readouterr().err


def test_plot_svg_and_heatmap_layer_flags(tmp_path):
    out = tmp_path / "heads.svg"
    assert main(["plot", "heatmap", "--n", "4", "--d", "6", "--heads", "3", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert text.count("head ") >= 3  # one titled panel per head


def test_errors_are_one_line_without_traceback_and_exit_2(tmp_path):
    proc = _run("plot", "gelu", "-o", str(tmp_path / "gelu.jpg"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"attnsym plot: error: -o must end in .png, .svg, .pdf (got '{tmp_path / 'gelu.jpg'}')"
    assert "Traceback" not in proc.stderr


def test_bad_layer_is_one_line_naming_the_argument(tmp_path):
    proc = _run("plot", "heatmap", "--d", "10", "--heads", "3", "-o", str(tmp_path / "h.png"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "heads must divide d_model" in proc.stderr and "d_model=10, heads=3" in proc.stderr


def test_existing_output_is_refused_without_force(tmp_path):
    out = tmp_path / "gelu.png"
    out.write_bytes(b"keep me")
    proc = _run("plot", "gelu", "-o", str(out))
    assert proc.returncode == 2
    assert "exists; pass --force" in proc.stderr
    assert out.read_bytes() == b"keep me"
    assert main(["plot", "gelu", "-o", str(out), "--force"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_debug_shows_the_traceback(tmp_path):
    proc = _run("--debug", "plot", "gelu", "-o", str(tmp_path / "gelu.jpg"))
    assert proc.returncode == 2  # the traceback, and still the status of a bad input
    assert "Traceback (most recent call last)" in proc.stderr
    assert "SpecError" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("attnsym plot: error: -o must end in .png, .svg, .pdf")


def test_tour_refuses_a_non_empty_folder(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["tour", "-o", str(tmp_path), "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsym tour: error: ") and "is not empty; pass --force" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_version():
    proc = _run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"attnsym {at.__version__}"


def test_cli_starts_in_a_fresh_interpreter_without_site():
    # ``importlib.util`` is a submodule: ``import importlib`` alone does not provide it, and in a
    # plain (non-editable) install nothing else imported it first, so every command crashed.
    # Here an editable install's path hook may have imported it, so forget it first.
    code = (
        "import importlib, sys; sys.modules.pop('importlib.util', None); vars(importlib).pop('util', None); "
        "from attnsym.cli import main; sys.exit(main(['--help']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "derive" in result.stdout


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "attnsym", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith("attnsym ")


def test_the_program_exits_with_mains_status_and_a_frozen_heap():
    """``console`` (the ``attnsym`` script, ``python -m attnsym``) returns what main returns, then freezes the heap."""
    import gc

    from attnsym.cli import console

    try:
        assert console(["verify", "--list"]) == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    done = subprocess.run([sys.executable, "-m", "attnsym", "verify", "no-such-claim"], capture_output=True, text=True)
    assert done.returncode == 2 and "no-such-claim" in done.stderr and "Traceback" not in done.stderr


# ----------------------------------------------------------------------------- exit statuses (issues 25, 26)
def test_an_internal_error_has_its_own_exit_status(monkeypatch, capsys):
    from attnsym.cli import EXIT_INTERNAL, EXIT_USAGE, derive

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(derive, "run", broken)
    assert main(["derive", "--n", "2", "--d", "2"]) == EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError" in err and "please report it" in err
    assert EXIT_INTERNAL != EXIT_USAGE == 2
    assert main(["--debug", "derive", "--n", "2", "--d", "2"]) == 3  # the traceback, the same status
    assert "Traceback" in capsys.readouterr().err


def test_debug_keeps_a_usage_errors_exit_status(capsys):
    assert main(["derive", "--n", "0"]) == 2
    capsys.readouterr()
    assert main(["--debug", "derive", "--n", "0"]) == 2  # was 1: the traceback ended the process
    err = capsys.readouterr().err
    assert "Traceback" in err and "--n must be a positive integer (got 0)" in err.splitlines()[-1]
    with pytest.raises(SystemExit) as exit_info:  # argparse's own usage errors
        main(["--debug", "derive", "--no-such-option"])
    assert exit_info.value.code == 2


def test_the_help_documents_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "2 an error you can fix" in out and "3 an internal error" in out


@pytest.mark.parametrize("command", ["route", "explore"])
def test_the_contrast_word_is_word_in_every_command_and_token_too(command):
    from attnsym.cli import build_parser

    parser = build_parser()
    for spelling in ("--word", "--token"):
        args = parser.parse_args([command, "a b", "a c", spelling, "a", "-o", "out"])
        assert (args.word if command == "explore" else args.token) == "a"


@pytest.mark.parametrize("kind", ["fifo", "folder", "empty"])
def test_explore_output_that_force_cannot_fix_is_named_precisely(tmp_path, capsys, kind):
    import os

    target = tmp_path / "page.html"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    argv = ["explore", "a b", "-o", "" if kind == "empty" else str(target), "--no-claims"]
    if kind == "empty":
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "-o must name the .html file to write (got '')" in err
    else:
        for force in ([], ["--force"]):
            assert main(argv + force) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "--force" not in err
            assert ("is a FIFO (named pipe)" if kind == "fifo" else "is a directory") in err
