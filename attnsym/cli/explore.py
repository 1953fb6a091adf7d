"""``attnsym explore``: one self-contained HTML page for your own sentences.

Routes the sentences through a real model (the packaged all-MiniLM-L6-v2 by default, or any
Hugging Face folder), contrasts a word between the first two, adds the derivations and the
checked claims, and writes everything into one HTML file that opens from disk and fetches
nothing (:mod:`attnsym.explorer`). The page's routing views show the user's sentences only
(the toy spec's random inputs only with ``--toy``, labelled as such).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

from .._io import refuse_existing
from ..errors import SpecError
from ._common import MODEL_FOLDERS

__all__ = ["add_parser", "page_path", "run"]

_DESCRIPTION = """\
Write one self-contained, interactive HTML page: the derivations (typeset, LaTeX one click
away), the claims with their evidence, and routing live — per layer and head (or their mean /
max), the attention heatmap and routing graph, each token's row and column with its weights,
the feed-forward block's fixed graph beside it, the contrast of one word between the first two
sentences, rollout and flow; every view exports as SVG, JSON or CSV.

The page opens from disk with no network: KaTeX, the script, the style and the data are inside.

{MODEL_FOLDERS}
""".replace("{MODEL_FOLDERS}", MODEL_FOLDERS)

_EPILOG = """\
examples:
  attnsym explore "I ate an apple for lunch" "I bought an Apple phone today" --word apple -o apple.html
  attnsym explore "A short sentence" -o one.html --no-claims
  attnsym explore --model path/to/hf-folder "Hello world" "Hello there" -o page.html

A long text is bounded: an input too large to store whole keeps each row's top 8 weights (the
page says so, and a warning gives its size); a page above --max-page-mb (200) is refused.

exit status: 0 the page was written, 2 an error (an unknown model, a word not in a sentence,
an existing file without --force, -o naming a folder or FIFO, a page above --max-page-mb),
3 an internal error (a bug)
"""


def page_path(text: str) -> Path:
    """``-o``: a file name (an empty one would mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"-o must name the .html file to write (got {text!r})")
    return Path(text)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "explore", help="write one self-contained interactive HTML page for your own sentences",
        description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sentences", nargs="+", metavar="SENTENCE",
                        help="one or more sentences (the first two are contrasted)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", metavar="NAME_OR_DIR",
                        help="a packaged model's name or a Hugging Face folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--word", "--token", dest="word", default=None,
                        help="the word to contrast between the first two sentences (default: the first word they "
                             "share); --token is the same option")
    parser.add_argument("-o", "--output", type=page_path, default=Path("attnsym-explorer.html"),
                        help="the page to write (default ./attnsym-explorer.html)")
    parser.add_argument("--force", action="store_true", help="replace an existing page")
    parser.add_argument("--no-claims", action="store_true", help="do not check the claims (faster)")
    parser.add_argument("--quick", action="store_true", help="quick claim checks")
    parser.add_argument("--toy", action="store_true",
                        help="also add the toy spec's two inputs (random vectors, words as labels; labelled toy)")
    parser.add_argument("--no-toy", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for scripts
    parser.add_argument("--no-flow", action="store_true", help="skip attention flow (n^2 max-flows per sentence)")
    parser.add_argument("--max-page-mb", type=float, default=200.0, metavar="MB",
                        help="refuse a page larger than this (default 200; 0: no cap). Inputs too large to store whole "
                             "keep each row's top 8 weights, with a warning giving the size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the toy spec and the claim checks (default 0)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    # lazy: the explorer (claims, models) costs +1.2 s CPU over `attnsym --help`
    from ..explorer import page_data, write_page
    from ..explorer.page import PageSizeWarning
    from ..explorer.real import model_routing
    from ..models import load

    if not (math.isfinite(args.max_page_mb) and args.max_page_mb >= 0):
        raise SpecError(f"--max-page-mb must be a number >= 0 (0: no cap) (got {args.max_page_mb})")
    max_bytes = None if args.max_page_mb == 0 else max(1, int(args.max_page_mb * 1e6))
    # before any work: an existing page needs --force; a folder, FIFO or device is refused as what it is
    refuse_existing([args.output], overwrite=args.force)
    model = load(args.model)
    print(f"routing {len(args.sentences)} sentence(s) through {model.name} ...", file=sys.stderr)
    inputs, contrasts = model_routing(model, args.sentences, word=args.word, flow=False if args.no_flow else None)
    if not args.no_claims:
        print("checking the claims ...", file=sys.stderr)
    data = page_data(evidence=() if args.no_claims else None, inputs=inputs, contrasts=contrasts,
                     toy=args.toy and not args.no_toy, seed=args.seed, quick=args.quick, meta={"model": model.name})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PageSizeWarning)
        path = write_page(data, args.output, overwrite=args.force, max_bytes=max_bytes)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    word = f"; contrast of '{contrasts[0].word}'" if contrasts else ""
    probe = "; the induction probe" if len(inputs) > len(args.sentences) else ""
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB): {len(args.sentences)} sentence(s){word}{probe}, "
          f"{len(data.claims)} claims; open it in a browser (it fetches nothing)")
    return 0
