"""Reports of checked claims: Markdown with LaTeX equations and PNG/SVG figures, and JSON.

Everything here formats :class:`~attnsym.claims.Evidence`; nothing is computed. The output is
deterministic for a given seed: numbers are printed with a fixed precision, wall times are
left out (unless asked for in JSON), and figures are rendered without dates and with a fixed
SVG id salt.

>>> from attnsym.claims import Evidence
>>> ev = Evidence("demo", "Two is even.", "holds", method="arithmetic", summary="2 % 2 == 0",
...               equations=(("parity", sp.Eq(sp.Integer(2) % 2, 0)),))
>>> print(to_markdown([ev], seed=0, quick=True).splitlines()[0])
# Claims checked by attnsym
>>> to_json([ev], seed=0, quick=True).count('"verdict": "holds"')
1
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp

from .. import __version__
from .._io import atomic_write, refuse_existing, staged_directory
from ..errors import SpecError
from ..plots import figure_to_bytes
from ._evidence import BY_CONSTRUCTION, Evidence, RenderedFigure, tex
from ._markdown import as_row, is_sympy, text_markdown, value_markdown

__all__ = ["Report", "evidence_to_dict", "render_report", "tex", "to_json", "to_jsonable", "to_markdown", "write_report"]

FIGURE_FORMATS = ("png", "svg")
# words only: an emoji renders as a box in fonts without it (PDF, LaTeX, many terminals)
_VERDICT_MARK = {"holds": "holds", "holds-under-conditions": "holds under conditions", "fails": "FAILS"}


def to_jsonable(obj: Any) -> Any:
    """Plain JSON data: SymPy objects become ``{"text", "latex"}``, arrays lists, floats stay floats.

    >>> to_jsonable({"v": sp.Symbol("d") ** 2, "x": np.float64(0.5), "t": (1, 2)})
    {'v': {'text': 'd**2', 'latex': 'd^{2}'}, 'x': 0.5, 't': [1, 2]}
    """
    if is_sympy(obj):
        return {"text": str(obj), "latex": sp.latex(obj)}
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        x = float(obj)
        return x if math.isfinite(x) else str(x)
    if isinstance(obj, str) or obj is None:
        return obj
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if is_dataclass(obj) and not isinstance(obj, type):  # a study's typed result: its fields by name
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, Iterable):
        return [to_jsonable(v) for v in obj]
    return str(obj)


def evidence_to_dict(ev: Evidence, *, timing: bool = False) -> dict[str, Any]:
    """The evidence as JSON-ready data (figures listed by name; ``seconds`` only with ``timing``)."""
    out = {
        "claim": ev.claim,
        "statement": ev.statement,
        "verdict": ev.verdict,
        "expected": ev.expected,
        "as_expected": ev.as_expected,
        "method": ev.method,
        "by_construction": list(ev.by_construction),
        "source": ev.source,
        "summary": ev.summary,
        "conditions": list(ev.conditions),
        **(ev.rendered if ev.rendered is not None else json_parts(ev)),
        "figures": sorted(ev.figures),
    }
    if timing:
        out["seconds"] = round(ev.seconds, 3)
    return out


def json_parts(ev: Evidence) -> dict[str, Any]:
    """The JSON form of ``ev.equations`` and ``ev.details`` (what :attr:`Evidence.rendered` holds)."""
    return {"equations": [{"title": title, **_expr_json(eq)} for title, eq in ev.equations],
            "details": to_jsonable(ev.details)}


def _expr_json(eq: Any) -> dict[str, str]:
    value = to_jsonable(eq)
    return value if isinstance(value, dict) else {"text": str(eq), "latex": str(eq)}


def to_json(evidences: Sequence[Evidence], *, seed: int, quick: bool, timing: bool = False) -> str:
    """A JSON document: the run's settings, counts per verdict, and every claim's evidence."""
    doc = {
        "attnsym": __version__,
        "seed": seed,
        "quick": quick,
        "all_as_expected": all(ev.as_expected for ev in evidences),
        "counts": {v: sum(ev.verdict == v for ev in evidences) for v in ("holds", "holds-under-conditions", "fails")},
        "claims": [evidence_to_dict(ev, timing=timing) for ev in evidences],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------- Markdown

def _cell(value: Any) -> str:
    """One value for a Markdown table cell (a ``|`` would end the cell; see :mod:`._markdown`)."""
    return value_markdown(value, table=True)


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    lines = ["| " + " | ".join(text_markdown(str(k), table=True) for k in keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(row[k]) if k in row else "" for k in keys) + " |" for row in rows]
    return lines


def _details(details: Mapping[str, Any]) -> list[str]:
    """Evidence details: tables for lists of rows, a titled list for a mapping, a bullet per value."""
    lines: list[str] = []
    bullets: list[str] = []

    def flush() -> None:
        if bullets:
            lines.extend([*bullets, ""])
            bullets.clear()

    for key, value in details.items():
        label = text_markdown(str(key))
        value = [as_row(r) for r in value] if isinstance(value, list | tuple) else as_row(value)
        if isinstance(value, list | tuple) and value and all(isinstance(r, Mapping) for r in value):
            flush()
            lines += [f"#### {label}", "", *_table(value), ""]
        elif isinstance(value, Mapping) and value and not is_sympy(value):
            flush()
            lines += [f"#### {label}", ""] + [f"- {text_markdown(str(k))}: {value_markdown(v)}"
                                              for k, v in value.items()] + [""]
        else:
            bullets.append(f"- {label}: {value_markdown(value)}")
    flush()
    return lines


def _anchor(claim_id: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in claim_id.lower())


def to_markdown(
    evidences: Sequence[Evidence],
    *,
    seed: int,
    quick: bool,
    figure_paths: Mapping[str, Mapping[str, str]] | None = None,
    title: str = "Claims checked by attnsym",
) -> str:
    """A Markdown report: a summary table, then one section per claim.

    Equations are ``$$ ... $$`` LaTeX blocks (MathJax / arithmatex), tables of numbers are
    Markdown tables, ``figure_paths[claim][figure]`` (a relative path) embeds an image.
    """
    figure_paths = figure_paths or {}
    lines = [
        f"# {text_markdown(title)}",
        "",
        f"Generated by `attnsym verify` (seed {seed}, {'quick' if quick else 'full'} mode). Each claim is checked "
        "by composing the symbolic, numeric and graph layers. The verdict says whether the claim holds, holds only "
        "under the listed conditions, or fails; a claim the sources state without conditions is “as expected” when "
        "it holds or holds under conditions. A method marked † also has parts that are "
        f"{BY_CONSTRUCTION}: they compare attnsym with itself, cannot fail, and are listed apart in the claim's section.",
        "",
        "| claim | verdict | method | key evidence |",
        "|---|---|---|---|",
    ]
    for ev in evidences:
        mark = _VERDICT_MARK.get(ev.verdict, text_markdown(ev.verdict))
        if not ev.as_expected:
            mark += f" (expected: {ev.expected})"
        method = _cell(ev.method) + (" †" if ev.by_construction else "")
        lines.append(f"| [`{ev.claim}`](#{_anchor(ev.claim)}) | {mark} | {method} | {_cell(ev.summary)} |")
    lines.append("")
    for ev in evidences:
        lines += [f"## {ev.claim}", "", f"> {text_markdown(ev.statement)}", ""]
        lines += [f"**Verdict:** {_VERDICT_MARK.get(ev.verdict, text_markdown(ev.verdict))}"
                  + ("" if ev.as_expected else f" — expected {ev.expected}"), ""]
        lines += [f"**Method:** {text_markdown(ev.method)}", "", f"**Key evidence:** {text_markdown(ev.summary)}", ""]
        if ev.source:
            lines += [f"**Source:** {text_markdown(ev.source)}", ""]
        if ev.by_construction:
            lines += [f"**{BY_CONSTRUCTION.capitalize()}** (cannot fail; not counted as evidence):", ""]
            lines += [f"- {text_markdown(t)}" for t in ev.by_construction] + [""]
        if ev.conditions:
            lines += ["**Conditions:**", ""] + [f"- {text_markdown(c)}" for c in ev.conditions] + [""]
        if ev.equations:
            lines += ["### Equations", ""]
            for eq_title, eq in ev.equations:
                if is_sympy(eq):
                    lines += [f"{text_markdown(eq_title)}:", "", "$$", sp.latex(eq), "$$", ""]
                else:  # not a SymPy object: shown verbatim as code, never as Markdown
                    lines += [f"{text_markdown(eq_title)}:", "", "```text", str(eq), "```", ""]
        if ev.details:
            lines += ["### Evidence", "", *_details(ev.details)]
        for name, paths in sorted(figure_paths.get(ev.claim, {}).items()):
            lines += [f"![{text_markdown(f'{ev.claim}: {name}')}]({paths})", ""]
    return "\n".join(lines).rstrip() + "\n"


@dataclass(frozen=True)
class Report:
    """A rendered report: the Markdown text and the figure files (relative path -> bytes)."""

    markdown: str
    files: dict[str, bytes]

    def _repr_markdown_(self) -> str:
        return self.markdown


def figure_files(build, formats: Sequence[str]) -> dict[str, bytes]:
    """One figure of :attr:`Evidence.figures` in each of ``formats``: drawn once by its callable, or as a worker rendered it."""
    if isinstance(build, RenderedFigure):
        missing = [fmt for fmt in formats if fmt not in build.files]
        if missing:
            raise SpecError(f"figure {build.name!r} of claim {build.claim!r} was rendered as "
                            f"{', '.join(sorted(build.files)) or 'nothing'}, not {', '.join(missing)}")
        return {fmt: build.files[fmt] for fmt in formats}
    if not formats:
        return {}
    fig = build()
    return {fmt: figure_to_bytes(fig, fmt) for fmt in formats}


def render_report(
    evidences: Sequence[Evidence],
    *,
    seed: int,
    quick: bool,
    figures: bool = True,
    figure_dir: str = "figures",
    formats: Sequence[str] = FIGURE_FORMATS,
    title: str = "Claims checked by attnsym",
) -> Report:
    """Render the Markdown and every figure (``figure_dir/<claim>-<name>.<fmt>``) in memory.

    The Markdown embeds the first format (PNG by default); the others sit beside it.

    Examples
    --------
    >>> from attnsym.claims import verify
    >>> rep = render_report([verify("softmax-jacobian", quick=True)], seed=0, quick=True)
    >>> rep.markdown.count("$$") > 0, sorted(rep.files)
    (True, [])
    """
    formats = [f.lower().lstrip(".") for f in formats]
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if bad or not formats:
        raise SpecError(f"formats must be a non-empty subset of {FIGURE_FORMATS} (got {list(formats)!r})")
    files: dict[str, bytes] = {}
    paths: dict[str, dict[str, str]] = {}
    if figures:
        for ev in evidences:
            for name, build in sorted(ev.figures.items()):
                stem = f"{figure_dir}/{_anchor(ev.claim)}-{_anchor(name)}" if figure_dir else f"{ev.claim}-{name}"
                for fmt, data in figure_files(build, formats).items():
                    files[f"{stem}.{fmt}"] = data
                paths.setdefault(ev.claim, {})[name] = f"{stem}.{formats[0]}"
    return Report(to_markdown(evidences, seed=seed, quick=quick, figure_paths=paths, title=title), files)


def write_report(
    evidences: Sequence[Evidence],
    directory: str | os.PathLike,
    *,
    seed: int,
    quick: bool,
    overwrite: bool = False,
    figures: bool = True,
    formats: Sequence[str] = FIGURE_FORMATS,
) -> list[Path]:
    """Write ``report.md``, ``claims.json`` and ``figures/*.png|svg`` into ``directory``.

    The set is written into a staging folder and put in place whole
    (:func:`attnsym._io.staged_directory`); a ``directory`` that is not empty raises
    :class:`~attnsym.OverwriteError` unless ``overwrite`` (checked before anything is
    rendered), which replaces files of the same name and keeps the others.

    Returns
    -------
    list of Path
        Every file written, ``report.md`` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from attnsym.claims import verify
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
    >>> paths = write_report([verify("softmax-jacobian", quick=True)], out, seed=0, quick=True)
    >>> [p.name for p in paths]
    ['report.md', 'claims.json']
    """
    directory = Path(directory)
    refuse_existing([directory / "report.md", directory / "claims.json"], overwrite=overwrite)
    refuse_existing([directory], overwrite=overwrite, folders=True)  # any other non-empty folder needs overwrite too
    report = render_report(evidences, seed=seed, quick=quick, figures=figures, formats=formats)
    targets = {"report.md": report.markdown.encode("utf-8"),
               "claims.json": to_json(evidences, seed=seed, quick=quick).encode("utf-8"), **report.files}
    with staged_directory(directory, overwrite=overwrite) as stage:  # the report appears whole or not at all
        for rel, data in targets.items():
            atomic_write(stage / rel, data)
    return [directory / rel for rel in targets]
