"""The ``attnsym`` command-line tool: ``attnsym {tour,derive,verify,graph,plot,route,explore}``.

Each sub-command lives in its own module of this package, which defines
``add_parser(subparsers)``; the parser it adds sets ``run(args) -> int``. This package is the
only part of attnsym that prints.

Errors a user can fix (bad sizes, an existing output file, …) are printed as one line and
give exit status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..errors import AttnsymError

__all__ = ["build_parser", "main"]

COMMANDS = ("tour", "derive", "verify", "graph", "plot", "route", "explore")

_DESCRIPTION = """\
attnsym makes the mathematics of self-attention explicit.

An MLP mixes token features with a fixed matrix, y = W x. Attention first computes its
mixing matrix from the data, A(X) = softmax(Q K^T / sqrt(d_k)), then applies it:
Y = A(X) V, i.e. y = W(x) x. The commands below derive those equations (SymPy), check the
claims made about them (exactly and by Monte Carlo), and draw attention as a routing graph.
"""

_EPILOG = """\
examples:
  attnsym tour                              # everything, written to ./attnsym-tour/
  attnsym derive --n 2 --d 2 --format md    # the forward pass, step by step
  attnsym verify variance-scaling           # check one claim
  attnsym graph --n 6 --heads 2 -o out/     # routing graphs as GraphML
  attnsym route "the Apple phone launch event" "I like to eat apples" --token apple -o out/
                                            # a real model's routing, the same word in two contexts

'attnsym COMMAND --help' explains each command.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="attnsym",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"attnsym {__version__}")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks instead of one-line errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 1 a check failed, 2 an error).

    >>> main(["--version"])  # doctest: +SKIP
    attnsym 0.1.0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except (AttnsymError, OSError) as error:
        if args.debug:
            raise
        print(f"attnsym {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnsym: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
