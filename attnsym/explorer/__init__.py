"""The explorer: one self-contained, interactive HTML page of derivations, claims and routing.

The Python API computes; the page displays. :func:`page_data` gathers what the layers return —
:func:`attnsym.derive` (forward pass and gradients), :func:`attnsym.claims.verify_all`
(Evidence), the attention of a toy spec or of real-model routes with their head fusions,
rollout, flow and contrasts — into a :class:`PageData`; :func:`write_page` serialises it once
into one HTML file with KaTeX, the script and the style inlined, which opens from disk and
fetches nothing.

>>> import tempfile, pathlib
>>> data = page_data(evidence=(), derivations=False)          # the toy spec's routing only
>>> [i.name for i in data.inputs]
['toy input 1 (random vectors)', 'toy input 2 (random vectors)']
>>> path = write_page(data, pathlib.Path(tempfile.mkdtemp()) / "page.html")
>>> path.stat().st_size > 100_000                             # KaTeX and its fonts are inside
True
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..models.evidence import APPLE, packaged_model
from .collect import check_claims, claims_section, derivation_entry, derivation_section, routing_input, toy_routing
from .data import ContrastData, MlpData, PageData, RoutingInput, encode_array
from .page import render_page, write_page
from .real import model_routing

__all__ = [
    "ContrastData",
    "MlpData",
    "PageData",
    "RoutingInput",
    "claims_section",
    "derivation_entry",
    "derivation_section",
    "encode_array",
    "page_data",
    "render_page",
    "routing_input",
    "toy_routing",
    "write_page",
    "write_tour_page",
]


def page_data(*, evidence: Sequence[Any] | None = None, inputs: Sequence[RoutingInput] = (),
              contrasts: Sequence[ContrastData] = (), toy: bool = True, derivations: bool = True,
              figures: bool = True, seed: int = 0, quick: bool = False,
              title: str = "attnsym explorer", meta: dict[str, Any] | None = None) -> PageData:
    """Gather everything one page shows.

    Parameters
    ----------
    evidence : sequence of Evidence, optional
        The claims to show; ``None`` checks every claim now with ``seed`` and ``quick``
        (:func:`~attnsym.explorer.collect.check_claims`: one worker process per CPU, each drawing
        its claims' figures at the page's resolution), ``()`` shows none.
    inputs, contrasts : sequences
        Routing inputs (e.g. real-model sentences) and word contrasts between them; they come
        first in the page's input selector.
    toy : bool, default True
        Add the toy spec's two inputs (:func:`toy_routing`, sourced "toy: random vectors, words
        are labels") after ``inputs``; their word contrasts only when ``contrasts`` is empty, so
        a page about real sentences never offers a toy contrast in its word selector.
    derivations : bool, default True
        Derive the forward pass and gradients for ``n = 2, d_model = 2``.
    figures : bool, default True
        Inline the claims' figures.
    seed : int, default 0
        Seed of the toy weights and inputs, and of the claim checks.
    quick : bool, default False
        Quick claim checks.
    """
    if evidence is None:
        evidence = check_claims(seed=seed, quick=quick, figures=figures)
    all_inputs = list(inputs)
    all_contrasts = list(contrasts)
    if toy:
        toy_inputs, toy_contrasts = toy_routing(seed)
        offset = len(all_inputs)
        all_inputs += toy_inputs
        if not all_contrasts:
            all_contrasts += [replace(c, inputs=(c.inputs[0] + offset, c.inputs[1] + offset)) for c in toy_contrasts]
    facts = {"attnsym": __version__, "seed": seed, "claims": len(evidence)}
    if evidence:
        facts["quick claim checks"] = "yes" if quick else "no"
    facts.update(meta or {})
    return PageData(
        title=title,
        derivations=derivation_section() if derivations else (),
        claims=claims_section(evidence, figures=figures),
        inputs=all_inputs, contrasts=all_contrasts, meta=facts,
    )


def write_tour_page(path: str | os.PathLike, *, evidence: Sequence[Any], seed: int, quick: bool,
                    files: Sequence[tuple[str, str]] = (), results: Sequence[tuple[str, str, str, str]] = (),
                    figures: Sequence[tuple[str, str, bytes]] = (), overwrite: bool = False) -> Path:
    """The tour's ``index.html``: the explorer page for the tour's evidence, with the tour's results, figures and files.

    When the packaged model is installed, the sources' example comes first: "apple" in two
    sentences (:data:`attnsym.models.evidence.APPLE`) routed by all-MiniLM-L6-v2.

    Parameters
    ----------
    path : str or PathLike
        Where the page goes (the tour writes ``index.html`` in its folder).
    evidence : sequence of Evidence
        The claims the tour checked (not checked again).
    seed, quick : int, bool
        As the tour was run.
    files : sequence of (str, str)
        The tour's files, relative to the page, and what each shows (listed under a fold).
    results : sequence of (str, str, str, str)
        What the tour checked (:attr:`PageData.results`), shown on the first screen.
    figures : sequence of (str, str, bytes)
        The tour's figures (path, caption, PNG), shown with their captions (:attr:`PageData.figures`).
    overwrite : bool, default False
        Replace an existing page.
    """
    meta: dict[str, Any] = {}
    inputs: list[RoutingInput] = []
    contrasts: list[ContrastData] = []
    model = packaged_model()
    if model is not None:  # the sources' example on a real model, first
        text1, text2, word = APPLE
        inputs, contrasts = model_routing(model, [text1, text2], word=word)
        meta["model"] = model.name
    data = page_data(evidence=evidence, inputs=inputs, contrasts=contrasts, seed=seed, quick=quick,
                     title="attnsym tour", meta=meta)
    data = replace(data, files=tuple(files), results=tuple(results), figures=tuple(figures))
    return write_page(data, path, overwrite=overwrite)
