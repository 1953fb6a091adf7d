"""``attnsym plot``: draw one of the standard figures to a PNG, SVG or PDF file."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from .. import plots
from .._io import refuse_existing
from ..errors import SpecError
from ..plots import FIGURES, FORMATS
from ..spec import AttentionSpec


def _description() -> str:
    """The help text, built from :data:`attnsym.plots.FIGURES` and :data:`attnsym.plots.FORMATS` (never retyped)."""
    suffixes = ", ".join(f".{f}" for f in FORMATS)
    lines = [f"Draw one figure and save it; the suffix of -o ({suffixes}) decides the format.", "", "figures:"]
    for name, what in FIGURES.items():
        wrapped = textwrap.wrap(what, 66) or [""]
        lines.append(f"  {name:<10} {wrapped[0]}")
        lines += [f"  {'':<10} {more}" for more in wrapped[1:]]
    return "\n".join(lines) + "\n"


_EPILOG = """\
examples:
  attnsym plot heatmap --n 6 --d 8 --heads 2 -o heads.png
  attnsym plot variance --quick -o variance.svg
  attnsym plot gelu -o gelu.pdf
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "plot",
        help=f"draw a figure ({', '.join(FIGURES)}) to {'/'.join(f.upper() for f in FORMATS)}",
        description=_description(),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("figure", choices=list(FIGURES), help="which figure to draw")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="output file: " + ", ".join(f"FILE.{f}" for f in FORMATS))
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs and Monte Carlo (default 0)")
    parser.add_argument("--quick", action="store_true", help="fewer Monte Carlo samples (seconds instead of tens)")
    parser.add_argument("--dpi", type=int, default=100, help="resolution of a PNG (default 100)")
    group = parser.add_argument_group("attention layer (heatmap only)")
    group.add_argument("--n", type=int, default=6, help="sequence length (default 6)")
    group.add_argument("--d", "--d-model", dest="d_model", type=int, default=8, help="model width (default 8)")
    group.add_argument("--heads", type=int, default=2, help="number of heads; must divide d (default 2)")
    group.add_argument("--causal", action="store_true", help="query i may attend only to keys j <= i")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    suffix = args.output.suffix.lower().lstrip(".")
    if suffix not in plots.FORMATS:
        raise SpecError(f"-o must end in {', '.join('.' + f for f in plots.FORMATS)} (got {str(args.output)!r})")
    refuse_existing(args.output, overwrite=args.force)
    if args.dpi < 10 or args.dpi > 1200:
        raise SpecError(f"--dpi must be between 10 and 1200 (got {args.dpi})")
    spec = AttentionSpec(n=args.n, d_model=args.d_model, heads=args.heads, causal=args.causal)
    fig = plots.figure(args.figure, seed=args.seed, quick=args.quick, spec=spec)
    path = plots.save_figure(fig, args.output, overwrite=args.force, dpi=args.dpi)
    print(f"wrote {path} ({plots.FIGURES[args.figure]})", file=sys.stderr)
    return 0
