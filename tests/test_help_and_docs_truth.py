"""What help and docs say is what is true: measured timings, existing extras, values not names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from attnsym.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def _measured_tour_medians() -> dict[str, float]:
    """The medians of the tour table that benchmarks/bench_tour.py writes into docs/benchmarks.md."""
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    block = text[text.index("<!-- BEGIN tour -->"):text.index("<!-- END tour -->")]
    rows = re.findall(r"^\| `(attnsym tour(?: --quick)?)` \| ([\d.]+) \|", block, re.M)
    assert len(rows) == 2, block
    return {command: float(median) for command, median in rows}


def test_documented_tour_times_are_the_measured_ones():
    measured = _measured_tour_medians()
    page = (ROOT / "docs" / "getting-started.md").read_text()
    said = dict(re.findall(r"^(attnsym tour(?: --quick)?) .*?about (\d+(?:\.\d+)?) s", page, re.M))
    assert set(said) == set(measured), said
    for command, seconds in said.items():  # rounded to whole seconds, never "a few seconds" for 14 s
        assert abs(float(seconds) - measured[command]) <= 1.0, (command, seconds, measured[command])
    for vague in ("a few seconds", "well under a minute"):
        assert vague not in page


def test_getting_started_names_only_extras_that_exist():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    page = (ROOT / "docs" / "getting-started.md").read_text()
    named = set(re.findall(r"\.\[([a-z,]+)\]", page)) | set(re.findall(r"extras?: `(\w+)`", page))
    for group in named:
        for extra in group.split(","):
            assert extra in extras, f"getting-started names extra {extra!r}; pyproject has {sorted(extras)}"


def test_derive_help_prints_the_size_limit_it_uses(capsys):
    from attnsym.symbolic.cost import DEFAULT_MAX_TERMS

    text = _help(capsys, "derive")
    assert f"(default {DEFAULT_MAX_TERMS:,.0f})" in text and "DEFAULT_MAX_TERMS" not in text


def test_verify_help_points_at_what_is_shipped(capsys):
    text = _help(capsys, "verify")
    assert "CLAIMS.md" not in text and "attnsym verify --list" in text


def test_plot_help_lists_the_figures_and_formats_it_accepts(capsys):
    from attnsym import plots

    text = _help(capsys, "plot")
    for name, what in plots.FIGURES.items():
        assert f"{name} {what}" in text
    assert ", ".join(f".{f}" for f in plots.FORMATS) in text


def test_cli_tells_a_cli_user_about_force_not_overwrite(tmp_path, capsys):
    out = tmp_path / "g.png"
    assert main(["plot", "gelu", "-o", str(out)]) == 0
    assert main(["plot", "gelu", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "overwrite=True" not in err
