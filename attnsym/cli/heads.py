"""``attnsym heads``: name what every head of a real model does, as a table (and a figure, JSON, CSV)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from ._common import MODEL_FOLDERS

__all__ = ["add_parser", "run"]

_DESCRIPTION = """\
Route the texts through a real model (the packaged all-MiniLM-L6-v2 by default) and classify
every head by attnsym.heads: previous-token, next-token, self, first-token ([CLS]) and
end-token ([SEP]) sinks, punctuation, band (a fixed offset of 2 or more), broad (high
normalised entropy), and for decoders induction and duplicate-token (seeded repeated random
token sequences). A head carries every class whose score passes its threshold (a [CLS] sink
does not hide an induction head); its primary class (the table's first word, and the colour of
the figure) is the best specific pattern, a sink or broad only when nothing specific passes;
"mixed" when nothing passes. Every query of every text weighs the same. Layers and heads count
from 1.

{MODEL_FOLDERS}

--probe induction (decoders) classifies the heads on the induction protocol's repeated random
sequences instead of (or without) texts: every pattern is scored there, induction and
duplicate-token from the same attention.

Prints a layer x head table (primary class and score, then +further labels). With -o DIR, writes into DIR (all files or
none): heads.png (the grid coloured by class, with a legend), heads.json and heads.csv (every
score of every head).
""".replace("{MODEL_FOLDERS}", MODEL_FOLDERS)

_EPILOG = """\
examples:
  attnsym heads "I ate an apple for lunch." "The cat sat on the mat, then it slept."
  attnsym heads --model path/to/gpt2-folder "Hello world" -o out/
  attnsym heads --model SmolLM2-135M-Instruct --probe induction

exit status: 0 done, 2 an error (an unknown model, an empty text, no text without --probe, --probe on an
encoder, a non-empty DIR without --force)
"""

FILES = ("heads.png", "heads.json", "heads.csv")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "heads", help="classify every attention head of a real model (previous-token, sinks, broad, induction ...)",
        description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("texts", nargs="*", metavar="TEXT",
                        help="one or more texts (scores pool their queries); none with --probe")
    parser.add_argument("--probe", choices=("induction",), default=None,
                        help="classify on the repeated random sequences of the induction protocol (decoders)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", metavar="NAME_OR_DIR",
                        help="a packaged model's name or a Hugging Face folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--induction-length", type=int, default=None, metavar="L",
                        help="decoders: length of the random sequence repeated twice (default 50, or what fits)")
    parser.add_argument("--seed", type=int, default=0, help="decoders: seed of the random sequences (default 0)")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                        help="also write heads.png, heads.json and heads.csv into this folder")
    parser.add_argument("--force", action="store_true", help="write into a non-empty folder (same names replaced)")
    parser.set_defaults(run=run)
    return parser


def _csv(report) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["layer", "head", "class", "labels", "top_score", "band_offset", *report.patterns])
    for row in report.to_dict()["heads"]:
        writer.writerow([row["layer"], row["head"], row["class"], " ".join(row["labels"]),
                         "" if row["top_score"] is None else row["top_score"],
                         row["band_offset"], *("" if row["scores"][p] is None else row["scores"][p]
                                               for p in report.patterns)])
    return buffer.getvalue()


def run(args: argparse.Namespace) -> int:
    from .. import heads as hd  # lazy: attnsym.models (tokenizers, safetensors) +0.3 s over `attnsym --help`
    from .._io import atomic_write, refuse_existing, staged_directory
    from ..errors import SpecError
    from ..models import load

    if not args.texts and args.probe is None:
        raise SpecError("give at least one TEXT, or --probe induction to classify on repeated random sequences")
    if args.texts and args.probe is not None:
        raise SpecError(f"--probe {args.probe} classifies on its own sequences; give no TEXT with it "
                        f"(got {len(args.texts)})")
    if args.output is not None:  # before any work: refuse at once
        refuse_existing([args.output], overwrite=args.force, folders=True)
    model = load(args.model)
    length = args.induction_length
    if length is None:
        length = min(50, model.config.max_positions // 2)
    if args.probe is not None:
        print(f"probing {model.name} with repeated random sequences ...", file=sys.stderr)
        report = hd.probe(model, length=length, seed=args.seed)
        note = f"probe: {len(report.texts)} random sequences of {length} tokens repeated twice, seed {args.seed}"
        what = "the induction probe"
    else:
        print(f"routing {len(args.texts)} text(s) through {model.name} ...", file=sys.stderr)
        routes = model.route(args.texts, progress=True)  # a bar only on a terminal, for more texts than one batch
        induction = None
        note = "bidirectional model: induction and duplicate-token scores do not apply"
        if model.config.causal:
            induction = hd.induction_scores(model, length=length, seed=args.seed)
            note = (f"induction/duplicate: {induction.batch} random sequences of {length} tokens repeated twice, "
                    f"seed {args.seed}")
        report = hd.classify(routes, induction=induction)
        what = f"{len(args.texts)} text(s)"
    counts = {c: sum(v) for c, v in report.counts().items() if sum(v)}
    carried = {c: sum(v) for c, v in report.label_counts().items() if sum(v) and c != "mixed"}
    print(f"{model.name}: {report.layers} layers x {report.heads} heads on {what} (layers and heads from 1); each cell: "
          "primary class and its score, then +further labels")
    print(report.table())
    print("primary classes: " + ", ".join(f"{c} {k}" for c, k in counts.items()))
    print("heads carrying each label: " + (", ".join(f"{c} {k}" for c, k in carried.items()) or "none") + f"; {note}")
    if args.output is not None:
        from ..plots.files import figure_to_bytes
        from ..plots.heads import head_classes_figure

        data = report.to_dict()
        data["model"] = model.name
        data["note"] = note
        title = f"{model.name}: head classes on {what} (layers and heads from 1)"
        png = figure_to_bytes(head_classes_figure(report, title=title), "png")
        text = json.dumps(data, indent=1, allow_nan=False)
        with staged_directory(args.output, overwrite=args.force) as stage:
            atomic_write(stage / "heads.png", png)
            atomic_write(stage / "heads.json", text)
            atomic_write(stage / "heads.csv", _csv(report))
        print(f"wrote {', '.join(str(args.output / f) for f in FILES)}", file=sys.stderr)
    return 0
