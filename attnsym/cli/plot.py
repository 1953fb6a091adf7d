"""``attnsym plot``: draw one of the standard figures to a PNG or SVG file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._io import refuse_existing
from ..errors import SpecError

_DESCRIPTION = """\
Draw one figure and save it as PNG or SVG (the suffix of -o decides).

figures:
  heatmap    attention weights per head, query (rows) x key (columns), for random
             inputs and weights of the layer given by --n/--d/--heads
  positions  sinusoidal positional encodings: curves PE(p, dim) and the whole matrix
  gelu       GELU exact x*Phi(x) against its tanh approximation, and their difference
  variance   variance of q.k against d, unscaled (grows like d) and divided by sqrt(d)
             (stays 1): Monte Carlo with 95% intervals and the exact values
  entropy    row entropy and largest weight of softmax(q.k) against d: without the
             1/sqrt(d) scaling the softmax saturates to one-hot
  paths      Table 1 of Vaswani et al. (2017): maximum path length and sequential depth
             against n for self-attention, recurrent and convolutional layers
"""

_EPILOG = """\
examples:
  attnsym plot heatmap --n 6 --d 8 --heads 2 -o heads.png
  attnsym plot variance --quick -o variance.svg
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from ..plots import FIGURES

    parser = subparsers.add_parser(
        "plot",
        help="draw a figure (heatmap, positions, gelu, variance, entropy, paths) to PNG/SVG",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("figure", choices=list(FIGURES), help="which figure to draw")
    parser.add_argument("-o", "--output", type=Path, required=True, help="output file, FILE.png or FILE.svg")
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
    from .. import plots
    from ..spec import AttentionSpec

    suffix = args.output.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise SpecError(f"-o must end in .png or .svg (got {str(args.output)!r})")
    refuse_existing(args.output, overwrite=args.force)
    if args.dpi < 10 or args.dpi > 1200:
        raise SpecError(f"--dpi must be between 10 and 1200 (got {args.dpi})")
    spec = AttentionSpec(n=args.n, d_model=args.d_model, heads=args.heads, causal=args.causal)
    fig = plots.figure(args.figure, seed=args.seed, quick=args.quick, spec=spec)
    path = plots.save_figure(fig, args.output, overwrite=args.force, dpi=args.dpi)
    print(f"wrote {path} ({plots.FIGURES[args.figure]})", file=sys.stderr)
    return 0
