"""Griffe extension for the API pages: show bare doctests as Python code blocks.

numpydoc puts examples under an ``Examples`` heading, which mkdocstrings renders as code. A
docstring may also show a short ``>>>`` session in its running text; Markdown would read
those lines as nested block quotes (and ``[1, 2]`` in the output as a link). This extension
wraps every such session that is not already in an ``Examples`` section or a fenced block in
a ```` ```pycon ```` fence. It changes only what the site shows, never the code.
"""

from __future__ import annotations

import re

import griffe

_HEADING = re.compile(r"^\s*(\w[\w ]*)\n\s*-{3,}\s*$", re.MULTILINE)


def fence_doctests(text: str) -> str:
    """Wrap ``>>>`` sessions outside ``Examples`` sections and fences in ```` ```pycon ```` fences.

    >>> print(fence_doctests("Sum.\\n\\n>>> 1 + 1\\n2\\n\\nMore."))
    Sum.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    More.
    """
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and len(lines[i + 1].strip()) >= 3 and stripped:
            section = stripped.lower()
        if not fenced and section != "examples" and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += [f"{indent}```pycon", *block, f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Apply :func:`fence_doctests` to every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
