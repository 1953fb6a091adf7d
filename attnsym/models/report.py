"""Markdown about real-model routes: what ``attnsym route`` writes as ``report.md``, and the docs page uses.

Pure formatting of :class:`~attnsym.models.Route` / :class:`~attnsym.models.TokenContrast`
data and the numbers of :mod:`attnsym.models.evidence`; nothing is computed here but sorting.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .contrast import TokenContrast
from .evidence import special_shares
from .route import Route

__all__ = ["SPECIAL_NOTE", "contrast_markdown", "markdown_code", "prediction_markdown", "route_markdown", "special_markdown"]

#: the note on [CLS]/[SEP] and the first token, shown with the measured shares
SPECIAL_NOTE = (
    "Many heads put much of their attention on tokens that carry little meaning of their own: `[CLS]` and "
    "`[SEP]` in BERT-family encoders, the first token in decoders. Clark et al. (2019, *What Does BERT Look "
    "At?*) read this as a *no-op*: softmax rows must sum to 1, and a head with nothing to gather parks its mass "
    "on a token whose value changes little. Such mass is not evidence that `[CLS]` matters for the word; compare "
    "routings on the remaining tokens (the contrast's roles keep `special before` / `special after` apart for "
    "this reason), and read rollout and flow — which mix every layer — with the same caution."
)


#: the characters that make Markdown inline syntax (emphasis, code, links, tables, strike-through); with ``[``
#: and ``]`` escaped, parentheses, ``!`` and the rest cannot form a link or an image
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")


def _plain(text: object) -> str:
    """``text`` as literal Markdown text: HTML escaped (never live markup), Markdown punctuation backslashed."""
    one_line = " ".join(str(text).split())
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(one_line, quote=False))


def _code(text: object) -> str:
    """``text`` as one Markdown code span (shown literally), safe inside a table cell.

    The fence is one backtick longer than the longest run of backticks in the text, so the text cannot close it,
    and ``|`` is escaped for tables (GitHub-flavoured Markdown reads ``\\|`` inside a cell's code span as ``|``).
    """
    one_line = " ".join(str(text).split()) or " "
    fence = "`" * (max((len(run) for run in re.findall("`+", one_line)), default=0) + 1)
    pad = " " if one_line[0] == "`" or one_line[-1] == "`" else ""
    return f"{fence}{pad}{one_line.replace('|', chr(92) + '|')}{pad}{fence}"


def special_markdown(route: Route) -> str:
    """A table: per layer, the share of attention to the first token, the closing special token, the rest."""
    s = special_shares(route)
    others = route.n - 1 - (s.last_label != "—")
    lines = [f"| layer | to {_code(s.first_label)} | to {_code(s.last_label)} | to the other {others} tokens |",
             "|---|---|---|---|"]
    lines += [f"| {ly + 1} | {s.first[ly]:.3f} | {s.last[ly]:.3f} | {s.rest[ly]:.3f} |" for ly in range(route.layers)]
    return "\n".join(lines) + "\n"


def route_markdown(route: Route, *, rollout: np.ndarray | None = None, flow: np.ndarray | None = None,
                   flow_outputs: Sequence[int] = (0,), top: int = 5) -> str:
    """One text: its tokens with offsets, where attention lands per layer, and rollout/flow's top inputs."""
    labels = route.labels()
    lines = [f"### {_plain(route.text)}", "", f"{route.n} tokens, {route.layers} layers × {route.heads} heads.", "",
             "| token | word piece | characters |", "|---|---|---|"]
    for p, (token, (a, b), special) in enumerate(zip(route.tokens, route.offsets, route.special, strict=True)):
        where = "added by the tokenizer" if special else f"{a}–{b} {_code(route.text[a:b])}"
        lines.append(f"| {p + 1} | {_code(token)} | {where} |")
    lines += ["", "Mean attention per layer (from 1; over heads and queries):", "", special_markdown(route)]
    if rollout is not None:
        for a, i in enumerate(flow_outputs):
            order = np.argsort(-rollout[i], kind="stable")[:top]
            reads = ", ".join(f"{_code(labels[j])} {rollout[i, j]:.3f}" for j in order)
            lines.append(f"- rollout into {_code(labels[i])} (token {i + 1}): {reads}")
            if flow is not None:
                order = np.argsort(-flow[a], kind="stable")[:top]
                reads = ", ".join(f"{_code(labels[j])} {flow[a, j]:.3f}" for j in order)
                lines.append(f"- flow into {_code(labels[i])}: {reads}")
        lines.append("")
    return "\n".join(lines) + "\n"


#: a text as one Markdown code span, safe in a table cell (for the CLI's reports)
markdown_code = _code


def prediction_markdown(route: Route, *, k: int = 5) -> str:
    """A decoder's next-token prediction after the text: the ``k`` most probable tokens with their probabilities."""
    rows = [f"| {rank} | {_code(repr(text))} | {p:.4f} |" for rank, (text, p) in enumerate(route.top_next(k), start=1)]
    return "\n".join([f"What the model predicts after {_code(route.text)}:", "", "| rank | next token | probability |",
                      "|---|---|---|", *rows, ""]) + "\n"


def contrast_markdown(c: TokenContrast, *, rows: int = 10) -> str:
    """The contrast: summary, the most different heads, mean distance per layer, the weights' identity."""
    w1, w2 = (w.text for w in c.words)
    L, H = c.role_distance.shape
    order = np.argsort(-np.nan_to_num(c.role_distance, nan=-1.0), axis=None, kind="stable")[:rows]
    table = c.table()
    by_index = {(row[0], row[1]): row for row in table.rows}
    lines = [c.summary(notes=False) + ".", "",
             f"The word: {_code(w1)} (tokens {', '.join(c.routes[0].tokens[p] for p in c.words[0].positions)}) and "
             f"{_code(w2)} (tokens {', '.join(c.routes[1].tokens[p] for p in c.words[1].positions)}); a word of several "
             f"pieces is routed as the {'mean of its pieces' if c.pieces == 'mean' else 'first piece'}; "
             f"{_plain(c.chosen())}.", ""]
    lines += [f"> **Note.** {_plain(note)}." for note in c.notes] + ([""] if c.notes else [])
    lines += [
             "**Three distances, 0..1, each a total variation over what both sentences have (renormalised), so an "
             "item only one sentence has — an empty `after` side — is never counted as a difference:** *role "
             "distance* over the shares the word gives to `special before` / `before` / `self` / `after` / "
             "`special after` (the roles both sentences have); *offset distance* over the attention at offsets "
             f"-{c.offset_window}..+{c.offset_window} from the word (position: does it read its neighbours the same "
             "way?); *content distance* over the tokens both sentences contain, pooled by identity wherever they "
             f"stand ({', '.join(f'{_code(i)}' for i in c.content_items)}: does it read the same tokens?). "
             "H/ln n: row entropy as a fraction of its maximum.", "",
             f"**The {rows} heads that route it most differently** (by role distance; layers and heads from 1):", "",
             "| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for flat in order:
        layer, head = (int(v) for v in np.unravel_index(int(flat), (L, H)))
        row = by_index[(int(layer) + 1, int(head) + 1)]
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else _plain(v) for v in row) + " |")
    lines += ["", "| layer | mean role distance over heads | largest (head) | mean offset distance | "
              "mean content distance |", "|---|---|---|---|---|"]
    offset = c.offset_distance if c.offset_distance is not None else np.full((L, H), np.nan)
    content = c.content_distance if c.content_distance is not None else np.full((L, H), np.nan)
    for layer in range(L):
        d = np.nan_to_num(c.role_distance[layer], nan=-1.0)
        lines.append(f"| {layer + 1} | {np.nanmean(c.role_distance[layer]):.3f} | {d.max():.3f} (head "
                     f"{int(np.argmax(d)) + 1}) | {np.nanmean(offset[layer]):.3f} | {np.nanmean(content[layer]):.3f} |")
    same = "identical" if c.weights_identical else "**not identical**"
    names = ", ".join(f"`{k}`" for k in c.weight_digests[0])
    lines += ["", f"**The weights are the same.** Every parameter of every layer ({names}) was fingerprinted "
              f"(BLAKE2b of dtype, shape and bytes) before and after routing both texts in one batch: {same}. "
              "The same projections and the same feed-forward matrices acted on the word in both sentences; what "
              "differs is its attention row, computed from the input.", ""]
    return "\n".join(lines) + "\n"


def describe(model: Any) -> str:
    """One line: the model's name and architecture."""
    return f"`{model.name}` — {model.config.describe()}"
