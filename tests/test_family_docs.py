"""What loads, said from the family table: every command's --help and every docs page name the families it holds."""

from __future__ import annotations

import re
from pathlib import Path

import family_docs
import pytest

from attnsym.cli import COMMANDS, main
from attnsym.models.families import FAMILIES, families_table, family_names

ROOT = Path(__file__).resolve().parents[1]
#: how the help texts and docs named the families before they were read from the table
STALE = ("BERT-family encoders and GPT-2-family decoders", "BERT and GPT-2 only")


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_that_takes_a_model_names_the_families_of_the_table(capsys, command):
    text = _help(capsys, command)
    assert not any(s in text for s in STALE)
    if "--model" in text:
        assert family_names() in text, command
        assert "{model families}" not in text


def test_the_command_list_help_names_no_stale_family_list(capsys):
    text = _help(capsys)
    assert not any(s in text for s in STALE)


def test_family_names_follow_the_table():
    assert family_names().split(", ") == list(FAMILIES)


def test_every_page_block_is_the_table_now():
    assert family_docs.stale() == [], "run python tests/family_docs.py --write"
    with_blocks = {p.relative_to(ROOT).as_posix() for p in family_docs.pages()
                   if family_docs.blocks(p.read_text(encoding="utf-8"))}
    assert {"README.md", "docs/how-to/open-a-model-folder.md", "docs/how-to/head-classes.md"} <= with_blocks
    for page in family_docs.pages():
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert not any(s in text for s in STALE), page


def test_a_stale_block_is_found_and_refilled():
    page = "<!-- family-names:begin -->bert, gpt2<!-- family-names:end -->\n" \
           "<!-- families:begin (x) -->\n| old |\n<!-- families:end -->"
    fixed = family_docs.filled(page)
    assert fixed != page and family_names() in fixed and families_table() in fixed
    assert family_docs.filled(fixed) == fixed


def test_the_generated_real_model_page_takes_its_lists_from_the_table():
    # the page is written at docs build time (running its generator here takes a minute of figures): its source
    # calls the table's functions and types no list of family names of its own
    source = (ROOT / "docs" / "gen" / "real_model.py").read_text(encoding="utf-8")
    assert "{families_table()}" in source and "{family_names()}" in source
    assert not re.search(r"GPT-2, LLaMA|LLaMA, Mistral|Mistral, Qwen", source)
