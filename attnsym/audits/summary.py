r"""What an audit found, as data and as a Markdown report with figures.

:func:`summarise` reads ``heads.parquet`` and returns an :class:`AuditSummary`:

* **sink rate per layer** — the share of (text, head) pairs of the layer whose
  ``first_token_mass`` is at least the first-token threshold of :mod:`attnsym.heads`
  (:data:`~attnsym.heads.DEFAULT_THRESHOLDS`, 0.4), with a 95 % Wilson score interval over
  those pairs (pairs of one text are not independent: read it as a lower bound of the
  uncertainty);
* **head classes over the corpus** — each (text, layer, head) gets the pattern with the highest
  score at or above its threshold among first-token (``first_token_mass``), previous-token,
  self, induction and duplicate-token, else ``mixed`` (:mod:`attnsym.heads`' rule, on the
  streamed means); counted per class;
* **entropy against length** — per text and layer, the mean row entropy of the heads against
  :math:`\ln n`, beside the ceiling :math:`\ln n` (uniform weights) and Zhai et al.'s lower
  bound (:func:`attnsym.symbolic.softmax_limits.entropy_lower_bound`) for a few logit norms σ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import atomic_write
from ..heads import DEFAULT_THRESHOLDS
from .result import require

__all__ = ["CLASS_RULES", "AuditSummary", "summarise", "wilson", "write_report"]

#: class -> (column, threshold key of attnsym.heads.DEFAULT_THRESHOLDS), in tie order
CLASS_RULES = {"first-token": ("first_token_mass", "first"), "previous-token": ("prev_token_mass", "previous"),
               "self": ("self_mass", "self"), "induction": ("induction_mass", "induction"),
               "duplicate-token": ("duplicate_mass", "duplicate")}


def wilson(k: np.ndarray, n: np.ndarray, z: float = 1.959963984540054) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (95 % by default).

    >>> lo, hi = wilson(np.array([5]), np.array([10]))
    >>> round(float(lo[0]), 3), round(float(hi[0]), 3)
    (0.237, 0.763)
    """
    k, n = np.asarray(k, float), np.asarray(n, float)
    p = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@dataclass(frozen=True)
class AuditSummary:
    """The summary of one audit (see the module docstring); arrays per layer from 0."""

    model: str
    revision: str
    layers: int
    heads: int
    texts: int
    sink_rate: np.ndarray
    sink_low: np.ndarray
    sink_high: np.ndarray
    classes: dict[str, np.ndarray]
    log_n: np.ndarray
    entropy: np.ndarray


def summarise(table_path: str | Path) -> AuditSummary:
    """The :class:`AuditSummary` of an audit's ``heads.parquet``."""
    pq = require("pyarrow.parquet", "audit", "an audit summary")
    t = pq.read_table(table_path).to_pydict()
    layer, head = np.asarray(t["layer"]), np.asarray(t["head"])
    L = int(layer.max()) + 1 if layer.size else 0
    H = int(head.max()) + 1 if head.size else 0
    first = np.asarray(t["first_token_mass"], float)
    sink = np.nan_to_num(first) >= DEFAULT_THRESHOLDS["first"]
    pairs = np.bincount(layer, minlength=L)
    hits = np.bincount(layer, weights=sink, minlength=L)
    low, high = wilson(hits, pairs)
    scores = np.stack([np.asarray(t[col], float) for col, _ in CLASS_RULES.values()], axis=1)
    limits = np.array([DEFAULT_THRESHOLDS[key] for _, key in CLASS_RULES.values()])
    eligible = np.where(np.nan_to_num(scores, nan=-np.inf) >= limits, np.nan_to_num(scores, nan=-np.inf), -np.inf)
    best = np.argmax(eligible, axis=1)
    mixed = ~np.isfinite(eligible.max(axis=1)) if eligible.size else np.zeros(0, bool)
    classes = {name: np.bincount(layer[(best == c) & ~mixed], minlength=L) for c, name in enumerate(CLASS_RULES)}
    classes["mixed"] = np.bincount(layer[mixed], minlength=L)
    index = np.asarray(t["text_index"])
    texts = np.unique(index)
    tokens = np.asarray(t["tokens"])
    ent = np.asarray(t["entropy"], float)
    entropy = np.full((texts.size, L), np.nan)
    log_n = np.zeros(texts.size)
    for r, k in enumerate(texts):
        rows = index == k
        log_n[r] = math.log(tokens[rows][0])
        for q in range(L):
            sel = rows & (layer == q)
            entropy[r, q] = np.nanmean(ent[sel]) if np.any(~np.isnan(ent[sel])) else np.nan
    return AuditSummary(model=t["model"][0] if t["model"] else "", revision=t["revision"][0] if t["revision"] else "",
                        layers=L, heads=H, texts=int(texts.size), sink_rate=hits / np.maximum(pairs, 1),
                        sink_low=low, sink_high=high, classes=classes, log_n=log_n, entropy=entropy)


def _markdown(result, summary: AuditSummary, statuses: list[dict[str, str]]) -> str:
    refused = [s for s in statuses if s["status"] == "refused"]
    lines = [f"# Audit of {summary.model} (revision {summary.revision})", "",
             f"{result.texts} texts: {result.measured} measured, {result.refused} refused, {result.truncated} "
             f"truncated to the model's context, {result.skipped} blank lines skipped"
             + (f"; {result.resumed} found done by an earlier run." if result.resumed else "."), "",
             "Rows: `heads.parquet`, one per text × layer × head (layers and heads from 0).", "",
             "## Sink rate per layer", "",
             f"Share of (text, head) pairs with `first_token_mass` ≥ {DEFAULT_THRESHOLDS['first']}, 95 % Wilson "
             "interval over the pairs.", "", "![sink rate](sink_rate.png)", "",
             "| layer | sink rate | 95 % interval |", "|---|---|---|"]
    for q in range(summary.layers):
        lines.append(f"| {q} | {summary.sink_rate[q]:.3f} | {summary.sink_low[q]:.3f} – {summary.sink_high[q]:.3f} |")
    names = list(summary.classes)
    lines += ["", "## Head classes over the corpus", "",
              "Each (text, layer, head) gets the pattern with the highest score at or above its threshold "
              "(attnsym.heads' thresholds), else mixed; counts per layer.", "",
              "| layer | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for q in range(summary.layers):
        lines.append(f"| {q} | " + " | ".join(str(int(summary.classes[c][q])) for c in names) + " |")
    lines += ["", "## Entropy against length", "",
              "Mean row entropy (nats) of each layer's heads per text against ln n, beside the ceiling ln n "
              "(uniform weights) and Zhai et al.'s lower bound for logit norms σ.", "",
              "![entropy against log n](entropy_length.png)", ""]
    if refused:
        lines += ["## Refused texts", ""] + [f"- text {s['text_id']}: {s['reason']}" for s in refused[:50]]
        lines += [f"- … and {len(refused) - 50} more" if len(refused) > 50 else ""]
    return "\n".join(lines).rstrip() + "\n"


def write_report(result, statuses: list[dict[str, str]]) -> Path:
    """Write ``report.md``, ``sink_rate.png`` and ``entropy_length.png`` into the audit's folder; returns the report."""
    from ..plots.audit import entropy_length_figure, sink_rate_figure
    from ..plots.files import figure_to_bytes

    summary = summarise(result.table)
    out = Path(result.out)
    atomic_write(out / "sink_rate.png", figure_to_bytes(sink_rate_figure(summary)), overwrite=True)
    atomic_write(out / "entropy_length.png", figure_to_bytes(entropy_length_figure(summary)), overwrite=True)
    return atomic_write(out / "report.md", _markdown(result, summary, statuses), overwrite=True)
